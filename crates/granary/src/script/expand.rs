//! `expand_unspecialized`: a pipeline whose colour output is unspecialized, expanded into fully
//! specialized variants for a device backend that cannot leave the output open (no graphics
//! pipeline libraries).

use crate::descriptor::{
    Blend, ColorWrites, MaybeSpecialized, PipelineDescriptor, RenderPipelineDescriptor, TextureFormat,
};
use serde::{Deserialize, Serialize};

/// What an unspecialized colour attachment is expanded over. In the script:
/// `"expand_unspecialized": {"formats": ["rgba8unorm", "bgra8unorm-srgb"], "blend": "off",
/// "write_mask": "rgba"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expansion {
    /// Formats an unspecialized colour format takes, one variant per format (per combination
    /// where several attachments are unspecialized).
    pub formats: Vec<TextureFormat>,
    /// The blend an unspecialized blend takes (default `off`).
    #[serde(default = "blend_off")]
    pub blend: Blend,
    /// The write mask an unspecialized write mask takes (default `rgba`).
    #[serde(default = "all_channels")]
    pub write_mask: ColorWrites,
}

fn blend_off() -> Blend {
    Blend::Off
}

fn all_channels() -> ColorWrites {
    ColorWrites::ALL
}

/// A script's pipelines after [`Expansion::apply`].
#[derive(Debug, Default)]
pub struct Expanded {
    /// The variants: `(index, script index of the pipeline it came from, descriptor)`, indices
    /// numbered after the script's pipelines.
    pub variants: Vec<(usize, usize, PipelineDescriptor)>,
    /// Script indices of the pipelines replaced by their variants (or by an error).
    pub replaced: std::collections::HashSet<usize>,
    /// `(script index, name, message)` of each pipeline that could not be expanded.
    pub errors: Vec<(usize, String, String)>,
    /// The variants are harvested beside the pipelines they come from (`harvest
    /// --whole-variants`), which stay selected: `replaced` then names the pipelines that have
    /// variants, and `errors` fail nothing (such a pipeline is harvested only as it is).
    pub beside: bool,
}

impl Expanded {
    /// The script index a harvest index stands for: a variant's original, else itself.
    pub fn origin(&self, index: usize) -> usize {
        let base = self.variants.first().map_or(usize::MAX, |v| v.0);
        index.checked_sub(base).and_then(|k| self.variants.get(k)).map_or(index, |(_, o, _)| *o)
    }
}

/// Most variants one pipeline may expand into (formats ^ unspecialized attachments).
pub const MAX_VARIANTS: usize = 256;

impl Expansion {
    /// Every valid pipeline of `script` with unspecialized colour output, replaced by its
    /// variants (see [`Expansion::variants`]).
    pub fn apply(&self, script: &super::load::Script) -> Expanded {
        let mut out = Expanded::default();
        for p in &script.pipelines {
            let Ok(d) = &p.descriptor else { continue };
            match self.variants(d, &p.display_name()) {
                None => continue,
                Some(Ok(variants)) => {
                    for v in variants {
                        out.variants.push((script.pipelines.len() + out.variants.len(), p.index, v));
                    }
                }
                Some(Err(message)) => out.errors.push((p.index, p.display_name(), message)),
            }
            out.replaced.insert(p.index);
        }
        out
    }

