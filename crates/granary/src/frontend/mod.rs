//! Layer 3 — the front end: libraries loaded once, stage functions specialized once and
//! written once per target.
//!
//! WGSL and GLSL go through naga (parse, validate, specialize, write every target). A SPIR-V
//! library is the application's own module ([`spirv`]): validated by SPIRV-Tools' `spirv-val`
//! before anything else reads it, reflected with spirq, and its SPIR-V output is its bytes,
//! unchanged, with specialization constants as a `VkSpecializationInfo`
//! ([`StageFunction::specialization`]); SPIRV-Cross translates it to MSL, HLSL and GLSL when
//! those are requested ([`spirv::cross`]), naga where SPIRV-Cross fails, per target, best
//! effort (a target neither writes is lost, never the SPIR-V one).
//!
//! Invariants:
//! - For one [`Frontend`], each library (by content) is parsed at most once and each stage
//!   function (by [`StageKey`]) is specialized and written at most once, however many threads
//!   ask at the same time; concurrent askers wait for the one computation ([`ComputeOnce`]).
//! - Results are immutable `Arc`s; a cached result is never freed while reachable.
//! - A panic inside naga or spirq is caught where it happens and stored as that library's or
//!   stage function's error ([`ShaderErrorKind::Panic`]), so it is computed once like any
//!   result; a panic in SPIRV-Cross's or naga's translation of a SPIR-V stage function is that
//!   translator's failure for that target (naga then runs, or the target is lost).
//! - A SPIR-V library's SPIR-V output is its bytes (one blob per library); no SPIR-V module a
//!   validator refused reaches a backend.
//! - Output bytes depend only on the inputs, [`targets::TARGET_OPTIONS`], the device
//!   [`Profile`] and the requested targets (all hashed into every stage key), never on the
//!   build profile or thread timing.
//! - A target whose writer (or whose profile's capabilities) refuses a stage function is
//!   recorded in [`StageFunction::target_failures`] and the other targets are kept; only a
//!   function with no target left is an error.
//! - A stage output holds its entry point and what that entry point reaches, nothing else.
//! - No SPIR-V or GLSL output a validator rejected is kept ([`check`]): a rejected output is
//!   that target's failure, like a writer's error; each distinct output is checked once.
//! - A library is validated once, with the union of the requested targets' capabilities; each
//!   stage function is checked against each target's own capabilities (naga's; SPIRV-Cross's
//!   translations are checked by SPIRV-Cross alone, for the profile's language versions).

pub mod check;
mod error;
mod interface;
pub mod layout;
mod parse;
pub mod profile;
mod specialize;
pub mod spirv;
pub mod targets;
mod tool;

pub use check::{CheckOutputs, CheckStats, OutputChecker};
pub use error::{ShaderError, ShaderErrorKind};
pub use interface::{Interface, IoType};
pub use parse::{parse_library, ParsedLibrary};
pub use profile::Profile;

/// The largest stage output granary archives, per target (256 MiB): a writer's output over it
/// is that target's failure for the stage function, in process and under `--isolate` alike, and
/// `--isolate`'s answer bound is derived from it (`harvest/wire.rs`), so no honest answer is
/// refused. Real shaders stay far below (the bundled example's largest output is under 64 KiB);
/// a 204-byte compute shader copying a million-element array writes 105 MB of HLSL, which lands.
pub const MAX_OUTPUT_BYTES: u64 = 256 << 20;

/// `bytes` as `target`'s output, or the failure saying it is over [`MAX_OUTPUT_BYTES`].
fn within_output_limit(bytes: Vec<u8>, target: Target, file: &str, entry: &str) -> Result<Vec<u8>, ShaderError> {
    if bytes.len() as u64 <= MAX_OUTPUT_BYTES {
        return Ok(bytes);
    }
    let mut e = ShaderError::new(
        file,
        ShaderErrorKind::Write,
        format!(
            "the {target} output of function '{entry}' is {} bytes, over granary's limit of {MAX_OUTPUT_BYTES} bytes per stage output",
            bytes.len()
        ),
    );
    e.target = Some(target);
    Err(e)
}

