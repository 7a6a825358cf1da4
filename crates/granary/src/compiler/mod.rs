//! Layer 7 — the compiler: resolves descriptors through the front end's caches, links stages
//! into pipelines through a backend, and hands results to an attached capture (layer 6).
//!
//! Invariants:
//! - `compile` never holds a lock while compiling; stage functions shared by many pipelines
//!   are compiled once (the front end's `ComputeOnce` cells) and shared as `Arc`s.
//! - A pipeline is recorded in the capture only after it compiled and linked, whole.
//! - A pipeline has a target when every one of its stages has an output for it; a target a
//!   stage function lost (its writer or its profile refused it) is reported with the pipeline
//!   ([`CompileOutcome::lost`]), and the pipeline lands with the targets left. It fails when
//!   no target is left, or on any lost target with [`CompilerOptions::require_all_targets`].
//!   Stage outputs are recorded as the stage function produced them (never trimmed per
//!   pipeline), so an entry stays a pure function of its stage keys.
//! - A panic in code granary does not control (naga, a backend) costs the pipelines that
//!   depend on the failing piece and nothing else: front-end panics become that stage
//!   function's cached error, backend panics this pipeline's [`CompileError::Panic`].

use crate::backend::{Backend, NoneBackend};
use crate::capture::Capture;
use crate::descriptor::{
    Blob, KeyContext, PipelineDescriptor, PipelineEntry, ShaderStage, StageEntry, Target, TargetSet,
};
use crate::frontend::{Frontend, FrontendStats, ShaderError, StageFunction};
use crate::sync::TaskLimiter;
use std::sync::Arc;

/// Why a pipeline did not compile.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CompileError {
    /// A stage function failed in the front end.
    #[error("pipeline '{pipeline}': {stage} function {function}: {error}")]
    Shader {
        /// Pipeline label.
        pipeline: String,
        /// Which stage.
        stage: ShaderStage,
        /// The function (`library:entry [constants]`).
        function: String,
        /// The front-end error.
        error: ShaderError,
    },
    /// The stages or fixed-function state do not fit together.
    #[error("pipeline '{pipeline}': link error: {message}")]
    Link {
        /// Pipeline label.
        pipeline: String,
        /// What does not fit.
        message: String,
    },
    /// Requested targets were lost (a writer or the profile refused a stage function for
    /// them) and either none is left or [`CompilerOptions::require_all_targets`] is set.
    #[error("pipeline '{pipeline}': {}", describe_lost(lost))]
    Targets {
        /// Pipeline label.
        pipeline: String,
        /// Each stage function's lost targets, with naga's reasons.
        lost: Vec<LostTarget>,
    },
    /// The device backend (a Vulkan driver) refused or failed the pipeline.
    #[error("pipeline '{pipeline}': device: {message}")]
    Device {
        /// Pipeline label.
        pipeline: String,
        /// The backend's message (which call failed and why, or the unsupported state).
        message: String,
    },
    /// Code granary does not control (a backend, a driver) panicked while compiling this
    /// pipeline; the panic was contained and costs this pipeline only.
    #[error("pipeline '{pipeline}': {report}")]
    Panic {
        /// Pipeline label.
        pipeline: String,
        /// The panic's message and location.
        report: crate::contain::PanicReport,
    },
}

/// One target one stage function of a pipeline could not be written for.
#[derive(Debug, Clone)]
pub struct LostTarget {
    /// Which stage.
    pub stage: ShaderStage,
    /// The function (`library:entry [constants]`).
    pub function: String,
    /// Why: naga's message, with `target` set.
    pub error: ShaderError,
}

fn describe_lost(lost: &[LostTarget]) -> String {
    let parts: Vec<String> = lost
        .iter()
        .map(|l| {
            let t = l.error.target.map_or("?", |t| t.name());
            format!("target {t} lost: {} function {}: {}", l.stage, l.function, l.error)
        })
        .collect();
    parts.join("; ")
}

/// A compiled pipeline and the targets it has: see [`Compiler::compile_detailed`].
#[derive(Debug, Clone)]
pub struct CompileOutcome {
    /// The entry, as recorded in the attached capture.
    pub entry: Arc<PipelineEntry>,
    /// The pipeline's binaries on the backend's device (`None` for backends without one).
    pub binaries: Option<granary_archive::DeviceBinaries>,
    /// When the backend's device compile ran (`None` for backends without a device).
    pub device_span: Option<(std::time::Instant, std::time::Instant)>,
    /// The requested targets every stage has an output for (never empty).
    pub targets: TargetSet,
    /// Every target failure of the pipeline's stage functions (empty when it has every
    /// requested target).
    pub lost: Vec<LostTarget>,
}

