//! The harvest summary and failure records.

use crate::frontend::ShaderErrorKind;
use serde::Serialize;

/// Why one pipeline is missing from the archive.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Failure {
    /// Index in the script's `pipelines` array.
    pub index: usize,
    /// Label, or `pipelines[i]`.
    pub pipeline: String,
    /// `script`, `shader`, `link`, `panic` (naga or a backend panicked; contained), or with
    /// `--isolate` `crash` / `timeout` / `memory` (its worker passed `--worker-memory-limit`
    /// while compiling it) / `protocol` (a worker answered wrongly: not for the pipeline it was
    /// asked about, damaged, or too long), `targets` (requested targets were
    /// lost and none was left, or `--require-all-targets`). In the lost-target list
    /// ([`HarvestSummary::lost_targets`]) the phase is `target`: one record per stage
    /// function and target, naming the first pipeline affected.
    pub phase: String,
    /// Shader error category, for `shader` failures.
    pub kind: Option<ShaderErrorKind>,
    /// File the error is in, when known.
    pub file: Option<String>,
    /// 1-based line, when known.
    pub line: Option<u64>,
    /// 1-based column, when known.
    pub column: Option<u64>,
    /// JSON path in the script, for `script` failures.
    pub json_path: Option<String>,
    /// Where the pipeline's entry starts in the script, `file:line:column`.
    #[serde(default)]
    pub script_position: Option<String>,
    /// The full message.
    pub message: String,
    /// The root cause without what is particular to this pipeline (its label, its position in
    /// the script): pipelines that failed for the same reason (a missing library file, one
    /// broken stage function) have the same cause, and the text summary lists each cause once
    /// with its pipelines counted.
    #[serde(default)]
    pub cause: String,
    /// The lost target, for `target` records.
    #[serde(default)]
    pub target: Option<String>,
    /// The stage function that lost it (`stage library:entry [constants]`), for `target`
    /// records.
    #[serde(default)]
    pub function: Option<String>,
    /// How many pipelines lack the target because of this function, for `target` records.
    #[serde(default)]
    pub pipelines_affected: Option<usize>,
}

/// How many harvested pipelines have one requested target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetCount {
    /// The target.
    pub target: String,
    /// Pipelines of the script in the archive with an output for it in every stage.
    pub pipelines_with: usize,
    /// Pipelines of the script in the archive without it (a stage function lost it).
    pub pipelines_without: usize,
}

/// Where the wall time went.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Phases {
    /// Reading the script and its libraries, resuming (serial apart from per-pipeline parsing).
    pub load_seconds: f64,
    /// Computing keys and ordering tasks.
    pub plan_seconds: f64,
    /// Compiling on the worker threads (or processes).
    pub compile_seconds: f64,
    /// The final durable archive write.
    pub write_seconds: f64,
}

