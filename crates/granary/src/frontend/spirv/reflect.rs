//! Reflection of a SPIR-V module with spirq: each entry point's stage, interface, resources,
//! push constants, specialization constants and workgroup size.
//!
//! spirq was chosen over rspirv by measurement on the willems corpus (653 DXC and slangc
//! modules): spirq reflects 651 (the other two, which use `SPV_KHR_untyped_pointers`, make it
//! panic, contained), in 0.37 ms per module; rspirv parses the same 651 but reflects nothing
//! (descriptor types, combined image samplers, spec constants and sizes would all be granary's
//! code). `granary-lab`'s `spirv_corpus` example repeats the measurement.
//!
//! Rules:
//! - Resources are those the entry point uses (spirq's static-use analysis through the call
//!   graph); a sampled image and a sampler declared at one binding (DXC's
//!   `[[vk::combinedImageSampler]]`) are one `CombinedImageSampler`. Array counts: a single
//!   descriptor (or an array of one) is `0`, an array of `n` is `n`, a runtime array is
//!   `u32::MAX` (granary-archive's `LayoutBinding::count`).
//! - The interface lists user inputs and outputs by location (built-ins are not listed);
//!   variables sharing a location through `Component` decorations are one value of the
//!   components they cover; a location whose type is not a 32-bit scalar or vector (a matrix,
//!   an array, a 16-bit type) is left out, as link checks only compare those.
//! - Ray-tracing and kernel entry points are listed in [`Reflection::unsupported`]; granary
//!   does not harvest them yet.

use super::super::interface::IoType;
use crate::descriptor::{BindingKind, LayoutBinding, ScalarKind, ShaderStage, StageMask};
use spirq::prelude::{AccessType, DescriptorType, ExecutionModel, Type, Variable};
use spirq::ty::ScalarType;

/// The type of one specialization constant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecType {
    /// `OpTypeBool` (a `VkBool32`, 4 bytes, in `VkSpecializationInfo`).
    Bool,
    /// A signed 32-bit integer.
    I32,
    /// An unsigned 32-bit integer.
    U32,
    /// A 32-bit float.
    F32,
    /// Anything else (64- or 16-bit, 8-bit), spelled for messages: `i64`, `f16`, …
    Other(String),
}

impl SpecType {
    /// The name used in messages (the same names as `ConstantValue::type_name`).
    pub fn name(&self) -> &str {
        match self {
            SpecType::Bool => "bool",
            SpecType::I32 => "i32",
            SpecType::U32 => "u32",
            SpecType::F32 => "f32",
            SpecType::Other(s) => s,
        }
    }

    /// The size in bytes of the value in `VkSpecializationInfo` (`None` when unknown).
    pub fn size(&self) -> Option<u32> {
        match self {
            SpecType::Bool | SpecType::I32 | SpecType::U32 | SpecType::F32 => Some(4),
            SpecType::Other(s) => s.get(1..).and_then(|b| b.parse::<u32>().ok()).map(|bits| bits / 8),
        }
    }
}

/// One specialization constant of a module (`OpSpecConstant*` with a `SpecId`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecConstant {
    /// Its `SpecId` (the `constantID` of `VkSpecializationMapEntry`).
    pub id: u32,
    /// Its `OpName`, if any.
    pub name: Option<String>,
    /// Its type.
    pub ty: SpecType,
}

/// What one entry point of a SPIR-V module is and uses.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryReflection {
    /// The entry point's name (`OpEntryPoint`).
    pub name: String,
    /// Its stage.
    pub stage: ShaderStage,
    /// User inputs by location, sorted.
    pub inputs: Vec<(u32, IoType)>,
    /// User outputs by location, sorted.
    pub outputs: Vec<(u32, IoType)>,
    /// The descriptors it uses, sorted by (set, binding), visible to its stage.
    pub bindings: Vec<LayoutBinding>,
    /// Bindings where the module declares two resources of different kinds at one binding
    /// (aliasing, which Vulkan allows for compatible descriptors); the first is kept in
    /// `bindings`. Translated targets cannot bind these.
    pub aliased: Vec<(u32, u32)>,
    /// Of those, the bindings whose two kinds no one Vulkan descriptor type serves (a uniform
    /// buffer and a storage buffer at one binding, say; a sampled image and a sampler share a
    /// combined image sampler, read-only and writable storage one type): `(set, binding, the
    /// kind kept, the other)`. No layout granary derives is valid for such a stage
    /// (`VUID-…-layout-07990`).
    pub conflicts: Vec<(u32, u32, BindingKind, BindingKind)>,
    /// The size in bytes of its push-constant block, if it uses one.
    pub push_constant_size: Option<u32>,
    /// Whether a storage buffer it uses ends in a runtime-sized array (MSL then needs its
    /// buffer-sizes buffer).
    pub runtime_sized: bool,
    /// The module's specialization constants, sorted by id.
    pub spec_constants: Vec<SpecConstant>,
    /// `LocalSize` (or `LocalSizeId`, evaluated) of a compute, task or mesh entry point.
    pub workgroup_size: Option<[u32; 3]>,
}

