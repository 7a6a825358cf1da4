//! Writing descriptors back out as a pipelines script (what a capture exports).

use super::raw::*;
use crate::descriptor::{ConstantId, ConstantValue, FunctionDescriptor, Library, PipelineDescriptor, SourceKind};
use base64::Engine as _;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Renders pipelines as a self-contained script: every library's source is written inline, so
/// the file can be replayed anywhere. Output is deterministic for a given input order; library
/// names that clash between different contents get a `~N` suffix.
pub fn script_json(pipelines: &[(Option<String>, &PipelineDescriptor)]) -> String {
    let mut libs = Libraries::default();
    let raw_pipelines: Vec<RawPipeline> = pipelines
        .iter()
        .map(|(label, d)| match d {
            PipelineDescriptor::Render(r) => RawPipeline {
                label: label.clone(),
                render: Some(RawRender {
                    vertex: libs.function(&r.vertex),
                    fragment: r.fragment.as_ref().map(|f| libs.function(f)),
                    vertex_buffers: r.state.vertex_buffers.clone(),
                    primitive: r.state.primitive.clone(),
                    color_attachments: r.state.color_attachments.clone(),
                    depth_stencil: r.state.depth_stencil.clone(),
                    sample_count: r.state.sample_count,
                    alpha_to_coverage: r.state.alpha_to_coverage,
                }),
                compute: None,
                layout: r.layout.as_deref().map(raw_layout),
            },
            PipelineDescriptor::Compute(c) => RawPipeline {
                label: label.clone(),
                render: None,
                compute: Some(RawCompute { function: libs.function(&c.compute) }),
                layout: c.layout.as_deref().map(raw_layout),
            },
        })
        .collect();
    let libraries: Vec<RawLibrary> = libs.by_name.into_values().map(|l| raw_library(&l.0, l.1)).collect();
    let top = serde_json::json!({
        "granary_script": SCRIPT_VERSION,
        "libraries": libraries,
        "pipelines": raw_pipelines,
    });
    // Serializing a `Value` built from derive-serialized types cannot fail.
    serde_json::to_string_pretty(&top).unwrap_or_default() + "\n"
}

#[derive(Default)]
struct Libraries {
    /// name → (library, chosen name)
    by_name: BTreeMap<String, (Arc<Library>, String)>,
    by_hash: BTreeMap<u128, String>,
}

impl Libraries {
    fn name_for(&mut self, lib: &Arc<Library>) -> String {
        if let Some(n) = self.by_hash.get(&lib.hash().0) {
            return n.clone();
        }
        let mut name = lib.name().to_string();
        let mut n = 2;
        while self.by_name.contains_key(&name) {
            name = format!("{}~{n}", lib.name());
            n += 1;
        }
        self.by_hash.insert(lib.hash().0, name.clone());
        self.by_name.insert(name.clone(), (lib.clone(), name.clone()));
        name
    }

    fn function(&mut self, f: &FunctionDescriptor) -> RawFunction {
        match f {
            FunctionDescriptor::Library { library, name } => RawFunction {
                library: Some(self.name_for(library)),
                function: Some(name.clone()),
                specialize: None,
                constants: None,
                name: None,
            },
            FunctionDescriptor::Specialized { function, constants, specialized_name } => RawFunction {
                library: None,
                function: None,
                specialize: Some(Box::new(self.function(function))),
                constants: Some(
                    constants
                        .iter()
                        .map(|c| {
                            let (name, id) = match &c.id {
                                ConstantId::Name(n) => (Some(n.clone()), None),
                                ConstantId::Id(i) => (None, Some(*i)),
                            };
                            let mut rc = RawConstant { name, id, bool: None, i32: None, u32: None, f32: None };
                            match c.value {
                                ConstantValue::Bool(v) => rc.bool = Some(v),
                                ConstantValue::I32(v) => rc.i32 = Some(v),
                                ConstantValue::U32(v) => rc.u32 = Some(v),
                                ConstantValue::F32(v) => rc.f32 = Some(v),
                            }
                            rc
                        })
                        .collect(),
                ),
                name: specialized_name.clone(),
            },
        }
    }
}

fn raw_library(lib: &Library, name: String) -> RawLibrary {
    let (source, spirv_base64) = match lib.kind() {
        SourceKind::Spirv => (None, Some(base64::engine::general_purpose::STANDARD.encode(lib.source()))),
        _ => (Some(String::from_utf8_lossy(lib.source()).into_owned()), None),
    };
    RawLibrary { name, kind: Some(lib.kind()), stage: lib.glsl_stage(), path: None, source, spirv_base64 }
}

fn raw_layout(l: &crate::descriptor::ExplicitLayout) -> RawLayout {
    let stages = |m: crate::descriptor::StageMask| m.stages().collect::<Vec<_>>();
    RawLayout {
        bindings: l
            .bindings
            .iter()
            .map(|b| RawBinding {
                group: b.group,
                binding: b.binding,
                kind: b.kind,
                count: (b.count != 0).then_some(b.count),
                visibility: stages(b.visibility),
            })
            .collect(),
        immediates: l.immediates.map(|i| RawImmediates { size: i.size, visibility: stages(i.visibility) }),
    }
}
