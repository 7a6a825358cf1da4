//! Run lengths: how many consecutive pipelines share one vertex function.
//!
//! Lengths are heavy-tailed (Lomax weights, shape [`ALPHA`]), capped at the longest run, and
//! one run is exactly that long; they sum to the pipeline count exactly.

use super::rng::Rng;

/// Tail shape: smaller is heavier. 1.1 gives mostly runs of one or two and a few hundred-long
/// ones at the default size, like the harvest in the bug report.
const ALPHA: f64 = 1.1;

/// The run structure of a workload.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunPlan {
    /// Length of each run, in script order.
    pub lengths: Vec<usize>,
    /// Vertex function (index into the used functions) of each run; adjacent runs differ.
    pub vertex: Vec<usize>,
}

/// Plans runs for `pipelines` pipelines over `functions` vertex functions (`1 ≤ functions ≤
/// pipelines`), with runs at most `max_run` long.
///
/// Every function gets at least one run. The longest run is `max_run`, lowered where needed so
/// that every function still fits (`pipelines − functions + 1`; the caller chooses `functions`
/// so that this never happens); with one function all pipelines form a single run. More runs than functions are used only when the pipelines do
/// not fit into `functions` runs of `max_run`; then functions repeat, never in adjacent runs.
pub(crate) fn plan_runs(rng: &mut Rng, pipelines: usize, functions: usize, max_run: usize) -> RunPlan {
    let functions = functions.min(pipelines);
    if functions == 0 {
        return RunPlan { lengths: Vec::new(), vertex: Vec::new() };
    }
    if functions == 1 {
        return RunPlan { lengths: vec![pipelines], vertex: vec![0] };
    }
    let longest = max_run.clamp(1, pipelines - functions + 1);
    let runs = if pipelines <= functions.saturating_mul(longest) { functions } else { pipelines.div_ceil(longest) };

    let mut lengths = vec![1usize; runs];
    let big = rng.below(runs);
    lengths[big] = longest;
    // runs + longest − 1 ≤ pipelines ≤ runs × longest, so this fits and never underflows.
    let budget = pipelines - runs - (longest - 1);
    spread(rng, &mut lengths, big, budget, longest);

    let mut vertex: Vec<usize> = (0..functions).collect();
    rng.shuffle(&mut vertex);
    for r in functions..runs {
        let prev = vertex[r - 1];
        let mut v = rng.below(functions - 1);
        if v >= prev {
            v += 1;
        }
        vertex.push(v);
    }
    RunPlan { lengths, vertex }
}

/// Adds `budget` units to `lengths` (except index `skip`), none above `cap`, in proportion to
/// heavy-tailed random weights.
fn spread(rng: &mut Rng, lengths: &mut [usize], skip: usize, mut budget: usize, cap: usize) {
    let weights: Vec<f64> = (0..lengths.len())
        .map(|i| {
            let w = (1.0 - rng.unit()).powf(-1.0 / ALPHA) - 1.0;
            if i == skip {
                0.0
            } else {
                w
            }
        })
        .collect();
    for _ in 0..8 {
        let total: f64 = (0..lengths.len()).filter(|&i| lengths[i] < cap).map(|i| weights[i]).sum();
        if budget == 0 || total <= 0.0 {
            break;
        }
        let start = budget as f64;
        for i in 0..lengths.len() {
            if budget == 0 {
                break;
            }
            let room = cap - lengths[i];
            if room == 0 {
                continue;
            }
            let give = ((start * weights[i] / total).floor() as usize).min(room).min(budget);
            lengths[i] += give;
            budget -= give;
        }
    }
    // The rounding remainder: one unit at a time, heaviest runs first.
    let mut order: Vec<usize> = (0..lengths.len()).filter(|&i| i != skip).collect();
    order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]).then(a.cmp(&b)));
    while budget > 0 {
        let mut gave = false;
        for &i in &order {
            if budget == 0 {
                break;
            }
            if lengths[i] < cap {
                lengths[i] += 1;
                budget -= 1;
                gave = true;
            }
        }
        if !gave {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(p: usize, f: usize, m: usize) -> RunPlan {
        let plan = plan_runs(&mut Rng::new(p as u64 * 31 + f as u64), p, f, m);
        assert_eq!(plan.lengths.iter().sum::<usize>(), p, "{p} {f} {m}");
        assert_eq!(plan.lengths.len(), plan.vertex.len());
        assert!(plan.lengths.iter().all(|&l| l >= 1));
        let longest = plan.lengths.iter().copied().max().unwrap_or(0);
        let mut used: Vec<usize> = plan.vertex.clone();
        used.sort_unstable();
        used.dedup();
        assert_eq!(used.len(), f, "{p} {f} {m}");
        if f > 1 {
            assert_eq!(longest, m.min(p - f + 1), "{p} {f} {m}");
            assert!(plan.vertex.windows(2).all(|w| w[0] != w[1]));
        }
        plan
    }

    #[test]
    fn shapes() {
        check(33_000, 16_000, 1_000);
        check(2_000, 300, 200);
        check(300, 60, 50);
        check(300, 300, 40);
        check(300, 299, 40);
        check(300, 2, 1);
        check(33_000, 10, 1_000);
        check(5, 5, 1);
        check(7, 3, 7);
        check(1, 1, 1);
        check(10, 1, 3);
    }

    #[test]
    fn tail_is_heavy() {
        let plan = check(33_000, 16_000, 1_000);
        let ones = plan.lengths.iter().filter(|&&l| l == 1).count();
        let long = plan.lengths.iter().filter(|&&l| l >= 100).count();
        assert!(ones > 8_000, "{ones} runs of one");
        assert!(long >= 5, "{long} runs of 100+");
    }
}
