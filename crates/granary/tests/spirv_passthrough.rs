//! SPIR-V libraries are the application's own modules: validated by `spirv-val` before
//! anything else reads them, reflected with spirq, passed through byte for byte with their
//! specialization as a `VkSpecializationInfo`, translated by naga only as far as it can.
//!
//! The test modules are compiled here by glslangValidator and assembled by spirv-as (Debian
//! `glslang-tools`, `spirv-tools`; required under `CI`, skipped with a message elsewhere).
//! The corpus tests read `../shared/corpora/willems/shaders` (DXC and slangc output of the
//! Vulkan samples): skipped with a message when it is absent, failing under `CI`.

mod common;

use granary::backend::Backend;
use granary::compiler::{CompileError, Compiler, CompilerOptions};
use granary::descriptor::*;
use granary::frontend::spirv::{reflect, SpecType};
use granary::frontend::{ShaderErrorKind, StageFunction};
use granary_archive::native::{GraphicsState, NativePipeline, Specialization, SpecializationMapEntry, StageState};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

const SPEC_COMP: &str = r#"#version 450
layout(local_size_x_id = 7, local_size_y = 2) in;
layout(constant_id = 3) const int N = 4;
layout(constant_id = 5) const bool FLAG = false;
layout(constant_id = 6) const float SCALE = 1.0;
layout(set = 0, binding = 0) buffer B { float v[]; } b;
layout(set = 0, binding = 1, rgba8) uniform readonly image2D img;
layout(push_constant) uniform P { vec4 tint; uint count; } pc;
shared float s[N * 2];
void main() {
  uint i = gl_GlobalInvocationID.x;
  s[i % uint(N * 2)] = b.v[i] * SCALE + pc.tint.x + imageLoad(img, ivec2(0)).x;
  if (FLAG) b.v[i] = s[0] + float(pc.count);
}
"#;

/// What neither translator writes as HLSL: `shared float s[N * 2]` is an OpSpecConstantOp,
/// which naga's front end does not parse, and SPIRV-Cross has no HLSL for
/// `unpackDouble2x32`.
const SPEC_DOUBLE_COMP: &str = r#"#version 450
layout(local_size_x = 1) in;
layout(constant_id = 3) const int N = 4;
layout(set = 0, binding = 0) buffer B { uvec2 bits; double d; float v[]; } b;
shared float s[N * 2];
void main() {
  s[gl_LocalInvocationIndex] = b.v[0];
  b.bits = unpackDouble2x32(b.d);
  b.v[1] = s[0];
}
"#;

const VERT: &str = r#"#version 450
layout(location = 0) in vec3 pos;
layout(location = 1) in vec2 uv_in;
layout(location = 0) out vec2 uv;
layout(set = 0, binding = 0) uniform U { mat4 mvp; } u;
void main() { uv = uv_in; gl_Position = u.mvp * vec4(pos, 1.0); }
"#;

const FRAG: &str = r#"#version 450
layout(location = 0) in vec2 uv;
layout(location = 0) out vec4 color;
layout(set = 0, binding = 1) uniform sampler2D tex;
void main() { color = texture(tex, uv); }
"#;

/// Whether the SPIR-V tools these tests need are here (required under `CI`).
fn tools() -> bool {
    common::tool_available("spirv-val", "spirv-tools")
        && common::tool_available("spirv-as", "spirv-tools")
        && common::tool_available("glslangValidator", "glslang-tools")
}

/// glslangValidator's SPIR-V for `source` (a GLSL stage named by `stage`: comp, vert, frag).
fn glsl_to_spirv(dir: &Path, stage: &str, source: &str) -> Vec<u8> {
    common::glsl_to_spirv(dir, stage, "main", source)
}

