//! The translators of SPIR-V input: SPIRV-Cross first, naga as the fallback, per target. A
//! module naga's front end rejects (an `OpSpecConstantOp`, DXC's image and sampler at one
//! binding) is translated by SPIRV-Cross, its GLSL accepted by `glslangValidator` and its
//! resources bound where the stage's binding map says; where SPIRV-Cross fails (a panic
//! injected with `panic-cross`), naga writes the target; where both fail, the target is lost
//! with both reasons and the application's SPIR-V stays.
//!
//! The modules are compiled here by glslangValidator (Debian `glslang-tools`, with
//! `spirv-tools` for spirv-val; required under `CI`, skipped with a message elsewhere).

mod common;

use granary::compiler::{Compiler, CompilerOptions};
use granary::descriptor::*;
use granary::frontend::{Frontend, SpirvTranslators, StageFunction};
use granary::sync::TaskLimiter;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

/// `shared float s[N * 2]` is an `OpSpecConstantOp`, which naga's SPIR-V front end rejects.
const SPEC_COMP: &str = r#"#version 450
layout(local_size_x_id = 7, local_size_y = 2) in;
layout(constant_id = 3) const int N = 4;
layout(set = 0, binding = 0) buffer B { float v[]; } b;
layout(set = 0, binding = 1, rgba8) uniform readonly image2D img;
layout(push_constant) uniform P { vec4 tint; } pc;
shared float s[N * 2];
void main() {
  uint i = gl_GlobalInvocationID.x;
  s[i % uint(N * 2)] = b.v[i] + pc.tint.x + imageLoad(img, ivec2(0)).x;
  barrier();
  b.v[i] = s[0] + float(b.v.length());
}
"#;

/// A texture and a sampler at one binding (as DXC writes `Texture2D`+`SamplerState` pairs),
/// a combined sampler, then a plain sampler and texture: naga rejects the shared binding.
const SHARED_BINDING_FRAG: &str = r#"#version 450
layout(location = 0) in vec2 uv;
layout(location = 0) out vec4 color;
layout(set = 0, binding = 1) uniform texture2D t;
layout(set = 0, binding = 1) uniform sampler s;
layout(set = 0, binding = 2) uniform sampler2D combined;
layout(set = 1, binding = 0) uniform sampler s2;
layout(set = 1, binding = 1) uniform texture2D t2;
void main() {
  color = texture(sampler2D(t, s), uv) + texture(combined, uv) + texture(sampler2D(t2, s2), uv);
}
"#;

/// A module both translators read.
const VERT: &str = r#"#version 450
layout(location = 0) in vec3 pos;
layout(location = 0) out vec2 uv;
layout(set = 0, binding = 0) uniform U { mat4 mvp; } u;
void main() { uv = pos.xy; gl_Position = u.mvp * vec4(pos, 1.0); }
"#;

/// A tessellation control stage: naga translates no tessellation stage and SPIRV-Cross's
/// HLSL writer has no hull shaders, so its HLSL is lost by both.
const TESC: &str = r#"#version 450
layout(vertices = 3) out;
layout(location = 0) in vec3 p_in[];
layout(location = 0) out vec3 p_out[];
void main() {
  p_out[gl_InvocationID] = p_in[gl_InvocationID];
  gl_TessLevelInner[0] = 1.0;
  gl_TessLevelOuter[0] = 1.0;
  gl_TessLevelOuter[1] = 1.0;
  gl_TessLevelOuter[2] = 1.0;
}
"#;

/// `panic-cross:msl/vs_cross` makes SPIRV-Cross panic on that entry point's MSL (naga then
/// writes it); `panic-write:glsl/vs_both` panics in both translators' GLSL.
const FAULT: &str = "panic-cross:msl/vs_cross,panic-write:glsl/vs_both";

/// The fault facility reads `GRANARY_FAULT` once per process: every test here sets the same
/// value before anything reads it.
fn set_fault() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY (of the environment write): it happens once, before any thread of this test
    // binary reads the environment through the fault facility.
    ONCE.call_once(|| std::env::set_var("GRANARY_FAULT", FAULT));
}

