//! `LazyScript` (what `granary worker` reads) agrees with `Script` entry by entry.

use granary::descriptor::KeyContext;
use granary::script::{LazyScript, Script};
use std::path::Path;

#[test]
fn lazy_and_eager_scripts_give_the_same_pipelines() {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/renderer/pipelines.json"));
    let eager = Script::load(path).unwrap();
    let lazy = LazyScript::load(path).unwrap();
    assert_eq!(lazy.len(), eager.pipelines.len());
    let ctx = KeyContext { target_options: 9 };
    for p in &eager.pipelines {
        let (label, d) = lazy.pipeline(p.index).unwrap();
        assert_eq!(label, p.label);
        assert_eq!(d.unwrap().key(&ctx), p.descriptor.as_ref().unwrap().key(&ctx));
    }
    assert!(lazy.pipeline(lazy.len()).is_none());
}

#[test]
fn lazy_script_reports_errors_per_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.json");
    std::fs::write(
        &s,
        r#"{"granary_script": 1, "libraries": [{"name": "gone", "path": "gone.wgsl"}],
        "pipelines": [{"label": "a", "compute": {"function": {"library": "gone", "function": "f"}}},
                      {"label": "b", "compute": {"function": {"library": "nope", "function": "f"}}},
                      {"label": "c", "compute": {"bad": 1}}]}"#,
    )
    .unwrap();
    let lazy = LazyScript::load(&s).unwrap();
    let err = |i| lazy.pipeline(i).unwrap().1.unwrap_err().to_string();
    assert!(err(0).contains("library 'gone' is unavailable"), "{}", err(0));
    assert!(err(1).contains("unknown library 'nope'"), "{}", err(1));
    assert!(err(2).contains("pipelines[2].compute") && err(2).contains("s.json:4:"), "{}", err(2));
}
