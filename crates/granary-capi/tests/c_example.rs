//! The C API from C: `examples/warm.c` compiled by the system C compiler (`cc`, or `$CC`)
//! against `include/granary.h` and the static library cargo built for this test
//! (`libgranary_capi.a` beside the test binary's folder), linked with `-lvulkan`, and run on
//! the bundled example's archive, once pumping on its own thread and once with two worker
//! threads: every pipeline ready, nothing failed, the statistics consistent. Under
//! `GRANARY_VALIDATE=1` the program runs under the Khronos validation layer and must see no
//! message outside `GRANARY_VALIDATE_EXPECT`.
//!
//! Without a Vulkan driver (or without Vulkan's headers and `libvulkan.so`: Debian
//! `libvulkan-dev`) it prints `SKIPPED` and passes, unless `GRANARY_REQUIRE_VULKAN=1`.
//! Also: the header alone compiles as C99 and as C++11 with every warning an error.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The folder cargo put this crate's libraries in (`target/debug`): the test binary lives in
/// its `deps/`.
fn target_profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent().and_then(Path::parent).expect("target/PROFILE/deps/TEST").to_path_buf()
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

/// Whether a compiler's output says Vulkan's development files are missing.
fn lacks_vulkan_sdk(stderr: &str) -> bool {
    stderr.contains("vulkan/vulkan.h") || stderr.contains("-lvulkan")
}

/// Compiles `examples/warm.c`; `None` (after the skip rule) without Vulkan's headers.
fn build_example(out: &Path) -> Option<PathBuf> {
    // `cargo test` builds the staticlib into `target/PROFILE/deps/`; only `cargo build` copies
    // it up to `target/PROFILE/`, where an older copy may lie: take the newer of the two.
    let profile = target_profile_dir();
    let candidates = [profile.join("deps/libgranary_capi.a"), profile.join("libgranary_capi.a")];
    let modified = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let lib = candidates.iter().filter(|p| p.is_file()).max_by_key(|p| modified(p)).unwrap_or_else(|| {
        panic!("the crate's staticlib is missing: neither {} nor {}", candidates[0].display(), candidates[1].display())
    });
    let exe = out.join("warm");
    let output = Command::new(cc())
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join("examples/warm.c"))
        .arg(lib)
        .args(["-lvulkan", "-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{}`: {e}", cc()));
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        if lacks_vulkan_sdk(&stderr) {
            common::no_driver(format!("no Vulkan headers or libvulkan.so (Debian: libvulkan-dev): {stderr}"));
            return None;
        }
        panic!("examples/warm.c does not compile:\n{stderr}");
    }
    Some(exe)
}

/// The `key=value` pairs of the output line starting with `prefix`.
fn values(stdout: &str, prefix: &str) -> std::collections::BTreeMap<String, u64> {
    let line =
        stdout.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no `{prefix}` line in:\n{stdout}"));
    line[prefix.len()..]
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().unwrap_or_else(|_| panic!("`{k}={v}` in `{line}`"))))
        .collect()
}

#[test]
fn the_c_example_warms_every_pipeline_pumping_and_with_workers() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let archive = dir.path().join("renderer.granary");
    std::fs::write(&archive, common::example_archive_bytes()).expect("write the archive");
    let Some(exe) = build_example(dir.path()) else { return };
    for workers in [None, Some("2")] {
        let mut run = Command::new(&exe);
        run.arg(&archive);
        if let Some(n) = workers {
            run.args(["--workers", n]);
        }
        let output = run.output().expect("run the C example");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() == Some(77) {
            common::no_driver(stdout.trim());
            return;
        }
        assert!(output.status.success(), "warm.c failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}", output.status);
        println!("{stdout}");
        let warmup = values(&stdout, "warmup:");
        let loader = values(&stdout, "loader:");
        let tickets = values(&stdout, "tickets:");
        let pipelines = stdout
            .lines()
            .find_map(|l| l.split("; ").nth(1)?.split(' ').next()?.parse::<u64>().ok())
            .expect("the pipeline count on the `device:` line");
        assert_eq!(pipelines, 335, "the bundled example");
        assert_eq!(warmup["requested"], pipelines, "{stdout}");
        assert_eq!(warmup["ready"], pipelines, "{stdout}");
        assert_eq!((warmup["failed"], warmup["absent"], warmup["pending"]), (0, 0, 0), "{stdout}");
        // The second request_prefix call asked for every pipeline again.
        assert_eq!(warmup["deduplicated"], pipelines, "{stdout}");
        assert_eq!((tickets["ready"], tickets["failed"], tickets["absent"]), (pipelines, 0, 0), "{stdout}");
        assert_eq!((loader["failed"], loader["not_found"]), (0, 0), "{stdout}");
        assert_eq!(loader["from_binaries"] + loader["cache_hits"] + loader["compiled"], pipelines, "{stdout}");
        if std::env::var("GRANARY_VALIDATE").is_ok_and(|v| v == "1") {
            assert_eq!(values(&stdout, "validation:")["unexpected"], 0, "{stdout}\n{stderr}");
        }
        // A ticket granary did not issue, a label and a key the archive does not hold.
        assert_eq!(values(&stdout, "checks:")["failed"], 0, "{stdout}\n{stderr}");
        // The log callback saw the loader being made.
        assert!(stderr.contains("granary info: granary_loader_create:"), "{stderr}");
    }
}

