#![warn(missing_docs)]
// `unsafe` only where the crate maps a file (`reader`) or calls the Vulkan driver (the
// `vulkan` modules that say so); every block carries a `// SAFETY:` argument.
#![deny(unsafe_code)]
//! The run-time side of [granary](https://crates.io/crates/granary): open a pipeline archive,
//! look pipelines up by label or by key, read their stage outputs, verify the file. This is the
//! crate a game or engine ships. It depends on no shader compiler, no CLI stack and no
//! serialization framework, no proc-macro: just `xxhash-rust` (the checksums) and `memmap2`
//! (zero-copy reads); with the `vulkan` feature also `vulkanalia` (still no proc-macro), for
//! `vulkan::PipelineLoader`, which creates the archive's pipelines on a Vulkan device from
//! their driver binaries.
//!
//! The offline tool (`granary harvest`) compiles every pipeline an application uses and writes
//! one archive; at run time the application finds each pipeline by the label its script gave
//! it, or by the 128-bit pipeline key the tool exported (`granary ls --keys` writes a JSON
//! table, a Rust module or a C header of label → key).
//!
//! # Example
//!
//! ```
//! use granary_archive::{Archive, PipelineKey, Target};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let bytes = granary_archive::__doc_example_archive();
//! // `bytes` is an archive (here made in memory; usually `Archive::open(path)` maps a file).
//! let archive = Archive::from_bytes(bytes)?;
//! archive.verify()?; // optional: checks every byte (lookups check what they touch anyway)
//!
//! // By the label the pipelines script gave it…
//! let pipeline = archive.lookup_label("post/tonemap")?.expect("archived");
//! // …or by the key the offline tool exported.
//! let key = PipelineKey::from_hex("000000000000000000000000000000a1").expect("32 hex digits");
//! assert_eq!(archive.get(key)?.map(|p| p.key()), Some(pipeline.key()));
//!
//! for stage in pipeline.stages()? {
//!     // The SPIR-V words, checked against their content hash before they are returned.
//!     let spirv: &[u8] = stage.output(Target::Spirv)?.expect("SPIR-V was harvested");
//!     println!("{} '{}': {} bytes of SPIR-V", stage.stage, stage.entry_point, spirv.len());
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Driver binaries
//!
//! An archive may also hold, per device, the driver binaries of each pipeline
//! (`VK_KHR_pipeline_binary`) or the device's `VkPipelineCache` data. They are valid only on a
//! device whose [`DeviceIdentity`] is equal in every field:
//! [`Archive::binaries_for`] finds that device's section, or says what the archive was built
//! for and what differs ([`DeviceMismatch`]: "built for X, this device is Y: …", so the
//! application compiles from the archive's SPIR-V instead; [`Archive::device_for`] is the same
//! lookup answering `None`), and
//! [`DeviceRef::binaries`] gives a pipeline's binaries in the driver's order, each checked
//! against its content hash before it is returned; [`DeviceRef::caches`] gives the cache
//! blobs.
//!
//! ```no_run
//! # fn f(archive: &granary_archive::Archive, me: &granary_archive::DeviceIdentity,
//! #      pipeline: &granary_archive::PipelineRef<'_>) -> Result<(), granary_archive::ArchiveError> {
//! match archive.binaries_for(me)? {
//!     Ok(device) => {
//!         if let Some(set) = device.binaries(pipeline)? {
//!             for binary in set.iter() {
//!                 let binary = binary?; // key and bytes, hash-checked
//!                 let _ = (binary.key, binary.data); // hand to vkCreatePipelineBinariesKHR
//!             }
//!         }
//!     }
//!     // "built for NVIDIA H200 … 580.159.04 …, this device is …: driver_version … vs …"
//!     Err(mismatch) => eprintln!("compiling from SPIR-V: {mismatch}"),
//! }
//! # Ok(()) }
//! ```
//!
//! Each pipeline also carries its state, in one of two forms ([`PipelineRef::state_kind`]): a
//! render pipeline of the portable form its fixed-function state ([`PipelineRef::state`], a
//! [`RenderState`]); a pipeline of Vulkan's native form — render with any stages, or compute —
//! the whole create-info state the application gave ([`PipelineRef::native_state`], a
//! [`native::NativePipeline`]), and each of its stages the application's
//! `VkSpecializationInfo` ([`StageRef::specialization`]). With the stages and the layout, that
//! is everything needed to create the driver pipeline again. With the `vulkan` feature, the
//! `vulkan` module's `PipelineLoader` does that on the application's own `VkDevice`, from the
//! binaries where the device matches and from the SPIR-V otherwise.
//!
//! # Contracts
//!
//! **Thread safety.** [`Archive`] is `Send + Sync`; every method takes `&self` and may be
//! called from any number of threads at once.
//!
//! **Untrusted input.** An archive may come from anywhere (it ships with a game). The reader
//! checks every offset and length before use (overflow-checked, so 32-bit targets are safe),
//! caps every count, never panics and never allocates from a length it read; a damaged
//! archive gives [`ArchiveError::Corrupt`] saying what is wrong and at which byte offset. A
//! *memory-mapped* archive ([`Archive::open`]) also assumes nobody truncates or rewrites the
//! file in place while it is mapped (granary replaces files only by rename); where that can
//! happen, use [`Archive::read`] or [`Archive::from_bytes`].
//!
//! # Features
//!
//! - `write` — the deterministic writer, durable replacement, merge, salvage and the harvest
//!   journal: what the offline tool needs, and what an application that writes its own
//!   archives at run time needs. Off by default, so a game builds only the reader.
//! - `serde` — `Serialize`/`Deserialize` for the stored enums ([`ShaderStage`], [`Target`],
//!   [`PipelineKind`], [`TextureFormat`], …: each spelled by its one name, `name()`) and the
//!   render-state types, in the pipelines script's JSON spelling.
//! - `vulkan` — the run-time loader (`vulkan::PipelineLoader`): create pipelines on a device
//!   from the archive's driver binaries, pipeline-cache data or SPIR-V.
//! - `capture` — implies `vulkan`; the harvest half of the Vulkan layer (capturing binaries
//!   and cache data), for granary's Vulkan backend. A game never needs it.
//! - `sign` — Ed25519 archive signatures (docs/FORMAT.md §1.12): `Archive::open_verified`
//!   opens an archive only if a key the game pins signed it; with `write` also
//!   `sign_archive`. Off by default ([`Archive::signature`], which says who signed, is always
//!   there). Adds `ed25519-dalek` (without default features) and its dependencies; on x86_64
//!   that includes one proc-macro, `curve25519-dalek-derive`.
//! - `fault` — granary's test-only fault injection (`GRANARY_FAULT=slow-write:MS`). Never enable
//!   it in a shipped build.
//!
//! The format is specified byte by byte in the repository's `docs/FORMAT.md`.