/// The largest shader library the front end parses in process by default, in bytes (2 MiB;
/// [`Frontend::with_max_library_bytes`], `harvest --max-library-bytes`). A larger library is
/// refused before naga (or, for SPIR-V, the validator, spirq and SPIRV-Cross) reads it, with a
/// [`ShaderErrorKind::TooLarge`] error naming the file, its size and the limit; only the
/// pipelines that use it fail.
///
/// Why a limit: naga's time on one library grows about with the square of its size, and in
/// process nothing stops a compile once it runs (the harvest waits for its threads, however
/// long and large they grow, before it writes). Measured on generated valid WGSL with the
/// release build, one thread, CPU seconds: one long function of 0.25 / 0.5 / 1 / 2 MB took
/// 2.4 / 10 / 31 / 119 s (nearly all of it naga's parse and validation) and 34 / 62 / 120 /
/// 236 MB; a chain of small functions of 0.25 / 0.5 / 1 / 2 / 4 MB took 0.5 / 1.0 / 5.4 / 26 /
/// 137 s (mostly writing the entry point that calls them all) and up to 451 MB; issue 22 saw
/// 8 s at 2 MB, 141 s at 10 MB and a 50 MB library grow past 3 GB without finishing. At 2 MiB
/// every shape measured stays within about two minutes. Real libraries are far smaller (the
/// bundled example's largest is 12 KiB). Above the limit the remedy is `harvest --isolate`,
/// which has no size limit unless one is given: there a worker that passes
/// `--worker-memory-limit` or `--timeout` is killed and costs its pipeline, never the harvest.
pub const MAX_LIBRARY_BYTES: u64 = 2 << 20;

/// `bytes` in MiB, for messages.
fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

/// The refusal of `lib`, whose source is over `limit` bytes.
fn library_too_large(lib: &Library, limit: u64) -> ShaderError {
    let size = lib.source().len() as u64;
    ShaderError::new(
        &lib.display_path(),
        ShaderErrorKind::TooLarge,
        format!(
            "the library is {size} bytes ({}), over the in-process limit of {limit} bytes ({}); naga's time and memory \
             grow faster than a library, so a larger one is not parsed: harvest with --isolate (no size limit unless \
             --max-library-bytes is given; --timeout and --worker-memory-limit stop a worker that runs away) or raise \
             --max-library-bytes",
            mib(size),
            mib(limit)
        ),
    )
}

use crate::descriptor::{
    native_stage_key, stage_key, Blob, FunctionDescriptor, KeyContext, Library, ShaderStage, SourceKind, StageKey,
    Target, TargetOutputs, TargetSet,
};
use crate::measure::thread_cpu_time;
use crate::sync::{ComputeOnce, ShardedMap, TaskLimiter};
use granary_archive::native::Specialization;
use granary_archive::StageBindingMap;
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
    /// For a function of a SPIR-V library: its entry point as reflected (with its
    /// specialization applied), with the module's spec constants and workgroup size. `None`
    /// for WGSL and GLSL.
    pub spirv: Option<Arc<spirv::EntryReflection>>,
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

/// A library as the front end holds it.
#[derive(Debug)]
pub enum LoadedLibrary {
    /// WGSL or GLSL, parsed and validated by naga.
    Naga(ParsedLibrary),
    /// SPIR-V: validated, reflected, and parsed by naga for translations when requested.
    Spirv(spirv::SpirvLibrary),
}

/// Which translators write a SPIR-V library's MSL, HLSL and GLSL targets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SpirvTranslators {
    /// SPIRV-Cross, and naga for each target SPIRV-Cross cannot write: what granary harvests
    /// with.
    #[default]
    CrossThenNaga,
    /// SPIRV-Cross alone (for measurement).
    CrossOnly,
    /// naga alone, granary's translator before SPIRV-Cross (for measurement).
    NagaOnly,
}

/// How a stage function is specialized.
#[derive(Clone, Copy)]
enum Specializing<'a> {
    /// By the function descriptor's constants (the portable form).
    Portable,
    /// By a native stage's `VkSpecializationInfo`, as given.
    Native(Option<&'a Specialization>),
}

