//! Every output a writer produces is checked by its target's own validator before it is
//! archived: SPIRV-Tools' `spirv-val` for SPIR-V (in the profile's target environment,
//! [`super::Profile::spirv_env`]) and glslang, in process, for GLSL. An output the
//! validator rejects is that target's failure for the stage function
//! ([`ShaderErrorKind::Invalid`], with the validator's message): the target is lost, never
//! archived, and the pipeline lands with the targets left (or fails under
//! `--require-all-targets`). A rejected SPIRV-Cross translation falls back to naga, like any
//! SPIRV-Cross failure.
//!
//! What is checked:
//! - naga's SPIR-V and GLSL outputs (WGSL and GLSL input), and SPIRV-Cross's and naga's GLSL
//!   translations of SPIR-V input. A SPIR-V library's SPIR-V output is the application's own
//!   module, which `spirv-val` checked when the library was loaded
//!   ([`super::spirv::validate`]); it is not checked again.
//! - MSL and HLSL are not checked: no Metal or DirectX compiler runs on the machines granary
//!   harvests on (`xcrun metal` is macOS-only, DXC is not packaged for Debian 12). The harvest
//!   summary says so ([`OutputChecker::coverage`]).
//!
//! The SPIR-V validator is SPIRV-Tools, found once: the `spirv-val` program
//! [`SPIRV_VAL_ENV`] names when it is set, else the library linked into the build when the
//! build found it (Debian: `spirv-tools`; a check then costs the validation alone), else
//! `spirv-val` on `PATH` (a process per check, about 7 ms). GLSL is checked by glslang built
//! into granary (`check/glslang.rs`: the `glslangValidator` program would cost about 130 ms a
//! run, nearly all of it glslang's start-up), so GLSL is always checked unless the mode is
//! `off`. [`CheckOutputs`] says what happens when one is
//! missing: `auto` (the default) checks with the validators it finds and archives the others'
//! outputs unchecked, saying so; `require` refuses to start; `off` checks nothing.
//!
//! Invariants:
//! - Each distinct output (target, stage and bytes, by content hash) is checked at most once
//!   per checker, however many stage functions produce it and threads ask at once.
//! - A verdict depends only on the bytes, the stage, the target environment and the
//!   validator's version: the archive is a function of the inputs and the validators found
//!   (the summary names both), never of thread timing.
//! - A validator that cannot be run (spawn failure) rejects nothing: its output is archived
//!   unchecked and counted in [`CheckStats::unrunnable`], with the reason kept for the summary.

mod glslang;

use super::error::{ShaderError, ShaderErrorKind};
use super::tool::SpirvVal;
use crate::descriptor::{ShaderStage, Target, TargetSet};
use crate::sync::{ComputeOnce, ShardedMap};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// The environment variable naming `spirv-val` (shared with the SPIR-V input validator).
pub const SPIRV_VAL_ENV: &str = super::spirv::validate::VALIDATOR_ENV;

/// What the harvest does about output validators (`--check-outputs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckOutputs {
    /// Check every SPIR-V and GLSL output with the validator found for it; a target whose
    /// validator is missing is archived unchecked, and the summary says so.
    #[default]
    Auto,
    /// As `auto`, but a requested SPIR-V or GLSL target without its validator is an error
    /// before anything compiles ([`OutputChecker::require`]): an archive that must be valid
    /// everywhere (a release build) is never made unchecked by a machine that lacks a tool.
    Require,
    /// Check nothing (for measurement; every output is archived as written).
    Off,
}

impl CheckOutputs {
    /// Every mode, by its command-line name.
    pub const ALL: [(&'static str, CheckOutputs); 3] =
        [("auto", CheckOutputs::Auto), ("require", CheckOutputs::Require), ("off", CheckOutputs::Off)];

    /// The mode named `name` (`auto`, `require`, `off`).
    pub fn parse(name: &str) -> Option<CheckOutputs> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }

    /// Its command-line name.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(_, m)| *m == self).map_or("auto", |(n, _)| n)
    }
}

/// The command-line form: `auto`, `require` or `off`; the error names the three.
impl std::str::FromStr for CheckOutputs {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s).ok_or_else(|| format!("'{s}' is not a mode: auto, require or off"))
    }
}

/// One requested target and whether its outputs are checked.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TargetCoverage {
    /// The target.
    pub target: Target,
    /// The validator that checks it, with the version it reports (`None`: not checked).
    pub validator: Option<String>,
    /// Why it is not checked (`None` when it is).
    pub unchecked_because: Option<String>,
}

/// Counters of output checks, for reports and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CheckStats {
    /// Validator runs (distinct outputs checked).
    pub checked: u64,
    /// Outputs whose verdict came from the cache (the same bytes checked before).
    pub cached: u64,
    /// Distinct outputs a validator rejected.
    pub rejected: u64,
    /// Validator runs that could not start (the output was archived unchecked).
    pub unrunnable: u64,
    /// Wall time spent in validator runs, summed over threads, in nanoseconds.
    pub wall_ns: u64,
}