/// The reflection of a whole module.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reflection {
    /// The entry points granary harvests.
    pub entry_points: Vec<EntryReflection>,
    /// Entry points of stages granary does not harvest: (name, execution model as SPIR-V
    /// spells it).
    pub unsupported: Vec<(String, String)>,
}

impl Reflection {
    /// The entry point `name` of `stage`.
    pub fn entry(&self, name: &str, stage: ShaderStage) -> Option<&EntryReflection> {
        self.entry_points.iter().find(|e| e.name == name && e.stage == stage)
    }
}

/// The granary stage of an execution model; `Err` with SPIR-V's name of it for the models
/// granary does not harvest.
fn stage_of(model: ExecutionModel) -> Result<ShaderStage, String> {
    Ok(match model {
        ExecutionModel::Vertex => ShaderStage::Vertex,
        ExecutionModel::TessellationControl => ShaderStage::TessellationControl,
        ExecutionModel::TessellationEvaluation => ShaderStage::TessellationEvaluation,
        ExecutionModel::Geometry => ShaderStage::Geometry,
        ExecutionModel::Fragment => ShaderStage::Fragment,
        ExecutionModel::GLCompute => ShaderStage::Compute,
        ExecutionModel::TaskEXT | ExecutionModel::TaskNV => ShaderStage::Task,
        ExecutionModel::MeshEXT | ExecutionModel::MeshNV => ShaderStage::Mesh,
        ExecutionModel::RayGenerationNV => ShaderStage::RayGeneration,
        ExecutionModel::IntersectionNV => ShaderStage::Intersection,
        ExecutionModel::AnyHitNV => ShaderStage::AnyHit,
        ExecutionModel::ClosestHitNV => ShaderStage::ClosestHit,
        ExecutionModel::MissNV => ShaderStage::Miss,
        ExecutionModel::CallableNV => ShaderStage::Callable,
        other => return Err(model_name(other).to_string()),
    })
}

/// SPIR-V's spelling of an execution model granary does not harvest.
pub(crate) fn model_name(model: ExecutionModel) -> &'static str {
    match model {
        ExecutionModel::Kernel => "Kernel",
        _ => "an execution model granary does not know",
    }
}

/// Reflects `module` (SPIR-V words, already validated), with the specialization constants
/// `specialize` applied (their values change array sizes and workgroup sizes). `Err` is
/// spirq's message.
///
/// Every resource the module declares counts as used by each of its entry points
/// (`ref_all_rscs`): spirq's use analysis does not follow every instruction that reaches a
/// resource (DXC's `OpImageTexelPointer` atomics on a storage image, structured buffers reached
/// through atomics), and a layout without a binding a stage uses is invalid
/// (`VUID-VkGraphicsPipelineCreateInfo-layout-07988`), while one with a binding it does not use
/// is valid. Found on the willems corpus on NVIDIA (docs/BENCHMARKS.md).
pub fn reflect(module: &[u32], specialize: &[(u32, spirq::constant::ConstantValue)]) -> Result<Reflection, String> {
    let mut config = spirq::ReflectConfig::new();
    config.spv(module).ref_all_rscs(true).combine_img_samplers(true).gen_unique_names(false);
    for (id, value) in specialize {
        config.specialize(*id, value.clone());
    }
    let entries = config.reflect().map_err(|e| e.to_string())?;
    let mut out = Reflection::default();
    for ep in entries {
        match stage_of(ep.exec_model) {
            Ok(stage) => out.entry_points.push(entry(&ep, stage)?),
            Err(model) => out.unsupported.push((ep.name.clone(), model)),
        }
    }
    Ok(out)
}

