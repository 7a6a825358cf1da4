//! `--resume`: the entries of an existing output archive and its journal that the script
//! still produces, kept instead of compiled again.
//!
//! Invariant: exactly the old entries whose keys the current selection produces are kept,
//! labelled as the current script labels them (driver binaries of the archive and the journal
//! combined, one set per device), so a resumed harvest equals a fresh one of the script as it
//! is now; anything else is dropped and counted. With a device backend an entry is kept only
//! if it already has a binary set (binaries, or a record compiled into the device's cache
//! data) for exactly this harvest's device identity; the others are compiled again on it and
//! keep their other devices' binary sets, so the result equals a fresh harvest on this device
//! merged with the old archive's entries the script produces.

use super::select::Selection;
use super::{HarvestError, HarvestOptions};
use crate::archive::journal::{journal_path, replay_journal, JournalReplay};
use crate::archive::{Archive, WriteEntry};
use crate::capture::Capture;
use crate::descriptor::TargetSet;
use granary_archive::DeviceIdentity;
use std::collections::{HashMap, HashSet};

/// What `--resume` found and kept.
#[derive(Default)]
pub(crate) struct Resumed {
    /// Script pipelines whose entry was kept (not recompiled).
    pub(crate) pipelines: usize,
    /// Of those, the pipelines whose entry only the journal held (compiled by the interrupted
    /// run after the archive was last written).
    pub(crate) from_journal: usize,
    /// Old entries (archive and journal, distinct keys) the script no longer produces.
    pub(crate) dropped: usize,
    /// Intact journal records replayed.
    pub(crate) journal_records: usize,
    /// What replay ignored at the journal's end, in words.
    pub(crate) journal_damage: Option<String>,
    /// The existing journal's replay (its entries taken out), to continue it; `None`: start
    /// a new journal at the first flush.
    pub(crate) reopen: Option<JournalReplay>,
    /// Keys of the kept entries (already durable in the archive or the journal).
    pub(crate) kept: HashSet<u128>,
    /// The targets of each kept script pipeline.
    pub(crate) targets: Vec<(usize, TargetSet)>,
    /// Script pipelines whose entry the old archive or journal holds without a binary set for
    /// this harvest's device: left in the selection, so compiled on the device again.
    pub(crate) recompiled: usize,
    /// Those pipelines' old entries (labelled from the script, with the binary sets of the
    /// other devices): put back into the capture after compiling ([`restore_elsewhere`]), so
    /// the other devices' sections stay as they were.
    pub(crate) elsewhere: Vec<WriteEntry>,
}

/// Why an archive written with writer options `theirs` cannot be resumed by a harvest writing
/// `ours`: the settings that differ and what to do. Targets and the profile's settings come from
/// `--targets` and `--profile`; any other setting is how this granary build writes its outputs.
fn options_refusal(theirs: &str, ours: &str) -> String {
    // What a profile name resolves to; the same name resolving differently is another build.
    const PROFILE_SETTINGS: [&str; 5] = ["spirv-env", "spirv-version", "msl-version", "hlsl-sm", "glsl-version"];
    let differing = granary_archive::writer_options_difference(theirs, ours);
    let keys: Vec<&str> = granary_archive::writer_options_differences(theirs, ours).iter().map(|d| d.0).collect();
    let profile_differs = keys.contains(&"profile");
    let build_differs =
        keys.iter().any(|k| *k != "targets" && *k != "profile" && (!PROFILE_SETTINGS.contains(k) || !profile_differs));
    let setting =
        |k: &str| granary_archive::writer_options_parts(theirs).find(|(key, _)| *key == k).map(|(_, v)| v.to_string());
    if build_differs {
        return format!(
            "it was written by a granary build that writes its outputs differently ({differing}, archive vs \
             this build): harvest afresh without --resume"
        );
    }
    let (targets, profile) = (setting("targets"), setting("profile"));
    format!(
        "it was harvested with other options ({differing}, archive vs this command): resume with{}{}, or \
         harvest afresh without --resume",
        targets.map_or(String::new(), |t| format!(" --targets {t}")),
        profile.map_or(String::new(), |p| format!(" --profile {p}")),
    )
}

