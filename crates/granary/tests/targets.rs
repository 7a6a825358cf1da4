//! Per-target outcomes of the harvest library: a stage function one target refuses (a fragment
//! shader using `f16`, outside the default profile's GLSL and SPIR-V capabilities, inside
//! MSL's) costs that target for the pipelines using it, not the pipelines, and in every stage
//! of them (no pipeline lands with a target for only some of its stages); the summary counts
//! it per target and records it once per stage function; `require_all_targets` restores all or
//! nothing; one thread and eight with flushes agree; resume and prune keep the archive; the
//! requested targets are part of the writer options (resume and merge refuse archives harvested
//! for other targets). (Moved from granary-cli's tests, which keep the exit codes, `--json`,
//! `--report`, the messages and `--isolate`'s agreement.)

mod common;

use common::{harvest_options, lost_target_script};
use granary::archive::{self, Archive};
use granary::descriptor::{Target, TargetSet};
use granary::harvest::{harvest, prune, HarvestOptions, HarvestSummary};
use std::path::Path;

const ALL3: [Target; 3] = [Target::Spirv, Target::Msl, Target::Glsl];

fn options(script: &Path, out: &Path, threads: usize) -> HarvestOptions {
    HarvestOptions { threads, targets: TargetSet::of(&ALL3), ..harvest_options(script, out) }
}

fn run(opts: &HarvestOptions) -> HarvestSummary {
    harvest(opts, &|_| {}).expect("harvest")
}

/// The summary without what varies between runs (times, memory, threads, workers, output).
fn comparable(s: &HarvestSummary) -> serde_json::Value {
    serde_json::json!({
        "succeeded": s.succeeded, "failed": s.failed, "failures": s.failures,
        "target_counts": s.target_counts, "lost_targets": s.lost_targets,
        "archive_pipelines": s.archive_pipelines, "archive_bytes": s.archive_bytes,
    })
}

fn has(a: &Archive, label: &str, stage: usize, t: Target) -> bool {
    let p = a.lookup_label(label).unwrap().unwrap_or_else(|| panic!("{label} is not archived"));
    p.stages().unwrap()[stage].output(t).unwrap().is_some()
}

#[test]
fn a_target_refused_by_one_function_costs_that_target_not_the_pipelines() {
    let dir = common::tempdir();
    let s = lost_target_script(dir.path());
    let out = dir.path().join("a.granary");
    let summary = run(&options(&s, &out, 1));
    assert_eq!((summary.succeeded, summary.failed), (4, 0), "{:?}", summary.failures);
    // Per-target counts: MSL everywhere; SPIR-V and GLSL lost by the two f16 pipelines.
    let count = |t: &str| {
        let c = summary.target_counts.iter().find(|c| c.target == t).unwrap_or_else(|| panic!("{t} counted"));
        (c.pipelines_with, c.pipelines_without)
    };
    assert_eq!(count("msl"), (4, 0));
    assert_eq!(count("glsl"), (2, 2));
    assert_eq!(count("spirv"), (2, 2));
    // One lost-target record per stage function and target, not one per pipeline.
    let lost = &summary.lost_targets;
    assert_eq!(lost.len(), 2, "{lost:?}");
    let glsl = lost.iter().find(|l| l.target.as_deref() == Some("glsl")).expect("glsl lost");
    assert_eq!(glsl.phase, "target");
    assert_eq!(glsl.pipelines_affected, Some(2));
    assert_eq!(glsl.function.as_deref(), Some("fragment half:fs"));
    assert_eq!(glsl.file.as_deref(), Some("half"));
    assert_eq!(glsl.pipeline, "half/back", "the first pipeline affected");
    assert!(glsl.message.contains("SHADER_FLOAT16") && glsl.message.contains("glsl"), "{}", glsl.message);
    // The archive: the f16 pipelines landed with MSL only, in both stages: a target lands for
    // a pipeline only when every stage has it (the vertex stage function has GLSL and SPIR-V,
    // which the plain pipelines sharing it keep).
    let a = Archive::open(&out).unwrap();
    a.verify().unwrap();
    for label in ["half/back", "half/none"] {
        assert!(has(&a, label, 1, Target::Msl));
        assert!(!has(&a, label, 1, Target::Glsl) && !has(&a, label, 1, Target::Spirv), "{label}");
        assert!(has(&a, label, 0, Target::Msl), "{label}");
        assert!(
            !has(&a, label, 0, Target::Glsl) && !has(&a, label, 0, Target::Spirv),
            "{label}: the vertex stage holds no target its fragment stage lost"
        );
    }
    for t in ALL3 {
        assert!(has(&a, "plain/back", 0, t) && has(&a, "plain/back", 1, t) && has(&a, "compute", 0, t));
    }
}

