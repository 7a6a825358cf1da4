//! The invariants, in words ([`checks`], for the report) and as checks of the archives a mode
//! wrote: an intermediate write ([`check_write`]), the final archive against the reference
//! ([`check_final`]) and its device section ([`check_device`]).

use super::reference::{strip, DeviceExpect, Workload};
use super::Mode;
use granary::archive::{Archive, BINARY_SET_LIBRARY};
use granary::descriptor::PipelineKey;
use std::path::Path;

/// The invariants `mode` checks, in words (`device`: the device of a device backend).
pub(super) fn checks(mode: Mode, device: Option<&DeviceExpect>) -> Vec<&'static str> {
    let mut c = vec!["no thread panics", "every pipeline compiles"];
    match device {
        None => {
            c.push("the final archive holds every pipeline once and is byte-identical to a single-thread reference")
        }
        Some(d) => {
            c.push("every pipeline is created on the device exactly once per iteration (one compile per pipeline over all compiler generations)");
            c.push("the final archive without its device data (binaries, caches) holds every pipeline once and is byte-identical to the single-thread reference without it");
            c.push("the final archive has one device section, for the backend's device, with exactly one binary set per pipeline");
            c.push("a binary set has the LIBRARY flag exactly when the pipeline has an unspecialized colour format, blend or write mask");
            if d.captures_binaries() {
                c.push("every binary set holds driver binaries (device captures pipeline binaries; bytes differ run to run, so the device section is not compared with the reference)");
            } else {
                c.push("every binary set is empty (device keeps cache data)");
                c.push("the whole final archive, device section and cache data included, is byte-identical to the single-thread reference");
            }
        }
    }
    match mode {
        Mode::SharedVertex => c.push("each stage function is compiled exactly once"),
        Mode::FlushDuringCompile => c.push("every archive written during compilation verifies and holds every pipeline whose compile returned before the write began"),
        Mode::Rotate | Mode::PerThread => c.push("every piece verifies and holds every pipeline compiled into its capture; merging the pieces gives the reference"),
        Mode::SeedMix => c.push("every flush and piece verifies and honours the snapshot contract; merging the pieces gives the reference"),
    }
    c
}

/// Checks an archive written during compilation: it verifies and holds every key in `before`.
pub(crate) fn check_write(path: &Path, before: &[PipelineKey], violations: &mut Vec<String>) -> bool {
    let r = Archive::read(path).and_then(|a| a.verify().map(|_| a));
    match r {
        Err(e) => {
            violations.push(format!("{}: intermediate archive does not verify: {e}", path.display()));
            false
        }
        Ok(a) => {
            let missing = before.iter().filter(|k| !matches!(a.get(**k), Ok(Some(_)))).count();
            if missing > 0 {
                violations.push(format!(
                    "{}: {missing} pipelines whose compile returned before the write began are missing",
                    path.display()
                ));
            }
            missing == 0
        }
    }
}

/// Checks the final bytes against the reference: byte for byte without a device backend or
/// where the device keeps cache data; with device data stripped otherwise; and, with a device
/// backend, the device section on its own ([`check_device`]).
pub(crate) fn check_final(w: &Workload, bytes: &[u8], what: &str, violations: &mut Vec<String>) {
    let whole = w.device.as_ref().is_none_or(|d| !d.captures_binaries());
    let archive = Archive::from_bytes(bytes.to_vec());
    let detail = |a: &Result<Archive, granary::archive::ArchiveError>| match a {
        Ok(a) => format!("{} pipelines vs {} expected", a.len(), w.pipelines.len()),
        Err(e) => format!("unreadable: {e}"),
    };
    if whole && bytes != w.reference.as_slice() {
        violations
            .push(format!("{what}: final archive differs from the single-thread reference ({})", detail(&archive)));
    }
    let Some(device) = &w.device else { return };
    let a = match archive {
        Ok(a) => a,
        Err(_) => {
            if !whole {
                violations.push(format!("{what}: final archive is unreadable ({})", detail(&archive)));
            }
            return;
        }
    };
    match a.entries() {
        Ok(entries) if strip(&entries) == w.reference_stripped => {}
        Ok(_) => violations.push(format!(
            "{what}: final archive without device data differs from the single-thread reference without it ({} \
             pipelines vs {} expected)",
            a.len(),
            w.pipelines.len()
        )),
        Err(e) => violations.push(format!("{what}: final archive entries unreadable: {e}")),
    }
    check_device(&a, device, what, violations);
}

/// Checks the device section of a final archive: exactly one device, the expected one; every
/// pipeline has a binary set for it, non-empty exactly when the device captures binaries,
/// with the LIBRARY flag exactly for the pipelines that need a library.
pub(crate) fn check_device(a: &Archive, d: &DeviceExpect, what: &str, violations: &mut Vec<String>) {
    let devices = match a.devices() {
        Ok(v) => v,
        Err(e) => {
            violations.push(format!("{what}: device sections unreadable: {e}"));
            return;
        }
    };
    if devices.len() != 1 {
        violations.push(format!("{what}: final archive has {} device sections, expected 1", devices.len()));
    }
    let dev = match a.device_for(&d.identity) {
        Ok(Some(dev)) => dev,
        Ok(None) => {
            violations.push(format!("{what}: final archive has no device section for {}", d.identity.describe()));
            return;
        }
        Err(e) => {
            violations.push(format!("{what}: device section unreadable: {e}"));
            return;
        }
    };
    let (mut missing, mut wrong_content, mut wrong_flag, mut unreadable) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for p in a.iter() {
        let Ok(p) = p else {
            unreadable += 1;
            continue;
        };
        match dev.binaries(&p) {
            Err(_) => unreadable += 1,
            Ok(None) => missing.push(p.key()),
            Ok(Some(set)) => {
                if set.is_empty() == d.captures_binaries() {
                    wrong_content.push(p.key());
                }
                if (set.flags() & BINARY_SET_LIBRARY != 0) != d.libraries.contains(&p.key()) {
                    wrong_flag.push(p.key());
                }
            }
        }
    }
    let first = |v: &[PipelineKey]| v.first().map(|k| format!("{:032x}", k.0)).unwrap_or_default();
    if unreadable > 0 {
        violations.push(format!("{what}: {unreadable} pipelines or binary sets unreadable"));
    }
    if !missing.is_empty() {
        violations.push(format!(
            "{what}: {} pipelines have no binary set for the device (first {})",
            missing.len(),
            first(&missing)
        ));
    }
    if !wrong_content.is_empty() {
        violations.push(format!(
            "{what}: {} binary sets are {} although the device {} (first {})",
            wrong_content.len(),
            if d.captures_binaries() { "empty" } else { "non-empty" },
            if d.captures_binaries() { "captures pipeline binaries" } else { "keeps cache data" },
            first(&wrong_content)
        ));
    }
    if !wrong_flag.is_empty() {
        violations.push(format!(
            "{what}: {} binary sets have the LIBRARY flag wrong for their pipeline (first {})",
            wrong_flag.len(),
            first(&wrong_flag)
        ));
    }
}
