//! Durability without surprises, in the library: the permissions archives get (a harvest, a
//! flushing or resumed rewrite, and the archive writer that merge, prune and salvage use), and
//! a harvest in which every pipeline failed leaving a good archive alone. (Moved from
//! granary-cli's tests, which keep the exit code and message of that harvest.)

mod common;

use common::{harvest_options, EXAMPLE};
use granary::archive::{self, Archive};
use granary::harvest::{harvest, HarvestOptions, HarvestSummary};
use std::path::Path;

fn run(opts: &HarvestOptions) -> HarvestSummary {
    harvest(opts, &|_| {}).expect("harvest")
}

/// The process umask, read without changing it (`/proc/self/status`).
#[cfg(unix)]
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("Umask:")).expect("a Umask: line");
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).expect("an octal umask")
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A new archive gets `0666 & !umask`, like any file the user creates; rewriting an archive
/// keeps the mode the user gave it. (It used to be 0600 whatever the umask.)
#[cfg(unix)]
#[test]
fn archives_get_the_permissions_a_normal_file_would() {
    use std::os::unix::fs::PermissionsExt;
    let dir = common::tempdir();
    let out = dir.path().join("perm.granary");
    let opts = harvest_options(Path::new(EXAMPLE), &out);
    assert_eq!(run(&opts).failed, 0);
    let umask = umask();
    assert_eq!(mode(&out), 0o666 & !umask, "a new archive under umask {umask:03o}");

    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).unwrap();
    assert_eq!(run(&HarvestOptions { flush_every: Some(50), ..opts.clone() }).failed, 0);
    assert_eq!(mode(&out), 0o640, "a rewrite keeps the archive's mode");
    assert_eq!(run(&HarvestOptions { resume: true, ..opts }).failed, 0);
    assert_eq!(mode(&out), 0o640, "so does a resumed harvest");

    // The archive writer (merge, prune, salvage all go through it) behaves the same.
    let merged = dir.path().join("merged.granary");
    let write_merge = || {
        let (entries, meta) = archive::merge(&[Archive::read(&out).unwrap()]).unwrap();
        archive::write_entries(&merged, &entries, &meta).unwrap();
    };
    write_merge();
    assert_eq!(mode(&merged), 0o666 & !umask);
    std::fs::set_permissions(&merged, std::fs::Permissions::from_mode(0o604)).unwrap();
    write_merge();
    assert_eq!(mode(&merged), 0o604);
}

/// Issue 7 item 5: a harvest in which every pipeline failed does not replace a good archive
/// with an empty one, and says so in its summary.
#[test]
fn a_harvest_where_every_pipeline_failed_leaves_the_archive_alone() {
    let dir = common::tempdir();
    let out = dir.path().join("good.granary");
    assert_eq!(run(&harvest_options(Path::new(EXAMPLE), &out)).failed, 0);
    let good = std::fs::read(&out).unwrap();
    let broken = common::copy_example_as(dir.path(), "broken", Some("this is not a shader {{{\n"));

    let opts = harvest_options(&broken, &out);
    for (what, opts) in [
        ("plain", opts.clone()),
        ("resume", HarvestOptions { resume: true, ..opts.clone() }),
        ("flushing", HarvestOptions { flush_every: Some(5), ..opts }),
    ] {
        let s = run(&opts);
        assert_eq!(std::fs::read(&out).unwrap(), good, "{what}: the good archive is untouched");
        assert!(s.kept_existing_archive, "{what}: {s:?}");
        assert_eq!(s.succeeded, 0, "{what}");
        assert_eq!(s.failed, s.pipelines, "{what}");
        assert_eq!(s.bytes_written, 0, "{what}: nothing was written");
        assert_eq!(s.archive_pipelines, Archive::read(&out).unwrap().len(), "{what}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with('.') || n.ends_with(".journal")
        })
        .collect();
    assert!(leftovers.is_empty(), "no temporary file or journal left: {leftovers:?}");

    // With no archive to protect, the failed harvest still writes its (empty) archive.
    let fresh = dir.path().join("fresh.granary");
    let s = run(&harvest_options(&broken, &fresh));
    assert!(!s.kept_existing_archive);
    assert_eq!(Archive::read(&fresh).unwrap().len(), 0);
}
