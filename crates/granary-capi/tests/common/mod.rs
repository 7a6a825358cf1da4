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
    example_archive_with(None)
}

/// [`example_archive_bytes`] with, beside each pipeline with unspecialized colour output, its
/// whole `rgba8unorm` variant labelled `LABEL@rgba8unorm` (what `harvest --whole-variants`
/// archives for `"expand_unspecialized": {"formats": ["rgba8unorm"]}`); returns the bytes and
/// the labels of the pipelines that have a variant.
pub fn example_archive_with_variants_bytes() -> (Vec<u8>, Vec<String>) {
    use granary::descriptor::{Blend, ColorWrites, TextureFormat};
    let expansion = granary::script::Expansion {
        formats: vec![TextureFormat::Rgba8unorm],
        blend: Blend::Off,
        write_mask: ColorWrites::ALL,
    };
    let mut expanded = Vec::new();
    let bytes = example_archive_with(Some((&expansion, &mut expanded)));
    (bytes, expanded)
}

fn example_archive_with(mut expand: Option<(&granary::script::Expansion, &mut Vec<String>)>) -> Vec<u8> {
    let script = Script::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/renderer/pipelines.json"))
        .expect("example script");
    let compiler = Compiler::new(CompilerOptions::default());
    let mut descriptors = Vec::new();
    for p in script.pipelines {
        let desc = p.descriptor.expect("valid");
        let label = desc.label().expect("labelled").to_string();
        if let Some((e, names)) = expand.as_mut() {
            if let Some(variants) = e.variants(&desc, &label) {
                descriptors.extend(variants.expect("expands"));
                names.push(label);
            }
        }
        descriptors.push(desc);
    }
    // One entry per key, with every label (a variant may equal a pipeline of the script).
    let mut entries: Vec<WriteEntry> = Vec::new();
    for desc in descriptors {
        let label = desc.label().expect("labelled").to_string();
        let entry = compiler.compile(&desc).expect("compiles");
        match entries.iter_mut().find(|w| w.entry.key == entry.key) {
            Some(w) => w.labels = w.labels.iter().cloned().chain([label]).collect::<Vec<_>>().into(),
            None => entries.push(WriteEntry { entry, labels: vec![label].into(), binaries: vec![] }),
        }
    }
    granary::archive::encode(&entries, &granary::archive::portable_meta())
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
