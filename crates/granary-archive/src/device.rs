//! Devices and the driver binaries an archive holds for them (docs/FORMAT.md §1.10).
//!
//! A Vulkan driver hands back, per pipeline, an ordered list of binaries
//! (`VK_KHR_pipeline_binary`), each a short key and opaque bytes; or, without that extension,
//! only whole-device `VkPipelineCache` data. Both are valid only on a device whose
//! [`DeviceIdentity`] is equal in every field. The archive stores the bytes as ordinary
//! content-addressed blobs (a dictionary binary shared by many pipelines is stored once) and
//! keeps every set exactly as the driver returned it: its order, its flags, never mixed with
//! another set.

use crate::blob::Blob;
use std::sync::Arc;

/// Largest driver binary key (`VK_MAX_PIPELINE_BINARY_KEY_SIZE_KHR`).
pub const MAX_BINARY_KEY: usize = 32;
/// Largest device, driver name or driver info string in an identity (bytes; Vulkan's arrays
/// are 256 bytes including the terminating NUL).
pub const MAX_IDENTITY_STRING: usize = 256;
/// Magic of an encoded [`DeviceIdentity`].
pub const IDENTITY_MAGIC: [u8; 4] = *b"GDEV";
/// Version of the encoded [`DeviceIdentity`] (2: the enabled features follow the five
/// numbers; 3: they are 128 bits).
pub const IDENTITY_VERSION: u32 = 3;

/// The Vulkan features (core 1.0–1.3 and extension features; an extension without a feature
/// structure by its name) a pipeline's state or shaders can need, as a stable bit set:
/// what a device supports, what granary enabled when it opened the device, and what one
/// pipeline requires. The bit numbers are part of the archive format (docs/FORMAT.md §1.10)
/// and never change; new features take new bits.
///
/// Thread safety: plain data (`Copy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceFeatures(pub u128);

