//! Containment: a panic inside code granary does not control (naga, a backend) costs the
//! pipelines that depend on the failing piece, reported with the panic's message and
//! location, and nothing else.
//!
//! The panics are injected with the documented `GRANARY_FAULT` test facility:
//! `panic-stage:vs_bad` panics inside the front end's compile of the stage function whose
//! entry point is `vs_bad`, where a naga panic ("Expression [N] is not cached!") happens.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use granary::archive::Archive;
use granary::capture::{Capture, CaptureMode};
use granary::compiler::{CompileError, Compiler, CompilerOptions};
use granary::descriptor::*;
use granary::frontend::ShaderErrorKind;
use std::path::Path;
use std::sync::Arc;

const FAULT: &str = "panic-stage:vs_bad";
const RUN: u32 = 1000;

const SHADER: &str = r#"
struct Out { @builtin(position) pos: vec4<f32>, @location(0) c: vec4<f32> };
@vertex fn vs_ok1(@location(0) p: vec3<f32>) -> Out { var o: Out; o.pos = vec4<f32>(p, 1.0); o.c = vec4<f32>(1.0); return o; }
@vertex fn vs_bad(@location(0) p: vec3<f32>) -> Out { var o: Out; o.pos = vec4<f32>(p.yxz, 1.0); o.c = vec4<f32>(0.5); return o; }
@vertex fn vs_ok2(@location(0) p: vec3<f32>) -> Out { var o: Out; o.pos = vec4<f32>(p.zyx, 1.0); o.c = vec4<f32>(0.0); return o; }
@fragment fn fs(@location(0) c: vec4<f32>) -> @location(0) vec4<f32> { return c; }
"#;

/// The fault facility reads `GRANARY_FAULT` once per process: every test in this file sets the
/// same value before anything reads it.
fn set_fault() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY (of the environment write): it happens once, before any thread of this test
    // binary reads the environment through the fault facility.
    ONCE.call_once(|| std::env::set_var("GRANARY_FAULT", FAULT));
}

fn pipeline(lib: &Arc<Library>, vs: &str, i: u32) -> PipelineDescriptor {
    PipelineDescriptor::Render(RenderPipelineDescriptor {
        label: Some(format!("{vs}/{i}")),
        vertex: FunctionDescriptor::library(lib.clone(), vs),
        fragment: Some(FunctionDescriptor::library(lib.clone(), "fs")),
        state: common::opaque_state(
            vec![VertexBufferLayout {
                stride: 12,
                step: StepMode::Vertex,
                attributes: vec![VertexAttribute { location: 0, format: VertexFormat::Float32x3, offset: 0 }],
            }],
            i as i32,
        ),
        layout: None,
    })
}

/// Three runs of 1,000 pipelines; the middle run shares the panicking vertex function.
fn runs(lib: &Arc<Library>) -> Vec<PipelineDescriptor> {
    ["vs_ok1", "vs_bad", "vs_ok2"].iter().flat_map(|vs| (0..RUN).map(move |i| pipeline(lib, vs, i))).collect()
}

#[test]
fn api_panicking_stage_function_fails_its_run_once_and_nothing_else() {
    set_fault();
    let lib = Library::wgsl("lib", SHADER);
    let pipelines = Arc::new(runs(&lib));
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
    assert_eq!(results.len(), 3 * RUN as usize, "every pipeline is counted");
    for (i, r) in &results {
        let bad = (RUN as usize..2 * RUN as usize).contains(i);
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
    assert_eq!(capture.len(), 2 * RUN as usize);
}

fn write_script(dir: &Path) -> std::path::PathBuf {
    std::fs::write(dir.join("lib.wgsl"), SHADER).unwrap();
    let lib = Library::wgsl("lib", SHADER);
    let list = runs(&lib);
    let pipelines: Vec<serde_json::Value> = list
        .iter()
        .map(|d| {
            let PipelineDescriptor::Render(r) = d else { unreachable!() };
            let (FunctionDescriptor::Library { name, .. }, i) = (&r.vertex, r.state.depth_stencil.as_ref().unwrap().depth_bias) else {
                unreachable!()
            };
            serde_json::json!({"label": r.label, "render": {
                "vertex": {"library": "lib", "function": name},
                "fragment": {"library": "lib", "function": "fs"},
                "vertex_buffers": [{"stride": 12, "step": "vertex", "attributes": [{"location": 0, "format": "float32x3", "offset": 0}]}],
                "color_attachments": [{}],
                "depth_stencil": {"format": "depth32float", "depth_write": true, "depth_compare": "less", "depth_bias": i}
            }})
        })
        .collect();
    let script = serde_json::json!({"granary_script": 1, "libraries": [{"name": "lib", "path": "lib.wgsl"}], "pipelines": pipelines});
    let path = dir.join("pipelines.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&script).unwrap()).unwrap();
    path
}

fn harvest(script: &Path, out: &Path, jobs: &str, fault: &str) -> (Option<i32>, serde_json::Value) {
    common::harvest_with_fault(Path::new(env!("CARGO_BIN_EXE_granary")), script, out, &["-j", jobs], fault)
}

#[test]
fn harvest_contains_panics_and_j1_equals_j8() {
    let dir = common::tempdir();
    let script = write_script(dir.path());
    // One panic inside naga's stage compile (a run of 1,000 shares it) and one at a single
    // pipeline's task boundary.
    let fault = format!("{FAULT},panic:vs_ok2/7");
    let mut archives = Vec::new();
    let mut failure_lists = Vec::new();
    for jobs in ["1", "8"] {
        let out = dir.path().join(format!("j{jobs}.granary"));
        let (code, s) = harvest(&script, &out, jobs, &fault);
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
        let names: Vec<String> = failures.iter().map(|f| f["pipeline"].as_str().unwrap().to_string()).collect();
        assert!(names.contains(&"vs_ok2/7".to_string()));
        assert!(names.iter().filter(|n| n.starts_with("vs_bad/")).count() == RUN as usize);
        failure_lists.push(serde_json::to_string(failures).unwrap());
        let a = Archive::open(&out).unwrap();
        a.verify().unwrap();
        assert_eq!(a.len(), 2 * RUN as usize - 1);
        archives.push(std::fs::read(&out).unwrap());
    }
    assert!(archives[0] == archives[1], "-j1 and -j8 archives differ");
    assert_eq!(failure_lists[0], failure_lists[1], "-j1 and -j8 report different failures");
}