/// spirv-as's module for `text` (it assembles modules spirv-val rejects).
fn assemble(dir: &Path, text: &str) -> Vec<u8> {
    let src = dir.join("m.spvasm");
    let out = dir.join("m.asm.spv");
    std::fs::write(&src, text).expect("write the assembly");
    let o = Command::new("spirv-as").arg(&src).arg("-o").arg(&out).output().expect("run spirv-as");
    assert!(o.status.success(), "spirv-as: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::read(out).expect("read the SPIR-V")
}

fn compute(lib: Arc<Library>, label: &str) -> ComputePipelineDescriptor {
    ComputePipelineDescriptor {
        label: Some(label.into()),
        compute: FunctionDescriptor::library(lib, "main"),
        layout: None,
    }
}

fn compiler(targets: &[Target]) -> Compiler {
    Compiler::new(CompilerOptions { targets: TargetSet::of(targets), ..Default::default() })
}

/// A backend that records every pipeline that reaches it.
#[derive(Default)]
struct Recording {
    seen: Mutex<Vec<String>>,
}

impl Backend for Recording {
    fn name(&self) -> &'static str {
        "recording"
    }
    fn link(&self, desc: &PipelineDescriptor, stages: &[Arc<StageFunction>]) -> Result<(), String> {
        self.seen.lock().unwrap().push(format!("link {}", desc.label().unwrap_or("?")));
        granary::backend::link_check(desc, stages)
    }
    fn compile(
        &self,
        desc: &PipelineDescriptor,
        _stages: &[Arc<StageFunction>],
        _layout: &PipelineLayout,
    ) -> Result<Option<granary_archive::DeviceBinaries>, String> {
        self.seen.lock().unwrap().push(format!("compile {}", desc.label().unwrap_or("?")));
        Ok(None)
    }
}

#[test]
fn a_module_the_validator_rejects_never_reaches_the_backend() {
    if !tools() {
        return;
    }
    let tmp = common::tempdir();
    let dir = tmp.path();
    let bad = assemble(dir, "OpCapability Shader\n%1 = OpTypeVoid\n");
    let good = glsl_to_spirv(dir, "comp", SPEC_COMP);
    let backend = Arc::new(Recording::default());
    let c = Compiler::with_backend(CompilerOptions::default(), backend.clone());
    let e = c.compile(&PipelineDescriptor::Compute(compute(Library::spirv("bad", bad), "bad"))).unwrap_err();
    let CompileError::Shader { error, .. } = &e else { panic!("{e}") };
    assert_eq!(error.kind, ShaderErrorKind::Validation);
    assert_eq!(error.file, "bad");
    assert!(
        error.message.contains("spirv-val --target-env vulkan1.3")
            && error.message.contains("TypeVoid cannot appear before the memory model instruction"),
        "{e}"
    );
    // Cached like a parse: asked again, the library is not validated again.
    let parsed = c.stats().libraries_parsed;
    assert!(c
        .compile(&PipelineDescriptor::Compute(compute(
            Library::spirv("bad", assemble(dir, "OpCapability Shader\n%1 = OpTypeVoid\n")),
            "bad2"
        )))
        .is_err());
    assert_eq!(c.stats().libraries_parsed, parsed);
    c.compile(&PipelineDescriptor::Compute(compute(Library::spirv("good", good), "good"))).expect("a valid module");
    assert_eq!(*backend.seen.lock().unwrap(), ["link good", "compile good"]);
    // Garbage is not a module at all.
    let e = c.compile(&PipelineDescriptor::Compute(compute(Library::spirv("junk", vec![1; 24]), "junk"))).unwrap_err();
    assert!(e.to_string().contains("not a SPIR-V module: the first word is 0x01010101"), "{e}");
}

#[test]
fn a_missing_validator_says_what_to_install_or_set() {
    let c = compiler(&[Target::Spirv]).with_spirv_validator(PathBuf::from("/nonexistent/spirv-val"));
    let module = [0x0723_0203u32, 0x0001_0000, 0, 1, 0].iter().flat_map(|w| w.to_le_bytes()).collect();
    let e = c.compile(&PipelineDescriptor::Compute(compute(Library::spirv("m", module), "m"))).unwrap_err();
    let CompileError::Shader { error, .. } = &e else { panic!("{e}") };
    assert_eq!(error.kind, ShaderErrorKind::Validation);
    assert!(
        error.message.contains("apt-get install spirv-tools") && error.message.contains("GRANARY_SPIRV_VAL"),
        "{e}"
    );
}

/// Valid SPIR-V (spirv-val accepts aliasing) whose two resources at one binding no one
/// descriptor type serves: a uniform block and a storage buffer at set 0 binding 0.
const ALIASED_COMP: &str = r#"#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) uniform U { vec4 a; } u;
layout(set = 0, binding = 0) buffer B { float v[]; } b;
void main() { b.v[0] = u.a.x; }
"#;

