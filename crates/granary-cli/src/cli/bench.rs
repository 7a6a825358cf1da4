//! `granary bench seed-scale`, and `granary bench --backend vulkan`.

use super::device_args::{BackendKind, DeviceArgs};
use granary::descriptor::TargetSet;
use granary_lab::bench::{run, run_device, BenchOptions, DeviceBenchOptions, DeviceBenchReport, DevicePass, Micros};
use granary_lab::workload::SeedScaleOptions;

#[derive(clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "With --backend vulkan (no workload subcommand): granary's schedule and the report's workaround \
(a lock per stage function around each capture compile, each run of pipelines sharing a vertex function \
pinned to one thread) each compile a seed-shaped workload with every pipeline created on the driver, at one \
thread count, each pass on a freshly opened device. Reported per pass: wall and summed thread CPU, pipelines \
compiled and failed, the driver's counters, and the load per worker thread (busy = sum of its task durations; \
max/mean busy; idle fraction = 1 - sum busy / (threads x wall of the worker phase)). Unless already set, \
__GL_SHADER_DISK_CACHE=0 and MESA_SHADER_CACHE_DISABLE=true are set so that no driver's on-disk shader cache \
hands one pass the other's compiles."
)]
pub struct BenchArgs {
    #[command(subcommand)]
    workload: Option<Workload>,
    #[command(flatten)]
    device_bench: DeviceBench,
}

