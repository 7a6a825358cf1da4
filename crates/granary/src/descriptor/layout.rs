//! An explicit resource layout, as a pipelines script may give it (docs/FORMAT.md §2).

use super::key::{Canonical, Encoder};
use granary_archive::{Immediates, LayoutBinding};

/// A pipeline's resource layout given explicitly instead of derived from its shaders. It must
/// be a superset of what the shaders use; it is part of the pipeline key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExplicitLayout {
    /// Bindings, strictly sorted by (group, binding).
    pub bindings: Vec<LayoutBinding>,
    /// The immediate-data (push-constant) block, if any.
    pub immediates: Option<Immediates>,
}

impl Canonical for ExplicitLayout {
    fn encode(&self, e: &mut Encoder) {
        e.u64(self.bindings.len() as u64);
        for b in &self.bindings {
            e.u32(b.group);
            e.u32(b.binding);
            e.u8(b.kind as u8);
            e.u32(b.count);
            // A portable layout names graphics and compute stages only (the script refuses the
            // ray-tracing ones), whose bits all sit in the mask's low byte.
            e.u8(b.visibility.0 as u8);
        }
        e.option(self.immediates.as_ref(), |e, i| {
            e.u32(i.size);
            e.u8(i.visibility.0 as u8);
        });
    }
}
