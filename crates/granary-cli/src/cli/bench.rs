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
    /// Thread counts, comma-separated [default: 1, 2, 4, … up to the available cores].
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// Pipelines in the naive-baseline sample [default: the whole workload].
    #[arg(long)]
    naive_sample: Option<usize>,
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
        let mut t: Vec<usize> = std::iter::successors(Some(1usize), |x| Some(x * 2)).take_while(|x| *x < cores).collect();
        t.push(cores);
        t
    } else {
        a.threads
    };
    anyhow::ensure!(threads.iter().all(|t| *t >= 1), "thread counts must be at least 1");
    let opts = BenchOptions {
        workload: a.size.options(),
        threads,
        naive_sample: a.naive_sample.unwrap_or(usize::MAX),
        lookups: a.lookups.max(1),
    };
    let r = run(&opts, &|l| eprintln!("bench: {l}"))?;
    if a.json {
        super::print_json(&r)?;
        return Ok(0);
    }
    println!("workload: {} pipelines, {} unique stage functions; script load {:.2} s", r.pipelines, r.unique_stage_functions, r.script_load_seconds);
    println!("threads  wall s   cpu s    efficiency  speed-up");
    for s in &r.scaling {
        println!("{:>7}  {:>7.3}  {:>7.3}  {:>10.3}  {:>8.2}", s.threads, s.wall_seconds, s.cpu_seconds, s.parallel_efficiency, s.speedup);
    }
    println!("naive harvest / granary, CPU time on {} pipelines: {:.2}x", r.naive_sample, r.naive_cpu_ratio);
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
    println!("lookup by label:                   {}", fmt(r.label_lookup_us));
    println!("peak resident memory: {:.1} MiB", r.peak_rss_bytes as f64 / (1 << 20) as f64);
    Ok(0)
}
