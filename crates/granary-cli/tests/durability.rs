//! Durability without surprises: the permissions archives get, and a harvest in which every
//! pipeline failed leaving a good archive alone.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::EXAMPLE;
use granary::archive::Archive;
use std::path::Path;
use std::process::Command;

fn granary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_granary"))
}

fn harvest(script: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    granary()
        .args(["harvest", script.to_str().unwrap(), "-q", "-o", out.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap()
}

/// The process umask, read without changing it (`/proc/self/status`, which every process
/// spawned by this one inherits).
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
    let o = harvest(Path::new(EXAMPLE), &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let umask = umask();
    assert_eq!(mode(&out), 0o666 & !umask, "a new archive under umask {umask:03o}");

    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).unwrap();
    let o = harvest(Path::new(EXAMPLE), &out, &["--flush-every", "50"]);
    assert!(o.status.success());
    assert_eq!(mode(&out), 0o640, "a rewrite keeps the archive's mode");
    let o = harvest(Path::new(EXAMPLE), &out, &["--resume"]);
    assert!(o.status.success());
    assert_eq!(mode(&out), 0o640, "so does a resumed harvest");

    // Library writes (merge, prune, salvage all go through it) behave the same.
    let merged = dir.path().join("merged.granary");
    let o = granary().args(["merge", out.to_str().unwrap(), "-o", merged.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success());
    assert_eq!(mode(&merged), 0o666 & !umask);
    std::fs::set_permissions(&merged, std::fs::Permissions::from_mode(0o604)).unwrap();
    let o = granary().args(["merge", out.to_str().unwrap(), "-o", merged.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success());
    assert_eq!(mode(&merged), 0o604);
}

/// Issue 7 item 5: a harvest in which every pipeline failed does not replace a good archive
/// with an empty one; it says so and exits 1.
#[test]
fn a_harvest_where_every_pipeline_failed_leaves_the_archive_alone() {
    let dir = common::tempdir();
    let out = dir.path().join("good.granary");
    let o = harvest(Path::new(EXAMPLE), &out, &[]);
    assert!(o.status.success());
    let good = std::fs::read(&out).unwrap();
    let broken = common::copy_example_as(dir.path(), "broken", Some("this is not a shader {{{\n"));

    for extra in [&[][..], &["--resume"][..], &["--flush-every", "5", "--json"][..]] {
        let o = harvest(&broken, &out, extra);
        assert_eq!(o.status.code(), Some(1), "{extra:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(std::fs::read(&out).unwrap(), good, "{extra:?}: the good archive is untouched");
        if extra.contains(&"--json") {
            let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(s["kept_existing_archive"], true, "{s}");
            assert_eq!(s["succeeded"], 0);
            assert_eq!(s["failed"], s["pipelines"]);
            assert_eq!(s["bytes_written"], 0, "nothing was written");
            assert_eq!(s["archive_pipelines"].as_u64(), Some(Archive::read(&out).unwrap().len() as u64));
        } else {
            let text = String::from_utf8_lossy(&o.stderr);
            assert!(text.contains("every pipeline failed") && text.contains("left as it was"), "{text}");
        }
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
    let o = harvest(&broken, &fresh, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(Archive::read(&fresh).unwrap().len(), 0);
}
