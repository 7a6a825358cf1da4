//! The workload under test and its single-thread reference: the script loaded (or generated),
//! pipelines the device rejects on one thread left out, and the reference archive every mode's
//! final archive is compared with.

use super::{StressError, StressOptions};
use crate::workload::{seed_scale, SeedScaleOptions};
use granary::archive::{encode, portable_meta, DeviceIdentity, WriteEntry};
use granary::backend::Backend;
use granary::capture::{Capture, CaptureMode};
use granary::compiler::{CompileError, Compiler};
use granary::descriptor::{PipelineDescriptor, PipelineKey};
use granary::script::Script;
use serde::Serialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The device of a run with a device backend, and what its archives must show.
pub(crate) struct DeviceExpect {
    /// The device's identity, as the backend records it.
    pub identity: DeviceIdentity,
    /// Pipelines whose binary set must carry the LIBRARY flag.
    pub libraries: HashSet<PipelineKey>,
}

impl DeviceExpect {
    /// Whether the device captures driver binaries (else: empty sets and cache data).
    pub fn captures_binaries(&self) -> bool {
        !self.identity.binary_global_key.is_empty()
    }
}

/// The pipelines under test and their single-thread reference archive.
pub(crate) struct Workload {
    pub pipelines: Vec<PipelineDescriptor>,
    /// The reference archive as written: with its device section and cache data.
    pub reference: Vec<u8>,
    /// The reference without device data ([`strip`]).
    pub reference_stripped: Vec<u8>,
    pub unique_functions: u64,
    pub dir: PathBuf,
    pub backend: Option<Arc<dyn Backend>>,
    pub device: Option<DeviceExpect>,
    /// Pipelines of the script the device rejected on a single thread (left out).
    pub rejected: Rejected,
}

/// Pipelines the device backend rejected on a single thread (an unsupported sample count or
/// format): they are left out of the workload.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Rejected {
    /// How many.
    pub count: usize,
    /// The first one's error.
    pub first: Option<String>,
}

impl Workload {
    /// A compiler on the run's backend (shared by every compiler of the run).
    pub(crate) fn compiler(&self, capture: Option<Arc<Capture>>, threads: usize) -> Compiler {
        compiler(capture, threads, self.backend.clone())
    }
    /// Pipelines created on the device so far (whole pipelines and libraries).
    pub(crate) fn driver_creates(&self) -> u64 {
        self.backend.as_ref().and_then(|b| b.report()).map_or(0, |r| r.pipelines_created + r.libraries_created)
    }
}

pub(crate) fn compiler(capture: Option<Arc<Capture>>, threads: usize, backend: Option<Arc<dyn Backend>>) -> Compiler {
    let options = crate::spirv_options(threads, capture);
    match backend {
        Some(b) => Compiler::with_backend(options, b),
        None => Compiler::new(options),
    }
}

/// What `capture` holds now, encoded as `write_archive` would write it: its entries with their
/// device binaries and the device caches of its backends.
pub(crate) fn encode_capture(capture: &Capture) -> Vec<u8> {
    let mut meta = portable_meta();
    meta.device_caches = capture.device_caches().unwrap_or_default();
    encode(&capture.snapshot().entries, &meta)
}

/// `entries` without device data: no binary sets, no caches. Comparable run to run even
/// where driver binaries are not reproducible.
pub(crate) fn strip(entries: &[WriteEntry]) -> Vec<u8> {
    let entries: Vec<WriteEntry> = entries.iter().map(|e| WriteEntry { binaries: Vec::new(), ..e.clone() }).collect();
    encode(&entries, &portable_meta())
}

pub(super) fn load(opts: &StressOptions, dir: &Path) -> Result<Workload, StressError> {
    let script_path = match &opts.script {
        Some(p) => p.clone(),
        None => {
            let n = opts.pipelines.max(1);
            let gen = SeedScaleOptions {
                pipelines: n,
                vertex_functions: (n / 2).max(1),
                max_run: (n / 4).clamp(1, 1000),
                seed: opts.seed,
            };
            seed_scale(&gen, &dir.join("workload"))?.script
        }
    };
    let script = Script::load(&script_path)?;
    let all: Vec<PipelineDescriptor> = script.pipelines.into_iter().filter_map(|p| p.descriptor.ok()).collect();
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let c = compiler(Some(capture.clone()), 1, opts.backend.clone());
    let mut failed = 0;
    let mut first_error = None;
    let mut identity = None;
    let mut libraries = HashSet::new();
    let mut pipelines = Vec::with_capacity(all.len());
    let mut rejected = Rejected::default();
    for p in all {
        match c.compile_detailed(&p) {
            // A state the device does not support (a sample count, a format) is a property of
            // the device, not a race: such pipelines leave the workload, counted.
            Err(e @ CompileError::Device { .. }) => {
                rejected.count += 1;
                rejected.first.get_or_insert_with(|| e.to_string());
            }
            Err(e) => {
                failed += 1;
                first_error.get_or_insert_with(|| e.to_string());
            }
            Ok(o) => {
                if let Some(b) = o.binaries {
                    identity.get_or_insert_with(|| (*b.device).clone());
                }
                if p.needs_libraries() {
                    libraries.insert(o.entry.key);
                }
                pipelines.push(p);
            }
        }
    }
    if failed > 0 {
        return Err(StressError::Unclean(failed, first_error.unwrap_or_default()));
    }
    let device = match &opts.backend {
        None => None,
        Some(b) if pipelines.is_empty() => {
            return Err(StressError::NoDevice(format!("{} (the workload is empty)", b.name())))
        }
        Some(b) => match identity {
            Some(identity) => Some(DeviceExpect { identity, libraries }),
            None => return Err(StressError::NoDevice(b.name().into())),
        },
    };
    // Stage functions of the rejected pipelines were compiled too: count the kept ones' alone.
    let unique_functions = if rejected.count == 0 {
        c.stats().functions_compiled
    } else {
        let f = compiler(None, 1, None);
        pipelines.iter().filter(|p| f.compile(p).is_ok()).count();
        f.stats().functions_compiled
    };
    Ok(Workload {
        reference: encode_capture(&capture),
        reference_stripped: strip(&capture.snapshot().entries),
        unique_functions,
        rejected,
        pipelines,
        dir: dir.to_path_buf(),
        backend: opts.backend.clone(),
        device,
    })
}
