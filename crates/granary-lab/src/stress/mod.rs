//! Race modes: each scenario of the bug report run against the real compiler and capture,
//! with its invariants checked and every violation reported.
//!
//! Invariants checked by every mode: no thread panics; every pipeline compiles; the final
//! archive holds every pipeline exactly once and is byte-identical to a single-thread
//! reference; every intermediate archive verifies and holds every pipeline whose compile had
//! returned before that write began. `shared-vertex` also checks that each stage function
//! was compiled exactly once.

mod modes;

use crate::gen::{seed_scale, SeedScaleOptions};
use granary::archive::{encode, portable_meta, Archive};
use granary::capture::{Capture, CaptureMode};
use granary::compiler::{Compiler, CompilerOptions};
use granary::descriptor::{PipelineDescriptor, PipelineKey, TargetSet};
use granary::script::Script;
use serde::Serialize;
use std::path::{Path, PathBuf};
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
    Gen(#[from] crate::gen::GenError),
    /// The script could not be read.
    #[error(transparent)]
    Script(#[from] granary::script::ScriptError),
    /// Some pipelines of the script do not compile even on one thread.
    #[error("the workload has {0} pipelines that fail on a single thread; stress needs a clean workload")]
    Unclean(usize),
    /// Temporary files.
    #[error("work folder: {0}")]
    Io(#[from] std::io::Error),
}

/// The pipelines under test and their single-thread reference archive.
pub(crate) struct Workload {
    pub pipelines: Vec<PipelineDescriptor>,
    pub reference: Vec<u8>,
    pub unique_functions: u64,
    pub dir: PathBuf,
}

pub(crate) fn compiler(capture: Option<std::sync::Arc<Capture>>, threads: usize) -> Compiler {
    Compiler::new(CompilerOptions {
        targets: TargetSet::SPIRV,
        max_concurrent_tasks: Some(threads),
        capture,
        cache_functions: true,
        ..Default::default()
    })
}

fn load(opts: &StressOptions, dir: &Path) -> Result<Workload, StressError> {
    let script_path = match &opts.script {
        Some(p) => p.clone(),
        None => {
            let n = opts.pipelines.max(1);
            let gen = SeedScaleOptions {
                pipelines: n,
                vertex_functions: (n / 2).max(1),
                max_run: (n / 4).clamp(1, 1000),
                seed: opts.seed,
            };
            seed_scale(&gen, &dir.join("workload"))?.script
        }
    };
    let script = Script::load(&script_path)?;
    let pipelines: Vec<PipelineDescriptor> = script.pipelines.into_iter().filter_map(|p| p.descriptor.ok()).collect();
    let capture = std::sync::Arc::new(Capture::new(CaptureMode::Outputs));
    let c = compiler(Some(capture.clone()), 1);
    let failed = pipelines.iter().filter(|p| c.compile(p).is_err()).count();
    if failed > 0 {
        return Err(StressError::Unclean(failed));
    }
    Ok(Workload {
        reference: encode(&capture.snapshot().entries, &portable_meta()),
        unique_functions: c.stats().functions_compiled,
        pipelines,
        dir: dir.to_path_buf(),
    })
}

/// Runs the scenario and reports; violations are in the report, not errors.
pub fn run(opts: &StressOptions) -> Result<StressReport, StressError> {
    let tmp = tempfile::tempdir()?;
    let dir = opts.work_dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir)?;
    let w = load(opts, &dir)?;
    let threads = opts.threads.max(1);
    let mut report = StressReport {
        mode: opts.mode.name().into(),
        threads,
        pipelines: w.pipelines.len(),
        checks: checks(opts.mode),
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

/// The invariants `mode` checks, in words.
fn checks(mode: Mode) -> Vec<&'static str> {
    let mut c = vec![
        "no thread panics",
        "every pipeline compiles",
        "the final archive holds every pipeline once and is byte-identical to a single-thread reference",
    ];
    match mode {
        Mode::SharedVertex => c.push("each stage function is compiled exactly once"),
        Mode::FlushDuringCompile => c.push("every archive written during compilation verifies and holds every pipeline whose compile returned before the write began"),
        Mode::Rotate | Mode::PerThread => c.push("every piece verifies and holds every pipeline compiled into its capture; merging the pieces gives the reference"),
        Mode::SeedMix => c.push("every flush and piece verifies and honours the snapshot contract; merging the pieces gives the reference"),
    }
    c
}

/// Checks an archive written during compilation: it verifies and holds every key in `before`.
pub(crate) fn check_write(path: &Path, before: &[PipelineKey], violations: &mut Vec<String>) -> bool {
    let r = Archive::read(path).and_then(|a| a.verify().map(|_| a));
    match r {
        Err(e) => {
            violations.push(format!("{}: intermediate archive does not verify: {e}", path.display()));
            false
        }
        Ok(a) => {
            let missing = before.iter().filter(|k| !matches!(a.get(**k), Ok(Some(_)))).count();
            if missing > 0 {
                violations.push(format!(
                    "{}: {missing} pipelines whose compile returned before the write began are missing",
                    path.display()
                ));
            }
            missing == 0
        }
    }
}

/// Checks the final bytes against the reference.
pub(crate) fn check_final(w: &Workload, bytes: &[u8], what: &str, violations: &mut Vec<String>) {
    if bytes == w.reference.as_slice() {
        return;
    }
    let detail = match Archive::from_bytes(bytes.to_vec()) {
        Ok(a) => format!("{} pipelines vs {} expected", a.len(), w.pipelines.len()),
        Err(e) => format!("unreadable: {e}"),
    };
    violations.push(format!("{what}: final archive differs from the single-thread reference ({detail})"));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checks can fail: a missing pipeline, an unreadable file and a differing final
    /// archive are each reported.
    #[test]
    fn checks_report_violations() {
        let dir = tempfile::tempdir().unwrap();
        let empty = encode(&[], &portable_meta());
        let path = dir.path().join("a.granary");
        std::fs::write(&path, &empty).unwrap();
        let mut v = Vec::new();
        assert!(check_write(&path, &[], &mut v) && v.is_empty());
        assert!(!check_write(&path, &[PipelineKey(7)], &mut v));
        assert!(v[0].contains("1 pipelines whose compile returned before the write began are missing"), "{v:?}");
        std::fs::write(&path, b"junk").unwrap();
        assert!(!check_write(&path, &[], &mut v));
        assert!(v[1].contains("does not verify"));
        let w =
            Workload { pipelines: Vec::new(), reference: empty.clone(), unique_functions: 0, dir: dir.path().into() };
        check_final(&w, &empty, "m", &mut v);
        assert_eq!(v.len(), 2);
        check_final(&w, b"other", "m", &mut v);
        assert!(v[2].contains("differs from the single-thread reference"));
    }
}
