//! `--resume`: the entries of an existing output archive and its journal that the script
//! still produces, kept instead of compiled again.
//!
//! Invariant: exactly the old entries whose keys the current selection produces are kept,
//! labelled as the current script labels them (driver binaries of the archive and the journal
//! combined, one set per device), so a resumed harvest equals a fresh one of the script as it
//! is now; anything else is dropped and counted.

use super::select::Selection;
use super::{HarvestError, HarvestOptions};
use crate::archive::journal::{journal_path, replay_journal, JournalReplay};
use crate::archive::{Archive, WriteEntry};
use crate::capture::Capture;
use crate::descriptor::TargetSet;
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
}

/// Why an archive written with writer options `theirs` cannot be resumed by a harvest writing
/// `ours`: the settings that differ and what to do. Targets and the profile's settings come from
/// `--targets` and `--profile`; any other setting is how this granary build writes its outputs.
fn options_refusal(theirs: &str, ours: &str) -> String {
    // What a profile name resolves to; the same name resolving differently is another build.
    const PROFILE_SETTINGS: [&str; 5] = ["spirv-env", "spirv-version", "msl-version", "hlsl-sm", "glsl-version"];
    let differing = granary_archive::writer_options_difference(theirs, ours);
    let setting = |t: &str, k: &str| {
        t.split(';').find_map(|p| p.strip_prefix(k).and_then(|v| v.strip_prefix('='))).map(str::to_string)
    };
    let differs = |k: &str| setting(theirs, k) != setting(ours, k);
    let build_settings = theirs
        .split(';')
        .chain(ours.split(';'))
        .filter_map(|p| p.split_once('=').map(|(k, _)| k))
        .filter(|k| *k != "targets" && *k != "profile" && !PROFILE_SETTINGS.contains(k));
    let build_differs =
        build_settings.into_iter().any(differs) || (!differs("profile") && PROFILE_SETTINGS.into_iter().any(differs));
    if build_differs {
        return format!(
            "it was written by a granary build that writes its outputs differently ({differing}, archive vs \
             this build): harvest afresh without --resume"
        );
    }
    let (targets, profile) = (setting(theirs, "targets"), setting(theirs, "profile"));
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
pub(crate) fn resume(
    opts: &HarvestOptions,
    capture: &Capture,
    selection: &mut Selection<'_>,
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
    let (kept, dropped) = super::select::keep_scripted(old.into_values(), &labels);
    out.dropped += dropped;
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
