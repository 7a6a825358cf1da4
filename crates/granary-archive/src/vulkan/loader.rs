//! [`PipelineLoader`]: create an archive's pipelines on a device at run time.

use super::binary::Binaries;
use super::build::{color_output, entry_name, graphics_input};
use super::cache::{Cache, EngineCache};
use super::device::Gpu;
use super::error::VulkanError;
use super::handles::{DriverLayout, Module};
use super::native::{NativeInput, NativeObjects, StageInput};
use super::pipeline::{CheckedBinaries, CreateMode, CreateOutcome, GraphicsInput, Pipeline};
use super::shared::Shared;
use super::sidecar::SidecarStatus;
use super::stats::Outcome;
use super::translate::{layout_desc, stage_flag, LayoutDesc};
use crate::device::DeviceIdentity;
use crate::error::ArchiveError;
use crate::key::{PipelineKey, StageKey};
use crate::native::{NativePipeline, Specialization};
use crate::reader::{Archive, DeviceMismatch, DeviceRef, DeviceSlot, PipelineRef};
use crate::render_state::TextureFormat;
use crate::types::{PipelineKind, Target};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vulkanalia::vk;

/// `VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT`.
pub const FEEDBACK_VALID: u32 = 0x1;
/// `VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT`.
pub const FEEDBACK_CACHE_HIT: u32 = 0x2;

/// How the loader creates pipelines.
#[derive(Clone, Debug)]
pub struct LoaderOptions {
    /// Formats for colour attachments the archive left unspecialized (pipelines built as
    /// libraries): attachment `i` takes `link_formats[i]`, or the last one given. Default:
    /// `rgba8unorm`.
    pub link_formats: Vec<TextureFormat>,
    /// Use the driver binaries the archive holds for this device (default `true`; `false`
    /// measures the compile paths).
    pub use_binaries: bool,
    /// Compile from the archive's SPIR-V where the archive's binaries cannot be used: it was
    /// built for another device or driver, a binary is damaged, or the driver refuses one.
    /// Default `true`; with `false` such a pipeline is an error.
    pub fallback_compile: bool,
    /// A pipeline the archive holds no binaries for on this device (a device without
    /// `VK_KHR_pipeline_binary`, whose section holds pipeline-cache data) is an error instead
    /// of a compile. Default `false`.
    pub require_binaries: bool,
    /// Seed the compile path's `VkPipelineCache` with the archive's pipeline-cache data for
    /// this device, if it holds any: every blob, merged (`vkMergePipelineCaches`), since an
    /// archive merged from shards or written by `--isolate` workers holds one per harvesting
    /// process (default `true`).
    pub use_archive_cache: bool,
    /// Create pipelines archived as libraries from their binaries, then link them (default
    /// `true`). `false` compiles their library part from SPIR-V (with the loader's pipeline
    /// cache) before linking: the workaround for a driver that crashes when linking a library
    /// made from binaries (NVIDIA 580.159 does when the binaries include its shared dictionary
    /// binary; docs/BENCHMARKS.md). Whole pipelines use their binaries either way.
    pub library_binaries: bool,
    /// Binaries of at least this many bytes are created once per loader and shared by every
    /// pipeline that uses them (NVIDIA's ~700 KB dictionary binary); smaller ones are created
    /// for their pipeline and destroyed once it exists. Default 64 KiB: on NVIDIA 580 the
    /// per-pipeline binaries are 1–30 KB and rarely shared, and keeping them alive cost 130 MB
    /// of resident memory over 33,000 pipelines for no speed (docs/BENCHMARKS.md). 0 shares
    /// every binary.
    pub share_binaries_from: usize,
    /// Create pipelines archived as libraries from their binaries even on a device section that
    /// carries NVIDIA's dictionary (default `false`). NVIDIA 580.159 attaches one shared
    /// "dictionary" binary to most pipelines compiled after its first thousand or so; linking a
    /// library made from such a set crashes that driver (SIGSEGV in `vkCreateGraphicsPipelines`),
    /// and on such a section creating even the other library sets from binaries while other
    /// threads create pipelines crashes it too (docs/BENCHMARKS.md, "The frame loop"). So by
    /// default the loader recognises the dictionary by content — a binary of at least
    /// [`DICTIONARY_MIN_BYTES`] whose blob two sets of this device's section reference — and,
    /// when the section holds one, compiles every library part from SPIR-V instead (with the
    /// loader's pipeline cache), saying so in [`Loaded::fallback_reason`]. Sets of whole
    /// pipelines, and sections without a dictionary, are never affected.
    pub link_shared_library_binaries: bool,
    /// Create whole pipelines from binary sets that carry NVIDIA's dictionary (default
    /// `false`). On NVIDIA 580.159 a pipeline created from such a set is created without
    /// error and can be held, but the first draw with it crashes the process (SIGSEGV, one
    /// thread, every time; docs/BENCHMARKS.md, "The dictionary binary at draw time"). So by
    /// default a set that carries a binary of at least [`DICTIONARY_MIN_BYTES`] whose blob
    /// another set of this device's section references is not handed to the driver: the
    /// pipeline is compiled from SPIR-V with the loader's pipeline cache, saying so in
    /// [`Loaded::fallback_reason`]. Sets without such a binary are unaffected. A device that
    /// capture binaries with the dictionary is better harvested with cache data
    /// (`--capture cache`) or in shards of fewer than about 1,000 pipelines.
    pub whole_dictionary_binaries: bool,
    /// Seed the compile path's `VkPipelineCache` with these bytes too (e.g. a file the
    /// application saved with `vkGetPipelineCacheData`), merged with the archive's data for
    /// this device when [`use_archive_cache`](Self::use_archive_cache) is on. Their header must match the device
    /// (vendor, device, `pipelineCacheUUID`): otherwise [`PipelineLoader::new`] fails with
    /// [`LoadError::Cache`] naming the field, and no byte reaches the driver.
    pub initial_cache: Option<Vec<u8>>,
    /// Create into the engine's own `VkPipelineCache` instead of one the loader makes: the
    /// archive's cache data for this device and [`initial_cache`](Self::initial_cache) are
    /// merged into it when the loader is made, every compile goes through it, and the
    /// engine saves it with `vkGetPipelineCacheData` as before. Default `None`.
    pub engine_cache: Option<EngineCache>,
    /// Take pipeline layouts from the engine instead of creating granary's own: the loader
    /// asks once per distinct layout description and holds the handle (never destroying it)
    /// in every pipeline made with it. Default `None`: granary creates each layout and keeps
    /// it alive as long as a pipeline made with it lives.
    pub layouts: Option<EngineLayouts>,
    /// Record what the application uses and what the archive misses (docs/FORMAT.md §6), for
    /// `granary harvest --add-recorded`: each pipeline created from the archive once (by
    /// [`load_key`](PipelineLoader::load_key), [`load_label`](PipelineLoader::load_label),
    /// [`load`](PipelineLoader::load) and its variants, or at the first
    /// [`Warmup::try_get`](super::Warmup::try_get) of its ticket — not when a warm-up merely
    /// creates it, so the record's order is the order of first use), each key or label asked
    /// for that the archive lacks, and each create info given to
    /// [`create_graphics`](PipelineLoader::create_graphics) /
    /// [`create_compute`](PipelineLoader::create_compute) that the archive does not hold, with
    /// its modules' SPIR-V (which the [`ObjectRecorder`](super::ObjectRecorder) keeps only when
    /// made with [`ObjectRecorder::keeping_code`](super::ObjectRecorder::keeping_code)).
    /// Default `None`.
    pub recorder: Option<Arc<crate::record::Recorder>>,
    /// The after-update sidecar (docs/FORMAT.md §7): a local file, beside the game's data and
    /// never the shipped archive, holding this device's pipeline-cache data for an archive
    /// that has nothing valid for it (a driver update, another GPU). Read in
    /// [`PipelineLoader::new`] when present and written on this device (its cache data merged
    /// into the loader's, [`PipelineLoader::sidecar`] says what happened; damaged or for
    /// another device, it is refused and never reaches the driver); written by
    /// [`PipelineLoader::save_sidecar`], or by a warm-up's
    /// [`refresh_sidecar`](super::Warmup::refresh_sidecar) once it has compiled every pipeline.
    /// Default `None`.
    pub sidecar: Option<std::path::PathBuf>,
    /// Refuse the archive unless it is signed by this key (feature `sign`): checked in
    /// [`PipelineLoader::new`], over every byte of the archive, before any byte of it reaches
    /// the driver. `None` (the default) loads unsigned archives.
    #[cfg(feature = "sign")]
    pub require_signature: Option<crate::sign::PublicKey>,
}

