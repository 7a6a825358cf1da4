//! Every output is checked before anything compiles (issue 23): an archive, trace or report
//! that cannot be written fails the harvest at once (exit 2, the path and the reason named),
//! and an existing file that is not a granary archive is never replaced without `--force`.
//!
//! "Before anything compiles" is observed, not timed: every harvest here carries
//! `GRANARY_FAULT=abort:LABEL,reached:DIR` for the example's first pipeline, so a harvest that
//! reached a compile would abort and leave a marker in DIR.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

fn granary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_granary"))
}

struct Run {
    dir: tempfile::TempDir,
    script: PathBuf,
}

impl Run {
    fn new() -> Run {
        let dir = common::tempdir();
        let script = common::copy_example(&dir.path().join("example"));
        std::fs::create_dir(dir.path().join("reached")).unwrap();
        Run { dir, script }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `granary harvest SCRIPT -o OUT ARGS…` with the abort fault armed on the first pipeline.
    fn harvest(&self, out: &Path, args: &[&str]) -> Output {
        let text = std::fs::read_to_string(&self.script).unwrap();
        let script: serde_json::Value = serde_json::from_str(&text).unwrap();
        let first = script["pipelines"][0]["label"].as_str().unwrap().to_string();
        std::process::Command::new(granary())
            .arg("harvest")
            .arg(&self.script)
            .arg("-o")
            .arg(out)
            .args(["-j1", "--check-outputs", "off"])
            .args(args)
            .env("GRANARY_FAULT", format!("abort:{first},reached:{}", self.path("reached").display()))
            .output()
            .unwrap()
    }

    /// Asserts that `o` exited 2 before any compile, with every one of `words` on stderr.
    fn refused(&self, o: &Output, words: &[&str]) {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        for w in words {
            assert!(err.contains(w), "{w:?} not in: {err}");
        }
        assert_eq!(std::fs::read_dir(self.path("reached")).unwrap().count(), 0, "a compile ran: {err}");
        // One line: the OS error is not printed twice.
        assert_eq!(err.matches("os error").count(), err.contains("os error") as usize, "{err}");
    }
}

#[test]
fn an_output_that_cannot_be_written_fails_before_any_compile() {
    let r = Run::new();
    let o = r.harvest(&r.path("missing/o.granary"), &[]);
    r.refused(&o, &["the output archive", "missing", "does not exist"]);

    // A folder given as the output.
    std::fs::create_dir(r.path("folder")).unwrap();
    r.refused(&r.harvest(&r.path("folder"), &[]), &["is a folder"]);

    // The trace and the report, each in a missing folder.
    let out = r.path("o.granary");
    let trace = r.path("nope/t.json");
    r.refused(&r.harvest(&out, &["--trace", trace.to_str().unwrap()]), &["the trace", "does not exist"]);
    let report = r.path("nope/r.json");
    r.refused(&r.harvest(&out, &["--report", report.to_str().unwrap()]), &["the report", "does not exist"]);
    assert!(!out.exists(), "nothing is written");
}

#[cfg(target_os = "linux")]
#[test]
fn a_folder_that_refuses_new_files_fails_before_any_compile() {
    // sysfs refuses new files to every user, root included (CI runs as root, where a
    // read-only mode would not stop a write).
    let r = Run::new();
    r.refused(&r.harvest(Path::new("/sys/o.granary"), &[]), &["the output archive", "refuses a new file"]);
}

#[test]
fn a_file_that_is_not_an_archive_is_replaced_only_with_force() {
    let r = Run::new();
    let before = std::fs::read(&r.script).unwrap();
    // The script as its own output: refused, with or without --force.
    r.refused(&r.harvest(&r.script, &[]), &["is not a granary archive", "--force"]);
    r.refused(&r.harvest(&r.script, &["--force"]), &["the script and the output archive are the same file"]);
    assert_eq!(std::fs::read(&r.script).unwrap(), before, "the script is untouched");

    // Another file that is not an archive: refused, then replaced with --force.
    let notes = r.path("notes.txt");
    std::fs::write(&notes, "keep me\n").unwrap();
    r.refused(&r.harvest(&notes, &[]), &["notes.txt", "is not a granary archive"]);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "keep me\n");
    let o = std::process::Command::new(granary())
        .arg("harvest")
        .arg(&r.script)
        .arg("-o")
        .arg(&notes)
        .args(["--force", "--check-outputs", "off", "-q"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(granary::archive::Archive::open(&notes).is_ok());

    // An existing archive is replaced without --force, as every harvest does.
    let o = std::process::Command::new(granary())
        .arg("harvest")
        .arg(&r.script)
        .arg("-o")
        .arg(&notes)
        .args(["--check-outputs", "off", "-q"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
}