#[test]
fn the_header_compiles_as_c99_and_as_cpp11_without_warnings() {
    let header = crate_dir().join("include/granary.h");
    let mut compilers = vec![(cc(), vec!["-x", "c", "-std=c99", "-pedantic"])];
    if Command::new("c++").arg("--version").output().is_ok_and(|o| o.status.success()) {
        compilers.push(("c++".to_string(), vec!["-x", "c++", "-std=c++11", "-pedantic"]));
    }
    for (compiler, flags) in compilers {
        let output = Command::new(&compiler)
            .args(&flags)
            .args(["-Wall", "-Wextra", "-Werror", "-fsyntax-only"])
            .arg(&header)
            .output()
            .unwrap_or_else(|e| panic!("cannot run `{compiler}`: {e}"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() && lacks_vulkan_sdk(&stderr) {
            common::no_driver(format!("no Vulkan headers (Debian: libvulkan-dev): {stderr}"));
            return;
        }
        assert!(output.status.success(), "{compiler} {flags:?} on granary.h:\n{stderr}");
    }
}

/// The after-update sidecar from C: the example archive has no section for any device, so
/// the first run requests every pipeline at low priority and writes the sidecar when the last
/// is done; the second run reads it and has nothing to write (pumping, then with workers).
#[test]
fn the_c_example_writes_the_sidecar_once_and_reads_it_next_time() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let archive = dir.path().join("renderer.granary");
    std::fs::write(&archive, common::example_archive_bytes()).expect("write the archive");
    let Some(exe) = build_example(dir.path()) else { return };
    let sidecar = dir.path().join("renderer.sidecar");
    let run = |extra: &[&str]| {
        let output = Command::new(&exe).arg(&archive).args(extra).arg("--sidecar").arg(&sidecar).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if output.status.code() == Some(77) {
            common::no_driver(stdout.trim());
            return None;
        }
        assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        Some(values(&stdout, "sidecar:"))
    };
    let Some(first) = run(&[]) else { return };
    assert_eq!((first["status"], first["requested"]), (1, 335), "absent, every pipeline requested: {first:?}");
    assert!(first["written_bytes"] > 0, "{first:?}");
    assert_eq!(std::fs::metadata(&sidecar).unwrap().len(), first["written_bytes"] + 72);
    let second = run(&["--workers", "2"]).expect("a driver");
    assert_eq!((second["status"], second["requested"]), (2, 0), "loaded, nothing needed: {second:?}");
    assert_eq!(second["read_bytes"], first["written_bytes"]);
    // Damaged: refused (status 4), never handed to the driver, and written again.
    let mut bad = std::fs::read(&sidecar).unwrap();
    bad[80] ^= 1;
    std::fs::write(&sidecar, &bad).unwrap();
    let third = run(&["--workers", "2"]).expect("a driver");
    assert_eq!((third["status"], third["requested"]), (4, 335), "{third:?}");
    assert!(third["written_bytes"] > 0);
}

/// The use record from C (`GranaryLoaderOptions::record_path`): every pipeline the program
/// polled is recorded once, at its first `try_get`, and the label and key it asked for that the
/// archive lacks are recorded as misses; the file reads back whole.
#[test]
fn the_c_example_records_every_pipeline_it_used_and_what_it_missed() {
    use granary_archive::record::{read_record, Event};
    let dir = tempfile::tempdir().expect("temporary folder");
    let archive = dir.path().join("renderer.granary");
    std::fs::write(&archive, common::example_archive_bytes()).expect("write the archive");
    let Some(exe) = build_example(dir.path()) else { return };
    let record = dir.path().join("renderer.record");
    let output = Command::new(&exe).arg(&archive).args(["--workers", "2", "--record"]).arg(&record).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.status.code() == Some(77) {
        common::no_driver(stdout.trim());
        return;
    }
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let read = read_record(&record).expect("the record");
    assert_eq!(read.damaged_tail, None);
    let used = read.events.iter().filter(|e| matches!(e, Event::Used { .. })).count();
    let missed = read.events.iter().filter(|e| matches!(e, Event::Missed { .. })).count();
    assert_eq!(used, 335, "each polled pipeline once");
    assert!(missed >= 1, "the unknown label and key: {:?}", read.events.iter().rev().take(3).collect::<Vec<_>>());
}