impl Default for LoaderOptions {
    fn default() -> Self {
        LoaderOptions {
            link_formats: vec![TextureFormat::Rgba8unorm],
            use_binaries: true,
            fallback_compile: true,
            require_binaries: false,
            library_binaries: true,
            share_binaries_from: 64 << 10,
            link_shared_library_binaries: false,
            whole_dictionary_binaries: false,
            use_archive_cache: true,
            initial_cache: None,
            engine_cache: None,
            layouts: None,
            recorder: None,
            sidecar: None,
            #[cfg(feature = "sign")]
            require_signature: None,
        }
    }
}

/// What layout the loader needs: the description a pipeline was archived with.
///
/// Thread safety: borrowed plain data.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum LayoutRequest<'a> {
    /// A pipeline harvested from a granary script: its resource layout as Vulkan sees it
    /// (one binding list per set, the push-constant range).
    Script(&'a LayoutDesc),
    /// A Vulkan-native pipeline: the application's own layout, as recorded.
    Native(&'a crate::native::NativeLayout),
}

/// The engine's pipeline layouts ([`LoaderOptions::layouts`]), asked by description.
///
/// # Safety
///
/// For every `Ok(handle)` [`layout`](Self::layout) returns:
/// - `handle` is a valid `VkPipelineLayout` of the loader's device;
/// - it is compatible with the request as the Vulkan specification requires of a pipeline's
///   layout against its shaders: every binding of the request exists in the same set with
///   the same descriptor type, at least its count and a superset of its stage flags, and the
///   push-constant ranges cover the request's bytes and stages (a native request's layout is
///   the application's own: return the layout its create info named, or one identical to it);
/// - it stays valid until every pipeline (and pipeline library) the loader created with it
///   is destroyed: granary holds it in each such [`Pipeline`](super::Pipeline) (and
///   [`Retained`](super::Retained) after `into_raw`) and never destroys it.
///
/// Thread safety: `Send + Sync`; `layout` may be called from any number of threads at once,
/// once per distinct request (the loader keeps the answer; an error only until the next
/// request for it).
pub unsafe trait LayoutSource: Send + Sync {
    /// The engine's layout for `request`, or why there is none (the pipeline then fails with
    /// [`LoadErrorKind::Layout`]).
    fn layout(&self, request: LayoutRequest<'_>) -> Result<vk::PipelineLayout, String>;
}

/// A shared [`LayoutSource`], for [`LoaderOptions::layouts`].
///
/// Thread safety: `Send + Sync`, `Clone` (an `Arc`).
#[derive(Clone)]
pub struct EngineLayouts(Arc<dyn LayoutSource>);

impl EngineLayouts {
    /// Wraps `source`.
    pub fn new(source: Arc<dyn LayoutSource>) -> Self {
        EngineLayouts(source)
    }
}

impl std::fmt::Debug for EngineLayouts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EngineLayouts(..)")
    }
}

/// How one pipeline was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// From the archive's driver binaries: `vkCreatePipelineBinariesKHR` accepted them and the
    /// pipeline was created from them (no compile).
    Binaries,
    /// Compiled from SPIR-V, and the driver reported a pipeline-cache hit
    /// (`APPLICATION_PIPELINE_CACHE_HIT` in `VK_EXT_pipeline_creation_feedback`).
    CacheHit,
    /// Compiled from SPIR-V (no binaries used, no cache hit reported).
    Compiled,
}

impl Source {
    /// `binaries`, `cache-hit` or `compiled`.
    pub fn name(self) -> &'static str {
        match self {
            Source::Binaries => "binaries",
            Source::CacheHit => "cache-hit",
            Source::Compiled => "compiled",
        }
    }
}

/// A pipeline created by the loader.
pub struct Loaded {
    /// The pipeline (destroyed when dropped; [`Pipeline::into_raw`] hands it over).
    pub pipeline: Pipeline,
    /// How it was made.
    pub source: Source,
    /// It was archived as a library and linked with a fragment-output part here.
    pub linked: bool,
    /// Why binaries were not used although the archive has a section for this device (a
    /// damaged binary, one the driver refused, a pipeline key that differs from this create
    /// info's, a library set on a device without graphics pipeline libraries); `None` when
    /// they were used or absent.
    pub fallback_reason: Option<String>,
    /// Binaries handed to the driver.
    pub binaries: usize,
    /// Time inside the driver's pipeline-creating calls (binaries, pipelines, link).
    pub driver_time: Duration,
    /// Time of the whole call: archive lookup and checks, object creation, driver.
    pub total_time: Duration,
    /// `VkPipelineCreationFeedback::flags` of the pipeline (of the library, when linked).
    pub feedback: u32,
    /// 0 as first made; 1 when a warm-up made it again whole after fast-linking it
    /// ([`Warmup::optimize_linked`](super::Warmup::optimize_linked)).
    pub generation: u32,
    /// It was archived as a library, and the loader created instead the whole variant the
    /// archive holds for the formats asked for (`granary harvest --whole-variants`): the
    /// pipeline linking would make, optimized, from that variant's own binaries where it has
    /// them. `linked` is then false.
    pub variant: bool,
}

/// Why a pipeline could not be created. [`kind`](Self::kind) says it for code,
/// [`vk_result`](Self::vk_result) gives the driver's `VkResult` where there is one, and
/// [`source`](std::error::Error::source) the error underneath.
///
/// New variants may be added: match with a wildcard arm, or match on [`kind`](Self::kind).
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// The archive is damaged where this pipeline lives.
    Archive(ArchiveError),
    /// No pipeline has this label or key.
    NotFound(String),
    /// The archive has no binaries for this device and compiling was not allowed.
    Mismatch(DeviceMismatch),
    /// The loader's pipeline cache could not be made: initial data whose header does not
    /// match this device ([`VulkanError::CacheHeader`]), or the driver failed.
    Cache(VulkanError),
    /// The application's create info cannot be said in granary's native state (lookup by
    /// create info: [`PipelineLoader::lookup_graphics`]); what and where.
    CreateInfo(super::recorder::CreateInfoError),
    /// The pipeline cannot be created on this device (unsupported state, no SPIR-V, a binary
    /// that is damaged or refused with fallback off), or the driver failed.
    Pipeline {
        /// The pipeline's label (or key).
        pipeline: String,
        /// What kind of failure ([`LoadErrorKind::Unsupported`], [`MissingSpirv`](LoadErrorKind::MissingSpirv),
        /// [`BinariesUnusable`](LoadErrorKind::BinariesUnusable), or a driver failure's kind).
        kind: LoadErrorKind,
        /// What went wrong.
        message: String,
        /// The driver call's error, where one failed.
        source: Option<VulkanError>,
    },
    /// [`PipelineLoader::load_if_cheap`]: the pipeline would have to be compiled (no usable
    /// binaries for it on this device, or the driver reported that creating it needs a compile).
    WouldCompile(String),
    /// The after-update sidecar ([`LoaderOptions::sidecar`]) could not be written.
    Sidecar {
        /// The sidecar file.
        path: std::path::PathBuf,
        /// What the operating system or the driver said.
        message: String,
        /// The I/O error, where one failed.
        source: Option<std::io::Error>,
    },
}

