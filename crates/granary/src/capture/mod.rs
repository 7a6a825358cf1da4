//! Layer 6 — the capture: the concurrent set of compiled entries, snapshots, and writing them
//! out as an archive (layer 5) or a pipelines script (layer 2). It keeps the attached
//! backends (layer 4) for their device caches; the compiler (layer 7) records into it.
//!
//! Invariants (the snapshot contract):
//! - [`Capture::record`] completes with the entry visible: a snapshot that starts after a
//!   `record` call returned contains that entry.
//! - A snapshot never contains a partial entry: entries are immutable `Arc`s inserted whole.
//! - Taking a snapshot locks one shard at a time, only to copy its `Arc`s; encoding and file
//!   I/O happen after every lock is released, so compile calls are never blocked by a write.

use crate::archive::{self, ArchiveError, ArchiveMeta, WriteEntry};
use crate::backend::Backend;
use crate::descriptor::{PipelineDescriptor, PipelineEntry, TargetOutputs, TargetSet};
use crate::sync::ShardedMap;
use granary_archive::{DeviceBinaries, DeviceCache};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// What a capture keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CaptureMode {
    /// Compiled outputs (for archives).
    #[default]
    Outputs,
    /// Descriptors only (for pipelines scripts); stage outputs are dropped.
    Descriptors,
    /// Both.
    Both,
}

#[derive(Clone)]
struct Captured {
    entry: Arc<PipelineEntry>,
    labels: Arc<[String]>,
    descriptor: Option<Arc<PipelineDescriptor>>,
    /// At most one binary set per device (the smaller `BinarySet::hash` where two meet).
    binaries: Vec<DeviceBinaries>,
}

/// Adds `new` to `have`: one set per device; where a device already has a different set, the
/// one with the smaller [`granary_archive::BinarySet::hash`] stays, so the result does not
/// depend on arrival order. (Driver binaries of one pipeline differ from compile to compile;
/// that is normal, not a conflict.)
fn add_binaries(have: &mut Vec<DeviceBinaries>, new: impl IntoIterator<Item = DeviceBinaries>) {
    for b in new {
        match have.iter_mut().find(|h| h.device == b.device) {
            None => have.push(b),
            Some(h) => {
                if h.set != b.set && b.set.hash() < h.set.hash() {
                    *h = b;
                }
            }
        }
    }
}

/// A point-in-time copy of a capture's contents, sorted by key.
pub struct Snapshot {
    /// Entries with their labels.
    pub entries: Vec<WriteEntry>,
    descriptors: Vec<(Option<String>, Arc<PipelineDescriptor>)>,
}

/// The serializer attached to a compiler (Metal's `MTL4PipelineDataSetSerializer`, Vulkan's
/// `VkPipelineCache`): it records every pipeline the compiler produces.
///
/// Thread safety: `Send + Sync`, fully internally synchronized. `record`, `snapshot`,
/// `write_archive` and `write_script` may all run at the same time from any threads. A write
/// holds every pipeline whose compile returned before the write began, may hold ones that
/// finished during it, and never a partial entry.
pub struct Capture {
    mode: CaptureMode,
    map: ShardedMap<Captured>,
    records: AtomicU64,
    /// The header's writer options: set by [`Capture::for_profile`] or by the first compiler
    /// the capture is attached to; `default`'s when neither happened.
    meta: std::sync::OnceLock<ArchiveMeta>,
    /// One lock per output path, so writes to a path land in snapshot order.
    writes: std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, Arc<std::sync::Mutex<()>>>>,
    /// Backends of the compilers attached to this capture: their device caches (a
    /// `VkPipelineCache`'s data) go into every archive written.
    backends: std::sync::Mutex<Vec<Arc<dyn Backend>>>,
    /// Device caches carried over from an archive (resume).
    caches: std::sync::Mutex<Vec<DeviceCache>>,
}

/// What one `write_archive` wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct WriteReport {
    /// Pipelines in the file.
    pub pipelines: usize,
    /// File size in bytes.
    pub bytes: usize,
}

impl Capture {
    /// An empty capture. Its archives carry the writer options of the profile of the first
    /// compiler it is attached to (`default` if none).
    pub fn new(mode: CaptureMode) -> Self {
        Capture {
            mode,
            map: ShardedMap::new(),
            records: AtomicU64::new(0),
            meta: std::sync::OnceLock::new(),
            writes: Default::default(),
            backends: Default::default(),
            caches: Default::default(),
        }
    }

    /// Keeps `backend` so that archives written from this capture carry its device caches.
    /// A compiler calls this when the capture is attached to it.
    pub fn attach_backend(&self, backend: Arc<dyn Backend>) {
        let mut b = crate::sync::lock_std(&self.backends);
        if !b.iter().any(|x| Arc::ptr_eq(x, &backend)) {
            b.push(backend);
        }
    }

