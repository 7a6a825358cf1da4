//! `granary harvest --add-recorded`: use records (granary-archive's `record`, docs/FORMAT.md
//! §6) merged into a pipelines script, so the next harvest holds what the game missed and its
//! warm-up can follow the order of first use.
//!
//! What is added, record by record in the order given, event by event in file order (first use
//! first), each key once:
//! - a pipeline the script already has (a `Used` key, a `Missed` key or label the script now
//!   produces, a `Described` create info whose key the script produces): a copy of its entry
//!   labelled `recorded/NNNNNN`, which shares its key and so its archive entry (an archived
//!   pipeline may carry several labels) — the labels sort in first-use order, so
//!   `Warmup::request_prefix("recorded/")` warms in that order;
//! - a `Described` create info the script does not produce: a native Vulkan pipeline (§2.6)
//!   labelled `recorded/NNNNNN`, its modules named by the script's SPIR-V library of the same
//!   content where there is one, else added as inline SPIR-V libraries named
//!   `recorded/<content hash>`;
//! - anything else (a key or label missed with no description, a module never recorded) is
//!   reported, not added.
//!
//! Invariants: the script's own text is kept byte for byte — entries are inserted after the
//! last library and the last pipeline, one per line — so the result is a pure function of the
//! script text and the records; a key that already carries a `recorded/` label is not added
//! again, so merging the same records twice changes nothing; numbering continues after the
//! highest `recorded/NNNNNN` the script has.

use super::error::ScriptError;
use super::load::offset_in;
use super::load::Script;
use super::write::{Function, LibraryEntry, NativeStageEntry, Pipeline};
use crate::descriptor::KeyContext;
use granary_archive::record::{Event, RecordRead};
use granary_archive::{ContentHash, PipelineKey};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::{HashMap, HashSet};

/// The label prefix of recorded pipelines.
pub const RECORDED_PREFIX: &str = "recorded/";

/// Why an event was not added.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NotAdded {
    /// The record file.
    pub record: String,
    /// The key, where the event has one (32 hexadecimal digits).
    pub key: Option<String>,
    /// The label, where the event has one.
    pub label: Option<String>,
    /// Why.
    pub why: String,
}

/// What [`merge_recorded`] did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RecordedMerge {
    /// The script text with the recorded entries added (the input text when nothing was).
    #[serde(skip)]
    pub text: String,
    /// Copies of script pipelines added under `recorded/` labels.
    pub labelled: usize,
    /// Create infos added as new native pipelines.
    pub described: usize,
    /// Inline SPIR-V libraries added for them.
    pub libraries: usize,
    /// Events whose key already carries a `recorded/` label (or was added earlier in this
    /// merge).
    pub already: usize,
    /// Events not added, and why.
    pub not_added: Vec<NotAdded>,
    /// Damaged tails of the records, as `file: what was ignored`.
    pub damaged: Vec<String>,
}

impl RecordedMerge {
    /// Whether the text changed.
    pub fn changed(&self) -> bool {
        self.labelled + self.described > 0
    }
}

/// Where the `libraries` and `pipelines` arrays are in the text (the top level, other fields
/// ignored: the script's own parse has checked them).
#[derive(Deserialize)]
struct Spans<'a> {
    #[serde(default, borrow)]
    libraries: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pipelines: Option<&'a RawValue>,
}

/// An array's span in the text and its elements' spans.
struct ArraySpan {
    /// Byte offset just after the last element, or just after `[` when it is empty.
    insert_at: usize,
    empty: bool,
}

fn array_span(text: &str, raw: &RawValue, path: &std::path::Path, what: &str) -> Result<ArraySpan, ScriptError> {
    let start =
        offset_in(text, raw.get()).ok_or_else(|| ScriptError::at(path, what, "not located in the script text"))?;
    let elements: Vec<&RawValue> =
        serde_json::from_str(raw.get()).map_err(|e| ScriptError::at(path, what, format!("not an array: {e}")))?;
    match elements.last() {
        Some(last) => {
            let at = offset_in(text, last.get())
                .ok_or_else(|| ScriptError::at(path, what, "not located in the script text"))?;
            Ok(ArraySpan { insert_at: at + last.get().len(), empty: false })
        }
        None => Ok(ArraySpan { insert_at: start + 1, empty: true }),
    }
}

