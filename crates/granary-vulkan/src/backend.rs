//! The Vulkan backend: creates every pipeline on a real driver and captures its binaries.
//!
//! Invariants:
//! - One `VkShaderModule` per unique stage function (keyed by its stage key), created once and
//!   shared by every pipeline that uses it; one pipeline layout per unique layout.
//! - A pipeline whose colour attachments are all specialized is created whole; one with an
//!   unspecialized colour format, blend or write mask is created as a graphics pipeline
//!   library of its vertex-input, pre-rasterization and fragment-shader parts (the
//!   fragment-output part is linked at run time with the real formats). Without graphics
//!   pipeline libraries such a pipeline fails with a message that says so.
//! - A native Vulkan pipeline (`PipelineDescriptor::Native`) is created from its own state
//!   (`granary_archive::vulkan::NativeInput`: every stage, every structure and chained
//!   extension structure, its render pass, layout and immutable samplers, shared per device by
//!   content), its stage modules the application's SPIR-V unchanged, each with its
//!   `VkSpecializationInfo` (portable pipelines pass theirs too). The shared-capture key covers
//!   the native state's bytes and every stage's specialization.
//! - Whatever the device cannot do (a format, a sample count, a binding kind, a feature or
//!   extension a native state needs) is that pipeline's error, found before any driver call.

use granary::backend::BackendReport;
use granary::descriptor::{PipelineDescriptor, PipelineLayout, ShaderStage, StageKey, Target};
use granary::frontend::StageFunction;
use granary_archive::native::{NativePipeline, Specialization};
use granary_archive::vulkan::validation::{self, DriverOptions, ValidationLog};
use granary_archive::vulkan::Shared;
use granary_archive::vulkan::{
    check_features, check_native, check_structure, entry_name, graphics_input, layout_desc, select_device,
    specialization_of, stage_flag, CreateMode, Driver, DriverLayout, Gpu, LayoutDesc, Module, NativeInput,
    NativeObjects, OpenOptions, StageInput, VulkanError,
};
use granary_archive::{BinarySet, Blob, DeviceBinaries, DeviceBinary, DeviceCache, BINARY_SET_LIBRARY};
use granary_archive::{DeviceIdentity, RenderState};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// How to open the backend's device.
#[derive(Clone, Debug, Default)]
pub struct VulkanOptions {
    /// `None`: device 0; a number: that index; text: the first device whose name contains it.
    pub device: Option<String>,
    /// Keep `VkPipelineCache` data even where `VK_KHR_pipeline_binary` exists.
    pub no_pipeline_binaries: bool,
    /// Do not use graphics pipeline libraries even where they exist (pipelines with
    /// unspecialized colour attachments then fail).
    pub no_libraries: bool,
    /// Create each distinct driver-level pipeline once: pipelines whose stages have the same
    /// SPIR-V and entry points and whose state and layout are equal (granary keys them apart,
    /// e.g. by specialization constants that change no code) share one capture. The CLI's
    /// harvest turns this on; off by default, so that a backend shared by several runs (the
    /// race modes) creates every pipeline each time.
    pub share_identical: bool,
    /// Leave the driver's internal cache on while capturing binaries (granary switches it off
    /// by default where the driver allows, so each capture is a real compile; on NVIDIA the
    /// internal cache also shares work between pipelines, see docs/BENCHMARKS.md).
    pub driver_internal_cache: bool,
    /// Reuse the bytes of a binary whose key and size were fetched before on the device
    /// instead of fetching them (`OpenOptions::reuse_binaries_by_key`: not exact on NVIDIA).
    pub reuse_binaries_by_key: bool,
    /// The capture experiment of `OpenOptions::capture_from_internal_cache`: compile with one
    /// shared pipeline cache, then take each pipeline's binaries from the driver's internal
    /// cache by create info (docs/BENCHMARKS.md).
    pub capture_from_internal_cache: bool,
    /// Run under the Khronos validation layer: its WARNING and ERROR messages are collected,
    /// each with the pipeline whose creation it came from, into [`VulkanBackend::validation`]
    /// (`open` fails, naming the package, where the layer is not installed).
    pub validate: bool,
}

