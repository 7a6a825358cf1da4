#![warn(missing_docs)]
#![forbid(unsafe_code)]
//! granary's lab: the tools that exercise the library rather than extend it — the seed-scale
//! workload generator ([`workload`]), the bug report's race scenarios with invariant checks
//! ([`stress`]) and the macro benchmark with its baselines ([`mod@bench`]). They back the
//! `granary gen`, `granary stress` and `granary bench` commands. Not part of `granary`'s
//! public API, and not published.
//!
//! # Example
//!
//! ```
//! use granary_lab::workload::{seed_scale, SeedScaleOptions};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! // A small workload of the report's shape: runs of pipelines sharing vertex functions.
//! let opts = SeedScaleOptions { pipelines: 200, vertex_functions: 40, max_run: 50, ..Default::default() };
//! let summary = seed_scale(&opts, dir.path())?;
//! assert_eq!(summary.pipelines, 200);
//! # Ok(())
//! # }
//! ```

pub mod bench;
pub mod stress;
pub mod workload;

use granary::capture::Capture;
use granary::compiler::CompilerOptions;
use granary::descriptor::TargetSet;
use std::sync::Arc;

/// The compiler options every bench pass and stress run uses: SPIR-V only, at most `threads`
/// tasks at once, stage functions memoised, recording into `capture`, outputs unchecked (the
/// bench measures scheduling against a baseline that checks nothing either; what the output
/// checks cost is measured on `granary harvest`, docs/BENCHMARKS.md).
pub(crate) fn spirv_options(threads: usize, capture: Option<Arc<Capture>>) -> CompilerOptions {
    CompilerOptions {
        targets: TargetSet::SPIRV,
        max_concurrent_tasks: Some(threads),
        capture,
        cache_functions: true,
        check_outputs: granary::frontend::CheckOutputs::Off,
        ..Default::default()
    }
}
