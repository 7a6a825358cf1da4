//! Backend and device selection (`--backend`, `--device`, …), shared by `harvest`, the
//! worker, `stress` and `bench`; and the same selection as worker arguments.

use anyhow::Context as _;
use granary::descriptor::TargetSet;
use granary_archive::vulkan::validation::ValidationLog;
use std::sync::Arc;

/// A backend (`None`: `none`) and, when validated, the layer's log.
pub type Opened = (Option<Arc<dyn granary::backend::Backend>>, Option<Arc<ValidationLog>>);

/// A Vulkan instance already made in this process ([`DeviceArgs::loaded`]).
#[derive(Clone, Default)]
pub struct LoadedDriver(pub Option<std::sync::Arc<granary_archive::vulkan::Driver>>);

impl std::fmt::Debug for LoadedDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "LoadedDriver(loaded)" } else { "LoadedDriver(none)" })
    }
}

/// Backend and device selection, shared by `harvest` and `stress`.
#[derive(clap::Args, Clone, Debug)]
pub struct DeviceArgs {
    /// none: the front end's translations only. vulkan: also create every pipeline on a Vulkan
    /// driver from all threads and store the driver's binaries for that device
    /// (VK_KHR_pipeline_binary), or its VkPipelineCache data where the extension is missing.
    /// Needs the spirv target. See `granary devices`.
    #[arg(long, value_enum, default_value = "none")]
    pub backend: BackendKind,
    /// The driver `--capture auto` loaded to look at the device, opened again by the harvest
    /// instead of loading it twice (not an argument).
    #[arg(skip)]
    pub loaded: LoadedDriver,
    /// With --backend vulkan: the device, by index or part of its name (`granary devices`
    /// lists them) [default: 0].
    #[arg(long, value_name = "N|NAME")]
    pub device: Option<String>,
    /// With --backend vulkan: keep the driver's VkPipelineCache data even where
    /// VK_KHR_pipeline_binary exists (the same as --capture cache).
    #[arg(long)]
    pub no_pipeline_binaries: bool,
    /// With --backend vulkan: what to capture. auto (the default, harvest): chosen by
    /// measurement — cache data where the device has no VK_KHR_pipeline_binary; where the
    /// output archive already has a section for this device and driver version, what it holds
    /// (the choice an earlier harvest recorded: delete it, or name the capture, to choose
    /// again); with --resume, what the archive already holds; with --shard, the device's own
    /// kind (shards would measure apart and could choose differently); where this machine
    /// recorded a calibration for the device, driver version and flags, that (see
    /// --recalibrate); otherwise both captures of a sample of about --calibrate-pipelines (64)
    /// pipelines, each archive warmed three times, the faster median warm wins (the faster
    /// harvest on a tie: within 5 % or within the repeats' spread) — a few seconds, once per
    /// machine and driver version — and the choice is recorded; a calibration that cannot run
    /// stores cache data, saying why. device:
    /// VK_KHR_pipeline_binary binaries where the device has the extension, else VkPipelineCache
    /// data, unmeasured. binaries: the binaries (refused on a device without them). cache: the
    /// cache data. Outside harvest auto is device. The harvest summary says what was chosen and
    /// why. On NVIDIA 580 the cache data harvests faster and warms as fast as a hand-written
    /// shared pipeline cache, and its binaries carry a dictionary the loader must compile
    /// around: auto chooses cache data there (docs/BENCHMARKS.md).
    #[arg(long, value_enum, default_value = "auto")]
    pub capture: CaptureMode,
    /// With --backend vulkan: do not use graphics pipeline libraries even where the device has
    /// them, as on a device without them (pipelines with unspecialized colour attachments then
    /// fail, saying so).
    #[arg(long)]
    pub no_pipeline_libraries: bool,
    /// With --backend vulkan: leave the driver's internal cache on while capturing binaries.
    /// By default granary switches it off where the driver allows, so every capture is a real
    /// compile; on NVIDIA the internal cache also shares compile work between pipelines
    /// (docs/BENCHMARKS.md measures both).
    #[arg(long)]
    pub driver_internal_cache: bool,
    /// With --backend vulkan: do not fetch a captured binary whose key and size were fetched
    /// before on the device; reuse those bytes. Smaller archives on NVIDIA, but not exact:
    /// that driver returns equal keys with other bytes (by default every binary is fetched and
    /// such keys are counted, `binary_key_mismatches`; docs/BENCHMARKS.md).
    #[arg(long)]
    pub reuse_binaries_by_key: bool,
    /// With --backend vulkan, an experiment in capture (docs/BENCHMARKS.md): compile each
    /// pipeline with one shared VkPipelineCache and without CAPTURE_DATA, then take its
    /// binaries from the driver's internal cache by create info; a pipeline the internal cache
    /// does not hold fails. Graphics pipeline libraries off.
    #[arg(long)]
    pub capture_from_internal_cache: bool,
}

