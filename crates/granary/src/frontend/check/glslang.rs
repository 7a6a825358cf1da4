//! GLSL checking: glslang, the Khronos reference front end, in process (the `glslang` crate,
//! which builds glslang from source; no system library or program is needed).
//!
//! Why in process and not `glslangValidator`: glslang builds its built-in symbol tables when a
//! process starts, about 130 ms whatever the shader (measured with Debian 12's
//! `glslangValidator`: one 3-line compute shader or ten of them, 0.16 s wall either way). Run
//! once per distinct output that is most of a harvest (34 s of validator time for the bundled
//! example's 352 GLSL outputs against 0.75 s of compiling); in process the tables are built
//! once and a check costs the shader's own parse.
//!
//! What is checked: glslang's preprocess and parse of the source with no client API (the
//! checks `glslangValidator -S STAGE` makes, without `-V` or `-G`), for the version and
//! profile the source's `#version` line declares. Compared with `glslangValidator` on the
//! bundled example's outputs and the shapes of issue 22 (`imageSize` of an image array with a
//! LOD argument, `gl_BaseVertex` undeclared): the same verdicts.
//!
//! Thread safety: the process-wide glslang instance is initialized once
//! ([`glslang::Compiler::acquire`]); each check creates and drops its own shader object, which
//! glslang allows from any number of threads at once.

use crate::descriptor::ShaderStage;

/// A `stage` shader's GLSL `source`: `Ok(None)` when glslang accepts it, `Ok(Some(message))`
/// with glslang's log when it does not, `Err` when glslang cannot check it here (a stage it
/// has no GLSL for, or its process initialization failed).
pub(crate) fn check(stage: ShaderStage, source: &str) -> Result<Option<String>, String> {
    let Some(stage) = glslang_stage(stage) else {
        return Err(format!("glslang checks no GLSL {stage} shaders here"));
    };
    if source.contains('\0') {
        return Ok(Some("the GLSL contains a NUL byte".to_string()));
    }
    let compiler = glslang::Compiler::acquire().ok_or("glslang's process initialization failed")?;
    let options = glslang::CompilerOptions {
        source_language: glslang::SourceLanguage::GLSL,
        target: glslang::Target::None(None),
        version_profile: None,
        messages: glslang::ShaderMessage::DEFAULT,
    };
    let source = glslang::ShaderSource::from(source);
    let input = match glslang::ShaderInput::new(&source, stage, &options, None::<&[(&str, Option<&str>)]>, None) {
        Ok(input) => input,
        Err(e) => return Ok(Some(e.to_string())),
    };
    Ok(match compiler.create_shader(input) {
        Ok(_) => None,
        Err(e) => Some(message(e)),
    })
}

/// What glslang said, without the error variant's prefix.
fn message(e: glslang::error::GlslangError) -> String {
    use glslang::error::GlslangError as E;
    let text = match e {
        E::PreprocessError(m) | E::ParseError(m) => m,
        other => other.to_string(),
    };
    let text = text.trim();
    if text.is_empty() {
        "glslang rejected it and said nothing".to_string()
    } else {
        text.to_string()
    }
}

/// glslang's stage for `stage` (`None`: glslang has no GLSL stage for it).
fn glslang_stage(stage: ShaderStage) -> Option<glslang::ShaderStage> {
    use glslang::ShaderStage as G;
    Some(match stage {
        ShaderStage::Vertex => G::Vertex,
        ShaderStage::TessellationControl => G::TesselationControl,
        ShaderStage::TessellationEvaluation => G::TesselationEvaluation,
        ShaderStage::Geometry => G::Geometry,
        ShaderStage::Fragment => G::Fragment,
        ShaderStage::Compute => G::Compute,
        ShaderStage::Task => G::Task,
        ShaderStage::Mesh => G::Mesh,
        ShaderStage::RayGeneration => G::RayGeneration,
        ShaderStage::AnyHit => G::AnyHit,
        ShaderStage::ClosestHit => G::ClosestHit,
        ShaderStage::Miss => G::Miss,
        ShaderStage::Intersection => G::Intersect,
        ShaderStage::Callable => G::Callable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glslang_accepts_valid_glsl_and_rejects_invalid_from_many_threads() {
        let good = "#version 450 core\nlayout(local_size_x = 1) in;\nvoid main() {}\n";
        let bad = "#version 450 core\nlayout(local_size_x = 1) in;\nlayout(rgba8) uniform writeonly image2DArray img;\nvoid main() { uint n = uint(imageSize(img, 0).z); }\n";
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..8 {
                        assert_eq!(check(ShaderStage::Compute, good), Ok(None));
                        let m = check(ShaderStage::Compute, bad).ok().flatten().unwrap_or_default();
                        assert!(m.contains("imageSize"), "{m}");
                    }
                });
            }
        });
        let undeclared = check(ShaderStage::Vertex, "#version 450 core\nvoid main() { int b = gl_BaseVertex; }\n");
        assert!(matches!(&undeclared, Ok(Some(m)) if m.contains("gl_BaseVertex")), "{undeclared:?}");
        assert_eq!(check(ShaderStage::Compute, "a\0b"), Ok(Some("the GLSL contains a NUL byte".to_string())));
    }
}
