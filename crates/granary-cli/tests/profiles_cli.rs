//! `--profile` end to end: the SPIR-V version follows the profile's Vulkan environment (a
//! subgroup shader is invalid as SPIR-V 1.0 and valid as 1.3), isolated workers write what
//! in-process threads write, and archives of another profile are not resumed.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::EXAMPLE;
use granary::compiler::{Compiler, CompilerOptions};
use granary::descriptor::*;
use granary::frontend::Profile;
use std::process::Command;

fn granary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_granary")).args(args).output().expect("run granary")
}

const SUBGROUP: &str = "@group(0) @binding(0) var<storage, read_write> buf: array<f32>;\n\
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) { buf[id.x] = subgroupAdd(buf[id.x]); }\n";

fn spirv_val(env: &str, bytes: &[u8], dir: &std::path::Path) -> std::process::Output {
    let path = dir.join(format!("{env}.spv"));
    std::fs::write(&path, bytes).unwrap();
    Command::new("spirv-val")
        .arg("--target-env")
        .arg(env)
        .arg(&path)
        .output()
        .expect("spirv-val is required (Debian package spirv-tools; .ci/run installs it)")
}

#[test]
fn a_subgroup_shader_is_valid_as_spirv_1_3_and_not_as_1_0() {
    if !common::tool_available("spirv-val", "spirv-tools") {
        return;
    }
    let dir = common::tempdir();
    let c = Compiler::new(CompilerOptions {
        targets: TargetSet::SPIRV,
        profile: Profile::named("vulkan1.1").unwrap(),
        ..Default::default()
    });
    let e = c
        .compile(&PipelineDescriptor::Compute(ComputePipelineDescriptor {
            label: None,
            compute: FunctionDescriptor::library(Library::wgsl("sg", SUBGROUP), "main"),
            layout: None,
        }))
        .expect("subgroups are in the Vulkan 1.1 profile");
    let spv = e.stages[0].outputs.get(Target::Spirv).unwrap().bytes().to_vec();
    assert_eq!(&spv[4..8], &0x0001_0300u32.to_le_bytes(), "SPIR-V 1.3");
    let ok = spirv_val("vulkan1.1", &spv, dir.path());
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stdout));
    // The same module declared as SPIR-V 1.0 (what granary wrote before profiles) is invalid.
    let mut old = spv.clone();
    old[4..8].copy_from_slice(&0x0001_0000u32.to_le_bytes());
    let bad = spirv_val("vulkan1.0", &old, dir.path());
    assert!(!bad.status.success(), "spirv-val accepted group operations in SPIR-V 1.0");
}

#[test]
fn isolated_workers_use_the_profile_and_resume_refuses_another() {
    let dir = common::tempdir();
    let out = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let run = |o: &str, extra: &[&str]| {
        let mut a = vec!["harvest", EXAMPLE, "-o", o, "-q", "-j", "2", "--targets", "spirv,msl"];
        a.extend_from_slice(extra);
        granary(&a)
    };
    let (a, b, c) = (out("a.granary"), out("b.granary"), out("c.granary"));
    assert!(run(&a, &["--profile", "vulkan1.3"]).status.success());
    assert!(run(&b, &["--profile", "vulkan1.3", "--isolate"]).status.success());
    assert!(run(&c, &[]).status.success());
    let (ba, bb, bc) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), std::fs::read(&c).unwrap());
    assert_eq!(ba, bb, "--isolate wrote other bytes than in-process under the same profile");
    assert_ne!(ba, bc, "profiles vulkan1.3 and default wrote the same archive");
    let archive = granary::archive::Archive::open(std::path::Path::new(&a)).unwrap();
    assert!(archive.target_options_text().contains("profile=vulkan1.3"), "{}", archive.target_options_text());
    // Resuming a vulkan1.3 archive under the default profile is refused (other writer options).
    let r = run(&a, &["--resume"]);
    assert!(!r.status.success());
    // The refusal names the differing setting and the option to resume with.
    let why = String::from_utf8_lossy(&r.stderr);
    assert!(why.contains("profile vulkan1.3 vs default") && why.contains("--profile vulkan1.3"), "{why}");
    // An unknown profile is refused with the known names.
    let u = run(&out("u.granary"), &["--profile", "vulkan9"]);
    assert!(!u.status.success());
    assert!(String::from_utf8_lossy(&u.stderr).contains("metal3-apple"));
}
