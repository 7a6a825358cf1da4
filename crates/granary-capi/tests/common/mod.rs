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