/// The [`PipelineEntry`] of `desc` compiled from its stage `functions` (in stage order) with
/// the encoded `layout` and, for a render pipeline, its encoded fixed-function state: each
/// stage's outputs as the stage function produced them, for the targets every stage has (a
/// target one stage lost is lost for the whole pipeline: no archive holds a pipeline's vertex
/// MSL without its fragment MSL). Fails only for a render state beyond the archive's limits
/// (docs/FORMAT.md §1.11), naming the limit.
pub fn pipeline_entry(
    desc: &PipelineDescriptor,
    functions: &[Arc<StageFunction>],
    layout: &granary_archive::PipelineLayout,
) -> Result<PipelineEntry, String> {
    entry_with_layout(desc, functions, Some(layout))
}

/// [`pipeline_entry`] with the layout optional: a native pipeline whose stages' reflected
/// resources do not merge has none (it is created with its state's own layout).
fn entry_with_layout(
    desc: &PipelineDescriptor,
    functions: &[Arc<StageFunction>],
    layout: Option<&granary_archive::PipelineLayout>,
) -> Result<PipelineEntry, String> {
    let stage_keys: Vec<_> = functions.iter().map(|f| f.key).collect();
    let every_stage = common_targets(TargetSet(u32::MAX), functions);
    let state = match desc {
        PipelineDescriptor::Render(r) => Some(Blob::new(r.state.encode().map_err(|e| e.message)?)),
        PipelineDescriptor::Compute(_) => None,
        PipelineDescriptor::Native(n) => Some(Blob::new(n.state.encode())),
    };
    Ok(PipelineEntry {
        key: desc.key_with_stage_keys(&stage_keys),
        kind: desc.kind(),
        stages: functions
            .iter()
            .map(|f| StageEntry {
                key: f.key,
                stage: f.stage,
                entry_point: f.entry_point.clone(),
                outputs: {
                    let mut o = f.outputs.clone();
                    for t in Target::ALL {
                        if !every_stage.contains(t) {
                            o.0[t as usize] = None;
                        }
                    }
                    o
                },
                specialization: f.specialization.clone(),
            })
            .collect(),
        layout: layout.map(|l| Blob::new(l.encode())),
        state,
    })
}

/// The targets every one of `functions` has an output for, within `requested`.
pub fn common_targets(requested: TargetSet, functions: &[Arc<StageFunction>]) -> TargetSet {
    TargetSet(functions.iter().fold(requested.0, |bits, f| bits & f.targets().0))
}

/// The targets within `requested` that every stage of `entry` has an output for.
pub fn entry_targets(entry: &PipelineEntry, requested: TargetSet) -> TargetSet {
    TargetSet(entry.stages.iter().fold(requested.0, |bits, s| bits & s.outputs.targets().0))
}

/// Options for a [`Compiler`].
#[derive(Clone)]
pub struct CompilerOptions {
    /// Output targets (default: SPIR-V).
    pub targets: TargetSet,
    /// Device profile: language versions and validation capabilities per target (default:
    /// `default`). Part of every stage key.
    pub profile: &'static crate::frontend::Profile,
    /// Most compile tasks running at once (default: available cores).
    pub max_concurrent_tasks: Option<usize>,
    /// Capture to record into.
    pub capture: Option<Arc<Capture>>,
    /// Cache compiled stage functions (default: true; libraries are always cached). Off only
    /// for a caller that memoises stage functions itself (the benchmark's baseline).
    pub cache_functions: bool,
    /// All or nothing per pipeline (default: false): a pipeline any of whose stage functions
    /// lost a requested target fails ([`CompileError::Targets`]) instead of landing with the
    /// targets left.
    pub require_all_targets: bool,
    /// The largest library the front end parses, in bytes (default:
    /// `Some(`[`crate::frontend::MAX_LIBRARY_BYTES`]`)`; `None`: no limit). A pipeline using a
    /// larger library fails with a [`crate::frontend::ShaderErrorKind::TooLarge`] error.
    pub max_library_bytes: Option<u64>,
    /// How stage outputs are checked by their targets' validators (default:
    /// [`crate::frontend::CheckOutputs::Auto`]; see [`crate::frontend::check`]).
    pub check_outputs: crate::frontend::CheckOutputs,
}