#[test]
fn a_portable_pipeline_whose_stage_aliases_two_descriptor_types_at_one_binding_never_reaches_the_backend() {
    if !tools() {
        return;
    }
    let tmp = common::tempdir();
    let backend = Arc::new(Recording::default());
    let c = Compiler::with_backend(CompilerOptions::default(), backend.clone());
    let lib = Library::spirv("aliased.comp.spv", glsl_to_spirv(tmp.path(), "comp", ALIASED_COMP));
    let e = c.compile(&PipelineDescriptor::Compute(compute(lib, "aliased"))).unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("compute function 'main': set 0 binding 0 is declared as both")
            && m.contains("uniform_buffer")
            && m.contains("storage_buffer"),
        "{e}"
    );
    assert_eq!(*backend.seen.lock().unwrap(), ["link aliased"], "refused by the link check, never compiled");
}

#[test]
fn spec_constants_make_a_specialization_and_the_module_passes_through_unchanged() {
    if !tools() {
        return;
    }
    let tmp = common::tempdir();
    let dir = tmp.path();
    let bytes = glsl_to_spirv(dir, "comp", SPEC_COMP);
    let lib = Library::spirv("spec", bytes.clone());
    let constants = vec![
        Constant { id: ConstantId::Name("FLAG".into()), value: ConstantValue::Bool(true) },
        Constant { id: ConstantId::Id(3), value: ConstantValue::I32(9) },
        Constant { id: ConstantId::Name("SCALE".into()), value: ConstantValue::F32(0.5) },
    ];
    let f = FunctionDescriptor::library(lib.clone(), "main").specialized(constants);
    let c = compiler(&[Target::Spirv]);
    let func = c.frontend().function(&f, ShaderStage::Compute).expect("compiles");
    let out = func.outputs.get(Target::Spirv).expect("SPIR-V output");
    assert_eq!(out.bytes(), &bytes[..], "the SPIR-V output is the library, byte for byte");
    let spec = Specialization::decode(func.specialization.as_ref().expect("a specialization").bytes()).unwrap();
    assert_eq!(
        spec.map_entries,
        [(3, 0), (5, 4), (6, 8)].map(|(constant_id, offset)| SpecializationMapEntry { constant_id, offset, size: 4 })
    );
    assert_eq!(spec.data, [9i32.to_le_bytes(), 1u32.to_le_bytes(), 0.5f32.to_le_bytes()].concat());
    // Every stage function of the library shares the one blob of its bytes.
    let plain = c.frontend().function(&FunctionDescriptor::library(lib.clone(), "main"), ShaderStage::Compute).unwrap();
    assert!(Arc::ptr_eq(plain.outputs.get(Target::Spirv).unwrap(), out));
    assert!(plain.specialization.is_none());
    // What spirq reflected.
    let r = func.spirv.as_ref().expect("reflection");
    assert_eq!(r.workgroup_size, Some([1, 2, 1]));
    assert_eq!(func.resources.immediates, Some(20));
    let kinds: Vec<_> = func.resources.bindings.iter().map(|b| (b.group, b.binding, b.kind, b.count)).collect();
    assert_eq!(kinds, [(0, 0, BindingKind::StorageBuffer, 0), (0, 1, BindingKind::ReadOnlyStorageTexture, 0)]);
    let ids: Vec<_> = r.spec_constants.iter().map(|s| (s.id, s.name.as_deref(), s.ty.clone())).collect();
    assert_eq!(
        ids,
        [
            (3, Some("N"), SpecType::I32),
            (5, Some("FLAG"), SpecType::Bool),
            (6, Some("SCALE"), SpecType::F32),
            (7, None, SpecType::U32)
        ]
    );
    // The module is reflected with the values applied: N = -9 makes `s[N * 2]` invalid.
    let negative = FunctionDescriptor::library(lib.clone(), "main")
        .specialized(vec![Constant { id: ConstantId::Id(3), value: ConstantValue::I32(-9) }]);
    let e = c.frontend().function(&negative, ShaderStage::Compute).unwrap_err();
    assert_eq!(e.kind, ShaderErrorKind::Constant);
    assert!(e.message.contains("invalid array size"), "{e}");
    // Wrong type, unknown id or name: a constant error naming it.
    for (id, value, says) in [
        (ConstantId::Id(3), ConstantValue::U32(1), "@id(3) (N, id 3) has type i32, but the constant gives a u32"),
        (
            ConstantId::Id(4),
            ConstantValue::I32(1),
            "no specialization constant @id(4) in this module (spec constants: N (id 3, i32)",
        ),
        (ConstantId::Name("NOPE".into()), ConstantValue::I32(1), "no specialization constant 'NOPE'"),
    ] {
        let f = FunctionDescriptor::library(lib.clone(), "main").specialized(vec![Constant { id, value }]);
        let e = c.frontend().function(&f, ShaderStage::Compute).unwrap_err();
        assert_eq!(e.kind, ShaderErrorKind::Constant);
        assert!(e.message.contains(says), "{e}");
    }
}

