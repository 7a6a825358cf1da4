//! The validation layer in the library-level Vulkan tests.
//!
//! With `GRANARY_VALIDATE=1` (set by `.ci/run`) every test opens its driver under
//! `VK_LAYER_KHRONOS_validation` and ends with [`assert_clean`]: any WARNING or ERROR message
//! whose id `GRANARY_VALIDATE_EXPECT` (comma-separated) does not list fails the test, with
//! every message printed. Without the layer, a test that needs it fails under
//! `GRANARY_VALIDATE=1` or in CI (`CI` set) and prints `SKIPPED` elsewhere.

#![allow(dead_code)] // each test file uses part of it

use granary_archive::vulkan::validation::ValidationLog;
use granary_archive::vulkan::VulkanError;
use std::sync::Arc;

/// `GRANARY_VALIDATE=1`: open every driver under the validation layer.
pub fn requested() -> bool {
    std::env::var("GRANARY_VALIDATE").is_ok_and(|v| v == "1")
}

/// A missing layer is a failure, not a skip: under `GRANARY_VALIDATE=1` or in CI.
pub fn layer_required() -> bool {
    requested() || std::env::var_os("CI").is_some()
}

/// The message ids `GRANARY_VALIDATE_EXPECT` lists.
pub fn expected() -> Vec<String> {
    std::env::var("GRANARY_VALIDATE_EXPECT")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Says that a test skipped for want of a Vulkan driver (`why`); a failure instead under
/// `GRANARY_REQUIRE_VULKAN=1`. The caller then returns without checking anything.
pub fn no_driver(why: impl std::fmt::Display) {
    assert!(
        std::env::var("GRANARY_REQUIRE_VULKAN").map_or(true, |v| v != "1"),
        "no Vulkan device and GRANARY_REQUIRE_VULKAN=1 requires one: {why}"
    );
    eprintln!("SKIPPED: no Vulkan driver ({why}); this test checked nothing");
}

/// Fails (naming the package) when the driver could not be opened because validation was
/// asked for and the layer is missing; returns for any other error (the caller's skip rules
/// apply).
pub fn fail_if_layer_missing(e: &VulkanError) {
    if let VulkanError::NoValidationLayer { .. } = e {
        panic!("GRANARY_VALIDATE=1 needs the validation layer: {e}");
    }
}

/// The messages of `log` that fail a test: every WARNING and ERROR whose id is not expected.
pub fn unexpected(log: &ValidationLog) -> Vec<String> {
    let expected = expected();
    log.messages()
        .into_iter()
        .filter(|m| !expected.contains(&m.id))
        .map(|m| format!("{} {} in '{}': {}", m.severity.name(), m.id, m.pipeline, m.text))
        .collect()
}

/// How many messages of one id a failure prints whole.
const SHOWN_PER_ID: usize = 3;

/// Under `GRANARY_VALIDATE=1`: the driver was validated (`log` is `Some`) and the layer
/// reported nothing unexpected. Call it after every Vulkan object is dropped (the layer
/// reports leaks and destruction errors then). A failure lists the counts per message id,
/// then the first few messages of each id.
pub fn assert_clean(log: Option<Arc<ValidationLog>>) {
    if !requested() {
        return;
    }
    let log = log.expect("GRANARY_VALIDATE=1 but the driver was opened without validation");
    let expected = expected();
    let counts: Vec<String> = log
        .counts()
        .into_iter()
        .filter(|(id, _)| !expected.contains(id))
        .map(|(id, c)| format!("  {id}: {} errors, {} warnings", c.errors, c.warnings))
        .collect();
    if counts.is_empty() {
        return;
    }
    let mut shown = std::collections::BTreeMap::<String, usize>::new();
    let mut examples = Vec::new();
    for m in log.messages().into_iter().filter(|m| !expected.contains(&m.id)) {
        let n = shown.entry(m.id.clone()).or_default();
        *n += 1;
        if *n <= SHOWN_PER_ID {
            examples.push(format!("  {} {} in '{}': {}", m.severity.name(), m.id, m.pipeline, m.text));
        }
    }
    panic!(
        "the validation layer reported unexpected messages (GRANARY_VALIDATE_EXPECT lists the ids a test \
         expects); by id:\n{}\nthe first {SHOWN_PER_ID} of each:\n{}",
        counts.join("\n"),
        examples.join("\n")
    );
}

/// The backend on the first device (under the layer when [`requested`]), or `None` without a
/// driver after printing `SKIPPED` (a failure under `GRANARY_REQUIRE_VULKAN=1`, and when the
/// layer is missing but required).
pub fn backend() -> Option<granary_vulkan::VulkanBackend> {
    let options = granary_vulkan::VulkanOptions { validate: requested(), ..Default::default() };
    match granary_vulkan::VulkanBackend::open(&options) {
        Ok(b) => Some(b),
        Err(e) => {
            fail_if_layer_missing(&e);
            no_driver(&e);
            None
        }
    }
}