impl Default for CompilerOptions {
    fn default() -> Self {
        CompilerOptions {
            targets: TargetSet::SPIRV,
            profile: crate::frontend::Profile::default_profile(),
            max_concurrent_tasks: None,
            capture: None,
            cache_functions: true,
            require_all_targets: false,
            max_library_bytes: Some(crate::frontend::MAX_LIBRARY_BYTES),
            check_outputs: crate::frontend::CheckOutputs::Auto,
        }
    }
}

/// Compiles pipelines (Metal's `MTL4Compiler`, a Vulkan device's create calls).
///
/// Thread safety: `Send + Sync`. `compile` may be called from any number of threads at once,
/// also while the attached capture is being written. Nothing is externally synchronized.
pub struct Compiler {
    frontend: Arc<Frontend>,
    backend: Arc<dyn Backend>,
    /// The backend has a device (its compile step is where device faults are injected).
    device_backend: bool,
    capture: Option<Arc<Capture>>,
    limiter: Arc<TaskLimiter>,
    require_all_targets: bool,
}

impl Compiler {
    /// A compiler with the `none` backend.
    pub fn new(options: CompilerOptions) -> Self {
        Self::with_backend(options, Arc::new(NoneBackend))
    }

    /// A compiler with a given backend.
    ///
    /// # Panics
    ///
    /// If the attached capture was made for another profile ([`Capture::for_profile`]): its
    /// archives' header would not describe the keys this compiler computes.
    pub fn with_backend(options: CompilerOptions, backend: Arc<dyn Backend>) -> Self {
        let frontend = Arc::new(Self::front_end(&options));
        Self::with_frontend(options, backend, frontend)
    }

    /// The front end a compiler made with `options` has: its targets, profile, function
    /// cache, library limit, output checks and a task limiter of `max_concurrent_tasks`. For
    /// work started on it before the compiler exists ([`Compiler::with_frontend`]).
    pub fn front_end(options: &CompilerOptions) -> Frontend {
        let max =
            options.max_concurrent_tasks.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        Frontend::with_profile(
            options.targets,
            options.profile,
            Arc::new(TaskLimiter::new(max)),
            options.cache_functions,
        )
        .with_max_library_bytes(options.max_library_bytes)
        .with_output_checks(options.check_outputs)
    }

    /// A compiler on `frontend`, which [`Compiler::front_end`] made from the same `options`:
    /// the libraries and stage functions it holds are this compiler's (cache hits, counted
    /// once), its task limiter is this compiler's. The harvest uses it to start the front end
    /// while the device opens.
    ///
    /// # Panics
    ///
    /// If the attached capture was made for another profile ([`Capture::for_profile`]), or
    /// `frontend` writes other targets or another profile than `options` say: its keys would
    /// not be this compiler's.
    pub fn with_frontend(options: CompilerOptions, backend: Arc<dyn Backend>, frontend: Arc<Frontend>) -> Self {
        assert!(
            frontend.targets() == options.targets && std::ptr::eq(frontend.profile(), options.profile),
            "the front end was made for other targets or another profile than the compiler's"
        );
        if let Some(c) = &options.capture {
            assert!(
                c.adopt_profile(options.profile, options.targets),
                "the capture was made for another profile or targets than the compiler's ('{}', {})",
                options.profile.name,
                options.targets.names()
            );
            c.attach_backend(backend.clone());
        }
        Compiler {
            limiter: frontend.limiter().clone(),
            frontend,
            device_backend: backend.device().is_some(),
            backend,
            capture: options.capture,
            require_all_targets: options.require_all_targets,
        }
    }

    /// This compiler with SPIR-V libraries, and its SPIR-V outputs, checked by the validator
    /// program at `path` (default: the one `GRANARY_SPIRV_VAL` names, else SPIRV-Tools linked
    /// in, else `spirv-val` on `PATH`). The validator only accepts or refuses modules, so it is
    /// part of no key. Call before compiling.
    ///
    /// # Panics
    ///
    /// If the front end is shared ([`Compiler::with_frontend`] with a front end held elsewhere
    /// too): give that front end its validator ([`Frontend::with_validator`]) before sharing it.
    pub fn with_spirv_validator(mut self, path: std::path::PathBuf) -> Self {
        let validator = crate::frontend::spirv::Validator::at(path);
        self.frontend = match Arc::try_unwrap(self.frontend) {
            Ok(f) => Arc::new(f.with_validator(validator)),
            Err(_) => panic!("with_spirv_validator on a compiler whose front end is shared"),
        };
        self
    }

