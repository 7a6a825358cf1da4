//! Layer 5 — the compiler: resolves descriptors through the front end's caches, links stages
//! into pipelines, and hands results to an attached capture.
//!
//! Invariants:
//! - `compile` never holds a lock while compiling; stage functions shared by many pipelines
//!   are compiled once (the front end's `ComputeOnce` cells) and shared as `Arc`s.
//! - A pipeline is recorded in the capture only after it compiled and linked, whole.
//! - A panic in code granary does not control (naga, a backend) costs the pipelines that
//!   depend on the failing piece and nothing else: front-end panics become that stage
//!   function's cached error, backend panics this pipeline's [`CompileError::Panic`].

use crate::backend::{Backend, NoneBackend};
use crate::capture::Capture;
use crate::descriptor::{Blob, KeyContext, PipelineDescriptor, PipelineEntry, ShaderStage, StageEntry, TargetSet};
use crate::frontend::{Frontend, FrontendStats, ShaderError};
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
    /// Code granary does not control (a backend, a driver) panicked while compiling this
    /// pipeline; the panic was contained and costs this pipeline only.
    #[error("pipeline '{pipeline}': {report}")]
    Panic {
        /// Pipeline label.
        pipeline: String,
        /// The panic's message and location.
        report: crate::util::panic::PanicReport,
    },
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
}

impl Default for CompilerOptions {
    fn default() -> Self {
        CompilerOptions {
            targets: TargetSet::SPIRV,
            profile: crate::frontend::Profile::default_profile(),
            max_concurrent_tasks: None,
            capture: None,
            cache_functions: true,
        }
    }
}

/// Compiles pipelines (Metal's `MTL4Compiler`, a Vulkan device's create calls).
///
/// Thread safety: `Send + Sync`. `compile` may be called from any number of threads at once,
/// also while the attached capture is being written. Nothing is externally synchronized.
pub struct Compiler {
    frontend: Frontend,
    backend: Box<dyn Backend>,
    capture: Option<Arc<Capture>>,
    limiter: Arc<TaskLimiter>,
}

impl Compiler {
    /// A compiler with the `none` backend.
    pub fn new(options: CompilerOptions) -> Self {
        Self::with_backend(options, Box::new(NoneBackend))
    }

    /// A compiler with a given backend.
    ///
    /// # Panics
    ///
    /// If the attached capture was made for another profile ([`Capture::for_profile`]): its
    /// archives' header would not describe the keys this compiler computes.
    pub fn with_backend(options: CompilerOptions, backend: Box<dyn Backend>) -> Self {
        if let Some(c) = &options.capture {
            assert!(
                c.adopt_profile(options.profile),
                "the capture was made for another profile than the compiler's ('{}')",
                options.profile.name
            );
        }
        let max =
            options.max_concurrent_tasks.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let limiter = Arc::new(TaskLimiter::new(max));
        Compiler {
            frontend: Frontend::with_profile(
                options.targets,
                options.profile,
                limiter.clone(),
                options.cache_functions,
            ),
            backend,
            capture: options.capture,
            limiter,
        }
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

    /// The attached capture.
    pub fn capture(&self) -> Option<&Arc<Capture>> {
        self.capture.as_ref()
    }

    /// Compiles one pipeline: each stage function through the front end's caches, then the
    /// backend's link step; on success the entry is recorded in the attached capture.
    pub fn compile(&self, desc: &PipelineDescriptor) -> Result<Arc<PipelineEntry>, CompileError> {
        let name = || desc.label().unwrap_or("<unlabeled>").to_string();
        let mut functions = Vec::with_capacity(2);
        for (stage, f) in desc.stages() {
            let func = self.frontend.function(f, stage).map_err(|error| CompileError::Shader {
                pipeline: name(),
                stage,
                function: f.describe(),
                error,
            })?;
            functions.push(func);
        }
        let layout = {
            let _permit = self.limiter.acquire();
            crate::util::panic::catch(|| {
                self.backend.link(desc, &functions)?;
                crate::backend::merge_layout(desc, &functions)
            })
            .map_err(|report| CompileError::Panic { pipeline: name(), report })?
            .map_err(|message| CompileError::Link { pipeline: name(), message })?
        };
        let stage_keys: Vec<_> = functions.iter().map(|f| f.key).collect();
        let entry = Arc::new(PipelineEntry {
            key: desc.key_with_stage_keys(&stage_keys),
            kind: desc.kind(),
            stages: functions
                .iter()
                .map(|f| StageEntry {
                    key: f.key,
                    stage: f.stage,
                    entry_point: f.entry_point.clone(),
                    outputs: f.outputs.clone(),
                })
                .collect(),
            layout: Some(Blob::new(layout.encode())),
        });
        if let Some(c) = &self.capture {
            c.record(&entry, desc);
        }
        Ok(entry)
    }
}
