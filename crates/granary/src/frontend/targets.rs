//! Writing a specialized module to each target language, with fixed writer options.
//!
//! Options are spelled out here instead of taken from naga's `Default`s, because some of those
//! change with the build profile (SPIR-V's `DEBUG` flag is on in debug builds); granary's output
//! must not depend on how granary itself was built. [`TARGET_OPTIONS`] describes them and is
//! hashed into every stage key.

use super::error::{ShaderError, ShaderErrorKind};
use super::profile::Profile;
use crate::descriptor::Target;

/// Human-readable description of every fixed writer option that affects output. Change it
/// whenever an option below changes, so keys change with the output. The language versions and
/// capabilities come from the [`Profile`]; [`target_options_text`] joins both.
pub const TARGET_OPTIONS: &str = "naga=30.0.2;\
spirv=adjust-coordinate-space,label-varyings,clamp-frag-depth,no-debug,entry-point-only;\
msl=fake-missing-bindings;\
hlsl=fake-missing-bindings;\
glsl=core,adjust-coordinate-space";

/// The writer options text under `profile`: [`TARGET_OPTIONS`] and the profile's resolved
/// settings. Stored in the archive header; its hash is in every stage key.
pub fn target_options_text(profile: &Profile) -> String {
    format!("{TARGET_OPTIONS};{}", profile.options_text())
}

/// The fingerprint of [`target_options_text`], used in every stage key.
pub fn target_options_fingerprint(profile: &Profile) -> u128 {
    crate::descriptor::key::content_hash(target_options_text(profile).as_bytes()).0
}

fn spirv_options(profile: &Profile) -> naga::back::spv::Options<'static> {
    use naga::back::spv::WriterFlags;
    naga::back::spv::Options {
        lang_version: profile.spirv.version,
        flags: WriterFlags::ADJUST_COORDINATE_SPACE | WriterFlags::LABEL_VARYINGS | WriterFlags::CLAMP_FRAG_DEPTH,
        ..Default::default()
    }
}

/// Writes `module`'s entry point `entry` for `target`, in the language version `profile`
/// gives it.
pub fn write(
    target: Target,
    profile: &Profile,
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    stage: naga::ShaderStage,
    entry: &str,
    file: &str,
) -> Result<Vec<u8>, ShaderError> {
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
            let options = naga::back::msl::Options { lang_version: profile.msl.version, ..Default::default() };
            let pipeline = naga::back::msl::PipelineOptions {
                entry_point: Some((stage, entry.to_string())),
                ..Default::default()
            };
            let (s, _) =
                naga::back::msl::write_string(module, info, &options, &pipeline).map_err(|e| fail(e.to_string()))?;
            Ok(s.into_bytes())
        }
        Target::Hlsl => {
            let options =
                naga::back::hlsl::Options { shader_model: shader_model(profile.hlsl.version), ..Default::default() };
            let pipeline = naga::back::hlsl::PipelineOptions { entry_point: Some((stage, entry.to_string())) };
            let mut s = String::new();
            naga::back::hlsl::Writer::new(&mut s, &options, &pipeline)
                .write(module, info, None)
                .map_err(|e| fail(e.to_string()))?;
            Ok(s.into_bytes())
        }
        Target::Glsl => {
            let options = naga::back::glsl::Options {
                version: naga::back::glsl::Version::Desktop(
                    u16::from(profile.glsl.version.0) * 100 + u16::from(profile.glsl.version.1),
                ),
                writer_flags: naga::back::glsl::WriterFlags::ADJUST_COORDINATE_SPACE,
                ..Default::default()
            };
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
