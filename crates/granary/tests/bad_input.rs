//! Bad scripts and bad shaders: precise errors, never panics, the rest still compiles.

mod common;

use granary::compiler::{CompileError, Compiler, CompilerOptions};
use granary::descriptor::*;
use granary::frontend::ShaderErrorKind;
use granary::script::Script;
use std::path::Path;

fn parse(json: &str, dir: &Path) -> Result<Script, granary::script::ScriptError> {
    Script::parse(json, &dir.join("s.json"), dir)
}

#[test]
fn malformed_json_names_line_and_column() {
    let dir = common::tempdir();
    let e = parse("{\"granary_script\": 1,\n  \"pipelines\": [,]}", dir.path()).unwrap_err();
    assert_eq!(e.line, Some(2));
    assert!(e.column.is_some());
    assert!(e.to_string().contains("s.json:2:"), "{e}");
}

#[test]
fn unknown_fields_are_errors_with_json_paths() {
    let dir = common::tempdir();
    let e = parse(r#"{"granary_script": 1, "extra": true}"#, dir.path()).unwrap_err();
    assert!(e.message.contains("unknown field `extra`"), "{e}");

    std::fs::write(dir.path().join("v.wgsl"), common::VS).unwrap();
    let s = parse(
        r#"{"granary_script": 1, "libraries": [{"name": "v", "path": "v.wgsl"}],
        "pipelines": [
          {"label": "ok", "render": {"vertex": {"library": "v", "function": "vs_depth"}, "vertex_buffers": [{"stride": 12, "attributes": [{"location": 0, "format": "float32x3"}]}]}},
          {"label": "typo", "render": {"vertex": {"library": "v", "function": "vs_depth"}, "primitive": {"topolgy": "point-list"}}},
          {"label": "badenum", "render": {"vertex": {"library": "v", "function": "vs_depth"}, "primitive": {"topology": "points"}}},
          {"label": "nolib", "render": {"vertex": {"library": "nope", "function": "vs"}}},
          {"label": "ok", "compute": {"function": {"library": "v", "function": "x"}}},
          {"label": "twoconst", "compute": {"function": {"specialize": {"library": "v", "function": "x"}, "constants": [{"name": "A", "u32": 1, "f32": 2.0}]}}},
          {"label": "both", "render": {"vertex": {"library": "v", "function": "vs"}}, "compute": {"function": {"library": "v", "function": "x"}}}
        ]}"#,
        dir.path(),
    )
    .unwrap();
    let errs: Vec<String> =
        s.pipelines.iter().map(|p| p.descriptor.as_ref().err().map(|e| e.to_string()).unwrap_or_default()).collect();
    assert_eq!(errs[0], "");
    assert!(
        errs[1].contains("pipelines[1].render.primitive.topolgy") && errs[1].contains("unknown field"),
        "{}",
        errs[1]
    );
    assert!(
        errs[2].contains("pipelines[2].render.primitive.topology") && errs[2].contains("unknown variant"),
        "{}",
        errs[2]
    );
    assert!(errs[3].contains("pipelines[3].render.vertex.library: unknown library 'nope'"), "{}", errs[3]);
    assert!(errs[4].contains("duplicate label 'ok'"), "{}", errs[4]);
    assert!(errs[5].contains("constants[0]") && errs[5].contains("exactly one typed value"), "{}", errs[5]);
    assert!(errs[6].contains("exactly one of \"render\" or \"compute\""), "{}", errs[6]);
    // Errors inside one entry still carry the line and column in the whole file.
    let e = s.pipelines[1].descriptor.as_ref().unwrap_err();
    assert_eq!(e.line, Some(4), "{e}");
    assert!(errs[1].contains("s.json:4:"), "{}", errs[1]);
}

#[test]
fn missing_library_file_fails_only_its_pipelines() {
    let dir = common::tempdir();
    std::fs::write(dir.path().join("v.wgsl"), common::VS).unwrap();
    let s = parse(
        r#"{"granary_script": 1, "libraries": [{"name": "v", "path": "v.wgsl"}, {"name": "gone", "path": "gone.wgsl"}],
        "pipelines": [
          {"label": "a", "render": {"vertex": {"library": "gone", "function": "vs"}}},
          {"label": "b", "render": {"vertex": {"library": "v", "function": "vs_depth"}}}
        ]}"#,
        dir.path(),
    )
    .unwrap();
    let e = s.libraries[1].1.as_ref().unwrap_err();
    assert!(e.to_string().contains("libraries[1].path") && e.to_string().contains("gone.wgsl"), "{e}");
    let pe = s.pipelines[0].descriptor.as_ref().unwrap_err().to_string();
    assert!(pe.contains("library 'gone' is unavailable"), "{pe}");
    assert!(s.pipelines[1].descriptor.is_ok());
}

