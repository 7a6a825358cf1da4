//! `--validate` (the Khronos validation layer on granary's own Vulkan work), shared by
//! `harvest`, `stress`, `warm` and the worker: the policy from the flag and the environment,
//! the report printed and added to `--json`, and the workers' message files the parent reads
//! back.

use anyhow::Context as _;
use granary_archive::vulkan::validation::{Severity, ValidationLog, ValidationMessage, LAYER};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `--validate`, shared by `harvest`, `stress`, `warm` and the worker.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ValidateArgs {
    /// Run the Vulkan work under the Khronos validation layer (VK_LAYER_KHRONOS_validation;
    /// Debian: apt-get install vulkan-validationlayers; without it the command refuses to run).
    /// Each WARNING or ERROR message is printed once on stderr with the pipeline it belongs to
    /// (identical ones grouped), counted in --json output (validation_messages, and per
    /// message id under validation), and any ERROR makes the exit status 1: a pipeline the
    /// layer calls invalid is not a success. GRANARY_VALIDATE=1 in the environment does the
    /// same for every command that opens a Vulkan device, and then WARNINGs fail too;
    /// GRANARY_VALIDATE_EXPECT=ID,ID names message ids that are expected (counted, printed,
    /// never a failure). harvest and stress: with --backend vulkan.
    #[arg(long)]
    pub validate: bool,
}

/// Whether and how strictly to validate: `--validate`, `GRANARY_VALIDATE`,
/// `GRANARY_VALIDATE_EXPECT`.
pub struct Validation {
    /// The layer is on.
    pub on: bool,
    /// `--validate` itself was given (an error where nothing opens a Vulkan device).
    pub flag: bool,
    /// `GRANARY_VALIDATE=1`: WARNING messages fail as well.
    pub strict: bool,
    /// Message ids that are expected, never failures.
    pub expected: BTreeSet<String>,
}

/// What the layer said, for `--json` and the exit status.
pub struct ValidationReport {
    /// Every message (expected ones included).
    pub messages: u64,
    /// The breakdown: counts by severity and by message id.
    pub json: serde_json::Value,
    /// An unexpected ERROR (or, strict, WARNING) was seen.
    pub failed: bool,
}

/// Adds `validation_messages` and `validation` to a JSON object: the layer's report, or null
/// for both when the layer was not loaded (every `--json` field is present, null when unknown).
pub fn add_report(report: Option<&ValidationReport>, v: &mut serde_json::Value) {
    match report {
        Some(r) => r.add_to(v),
        None => {
            if let Some(o) = v.as_object_mut() {
                o.insert("validation_messages".into(), serde_json::Value::Null);
                o.insert("validation".into(), serde_json::Value::Null);
            }
        }
    }
}

impl ValidationReport {
    /// Adds `validation_messages` and `validation` to a JSON object.
    pub fn add_to(&self, v: &mut serde_json::Value) {
        if let Some(o) = v.as_object_mut() {
            o.insert("validation_messages".into(), self.messages.into());
            o.insert("validation".into(), self.json.clone());
        }
    }
}

impl ValidateArgs {
    /// The flag with the environment.
    pub fn policy(&self) -> Validation {
        let strict = std::env::var("GRANARY_VALIDATE").is_ok_and(|v| v == "1");
        let expected = std::env::var("GRANARY_VALIDATE_EXPECT")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        Validation { on: self.validate || strict, flag: self.validate, strict, expected }
    }
}

/// How many pipelines of one message id are printed before "N more like this".
const SHOWN_PER_ID: usize = 3;

impl Validation {
    /// The worker arguments that validate in each worker and report to `dir`.
    pub fn worker_args(&self, dir: &Path) -> Vec<String> {
        vec!["--validate".into(), format!("--validation-log={}", dir.display())]
    }

    /// Prints every message of `log` once on stderr (grouped by message id and pipeline;
    /// beyond a few pipelines per id, "N more like this") and says whether the command fails.
    /// Call it after every Vulkan object is destroyed, so destruction's messages are in.
    pub fn finish(&self, log: &ValidationLog) -> ValidationReport {
        let counts = log.counts();
        let messages = log.messages();
        let mut unexpected = 0u64;
        let mut failed = false;
        let mut by_id = serde_json::Map::new();
        for (id, c) in &counts {
            let expected = self.expected.contains(id);
            if !expected {
                unexpected += c.total();
                failed |= c.errors > 0 || (self.strict && c.warnings > 0);
            }
            by_id.insert(
                id.clone(),
                serde_json::json!({ "errors": c.errors, "warnings": c.warnings, "expected": expected }),
            );
        }
        let total = log.total();
        if total > 0 {
            eprintln!(
                "granary: {LAYER}: {total} messages ({} errors, {} warnings; {} expected by GRANARY_VALIDATE_EXPECT)",
                log.errors(),
                log.warnings(),
                total - unexpected
            );
        }
        // Per id (in order of first appearance), per pipeline: count and the first text.
        let mut order: Vec<&str> = Vec::new();
        let mut groups: BTreeMap<&str, Vec<(&str, usize, &ValidationMessage)>> = BTreeMap::new();
        for m in &messages {
            let g = groups.entry(&m.id).or_insert_with(|| {
                order.push(&m.id);
                Vec::new()
            });
            match g.iter_mut().find(|(p, _, _)| *p == m.pipeline) {
                Some(entry) => entry.1 += 1,
                None => g.push((&m.pipeline, 1, m)),
            }
        }
        for id in order {
            let g = &groups[id];
            let note = if self.expected.contains(id) { " (expected)" } else { "" };
            for (pipeline, n, m) in g.iter().take(SHOWN_PER_ID) {
                let times = if *n > 1 { format!(" ({n} messages; the first)") } else { String::new() };
                eprintln!(
                    "granary: validation {}{note}: {id} in pipeline '{pipeline}'{times}: {}",
                    m.severity.name(),
                    m.text
                );
            }
            if g.len() > SHOWN_PER_ID {
                let rest: usize = g[SHOWN_PER_ID..].iter().map(|(_, n, _)| n).sum();
                eprintln!(
                    "granary: validation: {rest} more like this ({id}) on {} more pipelines",
                    g.len() - SHOWN_PER_ID
                );
            }
        }
        if log.dropped() > 0 {
            eprintln!("granary: validation: {} more messages counted but not kept", log.dropped());
        }
        if failed {
            eprintln!(
                "granary: the validation layer reported {}: exit status 1",
                if self.strict { "unexpected errors or warnings" } else { "errors" }
            );
        }
        let json = serde_json::json!({
            "layer": LAYER,
            "errors": log.errors(),
            "warnings": log.warnings(),
            "unexpected": unexpected,
            "failed": failed,
            "warnings_fail": self.strict,
            "by_id": by_id,
        });
        ValidationReport { messages: total, json, failed }
    }
}

