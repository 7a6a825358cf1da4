//! Layer 3 — the naga front end: libraries parsed and validated once, stage functions
//! specialized once and written once per target.
//!
//! Invariants:
//! - For one [`Frontend`], each library (by content) is parsed at most once and each stage
//!   function (by [`StageKey`]) is specialized and written at most once, however many threads
//!   ask at the same time; concurrent askers wait for the one computation ([`ComputeOnce`]).
//! - Results are immutable `Arc`s; a cached result is never freed while reachable.
//! - A panic inside naga is caught where it happens and stored as that library's or stage
//!   function's error ([`ShaderErrorKind::Panic`]), so it is computed once like any result.
//! - Output bytes depend only on the inputs, [`targets::TARGET_OPTIONS`], the device
//!   [`Profile`] and the requested targets (all hashed into every stage key), never on the
//!   build profile or thread timing.
//! - A target whose writer (or whose profile's capabilities) refuses a stage function is
//!   recorded in [`StageFunction::target_failures`] and the other targets are kept; only a
//!   function with no target left is an error.
//! - A stage output holds its entry point and what that entry point reaches, nothing else.
//! - A library is validated once, with the union of the requested targets' capabilities; each
//!   stage function is checked against each target's own capabilities.

mod error;
mod interface;
pub mod layout;
mod parse;
pub mod profile;
mod specialize;
pub mod targets;

pub use error::{ShaderError, ShaderErrorKind};
pub use interface::{Interface, IoType};
pub use parse::{parse_library, ParsedLibrary};
pub use profile::Profile;

use crate::descriptor::{
    stage_key, Blob, FunctionDescriptor, KeyContext, Library, ShaderStage, StageKey, TargetOutputs, TargetSet,
};
use crate::measure::thread_cpu_time;
use crate::sync::{ComputeOnce, ShardedMap, TaskLimiter};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// One compiled stage function: outputs for each requested target and its interface.
#[derive(Debug)]
pub struct StageFunction {
    /// Its key.
    pub key: StageKey,
    /// Its stage.
    pub stage: ShaderStage,
    /// Entry point name.
    pub entry_point: String,
    /// Output per target.
    pub outputs: TargetOutputs,
    /// The encoded `VkSpecializationInfo` a SPIR-V output that is the application's own module
    /// is created with (see [`granary_archive::StageEntry::specialization`]); `None` when the
    /// output needs none (naga applied the constants, or there are none).
    pub specialization: Option<Arc<Blob>>,
    /// User-defined inputs and outputs.
    pub interface: Interface,
    /// The resources it uses and where each landed per target.
    pub resources: layout::StageResources,
    /// The requested targets this function could not be written for, each with
    /// `target = Some(t)` and naga's message (for a capability check, the capability). A
    /// stage function with no output at all is an error instead, so at least one requested
    /// target has an output. Like the outputs, a pure function of the stage key.
    pub target_failures: Vec<ShaderError>,
}

impl StageFunction {
    /// The requested targets this function has an output for.
    pub fn targets(&self) -> TargetSet {
        self.outputs.targets()
    }
}

type LibraryCell = Arc<ComputeOnce<Result<Arc<ParsedLibrary>, ShaderError>>>;
type FunctionCell = Arc<ComputeOnce<Result<Arc<StageFunction>, ShaderError>>>;

/// Counters of front-end work, for reports and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct FrontendStats {
    /// Libraries actually parsed and validated.
    pub libraries_parsed: u64,
    /// Stage functions actually specialized and written.
    pub functions_compiled: u64,
    /// Stage function requests (cache hits + compiles).
    pub function_requests: u64,
    /// Thread CPU time spent parsing, in nanoseconds.
    pub parse_cpu_ns: u64,
    /// Thread CPU time spent specializing and writing, in nanoseconds.
    pub specialize_cpu_ns: u64,
}

#[derive(Default)]
struct Counters {
    libraries_parsed: AtomicU64,
    functions_compiled: AtomicU64,
    function_requests: AtomicU64,
    parse_cpu_ns: AtomicU64,
    specialize_cpu_ns: AtomicU64,
}

/// The front end with its two caches.
///
/// Thread safety: `Send + Sync`; every method may be called from any number of threads.
pub struct Frontend {
    targets: TargetSet,
    profile: &'static Profile,
    ctx: KeyContext,
    cache_functions: bool,
    limiter: Arc<TaskLimiter>,
    libraries: ShardedMap<LibraryCell>,
    functions: ShardedMap<FunctionCell>,
    counters: Counters,
}