    /// The most compile tasks that run at once.
    pub fn max_concurrent_tasks(&self) -> usize {
        self.limiter.max()
    }

    /// The key context (for computing keys outside the compiler).
    pub fn key_context(&self) -> KeyContext {
        self.frontend.key_context()
    }

    /// The front end (for its counters and direct stage-function requests).
    pub fn frontend(&self) -> &Frontend {
        &self.frontend
    }

    /// Front-end counters.
    pub fn stats(&self) -> FrontendStats {
        self.frontend.stats()
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The attached capture.
    pub fn capture(&self) -> Option<&Arc<Capture>> {
        self.capture.as_ref()
    }

    /// Compiles one pipeline: each stage function through the front end's caches, then the
    /// backend's link step; on success the entry is recorded in the attached capture.
    /// [`Compiler::compile_detailed`] also says which targets the pipeline lost.
    pub fn compile(&self, desc: &PipelineDescriptor) -> Result<Arc<PipelineEntry>, CompileError> {
        self.compile_detailed(desc).map(|o| o.entry)
    }

    /// [`Compiler::compile`], returning the targets the pipeline has and those it lost.
    pub fn compile_detailed(&self, desc: &PipelineDescriptor) -> Result<CompileOutcome, CompileError> {
        let name = || desc.label().unwrap_or("<unlabeled>").to_string();
        let mut functions = Vec::with_capacity(2);
        let mut lost = Vec::new();
        let native = match desc {
            PipelineDescriptor::Native(n) => Some(&n.stages),
            _ => None,
        };
        for (i, (stage, f)) in desc.stages().into_iter().enumerate() {
            let func = match native.and_then(|n| n.get(i)) {
                // A native stage: the application's VkSpecializationInfo, as given.
                Some(s) => self.frontend.native_function(f, stage, s.specialization.as_deref()),
                None => self.frontend.function(f, stage),
            };
            let func =
                func.map_err(|error| CompileError::Shader { pipeline: name(), stage, function: f.describe(), error })?;
            lost.extend(func.target_failures.iter().map(|error| LostTarget {
                stage,
                function: f.describe(),
                error: error.clone(),
            }));
            functions.push(func);
        }
        let targets = common_targets(self.frontend.targets(), &functions);
        if targets.0 == 0 || (self.require_all_targets && !lost.is_empty()) {
            return Err(CompileError::Targets { pipeline: name(), lost });
        }
        // Link checks, the layout and the device compile run under one permit and one panic
        // boundary (a panic in any of them costs this pipeline only).
        enum Failed {
            Link(String),
            Device(String),
        }
        let (layout, binaries, device_span) = {
            let _permit = self.limiter.acquire();
            crate::contain::catch(|| {
                self.backend.link(desc, &functions).map_err(Failed::Link)?;
                let layout = match crate::backend::merge_layout(desc, &functions) {
                    Ok(l) => Some(l),
                    // A native pipeline is created with the application's own layout (its
                    // state's): reflected resources that do not merge leave it without the
                    // derived layout tools read, and fail nothing.
                    Err(_) if matches!(desc, PipelineDescriptor::Native(_)) => None,
                    Err(m) => return Err(Failed::Link(m)),
                };
                let start = self.device_backend.then(std::time::Instant::now);
                if start.is_some() {
                    crate::fault::at_device_compile(desc.label()).map_err(Failed::Device)?;
                }
                let unmerged = granary_archive::PipelineLayout {
                    bindings: Vec::new(),
                    immediates: None,
                    stages: functions.iter().map(|f| f.resources.map.clone()).collect(),
                };
                let binaries = self
                    .backend
                    .compile(desc, &functions, layout.as_ref().unwrap_or(&unmerged))
                    .map_err(Failed::Device)?;
                Ok((layout, binaries, start.map(|s| (s, std::time::Instant::now()))))
            })
            .map_err(|report| CompileError::Panic { pipeline: name(), report })?
            .map_err(|f| match f {
                Failed::Link(message) => CompileError::Link { pipeline: name(), message },
                Failed::Device(message) => CompileError::Device { pipeline: name(), message },
            })?
        };
        let entry = Arc::new(
            entry_with_layout(desc, &functions, layout.as_ref())
                .map_err(|message| CompileError::Link { pipeline: name(), message })?,
        );
        if let Some(c) = &self.capture {
            c.record_with_binaries(&entry, binaries.clone(), desc);
        }
        Ok(CompileOutcome { entry, binaries, device_span, targets, lost })
    }
}
