//! Writing whole archives to disk, and merging archives: exact or refused.

use crate::durable::write_atomic_with;
use crate::entry::WriteEntry;
use crate::error::ArchiveError;
use crate::reader::Archive;
use crate::writer::{prepare_shard, ArchiveMeta, ShardRecord};
use std::path::Path;

/// Encodes `entries` and streams them to `path` atomically. Returns the file size.
///
/// Refuses ([`ArchiveError::Conflict`]) entries in which one label names two pipelines, and
/// ([`ArchiveError::Incompatible`]) an entry whose state or specializations a reader would
/// refuse ([`PipelineEntry::check`](crate::PipelineEntry::check)) and device data the format
/// cannot hold ([`check_device_data`](crate::check_device_data)).
pub fn write_entries(path: &Path, entries: &[WriteEntry], meta: &ArchiveMeta) -> Result<usize, ArchiveError> {
    write_shard_entries(path, entries, meta, None)
}

/// [`write_entries`] for a shard archive: records `shard` in the meta section (with `None`,
/// exactly [`write_entries`]).
pub fn write_shard_entries(
    path: &Path,
    entries: &[WriteEntry],
    meta: &ArchiveMeta,
    shard: Option<&ShardRecord>,
) -> Result<usize, ArchiveError> {
    check_unique_labels(entries)?;
    crate::writer::check_entries(entries)?;
    crate::writer::check_device_data(entries, meta).map_err(ArchiveError::Incompatible)?;
    let layout = prepare_shard(entries, meta, shard);
    let mut written = 0;
    write_atomic_with(path, layout.len(), |w| {
        written = layout.write_to(&mut WriteAdapter(w))?;
        Ok(())
    })?;
    Ok(written)
}

/// Lets the generic encoder write into a `dyn Write`.
struct WriteAdapter<'a>(&'a mut dyn std::io::Write);