impl DeviceFeatures {
    /// `depthBiasClamp`: a non-zero depth-bias clamp.
    pub const DEPTH_BIAS_CLAMP: DeviceFeatures = DeviceFeatures(1 << 0);
    /// `independentBlend`: colour attachments with different blend states or write masks.
    pub const INDEPENDENT_BLEND: DeviceFeatures = DeviceFeatures(1 << 1);
    /// `vertexPipelineStoresAndAtomics`: storage writes in vertex (and tessellation,
    /// geometry) stages.
    pub const VERTEX_PIPELINE_STORES_AND_ATOMICS: DeviceFeatures = DeviceFeatures(1 << 2);
    /// `fragmentStoresAndAtomics`: storage writes in fragment stages.
    pub const FRAGMENT_STORES_AND_ATOMICS: DeviceFeatures = DeviceFeatures(1 << 3);
    /// `sampleRateShading`.
    pub const SAMPLE_RATE_SHADING: DeviceFeatures = DeviceFeatures(1 << 4);
    /// `depthClamp`.
    pub const DEPTH_CLAMP: DeviceFeatures = DeviceFeatures(1 << 5);
    /// `fillModeNonSolid`: line and point polygon modes.
    pub const FILL_MODE_NON_SOLID: DeviceFeatures = DeviceFeatures(1 << 6);
    /// `wideLines`: a line width other than 1.
    pub const WIDE_LINES: DeviceFeatures = DeviceFeatures(1 << 7);
    /// `geometryShader`.
    pub const GEOMETRY_SHADER: DeviceFeatures = DeviceFeatures(1 << 8);
    /// `tessellationShader`.
    pub const TESSELLATION_SHADER: DeviceFeatures = DeviceFeatures(1 << 9);
    /// `dualSrcBlend`.
    pub const DUAL_SRC_BLEND: DeviceFeatures = DeviceFeatures(1 << 10);
    /// `logicOp`.
    pub const LOGIC_OP: DeviceFeatures = DeviceFeatures(1 << 11);
    /// `depthBounds`.
    pub const DEPTH_BOUNDS: DeviceFeatures = DeviceFeatures(1 << 12);
    /// `multiViewport`.
    pub const MULTI_VIEWPORT: DeviceFeatures = DeviceFeatures(1 << 13);
    /// `shaderStorageImageReadWithoutFormat`.
    pub const STORAGE_IMAGE_READ_WITHOUT_FORMAT: DeviceFeatures = DeviceFeatures(1 << 14);
    /// `shaderStorageImageWriteWithoutFormat`.
    pub const STORAGE_IMAGE_WRITE_WITHOUT_FORMAT: DeviceFeatures = DeviceFeatures(1 << 15);
    /// `shaderClipDistance` (SPIR-V `ClipDistance`).
    pub const SHADER_CLIP_DISTANCE: DeviceFeatures = DeviceFeatures(1 << 16);
    /// `shaderCullDistance` (SPIR-V `CullDistance`).
    pub const SHADER_CULL_DISTANCE: DeviceFeatures = DeviceFeatures(1 << 17);
    /// `shaderFloat64` (SPIR-V `Float64`).
    pub const SHADER_FLOAT64: DeviceFeatures = DeviceFeatures(1 << 18);
    /// `shaderInt64` (SPIR-V `Int64`).
    pub const SHADER_INT64: DeviceFeatures = DeviceFeatures(1 << 19);
    /// `shaderInt16` (SPIR-V `Int16`).
    pub const SHADER_INT16: DeviceFeatures = DeviceFeatures(1 << 20);
    /// `imageCubeArray` (SPIR-V `ImageCubeArray`, `SampledCubeArray`).
    pub const IMAGE_CUBE_ARRAY: DeviceFeatures = DeviceFeatures(1 << 21);
    /// `shaderImageGatherExtended` (SPIR-V `ImageGatherExtended`).
    pub const SHADER_IMAGE_GATHER_EXTENDED: DeviceFeatures = DeviceFeatures(1 << 22);
    /// `shaderStorageImageMultisample` (SPIR-V `StorageImageMultisample`, `ImageMSArray`).
    pub const SHADER_STORAGE_IMAGE_MULTISAMPLE: DeviceFeatures = DeviceFeatures(1 << 23);
    /// `shaderStorageImageExtendedFormats` (SPIR-V `StorageImageExtendedFormats`).
    pub const SHADER_STORAGE_IMAGE_EXTENDED_FORMATS: DeviceFeatures = DeviceFeatures(1 << 24);
    /// `shaderResourceMinLod` (SPIR-V `MinLod`).
    pub const SHADER_RESOURCE_MIN_LOD: DeviceFeatures = DeviceFeatures(1 << 25);
    /// Vulkan 1.1 `multiview` (SPIR-V `MultiView`).
    pub const MULTIVIEW: DeviceFeatures = DeviceFeatures(1 << 26);
    /// Vulkan 1.1 `shaderDrawParameters` (SPIR-V `DrawParameters`).
    pub const SHADER_DRAW_PARAMETERS: DeviceFeatures = DeviceFeatures(1 << 27);
    /// `alphaToOne`.
    pub const ALPHA_TO_ONE: DeviceFeatures = DeviceFeatures(1 << 28);
    /// `largePoints`: a point size other than 1 (SPIR-V `PointSize` beyond 1).
    pub const LARGE_POINTS: DeviceFeatures = DeviceFeatures(1 << 29);
    /// `VK_EXT_mesh_shader` `taskShader`: a task stage.
    pub const TASK_SHADER: DeviceFeatures = DeviceFeatures(1 << 30);
    /// `VK_EXT_mesh_shader` `meshShader`: a mesh stage.
    pub const MESH_SHADER: DeviceFeatures = DeviceFeatures(1 << 31);
    /// `VK_KHR_line_rasterization` `rectangularLines`.
    pub const RECTANGULAR_LINES: DeviceFeatures = DeviceFeatures(1 << 32);
    /// `VK_KHR_line_rasterization` `bresenhamLines`.
    pub const BRESENHAM_LINES: DeviceFeatures = DeviceFeatures(1 << 33);
    /// `VK_KHR_line_rasterization` `smoothLines`.
    pub const SMOOTH_LINES: DeviceFeatures = DeviceFeatures(1 << 34);
    /// `VK_KHR_line_rasterization` `stippledRectangularLines`.
    pub const STIPPLED_RECTANGULAR_LINES: DeviceFeatures = DeviceFeatures(1 << 35);
    /// `VK_KHR_line_rasterization` `stippledBresenhamLines`.
    pub const STIPPLED_BRESENHAM_LINES: DeviceFeatures = DeviceFeatures(1 << 36);
    /// `VK_KHR_line_rasterization` `stippledSmoothLines`.
    pub const STIPPLED_SMOOTH_LINES: DeviceFeatures = DeviceFeatures(1 << 37);
    /// `VK_EXT_provoking_vertex` `provokingVertexLast`.
    pub const PROVOKING_VERTEX_LAST: DeviceFeatures = DeviceFeatures(1 << 38);
    /// `VK_EXT_conservative_rasterization` enabled (the extension has no feature structure).
    pub const CONSERVATIVE_RASTERIZATION: DeviceFeatures = DeviceFeatures(1 << 39);
    /// `VK_EXT_depth_clip_enable` `depthClipEnable`.
    pub const DEPTH_CLIP_ENABLE: DeviceFeatures = DeviceFeatures(1 << 40);
    /// `VK_EXT_depth_clip_control` `depthClipControl`.
    pub const DEPTH_CLIP_CONTROL: DeviceFeatures = DeviceFeatures(1 << 41);
    /// `VK_EXT_transform_feedback` `geometryStreams`: a rasterization stream other than 0.
    pub const GEOMETRY_STREAMS: DeviceFeatures = DeviceFeatures(1 << 42);
    /// `VK_EXT_transform_feedback` `transformFeedback`.
    pub const TRANSFORM_FEEDBACK: DeviceFeatures = DeviceFeatures(1 << 43);
    /// `VK_KHR_vertex_attribute_divisor` `vertexAttributeInstanceRateDivisor`.
    pub const VERTEX_ATTRIBUTE_INSTANCE_RATE_DIVISOR: DeviceFeatures = DeviceFeatures(1 << 44);
    /// `VK_KHR_vertex_attribute_divisor` `vertexAttributeInstanceRateZeroDivisor`.
    pub const VERTEX_ATTRIBUTE_INSTANCE_RATE_ZERO_DIVISOR: DeviceFeatures = DeviceFeatures(1 << 45);
    /// `VK_EXT_extended_dynamic_state2` `extendedDynamicState2LogicOp`.
    pub const EXTENDED_DYNAMIC_STATE2_LOGIC_OP: DeviceFeatures = DeviceFeatures(1 << 46);
    /// `VK_EXT_extended_dynamic_state2` `extendedDynamicState2PatchControlPoints`.
    pub const EXTENDED_DYNAMIC_STATE2_PATCH_CONTROL_POINTS: DeviceFeatures = DeviceFeatures(1 << 47);
    /// `VK_EXT_extended_dynamic_state3` enabled with every member of `VkPhysicalDeviceExtendedDynamicState3FeaturesEXT` the device supports (which members those are follows from the device and driver version, also part of the identity).
    pub const EXTENDED_DYNAMIC_STATE3: DeviceFeatures = DeviceFeatures(1 << 48);
    /// `VK_EXT_vertex_input_dynamic_state` `vertexInputDynamicState`.
    pub const VERTEX_INPUT_DYNAMIC_STATE: DeviceFeatures = DeviceFeatures(1 << 49);
    /// Vulkan 1.2 `samplerFilterMinmax`: a sampler reduction mode.
    pub const SAMPLER_FILTER_MINMAX: DeviceFeatures = DeviceFeatures(1 << 50);
    /// Vulkan 1.2 `samplerMirrorClampToEdge`.
    pub const SAMPLER_MIRROR_CLAMP_TO_EDGE: DeviceFeatures = DeviceFeatures(1 << 51);
    /// Vulkan 1.2 `descriptorBindingPartiallyBound`.
    pub const DESCRIPTOR_BINDING_PARTIALLY_BOUND: DeviceFeatures = DeviceFeatures(1 << 52);
    /// Vulkan 1.2 `descriptorBindingVariableDescriptorCount`.
    pub const DESCRIPTOR_BINDING_VARIABLE_DESCRIPTOR_COUNT: DeviceFeatures = DeviceFeatures(1 << 53);
    /// Vulkan 1.2 `descriptorBindingUpdateUnusedWhilePending`.
    pub const DESCRIPTOR_BINDING_UPDATE_UNUSED_WHILE_PENDING: DeviceFeatures = DeviceFeatures(1 << 54);
    /// Vulkan 1.2 `descriptorBindingUniformBufferUpdateAfterBind`.
    pub const DESCRIPTOR_BINDING_UNIFORM_BUFFER_UPDATE_AFTER_BIND: DeviceFeatures = DeviceFeatures(1 << 55);
    /// Vulkan 1.2 `descriptorBindingSampledImageUpdateAfterBind` (samplers and sampled images).
    pub const DESCRIPTOR_BINDING_SAMPLED_IMAGE_UPDATE_AFTER_BIND: DeviceFeatures = DeviceFeatures(1 << 56);
    /// Vulkan 1.2 `descriptorBindingStorageImageUpdateAfterBind`.
    pub const DESCRIPTOR_BINDING_STORAGE_IMAGE_UPDATE_AFTER_BIND: DeviceFeatures = DeviceFeatures(1 << 57);
    /// Vulkan 1.2 `descriptorBindingStorageBufferUpdateAfterBind`.
    pub const DESCRIPTOR_BINDING_STORAGE_BUFFER_UPDATE_AFTER_BIND: DeviceFeatures = DeviceFeatures(1 << 58);
    /// Vulkan 1.2 `descriptorBindingUniformTexelBufferUpdateAfterBind`.
    pub const DESCRIPTOR_BINDING_UNIFORM_TEXEL_BUFFER_UPDATE_AFTER_BIND: DeviceFeatures = DeviceFeatures(1 << 59);
    /// Vulkan 1.2 `descriptorBindingStorageTexelBufferUpdateAfterBind`.
    pub const DESCRIPTOR_BINDING_STORAGE_TEXEL_BUFFER_UPDATE_AFTER_BIND: DeviceFeatures = DeviceFeatures(1 << 60);
    /// Vulkan 1.3 `subgroupSizeControl`: a required subgroup size, varying subgroup sizes.
    pub const SUBGROUP_SIZE_CONTROL: DeviceFeatures = DeviceFeatures(1 << 61);
    /// Vulkan 1.3 `computeFullSubgroups`.
    pub const COMPUTE_FULL_SUBGROUPS: DeviceFeatures = DeviceFeatures(1 << 62);
    /// `samplerAnisotropy`: an immutable sampler with anisotropic filtering.
    pub const SAMPLER_ANISOTROPY: DeviceFeatures = DeviceFeatures(1 << 63);
    /// `shaderResourceResidency`: the `SparseResidency` capability.
    pub const SHADER_RESOURCE_RESIDENCY: DeviceFeatures = DeviceFeatures(1 << 64);
    /// `shaderUniformBufferArrayDynamicIndexing`.
    pub const SHADER_UNIFORM_BUFFER_ARRAY_DYNAMIC_INDEXING: DeviceFeatures = DeviceFeatures(1 << 65);
    /// `shaderSampledImageArrayDynamicIndexing`.
    pub const SHADER_SAMPLED_IMAGE_ARRAY_DYNAMIC_INDEXING: DeviceFeatures = DeviceFeatures(1 << 66);
    /// `shaderStorageBufferArrayDynamicIndexing`.
    pub const SHADER_STORAGE_BUFFER_ARRAY_DYNAMIC_INDEXING: DeviceFeatures = DeviceFeatures(1 << 67);
    /// `shaderStorageImageArrayDynamicIndexing`.
    pub const SHADER_STORAGE_IMAGE_ARRAY_DYNAMIC_INDEXING: DeviceFeatures = DeviceFeatures(1 << 68);
    /// `shaderTessellationAndGeometryPointSize`: `PointSize` written by a tessellation or geometry stage.
    pub const SHADER_TESSELLATION_AND_GEOMETRY_POINT_SIZE: DeviceFeatures = DeviceFeatures(1 << 69);
    /// Vulkan 1.1 `storageBuffer16BitAccess`.
    pub const STORAGE_BUFFER_16BIT_ACCESS: DeviceFeatures = DeviceFeatures(1 << 70);
    /// Vulkan 1.1 `uniformAndStorageBuffer16BitAccess`.
    pub const UNIFORM_AND_STORAGE_BUFFER_16BIT_ACCESS: DeviceFeatures = DeviceFeatures(1 << 71);
    /// Vulkan 1.1 `storagePushConstant16`.
    pub const STORAGE_PUSH_CONSTANT16: DeviceFeatures = DeviceFeatures(1 << 72);
    /// Vulkan 1.1 `storageInputOutput16`.
    pub const STORAGE_INPUT_OUTPUT16: DeviceFeatures = DeviceFeatures(1 << 73);
    /// Vulkan 1.1 `variablePointersStorageBuffer`.
    pub const VARIABLE_POINTERS_STORAGE_BUFFER: DeviceFeatures = DeviceFeatures(1 << 74);
    /// Vulkan 1.1 `variablePointers`.
    pub const VARIABLE_POINTERS: DeviceFeatures = DeviceFeatures(1 << 75);
    /// Vulkan 1.2 `storageBuffer8BitAccess`.
    pub const STORAGE_BUFFER_8BIT_ACCESS: DeviceFeatures = DeviceFeatures(1 << 76);
    /// Vulkan 1.2 `uniformAndStorageBuffer8BitAccess`.
    pub const UNIFORM_AND_STORAGE_BUFFER_8BIT_ACCESS: DeviceFeatures = DeviceFeatures(1 << 77);
    /// Vulkan 1.2 `storagePushConstant8`.
    pub const STORAGE_PUSH_CONSTANT8: DeviceFeatures = DeviceFeatures(1 << 78);
    /// Vulkan 1.2 `shaderBufferInt64Atomics`.
    pub const SHADER_BUFFER_INT64_ATOMICS: DeviceFeatures = DeviceFeatures(1 << 79);
    /// Vulkan 1.2 `shaderSharedInt64Atomics`.
    pub const SHADER_SHARED_INT64_ATOMICS: DeviceFeatures = DeviceFeatures(1 << 80);
    /// Vulkan 1.2 `shaderFloat16`.
    pub const SHADER_FLOAT16: DeviceFeatures = DeviceFeatures(1 << 81);
    /// Vulkan 1.2 `shaderInt8`.
    pub const SHADER_INT8: DeviceFeatures = DeviceFeatures(1 << 82);
    /// Vulkan 1.2 `shaderInputAttachmentArrayDynamicIndexing`.
    pub const SHADER_INPUT_ATTACHMENT_ARRAY_DYNAMIC_INDEXING: DeviceFeatures = DeviceFeatures(1 << 83);
    /// Vulkan 1.2 `shaderUniformTexelBufferArrayDynamicIndexing`.
    pub const SHADER_UNIFORM_TEXEL_BUFFER_ARRAY_DYNAMIC_INDEXING: DeviceFeatures = DeviceFeatures(1 << 84);
    /// Vulkan 1.2 `shaderStorageTexelBufferArrayDynamicIndexing`.
    pub const SHADER_STORAGE_TEXEL_BUFFER_ARRAY_DYNAMIC_INDEXING: DeviceFeatures = DeviceFeatures(1 << 85);
    /// Vulkan 1.2 `shaderUniformBufferArrayNonUniformIndexing`.
    pub const SHADER_UNIFORM_BUFFER_ARRAY_NON_UNIFORM_INDEXING: DeviceFeatures = DeviceFeatures(1 << 86);
    /// Vulkan 1.2 `shaderSampledImageArrayNonUniformIndexing`.
    pub const SHADER_SAMPLED_IMAGE_ARRAY_NON_UNIFORM_INDEXING: DeviceFeatures = DeviceFeatures(1 << 87);
    /// Vulkan 1.2 `shaderStorageBufferArrayNonUniformIndexing`.
    pub const SHADER_STORAGE_BUFFER_ARRAY_NON_UNIFORM_INDEXING: DeviceFeatures = DeviceFeatures(1 << 88);
    /// Vulkan 1.2 `shaderStorageImageArrayNonUniformIndexing`.
    pub const SHADER_STORAGE_IMAGE_ARRAY_NON_UNIFORM_INDEXING: DeviceFeatures = DeviceFeatures(1 << 89);
    /// Vulkan 1.2 `shaderInputAttachmentArrayNonUniformIndexing`.
    pub const SHADER_INPUT_ATTACHMENT_ARRAY_NON_UNIFORM_INDEXING: DeviceFeatures = DeviceFeatures(1 << 90);
    /// Vulkan 1.2 `shaderUniformTexelBufferArrayNonUniformIndexing`.
    pub const SHADER_UNIFORM_TEXEL_BUFFER_ARRAY_NON_UNIFORM_INDEXING: DeviceFeatures = DeviceFeatures(1 << 91);
    /// Vulkan 1.2 `shaderStorageTexelBufferArrayNonUniformIndexing`.
    pub const SHADER_STORAGE_TEXEL_BUFFER_ARRAY_NON_UNIFORM_INDEXING: DeviceFeatures = DeviceFeatures(1 << 92);
    /// Vulkan 1.2 `runtimeDescriptorArray`: the `RuntimeDescriptorArray` capability.
    pub const RUNTIME_DESCRIPTOR_ARRAY: DeviceFeatures = DeviceFeatures(1 << 93);
    /// Vulkan 1.2 `bufferDeviceAddress`: the `PhysicalStorageBufferAddresses` capability.
    pub const BUFFER_DEVICE_ADDRESS: DeviceFeatures = DeviceFeatures(1 << 94);
    /// Vulkan 1.2 `vulkanMemoryModel`.
    pub const VULKAN_MEMORY_MODEL: DeviceFeatures = DeviceFeatures(1 << 95);
    /// Vulkan 1.2 `vulkanMemoryModelDeviceScope`.
    pub const VULKAN_MEMORY_MODEL_DEVICE_SCOPE: DeviceFeatures = DeviceFeatures(1 << 96);
    /// Vulkan 1.2 `shaderOutputViewportIndex`.
    pub const SHADER_OUTPUT_VIEWPORT_INDEX: DeviceFeatures = DeviceFeatures(1 << 97);
    /// Vulkan 1.2 `shaderOutputLayer`.
    pub const SHADER_OUTPUT_LAYER: DeviceFeatures = DeviceFeatures(1 << 98);
    /// Vulkan 1.3 `shaderDemoteToHelperInvocation`.
    pub const SHADER_DEMOTE_TO_HELPER_INVOCATION: DeviceFeatures = DeviceFeatures(1 << 99);
    /// Vulkan 1.3 `shaderTerminateInvocation`.
    pub const SHADER_TERMINATE_INVOCATION: DeviceFeatures = DeviceFeatures(1 << 100);
    /// Vulkan 1.3 `shaderIntegerDotProduct`.
    pub const SHADER_INTEGER_DOT_PRODUCT: DeviceFeatures = DeviceFeatures(1 << 101);
    /// Vulkan 1.3 `inlineUniformBlock`: inline uniform block bindings in a set layout.
    pub const INLINE_UNIFORM_BLOCK: DeviceFeatures = DeviceFeatures(1 << 102);
    /// Vulkan 1.3 `pipelineCreationCacheControl`: the `FAIL_ON_PIPELINE_COMPILE_REQUIRED` and `EARLY_RETURN_ON_FAILURE` create flags.
    pub const PIPELINE_CREATION_CACHE_CONTROL: DeviceFeatures = DeviceFeatures(1 << 103);
    /// `VK_KHR_fragment_shader_barycentric` `fragmentShaderBarycentric`.
    pub const FRAGMENT_SHADER_BARYCENTRIC: DeviceFeatures = DeviceFeatures(1 << 104);
    /// `VK_KHR_fragment_shading_rate` `pipelineFragmentShadingRate`.
    pub const PIPELINE_FRAGMENT_SHADING_RATE: DeviceFeatures = DeviceFeatures(1 << 105);
    /// `VK_KHR_fragment_shading_rate` `primitiveFragmentShadingRate`.
    pub const PRIMITIVE_FRAGMENT_SHADING_RATE: DeviceFeatures = DeviceFeatures(1 << 106);
    /// `VK_KHR_fragment_shading_rate` `attachmentFragmentShadingRate`.
    pub const ATTACHMENT_FRAGMENT_SHADING_RATE: DeviceFeatures = DeviceFeatures(1 << 107);
    /// `VK_EXT_fragment_shader_interlock` `fragmentShaderSampleInterlock`.
    pub const FRAGMENT_SHADER_SAMPLE_INTERLOCK: DeviceFeatures = DeviceFeatures(1 << 108);
    /// `VK_EXT_fragment_shader_interlock` `fragmentShaderPixelInterlock`.
    pub const FRAGMENT_SHADER_PIXEL_INTERLOCK: DeviceFeatures = DeviceFeatures(1 << 109);
    /// `VK_EXT_fragment_shader_interlock` `fragmentShaderShadingRateInterlock`.
    pub const FRAGMENT_SHADER_SHADING_RATE_INTERLOCK: DeviceFeatures = DeviceFeatures(1 << 110);
    /// `VK_EXT_shader_image_atomic_int64` `shaderImageInt64Atomics`.
    pub const SHADER_IMAGE_INT64_ATOMICS: DeviceFeatures = DeviceFeatures(1 << 111);
    /// `VK_KHR_ray_tracing_pipeline` `rayTracingPipeline`.
    pub const RAY_TRACING_PIPELINE: DeviceFeatures = DeviceFeatures(1 << 112);
    /// `VK_KHR_ray_tracing_pipeline` `rayTraversalPrimitiveCulling`.
    pub const RAY_TRAVERSAL_PRIMITIVE_CULLING: DeviceFeatures = DeviceFeatures(1 << 113);
    /// `VK_KHR_acceleration_structure` `accelerationStructure`: acceleration-structure bindings.
    pub const ACCELERATION_STRUCTURE: DeviceFeatures = DeviceFeatures(1 << 114);
    /// `VK_KHR_ray_query` `rayQuery`.
    pub const RAY_QUERY: DeviceFeatures = DeviceFeatures(1 << 115);
    /// `VK_EXT_shader_stencil_export` (no feature structure): the `StencilExportEXT` capability.
    pub const SHADER_STENCIL_EXPORT: DeviceFeatures = DeviceFeatures(1 << 116);
    /// `VK_GOOGLE_hlsl_functionality1` (no feature structure): DXC's `SPV_GOOGLE_hlsl_functionality1` decorations.
    pub const HLSL_FUNCTIONALITY1: DeviceFeatures = DeviceFeatures(1 << 117);
    /// `VK_GOOGLE_user_type` (no feature structure): DXC's `SPV_GOOGLE_user_type` decorations.
    pub const USER_TYPE: DeviceFeatures = DeviceFeatures(1 << 118);
    /// `VK_EXT_post_depth_coverage` (no feature structure): the `SampleMaskPostDepthCoverage` capability.
    pub const POST_DEPTH_COVERAGE: DeviceFeatures = DeviceFeatures(1 << 119);

