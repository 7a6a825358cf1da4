//! Interning of what workers answer: stage outputs and driver binaries that several answers
//! carry (pipelines sharing a stage function; NVIDIA's dictionary binary in every set) are
//! kept once in the parent.

use crate::archive::WriteEntry;
use crate::descriptor::Blob;
use crate::sync::lock_std;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Stage outputs received so far, by content: answers for pipelines that share a stage
/// function carry the same bytes, which the parent keeps once.
#[derive(Default)]
pub(crate) struct BlobTable(Mutex<HashMap<u128, Arc<Blob>>>);

impl BlobTable {
    /// `entries` with every stage output and driver binary replaced by the copy already held
    /// (NVIDIA repeats one large dictionary binary in every pipeline's set of a worker), and
    /// each binary set's device by `device`, the parent's identity (the answer was checked to
    /// be for it).
    pub(crate) fn intern(
        &self,
        entries: Vec<WriteEntry>,
        device: Option<&Arc<granary_archive::DeviceIdentity>>,
    ) -> Vec<WriteEntry> {
        let mut table = lock_std(&self.0);
        let mut intern = |b: &Arc<Blob>| table.entry(b.hash().0).or_insert_with(|| b.clone()).clone();
        entries
            .into_iter()
            .map(|w| {
                let mut e = (*w.entry).clone();
                for b in e.stages.iter_mut().flat_map(|s| s.outputs.0.iter_mut().flatten()) {
                    *b = intern(b);
                }
                let binaries = w
                    .binaries
                    .into_iter()
                    .map(|d| {
                        let binaries = d
                            .set
                            .binaries
                            .iter()
                            .map(|b| granary_archive::DeviceBinary { key: b.key.clone(), data: intern(&b.data) })
                            .collect();
                        granary_archive::DeviceBinaries {
                            device: device.cloned().unwrap_or(d.device),
                            set: Arc::new(granary_archive::BinarySet {
                                flags: d.set.flags,
                                pipeline_key: d.set.pipeline_key.clone(),
                                binaries,
                            }),
                        }
                    })
                    .collect();
                WriteEntry { entry: Arc::new(e), labels: w.labels, binaries }
            })
            .collect()
    }
}