#[macro_use]
mod stored_enum;

mod blob;
mod device;
mod entry;
mod error;
#[cfg(feature = "write")]
mod fault;
mod format;
mod key;
mod layout;
pub mod native;
#[allow(unsafe_code)] // memory-maps the archive (`Archive::open`)
mod reader;
pub mod record;
mod render_state;
#[cfg(feature = "sign")]
mod sign;
#[cfg(all(feature = "sign", feature = "write"))]
mod signing;
mod types;
#[cfg(feature = "vulkan")]
pub mod vulkan;

#[cfg(feature = "write")]
mod durable;
#[cfg(feature = "write")]
mod journal;
#[cfg(feature = "write")]
mod merge;
#[cfg(feature = "write")]
mod salvage;
#[cfg(feature = "write")]
mod writer;

// The reader: what a game calls.
pub use blob::Blob;
/// Flag of a [`BinarySet`]: its binaries are a library pipeline's (linked at run time with
/// a fragment-output part), not a complete pipeline's. Public because the capture side
/// (granary's Vulkan backend) sets it and tools print it.
pub use device::BINARY_SET_LIBRARY;
pub use device::{BinarySet, DeviceBinaries, DeviceBinary, DeviceCache, DeviceFeatures, DeviceIdentity};
pub use entry::{PipelineEntry, StageEntry, StateKind, TargetOutputs};
pub use error::ArchiveError;
pub use key::{
    checksum64, content_hash, ContentHash, Encoder, KeyContext, PipelineKey, StageKey, KEY_ENCODING_VERSION,
};
pub use layout::{
    BindingKind, Immediates, LayoutBinding, LayoutError, MslClass, PipelineLayout, SlotAssignment, StageBindingMap,
    StageMask,
};
pub use reader::{
    Archive, BinaryRef, BinarySetRef, DeviceMismatch, DeviceRef, PipelineRef, SharedBinaries, SignatureInfo, StageRef,
    VerifyReport,
};
pub use render_state::codec::StateError;
pub use render_state::walk::StateSink;
pub use render_state::{
    Blend, BlendComponent, BlendFactor, BlendOp, BlendState, ColorAttachment, ColorWrites, CompareFunction, CullMode,
    DepthStencilState, FrontFace, IndexFormat, MaybeSpecialized, PrimitiveState, RenderState, ScalarKind, StencilFace,
    StencilOp, StencilState, StepMode, TextureFormat, Topology, VertexAttribute, VertexBufferLayout, VertexFormat,
};
#[cfg(feature = "sign")]
pub use sign::PublicKey;
pub use stored_enum::UnknownName;
pub use types::{PipelineKind, ShaderStage, Target, TargetSet, TARGET_COUNT};