#[test]
fn a_failed_translation_loses_that_target_never_the_spirv_output() {
    if !tools() {
        return;
    }
    let tmp = common::tempdir();
    let dir = tmp.path();
    // HLSL that neither SPIRV-Cross nor naga (the fallback) writes (SPEC_DOUBLE_COMP).
    let lib = Library::spirv("spec", glsl_to_spirv(dir, "comp", SPEC_DOUBLE_COMP));
    let desc = PipelineDescriptor::Compute(compute(lib.clone(), "p"));
    let o = compiler(&[Target::Spirv, Target::Hlsl]).compile_detailed(&desc).expect("lands with SPIR-V");
    assert_eq!(o.targets, TargetSet::SPIRV);
    let lost: Vec<_> = o.lost.iter().map(|l| l.error.target.unwrap()).collect();
    assert_eq!(lost, [Target::Hlsl]);
    assert!(o.lost[0].error.message.to_lowercase().contains("specconstantop"), "{}", o.lost[0].error);
    assert!(o.lost[0].error.message.contains("SPIRV-Cross: "), "{}", o.lost[0].error);
    // Without SPIR-V requested, nothing is left: the function fails with both reasons.
    let e = compiler(&[Target::Hlsl]).compile(&desc).unwrap_err();
    assert!(e.to_string().to_lowercase().contains("specconstantop"), "{e}");
    assert!(e.to_string().contains("SPIRV-Cross: "), "{e}");
    // A module naga does read is translated, its resources bound by the binding map.
    let vert = Library::spirv("vert", glsl_to_spirv(dir, "vert", VERT));
    let c = compiler(&Target::ALL);
    let f = c.frontend().function(&FunctionDescriptor::library(vert, "main"), ShaderStage::Vertex).expect("vertex");
    assert_eq!(f.targets(), TargetSet::of(&Target::ALL), "lost: {:?}", f.target_failures);
    assert!(std::str::from_utf8(f.outputs.get(Target::Msl).unwrap().bytes()).unwrap().contains("[[buffer(0)]]"));
}

fn native_graphics(dir: &Path, vs_spec: Option<Specialization>) -> NativePipelineDescriptor {
    let vs = Library::spirv("vert", glsl_to_spirv(dir, "vert", VERT));
    let fs = Library::spirv("frag", glsl_to_spirv(dir, "frag", FRAG));
    NativePipelineDescriptor {
        label: Some("native".into()),
        stages: vec![
            NativeStage {
                stage: ShaderStage::Vertex,
                function: FunctionDescriptor::library(vs, "main"),
                specialization: vs_spec.map(Arc::new),
            },
            NativeStage {
                stage: ShaderStage::Fragment,
                function: FunctionDescriptor::library(fs, "main"),
                specialization: None,
            },
        ],
        state: Arc::new(NativePipeline {
            stages: vec![StageState::default(), StageState::default()],
            graphics: Some(GraphicsState::default()),
            ..Default::default()
        }),
    }
}