/// What capturing one pipeline produced.
#[derive(Clone, Debug)]
pub struct PipelineCapture {
    /// The pipeline was created as a library (vertex input + pre-rasterization + fragment
    /// shader) whose fragment-output part is linked at run time.
    pub library: bool,
    /// `(key, data)` per binary, in the driver's order; empty where only cache data is kept.
    pub binaries: Vec<(Vec<u8>, Arc<Blob>)>,
    /// `vkGetPipelineKeyKHR` of the create info the binaries were captured with (empty where
    /// only cache data is kept): a loader uses them only for a create info with this key.
    pub pipeline_key: Vec<u8>,
}

/// What decides a driver pipeline's create info: each stage's SPIR-V (content hash), stage,
/// entry point and specialization (its encoded bytes), the encoded render state or native
/// state, the Vulkan layout (portable pipelines; a native state holds its own) and whether it
/// is a library.
/// One stage of a [`DriverKey`]: SPIR-V content hash, stage, entry point, specialization bytes.
type DriverStage = (u128, ShaderStage, String, Option<Vec<u8>>);

#[derive(Clone, PartialEq, Eq, Hash)]
struct DriverKey {
    stages: Vec<DriverStage>,
    state: Option<Vec<u8>>,
    layout: Option<LayoutDesc>,
    library: bool,
}

/// The Vulkan backend.
///
/// Thread safety: `Send + Sync`. `compile` may run from any number of threads at once, also
/// while `cache_data` reads the pipeline cache. Shader modules and layouts are created once
/// (other callers wait on the once-cell) and freed only when the backend and every compile
/// using them are done (`Arc`). See `granary_archive::vulkan` for the Vulkan synchronization rules and
/// how each is kept.
pub struct VulkanBackend {
    gpu: Arc<Gpu>,
    validation: Option<Arc<ValidationLog>>,
    identity: Arc<DeviceIdentity>,
    modules: Shared<StageKey, Module>,
    layouts: Shared<LayoutDesc, DriverLayout>,
    /// Native pipelines' layouts, render passes and immutable samplers, by content.
    native: NativeObjects,
    /// Captured binary bytes by content hash (see `intern`).
    blobs: Mutex<HashMap<u128, Arc<Blob>>>,
    /// With `share_identical`: one capture per distinct driver-level pipeline.
    /// (One driver pipeline's capture, made once and handed to every pipeline that has its
    /// create info; a failed capture is not kept, so the next identical pipeline tries again.)
    shared_captures: Option<Shared<DriverKey, PipelineCapture>>,
    shared: AtomicU64,
    pipelines: AtomicU64,
    libraries: AtomicU64,
    module_count: AtomicU64,
    driver_nanos: AtomicU64,
    binaries: AtomicU64,
    binary_bytes: AtomicU64,
    cache_hits: AtomicU64,
}

impl VulkanBackend {
    /// Loads Vulkan and opens the selected device.
    pub fn open(options: &VulkanOptions) -> Result<VulkanBackend, VulkanError> {
        Self::open_with(None, options)
    }

    /// [`VulkanBackend::open`] on `loaded`, an instance the caller already made without
    /// validation (its own look at the devices: the driver's start-up is about 0.3 s on
    /// NVIDIA), where `options.validate` is off; with validation, or `None`, the driver is
    /// loaded here.
    pub fn open_with(loaded: Option<Arc<Driver>>, options: &VulkanOptions) -> Result<VulkanBackend, VulkanError> {
        let driver = match loaded.filter(|d| !options.validate && d.validation().is_none()) {
            Some(d) => d,
            None => Driver::load_with(DriverOptions { validation: options.validate })?,
        };
        let validation = driver.validation().cloned();
        let info = select_device(driver.physical_devices()?, options.device.as_deref())?;
        // `Gpu::open` refuses a device without Vulkan 1.3 dynamic rendering, saying so.
        let gpu = Gpu::open(
            driver,
            info,
            OpenOptions {
                pipeline_binaries: !options.no_pipeline_binaries,
                libraries: !options.no_libraries,
                internal_cache: options.driver_internal_cache,
                reuse_binaries_by_key: options.reuse_binaries_by_key,
                capture_from_internal_cache: options.capture_from_internal_cache,
                ..OpenOptions::default()
            },
        )?;
        let identity = Arc::new(gpu.identity());
        Ok(VulkanBackend {
            gpu,
            validation,
            identity,
            modules: Shared::default(),
            layouts: Shared::default(),
            native: NativeObjects::default(),
            blobs: Mutex::default(),
            shared_captures: options.share_identical.then(Shared::default),
            shared: AtomicU64::new(0),
            pipelines: AtomicU64::new(0),
            libraries: AtomicU64::new(0),
            module_count: AtomicU64::new(0),
            driver_nanos: AtomicU64::new(0),
            binaries: AtomicU64::new(0),
            binary_bytes: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
        })
    }

