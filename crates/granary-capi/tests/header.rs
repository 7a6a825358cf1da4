//! `include/granary.h` is what cbindgen writes from the crate today (the check `.ci/run` makes,
//! here too when cbindgen 0.24.3, the version the header is generated with, is installed;
//! otherwise `SKIPPED`).

use std::path::Path;
use std::process::Command;

#[test]
fn the_committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let version = Command::new("cbindgen").arg("--version").output();
    let version = match version {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => {
            eprintln!("SKIPPED: no cbindgen (Debian: apt-get install cbindgen); the header was not compared");
            return;
        }
    };
    if version != "cbindgen 0.24.3" {
        eprintln!("SKIPPED: {version}, not cbindgen 0.24.3 (what include/granary.h is generated with)");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let fresh = out.path().join("granary.h");
    let run = Command::new("cbindgen")
        .arg("--config")
        .arg(dir.join("cbindgen.toml"))
        .arg("--output")
        .arg(&fresh)
        .arg(dir.join("src/lib.rs"))
        .output()
        .expect("run cbindgen");
    assert!(run.status.success(), "cbindgen failed:\n{}", String::from_utf8_lossy(&run.stderr));
    let committed = std::fs::read_to_string(dir.join("include/granary.h")).unwrap();
    let fresh = std::fs::read_to_string(&fresh).unwrap();
    assert!(
        committed == fresh,
        "crates/granary-capi/include/granary.h is stale: regenerate it with\n  cbindgen --config \
         crates/granary-capi/cbindgen.toml --output crates/granary-capi/include/granary.h \
         crates/granary-capi/src/lib.rs"
    );
}
