//! `granary bench seed-scale`.

use granary_lab::bench::{run, BenchOptions, Micros};

#[derive(clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    workload: Workload,
}

#[derive(clap::Subcommand)]
enum Workload {
    /// The bug report's workload, generated (see `granary gen seed-scale`).
    SeedScale(SeedScaleBench),
}

#[derive(clap::Args)]
struct SeedScaleBench {
    #[command(flatten)]
    size: super::workload::SeedScaleSize,
    /// Thread counts, comma-separated; 1 is always added, since speed-up is relative to it
    /// [default: 1, 2, 4, … up to the available cores].
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// Runs of each scaling pass (granary and the baseline, interleaved, alternating which
    /// goes first); the median-wall run is reported.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Random lookups to time.
    #[arg(long, default_value_t = 100_000)]
    lookups: usize,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

fn fmt(m: Micros) -> String {
    format!("p50 {:.2} µs, p99 {:.2} µs, max {:.1} µs", m.p50, m.p99, m.max)
}

pub fn run_cli(a: BenchArgs) -> anyhow::Result<i32> {
    let Workload::SeedScale(a) = a.workload;
    let threads = if a.threads.is_empty() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut t: Vec<usize> =
            std::iter::successors(Some(1usize), |x| Some(x * 2)).take_while(|x| *x < cores).collect();
        t.push(cores);
        t
    } else {
        a.threads
    };
    anyhow::ensure!(threads.iter().all(|t| *t >= 1), "thread counts must be at least 1");
    let opts = BenchOptions { workload: a.size.options(), threads, repeat: a.repeat.max(1), lookups: a.lookups.max(1) };
    let r = run(&opts, &|l| eprintln!("bench: {l}"))?;
    if a.json {
        super::print_json(&r)?;
        return Ok(0);
    }
    println!(
        "workload: {} pipelines, {} unique stage functions; script load {:.2} s",
        r.pipelines, r.unique_stage_functions, r.script_load_seconds
    );
    let load =
        |l: Option<[f64; 3]>| l.map_or("unknown".to_string(), |l| format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2]));
    println!("load average at start: {}; at end: {}", load(r.load_average_start), load(r.load_average_end));
    println!("compile phase (planning included), median-wall run of {} per row:", r.repeat);
    println!("                threads  wall s   (min-max of runs)  cpu s    speed-up  parallel eff.  CPU utilisation");
    for (name, rows) in [("granary", &r.scaling), ("rayon+DashMap", &r.baseline_scaling)] {
        for s in rows {
            println!(
                "{name:<14}  {:>7}  {:>7.3}  ({:>6.3}-{:<6.3})    {:>7.3}  {:>8.2}  {:>13.3}  {:>15.3}",
                s.threads,
                s.wall_seconds,
                s.wall_min_seconds,
                s.wall_max_seconds,
                s.cpu_seconds,
                s.speedup,
                s.parallel_efficiency,
                s.cpu_utilisation
            );
        }
    }
    println!("  (speed-up = wall at 1 thread / wall; parallel eff. = speed-up / threads; CPU utilisation = cpu / (wall x threads))");
    println!("from the shortest run of each row (other processes only slow runs down):");
    println!("                threads  best wall s  speed-up  parallel eff.");
    for (name, rows) in [("granary", &r.scaling), ("rayon+DashMap", &r.baseline_scaling)] {
        for s in rows {
            println!(
                "{name:<14}  {:>7}  {:>11.3}  {:>8.2}  {:>13.3}",
                s.threads, s.wall_min_seconds, s.speedup_best, s.parallel_efficiency_best
            );
        }
    }
    for v in &r.baseline_vs_granary {
        println!(
            "rayon+DashMap baseline / granary at {} threads, run by run: wall {:.3}x (min {:.3}, max {:.3}), CPU {:.3}x (min {:.3}, max {:.3})",
            v.threads, v.wall_ratio.median, v.wall_ratio.min, v.wall_ratio.max, v.cpu_ratio.median, v.cpu_ratio.min, v.cpu_ratio.max
        );
    }
    println!(
        "baseline stage-function compiles: {} (unique: {})",
        r.baseline_functions_compiled, r.unique_stage_functions
    );
    println!(
        "report's workaround / granary at {} threads: {:.2}x wall, {:.2}x CPU",
        r.workaround_threads, r.workaround_wall_ratio, r.workaround_cpu_ratio
    );
    println!("archive: {} bytes; write_archive {:.3} s", r.archive_bytes, r.write_archive_seconds);
    println!("capture record, idle:              {}", fmt(r.record_idle_us));
    println!("capture record, during {} writes: {}", r.writes_during_compiles, fmt(r.record_during_writes_us));
    println!("compile call, idle:                {}", fmt(r.compile_idle_us));
    println!("compile call, during writes:       {}", fmt(r.compile_during_writes_us));
    println!("archive open:                      {}", fmt(r.open_us));
    println!("lookup by key:                     {}", fmt(r.lookup_us));
    println!(
        "lookup by key + SPIR-V output():   {} ({:.0} bytes hashed per lookup)",
        fmt(r.lookup_output_us),
        r.lookup_output_mean_bytes
    );
    println!("lookup by label:                   {}", fmt(r.label_lookup_us));
    println!("peak resident memory: {:.1} MiB", r.peak_rss_bytes as f64 / (1 << 20) as f64);
    Ok(0)
}
