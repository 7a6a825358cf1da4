//! Property-based fuzzing of the two untrusted-input parsers: the archive reader and the
//! pipelines-script parser. Neither may panic on any input; a damaged archive must never
//! verify. `PROPTEST_CASES` raises the case count for long runs.

mod common;

use granary::archive::{self, Archive};
use granary::capture::{Capture, CaptureMode};
use granary::compiler::{Compiler, CompilerOptions};
use granary::descriptor::{Target, TargetSet};
use granary::script::Script;
use proptest::prelude::*;
use std::path::Path;
use std::sync::{Arc, OnceLock};

fn valid_archive() -> &'static (Vec<u8>, Vec<granary::descriptor::PipelineKey>) {
    static A: OnceLock<(Vec<u8>, Vec<granary::descriptor::PipelineKey>)> = OnceLock::new();
    A.get_or_init(|| {
        let fx = common::fixture();
        let pipelines = fx.runs(2, 4, 2);
        let capture = Arc::new(Capture::new(CaptureMode::Outputs));
        let c = Compiler::new(CompilerOptions {
            targets: TargetSet::of(&[Target::Spirv, Target::Glsl]),
            capture: Some(capture.clone()),
            ..Default::default()
        });
        let keys = pipelines.iter().map(|p| c.compile(p).unwrap().key).collect();
        // Device sections too: driver binaries on one device (a shared "dictionary" blob),
        // pipeline-cache data on another.
        let device = |name: &str, key: Vec<u8>| {
            Arc::new(archive::DeviceIdentity {
                vendor_id: 0x10de,
                device_id: 7,
                driver_id: 4,
                driver_version: 1,
                api_version: 2,
                features: Default::default(),
                pipeline_cache_uuid: [3; 16],
                binary_global_key: key,
                device_name: name.into(),
                driver_name: "drv".into(),
                driver_info: "1.0".into(),
            })
        };
        let (nv, lp) = (device("gpu", vec![5; 8]), device("cpu", Vec::new()));
        let dictionary =
            archive::DeviceBinary { key: vec![0xd1; 32], data: granary::descriptor::Blob::new(vec![0xd1; 96]) };
        let mut entries = capture.snapshot().entries;
        for (i, w) in entries.iter_mut().enumerate() {
            let own =
                archive::DeviceBinary { key: vec![i as u8], data: granary::descriptor::Blob::new(vec![i as u8; 40]) };
            let set = archive::BinarySet {
                flags: (i % 2) as u32,
                pipeline_key: Vec::new(),
                binaries: vec![own, dictionary.clone()],
            };
            w.binaries = vec![
                archive::DeviceBinaries { device: nv.clone(), set: Arc::new(set) },
                archive::DeviceBinaries {
                    device: lp.clone(),
                    set: Arc::new(archive::BinarySet { flags: 0, pipeline_key: Vec::new(), binaries: vec![] }),
                },
            ];
        }
        let mut meta = granary::archive::portable_meta();
        meta.device_caches =
            vec![archive::DeviceCache { device: lp, data: granary::descriptor::Blob::new(vec![9; 64]) }];
        (archive::encode(&entries, &meta), keys)
    })
}

/// Exercises every read path; returns whether `verify` passed.
fn read_everything(bytes: Vec<u8>, keys: &[granary::descriptor::PipelineKey]) -> bool {
    let Ok(a) = Archive::from_bytes(bytes.clone()) else {
        let _ = archive::salvage(&bytes);
        return false;
    };
    for k in keys {
        if let Ok(Some(p)) = a.get(*k) {
            if let Ok(stages) = p.stages() {
                for s in stages {
                    for t in Target::ALL {
                        let _ = s.output(t);
                    }
                }
            }
        }
    }
    let _ = a.lookup_label("v0/p1");
    let _ = a.labels();
    for p in a.iter().take(64) {
        let _ = p.map(|p| p.stages());
    }
    let _ = a.entries();
    let _ = a.meta();
    if let Ok(devices) = a.devices() {
        for d in devices {
            let _ = d.caches();
            let _ = a.device_for(d.identity());
            for p in a.iter().take(64).flatten() {
                if let Ok(Some(set)) = d.binaries(&p) {
                    for b in set.iter() {
                        let _ = b.map(|b| b.data.len());
                    }
                }
                let _ = p.device_binaries();
            }
        }
    }
    let _ = archive::salvage(&bytes);
    a.verify().is_ok()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn archive_reader_survives_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let (_, keys) = valid_archive();
        prop_assert!(!read_everything(bytes, keys));
    }

    #[test]
    fn archive_reader_survives_mutations(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let (orig, keys) = valid_archive();
        let mut bytes = orig.clone();
        for (i, v) in &edits {
            let at = i.index(bytes.len());
            bytes[at] = *v;
        }
        if let Some(c) = cut {
            bytes.truncate(c.index(bytes.len()));
        }
        let changed = &bytes != orig;
        let verified = read_everything(bytes, keys);
        prop_assert!(!(changed && verified), "a modified archive verified");
    }

    #[test]
    fn archive_reader_survives_hostile_header_fields(
        field in 0usize..96, value in any::<u64>(),
    ) {
        // Overwrite an aligned header word and fix up the header checksum, so the hostile
        // value reaches the bounds checks instead of being caught by the checksum.
        let (orig, keys) = valid_archive();
        let mut bytes = orig.clone();
        let hl = archive::format::HEADER_LEN;
        let at = (field * 4).min(hl - 16);
        bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
        let sum = granary::descriptor::key::checksum64(&bytes[..hl - 8]);
        bytes[hl - 8..hl].copy_from_slice(&sum.to_le_bytes());
        let changed = &bytes != orig;
        let verified = read_everything(bytes, keys);
        prop_assert!(!(changed && verified));
    }

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

#[test]
fn the_fuzzed_archive_is_valid_and_has_device_sections() {
    let (bytes, keys) = valid_archive();
    assert!(read_everything(bytes.clone(), keys));
    let a = Archive::from_bytes(bytes.clone()).unwrap();
    assert_eq!(a.devices().unwrap().len(), 2);
    assert_eq!(a.verify().unwrap().device_pipelines, 2 * a.len());
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