    /// Every feature this format knows, with its Vulkan name, in bit order.
    pub const ALL: [(DeviceFeatures, &'static str); 120] = [
        (Self::DEPTH_BIAS_CLAMP, "depthBiasClamp"),
        (Self::INDEPENDENT_BLEND, "independentBlend"),
        (Self::VERTEX_PIPELINE_STORES_AND_ATOMICS, "vertexPipelineStoresAndAtomics"),
        (Self::FRAGMENT_STORES_AND_ATOMICS, "fragmentStoresAndAtomics"),
        (Self::SAMPLE_RATE_SHADING, "sampleRateShading"),
        (Self::DEPTH_CLAMP, "depthClamp"),
        (Self::FILL_MODE_NON_SOLID, "fillModeNonSolid"),
        (Self::WIDE_LINES, "wideLines"),
        (Self::GEOMETRY_SHADER, "geometryShader"),
        (Self::TESSELLATION_SHADER, "tessellationShader"),
        (Self::DUAL_SRC_BLEND, "dualSrcBlend"),
        (Self::LOGIC_OP, "logicOp"),
        (Self::DEPTH_BOUNDS, "depthBounds"),
        (Self::MULTI_VIEWPORT, "multiViewport"),
        (Self::STORAGE_IMAGE_READ_WITHOUT_FORMAT, "shaderStorageImageReadWithoutFormat"),
        (Self::STORAGE_IMAGE_WRITE_WITHOUT_FORMAT, "shaderStorageImageWriteWithoutFormat"),
        (Self::SHADER_CLIP_DISTANCE, "shaderClipDistance"),
        (Self::SHADER_CULL_DISTANCE, "shaderCullDistance"),
        (Self::SHADER_FLOAT64, "shaderFloat64"),
        (Self::SHADER_INT64, "shaderInt64"),
        (Self::SHADER_INT16, "shaderInt16"),
        (Self::IMAGE_CUBE_ARRAY, "imageCubeArray"),
        (Self::SHADER_IMAGE_GATHER_EXTENDED, "shaderImageGatherExtended"),
        (Self::SHADER_STORAGE_IMAGE_MULTISAMPLE, "shaderStorageImageMultisample"),
        (Self::SHADER_STORAGE_IMAGE_EXTENDED_FORMATS, "shaderStorageImageExtendedFormats"),
        (Self::SHADER_RESOURCE_MIN_LOD, "shaderResourceMinLod"),
        (Self::MULTIVIEW, "multiview"),
        (Self::SHADER_DRAW_PARAMETERS, "shaderDrawParameters"),
        (Self::ALPHA_TO_ONE, "alphaToOne"),
        (Self::LARGE_POINTS, "largePoints"),
        (Self::TASK_SHADER, "taskShader"),
        (Self::MESH_SHADER, "meshShader"),
        (Self::RECTANGULAR_LINES, "rectangularLines"),
        (Self::BRESENHAM_LINES, "bresenhamLines"),
        (Self::SMOOTH_LINES, "smoothLines"),
        (Self::STIPPLED_RECTANGULAR_LINES, "stippledRectangularLines"),
        (Self::STIPPLED_BRESENHAM_LINES, "stippledBresenhamLines"),
        (Self::STIPPLED_SMOOTH_LINES, "stippledSmoothLines"),
        (Self::PROVOKING_VERTEX_LAST, "provokingVertexLast"),
        (Self::CONSERVATIVE_RASTERIZATION, "VK_EXT_conservative_rasterization"),
        (Self::DEPTH_CLIP_ENABLE, "depthClipEnable"),
        (Self::DEPTH_CLIP_CONTROL, "depthClipControl"),
        (Self::GEOMETRY_STREAMS, "geometryStreams"),
        (Self::TRANSFORM_FEEDBACK, "transformFeedback"),
        (Self::VERTEX_ATTRIBUTE_INSTANCE_RATE_DIVISOR, "vertexAttributeInstanceRateDivisor"),
        (Self::VERTEX_ATTRIBUTE_INSTANCE_RATE_ZERO_DIVISOR, "vertexAttributeInstanceRateZeroDivisor"),
        (Self::EXTENDED_DYNAMIC_STATE2_LOGIC_OP, "extendedDynamicState2LogicOp"),
        (Self::EXTENDED_DYNAMIC_STATE2_PATCH_CONTROL_POINTS, "extendedDynamicState2PatchControlPoints"),
        (Self::EXTENDED_DYNAMIC_STATE3, "VK_EXT_extended_dynamic_state3"),
        (Self::VERTEX_INPUT_DYNAMIC_STATE, "vertexInputDynamicState"),
        (Self::SAMPLER_FILTER_MINMAX, "samplerFilterMinmax"),
        (Self::SAMPLER_MIRROR_CLAMP_TO_EDGE, "samplerMirrorClampToEdge"),
        (Self::DESCRIPTOR_BINDING_PARTIALLY_BOUND, "descriptorBindingPartiallyBound"),
        (Self::DESCRIPTOR_BINDING_VARIABLE_DESCRIPTOR_COUNT, "descriptorBindingVariableDescriptorCount"),
        (Self::DESCRIPTOR_BINDING_UPDATE_UNUSED_WHILE_PENDING, "descriptorBindingUpdateUnusedWhilePending"),
        (Self::DESCRIPTOR_BINDING_UNIFORM_BUFFER_UPDATE_AFTER_BIND, "descriptorBindingUniformBufferUpdateAfterBind"),
        (Self::DESCRIPTOR_BINDING_SAMPLED_IMAGE_UPDATE_AFTER_BIND, "descriptorBindingSampledImageUpdateAfterBind"),
        (Self::DESCRIPTOR_BINDING_STORAGE_IMAGE_UPDATE_AFTER_BIND, "descriptorBindingStorageImageUpdateAfterBind"),
        (Self::DESCRIPTOR_BINDING_STORAGE_BUFFER_UPDATE_AFTER_BIND, "descriptorBindingStorageBufferUpdateAfterBind"),
        (
            Self::DESCRIPTOR_BINDING_UNIFORM_TEXEL_BUFFER_UPDATE_AFTER_BIND,
            "descriptorBindingUniformTexelBufferUpdateAfterBind",
        ),
        (
            Self::DESCRIPTOR_BINDING_STORAGE_TEXEL_BUFFER_UPDATE_AFTER_BIND,
            "descriptorBindingStorageTexelBufferUpdateAfterBind",
        ),
        (Self::SUBGROUP_SIZE_CONTROL, "subgroupSizeControl"),
        (Self::COMPUTE_FULL_SUBGROUPS, "computeFullSubgroups"),
        (Self::SAMPLER_ANISOTROPY, "samplerAnisotropy"),
        (Self::SHADER_RESOURCE_RESIDENCY, "shaderResourceResidency"),
        (Self::SHADER_UNIFORM_BUFFER_ARRAY_DYNAMIC_INDEXING, "shaderUniformBufferArrayDynamicIndexing"),
        (Self::SHADER_SAMPLED_IMAGE_ARRAY_DYNAMIC_INDEXING, "shaderSampledImageArrayDynamicIndexing"),
        (Self::SHADER_STORAGE_BUFFER_ARRAY_DYNAMIC_INDEXING, "shaderStorageBufferArrayDynamicIndexing"),
        (Self::SHADER_STORAGE_IMAGE_ARRAY_DYNAMIC_INDEXING, "shaderStorageImageArrayDynamicIndexing"),
        (Self::SHADER_TESSELLATION_AND_GEOMETRY_POINT_SIZE, "shaderTessellationAndGeometryPointSize"),
        (Self::STORAGE_BUFFER_16BIT_ACCESS, "storageBuffer16BitAccess"),
        (Self::UNIFORM_AND_STORAGE_BUFFER_16BIT_ACCESS, "uniformAndStorageBuffer16BitAccess"),
        (Self::STORAGE_PUSH_CONSTANT16, "storagePushConstant16"),
        (Self::STORAGE_INPUT_OUTPUT16, "storageInputOutput16"),
        (Self::VARIABLE_POINTERS_STORAGE_BUFFER, "variablePointersStorageBuffer"),
        (Self::VARIABLE_POINTERS, "variablePointers"),
        (Self::STORAGE_BUFFER_8BIT_ACCESS, "storageBuffer8BitAccess"),
        (Self::UNIFORM_AND_STORAGE_BUFFER_8BIT_ACCESS, "uniformAndStorageBuffer8BitAccess"),
        (Self::STORAGE_PUSH_CONSTANT8, "storagePushConstant8"),
        (Self::SHADER_BUFFER_INT64_ATOMICS, "shaderBufferInt64Atomics"),
        (Self::SHADER_SHARED_INT64_ATOMICS, "shaderSharedInt64Atomics"),
        (Self::SHADER_FLOAT16, "shaderFloat16"),
        (Self::SHADER_INT8, "shaderInt8"),
        (Self::SHADER_INPUT_ATTACHMENT_ARRAY_DYNAMIC_INDEXING, "shaderInputAttachmentArrayDynamicIndexing"),
        (Self::SHADER_UNIFORM_TEXEL_BUFFER_ARRAY_DYNAMIC_INDEXING, "shaderUniformTexelBufferArrayDynamicIndexing"),
        (Self::SHADER_STORAGE_TEXEL_BUFFER_ARRAY_DYNAMIC_INDEXING, "shaderStorageTexelBufferArrayDynamicIndexing"),
        (Self::SHADER_UNIFORM_BUFFER_ARRAY_NON_UNIFORM_INDEXING, "shaderUniformBufferArrayNonUniformIndexing"),
        (Self::SHADER_SAMPLED_IMAGE_ARRAY_NON_UNIFORM_INDEXING, "shaderSampledImageArrayNonUniformIndexing"),
        (Self::SHADER_STORAGE_BUFFER_ARRAY_NON_UNIFORM_INDEXING, "shaderStorageBufferArrayNonUniformIndexing"),
        (Self::SHADER_STORAGE_IMAGE_ARRAY_NON_UNIFORM_INDEXING, "shaderStorageImageArrayNonUniformIndexing"),
        (Self::SHADER_INPUT_ATTACHMENT_ARRAY_NON_UNIFORM_INDEXING, "shaderInputAttachmentArrayNonUniformIndexing"),
        (
            Self::SHADER_UNIFORM_TEXEL_BUFFER_ARRAY_NON_UNIFORM_INDEXING,
            "shaderUniformTexelBufferArrayNonUniformIndexing",
        ),
        (
            Self::SHADER_STORAGE_TEXEL_BUFFER_ARRAY_NON_UNIFORM_INDEXING,
            "shaderStorageTexelBufferArrayNonUniformIndexing",
        ),
        (Self::RUNTIME_DESCRIPTOR_ARRAY, "runtimeDescriptorArray"),
        (Self::BUFFER_DEVICE_ADDRESS, "bufferDeviceAddress"),
        (Self::VULKAN_MEMORY_MODEL, "vulkanMemoryModel"),
        (Self::VULKAN_MEMORY_MODEL_DEVICE_SCOPE, "vulkanMemoryModelDeviceScope"),
        (Self::SHADER_OUTPUT_VIEWPORT_INDEX, "shaderOutputViewportIndex"),
        (Self::SHADER_OUTPUT_LAYER, "shaderOutputLayer"),
        (Self::SHADER_DEMOTE_TO_HELPER_INVOCATION, "shaderDemoteToHelperInvocation"),
        (Self::SHADER_TERMINATE_INVOCATION, "shaderTerminateInvocation"),
        (Self::SHADER_INTEGER_DOT_PRODUCT, "shaderIntegerDotProduct"),
        (Self::INLINE_UNIFORM_BLOCK, "inlineUniformBlock"),
        (Self::PIPELINE_CREATION_CACHE_CONTROL, "pipelineCreationCacheControl"),
        (Self::FRAGMENT_SHADER_BARYCENTRIC, "fragmentShaderBarycentric"),
        (Self::PIPELINE_FRAGMENT_SHADING_RATE, "pipelineFragmentShadingRate"),
        (Self::PRIMITIVE_FRAGMENT_SHADING_RATE, "primitiveFragmentShadingRate"),
        (Self::ATTACHMENT_FRAGMENT_SHADING_RATE, "attachmentFragmentShadingRate"),
        (Self::FRAGMENT_SHADER_SAMPLE_INTERLOCK, "fragmentShaderSampleInterlock"),
        (Self::FRAGMENT_SHADER_PIXEL_INTERLOCK, "fragmentShaderPixelInterlock"),
        (Self::FRAGMENT_SHADER_SHADING_RATE_INTERLOCK, "fragmentShaderShadingRateInterlock"),
        (Self::SHADER_IMAGE_INT64_ATOMICS, "shaderImageInt64Atomics"),
        (Self::RAY_TRACING_PIPELINE, "rayTracingPipeline"),
        (Self::RAY_TRAVERSAL_PRIMITIVE_CULLING, "rayTraversalPrimitiveCulling"),
        (Self::ACCELERATION_STRUCTURE, "accelerationStructure"),
        (Self::RAY_QUERY, "rayQuery"),
        (Self::SHADER_STENCIL_EXPORT, "VK_EXT_shader_stencil_export"),
        (Self::HLSL_FUNCTIONALITY1, "VK_GOOGLE_hlsl_functionality1"),
        (Self::USER_TYPE, "VK_GOOGLE_user_type"),
        (Self::POST_DEPTH_COVERAGE, "VK_EXT_post_depth_coverage"),
    ];
    /// Every bit this format knows.
    pub const KNOWN: DeviceFeatures = DeviceFeatures(u128::MAX >> (128 - Self::ALL.len()));
    /// No feature.
    pub const NONE: DeviceFeatures = DeviceFeatures(0);

    /// Whether every feature of `other` is in `self`.
    pub fn contains(self, other: DeviceFeatures) -> bool {
        self.0 & other.0 == other.0
    }
    /// The features in either.
    pub fn union(self, other: DeviceFeatures) -> DeviceFeatures {
        DeviceFeatures(self.0 | other.0)
    }
    /// The features in both.
    pub fn intersection(self, other: DeviceFeatures) -> DeviceFeatures {
        DeviceFeatures(self.0 & other.0)
    }
    /// The features of `self` not in `other`.
    pub fn difference(self, other: DeviceFeatures) -> DeviceFeatures {
        DeviceFeatures(self.0 & !other.0)
    }
    /// Whether no feature is set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The Vulkan names of the features set, in bit order (unknown bits as `bit N`).
    pub fn names(self) -> Vec<String> {
        let mut out: Vec<String> =
            Self::ALL.iter().filter(|(f, _)| self.contains(*f)).map(|(_, n)| (*n).to_string()).collect();
        for bit in Self::ALL.len()..128 {
            if self.0 & (1 << bit) != 0 {
                out.push(format!("bit {bit}"));
            }
        }
        out
    }
}

impl std::fmt::Display for DeviceFeatures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        f.write_str(&self.names().join(", "))
    }
}