fn tools() -> bool {
    common::tool_available("spirv-val", "spirv-tools") && common::tool_available("glslangValidator", "glslang-tools")
}

/// glslangValidator's SPIR-V for `source` (stage `comp`, `vert`, `frag`, `tesc`), its entry
/// point named `entry`.
fn glsl_to_spirv(dir: &Path, stage: &str, entry: &str, source: &str) -> Vec<u8> {
    common::glsl_to_spirv(dir, stage, entry, source)
}

/// glslangValidator's verdict on a GLSL output of `stage` (OpenGL semantics).
fn check_glsl(dir: &Path, stage: &str, glsl: &[u8]) {
    let path = dir.join(format!("out.{stage}"));
    std::fs::write(&path, glsl).unwrap();
    let o = Command::new("glslangValidator").arg(&path).output().expect("run glslangValidator");
    assert!(
        o.status.success(),
        "glslangValidator refused the GLSL: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(glsl)
    );
}

const TRANSLATED: [Target; 3] = [Target::Msl, Target::Hlsl, Target::Glsl];

fn frontend(targets: &[Target], translators: SpirvTranslators) -> Frontend {
    Frontend::new(TargetSet::of(targets), Arc::new(TaskLimiter::new(2)), true).with_spirv_translators(translators)
}

fn function(f: &Frontend, lib: &Arc<Library>, entry: &str, stage: ShaderStage) -> Arc<StageFunction> {
    f.function(&FunctionDescriptor::library(lib.clone(), entry), stage).expect("the stage function lands")
}

fn text(f: &StageFunction, t: Target) -> String {
    String::from_utf8(f.outputs.get(t).unwrap_or_else(|| panic!("no {t}: {:?}", f.target_failures)).bytes().to_vec())
        .unwrap()
}

#[test]
fn spirv_cross_translates_a_spec_constant_op_module_naga_rejects() {
    set_fault();
    if !tools() {
        return;
    }
    let tmp = common::tempdir();
    let lib = Library::spirv("spec", glsl_to_spirv(tmp.path(), "comp", "main", SPEC_COMP));
    let e = frontend(&TRANSLATED, SpirvTranslators::NagaOnly)
        .function(&FunctionDescriptor::library(lib.clone(), "main"), ShaderStage::Compute)
        .expect_err("naga alone translated it");
    assert!(e.message.to_lowercase().contains("specconstantop"), "{e}");

    let all = [Target::Spirv, Target::Msl, Target::Hlsl, Target::Glsl];
    let f = function(&frontend(&all, SpirvTranslators::default()), &lib, "main", ShaderStage::Compute);
    assert_eq!(f.targets(), TargetSet::of(&all), "lost: {:?}", f.target_failures);
    assert_eq!(f.outputs.get(Target::Spirv).unwrap().bytes(), lib.source(), "the SPIR-V is the module");
    let msl = text(&f, Target::Msl);
    // main is renamed main0 in MSL (a reserved name); the storage buffer, the image, the
    // push constants and the buffer-sizes buffer where the binding map puts them.
    assert!(msl.contains("kernel void main0("), "{msl}");
    let map = &f.resources.map;
    assert_eq!(map.msl_immediates_buffer, Some(1));
    assert_eq!(map.msl_sizes_buffer, Some(2));
    for slot in ["[[buffer(0)]]", "[[texture(0)]]", "[[buffer(1)]]", "[[buffer(2)]]"] {
        assert!(msl.contains(slot), "{slot} missing:\n{msl}");
    }
    let hlsl = text(&f, Target::Hlsl);
    for reg in ["b : register(u0, space0)", "img : register(t1, space0)", "P : register(b0, space254)"] {
        assert!(hlsl.contains(reg), "{reg} missing:\n{hlsl}");
    }
    assert!(hlsl.contains("void main("), "{hlsl}");
    let glsl = text(&f, Target::Glsl);
    assert!(glsl.contains("layout(binding = 0"), "{glsl}");
    check_glsl(tmp.path(), "comp", glsl.as_bytes());
}

