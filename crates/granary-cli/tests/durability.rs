//! Durability through the binary: a harvest in which every pipeline failed exits 1, says in
//! its text and `--json` summary that it left the good archive as it was, and leaves it so.
//! (Archive permissions, and the summary and files of such a harvest in every mode, are
//! library behaviour: `granary/tests/durability.rs`.)

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::EXAMPLE;
use granary::archive::Archive;
use std::path::Path;
use std::process::Command;

fn harvest(script: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["harvest", script.to_str().unwrap(), "-q", "-o", out.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap()
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
            assert_eq!(s["archive_pipelines"].as_u64(), Some(Archive::read(&out).unwrap().len() as u64));
        } else {
            let text = String::from_utf8_lossy(&o.stderr);
            assert!(text.contains("every pipeline failed") && text.contains("left as it was"), "{text}");
        }
    }
    // With no archive to protect, the failed harvest still writes its (empty) archive.
    let fresh = dir.path().join("fresh.granary");
    let o = harvest(&broken, &fresh, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(Archive::read(&fresh).unwrap().len(), 0);
}
