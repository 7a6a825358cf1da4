//! `prune`: the archive a script produces, cut from an existing archive without compiling
//! (what `fossilize-prune` is for): keep exactly the entries whose keys the script produces,
//! label them as the script labels them, drop the rest.

use super::HarvestError;
use crate::archive::{write_entries, Archive, ArchiveMeta, WriteEntry};
use crate::descriptor::{KeyContext, PipelineDescriptor, TargetSet};
use crate::script::Script;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// What [`prune`] did.
#[derive(Debug, Clone, Serialize)]
pub struct PruneReport {
    /// The archive written.
    pub output: String,
    /// Pipelines in the script.
    pub script_pipelines: usize,
    /// Pipelines in the input archive.
    pub archive_pipelines: usize,
    /// Entries kept (distinct keys the script produces).
    pub kept: usize,
    /// Entries dropped (keys the script does not produce).
    pub dropped: usize,
    /// Script pipelines the output has no entry for (never harvested, failed, or invalid in
    /// the script), by label or `pipelines[i]`, in script order.
    pub missing: Vec<String>,
    /// Size of the archive written, in bytes.
    pub bytes: usize,
}

/// Writes to `output` (durably, replacing it whole) the entries of `archive` whose pipeline
/// keys `script` produces, each with the labels the script gives it — the archive a fresh
/// harvest of `script` would write, minus the pipelines `archive` lacks. Nothing is compiled.
///
/// Refuses a damaged archive, and an archive built with other writer options than this
/// granary's (its keys are not comparable with the ones computed from the script).
/// `output` may be `archive` itself.
pub fn prune(archive: &Path, script: &Path, output: &Path) -> Result<PruneReport, HarvestError> {
    let script = Script::load(script)?;
    let refuse = |why: String| HarvestError::Prune { path: archive.display().to_string(), why };
    let input = Archive::read(archive)?;
    input.verify().map_err(|e| refuse(format!("{e}; recover its intact part with `granary salvage` first")))?;
    // The archive's profile and requested targets, recognised by its writer options text;
    // keys are computed under them.
    let targets = crate::frontend::targets::requested_targets(input.target_options_text()).unwrap_or(TargetSet::SPIRV);
    let profile = crate::frontend::profile::PROFILES
        .iter()
        .find(|p| crate::frontend::targets::target_options_text(p, targets) == input.target_options_text())
        .unwrap_or(crate::frontend::Profile::default_profile());
    let ctx = KeyContext { target_options: crate::frontend::targets::target_options_fingerprint(profile, targets) };
    if input.key_context() != ctx {
        return Err(refuse(format!(
            "it was built with different writer options (fingerprint {:032x}) than this granary ({:032x}), so its keys cannot \
             be compared with the script's; harvest the script again instead",
            input.key_context().target_options,
            ctx.target_options
        )));
    }
    let keys: Vec<Option<u128>> =
        script.pipelines.iter().map(|p| p.descriptor.as_ref().ok().map(|d| d.key(&ctx).0)).collect();
    let labels = labels_by_key(
        script.pipelines.iter().zip(&keys).filter_map(|(p, k)| Some((*k.as_ref()?, p.descriptor.as_ref().ok()?))),
    );
    // Driver binaries stay with the pipelines that are kept.
    let (kept, dropped) = keep_scripted(input.entries()?, &labels);
    let have: HashSet<u128> = kept.iter().map(|w| w.entry.key.0).collect();
    let missing = script
        .pipelines
        .iter()
        .zip(&keys)
        .filter(|(_, k)| k.is_none_or(|k| !have.contains(&k)))
        .map(|(p, _)| p.display_name())
        .collect();
    // The writer options checked above, and every device's pipeline caches.
    let meta: ArchiveMeta = input.meta()?;
    let bytes = write_entries(output, &kept, &meta)?;
    Ok(PruneReport {
        output: output.display().to_string(),
        script_pipelines: script.pipelines.len(),
        archive_pipelines: input.len(),
        kept: kept.len(),
        dropped,
        missing,
        bytes,
    })
}

/// Every key the script's valid pipelines produce (given with their keys), with every label
/// the script gives it (in script order). Shared by [`prune`] and `--resume`: both keep
/// exactly these keys.
pub(crate) fn labels_by_key<'a>(
    pipelines: impl Iterator<Item = (u128, &'a PipelineDescriptor)>,
) -> HashMap<u128, Vec<String>> {
    let mut labels: HashMap<u128, Vec<String>> = HashMap::new();
    for (key, d) in pipelines {
        let v = labels.entry(key).or_default();
        if let Some(l) = d.label() {
            if !v.iter().any(|x| x == l) {
                v.push(l.to_string());
            }
        }
    }
    labels
}

/// The `entries` whose keys are in `labels`, relabelled from it (their driver binaries kept),
/// and how many were dropped.
pub(crate) fn keep_scripted(
    entries: impl IntoIterator<Item = WriteEntry>,
    labels: &HashMap<u128, Vec<String>>,
) -> (Vec<WriteEntry>, usize) {
    let mut kept = Vec::new();
    let mut dropped = 0;
    for w in entries {
        match labels.get(&w.entry.key.0) {
            Some(l) => kept.push(WriteEntry { labels: l.clone().into(), ..w }),
            None => dropped += 1,
        }
    }
    (kept, dropped)
}
