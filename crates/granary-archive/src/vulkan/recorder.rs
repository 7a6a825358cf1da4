//! [`ObjectRecorder`]: what the application's own Vulkan handles mean, so its pipeline create
//! infos can be turned into granary's native state (`inverse.rs`) and looked up by key.
//!
//! A `VkGraphicsPipelineCreateInfo` names its render pass, pipeline layout and shader modules
//! by handle; the state granary keys (a [`NativePipeline`](crate::native::NativePipeline))
//! holds them by value. The application records each object when it creates it, with the
//! create info it passed to Vulkan (`unsafe` `record_*`, which read the raw structures), or
//! gives granary's value directly (safe `insert_*`), and forgets it when it destroys it
//! (`forget_*`). The recorder makes no Vulkan call and owns no Vulkan object.
//!
//! Every structure is read completely: a `pNext` structure granary does not model is an error
//! naming it ([`CreateInfoError::UnsupportedNext`]), never dropped, and a handle the recorder
//! does not know (an immutable sampler, a set layout) is [`CreateInfoError::UnknownHandle`].
//!
//! # Thread safety
//!
//! `Send + Sync`. Every method takes `&self` and may run from any number of threads at once:
//! each kind of object is a map behind its own `RwLock` (lookups share it; `record_*`,
//! `insert_*` and `forget_*` hold it exclusively for one insertion or removal, never while
//! reading the application's structures). A lookup racing with the `forget_*` of the same
//! handle sees the object or not; Vulkan's own rule applies on top: a handle may not be
//! destroyed while a create call that names it runs, so an application that forgets a handle
//! when it destroys it never has a lookup miss a live one.

use crate::key::ContentHash;
use crate::native::{
    spirv_library_hash, AttachmentDescription, AttachmentReference, NativeLayout, PushConstantRange, RenderPassState,
    SamplerState, SetLayout, SetLayoutBinding, SubpassDependency, SubpassDescription,
};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, RwLock};
use vulkanalia::vk::{self, Handle};

/// Why an application's create info (or an object it names) cannot be turned into granary's
/// native state. Each variant names the structure and, where there is one, the member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CreateInfoError {
    /// A handle the [`ObjectRecorder`] was not told about (`what`: `VkRenderPass`,
    /// `VkPipelineLayout`, `VkDescriptorSetLayout`, `VkSampler`, `VkShaderModule`).
    UnknownHandle {
        /// The handle's type.
        what: &'static str,
        /// The raw handle.
        handle: u64,
    },
    /// A structure in a `pNext` chain that granary's native state does not model.
    UnsupportedNext {
        /// The structure whose chain holds it.
        parent: &'static str,
        /// Its `sType`.
        s_type: i32,
    },
    /// A value the native state cannot hold, or one Vulkan does not allow, named by member.
    Unsupported {
        /// The member (`flags`, `pStages[1].stage`, …).
        field: String,
        /// What is wrong.
        message: String,
    },
}

impl std::fmt::Display for CreateInfoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CreateInfoError::UnknownHandle { what, handle } => {
                write!(f, "{what} {handle:#x} was not recorded (ObjectRecorder::record_* or insert_*)")
            }
            CreateInfoError::UnsupportedNext { parent, s_type } => write!(
                f,
                "{parent}::pNext holds a structure with sType {s_type} that granary's native state does not model"
            ),
            CreateInfoError::Unsupported { field, message } => write!(f, "{field}: {message}"),
        }
    }
}

impl std::error::Error for CreateInfoError {}

/// A [`CreateInfoError::Unsupported`].
pub(super) fn unsupported(field: impl Into<String>, message: impl Into<String>) -> CreateInfoError {
    CreateInfoError::Unsupported { field: field.into(), message: message.into() }
}

