//! `harvest --isolate`: a worker that crashes or hangs costs exactly its pipeline.
//!
//! Faults are injected with the documented `GRANARY_FAULT` test facility, set only on the
//! `granary` child process of each test.

mod common;

use granary::archive::Archive;
use granary::script::Script;
use std::path::Path;
use std::process::Command;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/renderer/pipelines.json");

fn labels() -> Vec<String> {
    Script::load(Path::new(EXAMPLE)).unwrap().pipelines.iter().map(|p| p.label.clone().unwrap()).collect()
}

fn harvest(out: &Path, args: &[&str], fault: &str) -> (Option<i32>, serde_json::Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "--json", "-j", "2"])
        .args(args)
        .env("GRANARY_FAULT", fault)
        .output()
        .unwrap();
    let summary = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("no summary: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code(), summary)
}

#[test]
fn crash_and_hang_fail_exactly_their_pipelines() {
    let labels = labels();
    let (abort, segv, overflow, hang) = (&labels[3], &labels[57], &labels[150], &labels[290]);
    let dir = common::tempdir();
    let out = dir.path().join("iso.granary");
    let fault = format!("abort:{abort},segv:{segv},stack-overflow:{overflow},hang:{hang}");
    let (code, s) = harvest(&out, &["--isolate", "--timeout", "3"], &fault);
    assert_eq!(code, Some(1), "{s}");
    let failures = s["failures"].as_array().unwrap();
    let failed: Vec<&str> = failures.iter().map(|f| f["pipeline"].as_str().unwrap()).collect();
    assert_eq!(failed, vec![abort.as_str(), segv.as_str(), overflow.as_str(), hang.as_str()]);
    let msg = |i: usize| failures[i]["message"].as_str().unwrap().to_string();
    assert!(msg(0).contains("SIGABRT"), "{}", msg(0));
    assert!(msg(1).contains("SIGSEGV"), "{}", msg(1));
    assert!(msg(2).contains("stack overflow"), "{}", msg(2));
    assert_eq!(failures[3]["phase"], "timeout");

    let ar = Archive::open(&out).unwrap();
    ar.verify().unwrap();
    assert_eq!(ar.len(), labels.len() - 4);
    for l in &labels {
        let found = ar.lookup_label(l).unwrap().is_some();
        assert_eq!(found, !failed.contains(&l.as_str()), "{l}");
    }
}

#[test]
fn isolated_and_recycled_workers_write_the_same_bytes_as_threads() {
    let dir = common::tempdir();
    let a = dir.path().join("threads.granary");
    let b = dir.path().join("isolated.granary");
    let (code, _) = harvest(&a, &[], "");
    assert_eq!(code, Some(0));
    let (code, s) = harvest(&b, &["--isolate", "--recycle-after", "7", "--worker-memory-limit", "4096"], "");
    assert_eq!(code, Some(0), "{s}");
    assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
}