    /// The variants of `desc`, each labelled `LABEL@FORMAT[+FORMAT...]` (the colour formats in
    /// attachment order; `name` stands in for a missing label), or `None` when `desc` has no
    /// unspecialized colour output. Too many variants, or no formats to expand over, is an
    /// error that names the pipeline.
    pub fn variants(&self, desc: &PipelineDescriptor, name: &str) -> Option<Result<Vec<PipelineDescriptor>, String>> {
        let PipelineDescriptor::Render(r) = desc else { return None };
        if !desc.needs_libraries() {
            return None;
        }
        let open: Vec<usize> = r
            .state
            .color_attachments
            .iter()
            .enumerate()
            .filter(|(_, c)| matches!(c.format, MaybeSpecialized::Unspecialized))
            .map(|(i, _)| i)
            .collect();
        if !open.is_empty() && self.formats.is_empty() {
            return Some(Err(format!("pipeline '{name}': expand_unspecialized.formats is empty")));
        }
        let count = open.iter().try_fold(1usize, |n, _| n.checked_mul(self.formats.len()));
        if count.is_none_or(|n| n > MAX_VARIANTS) {
            return Some(Err(format!(
                "pipeline '{name}': {} unspecialized colour formats over {} formats make more than {MAX_VARIANTS} variants",
                open.len(),
                self.formats.len()
            )));
        }
        let mut out = Vec::new();
        let mut choice = vec![0usize; open.len()];
        loop {
            let mut v: RenderPipelineDescriptor = r.clone();
            for (slot, &i) in open.iter().enumerate() {
                v.state.color_attachments[i].format = MaybeSpecialized::Is(self.formats[choice[slot]]);
            }
            for c in &mut v.state.color_attachments {
                if matches!(c.blend, MaybeSpecialized::Unspecialized) {
                    c.blend = MaybeSpecialized::Is(self.blend);
                }
                if matches!(c.write_mask, MaybeSpecialized::Unspecialized) {
                    c.write_mask = MaybeSpecialized::Is(self.write_mask);
                }
            }
            let formats: Vec<String> = v
                .state
                .color_attachments
                .iter()
                .map(|c| match c.format {
                    MaybeSpecialized::Is(f) => {
                        serde_json::to_value(f).ok().and_then(|j| j.as_str().map(str::to_string)).unwrap_or_default()
                    }
                    MaybeSpecialized::Unspecialized => "unspecialized".to_string(),
                })
                .collect();
            v.label = Some(format!("{name}@{}", formats.join("+")));
            out.push(PipelineDescriptor::Render(v));
            // Next combination (odometer, last attachment fastest).
            let mut k = open.len();
            loop {
                if k == 0 {
                    return Some(Ok(out));
                }
                k -= 1;
                choice[k] += 1;
                if choice[k] < self.formats.len() {
                    break;
                }
                choice[k] = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::{ColorAttachment, FunctionDescriptor, Library, PrimitiveState, RenderState};

    fn pipeline(attachments: Vec<ColorAttachment>) -> PipelineDescriptor {
        let lib = Library::wgsl("l", "");
        let f = FunctionDescriptor::Library { library: lib, name: "main".into() };
        PipelineDescriptor::Render(RenderPipelineDescriptor {
            label: Some("p".into()),
            vertex: f.clone(),
            fragment: Some(f),
            state: RenderState {
                vertex_buffers: vec![],
                primitive: PrimitiveState::default(),
                color_attachments: attachments,
                depth_stencil: None,
                sample_count: 1,
                alpha_to_coverage: false,
            },
            layout: None,
        })
    }

    #[test]
    fn every_combination_once_with_defaults_for_blend_and_mask() {
        use TextureFormat::*;
        let e = Expansion { formats: vec![Rgba8unorm, R32float], blend: Blend::Off, write_mask: ColorWrites::ALL };
        let fixed = ColorAttachment { format: MaybeSpecialized::Is(Rgba16float), ..ColorAttachment::unspecialized() };
        let d = pipeline(vec![ColorAttachment::unspecialized(), fixed, ColorAttachment::unspecialized()]);
        let v = e.variants(&d, "p").expect("expands").expect("ok");
        let labels: Vec<_> = v.iter().map(|d| d.label().unwrap().to_string()).collect();
        assert_eq!(
            labels,
            [
                "p@rgba8unorm+rgba16float+rgba8unorm",
                "p@rgba8unorm+rgba16float+r32float",
                "p@r32float+rgba16float+rgba8unorm",
                "p@r32float+rgba16float+r32float"
            ]
        );
        for d in &v {
            assert!(!d.needs_libraries(), "{:?}", d.label());
        }
        // Fully specialized pipelines are not expanded; too many variants are refused.
        assert!(e.variants(&v[0], "q").is_none());
        let many = pipeline(vec![ColorAttachment::unspecialized(); 9]);
        assert!(e.variants(&many, "m").unwrap().unwrap_err().contains("more than 256 variants"));
    }
}
