//! Writing a specialized module to each target language, with fixed writer options.
//!
//! Options are spelled out here instead of taken from naga's `Default`s, because some of those
//! change with the build profile (SPIR-V's `DEBUG` flag is on in debug builds); granary's output
//! must not depend on how granary itself was built. [`TARGET_OPTIONS`] describes them and is
//! hashed into every stage key.

use super::error::{ShaderError, ShaderErrorKind};
use crate::descriptor::Target;

/// Human-readable description of every writer option that affects output. Change it whenever
/// an option below changes, so keys change with the output.
pub const TARGET_OPTIONS: &str = "naga=30.0.2;\
spirv=1.0,adjust-coordinate-space,label-varyings,clamp-frag-depth,no-debug;\
msl=2.4,fake-missing-bindings;\
hlsl=sm6.0,fake-missing-bindings;\
glsl=450core,adjust-coordinate-space";

/// The fingerprint of [`TARGET_OPTIONS`], used in every stage key.
pub fn target_options_fingerprint() -> u128 {
    crate::descriptor::key::content_hash(TARGET_OPTIONS.as_bytes()).0
}

fn spirv_options() -> naga::back::spv::Options<'static> {
    use naga::back::spv::WriterFlags;
    naga::back::spv::Options {
        lang_version: (1, 0),
        flags: WriterFlags::ADJUST_COORDINATE_SPACE | WriterFlags::LABEL_VARYINGS | WriterFlags::CLAMP_FRAG_DEPTH,
        ..Default::default()
    }
}

/// Writes `module`'s entry point `entry` for `target`.
pub fn write(
    target: Target,
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
            let words = naga::back::spv::write_vec(module, info, &spirv_options(), Some(&pipeline))
                .map_err(|e| fail(e.to_string()))?;
            Ok(words.iter().flat_map(|w| w.to_le_bytes()).collect())
        }
        Target::Msl => {
            let options = naga::back::msl::Options { lang_version: (2, 4), ..Default::default() };
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
                naga::back::hlsl::Options { shader_model: naga::back::hlsl::ShaderModel::V6_0, ..Default::default() };
            let pipeline = naga::back::hlsl::PipelineOptions { entry_point: Some((stage, entry.to_string())) };
            let mut s = String::new();
            naga::back::hlsl::Writer::new(&mut s, &options, &pipeline)
                .write(module, info, None)
                .map_err(|e| fail(e.to_string()))?;
            Ok(s.into_bytes())
        }
        Target::Glsl => {
            let options = naga::back::glsl::Options {
                version: naga::back::glsl::Version::Desktop(450),
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