/// What kind of failure a [`LoadError`] is, for code that reacts to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LoadErrorKind {
    /// The archive is damaged where the pipeline lives.
    Archive,
    /// No pipeline has this label or key.
    NotFound,
    /// The archive holds nothing for this device and compiling was not allowed.
    DeviceMismatch,
    /// The loader's pipeline cache could not be made.
    Cache,
    /// The application's create info cannot be said in granary's state.
    CreateInfo,
    /// The device lacks a feature, limit or extension the pipeline needs, or its state is
    /// one the loader cannot create (refused before any driver call).
    Unsupported,
    /// A stage has no SPIR-V in the archive to compile from.
    MissingSpirv,
    /// The archive's binaries cannot be used (damaged, refused by the driver, another
    /// pipeline key, none for this device) and compiling was not allowed.
    BinariesUnusable,
    /// Only cheap creation was asked for, and this one needs a compile.
    WouldCompile,
    /// The driver ran out of host or device memory.
    OutOfMemory,
    /// The device was lost.
    DeviceLost,
    /// Any other driver failure (see [`LoadError::vk_result`]).
    Driver,
    /// The engine's [`LayoutSource`] gave no layout.
    Layout,
    /// The after-update sidecar could not be written.
    Sidecar,
}

impl LoadErrorKind {
    /// The kind of a driver call's failure: out of memory, device lost, or another driver error.
    pub fn of_driver(e: &VulkanError) -> LoadErrorKind {
        match e.result() {
            Some(vk::Result::ERROR_OUT_OF_HOST_MEMORY | vk::Result::ERROR_OUT_OF_DEVICE_MEMORY) => {
                LoadErrorKind::OutOfMemory
            }
            Some(vk::Result::ERROR_DEVICE_LOST) => LoadErrorKind::DeviceLost,
            _ => LoadErrorKind::Driver,
        }
    }
}

impl LoadError {
    /// What kind of failure this is.
    pub fn kind(&self) -> LoadErrorKind {
        match self {
            LoadError::Archive(_) => LoadErrorKind::Archive,
            LoadError::NotFound(_) => LoadErrorKind::NotFound,
            LoadError::Mismatch(_) => LoadErrorKind::DeviceMismatch,
            LoadError::Cache(_) => LoadErrorKind::Cache,
            LoadError::CreateInfo(_) => LoadErrorKind::CreateInfo,
            LoadError::Pipeline { kind, .. } => *kind,
            LoadError::WouldCompile(_) => LoadErrorKind::WouldCompile,
            LoadError::Sidecar { .. } => LoadErrorKind::Sidecar,
        }
    }

    /// The driver's `VkResult`, where a driver call failed.
    pub fn vk_result(&self) -> Option<vk::Result> {
        match self {
            LoadError::Cache(e) => e.result(),
            LoadError::Pipeline { source: Some(e), .. } => e.result(),
            _ => None,
        }
    }
}

/// A failure inside the loader before it has the pipeline's name: a whole [`LoadError`], or
/// a kind, a message and the driver's error. Plain strings are [`LoadErrorKind::Unsupported`].
#[derive(Debug)]
pub(super) enum Fail {
    /// Already a whole error (archive damage, not found, device mismatch).
    Load(LoadError),
    /// A failure of this pipeline, to be named.
    Here { kind: LoadErrorKind, message: String, source: Option<VulkanError> },
}

impl From<String> for Fail {
    fn from(message: String) -> Self {
        Fail::Here { kind: LoadErrorKind::Unsupported, message, source: None }
    }
}

impl From<VulkanError> for Fail {
    fn from(e: VulkanError) -> Self {
        Fail::Here { kind: LoadErrorKind::of_driver(&e), message: e.to_string(), source: Some(e) }
    }
}

impl From<LoadError> for Fail {
    fn from(e: LoadError) -> Self {
        Fail::Load(e)
    }
}

impl From<ArchiveError> for Fail {
    fn from(e: ArchiveError) -> Self {
        Fail::Load(LoadError::Archive(e))
    }
}

impl Fail {
    /// A failure of `kind`.
    pub(super) fn of(kind: LoadErrorKind, message: impl Into<String>) -> Self {
        Fail::Here { kind, message: message.into(), source: None }
    }

    /// The [`LoadError`] for the pipeline `name` names.
    pub(super) fn named(self, name: impl FnOnce() -> String) -> LoadError {
        match self {
            Fail::Load(e) => e,
            Fail::Here { kind: LoadErrorKind::WouldCompile, .. } => LoadError::WouldCompile(name()),
            Fail::Here { kind, message, source } => LoadError::Pipeline { pipeline: name(), kind, message, source },
        }
    }
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Archive(e) => write!(f, "{e}"),
            LoadError::NotFound(what) => write!(f, "no pipeline {what} in the archive"),
            LoadError::Mismatch(m) => write!(f, "{m}"),
            LoadError::Cache(e) => write!(f, "{e}"),
            LoadError::CreateInfo(e) => write!(f, "the application's create info: {e}"),
            LoadError::Pipeline { pipeline, message, .. } => write!(f, "pipeline '{pipeline}': {message}"),
            LoadError::WouldCompile(what) => write!(f, "pipeline '{what}' would need a compile"),
            LoadError::Sidecar { path, message, .. } => write!(f, "sidecar {}: {message}", path.display()),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Archive(e) => Some(e),
            LoadError::Mismatch(e) => Some(e),
            LoadError::Cache(e) => Some(e),
            LoadError::CreateInfo(e) => Some(e),
            LoadError::Pipeline { source: Some(e), .. } => Some(e),
            LoadError::Sidecar { source: Some(e), .. } => Some(e),
            _ => None,
        }
    }
}

impl From<ArchiveError> for LoadError {
    fn from(e: ArchiveError) -> Self {
        LoadError::Archive(e)
    }
}

/// A driver failure, or [`LoadErrorKind::WouldCompile`] where the driver answered
/// `VK_PIPELINE_COMPILE_REQUIRED` (a cheap load the pipeline cache could not answer).
fn would_compile(e: VulkanError) -> Fail {
    if e.result() == Some(vk::Result::PIPELINE_COMPILE_REQUIRED) {
        Fail::of(
            LoadErrorKind::WouldCompile,
            "not in the pipeline cache: the driver needs a compile (VK_PIPELINE_COMPILE_REQUIRED)",
        )
    } else {
        e.into()
    }
}

/// Why a whole pipeline whose binaries include NVIDIA's dictionary was compiled instead
/// ([`LoaderOptions::whole_dictionary_binaries`]).
pub(super) const DICTIONARY_SET_REFUSED: &str =
    "its binaries include one other pipelines share (NVIDIA's dictionary: drawing with a pipeline created from \
     such binaries crashes NVIDIA 580): compiled from SPIR-V (LoaderOptions::whole_dictionary_binaries)";

/// The smallest shared binary taken for NVIDIA's dictionary: the dictionary measures 125–710 KB
/// on NVIDIA 580, the code binaries of one pipeline 1–30 KB (docs/BENCHMARKS.md).
pub const DICTIONARY_MIN_BYTES: usize = 64 << 10;

/// A distinct archived binary: its key and its blob index.
type BinaryId = (Vec<u8>, usize);

