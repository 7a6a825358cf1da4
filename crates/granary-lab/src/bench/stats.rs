//! The benchmark's statistics: scaling rows (speed-up, parallel efficiency, CPU utilisation
//! apart), spreads over repeated runs, paired ratios, percentiles, and the system load. Pure
//! functions of the measured timings (besides the load average), so each is tested on fixed
//! inputs.

use super::passes::Timing;
use serde::Serialize;
use std::time::Duration;

/// One row of a scaling table.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Scaling {
    /// Threads.
    pub threads: usize,
    /// Wall seconds of the compile phase.
    pub wall_seconds: f64,
    /// Worker CPU seconds.
    pub cpu_seconds: f64,
    /// Wall time at 1 thread / wall time here ([`speedup`]).
    pub speedup: f64,
    /// Speed-up / threads ([`parallel_efficiency`]).
    pub parallel_efficiency: f64,
    /// Busy CPU / (wall × threads) ([`cpu_utilisation`]): how much of the threads' time was
    /// spent running, useful or not. Not an efficiency.
    pub cpu_utilisation: f64,
    /// Shortest wall time over the repeated runs (the row reports the median run).
    pub wall_min_seconds: f64,
    /// Longest wall time over the repeated runs.
    pub wall_max_seconds: f64,
    /// Speed-up from the shortest runs: shortest wall at 1 thread / shortest wall here. On a
    /// shared machine other processes only ever slow a run down, so the shortest run is the
    /// best estimate of an undisturbed one.
    pub speedup_best: f64,
    /// `speedup_best` / threads.
    pub parallel_efficiency_best: f64,
}

/// Speed-up at N threads: wall time at 1 thread / wall time at N threads (0 if `wall_n` is 0).
pub fn speedup(wall_1: f64, wall_n: f64) -> f64 {
    if wall_n > 0.0 {
        wall_1 / wall_n
    } else {
        0.0
    }
}

/// Parallel efficiency: speed-up / threads (1.0 is linear scaling).
pub fn parallel_efficiency(speedup: f64, threads: usize) -> f64 {
    speedup / threads.max(1) as f64
}

/// CPU utilisation: busy CPU / (wall × threads), the share of the threads' wall time they
/// spent on a CPU (0 if `wall` is 0).
pub fn cpu_utilisation(cpu: f64, wall: f64, threads: usize) -> f64 {
    if wall > 0.0 {
        cpu / (wall * threads.max(1) as f64)
    } else {
        0.0
    }
}

/// Scaling rows from `(threads, timing)` pairs; speed-up is relative to the 1-thread timing
/// (`None` if there is none).
pub fn scaling_rows(timings: &[(usize, Timing)]) -> Option<Vec<Scaling>> {
    let wall_1 = timings.iter().find(|(j, _)| *j == 1)?.1.wall.as_secs_f64();
    Some(
        timings
            .iter()
            .map(|(j, t)| {
                let (wall, cpu) = (t.wall.as_secs_f64(), t.cpu.as_secs_f64());
                let s = speedup(wall_1, wall);
                Scaling {
                    threads: *j,
                    wall_seconds: wall,
                    cpu_seconds: cpu,
                    speedup: s,
                    parallel_efficiency: parallel_efficiency(s, *j),
                    cpu_utilisation: cpu_utilisation(cpu, wall, *j),
                    wall_min_seconds: wall,
                    wall_max_seconds: wall,
                    speedup_best: s,
                    parallel_efficiency_best: parallel_efficiency(s, *j),
                }
            })
            .collect(),
    )
}

/// Median, smallest and largest of a few values.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Spread {
    /// Median (the upper one for an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `v` (all zero if empty).
    pub fn of(mut v: Vec<f64>) -> Spread {
        v.sort_by(f64::total_cmp);
        match (v.first(), v.get(v.len() / 2), v.last()) {
            (Some(&min), Some(&median), Some(&max)) => Spread { median, min, max },
            _ => Spread::default(),
        }
    }
}

/// The baseline over granary at one thread count: ratios of each back-to-back pair of runs
/// (above 1: granary is faster or cheaper), so slow drifts of the machine's background load
/// cancel out.
#[derive(Debug, Clone, Serialize)]
pub struct Versus {
    /// Threads.
    pub threads: usize,
    /// Baseline wall / granary wall, over the pairs.
    pub wall_ratio: Spread,
    /// Baseline CPU / granary CPU, over the pairs.
    pub cpu_ratio: Spread,
}

/// Fills in each row's wall-time spread over its runs and the speed-up and efficiency of the
/// shortest runs. `spread[i]` belongs to `rows[i]`; the 1-thread row must come first.
pub(crate) fn with_spread(mut rows: Vec<Scaling>, spread: &[Spread]) -> Vec<Scaling> {
    let best_1 = spread.first().map_or(0.0, |s| s.min);
    for (row, s) in rows.iter_mut().zip(spread) {
        (row.wall_min_seconds, row.wall_max_seconds) = (s.min, s.max);
        row.speedup_best = speedup(best_1, s.min);
        row.parallel_efficiency_best = parallel_efficiency(row.speedup_best, row.threads);
    }
    rows
}

