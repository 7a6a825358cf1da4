//! `granary import-foz`: Fossilize databases written by this suite (deflated and raw, with
//! and without CRC, truncated, damaged, with a bad magic or version) and the checked-in fixture
//! made from the example's SPIR-V; the imported script (native Vulkan pipelines) must load and
//! harvest.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use granary::import::foz::container::{tag, writer};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn granary(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_granary")).args(args).output().expect("run granary")
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/foz/renderer.foz")
}

fn import(dbs: &[&Path], out: &Path) -> (i32, serde_json::Value) {
    let mut args = vec!["import-foz".to_string()];
    args.extend(dbs.iter().map(|p| p.to_str().unwrap().to_string()));
    args.extend(["-o".into(), out.to_str().unwrap().into(), "--json".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = granary(&args);
    let code = o.status.code().expect("exit status, not a signal");
    assert!(code == 0 || code == 1, "import-foz exited {code}: {}", String::from_utf8_lossy(&o.stderr));
    (code, serde_json::from_slice(&o.stdout).expect("summary JSON"))
}

/// SPIR-V words of the example's light culling compute shader, taken from the fixture.
fn cull_spirv(dir: &Path) -> Vec<u8> {
    let out = dir.join("fixture-out");
    import(&[&fixture()], &out);
    std::fs::read(out.join("modules/1111000000000003.spv")).unwrap()
}

/// A shader module entry with its SPIR-V as varint words after the JSON's NUL.
fn module_entry(hash: u64, spirv: &[u8]) -> Vec<u8> {
    let words: Vec<u32> = spirv.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let tail = granary::import::foz::spirv::encode_varint(&words);
    let mut p = serde_json::to_vec(&serde_json::json!({"version": 6, "shaderModules": {format!("{hash:016x}"): {
        "flags": 0, "codeSize": spirv.len(), "varintOffset": 0, "varintSize": tail.len()}}}))
    .unwrap();
    p.push(0);
    p.extend(tail);
    p
}

/// A compute pipeline of `module`'s light culling entry point, with the pipeline layout
/// [`LAYOUT`] (which [`layout_entry`] records).
fn compute_entry(hash: u64, module: u64) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({"version": 6, "computePipelines": {format!("{hash:016x}"): {
        "flags": 0, "layout": format!("{LAYOUT:016x}"), "basePipelineHandle": "0000000000000000", "basePipelineIndex": -1,
        "stage": {"flags": 0, "stage": 32, "module": format!("{module:016x}"), "name": "cs_cull_lights"}}}}))
    .unwrap()
}

const LAYOUT: u64 = 0x77;

/// An empty pipeline layout under the hash [`LAYOUT`].
fn layout_entry() -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({"version": 6, "pipelineLayouts": {format!("{LAYOUT:016x}"): {
        "flags": 0, "pushConstantRanges": [], "setLayouts": []}}}))
    .unwrap()
}

/// A database with the module, the layout and the compute pipeline `hash`.
fn good_database(spirv: &[u8], hash: u64) -> Vec<u8> {
    let mut bytes = writer::header(6);
    writer::entry(&mut bytes, tag::SHADER_MODULE, 0x42, &module_entry(0x42, spirv), DEFLATE_CRC);
    writer::entry(&mut bytes, tag::PIPELINE_LAYOUT, LAYOUT, &layout_entry(), RAW_CRC);
    writer::entry(&mut bytes, tag::COMPUTE_PIPELINE, hash, &compute_entry(hash, 0x42), DEFLATE);
    bytes
}

const RAW_CRC: writer::Store = writer::Store { deflate: false, crc: true };
const DEFLATE_CRC: writer::Store = writer::Store { deflate: true, crc: true };
const DEFLATE: writer::Store = writer::Store { deflate: true, crc: false };
const RAW: writer::Store = writer::Store { deflate: false, crc: false };