type LibraryCell = Arc<ComputeOnce<Result<Arc<LoadedLibrary>, ShaderError>>>;
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
    validator: spirv::Validator,
    checker: check::OutputChecker,
    spirv_translators: SpirvTranslators,
    libraries: ShardedMap<LibraryCell>,
    functions: ShardedMap<FunctionCell>,
    counters: Counters,
    /// Libraries larger than this many bytes are refused (`None`: no limit).
    max_library_bytes: Option<u64>,
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
        let validator = spirv::Validator::from_env();
        Frontend {
            targets,
            profile,
            ctx: KeyContext { target_options: targets::target_options_fingerprint(profile, targets) },
            cache_functions,
            limiter,
            checker: check::OutputChecker::new(CheckOutputs::default(), profile.spirv_env, &validator),
            validator,
            spirv_translators: SpirvTranslators::default(),
            libraries: ShardedMap::new(),
            functions: ShardedMap::new(),
            counters: Counters::default(),
            max_library_bytes: Some(MAX_LIBRARY_BYTES),
        }
    }

    /// This front end refusing libraries larger than `limit` bytes (default:
    /// [`MAX_LIBRARY_BYTES`]; `None`: no limit, for a process whose compiles something else
    /// contains, as an `--isolate` worker's are by its parent's timeout and memory watchdog).
    /// Call before the first library is loaded.
    pub fn with_max_library_bytes(mut self, limit: Option<u64>) -> Self {
        self.max_library_bytes = limit;
        self
    }

    /// The largest library this front end parses, in bytes (`None`: no limit).
    pub fn max_library_bytes(&self) -> Option<u64> {
        self.max_library_bytes
    }

    /// This front end with SPIR-V libraries, and its SPIR-V outputs, validated by `validator`
    /// (default: [`spirv::Validator::from_env`]). Call before the first library is loaded.
    pub fn with_validator(mut self, validator: spirv::Validator) -> Self {
        // The output checks use the same validator.
        self.checker = check::OutputChecker::new(self.checker.mode(), self.profile.spirv_env, &validator);
        self.validator = validator;
        self
    }

    /// This front end checking its outputs as `mode` says (default: [`CheckOutputs::Auto`]).
    /// The checks only accept or refuse outputs, so they are part of no key. Call before the
    /// first stage function is compiled.
    pub fn with_output_checks(mut self, mode: CheckOutputs) -> Self {
        self.checker = check::OutputChecker::new(mode, self.profile.spirv_env, &self.validator);
        self
    }

    /// The output checker (its validators, coverage and counters).
    pub fn checker(&self) -> &check::OutputChecker {
        &self.checker
    }

    /// This front end translating SPIR-V libraries with `translators` (default: SPIRV-Cross,
    /// then naga). The others exist to measure each translator alone (granary-lab's
    /// `spirv_corpus`); they change every stage key (the writer options text gains
    /// `;spirv-translators=…`), and an archive is only ever written with the default. Call
    /// before the first stage function is compiled.
    pub fn with_spirv_translators(mut self, translators: SpirvTranslators) -> Self {
        self.spirv_translators = translators;
        let mut text = targets::target_options_text(self.profile, self.targets);
        match translators {
            SpirvTranslators::CrossThenNaga => {}
            SpirvTranslators::CrossOnly => text.push_str(";spirv-translators=spirv-cross-only"),
            SpirvTranslators::NagaOnly => text.push_str(";spirv-translators=naga-only"),
        }
        self.ctx = KeyContext { target_options: crate::descriptor::key::content_hash(text.as_bytes()).0 };
        self
    }

    /// The SPIR-V validator.
    pub fn validator(&self) -> &spirv::Validator {
        &self.validator
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

    /// The limiter of the tasks this front end runs at once (shared with its compiler).
    pub fn limiter(&self) -> &Arc<TaskLimiter> {
        &self.limiter
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

    /// The requested targets naga writes for a SPIR-V library (all but SPIR-V).
    fn translated_targets(&self) -> TargetSet {
        TargetSet(self.targets.0 & !TargetSet::SPIRV.0)
    }

    /// The loaded library, loading it if no thread has yet: parsed and validated by naga
    /// (WGSL, GLSL), or validated, reflected and, for translations, parsed (SPIR-V). A library
    /// over [`Frontend::max_library_bytes`] is refused ([`ShaderErrorKind::TooLarge`]) and
    /// neither parsed nor counted.
    pub fn library(&self, lib: &Arc<Library>) -> Result<Arc<LoadedLibrary>, ShaderError> {
        if let Some(limit) = self.max_library_bytes.filter(|l| lib.source().len() as u64 > *l) {
            return Err(library_too_large(lib, limit));
        }
        let compute = || {
            let _permit = self.limiter.acquire();
            let t0 = thread_cpu_time();
            let r = if lib.kind() == SourceKind::Spirv {
                let translated = self.translated_targets();
                let caps = (translated.0 != 0).then(|| self.profile.union_capabilities(translated));
                spirv::load(lib, &self.validator, caps).map(LoadedLibrary::Spirv)
            } else {
                // naga may panic on input it accepted; the panic costs this library (and the
                // pipelines that use it), recorded once in its cell, never the thread.
                crate::contain::catch(|| parse_library(lib, self.profile.union_capabilities(self.targets)))
                    .unwrap_or_else(|p| Err(ShaderError::panicked(&lib.display_path(), "parsing and validating", &p)))
                    .map(LoadedLibrary::Naga)
            }
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
        self.cached(stage_key(f, stage, &self.ctx), f, stage, Specializing::Portable)
    }

    /// The compiled stage function of a native pipeline's stage: a SPIR-V library's entry
    /// point with the application's `VkSpecializationInfo` (checked, then taken as given),
    /// keyed with [`native_stage_key`].
    pub fn native_function(
        &self,
        f: &FunctionDescriptor,
        stage: ShaderStage,
        specialization: Option<&Specialization>,
    ) -> Result<Arc<StageFunction>, ShaderError> {
        let key = native_stage_key(f, stage, specialization, &self.ctx);
        self.cached(key, f, stage, Specializing::Native(specialization))
    }

    fn cached(
        &self,
        key: StageKey,
        f: &FunctionDescriptor,
        stage: ShaderStage,
        how: Specializing<'_>,
    ) -> Result<Arc<StageFunction>, ShaderError> {
        self.counters.function_requests.fetch_add(1, Relaxed);
        let compute = || self.compile_function(key, f, stage, how);
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
        how: Specializing<'_>,
    ) -> Result<Arc<StageFunction>, ShaderError> {
        let (lib, entry) = f.base();
        let loaded = self.library(lib)?;
        let _permit = self.limiter.acquire();
        let t0 = thread_cpu_time();
        let file = lib.display_path();
        let result = crate::contain::catch(|| {
            crate::fault::at_stage_function(entry);
            match (&*loaded, how) {
                (LoadedLibrary::Spirv(sl), how) => self.compile_spirv(key, f, stage, sl, how, &file),
                (LoadedLibrary::Naga(_), Specializing::Native(_)) => Err(ShaderError::new(
                    &file,
                    ShaderErrorKind::Parse,
                    format!(
                        "a native Vulkan stage takes a SPIR-V library; '{}' is {}",
                        lib.name(),
                        match lib.kind() {
                            SourceKind::Wgsl => "WGSL",
                            _ => "GLSL",
                        }
                    ),
                )),
                (LoadedLibrary::Naga(parsed), Specializing::Portable) => {
                    self.compile_naga(key, f, stage, parsed, &file)
                }
            }
        })
        // A panic inside naga is recorded as this stage function's result: every pipeline
        // sharing it fails with the same reason, and it is not compiled again.
        .unwrap_or_else(|p| Err(ShaderError::panicked(&file, &format!("compiling {stage} function '{entry}'"), &p)));
        self.counters.specialize_cpu_ns.fetch_add((thread_cpu_time() - t0).as_nanos() as u64, Relaxed);
        self.counters.functions_compiled.fetch_add(1, Relaxed);
        result
    }

    /// A WGSL or GLSL stage function: naga specializes it and writes every target.
    fn compile_naga(
        &self,
        key: StageKey,
        f: &FunctionDescriptor,
        stage: ShaderStage,
        parsed: &ParsedLibrary,
        file: &str,
    ) -> Result<Arc<StageFunction>, ShaderError> {
        let entry = f.base().1;
        let union = self.profile.union_capabilities(self.targets);
        let spec = specialize::specialize(parsed, union, file, entry, stage, &f.resolved_constants())?;
        let naga_stage = parse::naga_stage(stage).ok_or_else(|| parse::no_naga_stage(file, stage))?;
        let resources = layout::reflect(&spec.module, &spec.info, entry, naga_stage, stage, file)?;
        let mut outputs = TargetOutputs::default();
        let mut target_failures = Vec::new();
        let src = targets::StageSource {
            module: &spec.module,
            info: &spec.info,
            stage: naga_stage,
            entry,
            file,
            bindings: &resources.map,
        };
        self.write_targets(&src, stage, union, self.targets, &mut outputs, &mut target_failures);
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
            spirv: None,
            target_failures,
        }))
    }

    /// Writes `src` for each of `targets` with naga: each target's own capabilities checked
    /// first (`union`, what the module was validated with, passes without a check); a refusal
    /// or a writer's error or panic loses that target only.
    fn write_targets(
        &self,
        src: &targets::StageSource<'_>,
        stage: ShaderStage,
        union: naga::valid::Capabilities,
        targets: TargetSet,
        outputs: &mut TargetOutputs,
        target_failures: &mut Vec<ShaderError>,
    ) {
        let (file, entry) = (src.file, src.entry);
        let mut checked: Vec<naga::valid::Capabilities> = vec![union];
        for target in targets.iter() {
            let caps = self.profile.target(target).capabilities;
            if !checked.contains(&caps) {
                // What the entry point reaches, against this target's own capabilities; a
                // refusal loses this target for this function, the others go on.
                match self.check_capabilities(src.module, target, caps, file) {
                    Ok(()) => checked.push(caps),
                    Err(e) => {
                        target_failures.push(e);
                        continue;
                    }
                }
            }
            // A panic in one target's writer (naga has a few, e.g. GLSL with binding
            // arrays) costs that target only, like a writer error.
            let written = crate::contain::catch(|| {
                crate::fault::at_target_write(target.name(), entry);
                targets::write(target, self.profile, src)
            })
            .unwrap_or_else(|p| {
                Err(ShaderError::panicked(file, &format!("writing {target} for {stage} function '{entry}'"), &p))
            });
            let checked = written.and_then(|bytes| within_output_limit(bytes, target, file, entry)).and_then(|bytes| {
                self.checker.check(target, stage, &bytes, file, entry)?;
                Ok(bytes)
            });
            match checked {
                Ok(bytes) => outputs.0[target as usize] = Some(Blob::new(bytes)),
                Err(mut e) => {
                    e.target = Some(target);
                    target_failures.push(e);
                }
            }
        }
    }

    /// A SPIR-V stage function: the library's bytes as its SPIR-V output, its specialization
    /// as a `VkSpecializationInfo`, its interface and resources from spirq, and naga's
    /// translations (best effort) for the other requested targets.
    fn compile_spirv(
        &self,
        key: StageKey,
        f: &FunctionDescriptor,
        stage: ShaderStage,
        sl: &spirv::SpirvLibrary,
        how: Specializing<'_>,
        file: &str,
    ) -> Result<Arc<StageFunction>, ShaderError> {
        let entry = f.base().1;
        let ep =
            sl.reflection.entry(entry, stage).ok_or_else(|| spirv_entry_error(&sl.reflection, entry, stage, file))?;
        let constants = f.resolved_constants();
        let spec = match how {
            Specializing::Portable => spirv::specialize::from_constants(ep, &constants, file)?,
            Specializing::Native(given) => {
                if !constants.is_empty() {
                    return Err(ShaderError::new(
                        file,
                        ShaderErrorKind::Constant,
                        "a native stage gives its specialization constants as its VkSpecializationInfo, not as constants",
                    ));
                }
                if let Some(s) = given {
                    spirv::specialize::check_native(ep, s, file)?;
                }
                given.filter(|s| !s.map_entries.is_empty()).cloned()
            }
        };
        let values = spec.as_ref().map(|s| spirv::specialize::values(ep, s)).unwrap_or_default();
        // Sizes (descriptor arrays, push-constant arrays, LocalSizeId) may depend on the
        // constants: reflect again with them applied.
        let reflected = if values.is_empty() {
            ep.clone()
        } else {
            let applied: Vec<_> = values.iter().map(|(id, v)| (*id, spirv::specialize::spirq_value(*v))).collect();
            let r = crate::contain::catch(|| spirv::reflect::reflect(&sl.words, &applied))
                .map_err(|p| ShaderError::panicked_in(file, "spirq", "reflecting the specialized module", &p))?
                .map_err(|m| {
                    ShaderError::new(
                        file,
                        ShaderErrorKind::Constant,
                        format!("SPIR-V reflection (spirq) with the specialization constants applied failed: {m}"),
                    )
                })?;
            let mut e = r.entry(entry, stage).cloned().ok_or_else(|| spirv_entry_error(&r, entry, stage, file))?;
            e.spec_constants = ep.spec_constants.clone();
            e
        };
        let mut outputs = TargetOutputs::default();
        let mut target_failures = Vec::new();
        if self.targets.contains(Target::Spirv) {
            outputs.0[Target::Spirv as usize] = Some(sl.module.clone());
        }
        // The binding map of the translated targets; a stage they cannot bind loses them.
        let map =
            layout::assign(stage, &reflected.bindings, reflected.push_constant_size.is_some(), reflected.runtime_sized)
                .map_err(|m| ShaderError::new(file, ShaderErrorKind::Write, m));
        let translated = self.translated_targets();
        if translated.0 != 0 {
            self.translate(
                sl,
                &reflected,
                map.as_ref(),
                entry,
                stage,
                &values,
                file,
                &mut outputs,
                &mut target_failures,
            );
        }
        if outputs.0.iter().all(Option::is_none) {
            return Err(all_targets_failed(target_failures));
        }
        let resources = layout::StageResources {
            bindings: reflected.bindings.clone(),
            immediates: reflected.push_constant_size,
            map: map.unwrap_or_else(|_| StageBindingMap {
                stage,
                slots: Vec::new(),
                msl_immediates_buffer: None,
                msl_sizes_buffer: None,
                hlsl_immediates_space: None,
            }),
        };
        let interface = Interface { inputs: reflected.inputs.clone(), outputs: reflected.outputs.clone() };
        Ok(Arc::new(StageFunction {
            key,
            stage,
            entry_point: entry.to_string(),
            outputs,
            specialization: spec.map(|s| Blob::new(s.encode())),
            interface,
            resources,
            spirv: Some(Arc::new(reflected)),
            target_failures,
        }))
    }

    /// The translations of a SPIR-V stage function to the requested MSL, HLSL and GLSL
    /// targets: SPIRV-Cross first, naga for each target SPIRV-Cross could not write (as
    /// [`SpirvTranslators`] says). A target neither writes is lost, with both reasons; a panic
    /// in either translator is that translator's failure for that target.
    #[allow(clippy::too_many_arguments)]
    fn translate(
        &self,
        sl: &spirv::SpirvLibrary,
        reflected: &spirv::EntryReflection,
        map: Result<&StageBindingMap, &ShaderError>,
        entry: &str,
        stage: ShaderStage,
        values: &[(u32, crate::descriptor::ConstantValue)],
        file: &str,
        outputs: &mut TargetOutputs,
        target_failures: &mut Vec<ShaderError>,
    ) {
        let translated = self.translated_targets();
        let lose_all = |e: &ShaderError, failures: &mut Vec<ShaderError>| {
            failures.extend(translated.iter().map(|t| ShaderError { target: Some(t), ..e.clone() }))
        };
        // Reasons no translator can get past: the binding map.
        let map = match map {
            Ok(m) => m,
            Err(e) => return lose_all(e, target_failures),
        };
        if let Some((set, binding)) = reflected.aliased.first() {
            let e = ShaderError::new(
                file,
                ShaderErrorKind::Write,
                format!("the module declares resources of different kinds at set {set} binding {binding}, which a translated target cannot bind"),
            );
            return lose_all(&e, target_failures);
        }
        let mut fallback = TargetSet(0);
        let mut cross_failed: Vec<(Target, String)> = Vec::new();
        if self.spirv_translators == SpirvTranslators::NagaOnly {
            fallback = translated;
        } else {
            let src = spirv::cross::CrossSource {
                words: &sl.words,
                entry,
                stage,
                values,
                bindings: &reflected.bindings,
                map,
            };
            for target in translated.iter() {
                let written = crate::contain::catch(|| {
                    crate::fault::at_target_write(target.name(), entry);
                    crate::fault::at_cross_write(target.name(), entry);
                    spirv::cross::write(target, self.profile, &src)
                })
                .unwrap_or_else(|p| Err(format!("{p} (while writing {target} for {stage} function '{entry}')")));
                let written = written.and_then(|bytes| {
                    let bytes = within_output_limit(bytes, target, file, entry).map_err(|e| e.message)?;
                    self.checker.check(target, stage, &bytes, file, entry).map_err(|e| e.message)?;
                    Ok(bytes)
                });
                match written {
                    Ok(bytes) => outputs.0[target as usize] = Some(Blob::new(bytes)),
                    Err(m) => {
                        fallback.0 |= TargetSet::of(&[target]).0;
                        cross_failed.push((target, m));
                    }
                }
            }
        }
        if fallback.0 == 0 {
            return;
        }
        let mut naga_failures = Vec::new();
        if self.spirv_translators == SpirvTranslators::CrossOnly {
            let e = ShaderError::new(file, ShaderErrorKind::Write, "naga is not used (SPIRV-Cross only)");
            naga_failures.extend(fallback.iter().map(|t| ShaderError { target: Some(t), ..e.clone() }));
        } else {
            match self.translate_naga(sl, map, entry, stage, values, file, fallback, outputs) {
                Ok(f) => naga_failures = f,
                Err(e) => naga_failures.extend(fallback.iter().map(|t| ShaderError { target: Some(t), ..e.clone() })),
            }
        }
        // Each target still without an output is lost with naga's error, SPIRV-Cross's reason
        // first.
        for mut e in naga_failures {
            let Some(t) = e.target else { continue };
            if outputs.get(t).is_some() {
                continue;
            }
            if let Some((_, m)) = cross_failed.iter().find(|(ct, _)| *ct == t) {
                e.message = format!("{t}: SPIRV-Cross: {m}; naga (the fallback): {}", e.message);
            }
            target_failures.push(e);
        }
    }

    /// naga's translation of a SPIR-V stage function to the `translated` targets, with the
    /// constant `values` applied as overrides. `Err`: one reason all of them are lost (naga
    /// could not parse the module, has no such stage or cannot specialize it); `Ok`: the
    /// targets lost one by one.
    #[allow(clippy::too_many_arguments)]
    fn translate_naga(
        &self,
        sl: &spirv::SpirvLibrary,
        map: &StageBindingMap,
        entry: &str,
        stage: ShaderStage,
        values: &[(u32, crate::descriptor::ConstantValue)],
        file: &str,
        translated: TargetSet,
        outputs: &mut TargetOutputs,
    ) -> Result<Vec<ShaderError>, ShaderError> {
        let fail = |kind, m: String| ShaderError::new(file, kind, m);
        // The stage first: naga's parse is not made for a stage naga cannot translate.
        let naga_stage = parse::naga_stage(stage)
            .ok_or_else(|| fail(ShaderErrorKind::Write, format!("naga cannot translate {stage} functions")))?;
        let parsed = match sl.naga() {
            Some(Ok(p)) => p,
            Some(Err(e)) => return Err(e.clone()),
            None => return Ok(Vec::new()),
        };
        let mut constants = Vec::with_capacity(values.len());
        for (id, value) in values {
            let id = u16::try_from(*id).map_err(|_| {
                fail(
                    ShaderErrorKind::Constant,
                    format!("specialization constant id {id} is beyond naga's overrides (at most 65535)"),
                )
            })?;
            constants.push(crate::descriptor::Constant { id: crate::descriptor::ConstantId::Id(id), value: *value });
        }
        let union = self.profile.union_capabilities(translated);
        let spec = specialize::specialize(parsed, union, file, entry, stage, &constants)?;
        let src = targets::StageSource {
            module: &spec.module,
            info: &spec.info,
            stage: naga_stage,
            entry,
            file,
            bindings: map,
        };
        let mut failures = Vec::new();
        self.write_targets(&src, stage, union, translated, outputs, &mut failures);
        Ok(failures)
    }
}