/// `count` elements at `ptr` (empty when `ptr` is null or `count` is 0).
///
/// # Safety
///
/// A non-null `ptr` points at `count` initialized `T`s that stay valid for `'a`.
pub(super) unsafe fn slice<'a, T>(ptr: *const T, count: u32) -> &'a [T] {
    if ptr.is_null() || count == 0 {
        &[]
    } else {
        // SAFETY: the caller's promise: `count` valid elements at a non-null `ptr`.
        unsafe { std::slice::from_raw_parts(ptr, count as usize) }
    }
}

/// The structures of a `pNext` chain, as `(sType, pointer)`.
///
/// # Safety
///
/// `next` is null or the head of a valid Vulkan `pNext` chain (every element starts with
/// `sType` and `pNext`), valid while the result is used.
pub(super) unsafe fn chain(next: *const c_void) -> Vec<(vk::StructureType, *const c_void)> {
    let mut out = Vec::new();
    let mut p = next.cast::<vk::BaseInStructure>();
    // A chain longer than this is not a create info (a cycle): stop rather than loop.
    while !p.is_null() && out.len() < 64 {
        // SAFETY: the caller's promise: each element of the chain starts with sType and pNext.
        let base = unsafe { &*p };
        out.push((base.s_type, p.cast::<c_void>()));
        p = base.next;
    }
    out
}

/// The one structure of `s_type` in `next`'s chain (others refused as unsupported, naming
/// `parent`), or null.
///
/// # Safety
///
/// As [`chain`].
pub(super) unsafe fn only_next(
    next: *const c_void,
    parent: &'static str,
    allowed: &[vk::StructureType],
) -> Result<Vec<(vk::StructureType, *const c_void)>, CreateInfoError> {
    // SAFETY: the caller's promise, passed on.
    let chain = unsafe { chain(next) };
    for (s, _) in &chain {
        if !allowed.contains(s) {
            return Err(CreateInfoError::UnsupportedNext { parent, s_type: s.as_raw() });
        }
    }
    Ok(chain)
}

/// The structure of type `s_type` in `chain`, cast to `T`.
///
/// # Safety
///
/// Every pointer in `chain` points at the structure its sType names, and `T` is the structure
/// `s_type` names.
pub(super) unsafe fn find<'a, T>(
    chain: &[(vk::StructureType, *const c_void)],
    s_type: vk::StructureType,
) -> Option<&'a T> {
    // SAFETY: the caller's promise: the pointer is a valid `T` of that sType.
    chain.iter().find(|(s, _)| *s == s_type).map(|(_, p)| unsafe { &*p.cast::<T>() })
}

fn b(v: vk::Bool32) -> bool {
    v != vk::FALSE
}

/// The aspect mask Vulkan gives a version-1 input attachment reference: every aspect of its
/// attachment's format (as `granary import-foz` maps a version-1 render pass).
fn format_aspects(format: u32) -> u32 {
    match format {
        124..=126 => 0x2,
        127 => 0x4,
        128..=130 => 0x6,
        _ => 0x1,
    }
}

/// Records what the application's render passes, descriptor-set layouts, pipeline layouts,
/// samplers and shader modules are, by handle, so that
/// [`PipelineLoader::lookup_graphics`](super::PipelineLoader::lookup_graphics) can read the
/// application's own create infos. Record each object when creating it, with the create info
/// passed to Vulkan (`unsafe` `record_*`), or give granary's value (`insert_*`); forget it when
/// destroying it (`forget_*`). It makes no Vulkan call and owns no Vulkan object. A `pNext`
/// structure granary does not model is [`CreateInfoError::UnsupportedNext`], never dropped; a
/// handle it does not know (an immutable sampler, a set layout) is
/// [`CreateInfoError::UnknownHandle`].
///
/// # Thread safety
///
/// `Send + Sync`. Every method takes `&self` and may run from any number of threads at once:
/// each kind of object is a map behind its own `RwLock` (lookups share it; `record_*`,
/// `insert_*` and `forget_*` hold it exclusively for one insertion or removal, never while
/// reading the application's structures). A lookup racing with the `forget_*` of the same
/// handle sees the object or not; Vulkan's own rule applies on top: a handle may not be
/// destroyed while a create call that names it runs, so an application that forgets a handle
/// when it destroys it never has a lookup miss a live one.
#[derive(Default)]
pub struct ObjectRecorder {
    render_passes: RwLock<HashMap<u64, Arc<RenderPassState>>>,
    set_layouts: RwLock<HashMap<u64, Arc<SetLayout>>>,
    pipeline_layouts: RwLock<HashMap<u64, Arc<NativeLayout>>>,
    samplers: RwLock<HashMap<u64, Arc<SamplerState>>>,
    modules: RwLock<HashMap<u64, ModuleEntry>>,
    /// Whether modules keep their SPIR-V ([`ObjectRecorder::keeping_code`]).
    keep_code: bool,
}