    /// The device the backend creates pipelines on, for calls of the caller's own beside the
    /// harvest (a test building a create info by hand and asking the driver for its
    /// `vkGetPipelineKeyKHR`; [`Gpu::raw_device`] says the rules).
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// The validation layer's messages (with [`VulkanOptions::validate`]), each attributed to
    /// the pipeline whose [`Backend::compile`](granary::backend::Backend::compile) made it; readable from any
    /// thread while pipelines are created.
    pub fn validation(&self) -> Option<&Arc<ValidationLog>> {
        self.validation.as_ref()
    }

    /// The device identity the captured binaries are valid for.
    pub fn identity(&self) -> &Arc<DeviceIdentity> {
        &self.identity
    }

    /// Whether binaries are captured with `VK_KHR_pipeline_binary` (else cache data is kept).
    pub fn captures_binaries(&self) -> bool {
        self.gpu.captures_binaries()
    }

    /// Whether graphics pipeline libraries are used for unspecialized colour attachments.
    pub fn uses_libraries(&self) -> bool {
        self.gpu.libraries()
    }

    /// The device's `VkPipelineCache` data (empty when binaries are captured instead).
    pub fn cache_data(&self) -> Result<Vec<u8>, VulkanError> {
        self.gpu.cache_data()
    }

    /// Bytes of distinct captured binary data held in memory (each distinct binary once).
    pub fn interned_bytes(&self) -> u64 {
        self.blobs.lock().unwrap_or_else(|p| p.into_inner()).values().map(|b| b.bytes().len() as u64).sum()
    }

    /// The one in-memory copy of a binary's bytes: NVIDIA returns the same dictionary binary
    /// (hundreds of KB) with every pipeline after its first few hundred compiles; without
    /// interning a 33,000-pipeline harvest held 27 GB of copies (measured, BENCHMARKS.md).
    fn intern(&self, data: &[u8]) -> Arc<Blob> {
        let hash = granary::descriptor::key::content_hash(data).0;
        let mut map = self.blobs.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(hash).or_insert_with(|| Blob::new(data.to_vec())).clone()
    }

    fn module(&self, f: &StageFunction) -> Result<Arc<Module>, String> {
        self.modules.get_or_try(f.key, || {
            let spirv = f.outputs.get(Target::Spirv).ok_or_else(|| {
                format!(
                    "{} function '{}' has no SPIR-V output; the Vulkan backend needs the spirv target",
                    f.stage, f.entry_point
                )
            })?;
            let m = self.gpu.module(spirv.bytes()).map_err(|e| e.to_string())?;
            self.module_count.fetch_add(1, Relaxed);
            Ok(m)
        })
    }

    fn layout(&self, desc: &LayoutDesc) -> Result<Arc<DriverLayout>, String> {
        self.gpu.check_layout(desc)?;
        self.layouts.get_or_try(desc.clone(), || self.gpu.layout(desc).map_err(|e| e.to_string()))
    }

