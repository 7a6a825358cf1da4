//! Per-target outcomes through the binary: a lost target makes `harvest` exit 1; `--json`,
//! `--report` and the text summary show the per-target counts and the lost-target record;
//! `--require-all-targets` and `--isolate` agree with the in-process harvest; `merge` and
//! `--resume` refuse archives harvested for other targets, naming them; a panic in one
//! target's writer (an injected fault, so a process) costs that target only. (The outcomes
//! themselves, thread-count identity, resume and prune are library behaviour:
//! `granary/tests/targets.rs`.)

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;

const EXAMPLE_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/renderer/pipelines.json");

fn granary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_granary")).args(args).output().expect("run granary")
}

/// The lost-target script of `common`, as a string argument.
fn script(dir: &Path) -> String {
    common::lost_target_script(dir).to_str().unwrap().to_string()
}

const ALL3: &str = "spirv,msl,glsl";

/// Runs a harvest with `--json`; returns the exit code and the summary.
fn harvest(script: &str, out: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["harvest", script, "-o", out.to_str().unwrap(), "-q", "--json", "--targets", ALL3];
    args.extend_from_slice(extra);
    let o = granary(&args);
    let summary = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
    });
    (o.status.code().unwrap_or(-1), summary)
}

/// The summary without what varies between runs (times, memory, threads, workers, output).
fn comparable(s: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "succeeded": s["succeeded"], "failed": s["failed"], "failures": s["failures"],
        "target_counts": s["target_counts"], "lost_targets": s["lost_targets"],
        "archive_pipelines": s["archive_pipelines"], "archive_bytes": s["archive_bytes"],
    })
}

#[test]
fn a_lost_target_exits_1_and_json_report_and_text_summary_show_it() {
    let dir = common::tempdir();
    let s = script(dir.path());
    let out = dir.path().join("a.granary");
    let report = dir.path().join("report.json");
    let (code, summary) = harvest(&s, &out, &["-j", "1", "--report", report.to_str().unwrap()]);
    assert_eq!(code, 1, "a lost target is a problem the command found: {summary}");
    assert_eq!(summary["succeeded"], 4, "{summary}");
    assert_eq!(summary["failed"], 0, "{summary}");
    // Per-target counts: MSL everywhere; SPIR-V and GLSL lost by the two f16 pipelines.
    let counts = summary["target_counts"].as_array().unwrap();
    let count = |t: &str| {
        let c = counts.iter().find(|c| c["target"] == t).unwrap_or_else(|| panic!("{t} in {summary}"));
        (c["pipelines_with"].as_u64().unwrap(), c["pipelines_without"].as_u64().unwrap())
    };
    assert_eq!(count("msl"), (4, 0));
    assert_eq!(count("glsl"), (2, 2));
    assert_eq!(count("spirv"), (2, 2));
    // One lost-target record per stage function and target, not one per pipeline.
    let lost = summary["lost_targets"].as_array().unwrap();
    assert_eq!(lost.len(), 2, "{summary}");
    let glsl = lost.iter().find(|l| l["target"] == "glsl").expect("glsl lost");
    assert_eq!(glsl["phase"], "target");
    assert_eq!(glsl["pipelines_affected"], 2);
    assert_eq!(glsl["function"], "fragment half:fs");
    assert_eq!(glsl["file"], "half");
    assert_eq!(glsl["pipeline"], "half/back", "the first pipeline affected");
    let message = glsl["message"].as_str().unwrap();
    assert!(message.contains("SHADER_FLOAT16") && message.contains("glsl"), "{message}");
    // --report: the failures (none) and then the lost targets.
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(r.as_array().unwrap(), lost);
    // `ls --json` reads it.
    let o = granary(&["ls", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The text summary names the counts and the lost target.
    let o = granary(&["harvest", &s, "-o", dir.path().join("t.granary").to_str().unwrap(), "-q", "--targets", ALL3]);
    let text = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert!(text.contains("target glsl:") && text.contains("2 pipelines with it, 2 without"), "{text}");
    assert!(text.contains("lost target glsl for fragment half:fs (2 pipelines)"), "{text}");
}

#[test]
fn require_all_targets_exits_1_and_isolate_agrees() {
    let dir = common::tempdir();
    let s = script(dir.path());
    let out = dir.path().join("a.granary");
    let iso = dir.path().join("iso.granary");
    let (code, summary) = harvest(&s, &out, &["-j", "2", "--require-all-targets"]);
    let (icode, isummary) = harvest(&s, &iso, &["-j", "2", "--require-all-targets", "--isolate"]);
    assert_eq!((code, icode), (1, 1));
    assert_eq!(summary["succeeded"], 2, "{summary}");
    assert_eq!(summary["failed"], 2, "{summary}");
    let failures = summary["failures"].as_array().unwrap();
    assert!(failures.iter().all(|f| f["phase"] == "targets"), "{summary}");
    let m = failures[0]["message"].as_str().unwrap();
    assert!(m.contains("target glsl lost") && m.contains("SHADER_FLOAT16"), "{m}");
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&iso).unwrap(), "--isolate differs");
    assert_eq!(comparable(&summary), comparable(&isummary));
}

