//! Exports of granary's pipelines into other tools' formats.
//!
//! [`mtl4`]: the JSON pipelines script that Metal 4's `MTL4PipelineDataSetSerializer` writes
//! and Xcode's `metal-tt` reads to build a binary archive offline (docs/FORMAT.md §5).
pub mod mtl4;