/// `--resume`: verifies the existing output archive, replays its journal, keeps exactly the
/// entries whose keys the current script produces — labelled as the current script labels
/// them — puts them into `capture`, and removes the pipelines they cover from `selection`.
/// With `device` (a device backend's identity), an entry without a binary set for that exact
/// identity is not kept: its pipelines stay in `selection` and the entry waits in
/// [`Resumed::elsewhere`].
pub(crate) fn resume(
    opts: &HarvestOptions,
    capture: &Capture,
    selection: &mut Selection<'_>,
    device: Option<&DeviceIdentity>,
) -> Result<Resumed, HarvestError> {
    let ctx = selection.ctx;
    // A harvest that was killed mid-write left its temporary file; nothing reads it.
    crate::archive::remove_stale_temporaries(&opts.output);
    let resume_err = |why: String| HarvestError::Resume { path: opts.output.display().to_string(), why };
    let mut out = Resumed::default();
    // Every old entry, archive first, then the journal's records in order.
    // Driver binaries come along: an entry's binary sets from the archive and the journal are
    // combined (one per device, the smaller set hash), as a merge would.
    let mut old: HashMap<u128, WriteEntry> = HashMap::new();
    let mut in_archive: HashSet<u128> = HashSet::new();
    if opts.output.exists() {
        let archive = Archive::read(&opts.output)?;
        archive.verify().map_err(|e| {
            resume_err(format!(
                "{e}; recover its intact part with `granary salvage`, or delete it, or run without --resume"
            ))
        })?;
        if archive.key_context() != ctx {
            let now = crate::frontend::targets::target_options_text(opts.profile, opts.targets);
            return Err(resume_err(options_refusal(archive.target_options_text(), &now)));
        }
        // The requested targets are part of the writer options (checked above): an archive
        // whose pipelines lost a target everywhere is still this harvest's archive.
        old.extend(archive.entries()?.into_iter().map(|w| (w.entry.key.0, w)));
        in_archive.extend(old.keys().copied());
        capture.insert_device_caches(archive.meta()?.device_caches);
    }
    let journal = journal_path(&opts.output);
    let replay = replay_journal(&opts.output).map_err(|e| {
        resume_err(format!("its journal cannot be read: {e}; delete {} or run without --resume", journal.display()))
    })?;
    if let Some(mut r) = replay {
        if let Some(jctx) = r.key_context {
            if jctx != ctx {
                return Err(resume_err(format!(
                    "its journal {} was written with different writer options than this harvest's; delete the journal or run without --resume",
                    journal.display()
                )));
            }
        }
        capture.insert_device_caches(std::mem::take(&mut r.device_caches));
        for w in std::mem::take(&mut r.entries) {
            match old.entry(w.entry.key.0) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(w);
                }
                std::collections::hash_map::Entry::Occupied(mut o) => {
                    if *o.get().entry != *w.entry {
                        return Err(resume_err(format!(
                            "the archive and its journal {} hold different bytes for pipeline {:032x}; delete the journal or run without --resume",
                            journal.display(),
                            w.entry.key.0
                        )));
                    }
                    o.get_mut().binaries.extend(w.binaries);
                }
            }
        }
        out.journal_records = r.records;
        out.journal_damage = r.damaged_tail.as_ref().map(|t| format!("{}: {t}", journal.display()));
        if r.key_context.is_some() {
            out.reopen = Some(r);
        }
    }
    if old.is_empty() {
        return Ok(out);
    }
    // The keys the script produces now, each with every label the script gives it.
    let keys = selection.keys();
    let labels = selection.labels_by_key(&keys);
    if let Some(d) = device {
        refuse_other_expansion(selection, d, &old, &labels).map_err(resume_err)?;
    }
    let (kept, dropped) = super::select::keep_scripted(old.into_values(), &labels);
    out.dropped += dropped;
    // With a device backend, an entry is this harvest's only where it has a binary set for
    // exactly this device (the identity a loader matches binaries and cache data by): one
    // harvested on another GPU or driver version, or without a device, is compiled here again.
    let (kept, elsewhere): (Vec<WriteEntry>, Vec<WriteEntry>) =
        kept.into_iter().partition(|w| device.is_none_or(|d| w.binaries.iter().any(|b| *b.device == *d)));
    let recompile: HashSet<u128> = elsewhere.iter().map(|w| w.entry.key.0).collect();
    out.recompiled = keys.iter().filter(|k| recompile.contains(k)).count();
    out.elsewhere = elsewhere;
    let kept_targets: HashMap<u128, TargetSet> =
        kept.iter().map(|w| (w.entry.key.0, crate::compiler::entry_targets(&w.entry, opts.targets))).collect();
    out.kept = kept.iter().map(|w| w.entry.key.0).collect();
    capture.insert_archived(kept);
    let before = selection.pipelines.len();
    let mut i = 0;
    selection.pipelines.retain(|(index, _)| {
        let keep = !out.kept.contains(&keys[i]);
        if let Some(t) = kept_targets.get(&keys[i]).filter(|_| !keep) {
            out.targets.push((*index, *t));
            out.from_journal += usize::from(!in_archive.contains(&keys[i]));
        }
        i += 1;
        keep
    });
    out.pipelines = before - selection.pipelines.len();
    Ok(out)
}

