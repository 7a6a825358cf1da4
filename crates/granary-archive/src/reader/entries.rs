//! Reading every entry back as owned, writable entries (feature `write`: merge, resume,
//! salvage-free rewrites).

use super::*;
use crate::entry::WriteEntry;
use crate::entry::{PipelineEntry, StageEntry, TargetOutputs};

impl Archive {
    /// Reads every pipeline back as owned entries, with their device binaries (for merge and
    /// resume).
    pub fn entries(&self) -> Result<Vec<WriteEntry>> {
        let devices = self.devices()?;
        let identities: Vec<Arc<crate::device::DeviceIdentity>> =
            devices.iter().map(|d| Arc::new(d.identity().clone())).collect();
        let mut binary_blobs = std::collections::HashMap::new();
        let mut labels: Vec<Vec<String>> = vec![Vec::new(); self.pipeline_count];
        for (l, p) in self.labels()? {
            labels[p].push(l.to_string());
        }
        let mut blobs: std::collections::HashMap<u32, Arc<Blob>> = std::collections::HashMap::new();
        let mut out = Vec::with_capacity(self.pipeline_count);
        for (p, labels) in self.iter().zip(labels) {
            let p = p?;
            let mut stages = Vec::with_capacity(p.stage_count);
            for s in p.stages()? {
                let mut outputs = TargetOutputs::default();
                for t in Target::ALL {
                    if let Some(i) = s.blob_index(t) {
                        let blob = match blobs.get(&i) {
                            Some(b) => b.clone(),
                            None => {
                                let (_, bytes) = self.blob(i as usize)?;
                                let b = Blob::new(bytes.to_vec());
                                blobs.insert(i, b.clone());
                                b
                            }
                        };
                        outputs.0[t as usize] = Some(blob);
                    }
                }
                let specialization = s
                    .specialization_bytes()?
                    .map(|bytes| blobs.entry(s.specialization).or_insert_with(|| Blob::new(bytes.to_vec())).clone());
                stages.push(StageEntry {
                    key: s.key,
                    stage: s.stage,
                    entry_point: s.entry_point.to_string(),
                    outputs,
                    specialization,
                });
            }
            let layout = p
                .layout_bytes()?
                .map(|bytes| blobs.entry(p.layout).or_insert_with(|| Blob::new(bytes.to_vec())).clone());
            let state =
                p.state_bytes()?.map(|bytes| blobs.entry(p.state).or_insert_with(|| Blob::new(bytes.to_vec())).clone());
            let mut binaries = Vec::new();
            for (d, identity) in devices.iter().zip(&identities) {
                if let Some(set) = d.binaries(&p)? {
                    let set = super::device::owned_set(self, &set, &mut binary_blobs)?;
                    binaries.push(crate::device::DeviceBinaries { device: identity.clone(), set: Arc::new(set) });
                }
            }
            out.push(WriteEntry {
                entry: Arc::new(PipelineEntry { key: p.key, kind: p.kind, stages, layout, state }),
                labels: labels.into(),
                binaries,
            });
        }
        Ok(out)
    }
}