/// What a harvest did.
#[derive(Debug, Clone, Serialize)]
pub struct HarvestSummary {
    /// The archive written.
    pub output: String,
    /// `--shard I/N`: which shard this harvest was, and how many of the script's pipelines
    /// it had (`pipelines` counts the whole script's).
    pub shard: Option<ShardSummary>,
    /// `--isolate` with a device that keeps pipeline-cache data: the caches retiring workers
    /// handed over (each stored with the device's section; crashed workers' are lost).
    pub worker_caches: usize,
    /// The timeline written (`--trace`), if one was asked for and written.
    pub trace: Option<String>,
    /// Why the timeline could not be written (the harvest itself is unaffected).
    pub trace_error: Option<String>,
    /// Script pipelines replaced by their fully specialized variants (`expand_unspecialized`,
    /// on a device without graphics pipeline libraries), or — with `whole_variants` — kept and
    /// joined by them.
    pub expanded: usize,
    /// Variants they were expanded into (counted in `pipelines`).
    pub variants: usize,
    /// `--whole-variants` applied: the variants were harvested beside the pipelines they come
    /// from (a device with graphics pipeline libraries, or the `none` backend).
    pub whole_variants: bool,
    /// The backend: `none` (the front end's translations only) or a device backend's name.
    pub backend: String,
    /// What the device backend did (device, what it captures, driver time, binaries);
    /// absent for the `none` backend.
    pub device: Option<crate::backend::BackendReport>,
    /// Pipelines in the script.
    pub pipelines: usize,
    /// Pipelines in the final archive that came from this script (compiled now or resumed).
    pub succeeded: usize,
    /// Pipelines that failed.
    pub failed: usize,
    /// Script pipelines whose entry `--resume` kept from the existing archive or its journal
    /// (not recompiled).
    pub resumed: usize,
    /// Of `resumed`, the pipelines whose entry only the journal held (compiled by an
    /// interrupted or killed run after the archive was last written).
    pub resumed_from_journal: usize,
    /// With a device backend: script pipelines whose entry the existing archive or journal
    /// holds, but with no binaries (nor a pipeline-cache record) for this harvest's device
    /// identity (harvested on another GPU or driver version, or without a device), so they
    /// were compiled on this device again; their other devices' binaries are kept. Not
    /// counted in `resumed`.
    pub recompiled_for_device: usize,
    /// Entries of the existing archive and journal that `--resume` dropped because the
    /// script no longer produces them (an edited shader, a removed pipeline).
    pub dropped: usize,
    /// Intact journal records `--resume` replayed.
    pub journal_records: usize,
    /// What `--resume` ignored at the end of the journal (a write cut short by a kill, or
    /// damage), in words; `None` when the journal was intact or absent.
    pub journal_damage: Option<String>,
    /// Every pipeline failed (none compiled, none resumed), so the existing output file was
    /// left as it was instead of being replaced by an empty archive.
    pub kept_existing_archive: bool,
    /// The harvest was interrupted ([`super::Interrupt`]): what landed was journaled and the
    /// archive was not replaced; `--resume` continues.
    pub interrupted: bool,
    /// Distinct pipeline keys in the archive.
    pub archive_pipelines: usize,
    /// Libraries parsed.
    pub libraries_parsed: u64,
    /// Unique stage functions compiled.
    pub unique_stage_functions: u64,
    /// Stage-function references across compiled pipelines.
    pub stage_references: usize,
    /// `stage_references / unique_stage_functions`.
    pub reuse_ratio: f64,
    /// Threads used.
    pub threads: usize,
    /// The cores this process may run on (`std::thread::available_parallelism`).
    pub cores: usize,
    /// Targets written.
    pub targets: String,
    /// The device profile (`--profile`).
    pub profile: String,
    /// Wall time in seconds.
    pub wall_seconds: f64,
    /// The wall time by phase.
    pub phases: Phases,
    /// CPU time of the worker threads in seconds.
    pub task_cpu_seconds: f64,
    /// CPU time of the whole process in seconds.
    pub process_cpu_seconds: f64,
    /// CPU utilisation of the worker threads: `task_cpu / (wall × min(threads, cores))`, the
    /// share of the cores the harvest could use that its threads kept busy (more threads than
    /// cores, as for a driver that waits, cannot raise it past 1). This is not parallel
    /// efficiency (speed-up / threads), which needs a one-thread run to compare with:
    /// `granary bench` measures that.
    pub cpu_utilization: f64,
    /// Intermediate flushes during the harvest: journal records appended (not counting the
    /// final archive write).
    pub flushes: usize,
    /// Intermediate writes that failed (the final write succeeded, or the harvest errs).
    pub flush_errors: Vec<String>,
    /// Size of the final archive in bytes (of the file left in place, with
    /// `kept_existing_archive`).
    pub archive_bytes: usize,
    /// Bytes this harvest wrote to disk: every journal header and record plus the final
    /// archive.
    pub bytes_written: u64,
    /// Peak resident memory of the harvesting process in bytes.
    pub peak_rss_bytes: u64,
    /// Worker processes started under `--isolate` (first starts, replacements after a crash,
    /// timeout or protocol violation, and recycles); 0 in-process.
    pub workers_started: usize,
    /// Which targets' outputs were checked by which validator, and what the checks did.
    pub output_checks: OutputChecksSummary,
    /// Per requested target: how many of the script's pipelines in the archive have it.
    pub target_counts: Vec<TargetCount>,
    /// Targets lost by stage functions of pipelines compiled now (phase `target`, one record
    /// per function and target, with the pipelines affected); the pipelines still landed with
    /// their other targets. Resumed pipelines count in `target_counts` but their reasons are
    /// not in the archive.
    pub lost_targets: Vec<Failure>,
    /// Every failure.
    pub failures: Vec<Failure>,
}

