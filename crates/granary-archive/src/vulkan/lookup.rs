//! Run-time lookup by the application's own create info: [`PipelineLoader::lookup_graphics`]
//! / [`lookup_compute`](PipelineLoader::lookup_compute) /
//! [`lookup_ray_tracing`](PipelineLoader::lookup_ray_tracing) find what the archive holds for a
//! `VkGraphicsPipelineCreateInfo` / `VkComputePipelineCreateInfo` /
//! `VkRayTracingPipelineCreateInfoKHR` the engine built itself (its handles resolved by an
//! [`ObjectRecorder`]), and [`create_graphics`](PipelineLoader::create_graphics) /
//! [`create_compute`](PipelineLoader::create_compute) /
//! [`create_ray_tracing`](PipelineLoader::create_ray_tracing) create that very create info
//! from the archived binaries.
//!
//! The key is granary's, computed from the create info (`inverse.rs`, the same derivation as
//! the harvest's); the binaries are used only when the driver's `vkGetPipelineKeyKHR` of the
//! application's create info equals the key recorded beside them at capture. Otherwise the
//! create info is compiled with the loader's pipeline cache (seeded with the archive's
//! pipeline-cache data for this device), as the loader's options allow.

use super::error::VulkanError;
use super::inverse::{compute_pipeline, graphics_pipeline, ray_tracing_pipeline, AppPipeline};
use super::loader::{finish_load, Fail, LoadError, LoadErrorKind, Loaded, PipelineLoader};
use super::pipeline::{CheckedBinaries, CreateMode, CreateOutcome};
use super::recorder::ObjectRecorder;
use crate::key::PipelineKey;
use std::time::Instant;
use vulkanalia::vk;

/// What the archive offers for an application's create info.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Offer {
    /// This device's binaries, whose recorded pipeline key equals the driver's key of the
    /// application's create info: [`PipelineLoader::create_graphics`] creates from them, no
    /// compile.
    Binaries,
    /// Archived, but not from binaries here: it is compiled with the loader's pipeline cache
    /// (the archive's pipeline-cache data for this device where it holds some). `why` says
    /// why not binaries (a device without `VK_KHR_pipeline_binary`, another device's archive,
    /// a pipeline key that differs, …).
    Cache {
        /// Why binaries are not used.
        why: String,
    },
    /// This device's binaries match the create info, but the loader declines them for the
    /// driver's sake (a whole pipeline whose set carries a binary other sets share — NVIDIA's
    /// dictionary, which crashes NVIDIA 580 at draw time; see
    /// [`LoaderOptions::whole_dictionary_binaries`](super::LoaderOptions::whole_dictionary_binaries)):
    /// it is compiled with the loader's pipeline cache, as [`Offer::Cache`], whatever
    /// `require_binaries` says (the binaries exist; the loader chose not to use them).
    Declined {
        /// Why, in words (the fallback reason the loader reports).
        why: String,
    },
    /// The archive holds no pipeline with this key.
    NotArchived,
}

/// The result of a lookup by create info.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppLookup {
    /// Granary's key of the create info (under the archive's key context).
    pub key: PipelineKey,
    /// What the archive offers for it.
    pub offer: Offer,
}

/// The driver-key decision: binaries only when the archive records a pipeline key for them
/// and it equals the driver's key of the create info about to be used (`driver`: `None` or
/// empty where the device cannot compute one).
pub(super) fn decide(archived: Option<&[u8]>, driver: Option<&[u8]>, no_set: impl FnOnce() -> String) -> Offer {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    match (archived, driver) {
        (None, _) => Offer::Cache { why: no_set() },
        (Some([]), _) => Offer::Cache {
            why: "the archive records no pipeline key for these binaries, so they cannot be checked against \
                  this create info"
                .into(),
        },
        (Some(_), None | Some([])) => {
            Offer::Cache { why: "this device gives no pipeline key to check the binaries against".into() }
        }
        (Some(a), Some(d)) if a == d => Offer::Binaries,
        (Some(a), Some(d)) => Offer::Cache {
            why: format!(
                "pipeline key differs: archived {}, the application's create info {} (the create info or the \
                 device's enabled state differs from the harvest's)",
                hex(a),
                hex(d)
            ),
        },
    }
}