impl Frontend {
    /// A front end writing `targets`, running at most `limiter.max()` tasks at once. Libraries
    /// are always cached; with `cache_functions` false every stage-function request is
    /// specialized and written afresh, for a caller that memoises stage functions itself (the
    /// rayon + DashMap baseline of `granary bench` does, so both sides run the same naga calls).
    pub fn new(targets: TargetSet, limiter: Arc<TaskLimiter>, cache_functions: bool) -> Self {
        Self::with_profile(targets, Profile::default_profile(), limiter, cache_functions)
    }

    /// [`Frontend::new`] for the device profile `profile` (language versions and capabilities
    /// per target).
    pub fn with_profile(
        targets: TargetSet,
        profile: &'static Profile,
        limiter: Arc<TaskLimiter>,
        cache_functions: bool,
    ) -> Self {
        Frontend {
            targets,
            profile,
            ctx: KeyContext { target_options: targets::target_options_fingerprint(profile, targets) },
            cache_functions,
            limiter,
            libraries: ShardedMap::new(),
            functions: ShardedMap::new(),
            counters: Counters::default(),
        }
    }

    /// The key context stage keys are computed under.
    pub fn key_context(&self) -> KeyContext {
        self.ctx
    }

    /// The targets written.
    pub fn targets(&self) -> TargetSet {
        self.targets
    }