/// A recorded shader module: its content hash, and its SPIR-V when the recorder keeps code.
pub(super) type ModuleEntry = (ContentHash, Option<Arc<[u8]>>);

fn put<T>(map: &RwLock<HashMap<u64, T>>, handle: u64, value: T) {
    map.write().unwrap_or_else(std::sync::PoisonError::into_inner).insert(handle, value);
}

fn get<T: Clone>(map: &RwLock<HashMap<u64, T>>, handle: u64, what: &'static str) -> Result<T, CreateInfoError> {
    map.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&handle)
        .cloned()
        .ok_or(CreateInfoError::UnknownHandle { what, handle })
}

fn remove<T>(map: &RwLock<HashMap<u64, T>>, handle: u64) -> bool {
    map.write().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&handle).is_some()
}

impl ObjectRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty recorder that also keeps each shader module's SPIR-V (shared, one copy per
    /// module handle), so that a create info the archive does not hold can be written to a
    /// use record in full ([`LoaderOptions::recorder`](super::LoaderOptions::recorder)). Costs
    /// the memory of the modules' code for as long as they are recorded.
    pub fn keeping_code() -> Self {
        ObjectRecorder { keep_code: true, ..Self::default() }
    }

    /// Whether modules keep their code ([`keeping_code`](Self::keeping_code)).
    pub(super) fn keeps_code(&self) -> bool {
        self.keep_code
    }

    /// The module's hash, and its code when kept.
    fn module(&self, spirv: &[u8]) -> ModuleEntry {
        (spirv_library_hash(spirv), self.keep_code.then(|| Arc::from(spirv)))
    }

    /// Records `handle` as the render pass `state` (granary's value, e.g. from a script).
    pub fn insert_render_pass(&self, handle: vk::RenderPass, state: RenderPassState) {
        put(&self.render_passes, handle.as_raw(), Arc::new(state));
    }
    /// Records `handle` as the descriptor-set layout `state`.
    pub fn insert_set_layout(&self, handle: vk::DescriptorSetLayout, state: SetLayout) {
        put(&self.set_layouts, handle.as_raw(), Arc::new(state));
    }
    /// Records `handle` as the pipeline layout `state` (set layouts by value).
    pub fn insert_pipeline_layout(&self, handle: vk::PipelineLayout, state: NativeLayout) {
        put(&self.pipeline_layouts, handle.as_raw(), Arc::new(state));
    }
    /// Records `handle` as the sampler `state` (for immutable samplers).
    pub fn insert_sampler(&self, handle: vk::Sampler, state: SamplerState) {
        put(&self.samplers, handle.as_raw(), Arc::new(state));
    }
    /// Records `handle` as the shader module made from `spirv` (only its content hash is kept).
    pub fn insert_shader_module(&self, handle: vk::ShaderModule, spirv: &[u8]) {
        put(&self.modules, handle.as_raw(), self.module(spirv));
    }

    /// Forgets a render pass (call it when destroying it); whether it was recorded.
    pub fn forget_render_pass(&self, handle: vk::RenderPass) -> bool {
        remove(&self.render_passes, handle.as_raw())
    }
    /// Forgets a descriptor-set layout; whether it was recorded.
    pub fn forget_set_layout(&self, handle: vk::DescriptorSetLayout) -> bool {
        remove(&self.set_layouts, handle.as_raw())
    }
    /// Forgets a pipeline layout; whether it was recorded.
    pub fn forget_pipeline_layout(&self, handle: vk::PipelineLayout) -> bool {
        remove(&self.pipeline_layouts, handle.as_raw())
    }
    /// Forgets a sampler; whether it was recorded.
    pub fn forget_sampler(&self, handle: vk::Sampler) -> bool {
        remove(&self.samplers, handle.as_raw())
    }
    /// Forgets a shader module; whether it was recorded.
    pub fn forget_shader_module(&self, handle: vk::ShaderModule) -> bool {
        remove(&self.modules, handle.as_raw())
    }

    /// The recorded render pass `handle`.
    pub fn render_pass(&self, handle: vk::RenderPass) -> Result<Arc<RenderPassState>, CreateInfoError> {
        get(&self.render_passes, handle.as_raw(), "VkRenderPass")
    }
    /// The recorded descriptor-set layout `handle`.
    pub fn set_layout(&self, handle: vk::DescriptorSetLayout) -> Result<Arc<SetLayout>, CreateInfoError> {
        get(&self.set_layouts, handle.as_raw(), "VkDescriptorSetLayout")
    }
    /// The recorded pipeline layout `handle`.
    pub fn pipeline_layout(&self, handle: vk::PipelineLayout) -> Result<Arc<NativeLayout>, CreateInfoError> {
        get(&self.pipeline_layouts, handle.as_raw(), "VkPipelineLayout")
    }
    /// The recorded sampler `handle`.
    pub fn sampler(&self, handle: vk::Sampler) -> Result<Arc<SamplerState>, CreateInfoError> {
        get(&self.samplers, handle.as_raw(), "VkSampler")
    }
    /// The content hash of the SPIR-V the shader module `handle` was made from.
    pub fn shader_module(&self, handle: vk::ShaderModule) -> Result<ContentHash, CreateInfoError> {
        get(&self.modules, handle.as_raw(), "VkShaderModule").map(|(h, _)| h)
    }

    /// The shader module's content hash and, when this recorder keeps code, its SPIR-V.
    pub(super) fn shader_module_code(&self, handle: vk::ShaderModule) -> Result<ModuleEntry, CreateInfoError> {
        get(&self.modules, handle.as_raw(), "VkShaderModule")
    }

    /// Records the render pass `handle` created with `info` (`vkCreateRenderPass`; a chained
    /// `VkRenderPassMultiviewCreateInfo` becomes the subpasses' view masks, the dependencies'
    /// view offsets and the correlated view masks, as in `VkRenderPassCreateInfo2`).
    ///
    /// # Safety
    ///
    /// `info` is a valid `VkRenderPassCreateInfo` (every pointer and count in it and its chain
    /// as Vulkan's valid usage requires), readable for the duration of the call.
    pub unsafe fn record_render_pass(
        &self,
        handle: vk::RenderPass,
        info: &vk::RenderPassCreateInfo,
    ) -> Result<(), CreateInfoError> {
        // SAFETY: the caller's promise: a valid create info and chain.
        let chain = unsafe {
            only_next(info.next, "VkRenderPassCreateInfo", &[vk::StructureType::RENDER_PASS_MULTIVIEW_CREATE_INFO])?
        };
        // SAFETY: the chain's pointers are the structures their sTypes name.
        let multiview: Option<&vk::RenderPassMultiviewCreateInfo> =
            unsafe { find(&chain, vk::StructureType::RENDER_PASS_MULTIVIEW_CREATE_INFO) };
        // SAFETY: (every slice below) the caller's promise: pointers valid for their counts.
        let attachments: Vec<AttachmentDescription> = unsafe { slice(info.attachments, info.attachment_count) }
            .iter()
            .map(|a| AttachmentDescription {
                flags: a.flags.bits(),
                format: a.format.as_raw() as u32,
                samples: a.samples.bits(),
                load_op: a.load_op.as_raw() as u32,
                store_op: a.store_op.as_raw() as u32,
                stencil_load_op: a.stencil_load_op.as_raw() as u32,
                stencil_store_op: a.stencil_store_op.as_raw() as u32,
                initial_layout: a.initial_layout.as_raw() as u32,
                final_layout: a.final_layout.as_raw() as u32,
            })
            .collect();
        let (view_masks, view_offsets, correlated) = match multiview {
            // SAFETY: as above.
            Some(m) => unsafe {
                (
                    slice(m.view_masks, m.subpass_count).to_vec(),
                    slice(m.view_offsets, m.dependency_count).to_vec(),
                    slice(m.correlation_masks, m.correlation_mask_count).to_vec(),
                )
            },
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
        let refs = |p: *const vk::AttachmentReference, n: u32, input: bool| -> Vec<AttachmentReference> {
            // SAFETY: as above.
            unsafe { slice(p, n) }
                .iter()
                .map(|r| AttachmentReference {
                    attachment: r.attachment,
                    layout: r.layout.as_raw() as u32,
                    aspect_mask: match attachments.get(r.attachment as usize) {
                        Some(a) if input => format_aspects(a.format),
                        _ => 0,
                    },
                })
                .collect()
        };
        // SAFETY: as above.
        let subpass_infos = unsafe { slice(info.subpasses, info.subpass_count) };
        let mut subpasses = Vec::with_capacity(subpass_infos.len());
        for (i, s) in subpass_infos.iter().enumerate() {
            subpasses.push(SubpassDescription {
                flags: s.flags.bits(),
                pipeline_bind_point: s.pipeline_bind_point.as_raw() as u32,
                view_mask: view_masks.get(i).copied().unwrap_or(0),
                input_attachments: refs(s.input_attachments, s.input_attachment_count, true),
                color_attachments: refs(s.color_attachments, s.color_attachment_count, false),
                resolve_attachments: if s.resolve_attachments.is_null() {
                    Vec::new()
                } else {
                    refs(s.resolve_attachments, s.color_attachment_count, false)
                },
                depth_stencil_attachment: refs(s.depth_stencil_attachment, 1, false).pop(),
                // SAFETY: as above.
                preserve_attachments: unsafe { slice(s.preserve_attachments, s.preserve_attachment_count) }.to_vec(),
            });
        }
        // SAFETY: as above.
        let dependencies = unsafe { slice(info.dependencies, info.dependency_count) }
            .iter()
            .enumerate()
            .map(|(i, d)| SubpassDependency {
                src_subpass: d.src_subpass,
                dst_subpass: d.dst_subpass,
                src_stage_mask: d.src_stage_mask.bits(),
                dst_stage_mask: d.dst_stage_mask.bits(),
                src_access_mask: d.src_access_mask.bits(),
                dst_access_mask: d.dst_access_mask.bits(),
                dependency_flags: d.dependency_flags.bits(),
                view_offset: view_offsets.get(i).copied().unwrap_or(0),
            })
            .collect();
        let state = RenderPassState {
            flags: info.flags.bits(),
            attachments,
            subpasses,
            dependencies,
            correlated_view_masks: correlated,
        };
        self.insert_render_pass(handle, state);
        Ok(())
    }

    /// Records the render pass `handle` created with `info` (`vkCreateRenderPass2`). A `pNext`
    /// structure on the create info or any of its elements is refused (the native state holds
    /// none).
    ///
    /// # Safety
    ///
    /// As [`record_render_pass`](Self::record_render_pass), for a `VkRenderPassCreateInfo2`.
    pub unsafe fn record_render_pass2(
        &self,
        handle: vk::RenderPass,
        info: &vk::RenderPassCreateInfo2,
    ) -> Result<(), CreateInfoError> {
        const PARENT: &str = "VkRenderPassCreateInfo2";
        let no_next = |next: *const c_void, parent: &'static str| -> Result<(), CreateInfoError> {
            // SAFETY: the caller's promise: valid chains.
            unsafe { only_next(next, parent, &[]) }.map(|_| ())
        };
        no_next(info.next, PARENT)?;
        // SAFETY: (every slice below) the caller's promise: pointers valid for their counts.
        let attachment_infos = unsafe { slice(info.attachments, info.attachment_count) };
        let mut attachments = Vec::with_capacity(attachment_infos.len());
        for a in attachment_infos {
            no_next(a.next, "VkAttachmentDescription2")?;
            attachments.push(AttachmentDescription {
                flags: a.flags.bits(),
                format: a.format.as_raw() as u32,
                samples: a.samples.bits(),
                load_op: a.load_op.as_raw() as u32,
                store_op: a.store_op.as_raw() as u32,
                stencil_load_op: a.stencil_load_op.as_raw() as u32,
                stencil_store_op: a.stencil_store_op.as_raw() as u32,
                initial_layout: a.initial_layout.as_raw() as u32,
                final_layout: a.final_layout.as_raw() as u32,
            });
        }
        let refs = |p: *const vk::AttachmentReference2, n: u32| -> Result<Vec<AttachmentReference>, CreateInfoError> {
            // SAFETY: as above.
            unsafe { slice(p, n) }
                .iter()
                .map(|r| {
                    no_next(r.next, "VkAttachmentReference2")?;
                    Ok(AttachmentReference {
                        attachment: r.attachment,
                        layout: r.layout.as_raw() as u32,
                        aspect_mask: r.aspect_mask.bits(),
                    })
                })
                .collect()
        };
        // SAFETY: as above.
        let subpass_infos = unsafe { slice(info.subpasses, info.subpass_count) };
        let mut subpasses = Vec::with_capacity(subpass_infos.len());
        for s in subpass_infos {
            no_next(s.next, "VkSubpassDescription2")?;
            subpasses.push(SubpassDescription {
                flags: s.flags.bits(),
                pipeline_bind_point: s.pipeline_bind_point.as_raw() as u32,
                view_mask: s.view_mask,
                input_attachments: refs(s.input_attachments, s.input_attachment_count)?,
                color_attachments: refs(s.color_attachments, s.color_attachment_count)?,
                resolve_attachments: if s.resolve_attachments.is_null() {
                    Vec::new()
                } else {
                    refs(s.resolve_attachments, s.color_attachment_count)?
                },
                depth_stencil_attachment: refs(s.depth_stencil_attachment, 1)?.pop(),
                // SAFETY: as above.
                preserve_attachments: unsafe { slice(s.preserve_attachments, s.preserve_attachment_count) }.to_vec(),
            });
        }
        // SAFETY: as above.
        let dependency_infos = unsafe { slice(info.dependencies, info.dependency_count) };
        let mut dependencies = Vec::with_capacity(dependency_infos.len());
        for d in dependency_infos {
            no_next(d.next, "VkSubpassDependency2")?;
            dependencies.push(SubpassDependency {
                src_subpass: d.src_subpass,
                dst_subpass: d.dst_subpass,
                src_stage_mask: d.src_stage_mask.bits(),
                dst_stage_mask: d.dst_stage_mask.bits(),
                src_access_mask: d.src_access_mask.bits(),
                dst_access_mask: d.dst_access_mask.bits(),
                dependency_flags: d.dependency_flags.bits(),
                view_offset: d.view_offset,
            });
        }
        let state = RenderPassState {
            flags: info.flags.bits(),
            attachments,
            subpasses,
            dependencies,
            // SAFETY: as above.
            correlated_view_masks: unsafe { slice(info.correlated_view_masks, info.correlated_view_mask_count) }
                .to_vec(),
        };
        self.insert_render_pass(handle, state);
        Ok(())
    }

    /// Records the sampler `handle` created with `info` (with a chained
    /// `VkSamplerReductionModeCreateInfo`).
    ///
    /// # Safety
    ///
    /// `info` is a valid `VkSamplerCreateInfo` with a valid chain, readable during the call.
    pub unsafe fn record_sampler(
        &self,
        handle: vk::Sampler,
        info: &vk::SamplerCreateInfo,
    ) -> Result<(), CreateInfoError> {
        const REDUCTION: vk::StructureType = vk::StructureType::SAMPLER_REDUCTION_MODE_CREATE_INFO;
        // SAFETY: the caller's promise: a valid chain.
        let chain = unsafe { only_next(info.next, "VkSamplerCreateInfo", &[REDUCTION])? };
        // SAFETY: the chain's pointers are the structures their sTypes name.
        let reduction: Option<&vk::SamplerReductionModeCreateInfo> = unsafe { find(&chain, REDUCTION) };
        let state = SamplerState {
            flags: info.flags.bits(),
            mag_filter: info.mag_filter.as_raw() as u32,
            min_filter: info.min_filter.as_raw() as u32,
            mipmap_mode: info.mipmap_mode.as_raw() as u32,
            address_mode_u: info.address_mode_u.as_raw() as u32,
            address_mode_v: info.address_mode_v.as_raw() as u32,
            address_mode_w: info.address_mode_w.as_raw() as u32,
            mip_lod_bias: info.mip_lod_bias,
            anisotropy_enable: b(info.anisotropy_enable),
            max_anisotropy: info.max_anisotropy,
            compare_enable: b(info.compare_enable),
            compare_op: info.compare_op.as_raw() as u32,
            min_lod: info.min_lod,
            max_lod: info.max_lod,
            border_color: info.border_color.as_raw() as u32,
            unnormalized_coordinates: b(info.unnormalized_coordinates),
            reduction_mode: reduction.map(|r| r.reduction_mode.as_raw() as u32),
        };
        self.insert_sampler(handle, state);
        Ok(())
    }

    /// Records the descriptor-set layout `handle` created with `info` (with a chained
    /// `VkDescriptorSetLayoutBindingFlagsCreateInfo`); its immutable samplers must have been
    /// recorded ([`record_sampler`](Self::record_sampler)) and are kept by value.
    ///
    /// # Safety
    ///
    /// `info` is a valid `VkDescriptorSetLayoutCreateInfo` with a valid chain, readable
    /// during the call.
    pub unsafe fn record_set_layout(
        &self,
        handle: vk::DescriptorSetLayout,
        info: &vk::DescriptorSetLayoutCreateInfo,
    ) -> Result<(), CreateInfoError> {
        const FLAGS: vk::StructureType = vk::StructureType::DESCRIPTOR_SET_LAYOUT_BINDING_FLAGS_CREATE_INFO;
        // SAFETY: the caller's promise: a valid chain.
        let chain = unsafe { only_next(info.next, "VkDescriptorSetLayoutCreateInfo", &[FLAGS])? };
        // SAFETY: the chain's pointers are the structures their sTypes name.
        let flags: Option<&vk::DescriptorSetLayoutBindingFlagsCreateInfo> = unsafe { find(&chain, FLAGS) };
        // SAFETY: (every slice below) the caller's promise: pointers valid for their counts.
        let binding_flags = flags.map_or(&[][..], |f| unsafe { slice(f.binding_flags, f.binding_count) });
        // SAFETY: as above.
        let binding_infos = unsafe { slice(info.bindings, info.binding_count) };
        let mut bindings = Vec::with_capacity(binding_infos.len());
        for (i, bi) in binding_infos.iter().enumerate() {
            // Vulkan reads pImmutableSamplers only for SAMPLER and COMBINED_IMAGE_SAMPLER.
            let takes_samplers =
                matches!(bi.descriptor_type, vk::DescriptorType::SAMPLER | vk::DescriptorType::COMBINED_IMAGE_SAMPLER);
            let handles = if takes_samplers {
                // SAFETY: as above.
                unsafe { slice(bi.immutable_samplers, bi.descriptor_count) }
            } else {
                &[]
            };
            let immutable_samplers =
                handles.iter().map(|h| self.sampler(*h).map(|s| (*s).clone())).collect::<Result<Vec<_>, _>>()?;
            bindings.push(SetLayoutBinding {
                binding: bi.binding,
                descriptor_type: bi.descriptor_type.as_raw() as u32,
                descriptor_count: bi.descriptor_count,
                stage_flags: bi.stage_flags.bits(),
                immutable_samplers,
                binding_flags: binding_flags.get(i).map_or(0, |f| f.bits()),
            });
        }
        self.insert_set_layout(handle, SetLayout { flags: info.flags.bits(), bindings });
        Ok(())
    }

    /// Records the pipeline layout `handle` created with `info`; its set layouts must have
    /// been recorded ([`record_set_layout`](Self::record_set_layout)) and are kept by value.
    ///
    /// # Safety
    ///
    /// `info` is a valid `VkPipelineLayoutCreateInfo` with a valid chain, readable during the
    /// call.
    pub unsafe fn record_pipeline_layout(
        &self,
        handle: vk::PipelineLayout,
        info: &vk::PipelineLayoutCreateInfo,
    ) -> Result<(), CreateInfoError> {
        // SAFETY: the caller's promise: a valid chain.
        unsafe { only_next(info.next, "VkPipelineLayoutCreateInfo", &[])? };
        // SAFETY: (both slices) the caller's promise: pointers valid for their counts.
        let set_layouts = unsafe { slice(info.set_layouts, info.set_layout_count) }
            .iter()
            .map(|h| self.set_layout(*h).map(|s| (*s).clone()))
            .collect::<Result<Vec<_>, _>>()?;
        // SAFETY: as above.
        let push_constant_ranges = unsafe { slice(info.push_constant_ranges, info.push_constant_range_count) }
            .iter()
            .map(|r| PushConstantRange { stage_flags: r.stage_flags.bits(), offset: r.offset, size: r.size })
            .collect();
        self.insert_pipeline_layout(
            handle,
            NativeLayout { flags: info.flags.bits(), set_layouts, push_constant_ranges },
        );
        Ok(())
    }

    /// Records the shader module `handle` created with `info` (its code's content hash).
    ///
    /// # Safety
    ///
    /// `info` is a valid `VkShaderModuleCreateInfo` (`pCode` points at `codeSize` bytes),
    /// readable during the call.
    pub unsafe fn record_shader_module(
        &self,
        handle: vk::ShaderModule,
        info: &vk::ShaderModuleCreateInfo,
    ) -> Result<(), CreateInfoError> {
        // SAFETY: the caller's promise: `pCode` holds `codeSize` bytes.
        let code = unsafe { module_code(info) }?;
        put(&self.modules, handle.as_raw(), self.module(code));
        Ok(())
    }
}

/// The bytes of a `VkShaderModuleCreateInfo`'s code (also where one is chained to a stage).
///
/// # Safety
///
/// `info.code` points at `info.code_size` readable bytes while the result is used.
pub(super) unsafe fn module_code<'a>(info: &vk::ShaderModuleCreateInfo) -> Result<&'a [u8], CreateInfoError> {
    if info.code.is_null() || info.code_size == 0 || !info.code_size.is_multiple_of(4) {
        return Err(unsupported("VkShaderModuleCreateInfo::codeSize", format!("{} bytes of code", info.code_size)));
    }
    // SAFETY: the caller's promise: `code_size` bytes at a non-null `code`.
    Ok(unsafe { std::slice::from_raw_parts(info.code.cast::<u8>(), info.code_size) })
}