/// Identity deciding whether driver binaries are valid on a device. Binaries are valid only on
/// a device whose identity is equal in every field.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceIdentity {
    /// `VkPhysicalDeviceProperties::vendorID`.
    pub vendor_id: u32,
    /// `VkPhysicalDeviceProperties::deviceID`.
    pub device_id: u32,
    /// `VkPhysicalDeviceDriverProperties::driverID`.
    pub driver_id: u32,
    /// `VkPhysicalDeviceProperties::driverVersion`.
    pub driver_version: u32,
    /// `VkPhysicalDeviceProperties::apiVersion`.
    pub api_version: u32,
    /// The core features enabled on the logical device the binaries were created on (of the
    /// ones granary knows, [`DeviceFeatures::KNOWN`]): a binary is used only on a device with
    /// exactly these enabled.
    pub features: DeviceFeatures,
    /// `VkPhysicalDeviceProperties::pipelineCacheUUID`.
    pub pipeline_cache_uuid: [u8; 16],
    /// The driver's global pipeline-binary key (`vkGetPipelineKeyKHR` without a create info);
    /// empty when the device has no `VK_KHR_pipeline_binary`, else 1..=32 bytes.
    pub binary_global_key: Vec<u8>,
    /// `VkPhysicalDeviceProperties::deviceName`.
    pub device_name: String,
    /// `VkPhysicalDeviceDriverProperties::driverName`.
    pub driver_name: String,
    /// `VkPhysicalDeviceDriverProperties::driverInfo`.
    pub driver_info: String,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl DeviceIdentity {
    /// The canonical bytes: magic `GDEV`, version u32 (3), the five u32 fields, the enabled
    /// features u128, the 16 UUID bytes, then the binary key, device name, driver name and driver info, each as a u32
    /// length followed by its bytes. All integers little-endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Vec::with_capacity(64 + self.binary_global_key.len() + self.device_name.len() + 64);
        o.extend_from_slice(&IDENTITY_MAGIC);
        o.extend_from_slice(&IDENTITY_VERSION.to_le_bytes());
        for v in [self.vendor_id, self.device_id, self.driver_id, self.driver_version, self.api_version] {
            o.extend_from_slice(&v.to_le_bytes());
        }
        o.extend_from_slice(&self.features.0.to_le_bytes());
        o.extend_from_slice(&self.pipeline_cache_uuid);
        for s in [
            self.binary_global_key.as_slice(),
            self.device_name.as_bytes(),
            self.driver_name.as_bytes(),
            self.driver_info.as_bytes(),
        ] {
            o.extend_from_slice(&(s.len() as u32).to_le_bytes());
            o.extend_from_slice(s);
        }
        o
    }

    /// Parses bytes written by [`encode`](Self::encode). Strict: wrong magic or version, a
    /// binary key over 32 bytes, a string over 256 bytes or not UTF-8, bytes cut short or
    /// trailing bytes are refused.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8], String> {
            let s = at
                .checked_add(n)
                .and_then(|end| bytes.get(at..end))
                .ok_or_else(|| format!("device identity cut short at byte {at}"))?;
            at += n;
            Ok(s)
        };
        let u32_of = |s: &[u8]| u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
        if take(4)? != IDENTITY_MAGIC {
            return Err("device identity: bad magic".into());
        }
        let version = u32_of(take(4)?);
        if version != IDENTITY_VERSION {
            return Err(format!(
                "device identity version {version} is not supported (this granary reads {IDENTITY_VERSION})"
            ));
        }
        let mut v = [0u32; 5];
        for x in &mut v {
            *x = u32_of(take(4)?);
        }
        let mut f = [0u8; 16];
        f.copy_from_slice(take(16)?);
        let features = DeviceFeatures(u128::from_le_bytes(f));
        if !DeviceFeatures::KNOWN.contains(features) {
            return Err(format!(
                "device identity: unknown feature bits {:#x}",
                features.difference(DeviceFeatures::KNOWN).0
            ));
        }
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(take(16)?);
        let mut field = |name: &str, cap: usize| -> Result<Vec<u8>, String> {
            let len = u32_of(take(4)?) as usize;
            if len > cap {
                return Err(format!("device identity: {name} is {len} bytes (at most {cap})"));
            }
            Ok(take(len)?.to_vec())
        };
        let key = field("binary key", MAX_BINARY_KEY)?;
        let mut text = |name: &str| -> Result<String, String> {
            String::from_utf8(field(name, MAX_IDENTITY_STRING)?)
                .map_err(|_| format!("device identity: {name} is not UTF-8"))
        };
        let device_name = text("device name")?;
        let driver_name = text("driver name")?;
        let driver_info = text("driver info")?;
        if at != bytes.len() {
            return Err(format!("device identity: {} trailing bytes", bytes.len() - at));
        }
        Ok(DeviceIdentity {
            vendor_id: v[0],
            device_id: v[1],
            driver_id: v[2],
            driver_version: v[3],
            api_version: v[4],
            features,
            pipeline_cache_uuid: uuid,
            binary_global_key: key,
            device_name,
            driver_name,
            driver_info,
        })
    }

    /// The identity's content hash (XXH3-128 of [`encode`](Self::encode)); device sections
    /// are sorted by it.
    pub fn id(&self) -> u128 {
        crate::key::content_hash(&self.encode()).0
    }

    /// One line for people: name, vendor and device ids, driver, cache UUID and binary key.
    pub fn describe(&self) -> String {
        format!(
            "{} (vendor {:#06x}, device {:#06x}), {} {} (driver id {}, version {:#x}), cache UUID {}, binary key {}",
            self.device_name,
            self.vendor_id,
            self.device_id,
            self.driver_name,
            self.driver_info,
            self.driver_id,
            self.driver_version,
            hex(&self.pipeline_cache_uuid),
            if self.binary_global_key.is_empty() { "none".to_string() } else { hex(&self.binary_global_key) }
        )
    }

    /// `None` when the identities are equal; else every differing field with both values
    /// (`"driver_version 0x1 vs 0x2; device_name 'a' vs 'b'"`).
    pub fn mismatch(&self, other: &DeviceIdentity) -> Option<String> {
        let mut d = Vec::new();
        let nums = [
            ("vendor_id", self.vendor_id, other.vendor_id),
            ("device_id", self.device_id, other.device_id),
            ("driver_id", self.driver_id, other.driver_id),
            ("driver_version", self.driver_version, other.driver_version),
            ("api_version", self.api_version, other.api_version),
        ];
        for (name, a, b) in nums {
            if a != b {
                d.push(format!("{name} {a:#x} vs {b:#x}"));
            }
        }
        if self.features != other.features {
            let (more, less) = (self.features.difference(other.features), other.features.difference(self.features));
            let mut what = Vec::new();
            if !more.is_empty() {
                what.push(format!("{more} only in the first"));
            }
            if !less.is_empty() {
                what.push(format!("{less} only in the second"));
            }
            d.push(format!("enabled features {} vs {} ({})", self.features, other.features, what.join("; ")));
        }
        if self.pipeline_cache_uuid != other.pipeline_cache_uuid {
            d.push(format!(
                "pipeline_cache_uuid {} vs {}",
                hex(&self.pipeline_cache_uuid),
                hex(&other.pipeline_cache_uuid)
            ));
        }
        if self.binary_global_key != other.binary_global_key {
            let k = |k: &[u8]| if k.is_empty() { "none".to_string() } else { hex(k) };
            d.push(format!("binary_global_key {} vs {}", k(&self.binary_global_key), k(&other.binary_global_key)));
        }
        for (name, a, b) in [
            ("device_name", &self.device_name, &other.device_name),
            ("driver_name", &self.driver_name, &other.driver_name),
            ("driver_info", &self.driver_info, &other.driver_info),
        ] {
            if a != b {
                d.push(format!("{name} '{a}' vs '{b}'"));
            }
        }
        (!d.is_empty()).then(|| d.join("; "))
    }
}

