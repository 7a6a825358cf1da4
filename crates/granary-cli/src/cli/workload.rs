//! `granary gen`: write synthetic workloads (granary-lab's `workload` module), and the
//! seed-scale workload's size options, shared by `gen` and `bench`.

use anyhow::Context as _;
use granary_lab::workload::{seed_scale, SeedScaleOptions};
use std::path::PathBuf;

/// `granary gen WORKLOAD`.
#[derive(clap::Args)]
pub struct GenArgs {
    #[command(subcommand)]
    workload: Workload,
}

/// The workloads.
#[derive(clap::Subcommand)]
enum Workload {
    /// The shape of a real harvest: ~33,000 render pipelines over ~16,000 vertex functions, in
    /// heavy-tailed runs sharing one vertex function, every colour attachment unspecialized.
    SeedScale(SeedScaleArgs),
}

/// `granary gen seed-scale`.
#[derive(clap::Args)]
struct SeedScaleArgs {
    /// Folder to write (pipelines.json and shaders/); created if missing.
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    size: SeedScaleSize,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// Runs `granary gen`.
pub fn run(a: GenArgs) -> anyhow::Result<i32> {
    match a.workload {
        Workload::SeedScale(s) => {
            let opts = s.size.options();
            let start = std::time::Instant::now();
            let summary = seed_scale(&opts, &s.output)
                .with_context(|| format!("cannot generate the seed-scale workload in {}", s.output.display()))?;
            if s.json {
                super::output::print_json(&summary)?;
            } else {
                eprintln!(
                    "wrote {}: {} pipelines in {} runs (longest {}), {} vertex and {} fragment functions, {} libraries, in {:.2} s",
                    summary.script.display(),
                    summary.pipelines,
                    summary.runs,
                    summary.longest_run,
                    summary.vertex_functions,
                    summary.fragment_functions,
                    summary.libraries,
                    start.elapsed().as_secs_f64()
                );
            }
            Ok(0)
        }
    }
}

/// Size and seed of a generated seed-scale workload.
#[derive(clap::Args)]
pub struct SeedScaleSize {
    /// Render pipelines.
    #[arg(long, default_value_t = 33_000)]
    pipelines: usize,
    /// Distinct vertex functions.
    #[arg(long, default_value_t = 16_000)]
    vertex_functions: usize,
    /// Longest run of consecutive pipelines sharing a vertex function.
    #[arg(long, default_value_t = 1_000)]
    max_run: usize,
    /// Random seed (the same seed and sizes give identical files).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl SeedScaleSize {
    /// The generator options.
    pub fn options(&self) -> SeedScaleOptions {
        SeedScaleOptions {
            pipelines: self.pipelines,
            vertex_functions: self.vertex_functions,
            max_run: self.max_run,
            seed: self.seed,
        }
    }
}
