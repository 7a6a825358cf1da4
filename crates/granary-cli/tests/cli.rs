//! The `granary` binary end to end on the bundled example.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::EXAMPLE;
use granary::archive::Archive;
use granary::script::Script;
use std::path::{Path, PathBuf};
use std::process::Command;

fn granary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_granary")).args(args).output().expect("run granary")
}

fn harvest(out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let o = granary(&args);
    assert!(
        o.status.success(),
        "harvest failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    serde_json::from_slice(&o.stdout).expect("summary JSON")
}

/// `-j`, `--targets` and `--flush-every` reach the harvest and its summary. (That the bytes do
/// not depend on the thread count or on flushes is the library's: granary/tests/harvest.rs.)
#[test]
fn thread_target_and_flush_arguments_reach_the_harvest() {
    let dir = common::tempdir();
    let a = dir.path().join("j1.granary");
    let b = dir.path().join("j8.granary");
    let s1 = harvest(&a, &["-j", "1", "--targets", "spirv,msl"]);
    let s8 = harvest(&b, &["-j", "8", "--targets", "spirv,msl", "--flush-every", "25"]);
    assert_eq!(s1["failed"], 0);
    assert_eq!((s1["threads"].as_u64(), s8["threads"].as_u64()), (Some(1), Some(8)));
    assert_eq!(s8["targets"], s1["targets"]);
    assert!(s1["targets"].as_str().unwrap().contains("msl"), "{s1}");
    assert_eq!(s1["pipelines"], s8["pipelines"]);
    assert_eq!(s1["flushes"], 0, "no flush without --flush-every");
    assert!(s8["flushes"].as_u64().unwrap() >= 1, "flushes happened during the -j8 run");
    for out in [&a, &b] {
        let ar = Archive::read(out).unwrap();
        ar.verify().unwrap();
        assert_eq!(Some(ar.len() as u64), s1["pipelines"].as_u64());
    }
}

#[test]
fn ls_verify_extract_merge() {
    let dir = common::tempdir();
    let out = dir.path().join("r.granary");
    harvest(&out, &[]);
    let o = granary(&["ls", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success());
    let ls: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_sorted_pretty(&o.stdout);
    let first = &ls["entries"][0];
    let label = first["labels"][0].as_str().unwrap().to_string();
    let key = first["key"].as_str().unwrap().to_string();

    let o = granary(&["verify", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));

    let ex = dir.path().join("ex");
    for what in [&label, &key] {
        let o = granary(&["extract", out.to_str().unwrap(), what, "--target", "spirv", "-o", ex.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut files: Vec<PathBuf> = String::from_utf8_lossy(&o.stdout).lines().map(PathBuf::from).collect();
        // The last file is the pipeline's resource layout and binding map (JSON).
        let layout = files.pop().unwrap();
        assert!(layout.to_str().unwrap().ends_with(".layout.json"), "{}", layout.display());
        let l: serde_json::Value = serde_json::from_slice(&std::fs::read(&layout).unwrap()).unwrap();
        assert!(l["bindings"].is_array() && l["stages"].is_array(), "{l}");
        assert!(!files.is_empty());
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            assert_eq!(&bytes[..4], &0x0723_0203u32.to_le_bytes(), "SPIR-V magic in {}", f.display());
        }
    }
    let o = granary(&["extract", out.to_str().unwrap(), "no/such/pipeline"]);
    assert_eq!(o.status.code(), Some(2));

    let merged = dir.path().join("m.granary");
    let o = granary(&["merge", out.to_str().unwrap(), out.to_str().unwrap(), "-o", merged.to_str().unwrap()]);
    assert!(o.status.success());
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&merged).unwrap());

    // A damaged archive fails verify with exit status 1 and an offset.
    let mut bytes = std::fs::read(&out).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x40;
    let bad = dir.path().join("bad.granary");
    std::fs::write(&bad, bytes).unwrap();
    let o = granary(&["verify", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("offset 0x"));
}

#[test]
fn failures_are_reported_and_the_rest_lands() {
    let dir = common::tempdir();
    std::fs::write(dir.path().join("v.wgsl"), common::VS).unwrap();
    std::fs::write(dir.path().join("f.wgsl"), common::FS).unwrap();
    let script = r#"{"granary_script": 1,
      "libraries": [{"name": "v", "path": "v.wgsl"}, {"name": "f", "path": "f.wgsl"}, {"name": "missing", "path": "missing.wgsl"}],
      "pipelines": [
        {"label": "good", "compute": {"function": {"library": "f", "function": "cs"}}},
        {"label": "bad-entry", "compute": {"function": {"library": "f", "function": "fs"}}},
        {"label": "bad-lib", "compute": {"function": {"library": "missing", "function": "cs"}}},
        {"label": "depth", "render": {"vertex": {"library": "v", "function": "vs_depth"},
           "vertex_buffers": [{"stride": 12, "attributes": [{"location": 0, "format": "float32x3"}]}]}}
      ]}"#;
    let sp = dir.path().join("s.json");
    std::fs::write(&sp, script).unwrap();
    let out = dir.path().join("o.granary");
    let report = dir.path().join("report.json");
    let o =
        granary(&["harvest", sp.to_str().unwrap(), "-o", out.to_str().unwrap(), "--report", report.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(text.contains("harvested 2 of 4"), "{text}");
    let failures: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let f = failures.as_array().unwrap();
    assert_eq!(f.len(), 2);
    assert_eq!(f[0]["pipeline"], "bad-entry");
    assert_eq!(f[0]["kind"], "entry-point");
    assert!(f[0]["script_position"].as_str().unwrap().ends_with("s.json:5:9"), "{}", f[0]);
    assert!(text.contains("s.json:5:9: pipeline 'bad-entry'"), "{text}");
    assert_eq!(f[1]["phase"], "script");
    assert_eq!(Archive::open(&out).unwrap().len(), 2);

    let o = granary(&["harvest", "/nonexistent/s.json", "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read script"));
}

/// `ls --json` streams its document, and writes exactly what it wrote when it built it as one
/// `serde_json::Value`: pretty JSON with every object's keys sorted, ending in a newline. So
/// the bytes equal their own parse re-serialized (whose maps sort their keys).
fn assert_sorted_pretty(stdout: &[u8]) {
    let v: serde_json::Value = serde_json::from_slice(stdout).unwrap();
    let again = serde_json::to_string_pretty(&v).unwrap() + "\n";
    assert!(again.as_bytes() == stdout, "ls --json is not sorted, pretty JSON");
}

/// `granary ls --json | head` (a reader that closes the pipe early) stops quietly, without a
/// panic message, with the SIGPIPE-style status 141.
#[test]
fn closed_stdout_pipe_stops_quietly() {
    let dir = common::tempdir();
    let out = dir.path().join("r.granary");
    let ok = Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["harvest", EXAMPLE, "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(ok.status.success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["ls", "--json", out.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away at once
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(141), "{err}");

    // A reader that goes away in the middle of the streamed document (`| head -c 1000`; the
    // example's document is far larger than a pipe's buffer): the same.
    let mut child = Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["ls", "--json", out.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut head = [0u8; 1000];
    std::io::Read::read_exact(&mut stdout, &mut head).unwrap();
    assert!(head.starts_with(b"{\n  \"archive\": "), "{}", String::from_utf8_lossy(&head));
    drop(stdout);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(141), "{err}");
}

/// `ls --keys`: the label → key tables an application embeds, so the run-time crate can look
/// pipelines up without shader source. The JSON keys find the same pipelines as the labels;
/// the C header compiles and its two 64-bit halves are the key; the Rust module names each key.
#[test]
fn ls_keys_exports_tables_that_find_every_pipeline() {
    use granary::descriptor::PipelineKey;
    let dir = common::tempdir();
    let out = dir.path().join("r.granary");
    assert!(Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["harvest", EXAMPLE, "-o", out.to_str().unwrap()])
        .output()
        .unwrap()
        .status
        .success());
    let keys = |format: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_granary"))
            .args(["ls", out.to_str().unwrap(), "--keys", format])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let ar = Archive::open(&out).unwrap();
    let table: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&keys("json")).unwrap();
    assert_eq!(table.len(), Script::load(Path::new(EXAMPLE)).unwrap().pipelines.len());
    for (label, hex) in &table {
        let key = PipelineKey::from_hex(hex.as_str().unwrap()).expect("32 hex digits");
        let by_key = ar.get(key).unwrap().expect("found by key");
        assert_eq!(ar.lookup_label(label).unwrap().unwrap().key(), by_key.key(), "{label}");
    }

    let rust = keys("rust");
    for (label, hex) in &table {
        assert!(rust.contains(&format!("(\"{label}\", ")), "{label} missing from the Rust table");
        assert!(rust.contains(&format!("PipelineKey(0x{})", hex.as_str().unwrap())));
    }

    // The C header compiles, and a program using it prints the keys back.
    let header = dir.path().join("pipeline_keys.h");
    std::fs::write(&header, keys("c")).unwrap();
    let prog = dir.path().join("check.c");
    std::fs::write(
        &prog,
        "#include <stdio.h>\n#include \"pipeline_keys.h\"\nint main(void) {\n  for (unsigned i = 0; i < sizeof granary_pipeline_keys / sizeof *granary_pipeline_keys; i++)\n    printf(\"%s %016llx%016llx\\n\", granary_pipeline_keys[i].label, (unsigned long long)granary_pipeline_keys[i].hi, (unsigned long long)granary_pipeline_keys[i].lo);\n  return 0;\n}\n",
    )
    .unwrap();
    let exe = dir.path().join("check");
    let cc = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&prog)
        .output()
        .expect("a C compiler (cc) is needed");
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
    let printed = String::from_utf8(Command::new(&exe).output().unwrap().stdout).unwrap();
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), table.len());
    for line in lines {
        let (label, hex) = line.rsplit_once(' ').unwrap();
        assert_eq!(table[label].as_str().unwrap(), hex, "{label}");
    }
}