#[test]
fn spirv_cross_binds_a_texture_and_sampler_sharing_a_binding() {
    set_fault();
    if !tools() {
        return;
    }
    let tmp = common::tempdir();
    let lib = Library::spirv("shared", glsl_to_spirv(tmp.path(), "frag", "main", SHARED_BINDING_FRAG));
    let naga = function(
        &frontend(&[Target::Spirv, Target::Msl], SpirvTranslators::NagaOnly),
        &lib,
        "main",
        ShaderStage::Fragment,
    );
    assert_eq!(naga.targets(), TargetSet::SPIRV, "naga alone translated it");

    let f = function(&frontend(&TRANSLATED, SpirvTranslators::default()), &lib, "main", ShaderStage::Fragment);
    assert_eq!(f.targets(), TargetSet::of(&TRANSLATED), "lost: {:?}", f.target_failures);
    let kinds: Vec<_> = f.resources.bindings.iter().map(|b| (b.group, b.binding, b.kind)).collect();
    assert_eq!(
        kinds,
        [
            (0, 1, BindingKind::CombinedImageSampler),
            (0, 2, BindingKind::CombinedImageSampler),
            (1, 0, BindingKind::Sampler),
            (1, 1, BindingKind::SampledTexture)
        ]
    );
    let msl = text(&f, Target::Msl);
    // Each combined image sampler takes the next texture and the next sampler; then the
    // plain sampler and texture take theirs.
    for slot in
        ["[[texture(0)]]", "[[sampler(0)]]", "[[texture(1)]]", "[[sampler(1)]]", "[[sampler(2)]]", "[[texture(2)]]"]
    {
        assert!(msl.contains(slot), "{slot} missing:\n{msl}");
    }
    assert!(msl.contains("fragment main0_out main0("), "{msl}");
    let hlsl = text(&f, Target::Hlsl);
    for reg in [
        "t : register(t1, space0)",
        "s : register(s1, space0)",
        "combined : register(t2, space0)",
        "_combined_sampler : register(s2, space0)",
        "s2 : register(s0, space1)",
        "t2 : register(t1, space1)",
    ] {
        assert!(hlsl.contains(reg), "{reg} missing:\n{hlsl}");
    }
    assert!(hlsl.contains("main("), "{hlsl}");
    let glsl = text(&f, Target::Glsl);
    for b in [
        "layout(binding = 0) uniform sampler2D",
        "layout(binding = 1) uniform sampler2D",
        "layout(binding = 2) uniform sampler2D",
    ] {
        assert!(glsl.contains(b), "{b} missing:\n{glsl}");
    }
    check_glsl(tmp.path(), "frag", glsl.as_bytes());
}

