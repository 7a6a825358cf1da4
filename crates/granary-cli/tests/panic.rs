//! Containment through the binary: a harvest in which a stage function panics (injected with
//! `GRANARY_FAULT=panic-stage:vs_bad`, as a naga panic would) and one pipeline panics
//! (`panic:vs_ok2/7`) exits 1, and `--json` lists every failed pipeline with phase `panic` and
//! the panic's message and location. (Containment itself, through `Compiler` and the harvest
//! library with 1 and 8 threads, is library behaviour: `granary/tests/panic.rs`.)

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::PANIC_RUN as RUN;
use granary::archive::Archive;
use std::path::Path;

#[test]
fn a_harvest_with_panics_exits_1_and_reports_each_in_json() {
    let dir = common::tempdir();
    let script = common::panic_script(dir.path());
    let out = dir.path().join("j8.granary");
    let (code, s) = common::harvest_with_fault(
        Path::new(env!("CARGO_BIN_EXE_granary")),
        &script,
        &out,
        &["-j", "8"],
        "panic-stage:vs_bad,panic:vs_ok2/7",
    );
    assert_eq!(code, Some(1), "some pipelines failed: exit 1\n{s}");
    assert_eq!(s["pipelines"], 3 * RUN);
    assert_eq!(s["succeeded"], 2 * RUN - 1, "{s}");
    assert_eq!(s["failed"], RUN + 1);
    assert_eq!(s["unique_stage_functions"], 4, "the panicking function is compiled once: {s}");
    let failures = s["failures"].as_array().unwrap();
    for f in failures {
        assert_eq!(f["phase"], "panic", "{f}");
        let m = f["message"].as_str().unwrap();
        assert!(m.contains("injected panic") && m.contains("fault.rs:"), "message and location: {m}");
    }
    let names: Vec<&str> = failures.iter().map(|f| f["pipeline"].as_str().unwrap()).collect();
    assert!(names.contains(&"vs_ok2/7"));
    assert!(names.iter().filter(|n| n.starts_with("vs_bad/")).count() == RUN as usize);
    assert_eq!(Archive::open(&out).unwrap().len(), 2 * RUN as usize - 1);
}
