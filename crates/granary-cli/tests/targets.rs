//! Per-target outcomes end to end: a stage function one target refuses (a fragment shader using
//! `f16`, outside the default profile's GLSL and SPIR-V capabilities, inside MSL's) costs that
//! target for the pipelines using it, not the pipelines; the summary, `--json` and `--report`
//! count it; `--require-all-targets` restores all or nothing; -j1, -j8 and `--isolate` agree;
//! the requested targets are part of the writer options (resume accepts the archive, merge
//! refuses archives harvested for other targets).

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use granary::archive::Archive;
use granary::descriptor::Target;
use std::path::Path;
use std::process::Command;

const EXAMPLE_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/renderer/pipelines.json");

fn granary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_granary")).args(args).output().expect("run granary")
}

const VS: &str =
    "@vertex fn vs(@location(0) p: vec3<f32>) -> @builtin(position) vec4<f32> { return vec4<f32>(p, 1.0); }";
const PLAIN: &str = "@fragment fn fs() -> @location(0) vec4<f32> { return vec4<f32>(1.0); }";
const HALF: &str =
    "enable f16;\n@fragment fn fs() -> @location(0) vec4<f32> { let h: f16 = 0.5h; return vec4<f32>(f32(h * 2.0h)); }";
const COMPUTE: &str = "@compute @workgroup_size(1) fn main() {}";

fn render(label: &str, fragment: &str, cull: &str) -> serde_json::Value {
    serde_json::json!({"label": label, "render": {
        "vertex": {"library": "mesh", "function": "vs"},
        "fragment": {"library": fragment, "function": "fs"},
        "vertex_buffers": [{"stride": 12, "step": "vertex", "attributes": [{"location": 0, "format": "float32x3", "offset": 0}]}],
        "primitive": {"topology": "triangle-list", "cull": cull, "front_face": "ccw"},
        "color_attachments": [{"format": "rgba8unorm"}],
        "sample_count": 1
    }})
}