    /// Creates one pipeline on the device, captures it and destroys it. `functions` are the
    /// pipeline's stage functions in stage order; `layout` its resource layout (a native
    /// pipeline's own state holds the layout it is created with). With `share_identical`, a
    /// pipeline whose driver-level create info equals one already captured gets that capture
    /// (counted as shared) instead of a second compile.
    pub fn create_pipeline(
        &self,
        desc: &PipelineDescriptor,
        functions: &[Arc<StageFunction>],
        layout: &PipelineLayout,
    ) -> Result<PipelineCapture, String> {
        // Each stage's specialization, decoded and checked (a bad one names the stage).
        let specializations = functions
            .iter()
            .map(|f| specialization_of(f.specialization.as_deref().map(|b| b.bytes()), f.stage, &f.entry_point))
            .collect::<Result<Vec<_>, _>>()?;
        // What the pipeline needs of the device's enabled features, before any driver call;
        // and what decides its create info.
        let (vk_layout, render_state, native) = match desc {
            PipelineDescriptor::Render(r) => (Some(layout_desc(layout)?), Some(&r.state), None),
            PipelineDescriptor::Compute(_) => (Some(layout_desc(layout)?), None, None),
            PipelineDescriptor::Native(n) => (None, None, Some(&*n.state)),
        };
        match native {
            Some(state) => {
                let kinds: Vec<ShaderStage> = functions.iter().map(|f| f.stage).collect();
                check_structure(state, &kinds)?;
                check_native(&self.gpu, state, &kinds)?;
            }
            None => check_features(&self.gpu, layout, render_state)?,
        }
        let form = Form { vk_layout: vk_layout.as_ref(), render_state, native };
        let Some(map) = &self.shared_captures else {
            return self.create_unshared(desc, functions, &specializations, form);
        };
        let spirv: Option<Vec<DriverStage>> = functions
            .iter()
            .map(|f| {
                f.outputs.get(Target::Spirv).map(|b| {
                    (b.hash().0, f.stage, f.entry_point.clone(), f.specialization.as_ref().map(|s| s.bytes().to_vec()))
                })
            })
            .collect();
        let Some(stages) = spirv else {
            // A stage without SPIR-V: the unshared path says which.
            return self.create_unshared(desc, functions, &specializations, form);
        };
        let state = match native {
            Some(n) => Some(n.encode()),
            None => render_state.map(|r| r.encode()).transpose().map_err(|e| e.message)?,
        };
        let key = DriverKey { stages, state, layout: vk_layout.clone(), library: desc.needs_libraries() };
        let mut created_here = false;
        let result = map.get_or_try(key, || {
            created_here = true;
            self.create_unshared(desc, functions, &specializations, form)
        });
        if !created_here && result.is_ok() {
            self.shared.fetch_add(1, Relaxed);
        }
        result.map(|c| (*c).clone())
    }

    fn create_unshared(
        &self,
        desc: &PipelineDescriptor,
        functions: &[Arc<StageFunction>],
        specializations: &[Option<Specialization>],
        form: Form<'_>,
    ) -> Result<PipelineCapture, String> {
        let modules = functions.iter().map(|f| self.module(f)).collect::<Result<Vec<_>, _>>()?;
        let mut stages = Vec::with_capacity(functions.len());
        for (i, (f, m)) in functions.iter().zip(&modules).enumerate() {
            let own = form.native.and_then(|n| n.stages.get(i));
            stages.push(StageInput {
                module: Some(&**m),
                stage: stage_flag(f.stage),
                entry: entry_name(&f.entry_point)?,
                specialization: specializations.get(i).and_then(Option::as_ref),
                flags: own.map_or(0, |o| o.flags),
                required_subgroup_size: own.and_then(|o| o.required_subgroup_size),
            });
        }
        let intern = |b: &[u8]| self.intern(b);
        let (created, library) = match (form.native, form.vk_layout, form.render_state) {
            (Some(state), _, _) => {
                let layout = self.native.layout(&self.gpu, &state.layout)?;
                let render_pass = match state.graphics.as_ref().and_then(|g| g.render_pass.as_ref()) {
                    Some(rp) => Some(self.native.render_pass(&self.gpu, rp)?),
                    None => None,
                };
                let input = NativeInput { stages, state, layout: &layout, render_pass: render_pass.as_deref() };
                (self.gpu.create_native(&input, CreateMode::Capture(&intern)).map_err(|e| e.to_string())?, false)
            }
            (None, Some(vk_layout), None) => {
                let pipeline_layout = self.layout(vk_layout)?;
                let stage = stages.first().ok_or("a compute pipeline without a stage")?;
                let created = self.gpu.create_compute(stage, &pipeline_layout, CreateMode::Capture(&intern));
                (created.map_err(|e| e.to_string())?, false)
            }
            (None, Some(vk_layout), Some(r)) => {
                let pipeline_layout = self.layout(vk_layout)?;
                debug_assert!(functions.first().is_some_and(|f| f.stage == ShaderStage::Vertex));
                let library = desc.needs_libraries();
                let input = graphics_input(&self.gpu, r, stages, &pipeline_layout, library, &[])?;
                (self.gpu.create_graphics(&input, CreateMode::Capture(&intern)).map_err(|e| e.to_string())?, library)
            }
            (None, None, _) => return Err("a portable pipeline without a layout".into()),
        };
        if library {
            self.libraries.fetch_add(1, Relaxed);
        } else {
            self.pipelines.fetch_add(1, Relaxed);
        }
        self.driver_nanos.fetch_add(created.driver_time.as_nanos() as u64, Relaxed);
        self.binaries.fetch_add(created.binaries.len() as u64, Relaxed);
        self.binary_bytes.fetch_add(created.binaries.iter().map(|(_, d)| d.bytes().len() as u64).sum(), Relaxed);
        let (valid, hit) = (granary_archive::vulkan::FEEDBACK_VALID, granary_archive::vulkan::FEEDBACK_CACHE_HIT);
        if created.feedback & valid != 0 && created.feedback & hit != 0 {
            self.cache_hits.fetch_add(1, Relaxed);
        }
        Ok(PipelineCapture { library, pipeline_key: created.pipeline_key, binaries: created.binaries })
    }
}