#[test]
fn native_pipelines_compile_with_their_own_specialization_and_state() {
    if !tools() {
        return;
    }
    let tmp = common::tempdir();
    let dir = tmp.path();
    // Map entries for constants the module does not declare are Vulkan's business (ignored).
    let given = Specialization {
        map_entries: vec![SpecializationMapEntry { constant_id: 40, offset: 0, size: 4 }],
        data: 7u32.to_le_bytes().to_vec(),
    };
    let n = native_graphics(dir, Some(given.clone()));
    let c = compiler(&[Target::Spirv]);
    let desc = PipelineDescriptor::Native(n.clone());
    let entry = c.compile(&desc).expect("native pipeline");
    assert_eq!(entry.key, desc.key(&c.key_context()));
    assert_eq!(entry.stages[0].specialization.as_ref().unwrap().bytes(), &given.encode()[..]);
    assert!(entry.stages[1].specialization.is_none());
    assert_eq!(
        entry.stages[0].key,
        native_stage_key(&n.stages[0].function, ShaderStage::Vertex, Some(&given), &c.key_context())
    );
    assert_eq!(entry.state.as_ref().unwrap().bytes(), &n.state.encode()[..]);
    for (s, st) in entry.stages.iter().zip(&n.stages) {
        assert_eq!(s.outputs.get(Target::Spirv).unwrap().bytes(), st.function.base().0.source());
    }
    // The layout tools read: merged from the reflection (combined image sampler included).
    let layout = PipelineLayout::decode(entry.layout.as_ref().expect("merged layout").bytes()).unwrap();
    let kinds: Vec<_> = layout.bindings.iter().map(|b| (b.binding, b.kind)).collect();
    assert_eq!(kinds, [(0, BindingKind::UniformBuffer), (1, BindingKind::CombinedImageSampler)]);
    // A specialization that does not fit its data is refused, naming the entry.
    let bad = Specialization {
        map_entries: vec![SpecializationMapEntry { constant_id: 0, offset: 2, size: 4 }],
        data: vec![0; 4],
    };
    let e = c.compile(&PipelineDescriptor::Native(native_graphics(dir, Some(bad)))).unwrap_err();
    assert!(e.to_string().contains("specialization map entry 0 (constant 0)"), "{e}");
    // Structural checks: one stage record per stage; compute state with graphics stages.
    let mut short = n.clone();
    Arc::make_mut(&mut short.state).stages.pop();
    let e = c.compile(&PipelineDescriptor::Native(short)).unwrap_err();
    assert!(e.to_string().contains("1 stage record(s) for 2 stage(s)"), "{e}");
    let mut compute_state = n.clone();
    Arc::make_mut(&mut compute_state.state).graphics = None;
    let e = c.compile(&PipelineDescriptor::Native(compute_state)).unwrap_err();
    assert!(e.to_string().contains("exactly one compute stage"), "{e}");
    // A native stage is a SPIR-V module.
    let mut wgsl = n.clone();
    wgsl.stages[1].function = FunctionDescriptor::library(Library::wgsl("w", "@fragment fn main() {}"), "main");
    let e = c.compile(&PipelineDescriptor::Native(wgsl)).unwrap_err();
    assert!(e.to_string().contains("a native Vulkan stage takes a SPIR-V library; 'w' is WGSL"), "{e}");
    // Interfaces are not second-guessed: a fragment stage reading what no stage writes lands.
    let mut odd = n.clone();
    odd.stages[0].function = FunctionDescriptor::library(
        Library::spirv("vert2", glsl_to_spirv(dir, "vert", "#version 450\nvoid main() { gl_Position = vec4(0.0); }\n")),
        "main",
    );
    c.compile(&PipelineDescriptor::Native(odd)).expect("the application's state is the driver's to judge");
}

/// The corpus folder — `GRANARY_CORPORA/willems/shaders`, else `../shared/corpora` beside the
/// checkout — or `None` (skipped with a message, a failure under `CI`).
fn corpus() -> Option<PathBuf> {
    let root = std::env::var_os("GRANARY_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora"));
    let dir = root.join("willems/shaders");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(std::env::var_os("CI").is_none(), "{} is absent (the willems corpus is required under CI)", dir.display());
    eprintln!("SKIPPED: {} is absent; the corpus tests read nothing", dir.display());
    None
}

fn spv_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read the corpus").flatten() {
        let p = e.path();
        if p.is_dir() {
            spv_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "spv") {
            out.push(p);
        }
    }
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect()
}

#[test]
fn a_dxc_combined_image_sampler_sharing_a_binding_reflects_as_one() {
    let Some(dir) = corpus() else { return };
    // `Texture2D textureColorMap : register(t0, space1); SamplerState samplerColorMap :
    // register(s0, space1);`: DXC puts both at set 1 binding 0.
    let bytes = std::fs::read(dir.join("hlsl/tessellation/base.frag.spv")).expect("the module");
    let r = reflect::reflect(&words(&bytes), &[]).expect("reflects");
    let ep = r.entry("main", ShaderStage::Fragment).expect("fragment entry point");
    let b: Vec<_> = ep.bindings.iter().map(|b| (b.group, b.binding, b.kind)).collect();
    assert_eq!(b, [(1, 0, BindingKind::CombinedImageSampler)]);
    if !tools() {
        return;
    }
    let f = compiler(&[Target::Spirv])
        .frontend()
        .function(
            &FunctionDescriptor::library(Library::spirv("base.frag", bytes.clone()), "main"),
            ShaderStage::Fragment,
        )
        .expect("compiles");
    assert_eq!(f.resources.bindings[0].kind, BindingKind::CombinedImageSampler);
    assert_eq!(f.outputs.get(Target::Spirv).unwrap().bytes(), &bytes[..]);
}

