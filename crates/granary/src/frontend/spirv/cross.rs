//! SPIRV-Cross (the `spirv-cross2` crate; MoltenVK's translator): the first translator of a
//! SPIR-V library's stage functions to MSL, HLSL and GLSL. naga is the fallback, per target
//! (`Frontend::translate`): SPIRV-Cross reads real SPIR-V naga's front end rejects
//! (`OpSpecConstantOp`, DXC's combined image samplers, tessellation and geometry stages, ...).
//!
//! Each translation compiles the application's module for one entry point, with the stage's
//! specialization constants set as the constants' values, only the resources the entry point
//! reaches emitted, and every resource bound where the stage's binding map
//! (`frontend::layout::assign`, docs/FORMAT.md §1.7) puts it. A resource the entry point uses
//! that has no slot fails the target (no placeholder binding, as with naga). The coordinate
//! conventions are naga's, so the meaning of an output does not depend on which translator
//! wrote it: MSL and HLSL flip a vertex stage's `y` (naga's SPIR-V front end does), GLSL keeps
//! it and maps depth from `[0, w]` to `[-w, w]` (naga's GLSL writer does). Like naga, only
//! vertex stages are adjusted: the other pre-rasterization stages (tessellation evaluation,
//! geometry, mesh), which naga does not translate, keep the application's conventions, since
//! a stage output cannot know whether it is the last before rasterization. The writer options text (`frontend::targets::TARGET_OPTIONS`: `spirv-input=…`, `cross-…`)
//! names the translators, their versions and all of this, so keys change with it.
//!
//! SPIRV-Cross reports its C++ exceptions as errors; a panic in the bindings is caught by the
//! caller like a writer's.

use crate::descriptor::{ConstantValue, ShaderStage, Target};
use crate::frontend::profile::Profile;
use granary_archive::{BindingKind, LayoutBinding, MslClass, StageBindingMap};
use spirv_cross2::compile::{glsl, hlsl, msl, CompilableTarget};
use spirv_cross2::handle::{Handle, VariableId};
use spirv_cross2::reflect::{DecorationValue, ResourceType};
use spirv_cross2::spirv::{Decoration, ExecutionModel};
use spirv_cross2::{targets, Compiler, Module};

/// One entry point of a validated module, for SPIRV-Cross.
pub struct CrossSource<'a> {
    /// The module's words.
    pub words: &'a [u32],
    /// The entry point's name.
    pub entry: &'a str,
    /// Its stage.
    pub stage: ShaderStage,
    /// The specialization constants' values (spec id, value).
    pub values: &'a [(u32, ConstantValue)],
    /// The resources the entry point uses, in (set, binding) order (spirq's reflection).
    pub bindings: &'a [LayoutBinding],
    /// Where each lands per target; `slots` follow `bindings` one for one.
    pub map: &'a StageBindingMap,
}

fn models(stage: ShaderStage) -> &'static [ExecutionModel] {
    use ExecutionModel as M;
    match stage {
        ShaderStage::Vertex => &[M::Vertex],
        ShaderStage::Fragment => &[M::Fragment],
        ShaderStage::Compute => &[M::GLCompute],
        ShaderStage::TessellationControl => &[M::TessellationControl],
        ShaderStage::TessellationEvaluation => &[M::TessellationEvaluation],
        ShaderStage::Geometry => &[M::Geometry],
        ShaderStage::Task => &[M::TaskEXT, M::TaskNV],
        ShaderStage::Mesh => &[M::MeshEXT, M::MeshNV],
        ShaderStage::RayGeneration => &[M::RayGenerationNV],
        ShaderStage::AnyHit => &[M::AnyHitNV],
        ShaderStage::ClosestHit => &[M::ClosestHitNV],
        ShaderStage::Miss => &[M::MissNV],
        ShaderStage::Intersection => &[M::IntersectionNV],
        ShaderStage::Callable => &[M::CallableNV],
    }
}