fn compile_err(
    lib: std::sync::Arc<Library>,
    entry: &str,
    stage: ShaderStage,
    constants: Vec<Constant>,
) -> CompileError {
    let f = FunctionDescriptor::library(lib, entry);
    let f = if constants.is_empty() { f } else { f.specialized(constants) };
    let d = match stage {
        ShaderStage::Compute => {
            PipelineDescriptor::Compute(ComputePipelineDescriptor { label: Some("p".into()), compute: f, layout: None })
        }
        _ => PipelineDescriptor::Render(RenderPipelineDescriptor {
            label: Some("p".into()),
            vertex: f,
            fragment: None,
            state: RenderState {
                vertex_buffers: common::layout(),
                primitive: PrimitiveState::default(),
                color_attachments: vec![],
                depth_stencil: None,
                sample_count: 1,
                alpha_to_coverage: false,
            },
            layout: None,
        }),
    };
    Compiler::new(CompilerOptions::default()).compile(&d).unwrap_err()
}

fn shader_kind(e: &CompileError) -> (ShaderErrorKind, Option<u32>, Option<u32>, String) {
    match e {
        CompileError::Shader { error, .. } => (error.kind, error.line, error.column, e.to_string()),
        other => panic!("expected a shader error, got {other}"),
    }
}

