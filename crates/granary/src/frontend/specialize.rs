//! Selecting one entry point and applying specialization constants (naga's override
//! processing).

use super::error::{ShaderError, ShaderErrorKind};
use super::parse::{granary_stage, naga_stage, ParsedLibrary};
use crate::descriptor::{Constant, ConstantId, ConstantValue, ShaderStage};
use std::borrow::Cow;

/// A module reduced to one entry point with every override replaced by a constant.
pub struct Specialized<'a> {
    /// The module.
    pub module: Cow<'a, naga::Module>,
    /// Its validation info.
    pub info: Cow<'a, naga::valid::ModuleInfo>,
}

/// Checks the entry point and constants against `parsed`, then runs override processing.
pub fn specialize<'a>(
    parsed: &'a ParsedLibrary,
    file: &str,
    entry: &str,
    stage: ShaderStage,
    constants: &[Constant],
) -> Result<Specialized<'a>, ShaderError> {
    let module = &parsed.module;
    let err = |kind, msg: String| ShaderError::new(file, kind, msg);
    if !module.entry_points.iter().any(|ep| ep.name == entry && granary_stage(ep.stage) == Some(stage)) {
        let same_name: Vec<String> = module
            .entry_points
            .iter()
            .filter(|ep| ep.name == entry)
            .map(|ep| format!("{:?}", ep.stage).to_lowercase())
            .collect();
        let msg = if same_name.is_empty() {
            let available: Vec<String> = module
                .entry_points
                .iter()
                .filter(|ep| granary_stage(ep.stage) == Some(stage))
                .map(|ep| ep.name.clone())
                .collect();
            format!(
                "no {stage} entry point named '{entry}' (available {stage} entry points: {})",
                if available.is_empty() { "none".to_string() } else { available.join(", ") }
            )
        } else {
            format!("entry point '{entry}' is a {} function, but it is used as the {stage} stage", same_name.join("/"))
        };
        return Err(err(ShaderErrorKind::EntryPoint, msg));
    }

    let mut pipeline_constants = naga::back::PipelineConstants::default();
    for c in constants {
        let found = module.overrides.iter().find(|(_, o)| match &c.id {
            ConstantId::Name(n) => o.name.as_deref() == Some(n.as_str()),
            ConstantId::Id(i) => o.id == Some(*i),
        });
        let Some((_, o)) = found else {
            let names: Vec<String> = module
                .overrides
                .iter()
                .map(|(_, o)| match (&o.name, o.id) {
                    (Some(n), Some(i)) => format!("{n} (@id({i}))"),
                    (Some(n), None) => n.clone(),
                    (None, Some(i)) => format!("@id({i})"),
                    (None, None) => "<anonymous>".into(),
                })
                .collect();
            return Err(err(
                ShaderErrorKind::Constant,
                format!(
                    "no override {} in this library (overrides: {})",
                    c.id,
                    if names.is_empty() { "none".to_string() } else { names.join(", ") }
                ),
            ));
        };
        let expected = match module.types[o.ty].inner {
            naga::TypeInner::Scalar(s) => match (s.kind, s.width) {
                (naga::ScalarKind::Bool, _) => Some("bool"),
                (naga::ScalarKind::Sint, 4) => Some("i32"),
                (naga::ScalarKind::Uint, 4) => Some("u32"),
                (naga::ScalarKind::Float, 4) => Some("f32"),
                _ => None,
            },
            _ => None,
        };
        if expected != Some(c.value.type_name()) {
            return Err(err(
                ShaderErrorKind::Constant,
                format!(
                    "override {} has type {}, but the constant gives a {}",
                    c.id,
                    expected.unwrap_or("(unsupported)"),
                    c.value.type_name()
                ),
            ));
        }
        if let ConstantValue::F32(v) = c.value {
            if !v.is_finite() {
                return Err(err(ShaderErrorKind::Constant, format!("override {} must be finite, got {v}", c.id)));
            }
        }
        // naga matches an override that has an @id only by that id.
        let naga_key = match o.id {
            Some(i) => i.to_string(),
            None => c.id.naga_key(),
        };
        pipeline_constants.insert(naga_key, c.value.as_f64());
    }

    let (module, info) = naga::back::pipeline_constants::process_overrides(
        module,
        &parsed.info,
        Some((naga_stage(stage), entry)),
        &pipeline_constants,
    )
    .map_err(|e| err(ShaderErrorKind::Constant, format!("override processing failed: {e}")))?;
    Ok(Specialized { module, info })
}