/// The set is a graphics pipeline library (vertex input + pre-rasterization + fragment
/// shader); the caller links a fragment-output library at run time.
pub const BINARY_SET_LIBRARY: u32 = 1;
/// The set records its pipeline key (`vkGetPipelineKeyKHR` of the create info it was
/// captured with) in the first binary record of its range (docs/FORMAT.md §1.10). Set by the
/// writer when [`BinarySet::pipeline_key`] is not empty; readers report the key apart from the
/// binaries and never return this bit in [`BinarySet::flags`].
pub const BINARY_SET_KEYED: u32 = 2;
/// Every device-pipeline record flag bit this format knows.
pub const BINARY_SET_FLAGS: u32 = BINARY_SET_LIBRARY | BINARY_SET_KEYED;
/// Most binaries one set may hold.
pub const MAX_BINARIES_PER_SET: usize = 64;

/// A set of driver binaries of one pipeline on one device, exactly as the driver returned
/// them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BinarySet {
    /// [`BINARY_SET_LIBRARY`] or 0.
    pub flags: u32,
    /// The driver's pipeline key for the create info the set was captured with
    /// (`vkGetPipelineKeyKHR`, 1..=32 bytes); empty where the device has no pipeline binaries
    /// or the key was not recorded. A loader uses the binaries only when the key of its own
    /// create info equals it.
    pub pipeline_key: Vec<u8>,
    /// The binaries, in the driver's order. Empty: the pipeline was compiled on the device
    /// but its binaries live only in the device's `VkPipelineCache` data.
    pub binaries: Vec<DeviceBinary>,
}