/// A device without graphics pipeline libraries harvests a script's `expand_unspecialized`
/// variants in place of its pipelines with unspecialized colour output, and a device with them
/// harvests those pipelines: keys the other selection has. Resuming an archive that holds such
/// pipelines with another device's binaries would drop that device's binaries (a merge keeps
/// them), so it is refused, saying what to do instead.
fn refuse_other_expansion(
    selection: &Selection<'_>,
    device: &DeviceIdentity,
    old: &HashMap<u128, WriteEntry>,
    labels: &HashMap<u128, Vec<String>>,
) -> Result<(), String> {
    if selection.script.expand_unspecialized.is_none() {
        return Ok(());
    }
    let expanded_now = !selection.expansion.replaced.is_empty() && !selection.expansion.beside;
    let other = Selection::expansion(selection.script, super::select::Expand::replace_if(!expanded_now));
    let other_keys: HashSet<u128> =
        Selection::new(selection.script, &other, selection.ctx).keys().into_iter().collect();
    let lost: Vec<&WriteEntry> = old
        .values()
        .filter(|w| !labels.contains_key(&w.entry.key.0) && other_keys.contains(&w.entry.key.0))
        .filter(|w| w.binaries.iter().any(|b| *b.device != *device))
        .collect();
    let Some(first) = lost.iter().min_by_key(|w| w.entry.key.0).copied() else { return Ok(()) };
    let others: std::collections::BTreeSet<String> =
        first.binaries.iter().filter(|b| *b.device != *device).map(|b| b.device.describe()).collect();
    let what = if expanded_now {
        "pipelines with unspecialized colour output, which this device harvests as their expand_unspecialized \
         variants instead (it has no graphics pipeline libraries, or --no-pipeline-libraries was given)"
    } else {
        "the script's expand_unspecialized variants, which this device does not harvest (it has graphics \
         pipeline libraries)"
    };
    Err(format!(
        "{} of its pipelines (the first: {}{:032x}), with binaries for {}, are {what}: resuming would drop those \
         binaries. Harvest this device into a new archive and `granary merge` it with this one",
        lost.len(),
        first.labels.first().map(|l| format!("'{l}', ")).unwrap_or_default(),
        first.entry.key.0,
        others.into_iter().collect::<Vec<_>>().join(", ")
    ))
}

/// After compiling: puts the entries `--resume` found without binaries for this device back
/// into `capture` — each keeps the binary sets of the other devices and its labels beside the
/// set compiled now (a pipeline whose compile failed here keeps its old entry), as `granary
/// merge` of a fresh harvest with the old archive would. The entry compiled now must have
/// the old entry's contents (a merge refuses a key with two contents; so does this).
pub(crate) fn restore_elsewhere(
    opts: &HarvestOptions,
    capture: &Capture,
    resumed: &mut Resumed,
) -> Result<(), HarvestError> {
    let elsewhere = std::mem::take(&mut resumed.elsewhere);
    if elsewhere.is_empty() {
        return Ok(());
    }
    let now: HashMap<u128, WriteEntry> = capture.snapshot().entries.into_iter().map(|w| (w.entry.key.0, w)).collect();
    if let Some(w) = elsewhere.iter().find(|w| now.get(&w.entry.key.0).is_some_and(|n| n.entry != w.entry)) {
        return Err(HarvestError::Resume {
            path: opts.output.display().to_string(),
            why: format!(
                "pipeline {:032x}{} compiled now has other contents than its entry in the archive (a merge \
                 refuses such a pair too); harvest into a new archive, or run without --resume",
                w.entry.key.0,
                w.labels.first().map(|l| format!(" ('{l}')")).unwrap_or_default()
            ),
        });
    }
    capture.insert_archived(elsewhere);
    Ok(())
}
