#![warn(missing_docs)]
// `unsafe` only in the modules that call native code directly (`os`, every libc call; the
// fault facility's crashes; `frontend::tool::spirv_tools`, SPIRV-Tools' C interface), each
// block with a `// SAFETY:` argument.
#![deny(unsafe_code)]
//! Granary compiles every GPU pipeline an application will use, from all cores at once, and
//! captures the results into one offline archive that the application reads at run time.
//!
//! The pieces: [`compiler::Compiler`] compiles [`descriptor::PipelineDescriptor`]s through the
//! naga front end ([`frontend`]); an attached [`capture::Capture`] records every result;
//! [`capture::Capture::write_archive`] writes an [`archive`] that [`archive::Archive`] reads
//! back at run time. [`harvest`] drives all of it from a pipelines [`script`].
//!
//! # Example
//!
//! ```
//! use granary::archive::{Archive, LookupDescriptor};
//! use granary::capture::{Capture, CaptureMode};
//! use granary::compiler::{Compiler, CompilerOptions};
//! use granary::descriptor::*;
//! use std::sync::Arc;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let lib = Library::wgsl("post", "@compute @workgroup_size(8) fn main() {}");
//! let desc = PipelineDescriptor::Compute(ComputePipelineDescriptor {
//!     label: Some("post/main".into()),
//!     compute: FunctionDescriptor::library(lib, "main"),
//!     layout: None,
//! });
//!
//! let capture = Arc::new(Capture::new(CaptureMode::Outputs));
//! let compiler = Arc::new(Compiler::new(CompilerOptions { capture: Some(capture.clone()), ..Default::default() }));
//! // Any number of threads may compile, and write the capture, at the same time.
//! let worker = { let (c, d) = (compiler.clone(), desc.clone()); std::thread::spawn(move || c.compile(&d).map(|_| ())) };
//! worker.join().expect("no panic")?;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("game.granary");
//! capture.write_archive(&path)?;
//!
//! // At run time:
//! let archive = Archive::open(&path)?;
//! let by_label = archive.lookup_label("post/main")?.expect("archived");
//! let by_desc = archive.lookup(&desc)?.expect("archived");
//! assert_eq!(by_label.key(), by_desc.key());
//! let spirv = by_desc.stages()?[0].output(Target::Spirv)?.expect("SPIR-V output");
//! assert_eq!(&spirv[..4], &0x0723_0203u32.to_le_bytes());
//! # Ok(())
//! # }
//! ```
//!
//! # Contracts
//!
//! **Thread safety.** Every operation on `Compiler`, `Capture` and `Archive` may be called
//! from any number of threads at once, including `write_archive` while compiles run. Nothing
//! is externally synchronized. Pipelines that share a stage function compile it once; the
//! other callers wait for that result, and no result is freed while anyone can still reach it
//! (results are `Arc`s). The public types are `Send + Sync`.
//!
//! **Snapshot semantics.** An archive written by `write_archive` holds every pipeline whose
//! compile call returned before `write_archive` began, may hold ones still in flight, and
//! never holds a partial entry. Writing never blocks compile calls for longer than the copy
//! of one shard of the capture's index.
//!
//! **Determinism.** The bytes of an archive are a pure function of the set of entries (with
//! their labels) it holds and the format version: thread count, scheduling, flush history and
//! merge order do not change them.
//!
//! **Durability.** Archives are written to a temporary file in the same folder, flushed,
//! renamed over the target, and the folder is flushed: a process killed at any instant leaves
//! the previous archive intact.
//!
//! **Exactness.** Merging, resuming and accepting a worker's answer are exact or refused:
//! one key with different bytes, or one label naming two pipelines, is a conflict to report
//! ([`archive::ArchiveError::Conflict`]), never "first one wins"; a resumed archive equals a
//! fresh harvest of the script as it is now.
//!
//! **Containment.** A panic inside naga is caught where it happens and stored as that
//! library's or stage function's error (computed once, like any result); a panic elsewhere in
//! a compile is [`compiler::CompileError::Panic`]. It costs the pipelines that depend on the
//! failing piece and nothing else. Crashes, hangs and compiles that grow without end need
//! worker processes (`harvest --isolate`: its timeout and memory watchdog kill the worker and
//! fail that pipeline); in process, a library over [`frontend::MAX_LIBRARY_BYTES`] (by
//! default) is refused before naga runs on it, failing only the pipelines that use it.
//!
//! **Untrusted input.** [`archive::Archive`] checks every offset and length before use, caps
//! every count, never panics and never allocates from an unchecked length; a damaged archive
//! gives an error that says what is wrong and at which byte offset. A *memory-mapped* archive
//! ([`archive::Archive::open`]) additionally assumes nobody truncates or rewrites the file in
//! place while it is mapped (granary replaces files only by rename); otherwise read it into
//! memory with [`archive::Archive::read`].
pub mod archive;
pub mod backend;
pub mod capture;
pub mod compiler;
pub mod contain;
pub mod descriptor;
pub mod export;
// The GRANARY_FAULT test facility: private, and inert without the `fault` feature.
#[allow(unsafe_code)] // the test-only crashes (abort, segfault) it injects
mod fault;
pub mod frontend;
pub mod harvest;
pub mod import;
// CPU-time and memory measurements for reports; public for granary-lab's benchmark only.
#[doc(hidden)]
pub mod measure;
// Every libc call (clocks, resource usage, the isolated worker's descriptors): the crate's one
// OS module.
#[cfg_attr(unix, allow(unsafe_code))] // libc calls, each with its SAFETY argument
mod os;
// The `:line:column` suffix of script and shader errors (layers 2 and 3 share it).
mod position;
pub mod script;
// Exposed for the loom models in tests/loom.rs (they check the shipped primitives) and for
// granary's own tools (granary-lab); not API: no stability promise.
#[doc(hidden)]
pub mod sync;