/// SPIRV-Cross's translation of `src` to `target` (not SPIR-V), in the language version
/// `profile` gives it; `Err`: SPIRV-Cross's message, or why granary's binding map cannot be
/// followed.
pub fn write(target: Target, profile: &Profile, src: &CrossSource<'_>) -> Result<Vec<u8>, String> {
    let text = match target {
        Target::Spirv => return Err("SPIRV-Cross does not write SPIR-V".into()),
        Target::Msl => write_msl(profile, src),
        Target::Hlsl => write_hlsl(profile, src),
        Target::Glsl => write_glsl(profile, src),
    };
    text.map(String::into_bytes)
}

fn err(e: spirv_cross2::SpirvCrossError) -> String {
    e.to_string()
}

/// A compiler for `src`'s entry point with its constants set and only what the entry point
/// reaches enabled; the execution model it was found with.
fn prepare<T: CompilableTarget>(src: &CrossSource<'_>) -> Result<(Compiler<T>, ExecutionModel), String> {
    let mut c = Compiler::<T>::new(Module::from_words(src.words)).map_err(err)?;
    let model = c
        .entry_points()
        .map_err(err)?
        .find(|e| e.name.as_ref() == src.entry && models(src.stage).contains(&e.execution_model))
        .map(|e| e.execution_model)
        .ok_or_else(|| format!("no {} entry point '{}'", src.stage, src.entry))?;
    c.set_entry_point(src.entry, model).map_err(err)?;
    let constants: Vec<_> = c.specialization_constants().map_err(err)?.collect();
    for k in constants {
        let Some((_, v)) = src.values.iter().find(|(id, _)| *id == k.constant_id) else { continue };
        match *v {
            ConstantValue::Bool(b) => c.set_specialization_constant_value(k.id, u32::from(b)),
            ConstantValue::I32(x) => c.set_specialization_constant_value(k.id, x),
            ConstantValue::U32(x) => c.set_specialization_constant_value(k.id, x),
            ConstantValue::F32(x) => c.set_specialization_constant_value(k.id, x),
        }
        .map_err(err)?;
    }
    let active = c.active_interface_variables().map_err(err)?;
    c.set_enabled_interface_variables(active).map_err(err)?;
    Ok((c, model))
}

/// A resource variable the entry point uses, with its set and binding.
struct Var {
    id: Handle<VariableId>,
    name: String,
    set: u32,
    binding: u32,
    ty: ResourceType,
}

/// The descriptor resources the entry point uses; each must be in the binding map.
fn resources<T>(c: &Compiler<T>, src: &CrossSource<'_>) -> Result<Vec<Var>, String> {
    let active = c.active_interface_variables().map_err(err)?;
    let res = c.shader_resources_for_active_variables(active).map_err(err)?;
    let mut out = Vec::new();
    for ty in [
        ResourceType::UniformBuffer,
        ResourceType::StorageBuffer,
        ResourceType::SubpassInput,
        ResourceType::StorageImage,
        ResourceType::SampledImage,
        ResourceType::SeparateImage,
        ResourceType::SeparateSamplers,
        ResourceType::AccelerationStructure,
    ] {
        for r in res.resources_for_type(ty).map_err(err)? {
            let literal = |d| c.decoration(r.id, d).ok().flatten().and_then(|v: DecorationValue<'_>| v.as_literal());
            let name = r.name.to_string();
            let (Some(set), Some(binding)) = (literal(Decoration::DescriptorSet), literal(Decoration::Binding)) else {
                return Err(format!("resource '{name}' has no descriptor set and binding"));
            };
            if slot(src, set, binding).is_none() {
                return Err(format!(
                    "resource '{name}' (set {set}, binding {binding}) has no slot in the stage's binding map"
                ));
            }
            out.push(Var { id: r.id, name, set, binding, ty });
        }
    }
    Ok(out)
}

/// The binding-map slot of (set, binding) and the resource's reflected binding.
fn slot<'a>(
    src: &'a CrossSource<'_>,
    set: u32,
    binding: u32,
) -> Option<(&'a granary_archive::SlotAssignment, &'a LayoutBinding)> {
    let i = src.map.slots.iter().position(|s| s.group == set && s.binding == binding)?;
    Some((&src.map.slots[i], src.bindings.get(i)?))
}

