//! Writing a specialized module to each target language, with fixed writer options.
//!
//! Options are spelled out here instead of taken from naga's `Default`s, because some of those
//! change with the build profile (SPIR-V's `DEBUG` flag is on in debug builds); granary's output
//! must not depend on how granary itself was built. [`TARGET_OPTIONS`] describes them and is
//! hashed into every stage key.

use super::error::{ShaderError, ShaderErrorKind};
use super::profile::Profile;
use crate::descriptor::{Target, TargetSet};
use granary_archive::{MslClass, StageBindingMap};

/// Human-readable description of every fixed writer option that affects output: naga's
/// (below), then the translators of SPIR-V input and SPIRV-Cross's options
/// (`spirv-input=…`, `cross-…`: [`super::spirv::cross`]). Change it whenever an option changes, so keys change
/// with the output. The language versions and capabilities come from the [`Profile`];
/// [`target_options_text`] joins both.
pub const TARGET_OPTIONS: &str = "naga=30.0.2;\
spirv=adjust-coordinate-space,label-varyings,clamp-frag-depth,no-debug,entry-point-only;\
msl=binding-map=per-stage-buffer-texture-sampler-counters,immediates=next-buffer,sizes=next-buffer,no-fake-bindings;\
hlsl=binding-map=space-group-register-binding,arrays-take-n-no-overlap,immediates=b0-space254,sampler-heaps=s0-space252/s0-space253,sampler-index=t-group-space255,no-fake-bindings;\
glsl=core,adjust-coordinate-space,binding-map=per-stage-ubo-ssbo-texture-image-counters,arrays-take-n;\
spirv-input=spirv-cross2-0.7.2+SPIRV-Cross-aa217ae(spirv-cross-sys-0.7.4),naga-fallback;\
cross-common=active-resources-only,spec-constants-as-values,binding-map,no-placeholder-bindings;\
cross-msl=vertex:flip-vert-y,combined-sampler=next-sampler,immediates=next-buffer,sizes=next-buffer,binding-arrays-to-naga;\
cross-hlsl=vertex:flip-vert-y,entry-point-names,read-only-storage-images-srv,register=binding+space=group-all-classes,immediates=b0-space254;\
cross-glsl=core,vertex:fixup-clipspace,combined-image-samplers,binding-map";

/// The writer options text under `profile` for the requested `targets`: [`TARGET_OPTIONS`],
/// the profile's resolved settings and `targets=` the requested target names. Stored in the
/// archive header; its hash is in every stage key, so an archive whose pipelines lost a target
/// is told apart from one harvested without it.
pub fn target_options_text(profile: &Profile, targets: TargetSet) -> String {
    format!("{TARGET_OPTIONS};{};targets={}", profile.options_text(), targets.names())
}

/// The fingerprint of [`target_options_text`], used in every stage key.
pub fn target_options_fingerprint(profile: &Profile, targets: TargetSet) -> u128 {
    crate::descriptor::key::content_hash(target_options_text(profile, targets).as_bytes()).0
}

/// The requested targets named in a writer options text (`None` if it names none).
pub fn requested_targets(options_text: &str) -> Option<TargetSet> {
    let (_, names) = options_text.rsplit_once(";targets=")?;
    TargetSet::parse(names).ok()
}

fn spirv_options(profile: &Profile) -> naga::back::spv::Options<'static> {
    use naga::back::spv::WriterFlags;
    naga::back::spv::Options {
        lang_version: profile.spirv.version,
        flags: WriterFlags::ADJUST_COORDINATE_SPACE | WriterFlags::LABEL_VARYINGS | WriterFlags::CLAMP_FRAG_DEPTH,
        ..Default::default()
    }
}

fn resource_binding(group: u32, binding: u32) -> naga::ResourceBinding {
    naga::ResourceBinding { group, binding }
}

/// naga MSL options placing every resource at the slot `map` gives it (the binding rule of
/// `frontend::layout`); no fake bindings, so a resource without a slot is an error.
fn msl_options(entry: &str, map: &StageBindingMap, profile: &Profile) -> naga::back::msl::Options {
    use naga::back::msl::{BindSamplerTarget, BindTarget, EntryPointResources};
    let mut resources = naga::back::msl::BindingMap::new();
    for s in &map.slots {
        let mut t = BindTarget::default();
        match s.msl_class {
            MslClass::Buffer => t.buffer = Some(s.msl_index),
            MslClass::Texture => t.texture = Some(s.msl_index),
            MslClass::Sampler => t.sampler = Some(BindSamplerTarget::Resource(s.msl_index)),
        }
        t.mutable = matches!(s.hlsl_class, b'u');
        resources.insert(resource_binding(s.group, s.binding), t);
    }
    let ep = EntryPointResources {
        resources,
        immediates_buffer: map.msl_immediates_buffer,
        sizes_buffer: map.msl_sizes_buffer,
    };
    naga::back::msl::Options {
        lang_version: profile.msl.version,
        per_entry_point_map: [(entry.to_string(), ep)].into_iter().collect(),
        fake_missing_bindings: false,
        ..Default::default()
    }
}