/// `--capture`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CaptureMode {
    /// Binaries where the device has them, else cache data.
    Device,
    /// Chosen by measurement (harvest; the default); elsewhere as `device`.
    Auto,
    /// `VK_KHR_pipeline_binary` binaries.
    Binaries,
    /// `VkPipelineCache` data.
    Cache,
}

/// `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// Link checks only; the archive holds naga's translations.
    None,
    /// Real driver pipelines and their binaries.
    Vulkan,
}

impl DeviceArgs {
    /// The backend these arguments ask for (`None` for `none`). `share_identical`: create each
    /// driver-identical pipeline once (a harvest); off where a backend must create every
    /// pipeline every time (the race modes, the benchmark's passes).
    pub fn open(
        &self,
        targets: TargetSet,
        share_identical: bool,
    ) -> anyhow::Result<Option<std::sync::Arc<dyn granary::backend::Backend>>> {
        Ok(self.open_validated(targets, share_identical, false)?.0)
    }

    /// [`DeviceArgs::open`], with the Vulkan backend under the validation layer when
    /// `validate` (ignored for `--backend none`, which opens no device): also returns the
    /// layer's log.
    pub fn open_validated(&self, targets: TargetSet, share_identical: bool, validate: bool) -> anyhow::Result<Opened> {
        match self.backend {
            BackendKind::None => {
                anyhow::ensure!(
                    self.device.is_none()
                        && !self.no_pipeline_binaries
                        && matches!(self.capture, CaptureMode::Device | CaptureMode::Auto)
                        && !self.no_pipeline_libraries
                        && !self.driver_internal_cache
                        && !self.reuse_binaries_by_key
                        && !self.capture_from_internal_cache,
                    "--device, --capture, --no-pipeline-binaries, --no-pipeline-libraries, \
                     --driver-internal-cache, --reuse-binaries-by-key and --capture-from-internal-cache need \
                     --backend vulkan"
                );
                Ok((None, None))
            }
            BackendKind::Vulkan => {
                anyhow::ensure!(
                    targets.contains(granary::descriptor::Target::Spirv),
                    "--backend vulkan creates pipelines from SPIR-V: add spirv to --targets"
                );
                anyhow::ensure!(
                    !(self.no_pipeline_binaries && self.capture == CaptureMode::Binaries),
                    "--no-pipeline-binaries and --capture binaries contradict each other"
                );
                let b = granary_vulkan::VulkanBackend::open_with(
                    self.loaded.0.clone(),
                    &granary_vulkan::VulkanOptions {
                        device: self.device.clone(),
                        no_pipeline_binaries: self.no_pipeline_binaries || self.capture == CaptureMode::Cache,
                        no_libraries: self.no_pipeline_libraries,
                        driver_internal_cache: self.driver_internal_cache,
                        reuse_binaries_by_key: self.reuse_binaries_by_key,
                        capture_from_internal_cache: self.capture_from_internal_cache,
                        share_identical,
                        validate,
                    },
                )
                .context("cannot open the Vulkan device")?;
                anyhow::ensure!(
                    self.capture != CaptureMode::Binaries || b.captures_binaries(),
                    "--capture binaries: the device has no VK_KHR_pipeline_binary (`granary devices` shows what it \
                     supports); use --capture cache or auto"
                );
                let log = b.validation().cloned();
                Ok((Some(Arc::new(b)), log))
            }
        }
    }

    /// The same selection as worker arguments.
    pub fn worker_args(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.backend == BackendKind::Vulkan {
            v.push("--backend=vulkan".to_string());
            if let Some(d) = &self.device {
                v.push(format!("--device={d}"));
            }
            if self.no_pipeline_binaries || self.capture == CaptureMode::Cache {
                v.push("--no-pipeline-binaries".into());
            }
            if self.capture == CaptureMode::Binaries {
                v.push("--capture=binaries".into());
            }
            if self.no_pipeline_libraries {
                v.push("--no-pipeline-libraries".into());
            }
            if self.driver_internal_cache {
                v.push("--driver-internal-cache".into());
            }
            if self.reuse_binaries_by_key {
                v.push("--reuse-binaries-by-key".into());
            }
            if self.capture_from_internal_cache {
                v.push("--capture-from-internal-cache".into());
            }
        }
        v
    }
}