#[test]
fn import_foz_fixture_loads_and_harvests() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (code, s) = import(&[&fixture()], &out);
    assert_eq!(code, 0, "{s}");
    assert_eq!(s["imported"], 7);
    assert_eq!(s["libraries"], 3);
    let script = granary::script::Script::load(&out.join("pipelines.json")).unwrap();
    assert!(script.pipelines.iter().all(|p| p.descriptor.is_ok()));
    // Harvesting the imported SPIR-V validates every module first.
    if !common::tool_available("spirv-val", "spirv-tools") {
        return;
    }
    let archive = dir.path().join("foz.granary");
    let o =
        granary(&["harvest", out.join("pipelines.json").to_str().unwrap(), "-o", archive.to_str().unwrap(), "--json"]);
    assert!(
        o.status.success(),
        "harvest: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    let h: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(h["failed"], 0, "{h}");
    let ls = granary(&["ls", archive.to_str().unwrap()]);
    let ls = String::from_utf8_lossy(&ls.stdout);
    for label in [
        "foz/a000000000000001",
        "foz/a000000000000002",
        "foz/a000000000000004",
        "foz/a000000000000005",
        "foz/a000000000000006",
        "foz/c000000000000001",
        "foz/d000000000000001",
    ] {
        assert!(ls.contains(label), "{label} missing from:\n{ls}");
    }
}

#[test]
fn import_foz_reports_every_skipped_pipeline_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (_, s) = import(&[&fixture()], &dir.path().join("out"));
    let skipped: Vec<(String, String)> = s["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["hash"].as_str().unwrap().to_string(), k["reason"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert_eq!(skipped[0].0, "a000000000000003");
    assert!(skipped[0].1.contains("sType 1000156001 (VkSamplerYcbcrConversionInfo)"), "{skipped:?}");
    assert_eq!(skipped[1].0, "a000000000000007");
    assert!(skipped[1].1.contains("sType 1000226001"), "{skipped:?}");
    // The text summary lists them too.
    let o = granary(&["import-foz", fixture().to_str().unwrap(), "-o", dir.path().join("t").to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("skipped 2 pipelines") && text.contains("graphics a000000000000007: "), "{text}");
}

#[test]
fn import_foz_skips_databases_with_a_bad_magic_or_version_and_imports_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let spirv = cull_spirv(dir.path());
    let good = good_database(&spirv, 0x99);
    let mut magic = good.clone();
    magic[3] ^= 0x01;
    let mut version = good.clone();
    version[15] = 42;
    let paths = [dir.path().join("magic.foz"), dir.path().join("good.foz"), dir.path().join("version.foz")];
    for (p, b) in paths.iter().zip([magic, good, version]) {
        std::fs::write(p, b).unwrap();
    }
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let (code, s) = import(&refs, &dir.path().join("out"));
    assert_eq!(code, 1, "{s}");
    assert_eq!(s["labels"], serde_json::json!(["foz/0000000000000099"]), "{s}");
    let skipped = s["databases_skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 2, "{s}");
    assert!(skipped[0]["file"].as_str().unwrap().ends_with("magic.foz"));
    assert!(skipped[0]["reason"].as_str().unwrap().contains("offset 0: not a Fossilize database (bad magic)"), "{s}");
    assert!(skipped[1]["file"].as_str().unwrap().ends_with("version.foz"));
    assert!(skipped[1]["reason"].as_str().unwrap().contains("unsupported Fossilize format version 42"), "{s}");
    // The text output says so, and the good database's script loads.
    let mut args = vec!["import-foz".to_string()];
    args.extend(paths.iter().map(|p| p.to_str().unwrap().to_string()));
    args.extend(["-o".into(), dir.path().join("text").to_str().unwrap().into()]);
    let o = granary(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("skipped database: ") && text.contains("magic.foz: offset 0"), "{text}");
    assert!(text.contains("version.foz: offset 15: unsupported Fossilize format version 42"), "{text}");
    assert!(text.contains("imported 1 pipelines"), "{text}");
    let script = granary::script::Script::load(&dir.path().join("text/pipelines.json")).unwrap();
    assert!(script.pipelines[0].descriptor.is_ok());
}

#[test]
fn import_foz_raw_and_deflated_with_and_without_crc_across_databases() {
    let dir = tempfile::tempdir().unwrap();
    let spirv = cull_spirv(dir.path());
    for (i, (module_store, pipeline_store)) in
        [(RAW, DEFLATE), (RAW_CRC, DEFLATE_CRC), (DEFLATE, RAW_CRC), (DEFLATE_CRC, RAW)].into_iter().enumerate()
    {
        // The module in one database, the pipeline in another.
        let (a, b) = (dir.path().join(format!("m{i}.foz")), dir.path().join(format!("p{i}.foz")));
        let mut bytes = writer::header(6);
        writer::entry(&mut bytes, tag::SHADER_MODULE, 0x42, &module_entry(0x42, &spirv), module_store);
        writer::entry(&mut bytes, tag::PIPELINE_LAYOUT, LAYOUT, &layout_entry(), pipeline_store);
        std::fs::write(&a, bytes).unwrap();
        let mut bytes = writer::header(6);
        writer::entry(&mut bytes, tag::COMPUTE_PIPELINE, 0x99, &compute_entry(0x99, 0x42), pipeline_store);
        std::fs::write(&b, bytes).unwrap();
        let (code, s) = import(&[&a, &b], &dir.path().join(format!("out{i}")));
        assert_eq!(code, 0, "{s}");
        assert_eq!(s["labels"], serde_json::json!(["foz/0000000000000099"]), "{s}");
    }
}

#[test]
fn import_foz_flipped_crc_is_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let spirv = cull_spirv(dir.path());
    let mut bytes = writer::header(6);
    writer::entry(&mut bytes, tag::SHADER_MODULE, 0x42, &module_entry(0x42, &spirv), DEFLATE_CRC);
    writer::entry(&mut bytes, tag::PIPELINE_LAYOUT, LAYOUT, &layout_entry(), RAW);
    let damaged_at = bytes.len();
    writer::entry(&mut bytes, tag::COMPUTE_PIPELINE, 0x98, &compute_entry(0x98, 0x42), RAW_CRC);
    writer::entry(&mut bytes, tag::COMPUTE_PIPELINE, 0x99, &compute_entry(0x99, 0x42), DEFLATE_CRC);
    // Flip the stored CRC of the middle entry (name, then stored size, format, CRC).
    bytes[damaged_at + 40 + 8] ^= 0x01;
    let db = dir.path().join("crc.foz");
    std::fs::write(&db, bytes).unwrap();
    let (code, s) = import(&[&db], &dir.path().join("out"));
    assert_eq!(code, 1);
    assert_eq!(s["labels"], serde_json::json!(["foz/0000000000000099"]));
    let d = &s["damaged"][0];
    assert_eq!(d["offset"], damaged_at as u64);
    assert!(d["reason"].as_str().unwrap().contains("CRC mismatch"), "{d}");
    assert!(d["file"].as_str().unwrap().ends_with("crc.foz"));
}