/// The application's create info, either kind.
#[derive(Clone, Copy)]
enum AppInfo<'i> {
    Graphics(&'i vk::GraphicsPipelineCreateInfo),
    Compute(&'i vk::ComputePipelineCreateInfo),
    RayTracing(&'i vk::RayTracingPipelineCreateInfoKHR),
}

impl PipelineLoader {
    /// What the archive holds for the application's graphics create info `info`, whose render
    /// pass, pipeline layout (with its set layouts and immutable samplers) and shader modules
    /// `recorder` knows: its granary key and the [`Offer`]. Makes no object; calls only
    /// `vkGetPipelineKeyKHR` (where the device has pipeline binaries and the archive holds
    /// binaries for this pipeline). A create info granary's native state cannot say is
    /// [`LoadError::CreateInfo`], naming what.
    ///
    /// # Safety
    ///
    /// `info` is a valid `VkGraphicsPipelineCreateInfo` for this loader's device, exactly as
    /// `vkCreateGraphicsPipelines` requires (every pointer Vulkan reads valid with its count and
    /// chain, its objects alive), for the duration of the call.
    pub unsafe fn lookup_graphics(
        &self,
        recorder: &ObjectRecorder,
        info: &vk::GraphicsPipelineCreateInfo,
    ) -> Result<AppLookup, LoadError> {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.lookup_app(recorder, AppInfo::Graphics(info)) }.map(|(l, _)| l)
    }

    /// [`lookup_graphics`](Self::lookup_graphics) for a compute create info.
    ///
    /// # Safety
    ///
    /// As `lookup_graphics`, for a `VkComputePipelineCreateInfo` (`vkCreateComputePipelines`).
    pub unsafe fn lookup_compute(
        &self,
        recorder: &ObjectRecorder,
        info: &vk::ComputePipelineCreateInfo,
    ) -> Result<AppLookup, LoadError> {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.lookup_app(recorder, AppInfo::Compute(info)) }.map(|(l, _)| l)
    }

    /// [`lookup_graphics`](Self::lookup_graphics) for a ray-tracing create info (one that links
    /// no pipeline libraries: the archive holds a linking pipeline with its libraries folded
    /// in, docs/RAY_TRACING.md).
    ///
    /// # Safety
    ///
    /// As `lookup_graphics`, for a `VkRayTracingPipelineCreateInfoKHR`
    /// (`vkCreateRayTracingPipelinesKHR`) on a device with `rayTracingPipeline` enabled.
    pub unsafe fn lookup_ray_tracing(
        &self,
        recorder: &ObjectRecorder,
        info: &vk::RayTracingPipelineCreateInfoKHR,
    ) -> Result<AppLookup, LoadError> {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.lookup_app(recorder, AppInfo::RayTracing(info)) }.map(|(l, _)| l)
    }

    /// Creates the application's graphics create info `info` as archived: from this device's
    /// binaries when [`lookup_graphics`](Self::lookup_graphics) offers them (the driver's key of
    /// `info` equals the archived one), else — unless [`LoaderOptions::require_binaries`]
    /// (any offer but binaries is then an error) or, for a key or device mismatch,
    /// [`LoaderOptions::fallback_compile`] off — compiled with the loader's pipeline cache. A
    /// create info the archive does not hold is [`LoadError::NotFound`] (the application
    /// creates it itself). The pipeline is made from `info` itself, with the application's
    /// handles: destroy it (or hand it over, [`Pipeline::into_raw`](super::Pipeline::into_raw))
    /// before them as Vulkan requires.
    ///
    /// [`LoaderOptions::require_binaries`]: super::LoaderOptions::require_binaries
    /// [`LoaderOptions::fallback_compile`]: super::LoaderOptions::fallback_compile
    ///
    /// # Safety
    ///
    /// As [`lookup_graphics`](Self::lookup_graphics).
    pub unsafe fn create_graphics(
        &self,
        recorder: &ObjectRecorder,
        info: &vk::GraphicsPipelineCreateInfo,
    ) -> Result<Loaded, LoadError> {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.create_app(recorder, AppInfo::Graphics(info)) }
    }

    /// [`create_graphics`](Self::create_graphics) for a compute create info.
    ///
    /// # Safety
    ///
    /// As [`lookup_compute`](Self::lookup_compute).
    pub unsafe fn create_compute(
        &self,
        recorder: &ObjectRecorder,
        info: &vk::ComputePipelineCreateInfo,
    ) -> Result<Loaded, LoadError> {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.create_app(recorder, AppInfo::Compute(info)) }
    }

    /// [`create_graphics`](Self::create_graphics) for a ray-tracing create info.
    ///
    /// # Safety
    ///
    /// As [`lookup_ray_tracing`](Self::lookup_ray_tracing).
    pub unsafe fn create_ray_tracing(
        &self,
        recorder: &ObjectRecorder,
        info: &vk::RayTracingPipelineCreateInfoKHR,
    ) -> Result<Loaded, LoadError> {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.create_app(recorder, AppInfo::RayTracing(info)) }
    }

    /// The lookup, and the pipeline's archived binary set where binaries are offered.
    ///
    /// # Safety
    ///
    /// As [`lookup_graphics`](Self::lookup_graphics).
    unsafe fn lookup_app(
        &self,
        recorder: &ObjectRecorder,
        info: AppInfo<'_>,
    ) -> Result<(AppLookup, Option<crate::reader::BinarySetRef<'_>>), LoadError> {
        self.lookup_app_pipeline(recorder, info).map(|(l, set, _)| (l, set))
    }

    /// [`lookup_app`](Self::lookup_app), and the application's pipeline in native form.
    ///
    /// # Safety
    ///
    /// As [`lookup_graphics`](Self::lookup_graphics).
    #[allow(clippy::type_complexity)]
    unsafe fn lookup_app_pipeline(
        &self,
        recorder: &ObjectRecorder,
        info: AppInfo<'_>,
    ) -> Result<(AppLookup, Option<crate::reader::BinarySetRef<'_>>, AppPipeline), LoadError> {
        let app: AppPipeline = match info {
            // SAFETY: the caller's promise: a valid create info.
            AppInfo::Graphics(g) => unsafe { graphics_pipeline(recorder, g) },
            // SAFETY: as above.
            AppInfo::Compute(c) => unsafe { compute_pipeline(recorder, c) },
            // SAFETY: as above.
            AppInfo::RayTracing(r) => unsafe { ray_tracing_pipeline(recorder, r) },
        }
        .map_err(LoadError::CreateInfo)?;
        let key = app.key(&self.archive.key_context());
        let Some(p) = self.archive.get(key)? else {
            return Ok((AppLookup { key, offer: Offer::NotArchived }, None, app));
        };
        let set = match self.section() {
            Ok(d) if self.options.use_binaries && self.binaries_ok => d.binaries(&p)?.filter(|s| !s.is_empty()),
            _ => None,
        };
        let no_set = || match self.section() {
            Err(m) => m.to_string(),
            Ok(_) if !self.options.use_binaries => "LoaderOptions::use_binaries is off".into(),
            Ok(_) if !self.gpu.captures_binaries() => "this device has no VK_KHR_pipeline_binary".into(),
            Ok(_) if !self.binaries_ok => "the archive holds no binaries this device can take".into(),
            Ok(_) => "the archive holds no binaries for this pipeline on this device".into(),
        };
        let driver = match (&set, info) {
            (None, _) => None,
            // SAFETY: the caller's promise: a valid create info for this device.
            (Some(_), AppInfo::Graphics(g)) => Some(unsafe { self.gpu.app_key(g) }),
            // SAFETY: as above.
            (Some(_), AppInfo::Compute(c)) => Some(unsafe { self.gpu.app_key(c) }),
            // SAFETY: as above.
            (Some(_), AppInfo::RayTracing(r)) => Some(unsafe { self.gpu.app_key(r) }),
        }
        .transpose()
        .map_err(|e: VulkanError| Fail::from(e).named(|| key.to_hex()))?;
        let offer = decide(set.as_ref().map(|s| s.pipeline_key()), driver.as_deref(), no_set);
        if matches!(offer, Offer::Cache { .. }) && set.is_some() {
            // Binaries the archive has but this create info's key does not match.
            self.key_mismatches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let set = if offer == Offer::Binaries { set } else { None };
        // A set with NVIDIA's dictionary is not handed to the driver (`whole_dictionary_binaries`).
        let (offer, set) = match set {
            Some(s)
                if !self.options.whole_dictionary_binaries
                    && self.carries_shared_binary(&s).map_err(|m| Fail::from(m).named(|| key.to_hex()))? =>
            {
                (Offer::Declined { why: super::loader::DICTIONARY_SET_REFUSED.to_string() }, None)
            }
            set => (offer, set),
        };
        Ok((AppLookup { key, offer }, set, app))
    }

    /// # Safety
    ///
    /// As [`lookup_graphics`](Self::lookup_graphics).
    unsafe fn create_app(&self, recorder: &ObjectRecorder, info: AppInfo<'_>) -> Result<Loaded, LoadError> {
        let start = Instant::now();
        // SAFETY: the caller's promise, passed on.
        let (lookup, set, app) = unsafe { self.lookup_app_pipeline(recorder, info)? };
        if lookup.offer == Offer::NotArchived {
            self.note_described(lookup.key, app);
        } else {
            self.note_used(lookup.key, None);
        }
        let name = lookup.key.to_hex();
        let fail = |f: Fail| f.named(|| name.clone());
        let scope_name = || name.clone();
        let _validation_scope = super::validation::enter(&scope_name);
        let fallback_reason = match &lookup.offer {
            Offer::NotArchived => {
                return Err(LoadError::NotFound(format!("for this create info (key {})", lookup.key.to_hex())))
            }
            Offer::Binaries => None,
            // Declined for the driver's sake: compiled whatever `require_binaries` and
            // `fallback_compile` say (the binaries exist), as `load` does; a fallback.
            Offer::Declined { why } => Some(why.clone()),
            Offer::Cache { why } if self.options.require_binaries => {
                return Err(fail(Fail::of(
                    LoadErrorKind::BinariesUnusable,
                    format!("LoaderOptions::require_binaries, and no binaries here: {why}"),
                )))
            }
            Offer::Cache { why } => {
                let mismatched = why.starts_with("pipeline key differs") || self.mismatch().is_some();
                if mismatched && !self.options.fallback_compile {
                    return Err(match self.section() {
                        Err(m) => LoadError::Mismatch(m.clone()),
                        Ok(_) => fail(Fail::of(LoadErrorKind::BinariesUnusable, why.clone())),
                    });
                }
                // A missing set is no fallback (as `load` reports it); a refused one is.
                mismatched.then(|| why.clone())
            }
        };
        let mut own = Vec::new();
        let made = match set {
            Some(set) => {
                let (handles, mine) = self.binary_handles(&set).map_err(|e| fail(e.into()))?;
                own = mine;
                Some(handles)
            }
            None => None,
        };
        let handles = made.as_deref().unwrap_or_default();
        // SAFETY: `binary_handles` made these handles from hash-checked bytes of this device's
        // own section (`binaries_ok`, required by `lookup_app` for a set), for a set whose
        // archived pipeline key equals `vkGetPipelineKeyKHR` of exactly this create info
        // (`decide` offered binaries only then).
        let binaries = unsafe { CheckedBinaries::new(handles) };
        let how = CreateMode::Keep { binaries, cache: made.is_none().then_some(&self.cache) };
        let created: Result<CreateOutcome, VulkanError> = match info {
            // SAFETY: the caller's promise: a valid create info for this device, its objects
            // alive; the binaries are checked for it (above).
            AppInfo::Graphics(g) => unsafe { self.gpu.create_app(g, how) },
            // SAFETY: as above.
            AppInfo::Compute(c) => unsafe { self.gpu.create_app(c, how) },
            // SAFETY: as above; `rayTracingPipeline` is enabled (the caller's promise).
            AppInfo::RayTracing(r) => unsafe { self.gpu.create_app(r, how) },
        };
        let created = created.map_err(|e| fail(e.into()))?;
        drop(own);
        let loaded = finish_load(created, false, made, fallback_reason, start).map_err(|e| fail(e.into()));
        self.stats.finish(super::loader::outcome(&loaded), start.elapsed());
        loaded
    }
}