/// One message as a worker writes it and the parent reads it back.
pub(crate) fn message_json(m: &ValidationMessage) -> serde_json::Value {
    serde_json::json!({
        "severity": m.severity.name(),
        "types": m.types,
        "id": m.id,
        "id_number": m.id_number,
        "text": m.text,
        "pipeline": m.pipeline,
    })
}

fn message_from_json(line: &str) -> Option<ValidationMessage> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    Some(ValidationMessage {
        severity: Severity::parse(v["severity"].as_str()?)?,
        types: u32::try_from(v["types"].as_u64()?).ok()?,
        id: v["id"].as_str()?.to_string(),
        id_number: i32::try_from(v["id_number"].as_i64()?).ok()?,
        text: v["text"].as_str()?.to_string(),
        pipeline: v["pipeline"].as_str()?.to_string(),
    })
}

/// A folder for the workers' validation messages, removed when dropped.
pub(crate) struct WorkerLogs(pub(crate) PathBuf);

impl WorkerLogs {
    /// A new, empty folder under the temporary directory.
    pub(crate) fn create() -> anyhow::Result<WorkerLogs> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!("granary-validation-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(WorkerLogs(dir))
    }

    /// Records every worker's messages into `log`; a line that does not read back (a worker
    /// killed in the middle of one) is an error message of its own, never dropped silently.
    pub(crate) fn collect_into(&self, log: &ValidationLog) -> anyhow::Result<()> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.0)
            .with_context(|| format!("cannot read {}", self.0.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read(&f).with_context(|| format!("cannot read {}", f.display()))?;
            for line in String::from_utf8_lossy(&text).lines().filter(|l| !l.trim().is_empty()) {
                log.record(message_from_json(line).unwrap_or_else(|| ValidationMessage {
                    severity: Severity::Error,
                    types: 0,
                    id: "granary-unreadable-worker-message".into(),
                    id_number: 0,
                    text: format!("a worker's validation message did not read back: {line}"),
                    pipeline: granary_archive::vulkan::validation::DEVICE.into(),
                }));
            }
        }
        Ok(())
    }
}

impl Drop for WorkerLogs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_messages_read_back_exactly_and_a_cut_line_is_an_error_not_a_loss() {
        let m = ValidationMessage {
            severity: Severity::Warning,
            types: 4,
            id: "VUID-x".into(),
            id_number: -5,
            text: "a \"quoted\"\nmessage".into(),
            pipeline: "forward/high".into(),
        };
        assert_eq!(message_from_json(&message_json(&m).to_string()), Some(m.clone()));
        let logs = WorkerLogs::create().expect("folder");
        let whole = message_json(&m).to_string();
        std::fs::write(logs.0.join("worker-1.jsonl"), format!("{whole}\n{whole}\n")).unwrap();
        std::fs::write(logs.0.join("worker-2.jsonl"), format!("{whole}\n{}", &whole[..whole.len() / 2])).unwrap();
        let log = ValidationLog::new();
        logs.collect_into(&log).expect("collected");
        let counts = log.counts();
        assert_eq!(counts["VUID-x"].warnings, 3);
        assert_eq!(counts["granary-unreadable-worker-message"].errors, 1);
        let dir = logs.0.clone();
        drop(logs);
        assert!(!dir.exists(), "the folder is removed");
    }

    #[test]
    fn errors_fail_warnings_fail_only_under_the_environment_and_expected_ids_never() {
        let log = ValidationLog::new();
        let warn = |id: &str| ValidationMessage {
            severity: Severity::Warning,
            types: 0,
            id: id.into(),
            id_number: 0,
            text: String::new(),
            pipeline: "p".into(),
        };
        log.record(warn("W"));
        let policy = |strict, expected: &[&str]| Validation {
            on: true,
            flag: true,
            strict,
            expected: expected.iter().map(|s| s.to_string()).collect(),
        };
        assert!(!policy(false, &[]).finish(&log).failed);
        assert!(policy(true, &[]).finish(&log).failed);
        assert!(!policy(true, &["W"]).finish(&log).failed);
        log.record(ValidationMessage { severity: Severity::Error, ..warn("E") });
        let r = policy(false, &["W"]).finish(&log);
        assert!(r.failed);
        assert_eq!(r.messages, 2);
        assert_eq!(r.json["unexpected"], 1);
        assert_eq!(r.json["by_id"]["W"]["expected"], true);
        assert!(!policy(true, &["W", "E"]).finish(&log).failed);
        let mut v = serde_json::json!({ "succeeded": 1 });
        r.add_to(&mut v);
        assert_eq!(v["validation_messages"], 2);
    }
}