#[test]
fn import_foz_truncated_tail_is_ignored_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let spirv = cull_spirv(dir.path());
    let mut bytes = writer::header(6);
    writer::entry(&mut bytes, tag::SHADER_MODULE, 0x42, &module_entry(0x42, &spirv), DEFLATE);
    writer::entry(&mut bytes, tag::PIPELINE_LAYOUT, LAYOUT, &layout_entry(), DEFLATE);
    writer::entry(&mut bytes, tag::COMPUTE_PIPELINE, 0x99, &compute_entry(0x99, 0x42), RAW);
    let tail_at = bytes.len();
    writer::entry(&mut bytes, tag::COMPUTE_PIPELINE, 0x9a, &compute_entry(0x9a, 0x42), DEFLATE_CRC);
    bytes.truncate(bytes.len() - 5);
    let db = dir.path().join("cut.foz");
    std::fs::write(&db, bytes).unwrap();
    let (code, s) = import(&[&db], &dir.path().join("out"));
    assert_eq!(code, 1);
    assert_eq!(s["labels"], serde_json::json!(["foz/0000000000000099"]));
    assert_eq!(s["truncated"][0]["offset"], tail_at as u64);
    assert!(s["damaged"].as_array().unwrap().is_empty());
}

#[test]
fn import_foz_never_panics_on_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(fixture()).unwrap();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..24 {
        let bytes: Vec<u8> = match i % 3 {
            0 => (0..(next() % 300)).map(|_| next() as u8).collect(),
            1 => {
                let mut b = writer::header(6);
                b.extend((0..(next() % 300)).map(|_| next() as u8));
                b
            }
            _ => {
                let mut b = good.clone();
                for _ in 0..8 {
                    let at = (next() as usize) % b.len();
                    b[at] = next() as u8;
                }
                b.truncate((next() as usize) % b.len() + 1);
                b
            }
        };
        let db = dir.path().join(format!("g{i}.foz"));
        std::fs::write(&db, bytes).unwrap();
        let o =
            granary(&["import-foz", db.to_str().unwrap(), "-o", dir.path().join(format!("o{i}")).to_str().unwrap()]);
        let code = o.status.code().expect("no signal");
        assert!((0..=2).contains(&code), "case {i}: exit {code}\n{}", String::from_utf8_lossy(&o.stderr));
        assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"), "case {i}");
    }
}