fn entry(ep: &spirq::prelude::EntryPoint, stage: ShaderStage) -> Result<EntryReflection, String> {
    let mut inputs: Vec<(u32, u32, Option<IoType>)> = Vec::new();
    let mut outputs: Vec<(u32, u32, Option<IoType>)> = Vec::new();
    let mut bindings: Vec<LayoutBinding> = Vec::new();
    let mut aliased = Vec::new();
    let mut conflicts = Vec::new();
    let mut push_constant_size = None;
    let mut runtime_sized = false;
    let mut spec_constants = Vec::new();
    for v in &ep.vars {
        match v {
            Variable::Input { location, ty, .. } => inputs.push((location.loc(), location.comp(), io_type(ty))),
            Variable::Output { location, ty, .. } => outputs.push((location.loc(), location.comp(), io_type(ty))),
            Variable::Descriptor { desc_bind, desc_ty, nbind, ty, .. } => {
                let kind = binding_kind(desc_ty);
                if matches!(kind, BindingKind::StorageBuffer | BindingKind::ReadOnlyStorageBuffer) {
                    runtime_sized |= ends_in_runtime_array(ty);
                }
                let count = match *nbind {
                    0 => u32::MAX,
                    1 => 0,
                    n => n,
                };
                let (group, binding) = desc_bind.into_inner();
                match bindings.iter().find(|b| (b.group, b.binding) == (group, binding)) {
                    Some(b) if b.kind == kind && b.count == count => {}
                    Some(b) => {
                        aliased.push((group, binding));
                        if !one_descriptor_type(b.kind, kind) {
                            conflicts.push((group, binding, b.kind, kind));
                        }
                    }
                    None => {
                        bindings.push(LayoutBinding { group, binding, kind, count, visibility: StageMask::of(stage) })
                    }
                }
            }
            Variable::PushConstant { ty, .. } => {
                let size =
                    ty.nbyte().ok_or_else(|| format!("entry point '{}': push-constant block has no size", ep.name))?;
                let size = u32::try_from(size)
                    .map_err(|_| format!("entry point '{}': push-constant block of {size} bytes", ep.name))?;
                push_constant_size = Some(push_constant_size.unwrap_or(0).max(size));
            }
            Variable::SpecConstant { name, spec_id, ty } => {
                spec_constants.push(SpecConstant { id: *spec_id, name: name.clone(), ty: spec_type(ty) })
            }
        }
    }
    bindings.sort();
    aliased.sort();
    aliased.dedup();
    conflicts.dedup_by_key(|c| (c.0, c.1));
    spec_constants.sort_by_key(|c| c.id);
    spec_constants.dedup_by_key(|c| c.id);
    let workgroup_size = ep.exec_modes.iter().find_map(|m| {
        use spirq::spirv::ExecutionMode as M;
        if !matches!(m.exec_mode, M::LocalSize | M::LocalSizeId) || m.operands.len() != 3 {
            return None;
        }
        let mut size = [0u32; 3];
        for (s, c) in size.iter_mut().zip(&m.operands) {
            *s = match c.value {
                spirq::constant::ConstantValue::U32(v) => v,
                spirq::constant::ConstantValue::S32(v) => u32::try_from(v).ok()?,
                _ => return None,
            };
        }
        Some(size)
    });
    Ok(EntryReflection {
        name: ep.name.clone(),
        stage,
        inputs: merge_locations(inputs),
        outputs: merge_locations(outputs),
        bindings,
        aliased,
        conflicts,
        push_constant_size,
        runtime_sized,
        spec_constants,
        workgroup_size,
    })
}

/// One value per location: components of one scalar kind joined (`Component` decorations),
/// locations with any unrepresentable part left out.
fn merge_locations(mut vars: Vec<(u32, u32, Option<IoType>)>) -> Vec<(u32, IoType)> {
    vars.sort_by_key(|v| (v.0, v.1));
    let mut out: Vec<(u32, IoType)> = Vec::new();
    let mut skip: Vec<u32> = Vec::new();
    for (loc, comp, ty) in vars {
        let Some(ty) = ty.filter(|_| !skip.contains(&loc)) else {
            out.retain(|(l, _)| *l != loc);
            skip.push(loc);
            continue;
        };
        let end = comp.saturating_add(u32::from(ty.components)).min(4) as u8;
        match out.iter_mut().find(|(l, _)| *l == loc) {
            Some((_, t)) if t.kind == ty.kind => t.components = t.components.max(end),
            Some(_) => {
                out.retain(|(l, _)| *l != loc);
                skip.push(loc);
            }
            None => out.push((loc, IoType { kind: ty.kind, components: end })),
        }
    }
    out
}

/// Whether `ty` (a buffer's block, or an array of blocks) ends in a runtime-sized array.
fn ends_in_runtime_array(ty: &Type) -> bool {
    match ty {
        Type::Array(a) if a.nelement.is_none() => true,
        Type::Array(a) => ends_in_runtime_array(&a.element_ty),
        Type::Struct(s) => s.members.last().is_some_and(|m| ends_in_runtime_array(&m.ty)),
        _ => false,
    }
}