/// The first eight bytes of every granary archive (`GRANARY\0`, docs/FORMAT.md §1.1): how a
/// tool tells an archive from another file before replacing it.
pub use format::MAGIC;
/// Byte positions of the file format (docs/FORMAT.md §1.2–1.3), for tools and tests that
/// address one section-table row or one device record of a file (to damage exactly one byte,
/// or to skip the header); the writer tier only, as a game never needs them.
#[cfg(feature = "write")]
pub use format::{align_up, Section, DEVICE_RECORD, FIXED_HEADER, HEADER_LEN, SECTION_ROW};

// The writer tier (feature `write`): what the offline tool calls.
#[cfg(all(feature = "sign", feature = "write"))]
pub use signing::{sign_archive, sign_bytes, write_key_pair, SecretKey};

#[cfg(feature = "write")]
pub use durable::{remove_stale_temporaries, write_atomic, write_atomic_with};
#[cfg(feature = "write")]
pub use entry::WriteEntry;
#[cfg(feature = "write")]
pub use format::ShardRecord;
/// The most pipeline-cache blobs the writer keeps per device (the harvester keeps the
/// smallest content hashes up to it, so what it writes is what the writer accepts).
#[cfg(feature = "write")]
pub use format::MAX_CACHES_PER_DEVICE;
#[cfg(feature = "write")]
pub use journal::{
    journal_path, remove_journal, replay_journal, DamagedTail, Journal, JournalReplay, JOURNAL_HEADER_LEN,
};
#[cfg(feature = "write")]
pub use merge::{
    check_unique_labels, merge, write_entries, write_shard_entries, writer_options_difference,
    writer_options_differences, writer_options_parts,
};
#[cfg(feature = "write")]
pub use salvage::{salvage, NothingRecovered, SalvageReport, SectionCut};
#[cfg(feature = "write")]
pub use writer::{check_device_data, encode, prepare, prepare_shard, ArchiveMeta, PreparedArchive};

/// A small archive for the crate-level example (two compute pipelines, SPIR-V only). Not API.
#[doc(hidden)]
#[cfg(feature = "write")]
pub fn __doc_example_archive() -> Vec<u8> {
    // A minimal valid SPIR-V header (magic, version 1.0, generator, bound, schema).
    let words: [u32; 5] = [0x0723_0203, 0x0001_0000, 0, 1, 0];
    let spirv: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let entry = |key: u128, label: &str| __compute_entry(key, key, spirv.clone(), label.to_string());
    encode(&[entry(0xa1, "post/tonemap"), entry(0xb2, "post/bloom")], &ArchiveMeta::new("example"))
}

/// A pipeline entry for examples and tests: one compute stage `main` (stage key `stage`, SPIR-V
/// output `spirv`), pipeline key `key`, one label, no layout, no binaries.
#[doc(hidden)]
#[cfg(feature = "write")]
pub fn __compute_entry(key: u128, stage: u128, spirv: Vec<u8>, label: String) -> WriteEntry {
    let mut outputs = TargetOutputs::default();
    outputs.0[Target::Spirv as usize] = Some(Blob::new(spirv));
    let stage = StageEntry {
        key: StageKey(stage),
        stage: ShaderStage::Compute,
        entry_point: "main".into(),
        outputs,
        specialization: None,
    };
    WriteEntry {
        entry: std::sync::Arc::new(PipelineEntry {
            key: PipelineKey(key),
            kind: PipelineKind::Compute,
            stages: vec![stage],
            layout: None,
            state: None,
        }),
        labels: vec![label].into(),
        binaries: Vec::new(),
    }
}
