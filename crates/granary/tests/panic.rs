//! Containment in the library: a panic inside code granary does not control (naga, a backend)
//! costs the pipelines that depend on the failing piece, reported with the panic's message and
//! location, and nothing else, through `Compiler` from 16 threads and through
//! `granary::harvest` with 1 and 8 threads (identical archives and failure lists). (Moved from
//! granary-cli's tests, which keep the exit code and `--json` of a harvest with panics.)
//!
//! The panics are injected with the documented `GRANARY_FAULT` test facility:
//! `panic-stage:vs_bad` panics inside the front end's compile of the stage function whose
//! entry point is `vs_bad`, where a naga panic ("Expression [N] is not cached!") happens;
//! `panic:vs_ok2/7` panics at that one pipeline's harvest task boundary (the harvest's, not
//! `Compiler::compile`'s, so the API test does not see it); `panic-write:glsl/fs_unlit` panics
//! inside the GLSL writer for the example's `fs_unlit` only (no other test here compiles it or
//! writes GLSL).

mod common;

use common::{harvest_options, panic_runs, panic_script, EXAMPLE, PANIC_RUN, PANIC_SHADER};
use granary::archive::Archive;
use granary::capture::{Capture, CaptureMode};
use granary::compiler::{CompileError, Compiler, CompilerOptions};
use granary::descriptor::*;
use granary::frontend::ShaderErrorKind;
use granary::harvest::{harvest, HarvestOptions};
use std::path::Path;
use std::sync::Arc;

const FAULT: &str = "panic-stage:vs_bad,panic:vs_ok2/7,panic-write:glsl/fs_unlit";

/// The fault facility reads `GRANARY_FAULT` once per process: every test in this file sets the
/// same value before anything reads it.
fn set_fault() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY (of the environment write): it happens once, before any thread of this test
    // binary reads the environment through the fault facility.
    ONCE.call_once(|| std::env::set_var("GRANARY_FAULT", FAULT));
}

#[test]
fn api_panicking_stage_function_fails_its_run_once_and_nothing_else() {
    set_fault();
    let lib = Library::wgsl("lib", PANIC_SHADER);
    let pipelines = Arc::new(panic_runs(&lib));
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let compiler = Arc::new(Compiler::new(CompilerOptions {
        capture: Some(capture.clone()),
        max_concurrent_tasks: Some(16),
        ..Default::default()
    }));
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let threads: Vec<_> = (0..16)
        .map(|_| {
            let (c, p, next) = (compiler.clone(), pipelines.clone(), next.clone());
            std::thread::spawn(move || {
                let mut out = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(d) = p.get(i) else { break };
                    out.push((i, c.compile(d).map(|_| ())));
                }
                out
            })
        })
        .collect();
    let mut results: Vec<_> = threads.into_iter().flat_map(|t| t.join().expect("no thread died")).collect();
    results.sort_by_key(|r| r.0);
    assert_eq!(results.len(), 3 * PANIC_RUN as usize, "every pipeline is counted");
    for (i, r) in &results {
        let bad = (PANIC_RUN as usize..2 * PANIC_RUN as usize).contains(i);
        match r {
            Ok(()) => assert!(!bad, "pipeline {i} uses the panicking function but compiled"),
            Err(CompileError::Shader { error, .. }) => {
                assert!(bad, "pipeline {i} failed: {error}");
                assert_eq!(error.kind, ShaderErrorKind::Panic);
                assert!(error.message.contains("injected panic-stage fault"), "{}", error.message);
                assert!(error.message.contains("fault.rs:"), "location missing: {}", error.message);
            }
            Err(e) => panic!("unexpected error for pipeline {i}: {e}"),
        }
    }
    // vs_ok1, vs_bad, vs_ok2 and fs: the panicking one compiled (and panicked) exactly once.
    assert_eq!(compiler.stats().functions_compiled, 4);
    assert_eq!(capture.len(), 2 * PANIC_RUN as usize);
}

#[test]
fn harvest_contains_panics_and_one_thread_equals_eight() {
    set_fault();
    let dir = common::tempdir();
    let script = panic_script(dir.path());
    // One panic inside naga's stage compile (a run of 1,000 shares it) and one at a single
    // pipeline's task boundary.
    let run = PANIC_RUN as usize;
    let mut archives = Vec::new();
    let mut failure_lists = Vec::new();
    for threads in [1, 8] {
        let out = dir.path().join(format!("j{threads}.granary"));
        let s = harvest(&HarvestOptions { threads, ..harvest_options(&script, &out) }, &|_| {}).expect("harvest");
        assert_eq!(s.pipelines, 3 * run);
        assert_eq!(s.succeeded, 2 * run - 1, "{:?}", s.failures.first());
        assert_eq!(s.failed, run + 1);
        assert_eq!(s.unique_stage_functions, 4, "the panicking function is compiled once");
        for f in &s.failures {
            assert_eq!(f.phase, "panic", "{f:?}");
            assert!(
                f.message.contains("injected panic") && f.message.contains("fault.rs:"),
                "message and location: {}",
                f.message
            );
        }
        let names: Vec<&str> = s.failures.iter().map(|f| f.pipeline.as_str()).collect();
        assert!(names.contains(&"vs_ok2/7"));
        assert!(names.iter().filter(|n| n.starts_with("vs_bad/")).count() == run);
        failure_lists.push(serde_json::to_string(&s.failures).unwrap());
        let a = Archive::open(&out).unwrap();
        a.verify().unwrap();
        assert_eq!(a.len(), 2 * run - 1);
        archives.push(std::fs::read(&out).unwrap());
    }
    assert!(archives[0] == archives[1], "1-thread and 8-thread archives differ");
    assert_eq!(failure_lists[0], failure_lists[1], "1 and 8 threads report different failures");
}

/// A panic inside one target's writer (naga's GLSL writer has `unreachable!`s some inputs
/// reach) costs that target of that stage function only: the pipelines land with their other
/// targets, and each lost-target record carries the panic message and location.
#[test]
fn a_panic_in_one_targets_writer_costs_that_target_only() {
    set_fault();
    let dir = common::tempdir();
    let out = dir.path().join("a.granary");
    let targets = TargetSet::of(&[Target::Spirv, Target::Glsl]);
    let s =
        harvest(&HarvestOptions { targets, ..harvest_options(Path::new(EXAMPLE), &out) }, &|_| {}).expect("harvest");
    assert_eq!(s.failed, 0, "{:?}", s.failures);
    assert!(!s.lost_targets.is_empty(), "the GLSL writer's panic costs GLSL");
    for l in &s.lost_targets {
        assert_eq!(l.target.as_deref(), Some("glsl"), "{l:?}");
        assert!(l.message.contains("injected panic-write fault") && l.message.contains("fault.rs:"), "{}", l.message);
    }
    Archive::open(&out).unwrap().verify().unwrap();
}