/// Creates an archive's pipelines on one device.
///
/// At construction it compares the device's identity with the archive's device sections,
/// once: an archive built for another GPU or driver version is detected here, before any
/// binary reaches the driver ([`mismatch`](Self::mismatch) says "built for X, this device is
/// Y: what differs"), and the loader then compiles from the archive's SPIR-V (or refuses,
/// with [`LoaderOptions::fallback_compile`] off). Every binary's bytes are checked against
/// their content hash before `vkCreatePipelineBinariesKHR` sees them; a damaged one costs
/// that pipeline's binaries, never a driver call with bad bytes.
///
/// Thread safety: `Send + Sync`. [`load`](Self::load) may run from any number of threads at
/// once: shader modules and layouts are created once per loader (other callers wait on a
/// once-cell) and shared; the compile path's `VkPipelineCache` is internally synchronized.
/// The driver itself may serialize creation (NVIDIA 580 does, docs/BENCHMARKS.md), so a
/// background warm-up and a render thread calling `load` at once can wait on each other: a
/// frame should never call `load`, but [`Warmup::try_get`](super::Warmup::try_get), which
/// never waits.
///
/// Ownership: the loader holds its archive by `Arc`, so an engine keeps it in a plain struct,
/// and may replace it with a loader for a patched archive while pipelines made by this one
/// live on: every [`Pipeline`] holds what it needs (its device, its layout, the libraries it
/// was linked from) by `Arc`, never the loader.
pub struct PipelineLoader {
    pub(super) archive: Arc<Archive>,
    pub(super) gpu: Arc<Gpu>,
    identity: DeviceIdentity,
    /// This device's section of the archive, or why there is none.
    device: Result<DeviceSlot, DeviceMismatch>,
    /// Whether this device's section holds binaries this device may take: its global key
    /// equals this device's, non-empty, and the device has `VK_KHR_pipeline_binary` on.
    pub(super) binaries_ok: bool,
    /// The compile path's pipeline cache.
    pub(super) cache: Cache,
    /// How many blobs of pipeline-cache data seeded `cache`.
    seeded: usize,
    /// Archive cache blobs skipped because their header is not this device's (index, why).
    skipped_caches: Vec<(usize, String)>,
    /// Pipelines whose binaries were not used because the pipeline key differed or was absent.
    pub(super) key_mismatches: std::sync::atomic::AtomicU64,
    /// What every load did: counts and latencies per source.
    pub(super) stats: super::stats::LoaderCounters,
    pub(super) options: LoaderOptions,
    modules: Shared<StageKey, Module>,
    layouts: Shared<LayoutDesc, DriverLayout>,
    /// Distinct binaries by (key, blob index).
    binaries: Shared<BinaryId, Binaries>,
    /// Fragment-output libraries by output state, shared by every pipeline linked with one.
    outputs: Shared<Vec<u64>, Pipeline>,
    /// Native pipelines' layouts, render passes and immutable samplers, by content.
    native: NativeObjects,
    /// The blobs of this device's section that more than one binary set references (made on
    /// the first library set loaded; see [`LoaderOptions::link_shared_library_binaries`]).
    shared_blobs: std::sync::OnceLock<Result<crate::reader::SharedBinaries, String>>,
    /// The archive's whole variants of library pipelines (made at the first pipeline with
    /// unspecialized colour output; see [`super::variants`]).
    variants: std::sync::OnceLock<Result<super::variants::Variants, String>>,
    /// What became of the sidecar at construction.
    sidecar: SidecarStatus,
    /// The archive's identity, recorded in a sidecar written for it.
    archive_id: u128,
}

impl PipelineLoader {
    /// A loader for `archive` (an `Archive` or an `Arc<Archive>` the caller shares) on `gpu`.
    /// Fails only if the archive's device table is damaged or the pipeline cache cannot be
    /// created.
    pub fn new(archive: impl Into<Arc<Archive>>, gpu: Arc<Gpu>, options: LoaderOptions) -> Result<Self, LoadError> {
        let archive: Arc<Archive> = archive.into();
        #[cfg(feature = "sign")]
        if let Some(key) = &options.require_signature {
            // Unsigned, another key's, or any byte changed: refused before anything else.
            archive.verify_signature(key)?;
        }
        let identity = gpu.identity();
        let mut device = archive.binaries_for(&identity)?;
        if device.is_err() && !identity.binary_global_key.is_empty() {
            // An archive harvested on this very device without pipeline binaries
            // (`--no-pipeline-binaries`) names it without a global key: its pipeline-cache
            // data is valid here (the key matters only for binaries).
            let keyless = DeviceIdentity { binary_global_key: Vec::new(), ..identity.clone() };
            if let Ok(d) = archive.binaries_for(&keyless)? {
                device = Ok(d);
            }
        }
        // The after-update sidecar, checked for this device before the driver sees it.
        let archive_id = super::sidecar::archive_identity(&archive);
        let (sidecar, sidecar_data) = match &options.sidecar {
            None => (SidecarStatus::Off, None),
            Some(path) => match super::sidecar::read(path, archive_id, &identity) {
                Ok(None) => (SidecarStatus::Absent, None),
                Ok(Some(r)) => {
                    (SidecarStatus::Loaded { bytes: r.data.len() as u64, same_archive: r.same_archive }, Some(r.data))
                }
                Err(why) => (SidecarStatus::Refused { why }, None),
            },
        };
        // Every blob the archive holds for this device (one per shard or `--isolate` worker
        // that wrote one), merged into one cache.
        let mut initial: Vec<&[u8]> = match &device {
            Ok(d) if options.use_archive_cache => d.caches()?,
            _ => Vec::new(),
        };
        initial.extend(sidecar_data.as_deref());
        // The application's own data joins the archive's (merged, not instead).
        initial.extend(options.initial_cache.as_deref());
        let initial: Vec<&[u8]> = initial.into_iter().filter(|b| !b.is_empty()).collect();
        if let Some(bytes) = options.initial_cache.as_deref().filter(|b| !b.is_empty()) {
            // The caller's own file: a header for another device is an error, not a skip.
            super::cache::check_header(bytes, &identity)
                .map_err(|why| LoadError::Cache(VulkanError::CacheHeader { why }))?;
        }
        let merged = match options.engine_cache {
            Some(engine) => gpu.engine_cache_merged(engine, &initial),
            None => gpu.pipeline_cache_merged(&initial),
        }
        .map_err(LoadError::Cache)?;
        let (cache, seeded, skipped_caches) = (merged.cache, merged.seeded, merged.skipped);
        // Binaries only from a section whose global key is this device's, never empty: an
        // archive found by the keyless identity holds cache data only.
        let binaries_ok = gpu.captures_binaries()
            && device.as_ref().is_ok_and(|d| {
                d.has_pipeline_binaries() && d.identity().binary_global_key.as_slice() == gpu.global_key()
            });
        let device = device.map(|d| d.slot());
        Ok(PipelineLoader {
            archive,
            gpu,
            identity,
            device,
            binaries_ok,
            cache,
            seeded,
            skipped_caches,
            key_mismatches: Default::default(),
            stats: Default::default(),
            options,
            modules: Shared::default(),
            layouts: Shared::default(),
            binaries: Shared::default(),
            outputs: Shared::default(),
            native: NativeObjects::default(),
            shared_blobs: std::sync::OnceLock::new(),
            variants: std::sync::OnceLock::new(),
            sidecar,
            archive_id,
        })
    }

    /// What became of [`LoaderOptions::sidecar`] when the loader was made.
    pub fn sidecar(&self) -> &SidecarStatus {
        &self.sidecar
    }

    /// Whether this device needs its sidecar written: one is configured, the archive holds
    /// nothing for this device ([`mismatch`](Self::mismatch)), and no sidecar written for this
    /// archive on this device was loaded.
    pub fn needs_sidecar(&self) -> bool {
        self.options.sidecar.is_some()
            && self.device.is_err()
            && !matches!(self.sidecar, SidecarStatus::Loaded { same_archive: true, .. })
    }

    /// Writes this device's pipeline-cache data — what the loader's cache holds now: the
    /// sidecar it read, and everything compiled since — to [`LoaderOptions::sidecar`],
    /// replacing the file there atomically (a crash leaves the old one or the new one). Returns
    /// the bytes of cache data written; `Ok(0)` and nothing written without a sidecar
    /// configured. Blocks for the file write: call it off the frame's path (a warm-up's
    /// [`refresh_sidecar`](super::Warmup::refresh_sidecar) does it on a worker or pumping thread).
    pub fn save_sidecar(&self) -> Result<u64, LoadError> {
        let Some(path) = &self.options.sidecar else { return Ok(0) };
        let data = self.cache.data().map_err(|e| LoadError::Sidecar {
            path: path.clone(),
            message: format!("vkGetPipelineCacheData: {e}"),
            source: None,
        })?;
        super::sidecar::write(path, self.archive_id, &self.identity, &data).map_err(|e| LoadError::Sidecar {
            path: path.clone(),
            message: e.to_string(),
            source: Some(e),
        })?;
        Ok(data.len() as u64)
    }

