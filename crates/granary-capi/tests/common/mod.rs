//! What the C API's integration tests share: the bundled example as an archive, and the
//! skip rule of the workspace's Vulkan tests.

#![allow(dead_code)] // each test file uses part of it

use granary::compiler::{Compiler, CompilerOptions};
use granary::script::Script;
use granary_archive::WriteEntry;
use std::path::Path;

/// The bundled example (`examples/renderer/pipelines.json`, 335 pipelines) compiled with the
/// `none` backend, as granary-vulkan's loader tests make it: SPIR-V, layouts and render
/// states, no device section (so the loader compiles every pipeline).
pub fn example_archive_bytes() -> Vec<u8> {
    let script = Script::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/renderer/pipelines.json"))
        .expect("example script");
    let compiler = Compiler::new(CompilerOptions::default());
    let entries: Vec<WriteEntry> = script
        .pipelines
        .into_iter()
        .map(|p| {
            let desc = p.descriptor.expect("valid");
            let label = desc.label().expect("labelled").to_string();
            WriteEntry {
                entry: compiler.compile(&desc).expect("compiles"),
                labels: vec![label].into(),
                binaries: vec![],
            }
        })
        .collect();
    granary::archive::encode(&entries, &granary::archive::portable_meta())
}

/// The bundled example harvested as `granary harvest --whole-variants` does with the `none`
/// backend, its script given `"expand_unspecialized": {"formats": ["rgba8unorm"]}`: beside each
/// pipeline with unspecialized colour output, its whole variant `LABEL@rgba8unorm`. Returns
/// the archive's bytes and the labels of the pipelines that have a variant.
pub fn example_archive_with_variants_bytes() -> (Vec<u8>, Vec<String>) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/renderer");
    let text = std::fs::read_to_string(example.join("pipelines.json")).expect("example script");
    let shaders = format!("\"path\": \"{}/shaders/", example.display());
    let text = text.replacen('{', "{\"expand_unspecialized\": {\"formats\": [\"rgba8unorm\"]},", 1);
    let dir = tempfile::tempdir().expect("tempdir");
    let (script, out) = (dir.path().join("pipelines.json"), dir.path().join("variants.granary"));
    std::fs::write(&script, text.replace("\"path\": \"shaders/", &shaders)).expect("write script");
    let options = granary::harvest::HarvestOptions {
        script,
        output: out.clone(),
        threads: 2,
        targets: granary_archive::TargetSet::SPIRV,
        profile: granary::frontend::Profile::default_profile(),
        flush_every: None,
        resume: false,
        isolate: None,
        require_all_targets: false,
        backend: None,
        trace: None,
        max_library_bytes: None,
        check_outputs: Default::default(),
        force: false,
        interrupt: None,
        whole_variants: true,
    };
    let summary = granary::harvest::harvest(&options, &|_| {}).expect("harvest");
    assert!(summary.failed == 0 && summary.whole_variants && summary.expanded > 0, "{summary:?}");
    let bytes = std::fs::read(&out).expect("archive");
    let archive = granary::archive::Archive::from_bytes(bytes.clone()).expect("archive reads");
    let labels = archive.labels().expect("labels");
    let expanded = labels.iter().filter_map(|(l, _)| l.strip_suffix("@rgba8unorm").map(str::to_string)).collect();
    (bytes, expanded)
}

/// Says that a test skipped for want of a Vulkan driver (`why`); a failure instead under
/// `GRANARY_REQUIRE_VULKAN=1` (set by `.ci/run`). The rule of
/// `crates/granary-vulkan/tests/support/mod.rs` (`no_driver`), which this crate cannot include
/// (that file also opens granary-vulkan's backend).
pub fn no_driver(why: impl std::fmt::Display) {
    assert!(
        std::env::var("GRANARY_REQUIRE_VULKAN").map_or(true, |v| v != "1"),
        "no Vulkan device and GRANARY_REQUIRE_VULKAN=1 requires one: {why}"
    );
    eprintln!("SKIPPED: no Vulkan driver ({why}); this test checked nothing");
}