/// The number `N` of a `recorded/NNNNNN` label.
fn recorded_number(label: &str) -> Option<u64> {
    label.strip_prefix(RECORDED_PREFIX)?.parse().ok()
}

/// Merges `records` (read with `granary_archive::record::read_record`, in command-line order)
/// into the script `text` (parsed as `script`), computing the script's keys under `ctx` (the
/// harvest's key context, which the records' keys were computed under at run time). The
/// result's text is what to write back; it parses as a script, and the pipelines it adds are
/// checked as any other when the harvest loads it.
pub fn merge_recorded(
    text: &str,
    script: &Script,
    ctx: KeyContext,
    records: &[RecordRead],
) -> Result<RecordedMerge, ScriptError> {
    let path = script.path.as_path();
    let spans: Spans<'_> = serde_json::from_str(text).map_err(|e| ScriptError::at(path, "", e.to_string()))?;
    let pipeline_texts: Vec<&RawValue> = match spans.pipelines {
        Some(p) => serde_json::from_str(p.get()).map_err(|e| ScriptError::at(path, "pipelines", e.to_string()))?,
        None => Vec::new(),
    };

    // What the script produces: key → its first entry, whether a `recorded/` label names it.
    let mut by_key: HashMap<PipelineKey, (usize, bool)> = HashMap::new();
    let mut by_label: HashMap<&str, PipelineKey> = HashMap::new();
    let mut next = 1u64;
    for p in &script.pipelines {
        let Ok(d) = &p.descriptor else { continue };
        let key = d.key(&ctx);
        let recorded = p.label.as_deref().and_then(recorded_number);
        if let Some(n) = recorded {
            next = next.max(n + 1);
        }
        let e = by_key.entry(key).or_insert((p.index, false));
        e.1 |= recorded.is_some();
        if let Some(l) = &p.label {
            by_label.insert(l.as_str(), key);
        }
    }
    let library_names: HashSet<&str> = script.libraries.iter().map(|(n, _)| n.as_str()).collect();
    // A module the script already has as a SPIR-V library (same content hash) is named by it.
    let mut scripted_modules: HashMap<ContentHash, &str> = HashMap::new();
    for (name, lib) in &script.libraries {
        if let Ok(lib) = lib {
            if lib.kind() == crate::descriptor::SourceKind::Spirv {
                scripted_modules.entry(lib.hash()).or_insert(name.as_str());
            }
        }
    }

    let mut out = RecordedMerge { text: String::new(), ..Default::default() };
    let mut new_libraries: Vec<String> = Vec::new();
    let mut new_pipelines: Vec<String> = Vec::new();
    let mut added_keys: HashSet<PipelineKey> = HashSet::new();
    let mut added_libraries: HashSet<String> = HashSet::new();
    let mut modules: HashMap<ContentHash, &[u8]> = HashMap::new();
    let label = |n: u64| format!("{RECORDED_PREFIX}{n:06}");

    for record in records {
        let name = record.path.display().to_string();
        if let Some(t) = &record.damaged_tail {
            out.damaged.push(format!("{name}: {t}"));
        }
        let not_added = |key: Option<PipelineKey>, label: Option<&str>, why: &str| NotAdded {
            record: name.clone(),
            key: key.map(|k| k.to_hex()),
            label: label.map(str::to_string),
            why: why.to_string(),
        };
        for event in &record.events {
            // The key this event names, if the script (or this merge) produces it.
            let (key, ev_label, described) = match event {
                Event::Module { hash, spirv } => {
                    modules.insert(*hash, spirv);
                    continue;
                }
                Event::Used { key, label } => (Some(*key), label.as_deref(), None),
                Event::Missed { key, label } => (*key, label.as_deref(), None),
                Event::Described { key, stages, state } => (Some(*key), None, Some((stages, state))),
                _ => continue,
            };
            let scripted =
                key.filter(|k| by_key.contains_key(k)).or_else(|| ev_label.and_then(|l| by_label.get(l).copied()));
            let done = |k: &PipelineKey| added_keys.contains(k) || by_key.get(k).is_some_and(|(_, recorded)| *recorded);
            if scripted.or(key).is_some_and(|k| done(&k)) {
                out.already += 1;
                continue;
            }
            if let Some(k) = scripted {
                let index = by_key[&k].0;
                let Some(entry) = pipeline_texts.get(index) else { continue };
                let mut value: serde_json::Value = serde_json::from_str(entry.get())
                    .map_err(|e| ScriptError::at(path, format!("pipelines[{index}]"), e.to_string()))?;
                if let Some(o) = value.as_object_mut() {
                    o.insert("label".into(), label(next).into());
                }
                new_pipelines.push(value.to_string());
                next += 1;
                out.labelled += 1;
                added_keys.insert(k);
                continue;
            }
            let Some((stages, state)) = described else {
                let why = match (key, ev_label) {
                    (_, Some(_)) => "asked for by a label the script does not have, and not described",
                    _ => {
                        "a key the script does not produce, and not described (only a create info given to \
                          create_graphics/create_compute is recorded in full)"
                    }
                };
                out.not_added.push(not_added(key, ev_label, why));
                continue;
            };
            let Some(key) = key else { continue };
            let mut entries = Vec::with_capacity(stages.len());
            let mut missing = None;
            for s in stages {
                let lib = match scripted_modules.get(&s.library) {
                    Some(name) => name.to_string(),
                    None => format!("{RECORDED_PREFIX}{}", s.library.to_hex()),
                };
                if !library_names.contains(lib.as_str()) && !added_libraries.contains(&lib) {
                    match modules.get(&s.library) {
                        Some(code) => {
                            new_libraries.push(
                                serde_json::to_string(&LibraryEntry::spirv(lib.clone(), code)).map_err(|e| {
                                    ScriptError::at(path, "libraries", format!("cannot write a library: {e}"))
                                })?,
                            );
                            added_libraries.insert(lib.clone());
                            out.libraries += 1;
                        }
                        None => {
                            missing = Some(s.library);
                            break;
                        }
                    }
                }
                entries.push(NativeStageEntry::new(
                    s.stage,
                    Function::library(lib, s.entry.clone()),
                    s.specialization.clone(),
                ));
            }
            if let Some(m) = missing {
                out.not_added.push(not_added(
                    Some(key),
                    None,
                    &format!("the record holds no SPIR-V for module {}", m.to_hex()),
                ));
                continue;
            }
            let p = Pipeline::<()>::vulkan(Some(label(next)), entries, state.clone());
            new_pipelines.push(
                serde_json::to_string(&p)
                    .map_err(|e| ScriptError::at(path, "pipelines", format!("cannot write a pipeline: {e}")))?,
            );
            next += 1;
            out.described += 1;
            added_keys.insert(key);
        }
    }

    out.text = splice(text, path, &spans, &new_libraries, &new_pipelines)?;
    Ok(out)
}