/// Four pipelines: two share the `f16` fragment function, two use nothing any target refuses.
fn script(dir: &Path) -> String {
    let s = serde_json::json!({
        "granary_script": 1,
        "libraries": [
            {"name": "mesh", "kind": "wgsl", "source": VS},
            {"name": "plain", "kind": "wgsl", "source": PLAIN},
            {"name": "half", "kind": "wgsl", "source": HALF},
            {"name": "c", "kind": "wgsl", "source": COMPUTE}
        ],
        "pipelines": [
            render("plain/back", "plain", "back"),
            render("half/back", "half", "back"),
            render("half/none", "half", "none"),
            {"label": "compute", "compute": {"function": {"library": "c", "function": "main"}}}
        ]
    });
    let path = dir.join("s.json");
    std::fs::write(&path, serde_json::to_string_pretty(&s).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
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

fn has(a: &Archive, label: &str, stage: usize, t: Target) -> bool {
    let p = a.lookup_label(label).unwrap().unwrap_or_else(|| panic!("{label} is not archived"));
    p.stages().unwrap()[stage].output(t).unwrap().is_some()
}

#[test]
fn a_target_refused_by_one_function_costs_that_target_not_the_pipelines() {
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
    // The archive: the f16 pipelines landed, their fragment stage has MSL only; the vertex
    // stage keeps what its stage function produced.
    let a = Archive::open(&out).unwrap();
    for label in ["half/back", "half/none"] {
        assert!(has(&a, label, 1, Target::Msl));
        assert!(!has(&a, label, 1, Target::Glsl) && !has(&a, label, 1, Target::Spirv), "{label}");
        assert!(has(&a, label, 0, Target::Glsl), "{label}: vertex outputs are not trimmed");
    }
    for t in [Target::Spirv, Target::Msl, Target::Glsl] {
        assert!(has(&a, "plain/back", 0, t) && has(&a, "plain/back", 1, t) && has(&a, "compute", 0, t));
    }
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
fn require_all_targets_fails_the_pipelines_that_lost_one() {
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
    let a = Archive::open(&out).unwrap();
    assert!(a.lookup_label("half/back").unwrap().is_none() && a.lookup_label("half/none").unwrap().is_none());
    assert!(a.lookup_label("plain/back").unwrap().is_some() && a.lookup_label("compute").unwrap().is_some());
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&iso).unwrap(), "--isolate differs");
    assert_eq!(comparable(&summary), comparable(&isummary));
}

#[test]
fn j1_j8_and_isolate_agree_and_resume_keeps_the_archive() {
    let dir = common::tempdir();
    let s = script(dir.path());
    let runs: Vec<(std::path::PathBuf, serde_json::Value)> =
        [("j1", vec!["-j", "1"]), ("j8", vec!["-j", "8", "--flush-every", "1"]), ("iso", vec!["-j", "3", "--isolate"])]
            .into_iter()
            .map(|(name, extra)| {
                let out = dir.path().join(format!("{name}.granary"));
                let (code, summary) = harvest(&s, &out, &extra);
                assert_eq!(code, 1, "{name}: {summary}");
                (out, summary)
            })
            .collect();
    let bytes = std::fs::read(&runs[0].0).unwrap();
    for (out, summary) in &runs[1..] {
        assert_eq!(std::fs::read(out).unwrap(), bytes, "{}", out.display());
        assert_eq!(comparable(summary), comparable(&runs[0].1), "{}", out.display());
    }
    // Resume of the finished archive: accepted (it lost targets, it was harvested for these
    // targets), nothing recompiled, same bytes; the resumed pipelines still count per target.
    let (code, summary) = harvest(&s, &runs[0].0, &["--resume"]);
    assert_eq!(code, 1, "{summary}");
    assert_eq!(summary["resumed"], 4, "{summary}");
    assert_eq!(summary["target_counts"], runs[0].1["target_counts"]);
    assert_eq!(std::fs::read(&runs[0].0).unwrap(), bytes);
    // Prune recognises the requested targets from the header and keeps every pipeline.
    let pruned = dir.path().join("pruned.granary");
    let o = granary(&["prune", runs[0].0.to_str().unwrap(), "--script", &s, "-o", pruned.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&pruned).unwrap(), bytes);
}

#[test]
fn requested_targets_are_part_of_the_writer_options() {
    let dir = common::tempdir();
    let s = script(dir.path());
    let a = dir.path().join("a.granary");
    let b = dir.path().join("b.granary");
    harvest(&s, &a, &[]);
    let o = granary(&["harvest", &s, "-o", b.to_str().unwrap(), "-q", "--targets", "spirv,msl"]);
    assert_eq!(o.status.code(), Some(1));
    let (ra, rb) = (Archive::open(&a).unwrap(), Archive::open(&b).unwrap());
    assert!(ra.target_options_text().ends_with(";targets=spirv,msl,glsl"), "{}", ra.target_options_text());
    assert_ne!(ra.key_context(), rb.key_context());
    // Merge refuses, naming the requested targets.
    let m = dir.path().join("m.granary");
    let o = granary(&["merge", a.to_str().unwrap(), b.to_str().unwrap(), "-o", m.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("requested targets spirv,msl,glsl vs spirv,msl"), "{err}");
    // Resume under other targets is refused (other writer options).
    let o = granary(&["harvest", &s, "-o", a.to_str().unwrap(), "-q", "--targets", "spirv,msl", "--resume"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("targets=spirv,msl,glsl"));
}

/// A panic inside one target's writer (naga's GLSL writer has `unreachable!`s some inputs
/// reach) costs that target of that stage function only: injected with
/// `GRANARY_FAULT=panic-write:glsl/ENTRY`, the pipelines land with their other targets and the
/// lost-target record carries the panic message and location; in-process and `--isolate` agree.
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