/// Which form a pipeline is created in: portable (its Vulkan layout, and its render state for
/// a render pipeline) or native (its state).
#[derive(Clone, Copy)]
struct Form<'a> {
    vk_layout: Option<&'a LayoutDesc>,
    render_state: Option<&'a RenderState>,
    native: Option<&'a NativePipeline>,
}

impl granary::backend::Backend for VulkanBackend {
    fn name(&self) -> &'static str {
        "vulkan"
    }

    fn compile(
        &self,
        desc: &PipelineDescriptor,
        stages: &[Arc<StageFunction>],
        layout: &PipelineLayout,
    ) -> Result<Option<DeviceBinaries>, String> {
        let c = validation::scope(
            || {
                desc.label().map_or_else(
                    || desc.key_with_stage_keys(&stages.iter().map(|f| f.key).collect::<Vec<_>>()).to_hex(),
                    str::to_owned,
                )
            },
            || self.create_pipeline(desc, stages, layout),
        )?;
        let set = BinarySet {
            flags: if c.library { BINARY_SET_LIBRARY } else { 0 },
            pipeline_key: c.pipeline_key,
            binaries: c.binaries.into_iter().map(|(key, data)| DeviceBinary { key, data }).collect(),
        };
        Ok(Some(DeviceBinaries { device: self.identity.clone(), set: Arc::new(set) }))
    }

    fn device_caches(&self) -> Result<Vec<DeviceCache>, String> {
        match self.cache_data() {
            Ok(d) if !d.is_empty() => Ok(vec![DeviceCache { device: self.identity.clone(), data: Blob::new(d) }]),
            Ok(_) => Ok(Vec::new()),
            Err(e) => Err(e.to_string()),
        }
    }

    fn device(&self) -> Option<Arc<DeviceIdentity>> {
        Some(self.identity.clone())
    }

    fn expands_unspecialized(&self) -> bool {
        !self.uses_libraries()
    }

    fn report(&self) -> Option<BackendReport> {
        let capture = self.gpu.capture_stats();
        Some(BackendReport {
            backend: "vulkan".into(),
            device: self.identity.describe(),
            captures: if self.captures_binaries() { "pipeline-binaries" } else { "cache-data" }.into(),
            libraries: self.uses_libraries(),
            pipelines_created: self.pipelines.load(Relaxed),
            libraries_created: self.libraries.load(Relaxed),
            pipelines_shared: self.shared.load(Relaxed),
            shader_modules: self.module_count.load(Relaxed),
            driver_seconds: self.driver_nanos.load(Relaxed) as f64 / 1e9,
            key_seconds: capture.key_seconds,
            capture_seconds: capture.capture_seconds,
            binary_fetches_skipped: capture.fetches_skipped,
            binary_key_mismatches: capture.key_mismatches,
            binaries: self.binaries.load(Relaxed),
            binary_bytes: self.binary_bytes.load(Relaxed),
            cache_hits: self.cache_hits.load(Relaxed),
            in_workers: false,
        })
    }
}