/// `text` with `libraries` and `pipelines` (JSON values, one per line) appended to its arrays.
fn splice(
    text: &str,
    path: &std::path::Path,
    spans: &Spans<'_>,
    libraries: &[String],
    pipelines: &[String],
) -> Result<String, ScriptError> {
    let mut inserts: Vec<(usize, String)> = Vec::new();
    let lines = |items: &[String], empty: bool| {
        let body = items.iter().map(|i| format!("\n    {i}")).collect::<Vec<_>>().join(",");
        if empty {
            format!("{body}\n  ")
        } else {
            format!(",{body}")
        }
    };
    for (raw, items, field) in [(spans.libraries, libraries, "libraries"), (spans.pipelines, pipelines, "pipelines")] {
        if items.is_empty() {
            continue;
        }
        match raw {
            Some(raw) => {
                let span = array_span(text, raw, path, field)?;
                inserts.push((span.insert_at, lines(items, span.empty)));
            }
            None => {
                // No such field: a new one right after the opening brace.
                let open = text.find('{').ok_or_else(|| ScriptError::at(path, "", "not a JSON object"))?;
                inserts.push((open + 1, format!("\n  \"{field}\": [{}],", lines(items, true))));
            }
        }
    }
    inserts.sort_by_key(|(at, _)| *at);
    let mut out = String::with_capacity(text.len() + inserts.iter().map(|(_, s)| s.len()).sum::<usize>());
    let mut from = 0;
    for (at, s) in inserts {
        out.push_str(&text[from..at]);
        out.push_str(&s);
        from = at;
    }
    out.push_str(&text[from..]);
    Ok(out)
}
