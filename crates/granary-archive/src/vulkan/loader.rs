//! [`PipelineLoader`]: create an archive's pipelines on a device at run time.

use super::build::{color_output, entry_name, graphics_input};
use super::raw::{Binaries, Cache, Gpu, How, Layout, Module, Pipeline};
use super::state::{layout_desc, stage_flag, LayoutDesc};
use super::VulkanError;
use crate::state::TextureFormat;
use crate::DeviceMismatch;
use crate::{
    Archive, ArchiveError, DeviceIdentity, DeviceRef, PipelineKey, PipelineKind, PipelineRef, StageKey, Target,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
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
    /// Create shader modules also for pipelines made from binaries. The specification says
    /// modules are ignored then, so the default (`false`) skips the work; this is a
    /// compatibility switch for a driver that reads them anyway.
    pub modules_with_binaries: bool,
    /// Seed the compile path's `VkPipelineCache` with these bytes instead (e.g. a file the
    /// application saved with `vkGetPipelineCacheData`).
    pub initial_cache: Option<Vec<u8>>,
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
            modules_with_binaries: false,
            use_archive_cache: true,
            initial_cache: None,
        }
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
    /// damaged binary, one the driver refused); `None` when they were used or absent.
    pub fallback_reason: Option<String>,
    /// Binaries handed to the driver.
    pub binaries: usize,
    /// Time inside the driver's pipeline-creating calls (binaries, pipelines, link).
    pub driver_time: Duration,
    /// Time of the whole call: archive lookup and checks, object creation, driver.
    pub total_time: Duration,
    /// `VkPipelineCreationFeedback::flags` of the pipeline (of the library, when linked).
    pub feedback: u32,
}

/// Why a pipeline could not be created.
#[derive(Debug)]
pub enum LoadError {
    /// The archive is damaged where this pipeline lives.
    Archive(ArchiveError),
    /// No pipeline has this label or key.
    NotFound(String),
    /// The archive has no binaries for this device and compiling was not allowed.
    Mismatch(DeviceMismatch),
    /// The pipeline cannot be created on this device (unsupported state, no SPIR-V, a binary
    /// that is damaged or refused with fallback off), or the driver failed.
    Pipeline {
        /// The pipeline's label (or key).
        pipeline: String,
        /// What went wrong.
        message: String,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Archive(e) => write!(f, "{e}"),
            LoadError::NotFound(what) => write!(f, "no pipeline {what} in the archive"),
            LoadError::Mismatch(m) => write!(f, "{m}"),
            LoadError::Pipeline { pipeline, message } => write!(f, "pipeline '{pipeline}': {message}"),
        }
    }
}

impl std::error::Error for LoadError {}

impl From<ArchiveError> for LoadError {
    fn from(e: ArchiveError) -> Self {
        LoadError::Archive(e)
    }
}

type Cell<T> = Arc<OnceLock<Result<Arc<T>, String>>>;
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
pub struct PipelineLoader<'a> {
    archive: &'a Archive,
    gpu: Arc<Gpu>,
    identity: DeviceIdentity,
    device: Result<DeviceRef<'a>, DeviceMismatch>,
    /// The compile path's pipeline cache.
    cache: Cache,
    /// How many blobs of pipeline-cache data seeded `cache`.
    seeded: usize,
    options: LoaderOptions,
    modules: Mutex<HashMap<StageKey, Cell<Module>>>,
    layouts: Mutex<HashMap<LayoutDesc, Cell<Layout>>>,
    /// Distinct binaries by (key, blob index).
    binaries: Mutex<HashMap<BinaryId, Cell<Binaries>>>,
}