impl PipelineLoader {
    /// Records a create info the archive does not hold with [`LoaderOptions::recorder`], if
    /// any: in full where every stage's code is known, else as a miss by key.
    ///
    /// [`LoaderOptions::recorder`]: super::LoaderOptions::recorder
    fn note_described(&self, key: crate::key::PipelineKey, app: AppPipeline) {
        let Some(r) = &self.options.recorder else { return };
        let (stages, code): (Vec<_>, Vec<_>) = app
            .stages
            .into_iter()
            .map(|s| {
                let stage = crate::record::RecordedStage {
                    stage: s.stage,
                    library: s.library,
                    entry: s.entry,
                    specialization: s.specialization,
                };
                (stage, s.code)
            })
            .unzip();
        let code: Vec<Option<&[u8]>> = code.iter().map(|c| c.as_deref()).collect();
        r.described(key, stages, app.state, &code);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binaries_are_offered_only_when_the_driver_key_equals_the_archived_one() {
        let none = || "no set".to_string();
        assert_eq!(decide(Some(b"key"), Some(b"key"), none), Offer::Binaries);
        let differs = decide(Some(b"\x01\x02"), Some(b"\x01\x03"), none);
        assert!(
            matches!(&differs, Offer::Cache { why } if why.contains("archived 0102") && why.contains("0103")),
            "{differs:?}"
        );
        assert!(
            matches!(decide(Some(b""), Some(b"key"), none), Offer::Cache { why } if why.contains("records no pipeline key"))
        );
        assert!(matches!(decide(Some(b"key"), None, none), Offer::Cache { .. }));
        assert!(matches!(decide(Some(b"key"), Some(b""), none), Offer::Cache { .. }));
        assert_eq!(decide(None, Some(b"key"), none), Offer::Cache { why: "no set".into() });
    }
}