#[test]
fn naga_writes_a_target_spirv_cross_fails_and_a_target_both_fail_is_lost_never_the_spirv() {
    set_fault();
    if !tools() {
        return;
    }
    let tmp = common::tempdir();
    let all = [Target::Spirv, Target::Msl, Target::Hlsl, Target::Glsl];
    let fe = frontend(&all, SpirvTranslators::default());
    // SPIRV-Cross panics on this MSL: naga writes it, nothing is lost.
    let cross = Library::spirv("cross", glsl_to_spirv(tmp.path(), "vert", "vs_cross", VERT));
    let f = function(&fe, &cross, "vs_cross", ShaderStage::Vertex);
    assert_eq!(f.targets(), TargetSet::of(&all), "lost: {:?}", f.target_failures);
    let msl = text(&f, Target::Msl);
    let naga_msl = text(
        &function(&frontend(&all, SpirvTranslators::NagaOnly), &cross, "vs_cross", ShaderStage::Vertex),
        Target::Msl,
    );
    assert_eq!(msl, naga_msl, "the fallback's MSL is naga's");
    assert!(!text(&f, Target::Hlsl).is_empty());

    // Both translators panic on this GLSL: GLSL is lost with both panics, the rest stays.
    let both = Library::spirv("both", glsl_to_spirv(tmp.path(), "vert", "vs_both", VERT));
    let f = function(&fe, &both, "vs_both", ShaderStage::Vertex);
    assert_eq!(f.targets(), TargetSet::of(&[Target::Spirv, Target::Msl, Target::Hlsl]));
    assert_eq!(f.outputs.get(Target::Spirv).unwrap().bytes(), both.source());
    let [lost] = &f.target_failures[..] else { panic!("{:?}", f.target_failures) };
    assert_eq!(lost.target, Some(Target::Glsl));
    assert!(lost.message.contains("SPIRV-Cross: ") && lost.message.contains("naga (the fallback): "), "{lost}");
    assert_eq!(lost.message.matches("injected panic-write fault").count(), 2, "{lost}");
    check_glsl(
        tmp.path(),
        "vert",
        text(&function(&fe, &cross, "vs_cross", ShaderStage::Vertex), Target::Glsl).as_bytes(),
    );

    // A real failure of both: HLSL has hull shaders only in a form SPIRV-Cross does not
    // write, and naga translates no tessellation stage. MSL and GLSL come from SPIRV-Cross.
    let tesc = Library::spirv("tesc", glsl_to_spirv(tmp.path(), "tesc", "main", TESC));
    let f = function(&fe, &tesc, "main", ShaderStage::TessellationControl);
    assert_eq!(f.targets(), TargetSet::of(&[Target::Spirv, Target::Msl, Target::Glsl]), "{:?}", f.target_failures);
    let [lost] = &f.target_failures[..] else { panic!("{:?}", f.target_failures) };
    assert_eq!(lost.target, Some(Target::Hlsl));
    assert!(lost.message.contains("hlsl: SPIRV-Cross: "), "{lost}");
    assert!(
        lost.message.contains("naga (the fallback): naga cannot translate tessellation_control functions"),
        "{lost}"
    );
    check_glsl(tmp.path(), "tesc", text(&f, Target::Glsl).as_bytes());
}

/// A pipeline whose stage loses a target lands with the others, its SPIR-V the module's
/// bytes: translation never costs the driver binary its input.
#[test]
fn a_pipeline_whose_translation_fails_keeps_its_spirv_output() {
    set_fault();
    if !tools() {
        return;
    }
    let tmp = common::tempdir();
    let both = Library::spirv("both", glsl_to_spirv(tmp.path(), "vert", "vs_both", VERT));
    let c =
        Compiler::new(CompilerOptions { targets: TargetSet::of(&[Target::Spirv, Target::Glsl]), ..Default::default() });
    let f = c.frontend().function(&FunctionDescriptor::library(both.clone(), "vs_both"), ShaderStage::Vertex).unwrap();
    assert_eq!(f.targets(), TargetSet::SPIRV);
    assert_eq!(f.outputs.get(Target::Spirv).unwrap().bytes(), both.source());
}

/// The writer options text names SPIRV-Cross's crate and commit as Cargo.lock has them, so
/// an update changes every key.
#[test]
fn writer_options_name_the_exact_spirv_cross_versions() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock")).expect("Cargo.lock");
    let version = |name: &str| {
        lock.split("[[package]]")
            .find(|p| p.contains(&format!("\nname = \"{name}\"\n")))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
            .map(|v| v.trim_end_matches('"').to_string())
            .unwrap_or_else(|| panic!("{name} in Cargo.lock"))
    };
    let text = granary::frontend::targets::TARGET_OPTIONS;
    let cross = version("spirv-cross2");
    let sys = version("spirv-cross-sys");
    let (sys_version, commit) = sys.split_once('+').expect("spirv-cross-sys VERSION+COMMIT");
    let expected =
        format!("spirv-input=spirv-cross2-{cross}+SPIRV-Cross-{commit}(spirv-cross-sys-{sys_version}),naga-fallback;");
    assert!(text.contains(&expected), "TARGET_OPTIONS says {text:?}, Cargo.lock has {expected:?}");
}