/// The error for an entry point a SPIR-V module does not have for `stage`: a kernel entry
/// point named as granary does not harvest it, one of another stage
/// named with its stage, otherwise the entry points the module has for `stage`.
fn spirv_entry_error(r: &spirv::Reflection, entry: &str, stage: ShaderStage, file: &str) -> ShaderError {
    let message = if let Some((_, model)) = r.unsupported.iter().find(|(n, _)| n == entry) {
        format!("entry point '{entry}' is a {model} function: granary does not harvest that stage yet (used as the {stage} stage)")
    } else if let Some(other) = r.entry_points.iter().find(|e| e.name == entry) {
        format!("entry point '{entry}' is a {} function, but it is used as the {stage} stage", other.stage)
    } else {
        let available: Vec<&str> =
            r.entry_points.iter().filter(|e| e.stage == stage).map(|e| e.name.as_str()).collect();
        format!(
            "no {stage} entry point named '{entry}' (available {stage} entry points: {})",
            if available.is_empty() { "none".to_string() } else { available.join(", ") }
        )
    };
    ShaderError::new(file, ShaderErrorKind::EntryPoint, message)
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn an_output_over_the_limit_is_that_targets_failure() {
        let at_limit = vec![0u8; MAX_OUTPUT_BYTES as usize];
        assert_eq!(
            within_output_limit(at_limit, Target::Hlsl, "f.wgsl", "main").map(|b| b.len()).ok(),
            Some(MAX_OUTPUT_BYTES as usize)
        );
        let e =
            within_output_limit(vec![0u8; MAX_OUTPUT_BYTES as usize + 1], Target::Hlsl, "f.wgsl", "main").unwrap_err();
        assert_eq!((e.target, e.kind, e.file.as_str()), (Some(Target::Hlsl), ShaderErrorKind::Write, "f.wgsl"));
        assert!(e.message.contains("268435457 bytes, over granary's limit of 268435456"), "{}", e.message);
    }

    #[test]
    fn a_library_over_the_limit_is_refused_unparsed_and_one_at_it_loads() {
        let source = "@compute @workgroup_size(1) fn main() {}\n";
        let limit = source.len() as u64;
        let frontend =
            |limit| Frontend::new(TargetSet::SPIRV, Arc::new(TaskLimiter::new(1)), true).with_max_library_bytes(limit);
        let at = Library::new("at", SourceKind::Wgsl, None, source.into(), Some("shaders/at.wgsl".into()));
        let over = Library::new("over", SourceKind::Wgsl, None, format!("{source} ").into(), Some("over.wgsl".into()));
        let f = frontend(Some(limit));
        assert!(f.library(&at).is_ok());
        let e = f.library(&over).err().map(|e| (e.kind, e.file, e.message));
        let Some((kind, file, message)) = e else { panic!("a library over the limit loaded") };
        assert_eq!((kind, file.as_str()), (ShaderErrorKind::TooLarge, "over.wgsl"));
        let size = limit + 1;
        for part in [format!("{size} bytes"), format!("limit of {limit} bytes"), "--isolate".into()] {
            assert!(message.contains(&part), "no '{part}' in: {message}");
        }
        assert_eq!(f.stats().libraries_parsed, 1, "the refused library is not parsed");
        assert!(frontend(None).library(&over).is_ok(), "no limit");
        assert_eq!(frontend(Some(0)).max_library_bytes(), Some(0));
        assert_eq!(
            Frontend::new(TargetSet::SPIRV, Arc::new(TaskLimiter::new(1)), true).max_library_bytes(),
            Some(MAX_LIBRARY_BYTES)
        );
    }
}