/// The output checks of a harvest ([`HarvestSummary::output_checks`],
/// [`crate::frontend::check`]).
#[derive(Debug, Clone, Serialize)]
pub struct OutputChecksSummary {
    /// `--check-outputs`: `auto`, `require` or `off`.
    pub mode: crate::frontend::CheckOutputs,
    /// Per requested target: its validator (with its version), or why it is not checked.
    pub targets: Vec<crate::frontend::check::TargetCoverage>,
    /// What the checks did (`None` under `--isolate`, where the workers check and do not
    /// report their counters; their rejections are in `lost_targets` all the same).
    pub stats: Option<crate::frontend::CheckStats>,
    /// The first reason a validator could not be run (its outputs were archived unchecked).
    pub unrunnable: Option<String>,
}

impl OutputChecksSummary {
    /// The summary of `checker` for `targets`; `in_workers` under `--isolate`.
    pub fn of(
        checker: &crate::frontend::OutputChecker,
        targets: crate::descriptor::TargetSet,
        in_workers: bool,
    ) -> Self {
        OutputChecksSummary {
            mode: checker.mode(),
            targets: checker.coverage(targets),
            stats: (!in_workers).then(|| checker.stats()),
            unrunnable: checker.unrunnable_reason(),
        }
    }

    /// One line for the text summary.
    pub fn to_line(&self) -> String {
        let per_target: Vec<String> = self
            .targets
            .iter()
            .map(|t| match (&t.validator, &t.unchecked_because) {
                (Some(v), _) => format!("{} by {v}", t.target),
                (None, Some(why)) => format!("{} unchecked ({why})", t.target),
                (None, None) => format!("{} unchecked", t.target),
            })
            .collect();
        let mut s = per_target.join("; ");
        if let Some(st) = &self.stats {
            s += &format!(
                "; {} outputs checked in {:.3} s of validator time ({} more from the cache), {} rejected",
                st.checked,
                st.wall_ns as f64 / 1e9,
                st.cached,
                st.rejected
            );
        }
        if let Some(u) = &self.unrunnable {
            s += &format!("; a validator could not run, its outputs are unchecked: {u}");
        }
        s
    }
}

/// One shard of a sharded harvest ([`HarvestSummary::shard`]).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ShardSummary {
    /// I.
    pub index: u32,
    /// N.
    pub count: u32,
    /// The script hash recorded in the archive (32 hex digits).
    pub script: String,
    /// The script's pipelines assigned to this shard.
    pub pipelines: usize,
}

