//! Which pipelines of a script a harvest compiles: the one selection `harvest`, `granary plan`
//! and `prune` (and `--resume`) all make.
//!
//! The steps, always in this order: the script's `expand_unspecialized` applied or not, and
//! whether its variants replace their pipelines or join them ([`Selection::expansion`],
//! [`Expand`]); the valid pipelines, with the expanded ones replaced by (or followed by) their
//! variants ([`Selection::new`]); for `--shard I/N`, the assignment of *every* selected
//! pipeline to N shards ([`Selection::split`], [`shard::assign_descriptors`] under the
//! selection's key context) and then shard I's share ([`Selection::retain_shard`]).
//!
//! Invariants: the selected pipelines are in script order, variants after them; the split
//! sees the whole selection before any shard filter, so every shard of one script computes
//! the same assignment; nothing here compiles or reads a file.

use super::report::Failure;
use super::shard::{self, Assignment};
use super::sink;
use crate::archive::WriteEntry;
use crate::descriptor::{KeyContext, PipelineDescriptor};
use crate::script::{Expanded, Script};
use std::collections::HashMap;

/// How a selection applies the script's `expand_unspecialized`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expand {
    /// Not at all: pipelines with unspecialized colour output stay as they are (a device with
    /// graphics pipeline libraries, the `none` backend).
    No,
    /// Each such pipeline is replaced by its variants (a device without graphics pipeline
    /// libraries, `--no-pipeline-libraries`, `granary plan --expand-unspecialized`).
    Replace,
    /// The variants are selected beside the pipelines they come from (`harvest
    /// --whole-variants` on a device with libraries or the `none` backend): whole pipelines
    /// the loader creates in place of fast-linking the library for the formats they name.
    Beside,
}

impl Expand {
    /// `Replace` when `apply`, else `No`.
    pub fn replace_if(apply: bool) -> Expand {
        if apply {
            Expand::Replace
        } else {
            Expand::No
        }
    }
}

/// The pipelines a harvest of a script compiles, `(index, descriptor)`, under one key context.
pub struct Selection<'a> {
    /// The script.
    pub script: &'a Script,
    /// The expansion applied (empty when none is).
    pub expansion: &'a Expanded,
    /// The key context every key of the selection is computed under.
    pub ctx: KeyContext,
    /// The selected pipelines: the script's valid pipelines (those the expansion replaced left
    /// out), then the expansion's variants (indices numbered after the script's pipelines).
    pub pipelines: Vec<(usize, &'a PipelineDescriptor)>,
    /// A failure for each pipeline that is not valid or could not be expanded (phase
    /// `script`): in no selection and no shard.
    pub failures: Vec<Failure>,
}

/// A selection split into shards: each selected pipeline's key (in selection order) and the
/// assignment, whose `script` is the hash a shard archive of the selection records.
pub struct Split {
    /// The key of each selected pipeline, in the selection's order.
    pub keys: Vec<u128>,
    /// Which shard each key falls in.
    pub assignment: Assignment,
}

impl<'a> Selection<'a> {
    /// The script's `expand_unspecialized` applied to `script` as `how` says, where the script
    /// has one; otherwise nothing expanded.
    pub fn expansion(script: &Script, how: Expand) -> Expanded {
        match script.expand_unspecialized.as_ref().filter(|_| how != Expand::No) {
            Some(e) => Expanded { beside: how == Expand::Beside, ..e.apply(script) },
            None => Expanded::default(),
        }
    }

    /// The selection of `script` with `expansion` applied, keyed under `ctx`.
    pub fn new(script: &'a Script, expansion: &'a Expanded, ctx: KeyContext) -> Selection<'a> {
        let mut failures = Vec::new();
        for (index, name, message) in expansion.errors.iter().filter(|_| !expansion.beside) {
            failures.push(sink::process_failure(*index, name.clone(), "script", message.clone()));
        }
        let mut pipelines: Vec<(usize, &PipelineDescriptor)> = Vec::new();
        for p in &script.pipelines {
            match &p.descriptor {
                Ok(d) if expansion.beside || !expansion.replaced.contains(&p.index) => pipelines.push((p.index, d)),
                Ok(_) => {}
                Err(e) => failures.push(sink::script_failure(p.index, p.display_name(), e)),
            }
        }
        pipelines.extend(expansion.variants.iter().map(|(i, _, d)| (*i, d)));
        Selection { script, expansion, ctx, pipelines, failures }
    }

    /// Each selected pipeline's key, in order.
    pub fn keys(&self) -> Vec<u128> {
        self.pipelines.iter().map(|(_, d)| d.key(&self.ctx).0).collect()
    }

    /// The split of the whole selection into `count` shards, as `harvest --shard I/count`
    /// computes it.
    pub fn split(&self, count: u32) -> Split {
        let (items, assignment) = shard::assign_descriptors(self.pipelines.iter().map(|(_, d)| *d), &self.ctx, count);
        Split { keys: items.into_iter().map(|i| i.key).collect(), assignment }
    }

    /// Keeps only the pipelines `split` (of this selection) gives shard `index`; returns their
    /// keys, in order.
    pub fn retain_shard(&mut self, split: &Split, index: u32) -> Vec<u128> {
        let mut keys = Vec::new();
        let mut at = split.keys.iter();
        self.pipelines.retain(|_| {
            let key = at.next().copied();
            let keep = key.is_some_and(|k| split.assignment.shard_of.get(&k) == Some(&index));
            if let (true, Some(k)) = (keep, key) {
                keys.push(k);
            }
            keep
        });
        keys
    }

    /// Every key of the selection (its pipelines' `keys`, in order) with every label the
    /// script gives it (in script order). `prune` and `--resume` keep exactly these keys.
    pub fn labels_by_key(&self, keys: &[u128]) -> HashMap<u128, Vec<String>> {
        let mut labels: HashMap<u128, Vec<String>> = HashMap::new();
        for (key, (_, d)) in keys.iter().zip(&self.pipelines) {
            let v = labels.entry(*key).or_default();
            if let Some(l) = d.label() {
                if !v.iter().any(|x| x == l) {
                    v.push(l.to_string());
                }
            }
        }
        labels
    }

    /// The selection's pipelines by index.
    pub fn by_index(&self) -> HashMap<usize, &'a PipelineDescriptor> {
        self.pipelines.iter().copied().collect()
    }
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
