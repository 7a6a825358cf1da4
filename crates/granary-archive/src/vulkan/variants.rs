//! Whole variants of library pipelines (`granary harvest --whole-variants`): a pipeline with
//! unspecialized colour output archived as a library, and beside it, labelled
//! `LABEL@FORMAT[+FORMAT…]`, each of the script's `expand_unspecialized` variants as a whole
//! pipeline with its own binaries. When the loader would link the library with formats one
//! variant has, it creates that variant instead: the optimized whole pipeline, from binaries,
//! where fast-linking costs GPU time per draw and, on a section with NVIDIA's dictionary
//! binary, a compile of the library part.
//!
//! Invariant: a variant is used only if it is provably the pipeline the link would make — its
//! render state equals the library's with every unspecialized field set as the link sets it
//! (the format given for that attachment, blend [`LINK_BLEND`], write mask
//! [`LINK_WRITE_MASK`]), and it has the library's stages (key, stage, entry point,
//! specialization) and resource layout. The label is only where to look; a label that merely
//! looks like a variant's is never trusted. Nothing here calls the driver.

use super::translate::{LINK_BLEND, LINK_WRITE_MASK};
use crate::error::ArchiveError;
use crate::reader::{Archive, PipelineRef};
use crate::render_state::{MaybeSpecialized, RenderState, TextureFormat};
use crate::types::PipelineKind;
use std::collections::HashMap;

/// The archive's candidate variants by the pipeline index of the pipeline they name as their
/// base (`LABEL` of `LABEL@…`): built once per loader, at the first pipeline with
/// unspecialized colour output it creates. Immutable once built (shared by every thread).
#[derive(Debug, Default)]
pub(super) struct Variants {
    by_base: HashMap<usize, Vec<usize>>,
}

impl Variants {
    /// Every label of `archive` of the form `BASE@SUFFIX` whose `BASE` is a label of the
    /// archive, grouped by `BASE`'s pipeline.
    pub(super) fn index(archive: &Archive) -> Result<Variants, ArchiveError> {
        let mut by_base: HashMap<usize, Vec<usize>> = HashMap::new();
        for (label, variant) in archive.labels()? {
            let Some(at) = label.rfind('@') else { continue };
            if let Some(base) = archive.lookup_label(&label[..at])? {
                if base.index() != variant {
                    by_base.entry(base.index()).or_default().push(variant);
                }
            }
        }
        for v in by_base.values_mut() {
            v.sort_unstable();
            v.dedup();
        }
        Ok(Variants { by_base })
    }

    /// Whether the archive has any variant at all.
    pub(super) fn is_empty(&self) -> bool {
        self.by_base.is_empty()
    }

    /// The variant of `base` (whose render state is `state`) that linking it with `formats`
    /// would make, if the archive holds one (see the module's invariant).
    pub(super) fn find<'a>(
        &self,
        archive: &'a Archive,
        base: &PipelineRef<'_>,
        state: &RenderState,
        formats: &[TextureFormat],
    ) -> Result<Option<PipelineRef<'a>>, ArchiveError> {
        let Some(candidates) = self.by_base.get(&base.index()) else { return Ok(None) };
        let Some(want) = linked_state(state, formats) else { return Ok(None) };
        for &i in candidates {
            let v = archive.pipeline(i)?;
            if v.kind() == PipelineKind::Render
                && v.state()?.as_ref() == Some(&want)
                && v.layout_bytes()? == base.layout_bytes()?
                && same_stages(&v, base)?
            {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }
}

/// `state` with every unspecialized colour field set as the loader's link sets it: attachment
/// `i`'s format `formats[i]` (or the last one given), blend [`LINK_BLEND`], write mask
/// [`LINK_WRITE_MASK`]. `None` when a format is needed and none is given.
pub(super) fn linked_state(state: &RenderState, formats: &[TextureFormat]) -> Option<RenderState> {
    let mut out = state.clone();
    for (i, c) in out.color_attachments.iter_mut().enumerate() {
        if let MaybeSpecialized::Unspecialized = c.format {
            c.format = MaybeSpecialized::Is(*formats.get(i).or(formats.last())?);
        }
        if let MaybeSpecialized::Unspecialized = c.blend {
            c.blend = MaybeSpecialized::Is(LINK_BLEND);
        }
        if let MaybeSpecialized::Unspecialized = c.write_mask {
            c.write_mask = MaybeSpecialized::Is(LINK_WRITE_MASK);
        }
    }
    Some(out)
}

/// Whether `a` and `b` have the same stages: key, stage, entry point and specialization bytes,
/// in order.
fn same_stages(a: &PipelineRef<'_>, b: &PipelineRef<'_>) -> Result<bool, ArchiveError> {
    let (a, b) = (a.stages()?, b.stages()?);
    if a.len() != b.len() {
        return Ok(false);
    }
    for (x, y) in a.iter().zip(&b) {
        if x.key != y.key
            || x.stage != y.stage
            || x.entry_point != y.entry_point
            || x.specialization_bytes()? != y.specialization_bytes()?
        {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render_state::{Blend, ColorAttachment, ColorWrites};

    #[test]
    fn linked_state_sets_what_the_link_sets_and_keeps_the_rest() {
        let fixed = ColorAttachment {
            format: MaybeSpecialized::Is(TextureFormat::Rgba16float),
            blend: MaybeSpecialized::Is(Blend::Off),
            write_mask: MaybeSpecialized::Is(ColorWrites::ALL),
        };
        let state = RenderState {
            vertex_buffers: vec![],
            primitive: crate::render_state::PrimitiveState::default(),
            color_attachments: vec![ColorAttachment::unspecialized(), fixed.clone(), ColorAttachment::unspecialized()],
            depth_stencil: None,
            sample_count: 1,
            alpha_to_coverage: false,
        };
        let got = linked_state(&state, &[TextureFormat::Bgra8unorm, TextureFormat::R32float]).expect("formats given");
        let formats: Vec<_> = got.color_attachments.iter().map(|c| c.format).collect();
        // Attachment 2 takes the last format given (as `color_output` links it).
        assert_eq!(
            formats,
            [
                MaybeSpecialized::Is(TextureFormat::Bgra8unorm),
                MaybeSpecialized::Is(TextureFormat::Rgba16float),
                MaybeSpecialized::Is(TextureFormat::R32float)
            ]
        );
        assert_eq!(got.color_attachments[1], fixed);
        assert!(got
            .color_attachments
            .iter()
            .all(|c| c.blend == MaybeSpecialized::Is(LINK_BLEND)
                && c.write_mask == MaybeSpecialized::Is(LINK_WRITE_MASK)));
        assert!(!got.is_unspecialized());
        assert!(linked_state(&state, &[]).is_none(), "an unspecialized format needs a format to link with");
    }
}
