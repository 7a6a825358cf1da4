//! The seed-scale workload's size options, shared by `gen` and `bench`.

use granary_lab::workload::SeedScaleOptions;

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