/// One driver binary: its key and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceBinary {
    /// The driver's key (1..=32 bytes).
    pub key: Vec<u8>,
    /// The driver's bytes.
    pub data: Arc<Blob>,
}

impl BinarySet {
    /// XXH3-128 of the canonical description (flags u32, count u32, then per binary its key
    /// length u32, key bytes and the content hash of its bytes, then — for a set with a
    /// pipeline key — the key's length u32 and bytes): the deterministic tie-break between two
    /// sets for one pipeline and device (the smaller wins).
    pub fn hash(&self) -> u128 {
        let mut b = Vec::with_capacity(8 + self.binaries.len() * (4 + MAX_BINARY_KEY + 16) + 36);
        b.extend_from_slice(&self.flags.to_le_bytes());
        b.extend_from_slice(&(self.binaries.len() as u32).to_le_bytes());
        for x in &self.binaries {
            b.extend_from_slice(&(x.key.len() as u32).to_le_bytes());
            b.extend_from_slice(&x.key);
            b.extend_from_slice(&x.data.hash().0.to_le_bytes());
        }
        if !self.pipeline_key.is_empty() {
            b.extend_from_slice(&(self.pipeline_key.len() as u32).to_le_bytes());
            b.extend_from_slice(&self.pipeline_key);
        }
        crate::key::content_hash(&b).0
    }

