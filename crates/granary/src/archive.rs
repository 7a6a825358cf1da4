//! Layer 5 — the archive. The file format (deterministic writer, bounds-checked reader,
//! verify, merge, salvage, journal) lives in the `granary-archive` crate, which is what an
//! application ships; this module re-exports it and adds what needs the offline library:
//! [`LookupDescriptor`] (lookup by full descriptor) and [`portable_meta`] (the header of
//! archives this build's front end writes). Specified byte by byte in docs/FORMAT.md.
//!
//! It sits above the front end (layer 3), whose writer options [`portable_meta`] names, and
//! below the capture (layer 6), which writes archives.
//!
//! Invariants (kept by `granary-archive`):
//! - [`encode`] is a pure function of the set of `(entry, labels, device binaries)` it is given
//!   and of its meta (writer options, device pipeline caches as a set).
//! - Files are only ever replaced whole ([`write_atomic`]); an archive on disk is complete.
//! - The reader never panics, never reads out of bounds and never allocates from a length it
//!   read from the file; a damaged file yields [`ArchiveError::Corrupt`] with the offset.

pub use granary_archive::{
    check_device_data, BinaryRef, BinarySet, BinarySetRef, DeviceBinaries, DeviceBinary, DeviceCache, DeviceIdentity,
    DeviceRef, BINARY_SET_LIBRARY,
};
pub use granary_archive::{
    check_unique_labels, encode, merge, prepare, remove_stale_temporaries, salvage, write_atomic, write_atomic_with,
    write_entries, write_shard_entries, Archive, ArchiveError, ArchiveMeta, PipelineRef, PreparedArchive,
    SalvageReport, ShardRecord, StageRef, VerifyReport, WriteEntry,
};
pub use granary_archive::{
    BindingKind, Immediates, LayoutBinding, LayoutError, MslClass, PipelineLayout, SlotAssignment, StageBindingMap,
    StageMask,
};

/// The archive file's byte positions (re-exported from `granary-archive`, whose `format`
/// module is private): for tools and tests that address one section-table row.
pub mod format {
    pub use granary_archive::{align_up, Section, DEVICE_RECORD, FIXED_HEADER, HEADER_LEN, SECTION_ROW};
}

/// The harvest journal (re-exported from `granary-archive`, whose `journal` module is
/// private).
pub mod journal {
    pub use granary_archive::{
        journal_path, remove_journal, replay_journal, DamagedTail, Journal, JournalReplay, JOURNAL_HEADER_LEN,
    };
}

use crate::descriptor::PipelineDescriptor;

/// The header of archives written by this build's naga front end under the `default`
/// profile for SPIR-V (a [`crate::compiler::Compiler`]'s defaults): its writer options (which
/// every stage key was computed under) and no device.
pub fn portable_meta() -> ArchiveMeta {
    portable_meta_for(crate::frontend::Profile::default_profile(), crate::descriptor::TargetSet::SPIRV)
}

/// [`portable_meta`] for the device profile `profile` and the requested `targets` (both are
/// part of the writer options text).
pub fn portable_meta_for(profile: &crate::frontend::Profile, targets: crate::descriptor::TargetSet) -> ArchiveMeta {
    ArchiveMeta::new(&crate::frontend::targets::target_options_text(profile, targets))
}

/// Lookup by full descriptor: computes the descriptor's key under the archive's writer
/// options and finds it. (The run-time crate looks up by label or key only; computing a key
/// from a descriptor needs the offline library.)
pub trait LookupDescriptor {
    /// The pipeline `desc` compiles to, if archived.
    fn lookup(&self, desc: &PipelineDescriptor) -> Result<Option<PipelineRef<'_>>, ArchiveError>;
}

impl LookupDescriptor for Archive {
    fn lookup(&self, desc: &PipelineDescriptor) -> Result<Option<PipelineRef<'_>>, ArchiveError> {
        self.get(desc.key(&self.key_context()))
    }
}