#[test]
fn require_all_targets_fails_the_pipelines_that_lost_one() {
    let dir = common::tempdir();
    let s = lost_target_script(dir.path());
    let out = dir.path().join("a.granary");
    let summary = run(&HarvestOptions { require_all_targets: true, ..options(&s, &out, 2) });
    assert_eq!((summary.succeeded, summary.failed), (2, 2), "{:?}", summary.failures);
    assert!(summary.failures.iter().all(|f| f.phase == "targets"), "{:?}", summary.failures);
    let m = &summary.failures[0].message;
    assert!(m.contains("target glsl lost") && m.contains("SHADER_FLOAT16"), "{m}");
    let a = Archive::open(&out).unwrap();
    assert!(a.lookup_label("half/back").unwrap().is_none() && a.lookup_label("half/none").unwrap().is_none());
    assert!(a.lookup_label("plain/back").unwrap().is_some() && a.lookup_label("compute").unwrap().is_some());
}

#[test]
fn one_and_eight_threads_agree_and_resume_and_prune_keep_the_archive() {
    let dir = common::tempdir();
    let s = lost_target_script(dir.path());
    let (j1, j8) = (dir.path().join("j1.granary"), dir.path().join("j8.granary"));
    let first = run(&options(&s, &j1, 1));
    let other = run(&HarvestOptions { flush_every: Some(1), ..options(&s, &j8, 8) });
    let bytes = std::fs::read(&j1).unwrap();
    assert_eq!(std::fs::read(&j8).unwrap(), bytes, "8 threads with flushes differ from 1");
    assert_eq!(comparable(&other), comparable(&first));
    // Resume of the finished archive: accepted (it lost targets, it was harvested for these
    // targets), nothing recompiled, same bytes; the resumed pipelines still count per target.
    let resumed = run(&HarvestOptions { resume: true, ..options(&s, &j1, 2) });
    assert_eq!(resumed.resumed, 4, "{resumed:?}");
    assert_eq!(comparable(&resumed)["target_counts"], comparable(&first)["target_counts"]);
    assert_eq!(std::fs::read(&j1).unwrap(), bytes);
    // Prune recognises the requested targets from the header and keeps every pipeline.
    let pruned = dir.path().join("pruned.granary");
    let r = prune(&j1, &s, &pruned, false).unwrap();
    assert_eq!((r.kept, r.dropped, r.missing.len()), (4, 0, 0));
    assert_eq!(std::fs::read(&pruned).unwrap(), bytes);
}

#[test]
fn requested_targets_are_part_of_the_writer_options() {
    let dir = common::tempdir();
    let s = lost_target_script(dir.path());
    let (a, b) = (dir.path().join("a.granary"), dir.path().join("b.granary"));
    run(&options(&s, &a, 2));
    let two = TargetSet::of(&[Target::Spirv, Target::Msl]);
    run(&HarvestOptions { targets: two, ..options(&s, &b, 2) });
    let (ra, rb) = (Archive::open(&a).unwrap(), Archive::open(&b).unwrap());
    assert!(ra.target_options_text().ends_with(";targets=spirv,msl,glsl"), "{}", ra.target_options_text());
    assert_ne!(ra.key_context(), rb.key_context());
    // Merge refuses, naming the requested targets.
    let err = archive::merge(&[ra, rb]).expect_err("archives of other targets merge").to_string();
    assert!(err.contains("requested targets spirv,msl,glsl vs spirv,msl"), "{err}");
    // Resume under other targets is refused (other writer options).
    let err = harvest(&HarvestOptions { targets: two, resume: true, ..options(&s, &a, 2) }, &|_| {})
        .expect_err("resume under other targets")
        .to_string();
    // The refusal names the option that differs and the value to resume with.
    assert!(err.contains("requested targets spirv,msl,glsl vs spirv,msl"), "{err}");
    assert!(err.contains("resume with --targets spirv,msl,glsl"), "{err}");
}
