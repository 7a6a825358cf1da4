//! Resource reflection of one stage function and its binding map for every target.
//!
//! The binding map is a pure function of the *specialized module* (so of the stage key): it is
//! assigned from the resources **this stage uses**, never from the other stages of a pipeline,
//! because one stage output is shared by every pipeline that uses the stage function. The rule
//! (docs/FORMAT.md §1.7, "Binding rule"), for the resources a stage uses, in (group, binding)
//! order:
//!
//! - **MSL**: three counters from 0 — buffers, textures, samplers. Uniform and storage buffers,
//!   acceleration structures and binding arrays (argument buffers) take the next
//!   `[[buffer(n)]]`; sampled and storage textures the next `[[texture(n)]]`; samplers the next
//!   `[[sampler(n)]]`; a combined image sampler (SPIR-V input) the next `[[texture(n)]]` and
//!   the next `[[sampler(m)]]`. Then the immediate-data (push-constant) block takes the next buffer
//!   index, then the buffer-sizes buffer (when a storage buffer has a runtime-sized array).
//! - **HLSL**: `space` = group, register = binding; class `b` (uniform buffer), `t` (sampled
//!   texture, read-only storage buffer or texture, acceleration structure), `u` (writable
//!   storage buffer or texture); a binding array of `n` takes registers `binding..binding+n`,
//!   and a later binding of the same class and group inside that range is an error. Samplers go through naga's sampler heaps: a sampler's
//!   "register" is its slot (= binding) in the group's sampler index buffer, which is bound at
//!   `register(t<group>, space255)`; the heaps are `register(s0, space252)` (samplers) and
//!   `register(s0, space253)` (comparison samplers). Immediates: `register(b0, space254)`.
//! - **GLSL**: four counters from 0 — uniform blocks, storage blocks, textures (combined
//!   image samplers), images — give `layout(binding = n)` (an array of `n` takes `n`); samplers have no binding of their
//!   own (GLSL combines them with the texture).

use super::error::{ShaderError, ShaderErrorKind};
use crate::descriptor::ShaderStage;
use granary_archive::{BindingKind, LayoutBinding, MslClass, SlotAssignment, StageBindingMap, StageMask};

/// HLSL register space of the immediate-data block (`register(b0, space254)`).
pub const HLSL_IMMEDIATES_SPACE: u8 = 254;
/// HLSL register space of the per-group sampler index buffers (`register(t<group>, space255)`).
pub const HLSL_SAMPLER_INDEX_SPACE: u8 = 255;
/// HLSL register space of the sampler heap (`register(s0, space252)`).
pub const HLSL_SAMPLER_HEAP_SPACE: u8 = 252;
/// HLSL register space of the comparison-sampler heap (`register(s0, space253)`).
pub const HLSL_COMPARISON_SAMPLER_HEAP_SPACE: u8 = 253;
/// Largest bind group a stage may use (HLSL spaces above it are reserved).
pub const MAX_GROUP: u32 = 251;

/// What one stage function binds: its resources, immediates and binding map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageResources {
    /// Resources the entry point uses, in (group, binding) order, visible to this stage.
    pub bindings: Vec<LayoutBinding>,
    /// Size in bytes of the immediate-data block, if the entry point uses one.
    pub immediates: Option<u32>,
    /// Where each resource landed for each target.
    pub map: StageBindingMap,
}