impl std::io::Write for WriteAdapter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Checks that every label names exactly one pipeline among `entries` (a pipeline may have
/// several labels). Every archive granary writes passes this check; `verify` enforces it.
pub fn check_unique_labels(entries: &[WriteEntry]) -> Result<(), ArchiveError> {
    let mut owner: std::collections::HashMap<&str, u128> = std::collections::HashMap::new();
    for w in entries {
        for l in w.labels.iter() {
            match owner.insert(l.as_str(), w.entry.key.0) {
                Some(other) if other != w.entry.key.0 => {
                    let (a, b) = (other.min(w.entry.key.0), other.max(w.entry.key.0));
                    return Err(ArchiveError::Conflict(format!(
                        "label '{l}' names two different pipelines ({a:032x} and {b:032x})"
                    )));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// What differs between two archives' writer settings, in words, or `None` when entries from
/// both are comparable.
fn incompatibility(a: &Archive, b: &Archive) -> Option<String> {
    // The requested targets are part of the writer options: two archives of the same options
    // may still hold different targets (a pipeline keeps the targets its stages could be
    // written for), and their entries are comparable.
    (a.key_context() != b.key_context())
        .then(|| writer_options_difference(a.target_options_text(), b.target_options_text()))
}

/// The settings of a writer options text (`key=value` parts joined by `;`, as
/// [`Archive::target_options_text`] gives them) as `(key, value)` pairs in order; a part
/// without `=` is a key with an empty value.
pub fn writer_options_parts(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.split(';').filter(|p| !p.is_empty()).map(|p| p.split_once('=').unwrap_or((p, "")))
}

/// The settings that differ between two writer options texts, each as (key, its value in
/// `a`, its value in `b`), `None` where a text lacks the key; keys in order of first
/// appearance, `a`'s first.
pub fn writer_options_differences<'t>(a: &'t str, b: &'t str) -> Vec<(&'t str, Option<&'t str>, Option<&'t str>)> {
    let value = |t: &'t str, k: &str| writer_options_parts(t).find(|(key, _)| *key == k).map(|(_, v)| v);
    let mut seen = std::collections::BTreeSet::new();
    writer_options_parts(a)
        .chain(writer_options_parts(b))
        .map(|(k, _)| k)
        .filter(|k| seen.insert(*k))
        .map(|k| (k, value(a, k), value(b, k)))
        .filter(|(_, va, vb)| va != vb)
        .collect()
}

/// Which settings differ between two writer options texts ([`writer_options_differences`]),
/// in words: `requested targets spirv vs spirv,msl` when only the targets differ, else each
/// differing setting with both values (`profile default vs vulkan1.3; spirv-version
/// 1.3+caps=0x0 vs 1.6+caps=0x0`), long values shortened. Both texts equal: `no setting
/// differs`.
pub fn writer_options_difference(a: &str, b: &str) -> String {
    fn short(v: &str) -> String {
        const MAX: usize = 60;
        match v.char_indices().nth(MAX) {
            Some((i, _)) => format!("{}…", &v[..i]),
            None if v.is_empty() => "(none)".into(),
            None => v.to_string(),
        }
    }
    match writer_options_differences(a, b).as_slice() {
        [] => "no setting differs".into(),
        [("targets", Some(ta), Some(tb))] => format!("requested targets {ta} vs {tb}"),
        d => d
            .iter()
            .map(|(k, va, vb)| {
                let v = |x: &Option<&str>| x.map_or("(absent)".into(), short);
                format!("{k} {} vs {}", v(va), v(vb))
            })
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// Checks that shard archives among `inputs` form complete sets (see [`merge`]); inputs
/// without a shard record pass when none has one.
///
/// Shards harvested on different devices are different sets: inputs are grouped by the
/// devices they hold binaries for (none, for a translation-only harvest), and each group must
/// be every shard `0..N` of one script exactly once. Groups may differ in script and N (a
/// device without graphics pipeline libraries harvests the expanded script).
fn check_shards(inputs: &[Archive]) -> Result<(), ArchiveError> {
    let Some(first) = inputs.iter().position(|a| a.shard().is_some()) else {
        return Ok(());
    };
    // Device set (sorted identity encodings) → the inputs harvested on it.
    let mut groups: std::collections::BTreeMap<Vec<Vec<u8>>, Vec<usize>> = std::collections::BTreeMap::new();
    for (i, a) in inputs.iter().enumerate() {
        if a.shard().is_none() {
            return Err(ArchiveError::Incompatible(format!(
                "cannot merge {} ({}) with {}, which is not a shard archive: merge the shards of one \
                 script first, then merge the result with other archives",
                name_of(&inputs[first], first),
                inputs[first].shard().map(|r| r.to_string()).unwrap_or_default(),
                name_of(a, i)
            )));
        }
        let mut devices: Vec<Vec<u8>> = a.devices()?.iter().map(|d| d.identity().encode()).collect();
        devices.sort();
        groups.entry(devices).or_default().push(i);
    }
    let several = groups.len() > 1;
    for members in groups.values() {
        let on = if several {
            match inputs[members[0]].devices()?.iter().map(|d| d.identity().describe()).collect::<Vec<_>>() {
                d if d.is_empty() => " (harvested without a device)".to_string(),
                d => format!(" (harvested on {})", d.join(", ")),
            }
        } else {
            String::new()
        };
        check_shard_set(inputs, members, &on)?;
    }
    Ok(())
}

/// [`check_shards`] for one group: `members` (indices into `inputs`, every one a shard
/// archive) must be shards `0..N` of one script, each once. `on` names the group's devices in
/// messages where there are several groups.
fn check_shard_set(inputs: &[Archive], members: &[usize], on: &str) -> Result<(), ArchiveError> {
    let first = members[0];
    let Some(reference) = inputs[first].shard() else { return Ok(()) };
    let mut seen: std::collections::BTreeMap<u32, usize> = std::collections::BTreeMap::new();
    for &i in members {
        let a = &inputs[i];
        let Some(s) = a.shard() else { continue };
        if s.count != reference.count || s.script != reference.script {
            let what = if s.script != reference.script { "scripts" } else { "shard counts" };
            return Err(ArchiveError::Incompatible(format!(
                "cannot merge {} ({reference}) with {} ({s}): they are shards of different {what}{on}{}",
                name_of(&inputs[first], first),
                name_of(a, i),
                if s.script != reference.script {
                    " (or of granary versions that split scripts differently: harvest every shard with one version)"
                } else {
                    ""
                }
            )));
        }
        if let Some(j) = seen.insert(s.index, i) {
            return Err(ArchiveError::Incompatible(format!(
                "shard {}/{}{on} is given twice: {} and {}",
                s.index,
                s.count,
                name_of(&inputs[j], j),
                name_of(a, i)
            )));
        }
    }
    let missing: Vec<String> =
        (0..reference.count).filter(|i| !seen.contains_key(i)).map(|i| format!("{i}/{}", reference.count)).collect();
    if !missing.is_empty() {
        return Err(ArchiveError::Incompatible(format!(
            "shard{} {} of script {:032x}{on} {} missing: a merge of shards needs all {} of them",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            reference.script,
            if missing.len() == 1 { "is" } else { "are" },
            reference.count
        )));
    }
    Ok(())
}

fn name_of(a: &Archive, i: usize) -> String {
    a.path().map(|p| p.display().to_string()).unwrap_or_else(|| format!("input {}", i + 1))
}

/// Merges archives into one: the union of their pipelines, each stored once, labels combined.
///
/// Exact or refused: the result is a pure function of the *set* of inputs (any order gives
/// the same entries, hence the same bytes), and
/// - inputs must agree on writer options (which include the requested targets)
///   ([`ArchiveError::Incompatible`] names the two inputs and what differs);
/// - device sections are unioned: per (pipeline, device) where two inputs hold different
///   driver binary sets, the set with the smaller [`BinarySet::hash`](crate::BinarySet::hash)
///   is kept (binaries are not reproducible run to run; this is not a conflict), and device
///   pipeline caches are unioned;
/// - one key with different contents in two inputs, or one label naming different pipelines,
///   is an [`ArchiveError::Conflict`] naming the key or label and both inputs — never "the
///   first one wins".
///
/// Shard archives (`harvest --shard I/N`, [`Archive::shard`]) merge only as complete sets:
/// per set of devices the inputs hold binaries for, every input a shard of the same script
/// and shard count, each index `0..N` exactly once ([`ArchiveError::Incompatible`] names the
/// missing or duplicated shard, or the two inputs that differ). So the shards of one script
/// harvested on two GPUs merge in one call into a two-device archive. The result is an
/// unsharded archive, so merging all N shards gives the bytes of a single-machine harvest of
/// the script.
pub fn merge(inputs: &[Archive]) -> Result<(Vec<WriteEntry>, ArchiveMeta), ArchiveError> {
    check_shards(inputs)?;
    // The reference for compatibility: the first non-empty input (empty ones have no targets).
    let reference = inputs.iter().position(|a| !a.is_empty()).unwrap_or(0);
    for (i, a) in inputs.iter().enumerate() {
        if let Some(why) = inputs.get(reference).and_then(|r| incompatibility(r, a)) {
            return Err(ArchiveError::Incompatible(format!(
                "cannot merge {} with {}: they differ in {why}; merge archives harvested with the same granary \
                 version and the same --targets",
                name_of(&inputs[reference], reference),
                name_of(a, i)
            )));
        }
    }
    let mut by_key: std::collections::BTreeMap<u128, (WriteEntry, usize)> = std::collections::BTreeMap::new();
    for (i, a) in inputs.iter().enumerate() {
        for w in a.entries().map_err(|e| e.with_path_opt(a.path()))? {
            match by_key.entry(w.entry.key.0) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert((w, i));
                }
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    let (have, from) = o.get_mut();
                    if have.entry != w.entry {
                        return Err(ArchiveError::Conflict(format!(
                            "pipeline {:032x} has different contents in {} and {}",
                            w.entry.key.0,
                            name_of(&inputs[*from], *from),
                            name_of(a, i)
                        )));
                    }
                    let mut labels: Vec<String> = have.labels.to_vec();
                    labels.extend(w.labels.iter().filter(|l| !have.labels.contains(l)).cloned());
                    labels.sort();
                    have.labels = labels.into();
                    let mut all = std::mem::take(&mut have.binaries);
                    all.extend(w.binaries);
                    have.binaries =
                        crate::device::resolve_binaries(&all).into_values().map(|(b, _)| b.clone()).collect();
                }
            }
        }
    }
    let all: Vec<WriteEntry> = by_key.into_values().map(|(w, _)| w).collect();
    check_unique_labels(&all)?;
    let mut meta = inputs
        .get(reference)
        .map(|a| ArchiveMeta::new(a.target_options_text()))
        .ok_or_else(|| ArchiveError::Incompatible("nothing to merge: no input archives".into()))?;
    let mut caches: std::collections::BTreeMap<(u128, u128), crate::device::DeviceCache> =
        std::collections::BTreeMap::new();
    for a in inputs {
        for c in a.device_caches().map_err(|e| e.with_path_opt(a.path()))? {
            caches.entry((c.device.id(), c.data.hash().0)).or_insert(c);
        }
    }
    meta.device_caches = caches.into_values().collect();
    Ok((all, meta))
}

impl Archive {
    /// The archive's [`ArchiveMeta`]: its writer options and every device's pipeline caches
    /// (checked), so that it can be rewritten as it was.
    pub fn meta(&self) -> Result<ArchiveMeta, ArchiveError> {
        let mut meta = ArchiveMeta::new(self.target_options_text());
        meta.device_caches = self.device_caches()?;
        Ok(meta)
    }
}

#[cfg(test)]
mod tests {
    use crate::format::ShardRecord;
    use crate::reader::Archive;
    use crate::writer::{encode, prepare_shard, ArchiveMeta};

    fn bytes(shard: Option<&ShardRecord>) -> Vec<u8> {
        let mut out = Vec::new();
        prepare_shard(&[], &ArchiveMeta::new("opts"), shard).write_to(&mut out).unwrap();
        out
    }

    #[test]
    fn shard_record_round_trips_and_no_record_writes_the_unsharded_bytes() {
        assert_eq!(bytes(None), encode(&[], &ArchiveMeta::new("opts")));
        let r = ShardRecord { index: 1, count: 3, script: 0x1234 };
        let a = Archive::from_bytes(bytes(Some(&r))).unwrap();
        a.verify().unwrap();
        assert_eq!(a.shard(), Some(r));
        assert_eq!(Archive::from_bytes(bytes(None)).unwrap().shard(), None);
    }

    #[test]
    fn merge_of_shards_needs_each_shard_of_one_script_once() {
        let shard =
            |index, count, script| Archive::from_bytes(bytes(Some(&ShardRecord { index, count, script }))).unwrap();
        let msg = |inputs: Vec<Archive>| super::merge(&inputs).map(|_| ()).unwrap_err().to_string();
        assert!(super::merge(&[shard(1, 2, 7), shard(0, 2, 7)]).is_ok());
        let (entries, meta) = super::merge(&[shard(0, 1, 7)]).unwrap();
        assert_eq!(encode(&entries, &meta), bytes(None), "a merged shard set is unsharded");
        assert!(msg(vec![shard(0, 3, 7), shard(2, 3, 7)]).contains("shard 1/3 of script"));
        assert!(msg(vec![shard(0, 2, 7), shard(0, 2, 7), shard(1, 2, 7)]).contains("shard 0/2 is given twice"));
        assert!(msg(vec![shard(0, 2, 7), shard(1, 2, 8)]).contains("different scripts"));
        assert!(msg(vec![shard(0, 2, 7), shard(1, 3, 7)]).contains("different shard counts"));
        let plain = Archive::from_bytes(bytes(None)).unwrap();
        assert!(msg(vec![plain, shard(0, 1, 7)]).contains("not a shard archive"));
        assert!(super::merge(&[Archive::from_bytes(bytes(None)).unwrap()]).is_ok());
    }
}