#[derive(Default)]
struct Counters {
    checked: AtomicU64,
    cached: AtomicU64,
    rejected: AtomicU64,
    unrunnable: AtomicU64,
    wall_ns: AtomicU64,
}

/// A verdict: `Ok` (accepted, or could not be checked), or the validator's message.
type Verdict = Result<(), String>;

/// The SPIR-V validator, found once.
struct SpirvValidator {
    /// SPIRV-Tools linked in or the `spirv-val` program, or why there is neither.
    found: Result<SpirvVal, String>,
    /// What it is, for reports, worked out once when first reported.
    described: OnceLock<String>,
}

impl SpirvValidator {
    fn new(found: Result<SpirvVal, String>, mode: CheckOutputs) -> SpirvValidator {
        let found = if mode == CheckOutputs::Off { Err("--check-outputs off".to_string()) } else { found };
        SpirvValidator { found, described: OnceLock::new() }
    }

    fn describe(&self) -> Result<String, String> {
        let found = self.found.as_ref().map_err(Clone::clone)?;
        Ok(self.described.get_or_init(|| found.describe()).clone())
    }
}

/// The output checker of one front end: the validators found, their verdicts by content
/// hash, and counters.
///
/// Thread safety: `Send + Sync`; [`OutputChecker::check`] may be called from any number of
/// threads at once (concurrent checks of the same bytes wait for one validator run).
pub struct OutputChecker {
    mode: CheckOutputs,
    spirv_env: &'static str,
    spirv_val: SpirvValidator,
    verdicts: ShardedMap<Arc<ComputeOnce<Verdict>>>,
    /// The first reason a validator could not be run, for the summary.
    unrunnable: Mutex<Option<String>>,
    counters: Counters,
}

impl std::fmt::Debug for OutputChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputChecker").field("mode", &self.mode).field("spirv_env", &self.spirv_env).finish()
    }
}

impl OutputChecker {
    /// A checker in `mode` for SPIR-V of the environment `spirv_env` (`vulkan1.1`, …), with
    /// the SPIR-V validator the front end's input check uses (`validator`: found once, see
    /// [`super::spirv::Validator::from_env`]).
    pub fn new(mode: CheckOutputs, spirv_env: &'static str, validator: &super::spirv::Validator) -> Self {
        OutputChecker {
            mode,
            spirv_env,
            spirv_val: SpirvValidator::new(validator.found(), mode),
            verdicts: ShardedMap::new(),
            unrunnable: Mutex::new(None),
            counters: Counters::default(),
        }
    }

    /// The mode.
    pub fn mode(&self) -> CheckOutputs {
        self.mode
    }