/// Reflects the resources entry point `entry` of the specialized `module` uses and assigns
/// their slots by the rule in the module documentation.
pub fn reflect(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    entry: &str,
    naga_stage: naga::ShaderStage,
    stage: ShaderStage,
    file: &str,
) -> Result<StageResources, ShaderError> {
    let fail = |m: String| ShaderError::new(file, ShaderErrorKind::Write, m);
    // Specialization already found the entry point; this is its index.
    let Some(index) = module.entry_points.iter().position(|ep| ep.name == entry && ep.stage == naga_stage) else {
        return Err(ShaderError::new(file, ShaderErrorKind::EntryPoint, format!("no {stage} entry point '{entry}'")));
    };
    let fun = info.get_entry_point(index);
    let mut bindings = Vec::new();
    let mut immediates: Option<u32> = None;
    let mut needs_sizes = false;
    for (handle, var) in module.global_variables.iter() {
        if fun[handle].is_empty() {
            continue;
        }
        let name = var.name.as_deref().unwrap_or("?");
        if var.space == naga::AddressSpace::Immediate {
            let size = module.types[var.ty].inner.size(module.to_ctx());
            immediates = Some(immediates.unwrap_or(0).max(size));
            continue;
        }
        let Some(rb) = var.binding else {
            continue;
        };
        let (kind, count) = kind_of(module, var).ok_or_else(|| {
            fail(format!(
                "resource '{name}' (@group({}) @binding({})) has a type granary cannot bind",
                rb.group, rb.binding
            ))
        })?;
        if rb.group > MAX_GROUP {
            return Err(fail(format!(
                "resource '{name}' uses @group({}); granary supports groups 0..={MAX_GROUP}",
                rb.group
            )));
        }
        if matches!(kind, BindingKind::StorageBuffer | BindingKind::ReadOnlyStorageBuffer)
            && has_runtime_array(module, var.ty)
        {
            needs_sizes = true;
        }
        bindings.push(LayoutBinding {
            group: rb.group,
            binding: rb.binding,
            kind,
            count,
            visibility: StageMask::of(stage),
        });
    }
    bindings.sort();
    let map = assign(stage, &bindings, immediates.is_some(), needs_sizes).map_err(fail)?;
    Ok(StageResources { bindings, immediates, map })
}

/// Binding kind and array count (`0` single, `n` sized array, `u32::MAX` unsized) of a
/// resource variable.
fn kind_of(module: &naga::Module, var: &naga::GlobalVariable) -> Option<(BindingKind, u32)> {
    use naga::{ImageClass, TypeInner};
    let (ty, count) = match module.types[var.ty].inner {
        TypeInner::BindingArray { base, size } => {
            let n = match size {
                naga::ArraySize::Constant(n) => n.get(),
                _ => u32::MAX,
            };
            (base, n)
        }
        _ => (var.ty, 0),
    };
    let kind = match var.space {
        naga::AddressSpace::Uniform => BindingKind::UniformBuffer,
        naga::AddressSpace::Storage { access } if access.contains(naga::StorageAccess::STORE) => {
            BindingKind::StorageBuffer
        }
        naga::AddressSpace::Storage { .. } => BindingKind::ReadOnlyStorageBuffer,
        naga::AddressSpace::Handle => match module.types[ty].inner {
            TypeInner::Image { class: ImageClass::Sampled { .. } | ImageClass::Depth { .. }, .. } => {
                BindingKind::SampledTexture
            }
            TypeInner::Image { class: ImageClass::Storage { access, .. }, .. } => {
                if access.contains(naga::StorageAccess::STORE) {
                    BindingKind::StorageTexture
                } else {
                    BindingKind::ReadOnlyStorageTexture
                }
            }
            TypeInner::Image { class: ImageClass::External, .. } => BindingKind::ExternalTexture,
            TypeInner::Sampler { comparison: false } => BindingKind::Sampler,
            TypeInner::Sampler { comparison: true } => BindingKind::ComparisonSampler,
            TypeInner::AccelerationStructure { .. } => BindingKind::AccelerationStructure,
            _ => return None,
        },
        _ => return None,
    };
    Some((kind, count))
}

fn has_runtime_array(module: &naga::Module, ty: naga::Handle<naga::Type>) -> bool {
    use naga::TypeInner;
    match &module.types[ty].inner {
        TypeInner::Array { size: naga::ArraySize::Dynamic, .. } => true,
        TypeInner::Struct { members, .. } => members.last().is_some_and(|m| has_runtime_array(module, m.ty)),
        TypeInner::BindingArray { base, .. } => has_runtime_array(module, *base),
        _ => false,
    }
}

fn next(counter: &mut u32, what: &str) -> Result<u8, String> {
    next_n(counter, 1, what)
}

/// Takes `n` consecutive slots (a GLSL array of `n` textures uses `n` units).
fn next_n(counter: &mut u32, n: u32, what: &str) -> Result<u8, String> {
    let v = u8::try_from(*counter).map_err(|_| format!("more than 256 {what} in one stage"))?;
    *counter = counter.saturating_add(n.max(1));
    Ok(v)
}