#[test]
fn shader_syntax_errors_carry_file_line_column() {
    let lib = Library::new(
        "broken",
        SourceKind::Wgsl,
        None,
        b"@vertex fn vs() -> @builtin(position) vec4<f32> {\n  return vec4<f32>(1.0;\n}\n".to_vec(),
        Some("shaders/broken.wgsl".into()),
    );
    let (kind, line, col, msg) = shader_kind(&compile_err(lib, "vs", ShaderStage::Vertex, vec![]));
    assert_eq!(kind, ShaderErrorKind::Parse);
    assert_eq!(line, Some(2));
    assert!(col.is_some());
    assert!(msg.contains("shaders/broken.wgsl:2:"), "{msg}");

    let glsl = Library::glsl("g", ShaderStage::Fragment, "#version 450\nvoid main() { undefined_fn(); }\n");
    let (kind, line, _, _) = shader_kind(&compile_err(glsl, "main", ShaderStage::Fragment, vec![]));
    assert_eq!(kind, ShaderErrorKind::Parse);
    assert_eq!(line, Some(2));

    let spv = Library::spirv("s", vec![1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(shader_kind(&compile_err(spv, "main", ShaderStage::Compute, vec![])).0, ShaderErrorKind::Parse);
}

#[test]
fn validation_errors_are_reported() {
    let lib = Library::wgsl(
        "v",
        "@vertex fn vs() -> @builtin(position) vec4<f32> { let x: u32 = 1u; return vec4<f32>(x); }\n",
    );
    let (kind, _, _, msg) = shader_kind(&compile_err(lib, "vs", ShaderStage::Vertex, vec![]));
    assert!(matches!(kind, ShaderErrorKind::Validation | ShaderErrorKind::Parse), "{msg}");
}

#[test]
fn entry_point_and_constant_errors() {
    let fx = common::fixture();
    let (k, _, _, m) = shader_kind(&compile_err(fx.vs.clone(), "nope", ShaderStage::Vertex, vec![]));
    assert_eq!(k, ShaderErrorKind::EntryPoint);
    assert!(m.contains("available vertex entry points: vs, vs_depth"), "{m}");
    let (k, _, _, m) = shader_kind(&compile_err(fx.fs.clone(), "fs", ShaderStage::Vertex, vec![]));
    assert_eq!(k, ShaderErrorKind::EntryPoint);
    assert!(m.contains("is a fragment function"), "{m}");
    let unknown = Constant { id: ConstantId::Name("NOPE".into()), value: ConstantValue::U32(1) };
    let (k, _, _, m) = shader_kind(&compile_err(fx.vs.clone(), "vs", ShaderStage::Vertex, vec![unknown]));
    assert_eq!(k, ShaderErrorKind::Constant);
    assert!(m.contains("no override 'NOPE'") && m.contains("VARIANT"), "{m}");
    let wrong = Constant { id: ConstantId::Name("VARIANT".into()), value: ConstantValue::F32(1.0) };
    let (k, _, _, m) = shader_kind(&compile_err(fx.vs.clone(), "vs", ShaderStage::Vertex, vec![wrong]));
    assert_eq!(k, ShaderErrorKind::Constant);
    assert!(m.contains("has type u32, but the constant gives a f32"), "{m}");
    // By numeric id, for an override declared with @id.
    let by_id = Constant { id: ConstantId::Id(7), value: ConstantValue::F32(0.25) };
    let ok = FunctionDescriptor::library(fx.fs.clone(), "cs").specialized(vec![by_id]);
    let d = PipelineDescriptor::Compute(ComputePipelineDescriptor { label: None, compute: ok, layout: None });
    Compiler::new(CompilerOptions::default()).compile(&d).expect("constant by @id");
}

#[test]
fn interface_mismatches_are_link_errors() {
    let fx = common::fixture();
    let base = fx.pipeline(0, 0, 1);
    let PipelineDescriptor::Render(r) = base else { unreachable!() };
    let compiler = Compiler::new(CompilerOptions::default());
    let link = |r: RenderPipelineDescriptor| match compiler.compile(&PipelineDescriptor::Render(r)) {
        Err(CompileError::Link { message, .. }) => message,
        other => panic!("expected link error, got {:?}", other.map(|_| ())),
    };
    let mut a = r.clone();
    a.state.vertex_buffers[0].attributes.pop();
    assert!(link(a).contains("reads @location(2)"));
    let mut b = r.clone();
    b.state.vertex_buffers[0].attributes[0].format = VertexFormat::Uint32x3;
    assert!(link(b).contains("Uint32x3"));
    let mut c = r.clone();
    c.state.color_attachments.clear();
    assert!(link(c).contains("0 colour attachment"));
    let mut d = r.clone();
    d.state.color_attachments[0].format = MaybeSpecialized::Is(TextureFormat::R32uint);
    assert!(link(d).contains("R32uint"));
    let mut e = r.clone();
    e.vertex = FunctionDescriptor::library(fx.vs.clone(), "vs_depth");
    e.state.vertex_buffers[0].attributes.truncate(1);
    let m = link(e);
    assert!(m.contains("does not write it"), "{m}");
    // Every GLSL and SPIR-V entry point is `main`: messages name the library of each side.
    assert!(m.contains("'fs' of library 'fs_lib'") && m.contains("'vs_depth' of library 'vs_lib'"), "{m}");
    // Unspecialized and float formats both link.
    let mut ok = r.clone();
    ok.state.color_attachments[0].format = MaybeSpecialized::Is(TextureFormat::Rgba16float);
    compiler.compile(&PipelineDescriptor::Render(ok)).unwrap();
}

/// Two libraries with one name: every pipeline naming it fails (ambiguous, never "the first
/// one wins"), in both script readers; the other pipelines load.
#[test]
fn a_library_name_defined_twice_fails_the_pipelines_that_use_it() {
    let dir = common::tempdir();
    std::fs::write(dir.path().join("v.wgsl"), common::VS).unwrap();
    std::fs::write(dir.path().join("f.wgsl"), common::FS).unwrap();
    let json = r#"{"granary_script": 1, "libraries": [
          {"name": "v", "path": "v.wgsl"}, {"name": "f", "path": "f.wgsl"}, {"name": "v", "path": "f.wgsl"}],
        "pipelines": [
          {"label": "uses-v", "render": {"vertex": {"library": "v", "function": "vs_depth"}}},
          {"label": "uses-f", "compute": {"function": {"library": "f", "function": "cs"}}}]}"#;
    let check =
        |label: Option<String>, d: Result<PipelineDescriptor, granary::script::ScriptError>| match label.as_deref() {
            Some("uses-v") => {
                let e = d.expect_err("ambiguous library");
                assert!(e.message.contains("library name 'v' is defined twice (libraries[0] and libraries[2])"), "{e}");
            }
            Some("uses-f") => {
                d.expect("unaffected pipeline loads");
            }
            other => panic!("unexpected pipeline {other:?}"),
        };
    for p in parse(json, dir.path()).unwrap().pipelines {
        check(p.label, p.descriptor);
    }
    let path = dir.path().join("s.json");
    std::fs::write(&path, json).unwrap();
    let lazy = granary::script::LazyScript::load(&path).unwrap();
    for i in 0..lazy.len() {
        let (label, d) = lazy.pipeline(i).unwrap();
        check(label, d);
    }
}
