//! Property-based fuzzing of the pipelines-script parser: it may not panic on any input.
//! `PROPTEST_CASES` raises the case count for long runs. The other untrusted-input parser, the
//! archive reader, is fuzzed where it lives: `granary-archive/tests/reader.rs`.

mod common;

use granary::script::Script;
use proptest::prelude::*;
use std::path::Path;

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn script_parser_survives_mutated_text(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let mut text = EXAMPLE_SCRIPT.as_bytes().to_vec();
        for (i, v) in &edits {
            let at = i.index(text.len());
            text[at] = *v;
        }
        let text = String::from_utf8_lossy(&text);
        let _ = Script::parse(&text, Path::new("fuzz.json"), Path::new(EXAMPLE_DIR));
    }

    #[test]
    fn script_parser_survives_arbitrary_json(v in arb_json()) {
        let top = serde_json::json!({"granary_script": 1, "libraries": [{"name": "v", "kind": "wgsl", "source": common::VS}], "pipelines": [v.clone(), {"render": v.clone()}, {"compute": {"function": v}}]});
        let s = Script::parse(&top.to_string(), Path::new("fuzz.json"), Path::new("."));
        prop_assert!(s.is_ok());
    }
}

/// 1,500 cases per property in CI; `PROPTEST_CASES` sets more for long runs.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1500)
}

const EXAMPLE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/renderer");
const EXAMPLE_SCRIPT: &str = r#"{"granary_script": 1,
  "libraries": [{"name": "v", "path": "shaders/mesh_static.wgsl"}],
  "pipelines": [{"label": "x", "render": {
    "vertex": {"specialize": {"library": "v", "function": "vs_main"}, "constants": [{"name": "A", "u32": 1}]},
    "vertex_buffers": [{"stride": 48, "step": "vertex", "attributes": [{"location": 0, "format": "float32x3", "offset": 0}]}],
    "primitive": {"topology": "triangle-list", "cull": "back"},
    "color_attachments": [{"format": "unspecialized", "blend": {"color": {"src": "one", "dst": "zero"}, "alpha": {"src": "one", "dst": "zero"}}, "write_mask": "rgba"}],
    "depth_stencil": {"format": "depth32float", "depth_write": true, "depth_compare": "less", "depth_bias_slope_scale": 1.5},
    "sample_count": 4}}]}"#;

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    let names = prop::sample::select(vec![
        "library",
        "function",
        "specialize",
        "constants",
        "name",
        "id",
        "bool",
        "u32",
        "i32",
        "f32",
        "vertex",
        "fragment",
        "vertex_buffers",
        "stride",
        "step",
        "attributes",
        "location",
        "format",
        "offset",
        "primitive",
        "topology",
        "cull",
        "color_attachments",
        "blend",
        "write_mask",
        "depth_stencil",
        "sample_count",
        "label",
        "unspecialized",
        "v",
        "vs",
        "float32x3",
        "rgba",
        "x",
    ]);
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(serde_json::Value::from),
        names.clone().prop_map(serde_json::Value::from),
        ".{0,8}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            proptest::collection::vec((names.clone(), inner), 0..5).prop_map(|kv| {
                serde_json::Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}
