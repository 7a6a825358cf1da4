//! `prune`: the archive a script produces, cut from an existing archive without compiling
//! (what `fossilize-prune` is for): keep exactly the entries whose keys the script produces,
//! label them as the script labels them, drop the rest.
//!
//! A shard archive (`harvest --shard I/N`, docs/FORMAT.md §1.4.1) is pruned as that shard
//! while the script's pipelines are still those it was harvested from (the same shard script
//! hash): the output keeps the shard record and the shard's share of the script, and
//! `missing` is counted against that share. Once they differ (another script hash), the
//! output cannot claim to be shard I any more: it is written without the record, as an
//! ordinary archive of the script, and the report says why.

use super::report::ShardSummary;
use super::select::{Expand, Selection};
use super::HarvestError;
use crate::archive::{write_shard_entries, Archive, ArchiveMeta, ShardRecord};
use crate::descriptor::{KeyContext, PipelineKey, TargetSet};
use crate::script::{Expanded, Script};
use serde::Serialize;
use std::collections::HashSet;
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
    /// Entries kept (distinct keys the script produces; for a shard, its share produces).
    pub kept: usize,
    /// Entries dropped (keys the script, or for a shard its share, does not produce).
    pub dropped: usize,
    /// Script pipelines the output has no entry for (never harvested, failed, or invalid in
    /// the script), by label or `pipelines[i]`, in script order. For a shard that stays one
    /// ([`PruneReport::shard`]): the pipelines of its share without an entry, plus the
    /// script's invalid pipelines (which are in no shard), never another shard's pipelines.
    pub missing: Vec<String>,
    /// Size of the archive written, in bytes.
    pub bytes: usize,
    /// The shard the output still is: the input's shard record, kept because the script's
    /// pipelines are the ones the shard was harvested from (same script hash). `pipelines`
    /// is the shard's share of the script. `None` for an unsharded input, and when the record
    /// was dropped ([`PruneReport::shard_dropped`]).
    pub shard: Option<ShardSummary>,
    /// Why the input's shard record is not in the output, in words: the script's pipelines
    /// differ from those the shard was harvested from (its script hash differs), so the
    /// output is an ordinary archive of the script, which `granary merge` does not take as a
    /// shard. `None` when nothing was dropped.
    pub shard_dropped: Option<String>,
    /// Whether the script's `expand_unspecialized` was applied: the archive was harvested with
    /// it (a device backend without graphics pipeline libraries), as a shard's record shows or,
    /// unsharded, as the expanded pipelines find more of its entries than the script's own.
    pub expanded: bool,
    /// The archive was harvested with the variants beside the pipelines they come from
    /// (`harvest --whole-variants`), as above; `expanded` is then true too.
    pub whole_variants: bool,
}