impl<'a> PipelineLoader<'a> {
    /// A loader for `archive` on `gpu`. Fails only if the archive's device table is damaged or
    /// the pipeline cache cannot be created.
    pub fn new(archive: &'a Archive, gpu: Arc<Gpu>, options: LoaderOptions) -> Result<Self, LoadError> {
        let identity = super::identity_of(&gpu.info, gpu.global_key());
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
        // Every blob the archive holds for this device (one per shard or `--isolate` worker
        // that wrote one), merged into one cache.
        let initial: Vec<&[u8]> = match (&options.initial_cache, &device) {
            (Some(bytes), _) => vec![bytes.as_slice()],
            (None, Ok(d)) if options.use_archive_cache => d.caches()?,
            _ => Vec::new(),
        };
        let initial: Vec<&[u8]> = initial.into_iter().filter(|b| !b.is_empty()).collect();
        let cache = gpu
            .pipeline_cache_merged(&initial)
            .map_err(|e| LoadError::Pipeline { pipeline: "(pipeline cache)".into(), message: e.to_string() })?;
        let seeded = initial.len();
        Ok(PipelineLoader {
            archive,
            gpu,
            identity,
            device,
            cache,
            seeded,
            options,
            modules: Mutex::default(),
            layouts: Mutex::default(),
            binaries: Mutex::default(),
        })
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

    /// Whether the archive holds driver binaries for this device and the device can take them.
    pub fn has_binaries(&self) -> bool {
        self.device.as_ref().is_ok_and(|d| d.has_pipeline_binaries()) && self.gpu.captures_binaries()
    }

    /// How many blobs of pipeline-cache data seeded the compile path's pipeline cache: the
    /// archive's for this device (all of them, merged), or [`LoaderOptions::initial_cache`].
    pub fn cache_blobs(&self) -> usize {
        self.seeded
    }

    /// The compile path's `VkPipelineCache` data (`vkGetPipelineCacheData`), e.g. to save it.
    pub fn cache_data(&self) -> Result<Vec<u8>, VulkanError> {
        self.cache.data()
    }

    /// Creates the pipeline labelled `label`.
    pub fn load_label(&self, label: &str) -> Result<Loaded, LoadError> {
        let p = self.archive.lookup_label(label)?.ok_or_else(|| LoadError::NotFound(format!("labelled '{label}'")))?;
        self.load(&p)
    }

    /// Creates the pipeline with `key`.
    pub fn load_key(&self, key: PipelineKey) -> Result<Loaded, LoadError> {
        let p = self.archive.get(key)?.ok_or_else(|| LoadError::NotFound(format!("with key {}", key.to_hex())))?;
        self.load(&p)
    }

    /// Creates `pipeline`: from this device's binaries where the archive has them, else (if
    /// allowed) by compiling its SPIR-V with the loader's pipeline cache.
    pub fn load(&self, p: &PipelineRef<'_>) -> Result<Loaded, LoadError> {
        let start = Instant::now();
        let name = || self.name(p);
        let _validation_scope = super::validation::enter(&name); // messages of this pipeline's calls are its
        let fail = |message: String| LoadError::Pipeline { pipeline: name(), message };
        let layout = p.layout()?.ok_or_else(|| fail("archived without a resource layout".into()))?;
        let layout = self.layout(&layout).map_err(fail)?;
        let stages = p.stages()?;
        let state = match p.kind() {
            PipelineKind::Render => Some(p.state()?.ok_or_else(|| fail("archived without its render state".into()))?),
            PipelineKind::Compute => None,
        };

        // Binaries: only from this device's section, only after their hashes check out.
        let mut fallback_reason = None;
        let set = match &self.device {
            Ok(d) if self.options.use_binaries && self.gpu.captures_binaries() => d.binaries(p)?,
            Ok(_) => None,
            Err(m) if !self.options.fallback_compile => return Err(LoadError::Mismatch(m.clone())),
            Err(_) => None,
        };
        // `(handles in the driver's order, library)`; each distinct binary is created once per
        // loader and shared (see `binary_handles`).
        let mut made: Option<(Vec<vk::PipelineBinaryKHR>, bool)> = None;
        // Binaries made for this pipeline alone, destroyed when it exists (end of `load`).
        let mut _own = Vec::new();
        let usable = |s: &crate::BinarySetRef<'_>| {
            !s.is_empty() && (self.options.library_binaries || s.flags() & crate::BINARY_SET_LIBRARY == 0)
        };
        if let Some(set) = set.filter(usable) {
            match self.binary_handles(&set) {
                Ok((h, own)) => {
                    made = Some((h, set.flags() & crate::BINARY_SET_LIBRARY != 0));
                    _own = own;
                }
                Err(reason) if self.options.fallback_compile => fallback_reason = Some(reason),
                Err(reason) => return Err(fail(reason)),
            }
        }
        if made.is_none()
            && fallback_reason.is_none()
            && self.options.require_binaries
            && !set.is_some_and(|s| !usable(&s) && !s.is_empty())
        {
            return Err(fail(match &self.device {
                Ok(_) if !self.gpu.captures_binaries() => "this device has no VK_KHR_pipeline_binary".into(),
                _ => "the archive holds no binaries for this pipeline on this device".into(),
            }));
        }
        let handles = made.as_ref().map_or(&[][..], |(h, _)| h.as_slice());
        let cache = if made.is_some() { None } else { Some(&self.cache) };
        let how = How::Keep { binaries: handles, cache };

        // Modules only for a compile: the specification ignores them with binaries.
        let modules: Vec<Option<Arc<Module>>> = if made.is_some() && !self.options.modules_with_binaries {
            vec![None; stages.len()]
        } else {
            stages
                .iter()
                .map(|s| self.module(s.key, s.output(Target::Spirv)?, s).map(Some))
                .collect::<Result<_, _>>()?
        };
        let mut stage_info = Vec::with_capacity(stages.len());
        for (s, m) in stages.iter().zip(&modules) {
            stage_info.push((m.as_deref(), stage_flag(s.stage), entry_name(s.entry_point).map_err(fail)?));
        }
        let (created, linked) = match &state {
            None => {
                let (m, entry) = (stage_info[0].0, &stage_info[0].2);
                (self.gpu.create_compute(m, entry, &layout, how).map_err(|e| fail(e.to_string()))?, false)
            }
            Some(state) => {
                let library = match &made {
                    Some((_, library)) => *library,
                    None => state.is_unspecialized() && self.gpu.libraries(),
                };
                let input = if library {
                    graphics_input(&self.gpu, state, stage_info, &layout, true, &[])
                } else {
                    graphics_input(&self.gpu, state, stage_info, &layout, false, &self.options.link_formats)
                }
                .map_err(fail)?;
                let created = self.gpu.create_graphics(&input, how).map_err(|e| fail(e.to_string()))?;
                if library {
                    let lib = created.pipeline.ok_or_else(|| fail("the driver returned no library".into()))?;
                    let output = color_output(&self.gpu, state, &self.options.link_formats).map_err(fail)?;
                    let mut linked = self.gpu.link(&lib, &input, &output).map_err(|e| fail(e.to_string()))?;
                    linked.driver_time += created.driver_time;
                    linked.feedback = created.feedback;
                    (linked, true)
                } else {
                    (created, false)
                }
            }
        };
        let pipeline = created.pipeline.ok_or_else(|| fail("the driver returned no pipeline".into()))?;
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
            binaries: handles.len(),
            driver_time: created.driver_time,
            total_time: start.elapsed(),
            feedback: created.feedback,
        })
    }

    /// The handles of a set's binaries, in the set's (the driver's) order. Each distinct
    /// binary at least [`LoaderOptions::share_binaries_from`] bytes long — one archived blob
    /// under one key — is checked against its content hash and created once per loader, then
    /// kept until the loader is dropped (smaller ones are made for the pipeline alone): NVIDIA attaches one
    /// shared dictionary binary (about 700 KB) to most pipelines, and creating (and hashing)
    /// it once instead of once per pipeline is most of the warm path's cost. Missing binaries
    /// are created largest first (the dictionary before the binaries that refer to it). A
    /// damaged blob is never handed to the driver, and every pipeline using it is told so.
    fn binary_handles(
        &self,
        set: &crate::BinarySetRef<'_>,
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
                let b = self
                    .gpu
                    .binaries_from_data(&[(key, data)])
                    .map_err(|e| format!("the driver refused the binaries: {e}"))?;
                handles[i] = b.handles()[0];
                own.push(b);
                continue;
            }
            let cell = {
                let mut map = self.binaries.lock().unwrap_or_else(|p| p.into_inner());
                map.entry((key.to_vec(), blob)).or_default().clone()
            };
            let made = cell
                .get_or_init(|| {
                    let (_, data) = self.archive.blob(blob).map_err(damaged)?;
                    self.gpu
                        .binaries_from_data(&[(key, data)])
                        .map(Arc::new)
                        .map_err(|e| format!("the driver refused the binaries: {e}"))
                })
                .clone()?;
            handles[i] = made.handles()[0];
        }
        Ok((handles, own))
    }

    fn name(&self, p: &PipelineRef<'_>) -> String {
        // Only on errors: a scan of the label index.
        let labels = self.archive.labels().unwrap_or_default();
        labels.iter().find(|(_, i)| *i == p.index()).map_or_else(|| p.key().to_hex(), |(l, _)| l.to_string())
    }

    fn module(&self, key: StageKey, spirv: Option<&[u8]>, s: &crate::StageRef<'_>) -> Result<Arc<Module>, LoadError> {
        let cell = {
            let mut map = self.modules.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(key).or_default().clone()
        };
        cell.get_or_init(|| {
            let spirv = spirv.ok_or_else(|| {
                format!("{} function '{}' has no SPIR-V in the archive to compile from", s.stage, s.entry_point)
            })?;
            self.gpu.module(spirv).map(Arc::new).map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|message| LoadError::Pipeline { pipeline: format!("stage {}", key.to_hex()), message })
    }

    fn layout(&self, layout: &crate::PipelineLayout) -> Result<Arc<Layout>, String> {
        let desc = layout_desc(layout)?;
        if desc.sets.len() as u32 > self.gpu.info.max_bound_descriptor_sets {
            return Err(format!(
                "the layout uses {} descriptor sets; this device binds at most {}",
                desc.sets.len(),
                self.gpu.info.max_bound_descriptor_sets
            ));
        }
        let cell = {
            let mut map = self.layouts.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(desc.clone()).or_default().clone()
        };
        cell.get_or_init(|| self.gpu.layout(&desc).map(Arc::new).map_err(|e| e.to_string())).clone()
    }
}