    /// Whether `set` carries a binary of at least [`DICTIONARY_MIN_BYTES`] whose blob another
    /// binary set of this device's section also references (NVIDIA's dictionary). Small
    /// shared binaries — one library part's code, shared by the libraries of one vertex
    /// function — link fine and are not counted (on NVIDIA the example's 202 libraries share
    /// such binaries, and linking them from binaries is 47 times faster than compiling). One pass over the section's binary records on
    /// the first call, then a hash lookup per binary.
    pub(super) fn carries_shared_binary(&self, set: &crate::reader::BinarySetRef<'_>) -> Result<bool, String> {
        self.dictionary_blobs()?.carried_by(set).map_err(|e| e.to_string())
    }

    /// Whether this device's section holds any binary of at least [`DICTIONARY_MIN_BYTES`]
    /// that two binary sets share (NVIDIA's dictionary).
    fn section_has_dictionary(&self) -> Result<bool, String> {
        Ok(!self.dictionary_blobs()?.is_empty())
    }

    /// The binaries of this device's section that more than one binary set references and
    /// that are at least [`DICTIONARY_MIN_BYTES`] long (one pass over the section, on first use).
    fn dictionary_blobs(&self) -> Result<&crate::reader::SharedBinaries, String> {
        let shared = self.shared_blobs.get_or_init(|| {
            let d = self.section().map_err(|m| m.to_string())?;
            d.shared_binaries(DICTIONARY_MIN_BYTES).map_err(|e| e.to_string())
        });
        shared.as_ref().map_err(Clone::clone)
    }

    /// The archive this loader reads.
    pub fn archive(&self) -> &Arc<Archive> {
        &self.archive
    }

