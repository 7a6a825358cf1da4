//! What the C API's integration tests share: the bundled example as an archive, and the
//! skip rule of the workspace's Vulkan tests.

#![allow(dead_code)] // each test file uses part of it

use std::path::Path;

/// The bundled example (`examples/renderer/pipelines.json`, 335 pipelines) harvested with the
/// `none` backend: SPIR-V, layouts and render states, no device section (so the loader
/// compiles every pipeline).
pub fn example_archive_bytes() -> Vec<u8> {
    harvest_example(false).0
}

/// The bundled example harvested as `granary harvest --whole-variants` does with the `none`
/// backend, its script given `"expand_unspecialized": {"formats": ["rgba8unorm"]}`: beside each
/// pipeline with unspecialized colour output, its whole variant `LABEL@rgba8unorm`. Returns
/// the archive's bytes and the labels of the pipelines that have a variant.
pub fn example_archive_with_variants_bytes() -> (Vec<u8>, Vec<String>) {
    harvest_example(true)
}

/// The example harvested (with its script's `expand_unspecialized` and `--whole-variants`
/// when `variants`): the archive's bytes and the labels that have a `@rgba8unorm` variant.
fn harvest_example(variants: bool) -> (Vec<u8>, Vec<String>) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/renderer");
    let mut text = std::fs::read_to_string(example.join("pipelines.json")).expect("example script");
    if variants {
        text = text.replacen('{', "{\"expand_unspecialized\": {\"formats\": [\"rgba8unorm\"]},", 1);
    }
    let shaders = format!("\"path\": \"{}/shaders/", example.display());
    let dir = tempfile::tempdir().expect("tempdir");
    let (script, out) = (dir.path().join("pipelines.json"), dir.path().join("example.granary"));
    std::fs::write(&script, text.replace("\"path\": \"shaders/", &shaders)).expect("write script");
    let options = granary::harvest::HarvestOptions {
        threads: 2,
        whole_variants: variants,
        ..granary::harvest::HarvestOptions::new(script, &out)
    };
    let summary = granary::harvest::harvest(&options, &|_| {}).expect("harvest");
    assert!(summary.failed == 0 && summary.whole_variants == variants, "{summary:?}");
    assert!(!variants || summary.expanded > 0, "{summary:?}");
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
