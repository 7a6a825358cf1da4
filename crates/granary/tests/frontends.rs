//! The three input languages and four output targets.

mod common;

use granary::compiler::{Compiler, CompilerOptions};
use granary::descriptor::*;

fn compute(lib: std::sync::Arc<Library>, entry: &str) -> PipelineDescriptor {
    PipelineDescriptor::Compute(ComputePipelineDescriptor {
        label: None,
        compute: FunctionDescriptor::library(lib, entry),
        layout: None,
    })
}

#[test]
fn wgsl_glsl_and_spirv_libraries_compile_to_every_target() {
    let all = TargetSet::of(&Target::ALL);
    let c = Compiler::new(CompilerOptions { targets: all, ..Default::default() });

    let fx = common::fixture();
    let wgsl = c.compile(&fx.pipeline(1, 2, 3)).expect("wgsl render pipeline");
    for s in &wgsl.stages {
        for t in Target::ALL {
            let out = s.outputs.get(t).expect("every target written");
            assert!(!out.bytes().is_empty());
        }
        let spv = s.outputs.get(Target::Spirv).unwrap().bytes();
        assert_eq!(&spv[..4], &0x0723_0203u32.to_le_bytes());
        assert!(std::str::from_utf8(s.outputs.get(Target::Msl).unwrap().bytes()).unwrap().contains("metal"));
    }

    let glsl = Library::glsl(
        "g",
        ShaderStage::Compute,
        "#version 450\nlayout(local_size_x = 4) in;\nlayout(set = 0, binding = 0) buffer B { float v[]; } b;\nvoid main() { b.v[gl_GlobalInvocationID.x] *= 2.0; }\n",
    );
    c.compile(&compute(glsl, "main")).expect("glsl compute pipeline");

    // SPIR-V in: feed granary's own SPIR-V output back as a library.
    let spv_out = c.compile(&compute(fx.fs.clone(), "cs")).unwrap().stages[0]
        .outputs
        .get(Target::Spirv)
        .unwrap()
        .bytes()
        .to_vec();
    let spirv = Library::spirv("s", spv_out);
    let back = c.compile(&compute(spirv, "cs")).expect("spir-v compute pipeline");
    assert_eq!(back.stages[0].entry_point, "cs");
}

#[test]
fn glsl_stage_comes_from_the_file_extension() {
    let dir = common::tempdir();
    std::fs::write(
        dir.path().join("post.frag"),
        "#version 450\nlayout(location = 0) out vec4 o;\nvoid main() { o = vec4(1.0); }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("s.json"),
        r#"{"granary_script": 1, "libraries": [{"name": "p", "path": "post.frag"}], "pipelines": []}"#,
    )
    .unwrap();
    let s = granary::script::Script::load(&dir.path().join("s.json")).unwrap();
    let lib = s.libraries[0].1.as_ref().unwrap();
    assert_eq!(lib.kind(), SourceKind::Glsl);
    assert_eq!(lib.glsl_stage(), Some(ShaderStage::Fragment));
    granary::frontend::parse_library(lib, naga::valid::Capabilities::all()).expect("parses");
}