/// The bundled example's archive, pinned byte for byte (its length and XXH3-64): moving code
/// between crates, scheduling changes and refactors must not change a byte. A deliberate
/// format or naga-output change updates this value together with FORMAT.md's version or
/// TARGET_OPTIONS.
#[test]
fn example_archive_bytes_are_pinned() {
    let dir = common::tempdir();
    let out = dir.path().join("r.granary");
    let o = Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "-j", "3"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let bytes = std::fs::read(&out).unwrap();
    let sum = format!("{:016x}", granary::descriptor::key::checksum64(&bytes));
    assert_eq!((bytes.len(), sum.as_str()), (EXAMPLE_LEN, EXAMPLE_SUM));
}
const EXAMPLE_LEN: usize = 2_072_864;
const EXAMPLE_SUM: &str = "7243965bc10950ec";

/// Device sections (driver binaries, pipeline caches) survive `merge` and `salvage`, and
/// `ls` reports them.
#[test]
fn ls_merge_and_salvage_carry_device_sections() {
    use granary::archive::{self, BinarySet, DeviceBinaries, DeviceBinary, DeviceCache};
    use granary::descriptor::Blob;
    use std::sync::Arc;
    let dir = common::tempdir();
    let plain = dir.path().join("plain.granary");
    harvest(&plain, &[]);
    let ar = Archive::read(&plain).unwrap();
    let device = common::test_device("Test GPU", vec![2; 16]);
    let dictionary = DeviceBinary { key: vec![0xd1; 32], data: Blob::new(vec![0xd1; 5000]) };
    let mut entries = ar.entries().unwrap();
    for (i, w) in entries.iter_mut().enumerate() {
        let own = DeviceBinary {
            key: (i as u32 + 1).to_le_bytes().to_vec(),
            data: Blob::new((i as u32).to_le_bytes().repeat(25)),
        };
        w.binaries = vec![DeviceBinaries {
            device: device.clone(),
            set: Arc::new(BinarySet { flags: 0, pipeline_key: Vec::new(), binaries: vec![own, dictionary.clone()] }),
        }];
    }
    let mut meta = ar.meta().unwrap();
    meta.device_caches = vec![DeviceCache { device: device.clone(), data: Blob::new(vec![3; 77]) }];
    let with = dir.path().join("with.granary");
    archive::write_entries(&with, &entries, &meta).unwrap();

    // merge: the plain harvest and the one with binaries.
    let merged = dir.path().join("merged.granary");
    let o = granary(&["merge", plain.to_str().unwrap(), with.to_str().unwrap(), "-o", merged.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&merged).unwrap(), std::fs::read(&with).unwrap(), "merged = the archive with binaries");

    let o = granary(&["ls", merged.to_str().unwrap(), "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_sorted_pretty(&o.stdout);
    let n = entries.len();
    assert_eq!(v["devices"][0]["pipelines"], n);
    assert_eq!(v["devices"][0]["binary_bytes"], 100 * n + 5000, "the shared dictionary counted once");
    assert_eq!(v["devices"][0]["cache_bytes"], 77);
    assert!(v["devices"][0]["device"].as_str().unwrap().starts_with("Test GPU (vendor 0x10de"));
    assert_eq!(v["entries"][0]["devices"][0]["binaries"], 2);
    assert_eq!(v["entries"][0]["devices"][0]["bytes"], 5100);
    let o = granary(&["ls", merged.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("device Test GPU (vendor 0x10de, device 0x2335)"), "{text}");

    // salvage of an intact archive keeps every binary set and cache.
    let saved = dir.path().join("saved.granary");
    let o = granary(&["salvage", merged.to_str().unwrap(), "-o", saved.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(std::fs::read(&saved).unwrap(), std::fs::read(&with).unwrap());
}

/// A file cut before its pipeline table leaves no record to report lost: salvage still says
/// how much is missing, writes nothing (an empty archive would read as a salvage), and exits 2
/// naming the file and the byte where it ends.
#[test]
fn salvage_of_a_file_cut_before_its_pipeline_table_fails_and_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a.granary");
    harvest(&out, &["-j", "2"]);
    let bytes = std::fs::read(&out).unwrap();
    let a = Archive::read(&out).unwrap();
    let n = a.len();
    // The pipeline table's offset, from its section-table row (docs/FORMAT.md §1.2).
    let row = granary_archive::FIXED_HEADER
        + (granary_archive::Section::Pipelines as usize - 1) * granary_archive::SECTION_ROW;
    let table = u64::from_le_bytes(bytes[row + 8..row + 16].try_into().unwrap()) as usize;
    let cut = dir.path().join("cut.granary");
    std::fs::write(&cut, &bytes[..table]).unwrap();
    let saved = dir.path().join("saved.granary");
    let o = granary(&["salvage", cut.to_str().unwrap(), "-o", saved.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(!saved.exists(), "nothing recovered, nothing written");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!("bytes short of what its header declares (0 of {n} pipeline records present)")),
        "{text}"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "{}: corrupt archive at offset {table:#x}: the file ends at byte {table}",
            cut.display()
        )),
        "{err}"
    );
    let o = granary(&["salvage", cut.to_str().unwrap(), "-o", saved.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["missing_bytes"].as_u64(), Some((bytes.len() - table) as u64), "{v}");
    assert_eq!(v["pipeline_records_declared"].as_u64(), Some(n as u64));
    assert_eq!(v["nothing_recovered"]["offset"].as_u64(), Some(table as u64), "{v}");
    assert!(!saved.exists());
}

/// What the intact archive `b` says lies wholly before byte `cut`, read from its own records
/// (docs/FORMAT.md §1.1–1.2), not by salvage: the keys of the pipelines all of whose bytes do
/// (pipeline record, stage records, entry-point strings, and the index record and bytes of
/// every blob they reference), and per such pipeline the labels whose record and string do.
fn before_cut(b: &[u8], cut: usize) -> std::collections::BTreeMap<u128, std::collections::BTreeSet<String>> {
    use granary_archive::{Section, FIXED_HEADER, SECTION_ROW};
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    let section = |s: Section| {
        let row = FIXED_HEADER + (s as usize - 1) * SECTION_ROW;
        (u64_at(row + 8), u64_at(row + 16))
    };
    let (pipelines, plen) = section(Section::Pipelines);
    let (stages, _) = section(Section::Stages);
    let (strings, _) = section(Section::Strings);
    let (index, _) = section(Section::BlobIndex);
    let (data, _) = section(Section::BlobData);
    let (labels, llen) = section(Section::Labels);
    let blob_end =
        |k: usize| (index + 40 * k + 40).max(data + u64_at(index + 40 * k + 16) + u64_at(index + 40 * k + 24));
    let mut keys = Vec::new();
    let mut out = std::collections::BTreeMap::new();
    for i in 0..plen / 48 {
        let rec = pipelines + 48 * i;
        let key = u128::from_le_bytes(b[rec..rec + 16].try_into().unwrap());
        let mut end = rec + 48;
        let blobs = [u32_at(rec + 28), u32_at(rec + 32)];
        end = blobs.iter().filter(|k| **k != u32::MAX as usize).map(|k| blob_end(*k)).fold(end, usize::max);
        for j in u32_at(rec + 20)..u32_at(rec + 20) + u32_at(rec + 24) {
            let s = stages + 56 * j;
            end = end.max(s + 56).max(strings + u32_at(s + 20) + u32_at(s + 24));
            for field in [28, 32, 36, 40, 44] {
                if u32_at(s + field) != u32::MAX as usize {
                    end = end.max(blob_end(u32_at(s + field)));
                }
            }
        }
        keys.push(key);
        if end <= cut {
            out.insert(key, std::collections::BTreeSet::new());
        }
    }
    for r in 0..llen / 16 {
        let rec = labels + 16 * r;
        let (off, len) = (strings + u32_at(rec), u32_at(rec + 4));
        if (rec + 16).max(off + len) <= cut {
            if let Some(set) = out.get_mut(&keys[u32_at(rec + 8)]) {
                set.insert(String::from_utf8(b[off..off + len].to_vec()).unwrap());
            }
        }
    }
    out
}

/// Issue 23 item 9: the example's harvest cut 1 %, 10 %, 50 % and one byte short. Salvage
/// recovers exactly the pipelines whose bytes all lie before the cut (computed from the intact
/// file's records), each verifying and, with the labels that survived, byte for byte the
/// original: the salvaged file is the intact archive's entries restricted to them. Where none
/// does (the tables follow the blob data, so a cut of more than the tables loses them all) it
/// writes nothing and exits 2, naming the file and the byte where it ends.
#[test]
fn salvage_of_a_cut_harvest_recovers_exactly_the_pipelines_before_the_cut() {
    use granary::descriptor::PipelineKey;
    let dir = common::tempdir();
    let out = dir.path().join("a.granary");
    harvest(&out, &["--backend", "none"]);
    let full = std::fs::read(&out).unwrap();
    let intact = Archive::read(&out).unwrap();
    let n = full.len();
    let mut partial = false;
    for (name, cut) in [("1 %", n - n / 100), ("10 %", n - n / 10), ("50 %", n - n / 2), ("one byte", n - 1)] {
        let expected = before_cut(&full, cut);
        let damaged = dir.path().join(format!("cut-{cut}.granary"));
        std::fs::write(&damaged, &full[..cut]).unwrap();
        let saved = dir.path().join(format!("saved-{cut}.granary"));
        let o = granary(&["salvage", damaged.to_str().unwrap(), "-o", saved.to_str().unwrap(), "--json"]);
        let err = String::from_utf8_lossy(&o.stderr);
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{name}: {e}: {err}"));
        assert_eq!(r["recovered"].as_u64(), Some(expected.len() as u64), "{name} short: {r}");
        assert_eq!(r["missing_bytes"].as_u64(), Some((n - cut) as u64));
        if expected.is_empty() {
            assert_eq!(o.status.code(), Some(2), "{name}: {err}");
            assert!(!saved.exists(), "{name}: nothing recovered, nothing written");
            assert!(
                err.contains(&format!("{}: corrupt archive at offset {cut:#x}", damaged.display())),
                "{name}: {err}"
            );
            assert_eq!(r["nothing_recovered"]["offset"].as_u64(), Some(cut as u64));
            continue;
        }
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        partial |= expected.len() < intact.len();
        let s = Archive::read(&saved).unwrap();
        s.verify().unwrap();
        let keys: Vec<u128> = s.iter().map(|p| p.unwrap().key().0).collect();
        assert_eq!(keys, expected.keys().copied().collect::<Vec<_>>(), "{name}");
        let subset: Vec<_> = intact
            .entries()
            .unwrap()
            .into_iter()
            .filter_map(|mut w| {
                let labels = expected.get(&w.entry.key.0)?;
                w.labels = labels.iter().cloned().collect::<Vec<_>>().into();
                Some(w)
            })
            .collect();
        let reference = dir.path().join(format!("expected-{cut}.granary"));
        granary::archive::write_entries(&reference, &subset, &intact.meta().unwrap()).unwrap();
        assert!(
            std::fs::read(&saved).unwrap() == std::fs::read(&reference).unwrap(),
            "{name}: not the originals' bytes"
        );
        for key in expected.keys() {
            let (a, b) = (s.get(PipelineKey(*key)).unwrap().unwrap(), intact.get(PipelineKey(*key)).unwrap().unwrap());
            for (x, y) in a.stages().unwrap().iter().zip(b.stages().unwrap()) {
                for t in granary::descriptor::Target::ALL {
                    assert_eq!(x.output(t).unwrap(), y.output(t).unwrap(), "{name}: {key:032x}");
                }
            }
        }
    }
    assert!(partial, "one of the cuts recovers some pipelines but not all");
}

/// Issue 23: counts that have no meaning at 0 are refused, naming the option (exit 2), not run
/// with an undocumented meaning.
#[test]
fn zero_counts_are_refused_by_name() {
    let dir = common::tempdir();
    let out = dir.path().join("o.granary");
    let o = out.to_str().unwrap();
    for (args, option) in [
        (vec!["harvest", EXAMPLE, "-o", o, "--flush-every", "0"], "--flush-every"),
        (vec!["harvest", EXAMPLE, "-o", o, "--isolate", "--recycle-after", "0"], "--recycle-after"),
        (vec!["harvest", EXAMPLE, "-o", o, "-j", "0"], "-j"),
        (vec!["warm", o, "-j", "0"], "-j"),
    ] {
        let r = granary(&args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(&format!("{option} must be at least 1")), "{args:?}: {err}");
    }
    assert!(!out.exists());
}
