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
        layout: None,
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

/// Descriptors that share a key but differ in labels and names: the exported script is the
/// same whichever was recorded first (it used to depend on which thread recorded a label first).
#[test]
fn exported_script_does_not_depend_on_record_order() {
    use granary::descriptor::{ComputePipelineDescriptor, FunctionDescriptor, PipelineDescriptor};
    let fx = common::fixture();
    let f = |label: Option<&str>, name: &str| {
        let func = FunctionDescriptor::Specialized {
            function: Box::new(FunctionDescriptor::library(fx.fs.clone(), "cs")),
            constants: vec![],
            specialized_name: Some(name.to_string()),
        };
        PipelineDescriptor::Compute(ComputePipelineDescriptor {
            label: label.map(str::to_owned),
            compute: func,
            layout: None,
        })
    };
    let variants = [f(Some("b"), "x"), f(Some("a"), "y"), f(None, "z"), f(Some("a"), "w")];
    let dir = common::tempdir();
    let mut texts = Vec::new();
    for order in [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]] {
        let capture = Arc::new(Capture::new(CaptureMode::Descriptors));
        let compiler = Compiler::new(CompilerOptions { capture: Some(capture.clone()), ..Default::default() });
        for i in order {
            compiler.compile(&variants[i]).unwrap();
        }
        assert_eq!(capture.len(), 1, "one key");
        let p = dir.path().join("s.json");
        capture.write_script(&p).unwrap();
        texts.push(std::fs::read_to_string(&p).unwrap());
    }
    assert_eq!(texts[0], texts[1]);
    assert_eq!(texts[0], texts[2]);
    assert!(texts[0].contains("\"label\": \"a\""), "{}", texts[0]);
}