/// The binding rule (module documentation) applied to one stage's sorted bindings.
pub fn assign(
    stage: ShaderStage,
    bindings: &[LayoutBinding],
    immediates: bool,
    needs_sizes: bool,
) -> Result<StageBindingMap, String> {
    let (mut buf, mut tex, mut smp) = (0u32, 0u32, 0u32);
    let (mut ubo, mut ssbo, mut gtex, mut img) = (0u32, 0u32, 0u32, 0u32);
    let mut slots = Vec::with_capacity(bindings.len());
    // HLSL registers each binding occupies, per (class, space): a binding array of n takes
    // registers binding..binding+n (an unsized one all the rest), so with register = binding a
    // later binding of the same class can land inside it; that is refused, never overlapped.
    let mut taken: Vec<(u8, u32, u64, u64, u32)> = Vec::new();
    for b in bindings {
        use BindingKind::*;
        let array = b.count != 0;
        let (msl_class, msl_index) = match b.kind {
            _ if array => (MslClass::Buffer, next(&mut buf, "Metal buffers")?),
            UniformBuffer | StorageBuffer | ReadOnlyStorageBuffer | AccelerationStructure => {
                (MslClass::Buffer, next(&mut buf, "Metal buffers")?)
            }
            CombinedImageSampler => {
                // Its texture takes the next texture index and its sampler the next sampler
                // index (not recorded: the rule gives it, see `spirv::cross`).
                next(&mut smp, "Metal samplers")?;
                (MslClass::Texture, next(&mut tex, "Metal textures")?)
            }
            SampledTexture
            | StorageTexture
            | ReadOnlyStorageTexture
            | UniformTexelBuffer
            | StorageTexelBuffer
            | InputAttachment => (MslClass::Texture, next(&mut tex, "Metal textures")?),
            Sampler | ComparisonSampler => (MslClass::Sampler, next(&mut smp, "Metal samplers")?),
            ExternalTexture => {
                return Err(format!(
                    "external texture at @group({}) @binding({}) is not supported by granary's binding maps",
                    b.group, b.binding
                ))
            }
        };
        let hlsl_class = match b.kind {
            UniformBuffer => b'b',
            StorageBuffer | StorageTexture | StorageTexelBuffer => b'u',
            ReadOnlyStorageBuffer
            | CombinedImageSampler
            | UniformTexelBuffer
            | InputAttachment
            | SampledTexture
            | ReadOnlyStorageTexture
            | AccelerationStructure
            | ExternalTexture => b't',
            Sampler | ComparisonSampler => b's',
        };
        let hlsl_register = u16::try_from(b.binding)
            .map_err(|_| format!("@binding({}) does not fit an HLSL register (at most 65535)", b.binding))?;
        if hlsl_class != b's' {
            let start = u64::from(b.binding);
            let end = match b.count {
                0 => start + 1,
                u32::MAX => u64::MAX,
                n => start + u64::from(n),
            };
            if let Some(t) = taken.iter().find(|t| t.0 == hlsl_class && t.1 == b.group && start < t.3 && t.2 < end) {
                return Err(format!(
                    "HLSL registers of @group({g}) @binding({}) overlap those of the binding array at @group({g}) @binding({}) (register = binding; leave room after a binding array)",
                    b.binding,
                    t.4,
                    g = b.group
                ));
            }
            taken.push((hlsl_class, b.group, start, end, b.binding));
        }
        let n = if b.count == u32::MAX { 1 } else { b.count };
        let glsl_binding = match b.kind {
            UniformBuffer => Some(next_n(&mut ubo, n, "GLSL uniform blocks")?),
            StorageBuffer | ReadOnlyStorageBuffer => Some(next_n(&mut ssbo, n, "GLSL storage blocks")?),
            SampledTexture | ExternalTexture | CombinedImageSampler | UniformTexelBuffer | InputAttachment => {
                Some(next_n(&mut gtex, n, "GLSL textures")?)
            }
            StorageTexture | ReadOnlyStorageTexture | StorageTexelBuffer => Some(next_n(&mut img, n, "GLSL images")?),
            Sampler | ComparisonSampler | AccelerationStructure => None,
        };
        slots.push(SlotAssignment {
            group: b.group,
            binding: b.binding,
            msl_class,
            msl_index,
            hlsl_class,
            hlsl_register,
            hlsl_space: b.group as u8,
            glsl_binding,
        });
    }
    let msl_immediates_buffer = if immediates { Some(next(&mut buf, "Metal buffers")?) } else { None };
    let msl_sizes_buffer = if needs_sizes { Some(next(&mut buf, "Metal buffers")?) } else { None };
    Ok(StageBindingMap {
        stage,
        slots,
        msl_immediates_buffer,
        msl_sizes_buffer,
        hlsl_immediates_space: immediates.then_some(HLSL_IMMEDIATES_SPACE),
    })
}