    /// Why the writer cannot store this set, if it cannot: unknown flags, more than
    /// `MAX_BINARIES_PER_SET` (64) binaries, a key empty or over 32 bytes.
    pub fn check(&self) -> Result<(), String> {
        if self.flags & !BINARY_SET_LIBRARY != 0 {
            return Err(format!("unknown binary set flags {:#x}", self.flags));
        }
        if self.binaries.len() > MAX_BINARIES_PER_SET {
            return Err(format!("{} binaries in one set (at most {MAX_BINARIES_PER_SET})", self.binaries.len()));
        }
        if let Some(b) = self.binaries.iter().find(|b| b.key.is_empty() || b.key.len() > MAX_BINARY_KEY) {
            return Err(format!("binary key of {} bytes (1..={MAX_BINARY_KEY})", b.key.len()));
        }
        if self.pipeline_key.len() > MAX_BINARY_KEY {
            return Err(format!("pipeline key of {} bytes (at most {MAX_BINARY_KEY})", self.pipeline_key.len()));
        }
        if !self.pipeline_key.is_empty() && self.binaries.is_empty() {
            return Err("a pipeline key without binaries".into());
        }
        Ok(())
    }
}

/// One pipeline's binaries for one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceBinaries {
    /// The device they are valid on.
    pub device: Arc<DeviceIdentity>,
    /// The binaries.
    pub set: Arc<BinarySet>,
}