    /// Adds device caches read from an existing archive (resume); written with every archive.
    pub fn insert_device_caches(&self, caches: Vec<DeviceCache>) {
        crate::sync::lock_std(&self.caches).extend(caches);
    }

    /// Every device cache an archive written now carries: those carried over (resume,
    /// `--isolate` workers), then each attached backend's current data; one copy of each
    /// distinct cache, and per device at most the archive's limit
    /// ([`granary_archive::MAX_CACHES_PER_DEVICE`]), the smallest content hashes kept so the
    /// choice does not depend on arrival order.
    pub fn device_caches(&self) -> Result<Vec<DeviceCache>, ArchiveError> {
        let mut all = crate::sync::lock_std(&self.caches).clone();
        let backends = crate::sync::lock_std(&self.backends).clone();
        for b in backends {
            all.extend(b.device_caches().map_err(ArchiveError::Device)?);
        }
        let mut by_device: std::collections::BTreeMap<u128, std::collections::BTreeMap<u128, DeviceCache>> =
            Default::default();
        for c in all {
            by_device.entry(c.device.id()).or_default().insert(c.data.hash().0, c);
        }
        Ok(by_device.into_values().flat_map(|m| m.into_values().take(granary_archive::MAX_CACHES_PER_DEVICE)).collect())
    }

    /// An empty capture whose archives carry the writer options of `profile` and the
    /// requested `targets` (the header's options are what the stage keys were computed under).
    pub fn for_profile(mode: CaptureMode, profile: &crate::frontend::Profile, targets: TargetSet) -> Self {
        let c = Self::new(mode);
        let _ = c.meta.set(crate::archive::portable_meta_for(profile, targets));
        c
    }

    /// Takes the writer options of `profile` and `targets` for its archives unless it has
    /// some already; returns whether its options are those. A compiler calls this when the
    /// capture is attached.
    pub fn adopt_profile(&self, profile: &crate::frontend::Profile, targets: TargetSet) -> bool {
        let want = crate::archive::portable_meta_for(profile, targets);
        self.meta.get_or_init(|| want.clone()).target_options == want.target_options
    }

    fn meta(&self) -> &ArchiveMeta {
        self.meta.get_or_init(crate::archive::portable_meta)
    }

    /// What this capture keeps.
    pub fn mode(&self) -> CaptureMode {
        self.mode
    }

    /// Records a compiled pipeline. Recording the same key again merges its label into the
    /// existing entry.
    pub fn record(&self, entry: &Arc<PipelineEntry>, desc: &PipelineDescriptor) {
        self.record_with_binaries(entry, None, desc)
    }

    /// [`Capture::record`] with the pipeline's binaries for one device. Recording the same key
    /// again merges labels and keeps one binary set per device (the smaller set hash).
    pub fn record_with_binaries(
        &self,
        entry: &Arc<PipelineEntry>,
        binaries: Option<DeviceBinaries>,
        desc: &PipelineDescriptor,
    ) {
        self.records.fetch_add(1, Relaxed);
        let label = desc.label().map(str::to_owned);
        let keep_outputs = self.mode != CaptureMode::Descriptors;
        let keep_desc = self.mode != CaptureMode::Outputs;
        let entry = if keep_outputs {
            entry.clone()
        } else {
            let mut e = (**entry).clone();
            for s in &mut e.stages {
                s.outputs = TargetOutputs::default();
            }
            Arc::new(e)
        };
        // Build everything before taking the shard lock.
        let fresh = Captured {
            entry,
            labels: label.iter().cloned().collect::<Vec<_>>().into(),
            descriptor: keep_desc.then(|| Arc::new(desc.clone())),
            binaries: if keep_outputs { binaries.into_iter().collect() } else { Vec::new() },
        };
        let key = fresh.entry.key.0;
        self.map.with_entry(key, move |m| match m.get_mut(&key) {
            None => {
                m.insert(key, fresh);
            }
            Some(existing) => {
                // Descriptors with one key may differ in names and labels. Which one a script
                // export shows must not depend on which thread recorded first: keep the one
                // that ranks first (see `ranks_before`), whatever the order.
                if let (Some(new), Some(old)) = (&fresh.descriptor, &existing.descriptor) {
                    if ranks_before(new, old) {
                        existing.descriptor = Some(new.clone());
                    }
                }
                add_binaries(&mut existing.binaries, fresh.binaries);
                if let Some(l) = label {
                    if !existing.labels.contains(&l) {
                        let mut v: Vec<String> = existing.labels.to_vec();
                        v.push(l);
                        v.sort();
                        existing.labels = v.into();
                    }
                }
            }
        });
    }