#[test]
fn the_corpus_tessellation_geometry_task_and_mesh_modules_reflect_to_their_stages() {
    let Some(dir) = corpus() else { return };
    let mut files = Vec::new();
    spv_files(&dir, &mut files);
    files.sort();
    let stage_of = |name: &str| {
        Some(match name.rsplit('.').nth(1)? {
            "tesc" => ShaderStage::TessellationControl,
            "tese" => ShaderStage::TessellationEvaluation,
            "geom" => ShaderStage::Geometry,
            "task" => ShaderStage::Task,
            "mesh" => ShaderStage::Mesh,
            _ => return None,
        })
    };
    let c = compiler(&[Target::Spirv]);
    let mut counted = std::collections::BTreeMap::new();
    for path in &files {
        let name = path.to_string_lossy().into_owned();
        let Some(stage) = stage_of(&name) else { continue };
        let bytes = std::fs::read(path).expect("read");
        let r = reflect::reflect(&words(&bytes), &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(r.entry_points.iter().any(|e| e.stage == stage), "{name}: {:?}", r.entry_points);
        *counted.entry(stage.name()).or_insert(0) += 1;
        if !tools() {
            continue;
        }
        let entry = r.entry_points.iter().find(|e| e.stage == stage).unwrap().name.clone();
        let lib = Library::new(name.clone(), SourceKind::Spirv, None, bytes.clone(), Some(path.clone()));
        match c.frontend().function(&FunctionDescriptor::library(lib, entry), stage) {
            Ok(f) => assert_eq!(f.outputs.get(Target::Spirv).unwrap().bytes(), &bytes[..]),
            // slangc declares ShaderLayer / ShaderViewportIndex in SPIR-V 1.4 modules, which
            // needs 1.5: the validator says so, and nothing else reads them.
            Err(e) => assert!(
                e.kind == ShaderErrorKind::Validation && e.message.contains("requires SPIR-V version 1.5"),
                "{name}: {e}"
            ),
        }
    }
    let want: std::collections::BTreeMap<&str, i32> =
        [("geometry", 6), ("mesh", 2), ("task", 2), ("tessellation_control", 10), ("tessellation_evaluation", 10)]
            .into_iter()
            .collect();
    assert_eq!(counted, want);
}

#[test]
fn every_corpus_module_either_reflects_or_fails_with_a_message() {
    let Some(dir) = corpus() else { return };
    if !tools() {
        return;
    }
    let mut files = Vec::new();
    spv_files(&dir, &mut files);
    files.sort();
    let c = compiler(&[Target::Spirv]);
    let (mut loaded, mut failed, mut ray_tracing) = (0, Vec::new(), 0);
    for path in &files {
        let lib = Library::new(
            path.to_string_lossy(),
            SourceKind::Spirv,
            None,
            std::fs::read(path).expect("read"),
            Some(path.clone()),
        );
        match c.frontend().library(&lib) {
            Ok(l) => {
                let granary::frontend::LoadedLibrary::Spirv(s) = &*l else { panic!("a SPIR-V library") };
                assert!(!s.reflection.entry_points.is_empty(), "{}: no entry point granary harvests", path.display());
                assert!(s.reflection.unsupported.is_empty(), "{}: {:?}", path.display(), s.reflection.unsupported);
                ray_tracing += usize::from(s.reflection.entry_points.iter().any(|e| e.stage.is_ray_tracing()));
                loaded += 1;
            }
            Err(e) => {
                assert!(!e.message.is_empty() && e.file == path.to_string_lossy(), "{e}");
                failed.push(e.to_string());
            }
        }
    }
    eprintln!("{} modules: {loaded} loaded ({ray_tracing} ray-tracing), {} refused:", files.len(), failed.len());
    for f in &failed {
        eprintln!("  {f}");
    }
    assert_eq!(files.len(), 653);
    // Debian 12's SPIRV-Tools refuses 6: 4 capabilities newer than it, 2 slangc modules
    // declaring a capability their SPIR-V version does not have.
    assert!(failed.len() <= 6, "{failed:#?}");
    assert!(failed.iter().all(|f| f.contains("validation error: spirv-val")), "{failed:#?}");
    // Every ray-tracing module that loads reflects its ray-tracing entry point (57 in all).
    let rt = [".rgen.", ".rchit.", ".rmiss.", ".rahit.", ".rcall.", ".rint."];
    assert_eq!(ray_tracing, 57 - failed.iter().filter(|f| rt.iter().any(|x| f.contains(x))).count());
}
