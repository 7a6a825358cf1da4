//! Device profiles and compact outputs: the SPIR-V version and capabilities follow the
//! profile, the profile is part of every key, a capability outside a target's profile is
//! rejected naming it, and an output holds only its entry point and what it reaches.

use granary::compiler::{CompileError, Compiler, CompilerOptions};
use granary::descriptor::*;
use granary::frontend::{Profile, ShaderErrorKind};

fn compute(lib: std::sync::Arc<Library>, entry: &str) -> PipelineDescriptor {
    PipelineDescriptor::Compute(ComputePipelineDescriptor {
        label: Some("c".into()),
        compute: FunctionDescriptor::library(lib, entry),
        layout: None,
    })
}

fn compiler(targets: &[Target], profile: &str) -> Compiler {
    Compiler::new(CompilerOptions {
        targets: TargetSet::of(targets),
        profile: Profile::named(profile).unwrap(),
        ..Default::default()
    })
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// How many `OpFunction` instructions (opcode 54) a SPIR-V module holds.
fn op_functions(spv: &[u8]) -> usize {
    let w = words(spv);
    let (mut i, mut n) = (5, 0);
    while i < w.len() {
        let (count, op) = ((w[i] >> 16) as usize, w[i] & 0xffff);
        n += usize::from(op == 54);
        i += count.max(1);
    }
    n
}

fn big_library(unused: usize) -> String {
    let mut s = String::from("@group(0) @binding(0) var<storage, read_write> buf: array<f32>;\n");
    for i in 0..unused {
        s += &format!("fn unused_{i}(x: f32) -> f32 {{ return x * {i}.0 + sin(x); }}\n");
    }
    s += "fn used(x: f32) -> f32 { return x + 1.0; }\n";
    s += "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) { buf[id.x] = used(buf[id.x]); }\n";
    s
}

#[test]
fn an_output_holds_only_its_entry_point_and_what_it_reaches() {
    let lib = Library::wgsl("big", big_library(2000));
    let c = compiler(&Target::ALL, "default");
    let e = c.compile(&compute(lib, "main")).expect("compiles");
    let s = &e.stages[0];
    let spv = s.outputs.get(Target::Spirv).unwrap().bytes();
    assert_eq!(op_functions(spv), 2, "the entry point and `used`, nothing else");
    for t in [Target::Msl, Target::Hlsl, Target::Glsl] {
        let text = std::str::from_utf8(s.outputs.get(t).unwrap().bytes()).unwrap();
        assert!(!text.contains("unused_"), "{t} output holds unreachable functions");
    }
    // The same module with no unused functions gives the same SPIR-V.
    let small = Library::wgsl("small", big_library(0));
    let e2 = c.compile(&compute(small, "main")).unwrap();
    assert_eq!(e2.stages[0].outputs.get(Target::Spirv).unwrap().bytes(), spv);
}

#[test]
fn the_spirv_version_and_the_keys_follow_the_profile() {
    let src = big_library(1);
    let mut keys = Vec::new();
    for (profile, version) in [("default", 0x0001_0300u32), ("vulkan1.1", 0x0001_0300), ("vulkan1.3", 0x0001_0600)] {
        let c = compiler(&[Target::Spirv], profile);
        let e = c.compile(&compute(Library::wgsl("l", &src), "main")).unwrap();
        assert_eq!(words(e.stages[0].outputs.get(Target::Spirv).unwrap().bytes())[1], version, "{profile}");
        keys.push(e.key);
    }
    // Every profile is its own key space, even two that write the same bytes.
    assert_ne!(keys[0], keys[1]);
    assert_ne!(keys[1], keys[2]);
    let texts: Vec<String> = granary::frontend::profile::PROFILES
        .iter()
        .map(|p| granary::frontend::targets::target_options_text(p, TargetSet::SPIRV))
        .collect();
    for (i, t) in texts.iter().enumerate() {
        assert!(t.contains(&format!("profile={}", granary::frontend::profile::PROFILES[i].name)));
        assert_eq!(texts.iter().filter(|u| *u == t).count(), 1);
    }
    assert!(Profile::named("vulkan9").unwrap_err().contains("metal3-apple"));
}

const F16: &str = "enable f16;\n@group(0) @binding(0) var<storage, read_write> buf: array<f32>;\n\
@compute @workgroup_size(1) fn main() { let h: f16 = f16(buf[0]); buf[0] = f32(h * 2.0h); }\n";

#[test]
fn a_capability_outside_a_targets_profile_is_rejected_by_name() {
    // MSL allows 16-bit floats, GLSL does not: the library validates with the union, the
    // stage function loses GLSL (the message names the capability and target) and the
    // pipeline lands with MSL.
    let c = compiler(&[Target::Msl, Target::Glsl], "default");
    let o = c.compile_detailed(&compute(Library::wgsl("half", F16), "main")).expect("lands with MSL");
    assert_eq!(o.targets, TargetSet::parse("msl").unwrap());
    assert!(o.entry.stages[0].outputs.get(Target::Msl).is_some());
    assert!(o.entry.stages[0].outputs.get(Target::Glsl).is_none());
    let [lost] = &o.lost[..] else { panic!("{:?}", o.lost) };
    let error = &lost.error;
    assert_eq!(error.kind, ShaderErrorKind::Validation);
    assert_eq!(error.target, Some(Target::Glsl));
    assert!(error.message.contains("SHADER_FLOAT16"), "{}", error.message);
    assert!(error.message.contains("profile 'default'"), "{}", error.message);
    // All or nothing: the lost target fails the pipeline, naming target and capability.
    let strict = Compiler::new(CompilerOptions {
        targets: TargetSet::parse("msl,glsl").unwrap(),
        require_all_targets: true,
        ..Default::default()
    });
    let err = strict.compile(&compute(Library::wgsl("half", F16), "main")).unwrap_err();
    let CompileError::Targets { lost, .. } = &err else { panic!("{err}") };
    assert_eq!(lost.len(), 1);
    assert!(err.to_string().contains("target glsl lost") && err.to_string().contains("SHADER_FLOAT16"), "{err}");
    // MSL alone accepts it.
    let msl = compiler(&[Target::Msl], "default");
    msl.compile(&compute(Library::wgsl("half", F16), "main")).expect("MSL has half");
    // SPIR-V's Vulkan 1.1 baseline has no 16-bit floats: rejected when the library is
    // validated (no requested target allows it), naming the capability.
    let spv = compiler(&[Target::Spirv], "vulkan1.1");
    let err = spv.compile(&compute(Library::wgsl("half", F16), "main")).unwrap_err();
    assert!(err.to_string().contains("SHADER_FLOAT16"), "{err}");
}

#[test]
fn a_capture_takes_the_profile_of_its_compiler() {
    use granary::archive::{Archive, LookupDescriptor};
    use granary::capture::{Capture, CaptureMode};
    let dir = tempfile::tempdir().unwrap();
    let capture = std::sync::Arc::new(Capture::new(CaptureMode::Outputs));
    let c = Compiler::new(CompilerOptions {
        profile: Profile::named("vulkan1.3").unwrap(),
        capture: Some(capture.clone()),
        ..Default::default()
    });
    let desc = compute(Library::wgsl("l", big_library(3)), "main");
    c.compile(&desc).unwrap();
    let path = dir.path().join("a.granary");
    capture.write_archive(&path).unwrap();
    let a = Archive::open(&path).unwrap();
    assert!(a.target_options_text().contains("profile=vulkan1.3"));
    assert_eq!(a.key_context(), c.key_context());
    assert!(a.lookup(&desc).unwrap().is_some(), "the header describes the keys the compiler computed");
    // A capture made for one profile refuses a compiler of another.
    let other =
        std::sync::Arc::new(Capture::for_profile(CaptureMode::Outputs, Profile::default_profile(), TargetSet::SPIRV));
    let r = std::panic::catch_unwind(|| {
        Compiler::new(CompilerOptions {
            profile: Profile::named("vulkan1.3").unwrap(),
            capture: Some(other.clone()),
            ..Default::default()
        })
    });
    assert!(r.is_err());
}