    /// The device this loader creates on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// This device's section of the archive, or why there is none.
    pub(super) fn section(&self) -> Result<DeviceRef<'_>, &DeviceMismatch> {
        self.device.as_ref().map(|s| s.attach(&self.archive))
    }

    /// This device's identity.
    pub fn identity(&self) -> &DeviceIdentity {
        &self.identity
    }

    /// Why the archive holds nothing for this device ("built for X, this device is Y: …"),
    /// or `None` when it has a section for it.
    pub fn mismatch(&self) -> Option<&DeviceMismatch> {
        self.device.as_ref().err()
    }

    /// Whether the archive holds driver binaries for this device and the device can take them
    /// (the section's pipeline-binary global key equals this device's).
    pub fn has_binaries(&self) -> bool {
        self.binaries_ok
    }

    /// Archive pipeline-cache blobs skipped because their header is not this device's
    /// (`(index among the device's blobs, why)`).
    pub fn skipped_caches(&self) -> &[(usize, String)] {
        &self.skipped_caches
    }

    /// How many loads so far found the archived pipeline key different from (or missing for)
    /// their create info and compiled instead of using the binaries.
    pub fn key_mismatches(&self) -> u64 {
        self.key_mismatches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What the loader has done so far: pipelines from binaries, cache hits, compiles,
    /// failures, not found, in flight, latency percentiles per source, bytes of shared
    /// binaries held. A handful of relaxed atomic loads: cheap enough to poll every frame.
    pub fn stats(&self) -> super::stats::LoaderStats {
        self.stats.snapshot(self.key_mismatches())
    }

    /// How many blobs of pipeline-cache data seeded the compile path's pipeline cache: the
    /// archive's for this device (all of them, merged), and [`LoaderOptions::initial_cache`].
    pub fn cache_blobs(&self) -> usize {
        self.seeded
    }

    /// The compile path's `VkPipelineCache` data (`vkGetPipelineCacheData`), e.g. to save it.
    pub fn cache_data(&self) -> Result<Vec<u8>, VulkanError> {
        self.cache.data()
    }

    /// Creates the pipeline labelled `label`.
    pub fn load_label(&self, label: &str) -> Result<Loaded, LoadError> {
        let p = self.archive.lookup_label(label)?;
        if p.is_none() {
            self.note_missed(None, Some(label));
        }
        let p = self.found(p, || format!("labelled '{label}'"))?;
        self.note_used(p.key(), Some(label));
        self.load_with(&p, &self.options.link_formats, false, false)
    }

    /// Creates the pipeline with `key`.
    pub fn load_key(&self, key: PipelineKey) -> Result<Loaded, LoadError> {
        let p = self.archive.get(key)?;
        if p.is_none() {
            self.note_missed(Some(key), None);
        }
        let p = self.found(p, || format!("with key {}", key.to_hex()))?;
        self.note_used(key, None);
        self.load_with(&p, &self.options.link_formats, false, false)
    }

    /// Records a use with [`LoaderOptions::recorder`], if any.
    pub(super) fn note_used(&self, key: PipelineKey, label: Option<&str>) {
        if let Some(r) = &self.options.recorder {
            r.used(key, label);
        }
    }

    /// Records a miss with [`LoaderOptions::recorder`], if any.
    pub(super) fn note_missed(&self, key: Option<PipelineKey>, label: Option<&str>) {
        if let Some(r) = &self.options.recorder {
            r.missed(key, label);
        }
    }

    /// `p`, or [`LoadError::NotFound`] (counted).
    fn found<'s>(
        &self,
        p: Option<PipelineRef<'s>>,
        what: impl FnOnce() -> String,
    ) -> Result<PipelineRef<'s>, LoadError> {
        p.ok_or_else(|| {
            self.stats.not_found();
            LoadError::NotFound(what())
        })
    }

    /// Creates `pipeline`: from this device's binaries where the archive has them and their
    /// pipeline key equals the key of the create info used here, else (if allowed) by
    /// compiling its SPIR-V with the loader's pipeline cache. A pipeline that needs a feature
    /// or limit the device lacks is refused before any driver call. A pipeline archived with a
    /// native Vulkan state (`GNV1`) is created from that state, with its stages'
    /// `VkSpecializationInfo`, by the same builder the harvest captured it with. Pipelines
    /// archived as libraries are linked with [`LoaderOptions::link_formats`].
    pub fn load(&self, p: &PipelineRef<'_>) -> Result<Loaded, LoadError> {
        self.note_used(p.key(), None);
        self.load_with(p, &self.options.link_formats, false, false)
    }

    /// [`load`](Self::load), linking a pipeline archived as a library with `link_formats`
    /// (colour attachment `i` takes `link_formats[i]`, or the last one given) instead of the
    /// loader's.
    pub fn load_formats(&self, p: &PipelineRef<'_>, link_formats: &[TextureFormat]) -> Result<Loaded, LoadError> {
        self.note_used(p.key(), None);
        self.load_with(p, link_formats, false, false)
    }

    /// [`load_formats`](Self::load_formats), but only if it costs no compile: from this
    /// device's binaries (their key checked), or — where the device has
    /// `pipelineCreationCacheControl` enabled — from the loader's pipeline cache when the
    /// driver can create it without compiling (`VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT`:
    /// a cache hit, e.g. from the after-update sidecar); else [`LoadError::WouldCompile`] and no
    /// pipeline is created. (A pipeline archived as a library is created from its binaries and
    /// fast-linked with a fragment-output part, which is created once per output state.)
    pub fn load_if_cheap(&self, p: &PipelineRef<'_>, link_formats: &[TextureFormat]) -> Result<Loaded, LoadError> {
        self.note_used(p.key(), None);
        self.load_with(p, link_formats, true, false)
    }

    /// Creates `p` (nothing recorded: the warm-up records at first use). With `whole`, a
    /// pipeline archived as a graphics pipeline library is created as one whole pipeline with
    /// `formats` for its colour attachments, compiled (its binaries are a library's) with the
    /// loader's pipeline cache: what the warm-up's optimized re-creation makes
    /// ([`Warmup::optimize_linked`](super::Warmup::optimize_linked)).
    pub(super) fn load_with(
        &self,
        p: &PipelineRef<'_>,
        formats: &[TextureFormat],
        cheap: bool,
        whole: bool,
    ) -> Result<Loaded, LoadError> {
        let start = Instant::now();
        let name = || self.name(p);
        let _validation_scope = super::validation::enter(&name); // messages of this pipeline's calls are its
        let _in_flight = self.stats.start();
        let made = self.create(p, formats, cheap, whole, start).map_err(|f| f.named(name));
        self.stats.finish(outcome(&made), start.elapsed());
        made
    }

    fn create(
        &self,
        p: &PipelineRef<'_>,
        formats: &[TextureFormat],
        cheap: bool,
        whole: bool,
        start: Instant,
    ) -> Result<Loaded, Fail> {
        let stages = p.stages()?;
        // Each stage's VkSpecializationInfo, decoded and checked before anything reaches the
        // driver (a bad one names the stage).
        let mut specializations = Vec::with_capacity(stages.len());
        for s in &stages {
            let bytes = s.specialization_bytes()?;
            specializations.push(super::build::specialization_of(bytes, s.stage, s.entry_point)?);
        }
        if let Some(native) = p.native_state()? {
            return self.create_native(p, &native, &stages, &specializations, cheap, start);
        }
        let archived_layout = p.layout()?.ok_or_else(|| "archived without a resource layout".to_string())?;
        let layout = self.layout(&archived_layout)?;
        let state = match p.kind() {
            PipelineKind::Render => Some(p.state()?.ok_or_else(|| "archived without its render state".to_string())?),
            PipelineKind::Compute => None,
            PipelineKind::RayTracing => {
                return Err("a ray-tracing pipeline without its native Vulkan state (only the native form has one)"
                    .to_string()
                    .into())
            }
        };
        super::feature_check::check_features(&self.gpu, &archived_layout, state.as_ref())?;
        // Open colour output: the whole variant for these formats, where the archive has one
        // that serves (`harvest --whole-variants`).
        if let Some(v) = state.as_ref().filter(|s| !whole && s.is_unspecialized()) {
            if let Some(v) = self.whole_variant(p, v, formats, cheap)? {
                let mut made = self.create(&v, formats, cheap, false, start)?;
                made.variant = true;
                return Ok(made);
            }
        }
        // Whole: no binary set serves (the archive's are a library's), none is a fallback.
        let (set, mut fallback_reason) = if whole { (None, None) } else { self.binary_set(p, true, cheap)? };

        // Modules always: the pipeline key is computed over the shader code.
        let modules: Vec<Arc<Module>> =
            stages.iter().map(|s| self.module(s.key, s.output(Target::Spirv)?, s)).collect::<Result<_, _>>()?;
        let stage_info = stage_inputs(&stages, &modules, &specializations, None)?;
        // Binaries made for this pipeline alone, destroyed when it exists (end of `create`).
        let mut _own = Vec::new();
        let mut take = |set: Option<crate::reader::BinarySetRef<'_>>,
                        key: &dyn Fn() -> Result<Vec<u8>, VulkanError>|
         -> Result<Option<Vec<vk::PipelineBinaryKHR>>, Fail> {
            self.take_binaries(set, key, &mut _own, &mut fallback_reason, cheap)
        };
        let (mut created, linked, made) = match &state {
            None => {
                let stage = stage_info.first().ok_or_else(|| "a compute pipeline without a stage".to_string())?;
                let made = take(set, &|| self.gpu.compute_key(stage, &layout))?;
                let handles = made.as_deref().unwrap_or_default();
                // SAFETY: `checked_binaries` made these handles from hash-checked bytes of this
                // device's own section (`binaries_ok`), for a set whose archived pipeline key
                // equals `compute_key` of exactly this create info.
                let binaries = unsafe { CheckedBinaries::new(handles) };
                let how = self.mode(binaries, made.is_none(), cheap);
                (self.gpu.create_compute(stage, &layout, how).map_err(would_compile)?, false, made)
            }
            Some(state) => {
                let library = match &set {
                    Some(s) => s.flags() & crate::device::BINARY_SET_LIBRARY != 0,
                    None => !whole && state.is_unspecialized() && self.gpu.libraries(),
                };
                let whole_formats: &[TextureFormat] = if library { &[] } else { formats };
                let input = graphics_input(&self.gpu, state, stage_info, &layout, library, whole_formats)?;
                let made = take(set, &|| self.gpu.graphics_key(&input))?;
                if library && made.is_none() && cheap {
                    return Err(Fail::of(
                        LoadErrorKind::WouldCompile,
                        "archived as a graphics pipeline library with no usable binaries here: its parts need a compile",
                    ));
                }
                let handles = made.as_deref().unwrap_or_default();
                // SAFETY: as for compute, with `graphics_key` of exactly `input`.
                let binaries = unsafe { CheckedBinaries::new(handles) };
                let how = self.mode(binaries, made.is_none(), cheap);
                let created = self.gpu.create_graphics(&input, how).map_err(would_compile)?;
                if library {
                    let lib = created.pipeline.ok_or_else(|| "the driver returned no library".to_string())?;
                    let (output, output_time) = self.fragment_output(state, &input, formats)?;
                    let mut linked = self.gpu.link(Arc::new(lib), output, &layout)?;
                    linked.driver_time += created.driver_time + output_time;
                    linked.feedback = created.feedback;
                    (linked, true, made)
                } else {
                    (created, false, made)
                }
            }
        };
        if let Some(pipeline) = created.pipeline.as_mut() {
            pipeline.layout = Some(layout);
        }
        Ok(finish_load(created, linked, made, fallback_reason, start)?)
    }

    /// A pipeline archived with its native Vulkan state: checked (structure, features,
    /// limits) before any driver call, its layout, render pass and immutable samplers from
    /// [`NativeObjects`], its stages with their specializations, then created from this
    /// device's binaries (key checked) or compiled, with the same builder the harvest used.
    fn create_native(
        &self,
        p: &PipelineRef<'_>,
        state: &NativePipeline,
        stages: &[crate::reader::StageRef<'_>],
        specializations: &[Option<Specialization>],
        cheap: bool,
        start: Instant,
    ) -> Result<Loaded, Fail> {
        let kinds: Vec<crate::types::ShaderStage> = stages.iter().map(|s| s.stage).collect();
        super::native::check_structure(state, &kinds)?;
        super::feature_check::check_native(&self.gpu, state, &kinds)?;
        let (set, mut fallback_reason) = self.binary_set(p, false, cheap)?;
        let layout = self.native_layout(&state.layout)?;
        let render_pass = match state.graphics.as_ref().and_then(|g| g.render_pass.as_ref()) {
            Some(rp) => Some(self.native.render_pass(&self.gpu, rp)?),
            None => None,
        };
        let modules: Vec<Arc<Module>> =
            stages.iter().map(|s| self.module(s.key, s.output(Target::Spirv)?, s)).collect::<Result<_, _>>()?;
        let input = NativeInput {
            stages: stage_inputs(stages, &modules, specializations, Some(state))?,
            state,
            layout: &layout,
            render_pass: render_pass.as_deref(),
        };
        let mut own = Vec::new();
        let made = self.take_binaries(set, &|| self.gpu.native_key(&input), &mut own, &mut fallback_reason, cheap)?;
        let handles = made.as_deref().unwrap_or_default();
        // SAFETY: `take_binaries` made these handles from hash-checked bytes of this device's
        // own section (`binaries_ok`), for a set whose archived pipeline key equals
        // `native_key` of exactly this create info.
        let binaries = unsafe { CheckedBinaries::new(handles) };
        if made.is_none() && cheap && state.flags & vk::PipelineCreateFlags::LIBRARY_KHR.bits() != 0 {
            return Err(Fail::of(LoadErrorKind::WouldCompile, "a pipeline library with no usable binaries here"));
        }
        let how = self.mode(binaries, made.is_none(), cheap);
        let mut created = self.gpu.create_native(&input, how).map_err(would_compile)?;
        drop(own);
        if let Some(pipeline) = created.pipeline.as_mut() {
            pipeline.layout = Some(layout.clone());
        }
        Ok(finish_load(created, false, made, fallback_reason, start)?)
    }

    /// This device's binary set for `p`, if it may be used, and why not where the archive has
    /// one that is not (a library set on a device without libraries; `portable` only). Errors
    /// with `require_binaries` (or `cheap`) when there is none, and with a device mismatch
    /// when compiling is not allowed.
    fn binary_set(
        &self,
        p: &PipelineRef<'_>,
        portable: bool,
        cheap: bool,
    ) -> Result<(Option<crate::reader::BinarySetRef<'_>>, Option<String>), Fail> {
        // Binaries: only from this device's own section (same identity and global key).
        let set = match self.section() {
            Ok(d) if self.options.use_binaries && self.binaries_ok => d.binaries(p)?,
            Ok(_) => None,
            Err(m) if !self.options.fallback_compile && !cheap => return Err(LoadError::Mismatch(m.clone()).into()),
            Err(_) => None,
        };
        let mut fallback_reason = None;
        // `--libraries compile`: binaries the caller chose not to use (not a missing set).
        let mut declined = false;
        let is_library =
            |s: &crate::reader::BinarySetRef<'_>| portable && s.flags() & crate::device::BINARY_SET_LIBRARY != 0;
        let set = match set.filter(|s| !s.is_empty()) {
            Some(s) if is_library(&s) && !self.options.library_binaries => {
                declined = true;
                None
            }
            Some(s)
                if is_library(&s) && !self.options.link_shared_library_binaries && self.section_has_dictionary()? =>
            {
                fallback_reason = Some(if self.carries_shared_binary(&s)? {
                    "archived as a graphics pipeline library whose binaries include one other pipelines share \
                     (NVIDIA's dictionary: linking such a library crashes NVIDIA 580): its library part compiled \
                     from SPIR-V (LoaderOptions::link_shared_library_binaries)"
                        .to_string()
                } else {
                    "archived as a graphics pipeline library on a device section that carries NVIDIA's dictionary: \
                     creating such libraries from binaries while other threads create pipelines crashes NVIDIA 580, \
                     so every library part of this section is compiled from SPIR-V \
                     (LoaderOptions::link_shared_library_binaries)"
                        .to_string()
                });
                None
            }
            Some(s)
                if !is_library(&s) && !self.options.whole_dictionary_binaries && self.carries_shared_binary(&s)? =>
            {
                fallback_reason = Some(DICTIONARY_SET_REFUSED.to_string());
                None
            }
            Some(s) if is_library(&s) && !self.gpu.libraries() => {
                fallback_reason = Some(
                    "archived as a graphics pipeline library, and this device has no graphics pipeline libraries: \
                     compiled whole with the link formats"
                        .to_string(),
                );
                None
            }
            other => other,
        };
        if set.is_none() && cheap && !self.cache_can_answer() {
            return Err(Fail::of(
                LoadErrorKind::WouldCompile,
                "no usable binaries on this device, and pipelineCreationCacheControl is not enabled to ask the \
                 pipeline cache without compiling",
            ));
        }
        if set.is_none() && fallback_reason.is_none() && !declined && self.options.require_binaries {
            return Err(Fail::of(
                LoadErrorKind::BinariesUnusable,
                match self.section() {
                    Ok(_) if !self.gpu.captures_binaries() => "this device has no VK_KHR_pipeline_binary",
                    _ => "the archive holds no binaries for this pipeline on this device",
                },
            ));
        }
        Ok((set, fallback_reason))
    }

    /// Whether a cheap load may ask the pipeline cache: the device has
    /// `pipelineCreationCacheControl` enabled, so `VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT`
    /// may be set.
    fn cache_can_answer(&self) -> bool {
        self.gpu.features().contains(crate::device::DeviceFeatures::PIPELINE_CREATION_CACHE_CONTROL)
    }

    /// How to create: from `binaries`; without them by compiling with the loader's cache, or,
    /// for a cheap load, from that cache only if it needs no compile.
    fn mode<'s>(&'s self, binaries: CheckedBinaries<'s>, compile: bool, cheap: bool) -> CreateMode<'s> {
        match (compile, cheap) {
            (true, true) => CreateMode::KeepIfCached { cache: &self.cache },
            (true, false) => CreateMode::Keep { binaries, cache: Some(&self.cache) },
            (false, _) => CreateMode::Keep { binaries, cache: None },
        }
    }

    /// The checked handles of `set` for the create info whose key `key` computes
    /// ([`checked_binaries`](Self::checked_binaries)); binaries made for this pipeline alone
    /// go to `own` (to drop once it exists). A set that cannot be used is a compile (its
    /// reason in `fallback_reason`) where falling back is allowed, else the error.
    fn take_binaries(
        &self,
        set: Option<crate::reader::BinarySetRef<'_>>,
        key: &dyn Fn() -> Result<Vec<u8>, VulkanError>,
        own: &mut Vec<Binaries>,
        fallback_reason: &mut Option<String>,
        cheap: bool,
    ) -> Result<Option<Vec<vk::PipelineBinaryKHR>>, Fail> {
        let Some(set) = set else { return Ok(None) };
        match self.checked_binaries(&set, key) {
            Ok((handles, mine)) => {
                *own = mine;
                Ok(Some(handles))
            }
            Err(reason) if cheap => Err(Fail::of(LoadErrorKind::WouldCompile, reason)),
            Err(reason) if self.options.fallback_compile => {
                *fallback_reason = Some(reason);
                Ok(None)
            }
            Err(reason) => Err(Fail::of(LoadErrorKind::BinariesUnusable, reason)),
        }
    }

    /// The handles of `set`'s binaries, only when the set's archived pipeline key equals
    /// `key()` (the key of the create info they will be used with); otherwise why not (which
    /// counts as a key mismatch). No binary reaches the driver before the keys agree.
    fn checked_binaries(
        &self,
        set: &crate::reader::BinarySetRef<'_>,
        key: &dyn Fn() -> Result<Vec<u8>, VulkanError>,
    ) -> Result<(Vec<vk::PipelineBinaryKHR>, Vec<Binaries>), String> {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let mismatch = || self.key_mismatches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let archived = set.pipeline_key();
        if archived.is_empty() {
            mismatch();
            return Err("the archive records no pipeline key for these binaries, so they cannot be checked \
                        against this create info"
                .into());
        }
        let now = key().map_err(|e| e.to_string())?;
        if now != archived {
            mismatch();
            return Err(format!(
                "pipeline key differs: archived {}, this create info {} (the create info or the device's \
                 enabled state differs from the harvest's)",
                hex(archived),
                hex(&now)
            ));
        }
        self.binary_handles(set)
    }

    /// The fragment-output library for `state`'s colour attachments (with the link formats)
    /// and `input`'s multisample and depth/stencil formats: one per distinct output state,
    /// created once and shared by every pipeline linked with it. Returns it and the driver
    /// time spent creating it here (zero when it existed).
    /// The whole variant of `p` (render state `state`) for `formats` that the archive holds and
    /// that should be created in place of linking `p`: one whose binaries this device takes,
    /// or — where `p` has no binaries here either, so both would compile — any. `None` sends
    /// `p` down the link path.
    fn whole_variant<'s>(
        &'s self,
        p: &PipelineRef<'_>,
        state: &crate::render_state::RenderState,
        formats: &[TextureFormat],
        cheap: bool,
    ) -> Result<Option<PipelineRef<'s>>, Fail> {
        let index = self
            .variants
            .get_or_init(|| super::variants::Variants::index(&self.archive).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| format!("cannot read the archive's labels: {e}"))?;
        if index.is_empty() {
            return Ok(None);
        }
        let Some(v) = index.find(&self.archive, p, state, formats)? else { return Ok(None) };
        if self.binary_set(&v, true, cheap)?.0.is_some() || self.binary_set(p, true, cheap)?.0.is_none() {
            Ok(Some(v))
        } else {
            Ok(None)
        }
    }

    fn fragment_output(
        &self,
        state: &crate::render_state::RenderState,
        input: &GraphicsInput<'_>,
        formats: &[TextureFormat],
    ) -> Result<(Arc<Pipeline>, Duration), String> {
        let output = color_output(&self.gpu, state, formats)?;
        let mut key = vec![
            u64::from(input.samples.bits()),
            u64::from(input.alpha_to_coverage),
            input.depth_format.as_raw() as u64,
            input.stencil_format.as_raw() as u64,
        ];
        for (f, a) in &output {
            key.extend([
                f.as_raw() as u64,
                u64::from(a.blend_enable),
                a.src_color_blend_factor.as_raw() as u64,
                a.dst_color_blend_factor.as_raw() as u64,
                a.color_blend_op.as_raw() as u64,
                a.src_alpha_blend_factor.as_raw() as u64,
                a.dst_alpha_blend_factor.as_raw() as u64,
                a.alpha_blend_op.as_raw() as u64,
                u64::from(a.color_write_mask.bits()),
            ]);
        }
        let time = std::cell::Cell::new(Duration::ZERO);
        let made = self.outputs.get_or_try(key, || {
            let (p, t) = self.gpu.fragment_output(input, &output).map_err(|e| e.to_string())?;
            time.set(t);
            Ok(p)
        })?;
        Ok((made, time.get()))
    }

    /// The handles of a set's binaries, in the set's (the driver's) order. Each distinct
    /// binary at least [`LoaderOptions::share_binaries_from`] bytes long — one archived blob
    /// under one key — is checked against its content hash and created once per loader, then
    /// kept until the loader is dropped (smaller ones are made for the pipeline alone): NVIDIA attaches one
    /// shared dictionary binary (about 700 KB) to most pipelines, and creating (and hashing)
    /// it once instead of once per pipeline is most of the warm path's cost. Missing binaries
    /// are created largest first (the dictionary before the binaries that refer to it). A
    /// damaged blob is never handed to the driver, and every pipeline using it is told so.
    pub(super) fn binary_handles(
        &self,
        set: &crate::reader::BinarySetRef<'_>,
    ) -> Result<(Vec<vk::PipelineBinaryKHR>, Vec<Binaries>), String> {
        let damaged = |e: ArchiveError| format!("damaged binary, not handed to the driver: {e}");
        let records: Vec<(usize, &[u8])> =
            (0..set.len()).map(|i| set.record(i)).collect::<Result<_, _>>().map_err(damaged)?;
        let mut order: Vec<usize> = (0..records.len()).collect();
        order.sort_by_cached_key(|&i| std::cmp::Reverse(self.archive.blob_len(records[i].0).unwrap_or(0)));
        let mut handles = vec![vk::PipelineBinaryKHR::default(); records.len()];
        let mut own = Vec::new();
        for i in order {
            let (blob, key) = records[i];
            if self.options.share_binaries_from > 0
                && self.archive.blob_len(blob).map_err(damaged)? < self.options.share_binaries_from
            {
                let (_, data) = self.archive.blob(blob).map_err(damaged)?;
                // SAFETY: `data` was just checked against its content hash, and the set comes
                // from the device section whose identity and global key equal this device's
                // (`binaries_ok`, checked by the caller).
                let b = unsafe { self.gpu.binaries_from_data(&[(key, data)]) }
                    .map_err(|e| format!("the driver refused the binaries: {e}"))?;
                handles[i] = b.handles()[0];
                own.push(b);
                continue;
            }
            let made = self.binaries.get_or_try((key.to_vec(), blob), || {
                let (_, data) = self.archive.blob(blob).map_err(damaged)?;
                self.stats.shared_binary(data.len());
                // SAFETY: as above: hash-checked bytes from this device's own section.
                unsafe { self.gpu.binaries_from_data(&[(key, data)]) }
                    .map_err(|e| format!("the driver refused the binaries: {e}"))
            })?;
            handles[i] = made.handles()[0];
        }
        Ok((handles, own))
    }

    fn name(&self, p: &PipelineRef<'_>) -> String {
        // Only on errors: a scan of the label index.
        let labels = self.archive.labels().unwrap_or_default();
        labels.iter().find(|(_, i)| *i == p.index()).map_or_else(|| p.key().to_hex(), |(l, _)| l.to_string())
    }

    fn module(
        &self,
        key: StageKey,
        spirv: Option<&[u8]>,
        s: &crate::reader::StageRef<'_>,
    ) -> Result<Arc<Module>, Fail> {
        let spirv = spirv.ok_or_else(|| {
            Fail::of(
                LoadErrorKind::MissingSpirv,
                format!("{} function '{}' has no SPIR-V in the archive to compile from", s.stage, s.entry_point),
            )
        })?;
        // The module is shared (a once-cell keeps the message only): a driver failure here is
        // `Driver` with the message, without the `VulkanError`.
        self.modules.get_or_try(key, || self.gpu.module(spirv).map_err(|e| e.to_string())).map_err(|message| {
            Fail::of(
                LoadErrorKind::Driver,
                format!("{} function '{}' (stage {}): {message}", s.stage, s.entry_point, key.to_hex()),
            )
        })
    }

    fn layout(&self, layout: &crate::layout::PipelineLayout) -> Result<Arc<DriverLayout>, Fail> {
        let desc = layout_desc(layout)?;
        if let Some(engine) = &self.options.layouts {
            return self
                .layouts
                .get_or_try(desc.clone(), || Ok(self.gpu.engine_layout(engine.0.layout(LayoutRequest::Script(&desc))?)))
                .map_err(|why| Fail::of(LoadErrorKind::Layout, format!("the engine's layout source: {why}")));
        }
        self.gpu.check_layout(&desc)?;
        Ok(self.layouts.get_or_try(desc.clone(), || self.gpu.layout(&desc).map_err(|e| e.to_string()))?)
    }

    /// The pipeline layout of a native pipeline's `layout`: the engine's, or granary's own.
    fn native_layout(&self, layout: &crate::native::NativeLayout) -> Result<Arc<DriverLayout>, Fail> {
        match &self.options.layouts {
            Some(engine) => self
                .native
                .engine_layout(layout, || Ok(self.gpu.engine_layout(engine.0.layout(LayoutRequest::Native(layout))?)))
                .map_err(|why| Fail::of(LoadErrorKind::Layout, format!("the engine's layout source: {why}"))),
            None => Ok(self.native.layout(&self.gpu, layout)?),
        }
    }
}

