//! Layer 2 — the pipelines script (JSON) to and from descriptors.
//!
//! The format is specified in docs/FORMAT.md. Invariants:
//! - Unknown fields are errors; every error names the file and the JSON path.
//! - A problem in one library or pipeline is kept with that entry; the rest still load.
//! - Library paths resolve relative to the script's folder.
//! - Every script granary writes is written by [`mod@write`] (version, field names, layouts).

mod error;
mod expand;
mod lazy;
mod load;
mod native;
mod raw;
pub mod recorded;
pub mod write;

pub use error::ScriptError;
pub use expand::{Expanded, Expansion, MAX_VARIANTS};
pub use lazy::LazyScript;
pub use load::{LineIndex, Script, ScriptPipeline};
pub use raw::SCRIPT_VERSION;
pub use write::script_json;