    /// The device profile.
    pub fn profile(&self) -> &'static Profile {
        self.profile
    }

    /// Counters so far.
    pub fn stats(&self) -> FrontendStats {
        let c = &self.counters;
        FrontendStats {
            libraries_parsed: c.libraries_parsed.load(Relaxed),
            functions_compiled: c.functions_compiled.load(Relaxed),
            function_requests: c.function_requests.load(Relaxed),
            parse_cpu_ns: c.parse_cpu_ns.load(Relaxed),
            specialize_cpu_ns: c.specialize_cpu_ns.load(Relaxed),
        }
    }

    /// The parsed library, parsing it if no thread has yet.
    pub fn library(&self, lib: &Arc<Library>) -> Result<Arc<ParsedLibrary>, ShaderError> {
        let compute = || {
            let _permit = self.limiter.acquire();
            let t0 = thread_cpu_time();
            // naga may panic on input it accepted; the panic costs this library (and the
            // pipelines that use it), recorded once in its cell, never the thread.
            let r = crate::contain::catch(|| parse_library(lib, self.profile.union_capabilities(self.targets)))
                .unwrap_or_else(|p| Err(ShaderError::panicked(&lib.display_path(), "parsing and validating", &p)))
                .map(Arc::new);
            self.counters.parse_cpu_ns.fetch_add((thread_cpu_time() - t0).as_nanos() as u64, Relaxed);
            self.counters.libraries_parsed.fetch_add(1, Relaxed);
            r
        };
        let cell = self.libraries.get_or_insert_with(lib.hash().0, Default::default);
        cell.get_or_compute(compute).0
    }

    /// The compiled stage function, compiling it if no thread has yet.
    pub fn function(&self, f: &FunctionDescriptor, stage: ShaderStage) -> Result<Arc<StageFunction>, ShaderError> {
        self.counters.function_requests.fetch_add(1, Relaxed);
        let key = stage_key(f, stage, &self.ctx);
        let compute = || self.compile_function(key, f, stage);
        if !self.cache_functions {
            return compute();
        }
        let cell = self.functions.get_or_insert_with(key.0, Default::default);
        cell.get_or_compute(compute).0
    }

    /// Validates the (compacted) `module` with `target`'s capabilities `caps` only; the error
    /// names the target, the profile and the capabilities the shader needs beyond them.
    fn check_capabilities(
        &self,
        module: &naga::Module,
        target: crate::descriptor::Target,
        caps: naga::valid::Capabilities,
        file: &str,
    ) -> Result<(), ShaderError> {
        parse::validate(module, caps).map(|_| ()).map_err(|(message, _)| {
            let missing = parse::missing_capabilities(module, caps);
            let needs = if missing.is_empty() {
                String::new()
            } else {
                format!("needs capability {}, ", profile::capability_names(missing))
            };
            let mut e = ShaderError::new(
                file,
                ShaderErrorKind::Validation,
                format!(
                    "{target} {needs}outside profile '{}' (which allows {}): {message}",
                    self.profile.name,
                    profile::capability_names(caps)
                ),
            );
            e.target = Some(target);
            e
        })
    }

    fn compile_function(
        &self,
        key: StageKey,
        f: &FunctionDescriptor,
        stage: ShaderStage,
    ) -> Result<Arc<StageFunction>, ShaderError> {
        let (lib, entry) = f.base();
        let parsed = self.library(lib)?;
        let _permit = self.limiter.acquire();
        let t0 = thread_cpu_time();
        let file = lib.display_path();
        let result = crate::contain::catch(|| {
            crate::fault::at_stage_function(entry);
            let union = self.profile.union_capabilities(self.targets);
            let spec = specialize::specialize(&parsed, union, &file, entry, stage, &f.resolved_constants())?;
            let naga_stage = parse::naga_stage(stage).ok_or_else(|| parse::no_naga_stage(&file, stage))?;
            let resources = layout::reflect(&spec.module, &spec.info, entry, naga_stage, stage, &file)?;
            let mut outputs = TargetOutputs::default();
            let mut target_failures = Vec::new();
            let mut checked: Vec<naga::valid::Capabilities> = vec![union];
            for target in self.targets.iter() {
                let caps = self.profile.target(target).capabilities;
                if !checked.contains(&caps) {
                    // What the entry point reaches, against this target's own capabilities; a
                    // refusal loses this target for this function, the others go on.
                    match self.check_capabilities(&spec.module, target, caps, &file) {
                        Ok(()) => checked.push(caps),
                        Err(e) => {
                            target_failures.push(e);
                            continue;
                        }
                    }
                }
                let src = targets::StageSource {
                    module: &spec.module,
                    info: &spec.info,
                    stage: naga_stage,
                    entry,
                    file: &file,
                    bindings: &resources.map,
                };
                // A panic in one target's writer (naga has a few, e.g. GLSL with binding
                // arrays) costs that target only, like a writer error.
                let written = crate::contain::catch(|| {
                    crate::fault::at_target_write(target.name(), entry);
                    targets::write(target, self.profile, &src)
                })
                .unwrap_or_else(|p| {
                    Err(ShaderError::panicked(&file, &format!("writing {target} for {stage} function '{entry}'"), &p))
                });
                match written {
                    Ok(bytes) => outputs.0[target as usize] = Some(Blob::new(bytes)),
                    Err(mut e) => {
                        e.target = Some(target);
                        target_failures.push(e);
                    }
                }
            }
            if outputs.0.iter().all(Option::is_none) {
                // No target left: the stage function fails, with the target's reason (every
                // target's reason, joined, when more than one was requested).
                return Err(all_targets_failed(target_failures));
            }
            let interface = interface::reflect(&spec.module, entry, naga_stage);
            Ok(Arc::new(StageFunction {
                key,
                stage,
                entry_point: entry.to_string(),
                outputs,
                specialization: None,
                interface,
                resources,
                target_failures,
            }))
        })
        // A panic inside naga is recorded as this stage function's result: every pipeline
        // sharing it fails with the same reason, and it is not compiled again.
        .unwrap_or_else(|p| Err(ShaderError::panicked(&file, &format!("compiling {stage} function '{entry}'"), &p)));
        self.counters.specialize_cpu_ns.fetch_add((thread_cpu_time() - t0).as_nanos() as u64, Relaxed);
        self.counters.functions_compiled.fetch_add(1, Relaxed);
        result
    }
}

/// The error of a stage function that no requested target could be written for: the one
/// failure when there is one, otherwise the first failure's kind and file with every target's
/// message (each naming its target).
fn all_targets_failed(mut failures: Vec<ShaderError>) -> ShaderError {
    if failures.len() <= 1 {
        if let Some(e) = failures.pop() {
            return e;
        }
        return ShaderError::new("", ShaderErrorKind::Validation, "no target requested".to_string());
    }
    let message = failures.iter().map(|e| e.message.clone()).collect::<Vec<_>>().join("; ");
    let mut e = failures.swap_remove(0);
    e.message = format!("no requested target could be written: {message}");
    e.target = None;
    e
}