    /// What checks `target`'s outputs, or why nothing does.
    fn validator(&self, target: Target) -> Result<Validator<'_>, String> {
        match target {
            Target::Spirv => self.spirv_val.found.as_ref().map(Validator::Spirv).map_err(Clone::clone),
            Target::Glsl if self.mode == CheckOutputs::Off => Err("--check-outputs off".to_string()),
            Target::Glsl => Ok(Validator::Glslang),
            Target::Msl => Err("no Metal compiler runs here (xcrun metal is macOS-only)".to_string()),
            Target::Hlsl => Err("no DirectX compiler runs here (DXC is not packaged for Debian 12)".to_string()),
        }
    }

    /// The validator of `target` with its version, for reports.
    fn describe(&self, target: Target) -> Result<String, String> {
        match self.validator(target)? {
            Validator::Glslang => Ok(GLSLANG.to_string()),
            Validator::Spirv(_) => self.spirv_val.describe(),
        }
    }

    /// For each of `targets`: the validator that checks its outputs, or why none does.
    pub fn coverage(&self, targets: TargetSet) -> Vec<TargetCoverage> {
        targets
            .iter()
            .map(|target| {
                let found = self.describe(target);
                TargetCoverage { target, validator: found.as_ref().ok().cloned(), unchecked_because: found.err() }
            })
            .collect()
    }

    /// Under [`CheckOutputs::Require`]: `Err` naming each requested SPIR-V or GLSL target whose
    /// validator is missing and how to install it (MSL and HLSL have none anywhere granary
    /// runs, so they are never required). `Ok` in the other modes.
    pub fn require(&self, targets: TargetSet) -> Result<(), String> {
        if self.mode != CheckOutputs::Require {
            return Ok(());
        }
        let missing: Vec<String> = targets
            .iter()
            .filter(|t| matches!(t, Target::Spirv | Target::Glsl))
            .filter_map(|t| self.validator(t).err().map(|m| format!("{t}: {m}")))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("--check-outputs require, but a validator is missing: {}", missing.join("; ")))
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> CheckStats {
        let c = &self.counters;
        CheckStats {
            checked: c.checked.load(Relaxed),
            cached: c.cached.load(Relaxed),
            rejected: c.rejected.load(Relaxed),
            unrunnable: c.unrunnable.load(Relaxed),
            wall_ns: c.wall_ns.load(Relaxed),
        }
    }

    /// The first reason a validator could not be run, if one could not.
    pub fn unrunnable_reason(&self) -> Option<String> {
        crate::sync::lock_std(&self.unrunnable).clone()
    }

    /// Checks `bytes`, the `target` output of the `stage` function `entry` of library `file`:
    /// `Err` (kind [`ShaderErrorKind::Invalid`], `target` set) with the validator's message
    /// when it rejects them; `Ok` when it accepts them or there is no validator to ask.
    pub fn check(
        &self,
        target: Target,
        stage: ShaderStage,
        bytes: &[u8],
        file: &str,
        entry: &str,
    ) -> Result<(), ShaderError> {
        let Ok(validator) = self.validator(target) else { return Ok(()) };
        let key = {
            let mut text = format!("{target}/{stage}/{}/", self.spirv_env).into_bytes();
            text.extend_from_slice(&crate::descriptor::key::content_hash(bytes).0.to_le_bytes());
            crate::descriptor::key::content_hash(&text).0
        };
        let cell = self.verdicts.get_or_insert_with(key, Default::default);
        let (verdict, computed) = cell.get_or_compute(|| {
            let t0 = Instant::now();
            let r = match validator {
                Validator::Glslang => glslang::check(stage, &String::from_utf8_lossy(bytes)),
                Validator::Spirv(v) => v.validate(self.spirv_env, bytes, super::spirv::validate::INSTALL),
            };
            self.counters.wall_ns.fetch_add(t0.elapsed().as_nanos() as u64, Relaxed);
            self.counters.checked.fetch_add(1, Relaxed);
            match r {
                Ok(None) => Ok(()),
                Ok(Some(m)) => {
                    self.counters.rejected.fetch_add(1, Relaxed);
                    Err(m)
                }
                Err(m) => {
                    self.counters.unrunnable.fetch_add(1, Relaxed);
                    crate::sync::lock_std(&self.unrunnable).get_or_insert(m);
                    Ok(())
                }
            }
        });
        if !computed {
            self.counters.cached.fetch_add(1, Relaxed);
        }
        verdict.map_err(|m| {
            let by = match validator {
                Validator::Glslang => "glslang".to_string(),
                // The command that reproduces the verdict (linked in, the same library runs).
                Validator::Spirv(_) => format!("spirv-val --target-env {}", self.spirv_env),
            };
            let mut e = ShaderError::new(
                file,
                ShaderErrorKind::Invalid,
                format!("{by} rejects the {target} output of {stage} function '{entry}': {}", tidy(&m)),
            );
            e.target = Some(target);
            e
        })
    }
}

/// How the built-in GLSL checker is named in reports: the `glslang` crate's version (which
/// fixes the glslang it builds).
const GLSLANG: &str = "glslang (built in, glslang crate 0.6)";

/// What checks one target's outputs.
#[derive(Clone, Copy)]
enum Validator<'a> {
    /// SPIRV-Tools, linked in or its `spirv-val` program.
    Spirv(&'a SpirvVal),
    /// glslang, built in (`glslang::check`).
    Glslang,
}

/// A validator's message without glslangValidator's `stdin` file-name line and trailing
/// spaces on its lines.
fn tidy(message: &str) -> String {
    let lines: Vec<&str> = message.lines().map(str::trim_end).collect();
    let lines = match lines.first() {
        Some(&"stdin") => &lines[1..],
        _ => &lines[..],
    };
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_their_names() {
        for (name, mode) in CheckOutputs::ALL {
            assert_eq!(CheckOutputs::parse(name), Some(mode));
            assert_eq!(mode.name(), name);
        }
        assert_eq!(CheckOutputs::parse("yes"), None);
    }

    #[test]
    fn off_checks_nothing_and_requires_nothing() {
        let c = OutputChecker::new(CheckOutputs::Off, "vulkan1.1", &crate::frontend::spirv::Validator::from_env());
        assert!(c.check(Target::Spirv, ShaderStage::Vertex, &[7; 20], "f.wgsl", "main").is_ok());
        assert_eq!(c.stats(), CheckStats::default());
        assert!(c.require(TargetSet::of(&Target::ALL)).is_ok());
        let cov = c.coverage(TargetSet::of(&[Target::Spirv, Target::Msl]));
        assert!(cov.iter().all(|t| t.validator.is_none() && t.unchecked_because.is_some()), "{cov:?}");
    }
}