/// `granary bench --backend vulkan`.
#[derive(clap::Args)]
struct DeviceBench {
    /// With --backend vulkan: pipelines of the generated seed-shaped workload.
    #[arg(long, default_value_t = 2000)]
    pipelines: usize,
    /// With --backend vulkan: distinct vertex functions.
    #[arg(long, default_value_t = 970)]
    vertex_functions: usize,
    /// With --backend vulkan: longest run of consecutive pipelines sharing a vertex function.
    #[arg(long, default_value_t = 250)]
    max_run: usize,
    /// With --backend vulkan: generator seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// With --backend vulkan: worker threads of both passes [default: available cores].
    #[arg(short = 'j', long)]
    threads: Option<usize>,
    /// With --backend vulkan: runs of each pass (alternating which goes first); the median-wall
    /// run is reported.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// With --backend vulkan: print the report as JSON.
    #[arg(long)]
    json: bool,
    // --backend, --device, --no-pipeline-binaries, --no-pipeline-libraries (as harvest's).
    #[command(flatten)]
    device: DeviceArgs,
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

/// A latency distribution in words: median, 99th percentile and largest, in microseconds.
fn format_micros(m: Micros) -> String {
    format!("p50 {:.2} µs, p99 {:.2} µs, max {:.1} µs", m.p50, m.p99, m.max)
}

pub fn run_cli(a: BenchArgs) -> anyhow::Result<i32> {
    let a = match a.workload {
        Some(Workload::SeedScale(a)) => a,
        None => return run_device_cli(a.device_bench),
    };
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
        print_report("seed-scale", &r)?;
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
    println!("capture record, idle:              {}", format_micros(r.record_idle_us));
    println!(
        "capture record, during {} writes: {}",
        r.writes_during_compiles,
        format_micros(r.record_during_writes_us)
    );
    println!("compile call, idle:                {}", format_micros(r.compile_idle_us));
    println!("compile call, during writes:       {}", format_micros(r.compile_during_writes_us));
    println!("archive open:                      {}", format_micros(r.open_us));
    println!("lookup by key:                     {}", format_micros(r.lookup_us));
    println!(
        "lookup by key + SPIR-V output():   {} ({:.0} bytes hashed per lookup)",
        format_micros(r.lookup_output_us),
        r.lookup_output_mean_bytes
    );
    println!("lookup by label:                   {}", format_micros(r.label_lookup_us));
    println!("peak resident memory: {:.1} MiB", r.peak_rss_bytes as f64 / (1 << 20) as f64);
    Ok(0)
}

/// `granary bench --backend vulkan`.
/// Prints a bench report as `--json` (docs/schemas/bench.schema.json) with `report` saying
/// which of the two it is: `seed-scale` (the front end's scaling, write latency and lookups)
/// or `vulkan` (granary's schedule and the report's workaround on a driver).
fn print_report<T: serde::Serialize>(report: &str, r: &T) -> anyhow::Result<()> {
    let mut v = serde_json::to_value(r)?;
    if let Some(fields) = v.as_object_mut() {
        fields.insert("report".into(), report.into());
    }
    super::output::print_json(&v)
}

fn run_device_cli(a: DeviceBench) -> anyhow::Result<i32> {
    // Before any device is opened (and before any thread exists): no on-disk shader cache may
    // hand the second pass the first one's compiles.
    for (var, off) in [("__GL_SHADER_DISK_CACHE", "0"), ("MESA_SHADER_CACHE_DISABLE", "true")] {
        if std::env::var_os(var).is_none() {
            std::env::set_var(var, off);
        }
    }
    let json = a.json;
    let r = device_report(a)?;
    if json {
        print_report("vulkan", &r)?;
    } else {
        print_device(&r);
    }
    Ok(0)
}

/// Runs the device benchmark `a` asks for.
fn device_report(a: DeviceBench) -> anyhow::Result<DeviceBenchReport> {
    anyhow::ensure!(
        a.device.backend == BackendKind::Vulkan,
        "granary bench needs a workload (seed-scale) or --backend vulkan"
    );
    anyhow::ensure!(a.threads != Some(0), "-j must be at least 1");
    let opts = DeviceBenchOptions {
        workload: SeedScaleOptions {
            pipelines: a.pipelines,
            vertex_functions: a.vertex_functions,
            max_run: a.max_run,
            seed: a.seed,
        },
        threads: a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        repeat: a.repeat.max(1),
    };
    // Checked once up front, so a missing driver is one clear error.
    a.device.open(TargetSet::SPIRV, false)?;
    let open = || match a.device.open(TargetSet::SPIRV, false) {
        Ok(Some(b)) => Ok(b),
        Ok(None) => Err("no device backend".to_string()),
        Err(e) => Err(format!("{e:#}")),
    };
    Ok(run_device(&opts, &open, &|l| eprintln!("bench: {l}"))?)
}

fn print_device(r: &DeviceBenchReport) {
    outln!("device: {} ({}, {})", r.device, r.backend, r.captures);
    outln!(
        "workload: {} pipelines, {} unique stage functions, {} runs sharing a vertex function (longest {}); {} threads",
        r.pipelines,
        r.unique_stage_functions,
        r.vertex_runs,
        r.longest_vertex_run,
        r.threads
    );
    let env: Vec<String> =
        r.disk_cache_env.iter().map(|(k, v)| format!("{k}={}", v.as_deref().unwrap_or("(unset)"))).collect();
    outln!("disk caches: {}", env.join(" "));
    outln!("median-wall run of {} per pass:", r.repeat);
    outln!(
        "              wall s  (min-max)        cpu s    driver s  compiled  failed  busy max s  busy mean s  max/mean  idle frac.  lock wait s"
    );
    let row = |name: &str, p: &DevicePass| {
        outln!(
            "{name:<12}  {:>6.3}  ({:>6.3}-{:<6.3})  {:>7.3}  {:>8}  {:>8}  {:>6}  {:>10.3}  {:>11.3}  {:>8.3}  {:>10.3}  {:>11.3}",
            p.wall_seconds,
            p.wall_min_seconds,
            p.wall_max_seconds,
            p.cpu_seconds,
            p.driver.as_ref().map_or("-".to_string(), |d| format!("{:.3}", d.driver_seconds)),
            p.compiled,
            p.failed,
            p.imbalance.busy_max_seconds,
            p.imbalance.busy_mean_seconds,
            p.imbalance.max_over_mean,
            p.imbalance.idle_fraction,
            p.lock_wait_seconds
        );
    };
    row("granary", &r.granary);
    row("workaround", &r.workaround);
    outln!(
        "  (busy = a worker's summed task durations, waits inside tasks included; idle frac. = 1 - sum busy / (threads x worker-phase wall); driver s summed over threads)"
    );
    let v = &r.workaround_vs_granary;
    outln!(
        "workaround / granary, run by run: wall {:.3}x (min {:.3}, max {:.3}), CPU {:.3}x (min {:.3}, max {:.3})",
        v.wall_ratio.median,
        v.wall_ratio.min,
        v.wall_ratio.max,
        v.cpu_ratio.median,
        v.cpu_ratio.min,
        v.cpu_ratio.max
    );
    for (name, p) in [("granary", &r.granary), ("workaround", &r.workaround)] {
        if let Some(e) = &p.first_error {
            outln!("{name}: first failure: {e}");
        }
    }
    if r.granary.compiled != r.workaround.compiled {
        outln!("note: the passes compiled different numbers of pipelines; their times are not comparable");
    }
    outln!("peak resident memory: {:.1} MiB", r.peak_rss_bytes as f64 / (1 << 20) as f64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }

    fn device_bench(args: &[&str]) -> DeviceBench {
        let cli = Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).expect("arguments parse");
        assert!(cli.bench.workload.is_none());
        cli.bench.device_bench
    }

