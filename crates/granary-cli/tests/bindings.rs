//! Binding maps end to end on the bundled example: every MSL and HLSL output checked
//! structurally against the map `granary ls --json` exports (there is no Metal or DXC compiler
//! on Linux CI, so these sources are checked, not compiled), and one shader's MSL pinned to a
//! reviewed snapshot.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::EXAMPLE;
use granary::archive::Archive;
use granary::descriptor::Target;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

const SNAPSHOT: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/forward_high_static_opaque.fragment.metal");

fn granary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_granary")).args(args).output().expect("run granary")
}

fn harvest(out: &Path, targets: &str) {
    let o = granary(&["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "-q", "--targets", targets]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Every `[[buffer(n)]]`, `[[texture(n)]]`, `[[sampler(n)]]` in `msl`, as `buffer(n)` strings.
fn msl_attributes(msl: &str) -> Vec<String> {
    let mut out = Vec::new();
    for class in ["buffer", "texture", "sampler"] {
        let pat = format!("[[{class}(");
        let mut rest = msl;
        while let Some(i) = rest.find(&pat) {
            rest = &rest[i + pat.len()..];
            let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            assert!(!n.is_empty() && rest[n.len()..].starts_with(")]]"), "malformed {class} attribute: {rest:.40}");
            out.push(format!("{class}({n})"));
        }
    }
    out
}

/// Every `register(xN[, spaceM])` in `hlsl`, normalised to `register(xN, spaceM)`.
fn hlsl_registers(hlsl: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = hlsl;
    while let Some(i) = rest.find("register(") {
        rest = &rest[i + "register(".len()..];
        let end = rest.find(')').expect("closed register()");
        let parts: Vec<&str> = rest[..end].split(',').map(str::trim).collect();
        let space = parts.get(1).copied().unwrap_or("space0");
        out.push(format!("register({}, {space})", parts[0]));
    }
    out
}

/// `(group, index)` of every sampler read from a sampler heap through a group's index buffer.
fn hlsl_sampler_indices(hlsl: &str) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for line in hlsl.lines().filter(|l| l.starts_with("static const Sampler")) {
        let g = line.split("nagaGroup").nth(1).expect("sampler read from a group's index array");
        let group: u32 = g[..g.find('S').unwrap()].parse().unwrap();
        let idx = g.split("SamplerIndexArray[").nth(1).unwrap();
        out.push((group, idx[..idx.find(']').unwrap()].parse().unwrap()));
    }
    out
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn every_msl_and_hlsl_output_binds_exactly_what_the_exported_map_says() {
    let dir = common::tempdir();
    let out = dir.path().join("all.granary");
    harvest(&out, "spirv,msl,hlsl,glsl");
    let o = granary(&["ls", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success());
    let ls: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ar = Archive::open(&out).unwrap();
    let mut checked = (0, 0);
    for row in ls["pipelines"].as_array().unwrap() {
        let key = granary::descriptor::PipelineKey::from_hex(row["key"].as_str().unwrap()).unwrap();
        let p = ar.get(key).unwrap().unwrap();
        let layout = &row["layout"];
        let maps: BTreeMap<&str, &serde_json::Value> =
            layout["stages"].as_array().unwrap().iter().map(|s| (s["stage"].as_str().unwrap(), s)).collect();
        for s in p.stages().unwrap() {
            let map = maps[s.stage.name()];
            let slots = map["resources"].as_array().unwrap();
            let what = format!("{} {} stage", row["labels"][0], s.stage);

            // MSL: the attributes are exactly the exported indices, each index used once.
            let msl = std::str::from_utf8(s.output(Target::Msl).unwrap().unwrap()).unwrap();
            assert!(!msl.contains("fake"), "{what}: placeholder binding in MSL");
            let mut want: Vec<String> = slots.iter().map(|r| r["msl"].as_str().unwrap().to_string()).collect();
            for extra in ["msl_immediates", "msl_sizes"] {
                if let Some(b) = map[extra].as_str() {
                    want.push(b.to_string());
                }
            }
            let got = sorted(msl_attributes(msl));
            assert_eq!(got, sorted(want.clone()), "{what}: MSL attributes vs exported map");
            assert_eq!(got.iter().collect::<BTreeSet<_>>().len(), got.len(), "{what}: an MSL index is used twice");

            // HLSL: registers of every non-sampler resource as exported; samplers through the
            // heaps, each reading the index the map gives; nothing bound twice.
            let hlsl = std::str::from_utf8(s.output(Target::Hlsl).unwrap().unwrap()).unwrap();
            let mut want = Vec::new();
            let mut samplers = Vec::new();
            let mut sampler_groups = BTreeSet::new();
            for r in slots {
                let h = r["hlsl"].as_str().unwrap();
                let (g, b) = (r["group"].as_u64().unwrap() as u32, r["binding"].as_u64().unwrap() as u32);
                if h.starts_with("sampler_index(") {
                    assert_eq!(h, format!("sampler_index({b}) of register(t{g}, space255)"), "{what}");
                    samplers.push((g, b));
                    sampler_groups.insert(g);
                } else {
                    want.push(h.to_string());
                }
            }
            for g in &sampler_groups {
                want.push(format!("register(t{g}, space255)"));
            }
            if !sampler_groups.is_empty() {
                want.push("register(s0, space252)".into());
                want.push("register(s0, space253)".into());
            }
            if let Some(b) = map["hlsl_immediates"].as_str() {
                want.push(b.to_string());
            }
            let got = sorted(hlsl_registers(hlsl));
            assert_eq!(got, sorted(want), "{what}: HLSL registers vs exported map");
            assert_eq!(got.iter().collect::<BTreeSet<_>>().len(), got.len(), "{what}: an HLSL register is used twice");
            let mut got_samplers = hlsl_sampler_indices(hlsl);
            got_samplers.sort();
            samplers.sort();
            assert_eq!(got_samplers, samplers, "{what}: HLSL sampler indices vs exported map");
            checked.0 += 1;
            checked.1 += slots.len();
        }
    }
    // Every stage of the example's 335 pipelines, and thousands of resources.
    assert!(checked.0 >= 600 && checked.1 >= 3000, "checked {checked:?}");
}

/// `granary extract --target msl` on the example gives this reviewed Metal source, byte for
/// byte: real `[[buffer(n)]]`, `[[texture(n)]]`, `[[sampler(n)]]` indices in the documented
/// order, no placeholder bindings. If naga or the binding rule changes, review the new output
/// and replace the snapshot deliberately.
#[test]
fn extract_msl_matches_the_reviewed_snapshot() {
    let dir = common::tempdir();
    let out = dir.path().join("msl.granary");
    harvest(&out, "msl");
    let ex = dir.path().join("ex");
    let o = granary(
        &["extract", out.to_str().unwrap(), "forward/high/static/opaque", "--target", "msl", "-o"]
            .into_iter()
            .chain([ex.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = std::fs::read_to_string(ex.join("forward_high_static_opaque.fragment.metal")).unwrap();
    let want = std::fs::read_to_string(SNAPSHOT).unwrap();
    assert!(got == want, "extracted MSL differs from the reviewed snapshot {SNAPSHOT}");
    // The exported layout sits beside it.
    let layout: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ex.join("forward_high_static_opaque.layout.json")).unwrap()).unwrap();
    assert_eq!(layout["stages"][1]["stage"], "fragment");
    assert_eq!(layout["stages"][1]["resources"][2]["msl"], "texture(0)");
}