    /// Adds entries read from an existing archive (used to resume a harvest).
    pub fn insert_archived(&self, entries: Vec<WriteEntry>) {
        for w in entries {
            let key = w.entry.key.0;
            self.map.with_entry(key, |m| {
                let slot = m.entry(key).or_insert_with(|| Captured {
                    entry: w.entry.clone(),
                    labels: Arc::from(Vec::new()),
                    descriptor: None,
                    binaries: Vec::new(),
                });
                add_binaries(&mut slot.binaries, w.binaries.iter().cloned());
                let mut v: Vec<String> = slot.labels.to_vec();
                for l in w.labels.iter() {
                    if !v.contains(l) {
                        v.push(l.clone());
                    }
                }
                slot.labels = v.into();
            });
        }
    }

    /// Adds `label` to the entry with `key`, if present. Returns whether the entry exists.
    pub fn add_label(&self, key: crate::descriptor::PipelineKey, label: &str) -> bool {
        self.map.with_entry(key.0, |m| match m.get_mut(&key.0) {
            None => false,
            Some(e) => {
                if !e.labels.iter().any(|l| l == label) {
                    let mut v = e.labels.to_vec();
                    v.push(label.to_string());
                    e.labels = v.into();
                }
                true
            }
        })
    }

    /// Distinct pipelines captured so far.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing has been captured.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Total `record` calls (including repeats of one key).
    pub fn records(&self) -> u64 {
        self.records.load(Relaxed)
    }

    /// Copies the current contents out, sorted by key.
    pub fn snapshot(&self) -> Snapshot {
        let mut items = self.map.snapshot();
        items.sort_unstable_by_key(|(k, _)| *k);
        let descriptors =
            items.iter().filter_map(|(_, c)| c.descriptor.clone().map(|d| (d.label().map(str::to_owned), d))).collect();
        let entries = items
            .into_iter()
            .map(|(_, c)| WriteEntry { entry: c.entry, labels: c.labels, binaries: c.binaries })
            .collect();
        Snapshot { entries, descriptors }
    }

    /// Writes a snapshot as an archive, atomically replacing `path` (Metal's
    /// `serializeAsArchiveAndFlushToURL:`). Safe to call while other threads compile.
    ///
    /// Calls for one path from several threads land in the order their snapshots were taken:
    /// the per-path write lock is held from the snapshot to the rename, so an older snapshot
    /// can never replace a newer one. (Compile calls never take that lock.)
    pub fn write_archive(&self, path: &Path) -> Result<WriteReport, ArchiveError> {
        let lock = {
            let mut paths = crate::sync::lock_std(&self.writes);
            paths.entry(path.to_path_buf()).or_default().clone()
        };
        let _in_order = crate::sync::lock_std(&lock);
        let snap = self.snapshot();
        let mut meta = self.meta().clone();
        meta.device_caches = self.device_caches()?;
        let bytes = archive::write_entries(path, &snap.entries, &meta)?;
        Ok(WriteReport { pipelines: snap.entries.len(), bytes })
    }

    /// Writes the captured descriptors as a self-contained pipelines script, atomically. One
    /// pipeline per key; where several descriptors share a key (they differ only in labels or
    /// names), the one that ranks first is written — labelled before unlabelled, then the
    /// smallest label, then the smallest script text — so the file does not depend on which
    /// thread recorded first.
    /// Needs [`CaptureMode::Descriptors`] or [`CaptureMode::Both`]; otherwise the script has
    /// no pipelines.
    pub fn write_script(&self, path: &Path) -> Result<usize, ArchiveError> {
        let snap = self.snapshot();
        let list: Vec<(Option<String>, &PipelineDescriptor)> =
            snap.descriptors.iter().map(|(l, d)| (l.clone(), &**d)).collect();
        let text = crate::script::script_json(&list);
        archive::write_atomic(path, text.as_bytes())?;
        Ok(list.len())
    }
}

/// Whether descriptor `a` is the one a script export should show rather than `b` (both with
/// one key): labelled before unlabelled, then the smaller label, then the smaller script text.
fn ranks_before(a: &PipelineDescriptor, b: &PipelineDescriptor) -> bool {
    use std::cmp::Ordering;
    let rank = |d: &PipelineDescriptor| (d.label().is_none(), d.label().map(str::to_owned));
    match rank(a).cmp(&rank(b)) {
        Ordering::Less => true,
        Ordering::Greater => false,
        Ordering::Equal => {
            let text = |d: &PipelineDescriptor| crate::script::script_json(&[(d.label().map(str::to_owned), d)]);
            text(a) < text(b)
        }
    }
}
