//! Binding maps on the bundled example: every MSL and HLSL output the harvest writes binds
//! exactly what the archived layout's binding map says (there is no Metal or DXC compiler on
//! Linux CI, so these sources are checked structurally, not compiled), and one shader's MSL is
//! pinned to a reviewed snapshot. (Moved from granary-cli's tests, which keep that `ls --json`
//! and `extract` export this map and these bytes.)

mod common;

use common::{harvest_options, EXAMPLE};
use granary::archive::{Archive, StageBindingMap};
use granary::descriptor::{Target, TargetSet};
use granary::harvest::{harvest, HarvestOptions};
use std::collections::BTreeSet;
use std::path::Path;

const SNAPSHOT: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/forward_high_static_opaque.fragment.metal");

fn harvest_example(out: &Path, targets: &[Target]) {
    let s = harvest(
        &HarvestOptions { targets: TargetSet::of(targets), ..harvest_options(Path::new(EXAMPLE), out) },
        &|_| {},
    )
    .expect("harvest");
    assert_eq!(s.failed, 0, "{:?}", s.failures);
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

/// The MSL attributes `map` assigns, as `buffer(n)` strings (slots, immediates, sizes).
fn msl_wanted(map: &StageBindingMap) -> Vec<String> {
    let mut want: Vec<String> = map.slots.iter().map(|a| format!("{}({})", a.msl_class.name(), a.msl_index)).collect();
    want.extend(map.msl_immediates_buffer.map(|i| format!("buffer({i})")));
    want.extend(map.msl_sizes_buffer.map(|i| format!("buffer({i})")));
    want
}

#[test]
fn every_msl_and_hlsl_output_binds_exactly_what_the_archived_map_says() {
    let dir = common::tempdir();
    let out = dir.path().join("all.granary");
    harvest_example(&out, &[Target::Spirv, Target::Msl, Target::Hlsl, Target::Glsl]);
    let ar = Archive::open(&out).unwrap();
    let mut labels = vec![""; ar.len()];
    for (l, i) in ar.labels().unwrap() {
        labels[i] = l;
    }
    let mut checked = (0, 0);
    for (p, label) in ar.iter().zip(labels) {
        let p = p.unwrap();
        let layout = p.layout().unwrap().expect("every example pipeline has a layout");
        let stages = p.stages().unwrap();
        assert_eq!(stages.len(), layout.stages.len(), "{label}: one binding map per stage");
        for (s, map) in stages.iter().zip(&layout.stages) {
            assert_eq!(s.stage, map.stage, "{label}: binding maps in pipeline stage order");
            let what = format!("{label} {} stage", s.stage);

            // MSL: the attributes are exactly the map's indices, each index used once.
            let msl = std::str::from_utf8(s.output(Target::Msl).unwrap().unwrap()).unwrap();
            assert!(!msl.contains("fake"), "{what}: placeholder binding in MSL");
            let got = sorted(msl_attributes(msl));
            assert_eq!(got, sorted(msl_wanted(map)), "{what}: MSL attributes vs archived map");
            assert_eq!(got.iter().collect::<BTreeSet<_>>().len(), got.len(), "{what}: an MSL index is used twice");

            // HLSL: registers of every non-sampler resource as mapped; samplers through the
            // heaps, each reading the index the map gives; nothing bound twice.
            let hlsl = std::str::from_utf8(s.output(Target::Hlsl).unwrap().unwrap()).unwrap();
            let mut want = Vec::new();
            let mut samplers = Vec::new();
            let mut sampler_groups = BTreeSet::new();
            for a in &map.slots {
                if a.hlsl_class == b's' {
                    samplers.push((a.group, a.hlsl_register as u32));
                    assert_eq!(a.hlsl_register as u32, a.binding, "{what}: a sampler's heap index is its binding");
                    sampler_groups.insert(a.group);
                } else {
                    want.push(format!("register({}{}, space{})", a.hlsl_class as char, a.hlsl_register, a.hlsl_space));
                }
            }
            for g in &sampler_groups {
                want.push(format!("register(t{g}, space255)"));
            }
            if !sampler_groups.is_empty() {
                want.push("register(s0, space252)".into());
                want.push("register(s0, space253)".into());
            }
            want.extend(map.hlsl_immediates_space.map(|sp| format!("register(b0, space{sp})")));
            let got = sorted(hlsl_registers(hlsl));
            assert_eq!(got, sorted(want), "{what}: HLSL registers vs archived map");
            assert_eq!(got.iter().collect::<BTreeSet<_>>().len(), got.len(), "{what}: an HLSL register is used twice");
            let mut got_samplers = hlsl_sampler_indices(hlsl);
            got_samplers.sort();
            samplers.sort();
            assert_eq!(got_samplers, samplers, "{what}: HLSL sampler indices vs archived map");
            checked.0 += 1;
            checked.1 += map.slots.len();
        }
    }
    // Every stage of the example's 335 pipelines, and thousands of resources.
    assert!(checked.0 >= 600 && checked.1 >= 3000, "checked {checked:?}");
}

/// The MSL the harvest writes for `forward/high/static/opaque`'s fragment stage is this
/// reviewed Metal source, byte for byte: real `[[buffer(n)]]`, `[[texture(n)]]`,
/// `[[sampler(n)]]` indices in the documented order, no placeholder bindings. If naga or the
/// binding rule changes, review the new output and replace the snapshot deliberately.
#[test]
fn msl_output_matches_the_reviewed_snapshot() {
    let dir = common::tempdir();
    let out = dir.path().join("msl.granary");
    harvest_example(&out, &[Target::Msl]);
    let ar = Archive::open(&out).unwrap();
    let p = ar.lookup_label("forward/high/static/opaque").unwrap().expect("the pipeline is in the archive");
    let stages = p.stages().unwrap();
    let fragment = stages.iter().find(|s| s.stage.name() == "fragment").expect("a fragment stage");
    let got = fragment.output(Target::Msl).unwrap().expect("an MSL output");
    let want = std::fs::read(SNAPSHOT).unwrap();
    assert!(got == want.as_slice(), "the fragment's MSL differs from the reviewed snapshot {SNAPSHOT}");
    // Its binding map: the fragment stage is second, and its third resource is texture 0.
    let layout = p.layout().unwrap().expect("a layout");
    assert_eq!(layout.stages[1].stage.name(), "fragment");
    let r = &layout.stages[1].slots[2];
    assert_eq!(format!("{}({})", r.msl_class.name(), r.msl_index), "texture(0)");
}