#[test]
fn isolate_agrees_with_the_in_process_harvest() {
    let dir = common::tempdir();
    let s = script(dir.path());
    let runs: Vec<(std::path::PathBuf, serde_json::Value)> =
        [("j1", vec!["-j", "1"]), ("iso", vec!["-j", "3", "--isolate"])]
            .into_iter()
            .map(|(name, extra)| {
                let out = dir.path().join(format!("{name}.granary"));
                let (code, summary) = harvest(&s, &out, &extra);
                assert_eq!(code, 1, "{name}: {summary}");
                (out, summary)
            })
            .collect();
    assert_eq!(std::fs::read(&runs[1].0).unwrap(), std::fs::read(&runs[0].0).unwrap(), "--isolate differs");
    assert_eq!(comparable(&runs[1].1), comparable(&runs[0].1));
    // Resume of the finished archive still exits 1 (the resumed pipelines lost targets).
    let (code, summary) = harvest(&s, &runs[0].0, &["--resume"]);
    assert_eq!(code, 1, "{summary}");
    assert_eq!(summary["resumed"], 4, "{summary}");
}

#[test]
fn merge_and_resume_refuse_archives_of_other_targets_naming_them() {
    let dir = common::tempdir();
    let s = script(dir.path());
    let a = dir.path().join("a.granary");
    let b = dir.path().join("b.granary");
    harvest(&s, &a, &[]);
    let o = granary(&["harvest", &s, "-o", b.to_str().unwrap(), "-q", "--targets", "spirv,msl"]);
    assert_eq!(o.status.code(), Some(1));
    // Merge refuses, naming the requested targets.
    let m = dir.path().join("m.granary");
    let o = granary(&["merge", a.to_str().unwrap(), b.to_str().unwrap(), "-o", m.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("requested targets spirv,msl,glsl vs spirv,msl"), "{err}");
    // Resume under other targets is refused (other writer options).
    let o = granary(&["harvest", &s, "-o", a.to_str().unwrap(), "-q", "--targets", "spirv,msl", "--resume"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("requested targets spirv,msl,glsl vs spirv,msl"), "{err}");
    assert!(err.contains("resume with --targets spirv,msl,glsl"), "{err}");
}

/// A panic inside one target's writer, injected with `GRANARY_FAULT=panic-write:glsl/ENTRY`:
/// the harvest exits 1, `--json` carries the lost-target records with the panic message and
/// location, and in-process and `--isolate` agree. (That it costs that target only is also
/// checked in the library: `granary/tests/panic.rs`.)
#[test]
fn a_panic_in_one_targets_writer_costs_that_target_only() {
    let dir = common::tempdir();
    let out = |name: &str| dir.path().join(name);
    let run = |o: &std::path::Path, extra: &[&str]| {
        let r = Command::new(env!("CARGO_BIN_EXE_granary"))
            .args([
                "harvest",
                EXAMPLE_SCRIPT,
                "-o",
                o.to_str().unwrap(),
                "--json",
                "-j",
                "2",
                "--targets",
                "spirv,glsl",
            ])
            .args(extra)
            .env("GRANARY_FAULT", "panic-write:glsl/fs_unlit")
            .output()
            .unwrap();
        let s: serde_json::Value =
            serde_json::from_slice(&r.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&r.stderr)));
        (r.status.code(), s)
    };
    let (code, s) = run(&out("a.granary"), &[]);
    assert_eq!(code, Some(1), "a lost target is a problem to report: {s}");
    assert_eq!(s["failed"], 0, "{s}");
    let lost = s["lost_targets"].as_array().unwrap();
    assert!(!lost.is_empty(), "{s}");
    for l in lost {
        assert_eq!(l["target"], "glsl", "{l}");
        let m = l["message"].as_str().unwrap();
        assert!(m.contains("injected panic-write fault") && m.contains("fault.rs:"), "{m}");
    }
    let (_, iso) = run(&out("b.granary"), &["--isolate"]);
    assert_eq!(iso["lost_targets"], s["lost_targets"]);
    assert!(std::fs::read(out("a.granary")).unwrap() == std::fs::read(out("b.granary")).unwrap());
}