fn io_type(ty: &Type) -> Option<IoType> {
    let (scalar, components) = match ty {
        Type::Scalar(s) => (s, 1),
        Type::Vector(v) => (&v.scalar_ty, u8::try_from(v.nscalar).ok()?),
        _ => return None,
    };
    let kind = match scalar {
        ScalarType::Float { bits: 32 } => ScalarKind::Float,
        ScalarType::Integer { bits: 32, is_signed: true } => ScalarKind::Sint,
        ScalarType::Integer { bits: 32, is_signed: false } => ScalarKind::Uint,
        _ => return None,
    };
    Some(IoType { kind, components })
}

fn spec_type(ty: &Type) -> SpecType {
    match ty {
        Type::Scalar(ScalarType::Boolean) => SpecType::Bool,
        Type::Scalar(ScalarType::Integer { bits: 32, is_signed: true }) => SpecType::I32,
        Type::Scalar(ScalarType::Integer { bits: 32, is_signed: false }) => SpecType::U32,
        Type::Scalar(ScalarType::Float { bits: 32 }) => SpecType::F32,
        Type::Scalar(ScalarType::Integer { bits, is_signed }) => {
            SpecType::Other(format!("{}{bits}", if *is_signed { 'i' } else { 'u' }))
        }
        Type::Scalar(ScalarType::Float { bits }) => SpecType::Other(format!("f{bits}")),
        other => SpecType::Other(format!("{other:?}")),
    }
}

/// Whether variables of kinds `a` and `b` at one binding can both match one Vulkan descriptor
/// type (the specification's descriptor-type compatibility).
fn one_descriptor_type(a: BindingKind, b: BindingKind) -> bool {
    use BindingKind as K;
    let vk = |k: BindingKind| match k {
        K::Sampler | K::SampledTexture | K::CombinedImageSampler => K::CombinedImageSampler,
        K::ReadOnlyStorageBuffer => K::StorageBuffer,
        K::ReadOnlyStorageTexture => K::StorageTexture,
        k => k,
    };
    vk(a) == vk(b)
}

fn binding_kind(ty: &DescriptorType) -> BindingKind {
    match ty {
        DescriptorType::Sampler() => BindingKind::Sampler,
        DescriptorType::CombinedImageSampler() => BindingKind::CombinedImageSampler,
        DescriptorType::SampledImage() => BindingKind::SampledTexture,
        DescriptorType::StorageImage(AccessType::ReadOnly) => BindingKind::ReadOnlyStorageTexture,
        DescriptorType::StorageImage(_) => BindingKind::StorageTexture,
        DescriptorType::UniformTexelBuffer() => BindingKind::UniformTexelBuffer,
        DescriptorType::StorageTexelBuffer(_) => BindingKind::StorageTexelBuffer,
        DescriptorType::UniformBuffer() => BindingKind::UniformBuffer,
        DescriptorType::StorageBuffer(AccessType::ReadOnly) => BindingKind::ReadOnlyStorageBuffer,
        DescriptorType::StorageBuffer(_) => BindingKind::StorageBuffer,
        DescriptorType::InputAttachment(_) => BindingKind::InputAttachment,
        DescriptorType::AccelStruct() => BindingKind::AccelerationStructure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(kind: ScalarKind, components: u8) -> Option<IoType> {
        Some(IoType { kind, components })
    }

    #[test]
    fn components_at_one_location_join_and_odd_types_are_left_out() {
        let f = ScalarKind::Float;
        let merged = merge_locations(vec![
            (1, 2, io(f, 2)),
            (1, 0, io(f, 2)),
            (0, 0, io(f, 4)),
            (2, 0, None),
            (3, 0, io(f, 1)),
            (3, 1, io(ScalarKind::Uint, 1)),
        ]);
        assert_eq!(merged, vec![(0, IoType { kind: f, components: 4 }), (1, IoType { kind: f, components: 4 })]);
    }

    #[test]
    fn only_kinds_no_descriptor_type_serves_together_conflict() {
        use BindingKind as K;
        assert!(one_descriptor_type(K::SampledTexture, K::Sampler));
        assert!(one_descriptor_type(K::CombinedImageSampler, K::SampledTexture));
        assert!(one_descriptor_type(K::ReadOnlyStorageBuffer, K::StorageBuffer));
        assert!(one_descriptor_type(K::StorageTexture, K::ReadOnlyStorageTexture));
        assert!(!one_descriptor_type(K::UniformBuffer, K::StorageBuffer));
        assert!(!one_descriptor_type(K::SampledTexture, K::StorageTexture));
        assert!(!one_descriptor_type(K::UniformBuffer, K::Sampler));
    }

    #[test]
    fn spec_type_sizes() {
        assert_eq!(SpecType::Bool.size(), Some(4));
        assert_eq!(SpecType::Other("i64".into()).size(), Some(8));
        assert_eq!(SpecType::Other("f16".into()).size(), Some(2));
    }
}