/// The stage inputs of `stages` (their modules and checked specializations; for a native
/// pipeline, each stage's flags and required subgroup size from its state).
fn stage_inputs<'m>(
    stages: &[crate::reader::StageRef<'_>],
    modules: &'m [Arc<Module>],
    specializations: &'m [Option<Specialization>],
    native: Option<&NativePipeline>,
) -> Result<Vec<StageInput<'m>>, String> {
    let mut out = Vec::with_capacity(stages.len());
    for (i, (s, m)) in stages.iter().zip(modules).enumerate() {
        let own = native.and_then(|n| n.stages.get(i));
        out.push(StageInput {
            module: Some(&**m),
            stage: stage_flag(s.stage),
            entry: entry_name(s.entry_point)?,
            specialization: specializations.get(i).and_then(Option::as_ref),
            flags: own.map_or(0, |o| o.flags),
            required_subgroup_size: own.and_then(|o| o.required_subgroup_size),
        });
    }
    Ok(out)
}

/// How `made` counts in the loader's statistics.
pub(super) fn outcome(made: &Result<Loaded, LoadError>) -> Outcome {
    match made {
        Ok(l) => match l.source {
            Source::Binaries => Outcome::Binaries,
            Source::CacheHit => Outcome::CacheHit,
            Source::Compiled => Outcome::Compiled,
        },
        Err(LoadError::NotFound(_)) => Outcome::NotFound,
        Err(LoadError::WouldCompile(_)) => Outcome::Declined,
        Err(_) => Outcome::Failed,
    }
}

/// The [`Loaded`] of a created pipeline: made from binaries (`made`), a cache hit, or a compile.
pub(super) fn finish_load(
    created: CreateOutcome,
    linked: bool,
    made: Option<Vec<vk::PipelineBinaryKHR>>,
    fallback_reason: Option<String>,
    start: Instant,
) -> Result<Loaded, String> {
    let pipeline = created.pipeline.ok_or_else(|| "the driver returned no pipeline".to_string())?;
    let source = if made.is_some() {
        Source::Binaries
    } else if created.feedback & FEEDBACK_VALID != 0 && created.feedback & FEEDBACK_CACHE_HIT != 0 {
        Source::CacheHit
    } else {
        Source::Compiled
    };
    Ok(Loaded {
        pipeline,
        source,
        linked,
        fallback_reason,
        binaries: made.map_or(0, |h| h.len()),
        driver_time: created.driver_time,
        total_time: start.elapsed(),
        feedback: created.feedback,
        generation: 0,
        variant: false,
    })
}