/// Paired ratios baseline / granary, run by run.
pub(crate) fn versus(threads: usize, granary: &[Timing], baseline: &[Timing]) -> Versus {
    let ratio = |f: fn(&Timing) -> f64| Spread::of(granary.iter().zip(baseline).map(|(g, b)| f(b) / f(g)).collect());
    Versus { threads, wall_ratio: ratio(|t| t.wall.as_secs_f64()), cpu_ratio: ratio(|t| t.cpu.as_secs_f64()) }
}

/// The system load averages (1, 5, 15 minutes) from `/proc/loadavg`, where there is one.
pub(crate) fn load_average() -> Option<[f64; 3]> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut it = s.split_whitespace().map(|x| x.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// Percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Micros {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// Median, 99th percentile and largest of `v`, in microseconds (all zero if empty).
pub(crate) fn micros(mut v: Vec<Duration>) -> Micros {
    if v.is_empty() {
        return Micros::default();
    }
    v.sort();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e6;
    Micros { p50: at(0.5), p99: at(0.99), max: at(1.0) }
}

/// The element of `v` with the median `key` (the upper median for an even count; ties keep
/// their order); the default for an empty `v`.
pub(crate) fn upper_median_by<T: Default, K: Ord>(mut v: Vec<T>, key: impl FnMut(&T) -> K) -> T {
    v.sort_by_key(key);
    let i = v.len() / 2;
    if i < v.len() {
        v.swap_remove(i)
    } else {
        T::default()
    }
}

/// The timing with the median wall time (the upper median for an even count).
pub(crate) fn median_wall(v: Vec<Timing>) -> Timing {
    upper_median_by(v, |t| t.wall)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Speed-up is wall(1) / wall(N), parallel efficiency speed-up / N, and CPU utilisation
    /// cpu / (wall × N), independently of each other.
    #[test]
    fn scaling_figures_are_computed_as_defined() {
        assert_eq!(speedup(8.0, 2.0), 4.0);
        assert_eq!(parallel_efficiency(4.0, 8), 0.5);
        assert_eq!(cpu_utilisation(15.0, 2.0, 8), 0.9375);
        assert_eq!(speedup(1.0, 0.0), 0.0);
        assert_eq!(cpu_utilisation(1.0, 0.0, 4), 0.0);

        let t = |wall: f64, cpu: f64| Timing { wall: Duration::from_secs_f64(wall), cpu: Duration::from_secs_f64(cpu) };
        // 4 threads busy all the time (utilisation 1.0) but only 2x faster: efficiency 0.5.
        let rows = scaling_rows(&[(1, t(10.0, 10.0)), (4, t(5.0, 20.0))]).expect("has a 1-thread row");
        let row = |threads, wall, cpu, speedup, parallel_efficiency, cpu_utilisation| Scaling {
            threads,
            wall_seconds: wall,
            cpu_seconds: cpu,
            speedup,
            parallel_efficiency,
            cpu_utilisation,
            wall_min_seconds: wall,
            wall_max_seconds: wall,
            speedup_best: speedup,
            parallel_efficiency_best: parallel_efficiency,
        };
        assert_eq!(rows[0], row(1, 10.0, 10.0, 1.0, 1.0, 1.0));
        assert_eq!(rows[1], row(4, 5.0, 20.0, 2.0, 0.5, 1.0));
        // Best-run figures come from the shortest runs, median figures stay.
        let spread = [Spread { median: 10.0, min: 8.0, max: 12.0 }, Spread { median: 5.0, min: 2.5, max: 9.0 }];
        let best = with_spread(rows, &spread);
        assert_eq!((best[1].wall_min_seconds, best[1].wall_max_seconds), (2.5, 9.0));
        assert_eq!((best[1].speedup_best, best[1].parallel_efficiency_best), (3.2, 0.8));
        assert_eq!((best[1].speedup, best[1].parallel_efficiency), (2.0, 0.5));
        assert_eq!((best[0].speedup_best, best[0].parallel_efficiency_best), (1.0, 1.0));
        // Speed-up is relative to 1 thread, not to the smallest count measured.
        assert!(scaling_rows(&[(2, t(5.0, 10.0)), (4, t(3.0, 12.0))]).is_none());
    }

    /// Ratios are taken pair by pair (baseline run i over granary run i), not of medians.
    #[test]
    fn versus_pairs_runs() {
        let t = |wall: f64, cpu: f64| Timing { wall: Duration::from_secs_f64(wall), cpu: Duration::from_secs_f64(cpu) };
        let g = [t(10.0, 10.0), t(20.0, 10.0), t(5.0, 10.0)];
        let b = [t(11.0, 12.0), t(20.0, 10.0), t(6.0, 11.0)];
        let v = versus(2, &g, &b);
        assert_eq!(v.threads, 2);
        assert_eq!(v.wall_ratio, Spread { median: 1.1, min: 1.0, max: 1.2 });
        assert_eq!(v.cpu_ratio, Spread { median: 1.1, min: 1.0, max: 1.2 });
        assert_eq!(Spread::of(Vec::new()), Spread::default());
    }

    #[test]
    fn median_wall_picks_the_middle_run() {
        let t = |ms: u64| Timing { wall: Duration::from_millis(ms), cpu: Duration::from_millis(ms * 2) };
        assert_eq!(median_wall(vec![t(30), t(10), t(20)]).cpu, Duration::from_millis(40));
        assert_eq!(median_wall(vec![t(7)]).wall, Duration::from_millis(7));
        assert_eq!(median_wall(Vec::new()).wall, Duration::ZERO);
    }
}