/// The `[[sampler(n)]]` of the combined image sampler at slot `index`: the binding rule gives
/// each (non-array) combined image sampler the next sampler index after its texture's, in
/// the same order as plain samplers (`frontend::layout::assign`).
fn combined_sampler_index(src: &CrossSource<'_>, index: usize) -> u32 {
    let takes_sampler = |b: &LayoutBinding| {
        b.count == 0
            && matches!(
                b.kind,
                BindingKind::Sampler | BindingKind::ComparisonSampler | BindingKind::CombinedImageSampler
            )
    };
    src.bindings[..index].iter().filter(|b| takes_sampler(b)).count() as u32
}

fn write_msl(profile: &Profile, src: &CrossSource<'_>) -> Result<String, String> {
    let (mut c, model) = prepare::<targets::Msl>(src)?;
    resources(&c, src)?;
    if let Some(b) = src.bindings.iter().find(|b| b.count != 0) {
        // The binding rule puts a binding array in an argument buffer (`[[buffer(n)]]`),
        // which this configuration of SPIRV-Cross does not write.
        return Err(format!(
            "the binding array at set {} binding {} is an argument buffer in granary's MSL binding rule, which granary's SPIRV-Cross configuration does not write",
            b.group, b.binding
        ));
    }
    for (i, (s, b)) in src.map.slots.iter().zip(src.bindings).enumerate() {
        let mut t = msl::BindTarget { buffer: 0, texture: 0, sampler: 0, count: None };
        match s.msl_class {
            MslClass::Buffer => t.buffer = u32::from(s.msl_index),
            MslClass::Texture => t.texture = u32::from(s.msl_index),
            MslClass::Sampler => t.sampler = u32::from(s.msl_index),
        }
        if b.kind == BindingKind::CombinedImageSampler {
            t.sampler = combined_sampler_index(src, i);
        }
        c.add_resource_binding(model, msl::ResourceBinding::from_qualified(s.group, s.binding), &t).map_err(err)?;
    }
    if let Some(n) = src.map.msl_immediates_buffer {
        let t = msl::BindTarget { buffer: u32::from(n), texture: 0, sampler: 0, count: None };
        c.add_resource_binding(model, msl::ResourceBinding::PushConstantBuffer, &t).map_err(err)?;
    }
    let mut o = targets::Msl::options();
    o.version = msl::MslVersion::new(u32::from(profile.msl.version.0), u32::from(profile.msl.version.1), 0);
    o.common.flip_vertex_y = src.stage == ShaderStage::Vertex;
    if let Some(n) = src.map.msl_sizes_buffer {
        o.buffer_size_buffer_index = u32::from(n);
    }
    let out = c.compile(&o).map_err(err)?;
    if out.buffer_requirements().needs_buffer_size_buffer && src.map.msl_sizes_buffer.is_none() {
        return Err("the MSL needs a buffer-sizes buffer the binding map does not give".into());
    }
    Ok(out.to_string())
}

fn write_hlsl(profile: &Profile, src: &CrossSource<'_>) -> Result<String, String> {
    let (mut c, model) = prepare::<targets::Hlsl>(src)?;
    resources(&c, src)?;
    for s in &src.map.slots {
        // register = binding, space = group, whichever class SPIRV-Cross gives the resource.
        let r = Some(hlsl::RegisterBinding { register: u32::from(s.hlsl_register), space: u32::from(s.hlsl_space) });
        let t = hlsl::BindTarget { cbv: r, uav: r, srv: r, sampler: r };
        c.add_resource_binding(model, hlsl::ResourceBinding::from_qualified(s.group, s.binding), &t).map_err(err)?;
    }
    if let Some(space) = src.map.hlsl_immediates_space {
        let r = Some(hlsl::RegisterBinding { register: 0, space: u32::from(space) });
        let t = hlsl::BindTarget { cbv: r, uav: None, srv: None, sampler: None };
        c.add_resource_binding(model, hlsl::ResourceBinding::PushConstantBuffer, &t).map_err(err)?;
    }
    let mut o = targets::Hlsl::options();
    o.shader_model = shader_model(profile.hlsl.version);
    o.common.flip_vertex_y = src.stage == ShaderStage::Vertex;
    o.use_entry_point_name = true;
    // A read-only storage image is class `t` in the binding rule, as read-only buffers are.
    o.nonwritable_uav_texture_as_srv = true;
    Ok(c.compile(&o).map_err(err)?.to_string())
}