impl HarvestSummary {
    /// A human-readable multi-line summary.
    pub fn to_text(&self) -> String {
        let mut s = if self.kept_existing_archive {
            format!(
                "harvested 0 of {} pipelines: every pipeline failed, so {} was left as it was ({} bytes, {} pipelines), not replaced\n",
                self.pipelines, self.output, self.archive_bytes, self.archive_pipelines
            )
        } else {
            // Labels whose pipelines are identical share one entry: say so, or the two counts
            // look like a lost pipeline.
            let shared = if self.archive_pipelines < self.succeeded {
                format!(
                    " distinct (labels of identical pipelines share one entry: {} labels, {} entries)",
                    self.succeeded, self.archive_pipelines
                )
            } else {
                String::new()
            };
            format!(
                "harvested {} of {} pipelines into {} ({} bytes, {} pipelines{shared}, targets {}, profile {})\n",
                self.succeeded,
                self.pipelines,
                self.output,
                self.archive_bytes,
                self.archive_pipelines,
                self.targets,
                self.profile
            )
        };
        if let Some(sh) = &self.shard {
            s += &format!(
                "  shard:                 {}/{} of script {}: {} of the script's {} pipelines\n",
                sh.index, sh.count, sh.script, sh.pipelines, self.pipelines
            );
        }
        if let Some(t) = &self.trace {
            s += &format!("  trace:                 {t} (open in https://ui.perfetto.dev or chrome://tracing)\n");
        }
        if let Some(e) = &self.trace_error {
            s += &format!("  trace:                 {e}\n");
        }
        if self.expanded > 0 && self.whole_variants {
            s += &format!(
                "  whole variants:        {} specialized variants of {} pipelines with unspecialized colour output, harvested beside them (--whole-variants; the loader creates them in place of fast-linking for those formats)\n",
                self.variants, self.expanded
            );
        } else if self.expanded > 0 {
            s += &format!(
                "  expanded:              {} pipelines with unspecialized colour output into {} specialized variants (expand_unspecialized; the device has no graphics pipeline libraries)\n",
                self.expanded, self.variants
            );
        }
        if self.resumed > 0 || self.dropped > 0 {
            let from_archive = self.resumed - self.resumed_from_journal.min(self.resumed);
            let sources = match (from_archive, self.resumed_from_journal) {
                (_, 0) => "from the existing archive".to_string(),
                (0, _) => "from the journal".to_string(),
                (a, j) => format!("({a} from the existing archive, {j} from the journal)"),
            };
            s += &format!(
                "  resumed:               {} pipelines kept {sources}, not recompiled; {} stale entries dropped (the script no longer produces them)\n",
                self.resumed, self.dropped
            );
        }
        if self.recompiled_for_device > 0 {
            s += &format!(
                "  recompiled on device:  {} pipelines the existing archive holds had no binaries for this device; compiled on it (other devices' binaries kept)\n",
                self.recompiled_for_device
            );
        }
        if self.journal_records > 0 {
            s += &format!("  journal replayed:      {} records\n", self.journal_records);
        }
        if let Some(d) = &self.journal_damage {
            s += &format!("  journal tail ignored:  {d}\n");
        }
        if let Some(d) = &self.device {
            s += &format!("  device ({}):       {}\n", d.backend, d.device);
            if d.in_workers {
                s += &format!(
                    "  driver:                pipelines created in {} worker processes, each with its own device (driver counters not collected)\n",
                    self.workers_started
                );
            } else {
                // Driver time is wall time inside driver calls, summed over threads: compare it
                // with the threads' time in the compile phase, not with CPU time (with more
                // threads than cores, a call also waits for a core).
                let thread_time = self.phases.compile_seconds * self.threads as f64;
                s += &format!(
                    "  driver:                {} pipelines and {} libraries created, {} shared with an identical one, {} shader modules; {:.3} s of thread time in driver calls ({:.0}% of the compile phase's {:.3} s × {} threads)\n",
                    d.pipelines_created,
                    d.libraries_created,
                    d.pipelines_shared,
                    d.shader_modules,
                    d.driver_seconds,
                    if thread_time > 0.0 { 100.0 * d.driver_seconds / thread_time } else { 0.0 },
                    self.phases.compile_seconds,
                    self.threads
                );
                s += &format!(
                    "  captured:              {} ({} binaries, {} bytes before deduplication; {} pipelines answered by a pipeline cache)\n",
                    d.captures, d.binaries, d.binary_bytes, d.cache_hits
                );
                if d.binaries > 0 {
                    let mismatches = if d.binary_key_mismatches > 0 {
                        format!(
                            "; {} binaries with an earlier binary's key and size but other bytes",
                            d.binary_key_mismatches
                        )
                    } else {
                        String::new()
                    };
                    s += &format!(
                        "  capture cost:          {:.3} s of thread time taking binaries out of the driver, {:.3} s in vkGetPipelineKeyKHR; {} binary fetches skipped (--reuse-binaries-by-key){mismatches}\n",
                        d.capture_seconds, d.key_seconds, d.binary_fetches_skipped
                    );
                }
            }
        }
        s += &format!(
            "  libraries parsed:      {}\n  stage functions:       {} unique, {} references, reuse ratio {:.2}\n",
            self.libraries_parsed, self.unique_stage_functions, self.stage_references, self.reuse_ratio
        );
        s += &format!(
            "  time:                  {:.3} s wall, {:.3} s task CPU, {:.3} s process CPU, {} threads on {} cores (CPU utilisation of those cores {:.2})\n",
            self.wall_seconds,
            self.task_cpu_seconds,
            self.process_cpu_seconds,
            self.threads,
            self.cores,
            self.cpu_utilization
        );
        s += &format!("  peak memory:           {:.1} MiB\n", self.peak_rss_bytes as f64 / (1u64 << 20) as f64);
        s += &format!(
            "  phases:                load {:.3} s, plan {:.3} s, compile {:.3} s, final write {:.3} s\n",
            self.phases.load_seconds, self.phases.plan_seconds, self.phases.compile_seconds, self.phases.write_seconds
        );
        if self.workers_started > 0 {
            s += &format!("  worker processes:      {} started\n", self.workers_started);
        }
        if self.flushes > 0 {
            s += &format!("  intermediate flushes:  {} journal records\n", self.flushes);
        }
        s += &format!("  bytes written:         {}\n", self.bytes_written);
        s += &format!("  output checks:         {}\n", self.output_checks.to_line());
        if self.target_counts.len() > 1 || self.target_counts.iter().any(|t| t.pipelines_without > 0) {
            for t in &self.target_counts {
                s += &format!(
                    "  target {:<15} {} pipelines with it, {} without\n",
                    format!("{}:", t.target),
                    t.pipelines_with,
                    t.pipelines_without
                );
            }
            for l in self.lost_targets.iter().take(LISTED) {
                s += &format!(
                    "  lost target {} for {} ({} pipelines): {}: {}\n",
                    l.target.as_deref().unwrap_or("?"),
                    l.function.as_deref().unwrap_or("?"),
                    l.pipelines_affected.unwrap_or(0),
                    l.file.as_deref().unwrap_or("?"),
                    l.message
                );
            }
            if self.lost_targets.len() > LISTED {
                s += &format!(
                    "  … and {} more lost targets (every one is in --json and --report)\n",
                    self.lost_targets.len() - LISTED
                );
            }
        }
        for e in &self.flush_errors {
            s += &format!("  intermediate write failed: {e}\n");
        }
        s += &failure_lines(self.failed, &self.failures);
        s
    }
}