/// Writes to `output` (durably, replacing it whole) the entries of `archive` whose pipeline
/// keys `script` produces, each with the labels the script gives it — the archive a fresh
/// harvest of `script` would write, minus the pipelines `archive` lacks. Nothing is compiled.
///
/// A shard archive whose shard script hash is the script's (the script's pipelines have not
/// changed) is pruned as that shard: the output keeps the shard record and exactly the
/// shard's share — the archive `harvest --shard I/N` of `script` writes, minus what
/// `archive` lacks. Otherwise its record is dropped ([`PruneReport::shard_dropped`]) and the
/// output is an ordinary archive of `script`.
///
/// Refuses a damaged archive, an archive built with other writer options than this
/// granary's (its keys are not comparable with the ones computed from the script), and —
/// unless `force` — a prune that would drop more than half of the archive's pipelines (most
/// likely the wrong script): nothing is written then. `output` may be `archive` itself.
pub fn prune(archive: &Path, script: &Path, output: &Path, force: bool) -> Result<PruneReport, HarvestError> {
    let script_path = script;
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
    // The archive may have been harvested with the script's `expand_unspecialized` applied
    // (a device without graphics pipeline libraries): a shard's record tells; an unsharded
    // archive, the keys it holds (below).
    let expanded = script.expand_unspecialized.is_some().then(|| Selection::expansion(&script, Expand::Replace));
    // Or with its variants beside the pipelines they come from (`--whole-variants`).
    let beside = script.expand_unspecialized.is_some().then(|| Selection::expansion(&script, Expand::Beside));
    let no_expansion = Expanded::default();
    let plain = Selection::new(&script, &no_expansion, ctx);
    let mut shard = None;
    let mut shard_dropped = None;
    // The pipelines to keep, with their keys: the whole script, or a shard's share of it.
    let (view, keys) = match input.shard() {
        None => {
            let keys = plain.keys();
            // Harvested with the expansion if the expanded pipelines find more of the
            // archive's entries than the script's own (ties: the script's own).
            let held =
                |keys: &[u128]| keys.iter().filter(|k| matches!(input.get(PipelineKey(**k)), Ok(Some(_)))).count();
            // The variants beside their pipelines (`--whole-variants`) only if that finds more
            // than either alone.
            let mut best = (plain, keys);
            for x in [expanded.as_ref(), beside.as_ref()].into_iter().flatten() {
                let view = Selection::new(&script, x, ctx);
                let k = view.keys();
                if held(&k) > held(&best.1) {
                    best = (view, k);
                }
            }
            best
        }
        Some(record) => {
            let split = plain.split(record.count);
            // Harvested with `expand_unspecialized` applied, if that is what matches.
            let with_expansion = [expanded.as_ref(), beside.as_ref()]
                .into_iter()
                .flatten()
                .filter(|_| split.assignment.script != record.script)
                .find_map(|x| {
                    let view = Selection::new(&script, x, ctx);
                    let split = view.split(record.count);
                    (split.assignment.script == record.script).then_some((view, split))
                });
            let summary = |pipelines: usize| ShardSummary {
                index: record.index,
                count: record.count,
                script: format!("{:032x}", record.script),
                pipelines,
            };
            if split.assignment.script == record.script {
                let mut view = plain;
                let keys = view.retain_shard(&split, record.index);
                shard = Some(summary(view.pipelines.len()));
                (view, keys)
            } else if let Some((mut view, split)) = with_expansion {
                let keys = view.retain_shard(&split, record.index);
                shard = Some(summary(view.pipelines.len()));
                (view, keys)
            } else {
                shard_dropped = Some(format!(
                    "{} was harvested as {record}, but the script's pipelines now hash to {:032x}: the script's \
                     pipelines changed, so the output cannot claim to be that shard: it is an ordinary archive of \
                     the script, without a shard record (to carry the shard over to the changed script instead, run `granary harvest SCRIPT \
                     --shard {}/{} --resume` on a copy of it)",
                    archive.display(),
                    split.assignment.script,
                    record.index,
                    record.count
                ));
                (plain, split.keys)
            }
        }
    };
    // Whether the view chosen is an expanded one (not the plain selection's empty expansion).
    let used_expansion = !std::ptr::eq(view.expansion, &no_expansion);
    let labels = view.labels_by_key(&keys);
    // Driver binaries stay with the pipelines that are kept.
    let (kept, dropped) = super::select::keep_scripted(input.entries()?, &labels);
    let have: HashSet<u128> = kept.iter().map(|w| w.entry.key.0).collect();
    // Missing: the view's pipelines without an entry, plus those in no view at all (invalid in
    // the script, or failing their expansion), in script order (variants after).
    let mut missing: Vec<(usize, String)> = view
        .pipelines
        .iter()
        .zip(&keys)
        .filter(|(_, k)| !have.contains(k))
        .map(|((i, d), _)| {
            let name = script.pipelines.get(*i).map(|p| p.display_name());
            (*i, name.or(d.label().map(str::to_string)).unwrap_or_else(|| format!("pipelines[{i}]")))
        })
        .collect();
    missing.extend(
        script
            .pipelines
            .iter()
            .filter(|p| {
                p.descriptor.is_err()
                    || (!view.expansion.beside && view.expansion.errors.iter().any(|e| e.0 == p.index))
            })
            .map(|p| (p.index, p.display_name())),
    );
    missing.sort_by_key(|(i, _)| *i);
    if !force && dropped * 2 > input.len() {
        return Err(refuse(format!(
            "it would drop {dropped} of its {} pipelines (keeping {}): {} does not produce them. Is it the script \
             this archive was harvested from? Nothing was written; pass --force to prune anyway",
            input.len(),
            kept.len(),
            script_path.display()
        )));
    }
    // The writer options checked above, and every device's pipeline caches.
    let meta: ArchiveMeta = input.meta()?;
    let record: Option<ShardRecord> = input.shard().filter(|_| shard.is_some());
    let bytes = write_shard_entries(output, &kept, &meta, record.as_ref())?;
    Ok(PruneReport {
        output: output.display().to_string(),
        script_pipelines: script.pipelines.len(),
        archive_pipelines: input.len(),
        kept: kept.len(),
        dropped,
        missing: missing.into_iter().map(|(_, name)| name).collect(),
        bytes,
        shard,
        shard_dropped,
        expanded: used_expansion,
        whole_variants: view.expansion.beside,
    })
}
