//! Selecting one entry point and applying specialization constants (naga's override
//! processing), then reducing the module to that entry point and what it reaches.

use super::error::{ShaderError, ShaderErrorKind};
use super::parse::{granary_stage, naga_stage, ParsedLibrary};
use crate::descriptor::{Constant, ConstantId, ConstantValue, ShaderStage};
use std::borrow::Cow;

/// A module reduced to one entry point and what it reaches, with every override replaced by a
/// constant.
pub struct Specialized<'a> {
    /// The module.
    pub module: Cow<'a, naga::Module>,
    /// Its validation info.
    pub info: Cow<'a, naga::valid::ModuleInfo>,
}

/// Checks the entry point and constants against `parsed`, runs override processing, and
/// compacts the module to the entry point (re-validated with `capabilities`, the set the
/// library was validated with).
pub fn specialize<'a>(
    parsed: &'a ParsedLibrary,
    capabilities: naga::valid::Capabilities,
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
        Some((naga_stage(stage).ok_or_else(|| super::parse::no_naga_stage(file, stage))?, entry)),
        &pipeline_constants,
    )
    .map_err(|e| err(ShaderErrorKind::Constant, format!("override processing failed: {e}")))?;
    // naga compacts only when it had overrides to apply or other entry points to drop; a
    // library with one entry point would otherwise be written whole (every unused function,
    // type and global) into each output.
    if let Cow::Borrowed(m) = &module {
        let mut compacted = (*m).clone();
        compacted.entry_points.retain(|ep| ep.name == entry && granary_stage(ep.stage) == Some(stage));
        naga::compact::compact(&mut compacted, naga::compact::KeepUnused::No);
        if !same_size(m, &compacted) {
            let info = super::parse::validate(&compacted, capabilities).map_err(|(message, _)| {
                err(ShaderErrorKind::Validation, format!("the module reduced to entry point '{entry}': {message}"))
            })?;
            return Ok(Specialized { module: Cow::Owned(compacted), info: Cow::Owned(info) });
        }
    }
    Ok(Specialized { module, info })
}

/// Whether compaction removed nothing (then the original, already validated, is kept).
fn same_size(a: &naga::Module, b: &naga::Module) -> bool {
    a.entry_points.len() == b.entry_points.len()
        && a.functions.len() == b.functions.len()
        && a.types.len() == b.types.len()
        && a.constants.len() == b.constants.len()
        && a.overrides.len() == b.overrides.len()
        && a.global_variables.len() == b.global_variables.len()
        && a.global_expressions.len() == b.global_expressions.len()
}