/// naga HLSL options: register and space from the binding map, immediates, sampler heaps and
/// sampler index buffers at the documented registers; no fake bindings.
fn hlsl_options(map: &StageBindingMap, profile: &Profile) -> naga::back::hlsl::Options {
    use super::layout::*;
    use naga::back::hlsl::{BindTarget, SamplerHeapBindTargets, SamplerIndexBufferKey};
    let target = |space: u8, register: u32| BindTarget {
        space,
        register,
        binding_array_size: None,
        dynamic_storage_buffer_offsets_index: None,
        restrict_indexing: false,
    };
    let mut options = naga::back::hlsl::Options {
        shader_model: shader_model(profile.hlsl.version),
        fake_missing_bindings: false,
        immediates_target: map.hlsl_immediates_space.map(|space| target(space, 0)),
        sampler_heap_target: SamplerHeapBindTargets {
            standard_samplers: target(HLSL_SAMPLER_HEAP_SPACE, 0),
            comparison_samplers: target(HLSL_COMPARISON_SAMPLER_HEAP_SPACE, 0),
        },
        ..Default::default()
    };
    for s in &map.slots {
        options.binding_map.insert(resource_binding(s.group, s.binding), target(s.hlsl_space, s.hlsl_register as u32));
        if s.hlsl_class == b's' {
            options
                .sampler_buffer_binding_map
                .insert(SamplerIndexBufferKey { group: s.group }, target(HLSL_SAMPLER_INDEX_SPACE, s.group));
        }
    }
    options
}

/// naga GLSL options with explicit `layout(binding = n)` from the binding map.
fn glsl_options(map: &StageBindingMap, profile: &Profile) -> naga::back::glsl::Options {
    let mut options = naga::back::glsl::Options {
        version: naga::back::glsl::Version::Desktop(
            u16::from(profile.glsl.version.0) * 100 + u16::from(profile.glsl.version.1),
        ),
        writer_flags: naga::back::glsl::WriterFlags::ADJUST_COORDINATE_SPACE,
        ..Default::default()
    };
    for s in &map.slots {
        if let Some(b) = s.glsl_binding {
            options.binding_map.insert(resource_binding(s.group, s.binding), b);
        }
    }
    options
}

/// The first entry-point error a writer reported: with fake bindings off, naga skips an entry
/// point whose resources have no slot and says so only here.
fn entry_error<E: std::fmt::Display>(names: &[Result<String, E>]) -> Option<String> {
    names.iter().find_map(|r| r.as_ref().err().map(|e| e.to_string()))
}

/// One specialized entry point, ready to be written for any target.
pub struct StageSource<'a> {
    /// The specialized (and compacted) module.
    pub module: &'a naga::Module,
    /// Its validation info.
    pub info: &'a naga::valid::ModuleInfo,
    /// The entry point's stage.
    pub stage: naga::ShaderStage,
    /// The entry point's name.
    pub entry: &'a str,
    /// The library's file (or name), for messages.
    pub file: &'a str,
    /// Where each resource lands (`frontend::layout::reflect`).
    pub bindings: &'a StageBindingMap,
}

/// Writes `src`'s entry point for `target`, in the language version `profile` gives it,
/// binding resources where `src.bindings` puts them.
pub fn write(target: Target, profile: &Profile, src: &StageSource<'_>) -> Result<Vec<u8>, ShaderError> {
    let StageSource { module, info, stage, entry, file, bindings } = *src;
    let fail = |e: String| {
        let mut err = ShaderError::new(file, ShaderErrorKind::Write, format!("{target} writer: {e}"));
        err.target = Some(target);
        err
    };
    match target {
        Target::Spirv => {
            let pipeline = naga::back::spv::PipelineOptions { shader_stage: stage, entry_point: entry.to_string() };
            let words = naga::back::spv::write_vec(module, info, &spirv_options(profile), Some(&pipeline))
                .map_err(|e| fail(e.to_string()))?;
            Ok(words.iter().flat_map(|w| w.to_le_bytes()).collect())
        }
        Target::Msl => {
            let options = msl_options(entry, bindings, profile);
            let pipeline = naga::back::msl::PipelineOptions {
                entry_point: Some((stage, entry.to_string())),
                ..Default::default()
            };
            let (s, tinfo) =
                naga::back::msl::write_string(module, info, &options, &pipeline).map_err(|e| fail(e.to_string()))?;
            if let Some(e) = entry_error(&tinfo.entry_point_names) {
                return Err(fail(e));
            }
            Ok(s.into_bytes())
        }
        Target::Hlsl => {
            let options = hlsl_options(bindings, profile);
            let pipeline = naga::back::hlsl::PipelineOptions { entry_point: Some((stage, entry.to_string())) };
            let mut s = String::new();
            let rinfo = naga::back::hlsl::Writer::new(&mut s, &options, &pipeline)
                .write(module, info, None)
                .map_err(|e| fail(e.to_string()))?;
            if let Some(e) = entry_error(&rinfo.entry_point_names) {
                return Err(fail(e));
            }
            Ok(s.into_bytes())
        }
        Target::Glsl => {
            let options = glsl_options(bindings, profile);
            let pipeline = naga::back::glsl::PipelineOptions {
                shader_stage: stage,
                entry_point: entry.to_string(),
                multiview: None,
            };
            let mut s = String::new();
            naga::back::glsl::Writer::new(
                &mut s,
                module,
                info,
                &options,
                &pipeline,
                naga::proc::BoundsCheckPolicies::default(),
            )
            .and_then(|mut w| w.write().map(|_| ()))
            .map_err(|e| fail(e.to_string()))?;
            Ok(s.into_bytes())
        }
    }
}

fn shader_model(v: (u8, u8)) -> naga::back::hlsl::ShaderModel {
    use naga::back::hlsl::ShaderModel as M;
    match v {
        (5, 0) => M::V5_0,
        (5, 1) => M::V5_1,
        (6, 1) => M::V6_1,
        (6, 2) => M::V6_2,
        (6, 3) => M::V6_3,
        (6, 4) => M::V6_4,
        (6, 5) => M::V6_5,
        (6, 6) => M::V6_6,
        (6, 7) => M::V6_7,
        _ => M::V6_0,
    }
}
