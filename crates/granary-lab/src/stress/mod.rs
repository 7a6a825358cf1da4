//! Race modes: each scenario of the bug report run against the real compiler and capture,
//! with its invariants checked and every violation reported.
//!
//! Invariants checked by every mode: no thread panics; every pipeline compiles; the final
//! archive holds every pipeline exactly once and is byte-identical to a single-thread
//! reference; every intermediate archive verifies and holds every pipeline whose compile had
//! returned before that write began. `shared-vertex` also checks that each stage function
//! was compiled exactly once.
//!
//! With a device backend ([`StressOptions::backend`], e.g. Vulkan) every compiler of a run —
//! the reference, each generation, each per-thread compiler — shares that one backend (one
//! device), as an application's capture loop does. Archives are then compared as written:
//! with their device sections and the device's pipeline-cache data (the capture's
//! [`Capture::device_caches`](granary::capture::Capture::device_caches); pieces are merged
//! from the files, which carry them). Driver binaries are not reproducible, so where the
//! device captures binaries the final archive is compared with the reference with its device sections stripped (entries without binaries,
//! no caches), and its device section is checked on its own: one binary set per pipeline for
//! the device, non-empty, LIBRARY flag exactly for pipelines with an unspecialized colour
//! attachment. Where the device keeps cache data instead (empty sets), the whole final archive
//! is still byte-identical to the single-thread reference.
//!
//! Files: this module has the options, the report and the loop; `reference.rs` loads the
//! workload and writes its single-thread reference; `modes.rs` runs the scenarios; `check.rs`
//! states and checks the invariants.

mod check;
mod modes;
mod reference;
#[cfg(test)]
mod tests;

pub use reference::Rejected;

use check::checks;
use granary::backend::Backend;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Runs of pipelines sharing one vertex function spread over all threads.
    SharedVertex,
    /// `write_archive` in a loop on one thread while the others compile into the same capture.
    FlushDuringCompile,
    /// Every K pipelines: write the archive, continue with a fresh compiler and capture; merge
    /// the pieces at the end.
    Rotate,
    /// One compiler and capture per thread, merged at the end.
    PerThread,
    /// All of the above at once on the generated workload.
    SeedMix,
}

impl Mode {
    /// All modes.
    pub const ALL: [Mode; 5] =
        [Mode::SharedVertex, Mode::FlushDuringCompile, Mode::Rotate, Mode::PerThread, Mode::SeedMix];
    /// The CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            Mode::SharedVertex => "shared-vertex",
            Mode::FlushDuringCompile => "flush-during-compile",
            Mode::Rotate => "rotate",
            Mode::PerThread => "per-thread",
            Mode::SeedMix => "seed-mix",
        }
    }
    /// Parses the CLI spelling.
    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// Options for [`run`].
#[derive(Debug, Clone)]
pub struct StressOptions {
    /// The scenario.
    pub mode: Mode,
    /// Compile threads.
    pub threads: usize,
    /// A script to use; `None` generates a seed-scale workload of `pipelines` pipelines.
    pub script: Option<PathBuf>,
    /// Size of the generated workload.
    pub pipelines: usize,
    /// Keep repeating the scenario until this much time has passed (at least once).
    pub seconds: Option<f64>,
    /// Generator seed.
    pub seed: u64,
    /// `rotate` and `seed-mix`: pipelines per compiler generation (`None`: a fifth of the
    /// workload).
    pub rotate_every: Option<usize>,
    /// Folder for intermediate archives; a temporary one when `None`.
    pub work_dir: Option<PathBuf>,
    /// A device backend shared by every compiler of the run (one device); `None`: the `none`
    /// backend (front end and link checks only).
    pub backend: Option<Arc<dyn Backend>>,
}

/// What a stress run saw.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StressReport {
    /// Scenario name.
    pub mode: String,
    /// Compile threads.
    pub threads: usize,
    /// Pipelines per iteration.
    pub pipelines: usize,
    /// Pipelines of the script left out because the device rejected them on a single thread
    /// (device backends only; not a race).
    pub device_rejected: Rejected,
    /// The backend: `none` or the device backend's name.
    pub backend: String,
    /// The device, in words (device backends only).
    pub device: Option<String>,
    /// What the device captures: `pipeline-binaries` or `cache-data` (device backends only).
    pub captures: Option<String>,
    /// Pipelines created on the device during the iterations (whole pipelines and libraries;
    /// the single-thread reference not counted).
    pub driver_creates: u64,
    /// Iterations run.
    pub iterations: usize,
    /// Compile calls made.
    pub compiles: usize,
    /// Archives written during compilation (flushes, rotations, per-thread pieces).
    pub writes: usize,
    /// Of those, verified and checked against the snapshot contract.
    pub writes_checked: usize,
    /// Wall time in seconds.
    pub wall_seconds: f64,
    /// The invariants this mode checked.
    pub checks: Vec<&'static str>,
    /// Every invariant violation; empty when all held.
    pub violations: Vec<String>,
}

/// A stress run could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum StressError {
    /// Generating the workload failed.
    #[error(transparent)]
    Gen(#[from] crate::workload::GenError),
    /// The script could not be read.
    #[error(transparent)]
    Script(#[from] granary::script::ScriptError),
    /// Some pipelines of the script do not compile even on one thread.
    #[error("the workload has {0} pipelines that fail on a single thread; stress needs a clean workload (first: {1})")]
    Unclean(usize, String),
    /// Temporary files.
    #[error("work folder: {0}")]
    Io(#[from] std::io::Error),
    /// The device backend did not return binaries for its device on a single thread.
    #[error("the device backend '{0}' returned no binary set for a pipeline on a single thread")]
    NoDevice(String),
}

/// Runs the scenario and reports; violations are in the report, not errors.
pub fn run(opts: &StressOptions) -> Result<StressReport, StressError> {
    let tmp = tempfile::tempdir()?;
    let dir = opts.work_dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir)?;
    let w = reference::load(opts, &dir)?;
    let threads = opts.threads.max(1);
    let device_report = opts.backend.as_ref().and_then(|b| b.report());
    let mut report = StressReport {
        mode: opts.mode.name().into(),
        threads,
        pipelines: w.pipelines.len(),
        device_rejected: w.rejected.clone(),
        backend: opts.backend.as_ref().map_or("none", |b| b.name()).into(),
        device: device_report.as_ref().map(|r| r.device.clone()),
        captures: device_report.map(|r| r.captures),
        checks: checks(opts.mode, w.device.as_ref()),
        ..Default::default()
    };
    let rotate_every = opts.rotate_every.unwrap_or(w.pipelines.len() / 5);
    let start = Instant::now();
    let deadline = opts.seconds.map(|s| start + Duration::from_secs_f64(s.max(0.0)));
    loop {
        report.iterations += 1;
        modes::run(opts.mode, &w, threads, rotate_every, &mut report);
        if deadline.is_none_or(|d| Instant::now() >= d) || report.violations.len() > 100 {
            break;
        }
    }
    report.wall_seconds = start.elapsed().as_secs_f64();
    Ok(report)
}