/// How many causes (and lost targets) the text summary lists; the rest are counted.
const LISTED: usize = 10;

/// How many labels the text summary names for one cause.
const LABELS_LISTED: usize = 3;

/// The `failed:` lines of the text summary: each cause once (most pipelines first), with its
/// pipelines counted, the first one's position and a few labels; at most [`LISTED`] causes.
fn failure_lines(failed: usize, failures: &[Failure]) -> String {
    let mut groups: Vec<(&str, Vec<&Failure>)> = Vec::new();
    let mut by_cause: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for f in failures {
        // A record without a cause (from a worker of another version): its message is one.
        let cause = if f.cause.is_empty() { f.message.as_str() } else { f.cause.as_str() };
        let i = *by_cause.entry(cause).or_insert_with(|| {
            groups.push((cause, Vec::new()));
            groups.len() - 1
        });
        groups[i].1.push(f);
    }
    for (_, members) in &mut groups {
        members.sort_by_key(|f| f.index);
    }
    groups.sort_by_key(|(_, members)| (std::cmp::Reverse(members.len()), members[0].index));
    let mut s = match groups.len() {
        1 if failed > 1 => format!("  failed:                {failed}, all for one cause\n"),
        n if n > 0 && n < failed => format!("  failed:                {failed}, for {n} causes\n"),
        _ => format!("  failed:                {failed}\n"),
    };
    for (cause, members) in groups.iter().take(LISTED) {
        let first = members[0];
        if members.len() == 1 {
            let at = match (&first.script_position, first.phase.as_str()) {
                (Some(p), phase) if phase != "script" => format!("{p}: "),
                _ => String::new(),
            };
            s += &format!("    {at}{}\n", first.message.replace('\n', "\n      "));
            continue;
        }
        s += &format!("    {} pipelines: {}\n", members.len(), cause.replace('\n', "\n      "));
        let whence = match (&first.json_path, &first.script_position) {
            (Some(jp), _) => format!(
                " ({}{}: {jp})",
                first.file.as_deref().unwrap_or("?"),
                crate::position::line_column(&first.line, &first.column)
            ),
            (None, Some(p)) => format!(" ({p})"),
            (None, None) => String::new(),
        };
        let names: Vec<String> = members.iter().take(LABELS_LISTED).map(|f| format!("'{}'", f.pipeline)).collect();
        let more = match members.len().saturating_sub(LABELS_LISTED) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        s += &format!(
            "      pipelines {}{whence}{}{more}\n",
            names[0],
            names[1..].iter().map(|n| format!(", {n}")).collect::<String>()
        );
    }
    if groups.len() > LISTED {
        let rest: usize = groups[LISTED..].iter().map(|(_, m)| m.len()).sum();
        s += &format!(
            "    … and {} more causes ({rest} pipelines); every failure is in --json and --report\n",
            groups.len() - LISTED
        );
    } else if groups.iter().any(|(_, m)| m.len() > LABELS_LISTED) {
        s += "    (every failure, with its pipeline, is in --json and --report)\n";
    }
    s
}
