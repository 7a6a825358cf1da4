//! A capture's `write_script` replays to the same pipelines.

mod common;

use granary::capture::{Capture, CaptureMode};
use granary::compiler::{Compiler, CompilerOptions};
use granary::descriptor::PipelineKey;
use granary::script::Script;
use std::sync::Arc;

#[test]
fn exported_script_replays_to_identical_keys_and_archive() {
    let fx = common::fixture();
    let mut pipelines = fx.runs(2, 8, 3);
    pipelines.push(granary::descriptor::PipelineDescriptor::Compute(granary::descriptor::ComputePipelineDescriptor {
        label: Some("cs".into()),
        compute: granary::descriptor::FunctionDescriptor::library(fx.fs.clone(), "cs"),
    }));
    let capture = Arc::new(Capture::new(CaptureMode::Both));
    let compiler = Compiler::new(CompilerOptions { capture: Some(capture.clone()), ..Default::default() });
    for p in &pipelines {
        compiler.compile(p).unwrap();
    }
    let dir = common::tempdir();
    let sp = dir.path().join("captured.json");
    assert_eq!(capture.write_script(&sp).unwrap(), pipelines.len());
    let a1 = dir.path().join("a1.granary");
    capture.write_archive(&a1).unwrap();

    let script = Script::load(&sp).unwrap();
    assert_eq!(script.pipelines.len(), pipelines.len());
    let replay = Arc::new(Capture::new(CaptureMode::Outputs));
    let c2 = Compiler::new(CompilerOptions { capture: Some(replay.clone()), ..Default::default() });
    let mut keys: Vec<PipelineKey> = Vec::new();
    for p in &script.pipelines {
        keys.push(c2.compile(p.descriptor.as_ref().unwrap()).unwrap().key);
    }
    let mut orig: Vec<PipelineKey> = pipelines.iter().map(|p| p.key(&compiler.key_context())).collect();
    keys.sort();
    orig.sort();
    assert_eq!(keys, orig);
    let a2 = dir.path().join("a2.granary");
    replay.write_archive(&a2).unwrap();
    assert_eq!(std::fs::read(a1).unwrap(), std::fs::read(a2).unwrap());
}
