//! The binding maps `granary ls --json` and `granary extract` export, end to end on the bundled
//! example: every pipeline's exported map is the archived layout, slot by slot, and `extract`
//! writes the archive's MSL and the same map beside it. (That the outputs bind exactly what the
//! map says, and the reviewed MSL snapshot, are library behaviour: `granary/tests/bindings.rs`.)

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::EXAMPLE;
use granary::archive::{Archive, StageBindingMap};
use granary::descriptor::Target;
use std::path::Path;
use std::process::Command;

fn granary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_granary")).args(args).output().expect("run granary")
}

fn harvest(out: &Path, targets: &str) {
    let o = granary(&["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "-q", "--targets", targets]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// What the exported JSON of one stage's map must say, from the archived map.
fn exported(map: &StageBindingMap) -> serde_json::Value {
    let resources: Vec<serde_json::Value> = map
        .slots
        .iter()
        .map(|a| {
            serde_json::json!({
                "group": a.group,
                "binding": a.binding,
                "msl": format!("{}({})", a.msl_class.name(), a.msl_index),
                "hlsl": if a.hlsl_class == b's' {
                    format!("sampler_index({}) of register(t{}, space255)", a.hlsl_register, a.group)
                } else {
                    format!("register({}{}, space{})", a.hlsl_class as char, a.hlsl_register, a.hlsl_space)
                },
                "glsl": a.glsl_binding.map(|b| format!("binding = {b}")),
            })
        })
        .collect();
    serde_json::json!({
        "stage": map.stage.name(),
        "resources": resources,
        "msl_immediates": map.msl_immediates_buffer.map(|i| format!("buffer({i})")),
        "msl_sizes": map.msl_sizes_buffer.map(|i| format!("buffer({i})")),
        "hlsl_immediates": map.hlsl_immediates_space.map(|sp| format!("register(b0, space{sp})")),
    })
}

#[test]
fn ls_json_exports_every_archived_binding_map_and_extract_writes_the_msl_beside_it() {
    let dir = common::tempdir();
    let out = dir.path().join("msl.granary");
    harvest(&out, "msl");
    let o = granary(&["ls", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success());
    let ls: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ar = Archive::open(&out).unwrap();
    let rows = ls["entries"].as_array().unwrap();
    assert_eq!(rows.len(), ar.len());
    let mut stages = 0;
    for row in rows {
        let key = granary::descriptor::PipelineKey::from_hex(row["key"].as_str().unwrap()).unwrap();
        let layout = ar.get(key).unwrap().unwrap().layout().unwrap().expect("a layout");
        let maps = row["layout"]["stages"].as_array().unwrap();
        assert_eq!(maps.len(), layout.stages.len(), "{}", row["labels"][0]);
        for (got, map) in maps.iter().zip(&layout.stages) {
            assert_eq!(*got, exported(map), "{} {} stage: exported map vs archived", row["labels"][0], map.stage);
            stages += 1;
        }
    }
    assert!(stages >= 600, "exported {stages} stage maps");

    let ex = dir.path().join("ex");
    let o = granary(&[
        "extract",
        out.to_str().unwrap(),
        "forward/high/static/opaque",
        "--target",
        "msl",
        "-o",
        ex.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p = ar.lookup_label("forward/high/static/opaque").unwrap().unwrap();
    let stages = p.stages().unwrap();
    let fragment = stages.iter().find(|s| s.stage.name() == "fragment").unwrap();
    let got = std::fs::read(ex.join("forward_high_static_opaque.fragment.metal")).unwrap();
    assert!(got == fragment.output(Target::Msl).unwrap().unwrap(), "extract wrote other bytes than the archive's MSL");
    // The exported layout sits beside it.
    let layout: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ex.join("forward_high_static_opaque.layout.json")).unwrap()).unwrap();
    assert_eq!(layout["stages"][1]["stage"], "fragment");
    assert_eq!(layout["stages"][1]["resources"][2]["msl"], "texture(0)");
}
