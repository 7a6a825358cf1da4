//! Parsing and validating one library with naga.

use super::error::{ShaderError, ShaderErrorKind};
use crate::descriptor::{Library, ShaderStage, SourceKind};
use naga::valid::{Capabilities, ValidationFlags, Validator};

/// A parsed, validated library.
#[derive(Debug)]
pub struct ParsedLibrary {
    /// naga's IR.
    pub module: naga::Module,
    /// Validation results.
    pub info: naga::valid::ModuleInfo,
}

/// naga's stage for `s`; `None` for the stages naga has no IR for (tessellation, geometry,
/// ray tracing).
pub(crate) fn naga_stage(s: ShaderStage) -> Option<naga::ShaderStage> {
    Some(match s {
        ShaderStage::Vertex => naga::ShaderStage::Vertex,
        ShaderStage::Fragment => naga::ShaderStage::Fragment,
        ShaderStage::Compute => naga::ShaderStage::Compute,
        ShaderStage::Task => naga::ShaderStage::Task,
        ShaderStage::Mesh => naga::ShaderStage::Mesh,
        ShaderStage::TessellationControl
        | ShaderStage::TessellationEvaluation
        | ShaderStage::Geometry
        | ShaderStage::RayGeneration
        | ShaderStage::AnyHit
        | ShaderStage::ClosestHit
        | ShaderStage::Miss
        | ShaderStage::Intersection
        | ShaderStage::Callable => return None,
    })
}

/// The error for a stage naga cannot compile from WGSL or GLSL.
pub(crate) fn no_naga_stage(file: &str, stage: ShaderStage) -> ShaderError {
    ShaderError::new(
        file,
        ShaderErrorKind::EntryPoint,
        format!("naga has no {stage} stage: give {stage} functions as SPIR-V"),
    )
}

pub(crate) fn granary_stage(s: naga::ShaderStage) -> Option<ShaderStage> {
    match s {
        naga::ShaderStage::Vertex => Some(ShaderStage::Vertex),
        naga::ShaderStage::Fragment => Some(ShaderStage::Fragment),
        naga::ShaderStage::Compute => Some(ShaderStage::Compute),
        _ => None,
    }
}

fn text<'a>(lib: &'a Library, file: &str) -> Result<&'a str, ShaderError> {
    std::str::from_utf8(lib.source())
        .map_err(|e| ShaderError::new(file, ShaderErrorKind::Parse, format!("source is not UTF-8: {e}")))
}

/// Parses and validates `lib`, allowing `capabilities` (the union of what the requested
/// targets' profiles allow; each target's own set is checked per stage function).
pub fn parse_library(lib: &Library, capabilities: Capabilities) -> Result<ParsedLibrary, ShaderError> {
    let file = lib.display_path();
    let module = match lib.kind() {
        SourceKind::Wgsl => {
            let src = text(lib, &file)?;
            naga::front::wgsl::parse_str(src).map_err(|e| {
                ShaderError::new(&file, ShaderErrorKind::Parse, e.message().to_string()).at(e.location(src))
            })?
        }
        SourceKind::Glsl => {
            let src = text(lib, &file)?;
            let stage = lib
                .glsl_stage()
                .ok_or_else(|| ShaderError::new(&file, ShaderErrorKind::Parse, "GLSL library has no stage"))?;
            let options =
                naga::front::glsl::Options::from(naga_stage(stage).ok_or_else(|| no_naga_stage(&file, stage))?);
            naga::front::glsl::Frontend::default().parse(&options, src).map_err(|errs| {
                let first = errs.errors.first();
                let message = errs.errors.iter().map(|e| e.kind.to_string()).collect::<Vec<_>>().join("; ");
                ShaderError::new(&file, ShaderErrorKind::Parse, message).at(first.and_then(|e| e.location(src)))
            })?
        }
        SourceKind::Spirv => {
            let options = naga::front::spv::Options {
                adjust_coordinate_space: true,
                strict_capabilities: false,
                block_ctx_dump_prefix: None,
            };
            naga::front::spv::parse_u8_slice(lib.source(), &options)
                .map_err(|e| ShaderError::new(&file, ShaderErrorKind::Parse, e.to_string()))?
        }
    };
    let info = validate(&module, capabilities).map_err(|(mut message, e)| {
        let missing = missing_capabilities(&module, capabilities);
        if !missing.is_empty() {
            message = format!(
                "needs capability {} outside the requested targets' profile: {message}",
                super::profile::capability_names(missing)
            );
        }
        let loc = match lib.kind() {
            SourceKind::Spirv => None,
            _ => std::str::from_utf8(lib.source()).ok().and_then(|s| e.location(s)),
        };
        ShaderError::new(&file, ShaderErrorKind::Validation, message).at(loc)
    })?;
    Ok(ParsedLibrary { module, info })
}

/// The capabilities outside `allowed` that `module` needs: each one without which it fails to
/// validate although it validates with every capability. Empty when the module is invalid for
/// another reason. (naga's own message does not always name the capability: a cast to `f16`
/// reads "Unable to cast".) Only called on a failure, so its extra validations cost nothing
/// on success.
pub(crate) fn missing_capabilities(module: &naga::Module, allowed: Capabilities) -> Capabilities {
    let all = Capabilities::all();
    if validate(module, all).is_err() {
        return Capabilities::empty();
    }
    (all - allowed).iter().filter(|c| validate(module, all - *c).is_err()).fold(Capabilities::empty(), |a, c| a | c)
}

/// Validates `module` with `capabilities`; on failure, naga's message with its whole chain of
/// causes (a missing capability is named there, e.g. "Capability SHADER_FLOAT16 is required").
pub(crate) fn validate(
    module: &naga::Module,
    capabilities: Capabilities,
) -> Result<naga::valid::ModuleInfo, (String, Box<naga::WithSpan<naga::valid::ValidationError>>)> {
    Validator::new(ValidationFlags::all(), capabilities).validate(module).map_err(|e| {
        let mut message = e.as_inner().to_string();
        let mut source = std::error::Error::source(e.as_inner());
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        (message, Box::new(e))
    })
}
