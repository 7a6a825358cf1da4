//! Every SPIR-V output passes `spirv-val` (with the target environment the profile declares)
//! and every GLSL output passes `glslangValidator`, on the bundled example and on a
//! scaled-down seed workload. In CI (and with `GRANARY_REQUIRE_TOOLS=1`) the tools are
//! required and a missing tool fails the test; elsewhere a missing tool makes the test say
//! SKIPPED on stderr (see `common::tool_available`). Driven through the library
//! (`granary::harvest`, `granary_lab::workload::seed_scale`); it lives here, not in
//! `granary/tests`, because the seed workload's generator is this crate's.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::EXAMPLE;
use granary::archive::Archive;
use granary::descriptor::{ShaderStage, Target, TargetSet};
use granary::frontend::Profile;
use granary::harvest::{harvest, HarvestOptions};
use granary_lab::workload::{seed_scale, SeedScaleOptions};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Whether both validators can run (see `common::tool_available`).
fn tools() -> bool {
    common::tool_available("spirv-val", "spirv-tools") & common::tool_available("glslangValidator", "glslang-tools")
}

/// Harvests `script` for every target under `profile`; returns the distinct outputs per
/// target with their stage and one pipeline label that has them.
fn outputs(script: &Path, profile: &'static Profile, dir: &Path) -> BTreeMap<(u8, Vec<u8>), (ShaderStage, String)> {
    let out = dir.join(format!("{}.granary", profile.name));
    let opts = HarvestOptions {
        targets: TargetSet::of(&[Target::Spirv, Target::Glsl]),
        profile,
        ..common::harvest_options(script, &out)
    };
    let summary = harvest(&opts, &|_| {}).expect("harvest");
    assert_eq!(summary.failed, 0, "harvest failed: {:?}", summary.failures);
    let a = Archive::open(&out).unwrap();
    let mut m = BTreeMap::new();
    for p in a.iter() {
        let p = p.unwrap();
        let label = format!("{:032x}", p.key().0);
        for s in p.stages().unwrap() {
            for t in [Target::Spirv, Target::Glsl] {
                if let Some(bytes) = s.output(t).unwrap() {
                    m.entry((t as u8, bytes.to_vec())).or_insert((s.stage, label.clone()));
                }
            }
        }
    }
    m
}

/// Runs the validators on every output; returns one line per invalid output.
fn invalid(outputs: &BTreeMap<(u8, Vec<u8>), (ShaderStage, String)>, env: &str, dir: &Path) -> (usize, Vec<String>) {
    let mut bad = Vec::new();
    let mut n = 0;
    for (i, ((t, bytes), (stage, pipeline))) in outputs.iter().enumerate() {
        n += 1;
        let spirv = *t == Target::Spirv as u8;
        let ext = match (spirv, stage) {
            (true, _) => "spv",
            (false, ShaderStage::Vertex) => "vert",
            (false, ShaderStage::Fragment) => "frag",
            (false, ShaderStage::Compute) => "comp",
            (false, ShaderStage::TessellationControl) => "tesc",
            (false, ShaderStage::TessellationEvaluation) => "tese",
            (false, ShaderStage::Geometry) => "geom",
            (false, ShaderStage::Task) => "task",
            (false, ShaderStage::Mesh) => "mesh",
            (false, ShaderStage::RayGeneration) => "rgen",
            (false, ShaderStage::AnyHit) => "rahit",
            (false, ShaderStage::ClosestHit) => "rchit",
            (false, ShaderStage::Miss) => "rmiss",
            (false, ShaderStage::Intersection) => "rint",
            (false, ShaderStage::Callable) => "rcall",
        };
        let path = dir.join(format!("{i}.{ext}"));
        std::fs::write(&path, bytes).unwrap();
        let o = if spirv {
            Command::new("spirv-val").arg("--target-env").arg(env).arg(&path).output()
        } else {
            Command::new("glslangValidator").arg(&path).output()
        }
        .expect("run validator");
        if !o.status.success() {
            let msg = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            bad.push(format!(
                "{} {stage} output of pipeline {pipeline}: {}",
                if spirv { "SPIR-V" } else { "GLSL" },
                msg.lines().take(4).collect::<Vec<_>>().join(" | ")
            ));
        }
        let _ = std::fs::remove_file(&path);
    }
    (n, bad)
}

fn check(script: &Path, dir: &Path) {
    // The validator must reject a broken module, or a pass below would mean nothing.
    let junk = BTreeMap::from([((Target::Spirv as u8, vec![7u8; 20]), (ShaderStage::Vertex, "junk".to_string()))]);
    assert_eq!(invalid(&junk, "vulkan1.1", dir).1.len(), 1, "spirv-val accepted garbage");
    // Profiles that differ only in MSL or HLSL settings write the same SPIR-V and GLSL.
    let mut seen = Vec::new();
    for profile in granary::frontend::profile::PROFILES {
        let k = (profile.spirv, profile.spirv_env, profile.glsl);
        if seen.contains(&k) {
            continue;
        }
        seen.push(k);
        let outs = outputs(script, profile, dir);
        assert!(!outs.is_empty());
        let (n, bad) = invalid(&outs, profile.spirv_env, dir);
        assert!(bad.is_empty(), "profile {}: {} of {n} outputs invalid:\n{}", profile.name, bad.len(), bad.join("\n"));
    }
}

#[test]
fn example_outputs_are_valid() {
    if !tools() {
        return;
    }
    let dir = common::tempdir();
    check(Path::new(EXAMPLE), dir.path());
}

#[test]
fn seed_workload_outputs_are_valid() {
    if !tools() {
        return;
    }
    let dir = common::tempdir();
    let seed = dir.path().join("seed");
    let opts = SeedScaleOptions { pipelines: 300, vertex_functions: 150, max_run: 50, seed: 1 };
    let summary = seed_scale(&opts, &seed).expect("generate the seed workload");
    check(&summary.script, dir.path());
}