fn shader_model(v: (u8, u8)) -> hlsl::HlslShaderModel {
    use hlsl::HlslShaderModel as M;
    match v {
        (5, 0) => M::ShaderModel5_0,
        (5, 1) => M::ShaderModel5_1,
        (6, 1) => M::ShaderModel6_1,
        (6, 2) => M::ShaderModel6_2,
        (6, 3) => M::ShaderModel6_3,
        (6, 4) => M::ShaderModel6_4,
        (6, 5) => M::ShaderModel6_5,
        (6, 6) => M::ShaderModel6_6,
        (6, 7) => M::ShaderModel6_7,
        _ => M::ShaderModel6_0,
    }
}

fn glsl_version(v: (u8, u8)) -> Result<glsl::GlslVersion, String> {
    use glsl::GlslVersion as V;
    Ok(match u16::from(v.0) * 100 + u16::from(v.1) {
        330 => V::Glsl330,
        400 => V::Glsl400,
        410 => V::Glsl410,
        420 => V::Glsl420,
        430 => V::Glsl430,
        440 => V::Glsl440,
        450 => V::Glsl450,
        460 => V::Glsl460,
        n => return Err(format!("GLSL version {n} is not one SPIRV-Cross is configured for")),
    })
}

fn write_glsl(profile: &Profile, src: &CrossSource<'_>) -> Result<String, String> {
    let (mut c, _) = prepare::<targets::Glsl>(src)?;
    let vars = resources(&c, src)?;
    // GLSL has no separate samplers: SPIRV-Cross combines each (image, sampler) pair the
    // entry point samples with into a sampler, bound at the image's GLSL binding.
    let proof = c.create_dummy_sampler_for_combined_images().map_err(err)?;
    c.build_combined_image_samplers(proof).map_err(err)?;
    let glsl_binding = |set: u32, binding: u32| slot(src, set, binding).and_then(|(s, _)| s.glsl_binding);
    for v in &vars {
        if v.ty == ResourceType::SeparateSamplers {
            continue;
        }
        let Some(b) = glsl_binding(v.set, v.binding) else {
            if v.ty == ResourceType::SeparateImage {
                continue;
            }
            return Err(format!("resource '{}' has no GLSL binding in the stage's binding map", v.name));
        };
        c.set_decoration(v.id, Decoration::Binding, Some(b as u32)).map_err(err)?;
        c.set_decoration(v.id, Decoration::DescriptorSet, DecorationValue::unset()).map_err(err)?;
    }
    let combined: Vec<_> = c.combined_image_samplers().map_err(err)?.collect();
    for cs in combined {
        let image = vars.iter().find(|v| v.id == cs.image_id).ok_or("a combined image sampler of an unknown image")?;
        let b = glsl_binding(image.set, image.binding)
            .ok_or_else(|| format!("texture '{}' has no GLSL binding in the stage's binding map", image.name))?;
        c.set_decoration(cs.combined_id, Decoration::Binding, Some(b as u32)).map_err(err)?;
    }
    let mut o = targets::Glsl::options();
    o.version = glsl_version(profile.glsl.version)?;
    o.common.fixup_clipspace = src.stage == ShaderStage::Vertex;
    Ok(c.compile(&o).map_err(err)?.to_string())
}