    /// Defaults: the seed's shape at 2,000 pipelines, one run, the `none` backend (refused).
    #[test]
    fn device_bench_defaults_and_refusals() {
        let a = device_bench(&[]);
        assert_eq!((a.pipelines, a.vertex_functions, a.max_run, a.seed, a.repeat), (2000, 970, 250, 1, 1));
        let w = DeviceBenchOptions::default_workload();
        assert_eq!((w.pipelines, w.vertex_functions, w.max_run), (a.pipelines, a.vertex_functions, a.max_run));
        let e = device_report(a).expect_err("the none backend is refused").to_string();
        assert!(e.contains("--backend vulkan"), "{e}");
        assert!(device_report(device_bench(&["--backend", "vulkan", "-j", "0"])).is_err());
        assert!(
            Cli::try_parse_from(["bench", "--json", "seed-scale"]).is_err(),
            "flags of one mode, workload of the other"
        );
        assert!(Cli::try_parse_from(["bench", "seed-scale", "--pipelines", "10"]).is_ok());
    }

    /// `bench --backend vulkan` on the machine's Vulkan driver (lavapipe in CI) with a tiny
    /// workload: both passes create the same pipelines on the device. Skipped, saying so,
    /// without a driver (failing instead under GRANARY_REQUIRE_VULKAN=1, as the suite's
    /// `common::vulkan_device` does).
    #[test]
    fn device_bench_runs_on_vulkan() {
        let devices = granary_vulkan::list_devices();
        if !devices.as_ref().is_ok_and(|d| !d.is_empty()) {
            let why = devices.err().map_or("no device".to_string(), |e| e.to_string());
            assert!(
                std::env::var("GRANARY_REQUIRE_VULKAN").map_or(true, |v| v != "1"),
                "no Vulkan device and GRANARY_REQUIRE_VULKAN=1 requires one ({why})"
            );
            eprintln!("SKIPPED: no Vulkan driver ({why}); this test checked nothing");
            return;
        }
        let a = device_bench(&[
            "--backend",
            "vulkan",
            "--pipelines",
            "40",
            "--vertex-functions",
            "12",
            "--max-run",
            "8",
            "-j",
            "2",
            "--repeat",
            "2",
        ]);
        let r = device_report(a).expect("bench --backend vulkan");
        assert_eq!((r.backend.as_str(), r.pipelines, r.threads, r.repeat), ("vulkan", 40, 2, 2));
        assert!(!r.device.is_empty());
        for (name, p) in [("granary", &r.granary), ("workaround", &r.workaround)] {
            assert_eq!(p.compiled + p.failed, 40, "{name}");
            assert!(p.compiled >= 20, "{name}: {} of 40 compiled ({:?})", p.compiled, p.first_error);
            let d = p.driver.as_ref().expect("the Vulkan backend reports");
            assert_eq!(
                d.pipelines_created + d.libraries_created,
                p.compiled as u64,
                "{name}: one driver pipeline each"
            );
            assert!(d.driver_seconds > 0.0, "{name}");
            assert_eq!(p.imbalance.threads, 2, "{name}");
            assert!((0.0..1.0).contains(&p.imbalance.idle_fraction), "{name}: {:?}", p.imbalance);
        }
        assert_eq!(r.granary.compiled, r.workaround.compiled);
        print_device(&r);
    }
}