/// `VkPipelineCache` data of one device (a device may have several, from several harvests; a
/// loader merges them with `vkMergePipelineCaches`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceCache {
    /// The device it is valid on.
    pub device: Arc<DeviceIdentity>,
    /// The cache bytes.
    pub data: Arc<Blob>,
}

/// At most one set per device, the one with the smaller [`BinarySet::hash`] where several
/// compete; sorted by device id. Order of `all` does not matter.
#[cfg(feature = "write")]
pub(crate) fn resolve_binaries<'a>(
    all: impl IntoIterator<Item = &'a DeviceBinaries>,
) -> std::collections::BTreeMap<u128, (&'a DeviceBinaries, u128)> {
    let mut out: std::collections::BTreeMap<u128, (&DeviceBinaries, u128)> = std::collections::BTreeMap::new();
    for b in all {
        let h = b.set.hash();
        match out.entry(b.device.id()) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert((b, h));
            }
            std::collections::btree_map::Entry::Occupied(mut o) => {
                if h < o.get().1 {
                    o.insert((b, h));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ident() -> DeviceIdentity {
        DeviceIdentity {
            vendor_id: 0x10de,
            device_id: 0x2335,
            driver_id: 4,
            driver_version: 0x9100_0000,
            api_version: 0x0040_3000,
            features: DeviceFeatures::DEPTH_BIAS_CLAMP,
            pipeline_cache_uuid: [7; 16],
            binary_global_key: vec![1, 2, 3],
            device_name: "NVIDIA H200".into(),
            driver_name: "NVIDIA".into(),
            driver_info: "580.1".into(),
        }
    }

    #[test]
    fn identity_round_trips_and_refuses_every_cut_and_trailing_byte() {
        let d = ident();
        let b = d.encode();
        assert_eq!(DeviceIdentity::parse(&b), Ok(d.clone()));
        for cut in 0..b.len() {
            assert!(DeviceIdentity::parse(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut t = b.clone();
        t.push(0);
        assert!(DeviceIdentity::parse(&t).unwrap_err().contains("trailing"));
        assert_eq!(d.mismatch(&d), None);
        let mut e = d.clone();
        e.driver_version = 1;
        e.device_name = "x".into();
        let m = d.mismatch(&e).unwrap();
        assert!(m.contains("driver_version 0x91000000 vs 0x1") && m.contains("device_name"), "{m}");
        assert!(
            d.describe().starts_with("NVIDIA H200 (vendor 0x10de, device 0x2335), NVIDIA 580.1"),
            "{}",
            d.describe()
        );
    }
}
