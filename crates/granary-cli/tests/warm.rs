//! `granary warm` end to end on a real Vulkan driver (lavapipe in CI; any device here): the
//! run-time loader creates every pipeline of an archive harvested on the same device, says
//! honestly how each was made, refuses an archive built for another driver before any binary
//! reaches the driver, and never hands damaged bytes to the driver.
//!
//! Without a driver each test prints one `SKIPPED` line, unless `GRANARY_REQUIRE_VULKAN=1`.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::EXAMPLE;
use granary::archive::{Archive, DeviceCache};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EXAMPLE_PIPELINES: u64 = 335;
/// Pipelines of the example whose colour output is unspecialized (captured as libraries).
const EXAMPLE_LIBRARIES: u64 = 202;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_granary"))
}

fn granary(args: &[&str]) -> Output {
    Command::new(bin()).args(args).env_remove("GRANARY_FAULT").output().expect("run granary")
}

/// A harvest's arguments for the first device, capturing its own kind (binaries where it has
/// them): what these tests warm from.
const ON_THE_DEVICE: &[&str] = &["--backend", "vulkan", "--capture", "device", "-q", "-j", "2"];

/// Harvests the example on the first device into `dir/NAME`.
fn harvest(dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    let o = granary(&[&["harvest", EXAMPLE, "-o", out.to_str().unwrap()][..], ON_THE_DEVICE].concat());
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

fn warm(archive: &Path, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec!["warm", archive.to_str().unwrap(), "--json", "-j", "2"];
    args.extend_from_slice(extra);
    let o = granary(&args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let json = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o.status.code().unwrap_or(-1), json, stderr)
}

#[test]
fn warm_on_the_harvest_device_creates_everything_and_says_how() {
    let Some(device) = common::vulkan_device(&bin()) else { return };
    let dir = tempfile::tempdir().unwrap();
    let archive = harvest(dir.path(), "a.granary");
    let (code, w, stderr) = warm(&archive, &[]);
    assert_eq!(code, 0, "{stderr}\n{w:#}");
    assert_eq!(w["matches_device"], true);
    assert_eq!(w["pipelines"], EXAMPLE_PIPELINES);
    assert_eq!(w["created"], EXAMPLE_PIPELINES);
    assert_eq!(w["failed"], 0);
    let (bins, hits, compiled) =
        (w["from_binaries"].as_u64().unwrap(), w["cache_hits"].as_u64().unwrap(), w["compiled"].as_u64().unwrap());
    assert_eq!(bins + hits + compiled, EXAMPLE_PIPELINES);
    let records = w["records"].as_array().unwrap();
    assert_eq!(records.len() as u64, EXAMPLE_PIPELINES);
    if device["captures"] == "pipeline-binaries" {
        // A driver with VK_KHR_pipeline_binary: every pipeline from its binaries, no compile.
        assert_eq!(bins, EXAMPLE_PIPELINES, "{w:#}");
        assert!(records.iter().all(|r| r["source"] == "binaries" && r["binaries"].as_u64() > Some(0)));
    } else {
        // lavapipe: no pipeline binaries. warm must say so and claim no binary hits; what
        // the driver reports about its pipeline cache is counted as it reports it.
        assert_eq!(bins, 0);
        assert_eq!(w["device_has_pipeline_binaries"], false);
        assert!(w["why_no_binaries"].as_str().unwrap().contains("VK_KHR_pipeline_binary"), "{w:#}");
        assert!(records.iter().all(|r| r["binaries"] == 0 && r["source"] != "binaries"));
        assert!(records
            .iter()
            .all(|r| (r["source"] == "cache-hit") == (r["feedback_cache_hit"] == true && r["feedback_valid"] == true)));
    }
    if device["supports"]["graphics_pipeline_library"] == true {
        assert_eq!(w["linked"], EXAMPLE_LIBRARIES, "library pipelines are linked with --link-format");
    }
    assert!(records.iter().all(|r| r["label"].is_string() && r["total_us"].as_f64() > Some(0.0)));
    assert_eq!(w["held"], false);

    // --hold keeps every pipeline alive until the pass ends (as a game holds them): the same
    // pipelines, made the same way.
    let (code, h, stderr) = warm(&archive, &["--hold"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(h["held"], true);
    for k in ["created", "from_binaries", "linked", "failed"] {
        assert_eq!(h[k], w[k], "{k} with --hold");
    }

    // The same from SPIR-V (the compile path a developer without granary has), writing the
    // pipeline cache; then a warm pipeline cache read back from that file.
    let cache = dir.path().join("p.cache");
    let (code, w, stderr) = warm(&archive, &["--source", "spirv", "--pipeline-cache-out", cache.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!((w["from_binaries"].as_u64(), w["failed"].as_u64()), (Some(0), Some(0)));
    assert_eq!(w["pipeline_cache_out_bytes"].as_u64(), Some(std::fs::metadata(&cache).unwrap().len()));
    let (code, w, stderr) = warm(&archive, &["--source", "spirv", "--pipeline-cache-in", cache.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(w["cache_seeded"], true);
    assert_eq!(w["created"], EXAMPLE_PIPELINES);
}

#[test]
fn an_archive_for_another_driver_is_refused_before_any_binary_reaches_the_driver() {
    if common::vulkan_device(&bin()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let archive = harvest(dir.path(), "a.granary");
    let forged = dir.path().join("forged.granary");
    common::forge_driver_version(&archive, &forged);

    let (code, w, stderr) = warm(&forged, &[]);
    assert_eq!(code, 2, "could not run: {stderr}");
    assert!(stderr.contains("built for") && stderr.contains("this device is"), "{stderr}");
    assert!(stderr.contains("driver_version"), "names what differs: {stderr}");
    assert!(stderr.contains("--fallback compile"), "says how to go on: {stderr}");
    assert_eq!((w["matches_device"].as_bool(), w["created"].as_u64()), (Some(false), Some(0)));

    // With --fallback compile, every pipeline compiles from the archive's SPIR-V.
    let (code, w, stderr) = warm(&forged, &["--fallback", "compile"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(w["matches_device"], false);
    assert!(w["mismatch"].as_str().unwrap().contains("driver_version"));
    assert_eq!((w["created"].as_u64(), w["from_binaries"].as_u64()), (Some(EXAMPLE_PIPELINES), Some(0)));
}

/// `warm --sidecar` after a driver update (forged): the first run compiles and writes this
/// device's cache data beside the archive, the second reads it and writes nothing, the
/// archive is never written, and a sidecar of another file is refused by name.
#[test]
fn after_a_driver_update_warm_writes_the_sidecar_once_and_reads_it_next_time() {
    if common::vulkan_device(&bin()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let archive = harvest(dir.path(), "a.granary");
    let forged = dir.path().join("forged.granary");
    common::forge_driver_version(&archive, &forged);
    let shipped = std::fs::read(&forged).unwrap();
    let sidecar = dir.path().join("forged.granary.sidecar");
    let s = sidecar.to_str().unwrap();
    let (code, w, stderr) = warm(&forged, &["--fallback", "compile", "--sidecar", s]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(w["sidecar"]["read"], "absent", "{}", w["sidecar"]);
    let written = w["sidecar"]["written_bytes"].as_u64().expect("written");
    assert!(written > 0 && sidecar.is_file());
    let (code, w, stderr) = warm(&forged, &["--fallback", "compile", "--sidecar", s]);
    assert_eq!(code, 0, "{stderr}");
    assert!(w["sidecar"]["read"].as_str().unwrap().starts_with("loaded"), "{}", w["sidecar"]);
    assert_eq!(w["sidecar"]["written_bytes"], Value::Null, "nothing more to write");
    assert_eq!(w["created"], EXAMPLE_PIPELINES);
    assert_eq!(std::fs::read(&forged).unwrap(), shipped, "the archive is never written");
    // Not a sidecar: refused, named; the pipelines still compile.
    std::fs::write(&sidecar, b"not a sidecar").unwrap();
    let (code, w, stderr) = warm(&forged, &["--fallback", "compile", "--sidecar", s]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("sidecar refused"), "{stderr}");
    assert!(w["sidecar"]["read"].as_str().unwrap().starts_with("refused"), "{}", w["sidecar"]);
    assert_eq!(w["created"], EXAMPLE_PIPELINES);
}

#[test]
fn a_flipped_byte_in_the_device_data_is_caught_before_the_driver_sees_it() {
    let Some(device) = common::vulkan_device(&bin()) else { return };
    let dir = tempfile::tempdir().unwrap();
    let archive = harvest(dir.path(), "a.granary");
    let a = Archive::read(&archive).unwrap();
    let identity = a.devices().unwrap()[0].identity().clone();
    // The first driver bytes of this device: a binary, or its pipeline-cache data.
    let d = a.device_for(&identity).unwrap().unwrap();
    let bytes: Vec<u8> = if device["captures"] == "pipeline-binaries" {
        let p = a.pipeline(0).unwrap();
        d.binaries(&p).unwrap().unwrap().get(0).unwrap().data.to_vec()
    } else {
        d.caches().unwrap()[0].to_vec()
    };
    drop(a);
    let mut file = std::fs::read(&archive).unwrap();
    let at =
        file.windows(bytes.len()).position(|w| w == bytes.as_slice()).expect("bytes in the file") + bytes.len() / 2;
    file[at] ^= 0x10;
    let damaged = dir.path().join("damaged.granary");
    std::fs::write(&damaged, &file).unwrap();

    let (code, w, stderr) = warm(&damaged, &[]);
    assert_ne!(code, 0, "damaged driver data accepted: {w:#}");
    let said = format!("{stderr}{w}");
    assert!(said.contains("does not match its hash"), "names the damage: {said}");
    if device["captures"] == "pipeline-binaries" {
        // The pipelines sharing that binary lost their binaries; with fallback they compile,
        // and say why.
        let (code, w, _) = warm(&damaged, &["--fallback", "compile"]);
        assert_eq!(code, 0);
        let fell_back = w["fell_back"].as_u64().unwrap();
        assert!(fell_back >= 1);
        assert_eq!(w["from_binaries"].as_u64(), Some(EXAMPLE_PIPELINES - fell_back));
        let reasons: Vec<&str> =
            w["records"].as_array().unwrap().iter().filter_map(|r| r["fallback_reason"].as_str()).collect();
        assert!(reasons.iter().all(|r| r.contains("not handed to the driver")), "{reasons:?}");
    }
}

/// An archive merged from shards (or written by `--isolate` workers) holds one pipeline-cache
/// blob per harvesting process for the device: warm seeds its cache with all of them, merged
/// with `vkMergePipelineCaches`, not with the first alone.
#[test]
fn warm_seeds_its_cache_with_every_cache_blob_of_the_device() {
    if common::vulkan_device(&bin()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut shards = Vec::new();
    for i in 0..2 {
        let out = dir.path().join(format!("shard-{i}.granary"));
        let shard = format!("{i}/2");
        let o = granary(
            &[&["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "--shard", &shard][..], ON_THE_DEVICE].concat(),
        );
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        shards.push(out);
    }
    let merged = dir.path().join("merged.granary");
    let o =
        granary(&["merge", shards[0].to_str().unwrap(), shards[1].to_str().unwrap(), "-o", merged.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    if !common::vulkan_device(&bin()).is_some_and(|d| d["captures"] == "pipeline-binaries") {
        // Without binaries the device data is deterministic (lavapipe): the merged shards are
        // byte for byte the unsharded device harvest.
        let single = harvest(dir.path(), "single.granary");
        assert_eq!(std::fs::read(&merged).unwrap(), std::fs::read(&single).unwrap());
    }
    // Two different blobs for the device (a driver whose cache data is only a header, such as
    // lavapipe's, writes the same bytes in both shards, which the merge stores once; a copy
    // with trailing bytes, which a driver must tolerate, stands in for the second shard's).
    let a = Archive::read(&merged).unwrap();
    let mut meta = a.meta().unwrap();
    assert!(!meta.device_caches.is_empty(), "a Vulkan harvest stores its pipeline cache");
    let first = meta.device_caches[0].clone();
    let mut second = first.data.bytes().to_vec();
    second.extend_from_slice(&[0; 16]);
    meta.device_caches.push(DeviceCache { device: first.device.clone(), data: granary::descriptor::Blob::new(second) });
    let two = dir.path().join("two.granary");
    std::fs::write(&two, granary::archive::encode(&a.entries().unwrap(), &meta)).unwrap();
    let caches = Archive::read(&two).unwrap().devices().unwrap()[0].caches().unwrap().len();
    assert!(caches >= 2, "{caches}");

    let (code, w, stderr) = warm(&two, &["--source", "cache"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!((w["cache_seeded"].as_bool(), w["cache_blobs"].as_u64()), (Some(true), Some(caches as u64)), "{w:#}");
    assert_eq!((w["created"].as_u64(), w["failed"].as_u64()), (Some(EXAMPLE_PIPELINES), Some(0)));
    // An application's own cache file joins the archive's blobs (merged, not instead);
    // with --source spirv it is the only seed.
    let file = dir.path().join("app.cache");
    std::fs::write(&file, first.data.bytes()).unwrap();
    let (code, w, stderr) = warm(&two, &["--source", "cache", "--pipeline-cache-in", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(w["cache_blobs"].as_u64(), Some(caches as u64 + 1), "{w:#}");
    let (code, w, stderr) = warm(&two, &["--source", "spirv", "--pipeline-cache-in", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(w["cache_blobs"].as_u64(), Some(1), "{w:#}");

    // A cache file whose VkPipelineCacheHeaderVersionOne names another vendor is refused
    // before vkCreatePipelineCache, naming the field: exit 2, nothing created.
    let mut foreign = first.data.bytes().to_vec();
    foreign[8..12].copy_from_slice(&0x1002u32.to_le_bytes());
    std::fs::write(&file, &foreign).unwrap();
    let (code, _, stderr) = warm(&two, &["--source", "cache", "--pipeline-cache-in", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("vendorID 0x1002") && stderr.contains("not handed to the driver"), "{stderr}");
    std::fs::write(&file, [0u8; 8]).unwrap();
    let (code, _, stderr) = warm(&two, &["--source", "cache", "--pipeline-cache-in", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("shorter than a pipeline-cache header"), "{stderr}");

    // An archive blob with another device's pipelineCacheUUID is skipped and reported; the
    // others still seed the cache.
    let mut uuid = first.data.bytes().to_vec();
    uuid[16] ^= 0xff;
    meta.device_caches.push(DeviceCache { device: first.device.clone(), data: granary::descriptor::Blob::new(uuid) });
    let three = dir.path().join("three.granary");
    std::fs::write(&three, granary::archive::encode(&a.entries().unwrap(), &meta)).unwrap();
    let (code, w, stderr) = warm(&three, &["--source", "cache"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(w["cache_blobs"].as_u64(), Some(caches as u64), "{w:#}");
    let skipped = w["cache_blobs_skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{w:#}");
    assert!(skipped[0].as_str().unwrap().contains("pipelineCacheUUID"), "{w:#}");
}

/// `warm --validate --json`: every pipeline created under the validation layer, stdout one
/// JSON document (the layer prints nothing there) with `validation_messages` equal to its
/// per-id breakdown, each message on stderr with its pipeline, exit 1 exactly when the layer
/// reported an error. The suite's own `GRANARY_VALIDATE*` settings are removed for this run.
#[test]
fn warm_validate_keeps_the_json_valid_and_counts_the_layers_messages() {
    if common::vulkan_device(&bin()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.granary");
    let clean = |c: &mut Command| {
        c.env_remove("GRANARY_FAULT").env_remove("GRANARY_VALIDATE").env_remove("GRANARY_VALIDATE_EXPECT");
    };
    let mut c = Command::new(bin());
    c.args(["harvest", EXAMPLE, "-o", archive.to_str().unwrap()]).args(ON_THE_DEVICE);
    clean(&mut c);
    let o = c.output().expect("harvest");
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let mut c = Command::new(bin());
    c.args(["warm", archive.to_str().unwrap(), "--json", "-j", "2", "--validate"]);
    clean(&mut c);
    let o = c.output().expect("warm");
    let stderr = String::from_utf8_lossy(&o.stderr);
    if o.status.code() == Some(2) && stderr.contains("vulkan-validationlayers") {
        let required = std::env::var("GRANARY_VALIDATE").is_ok_and(|v| v == "1") || std::env::var_os("CI").is_some();
        assert!(!required, "the validation layer is required here (GRANARY_VALIDATE=1 or CI): {stderr}");
        eprintln!("SKIPPED: no validation layer ({stderr}); this test checked nothing");
        return;
    }
    let w: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("stdout is not one JSON document ({e}):\n{}\n{stderr}", String::from_utf8_lossy(&o.stdout))
    });
    assert_eq!((w["created"].as_u64(), w["failed"].as_u64()), (Some(EXAMPLE_PIPELINES), Some(0)), "{stderr}");
    let n = w["validation_messages"].as_u64().unwrap_or_else(|| panic!("no validation_messages: {w:#}"));
    let ids = w["validation"]["by_id"].as_object().expect("validation.by_id");
    let count = |k: &str| ids.values().map(|c| c[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(count("errors") + count("warnings"), n);
    assert_eq!(w["validation"]["errors"], count("errors"));
    assert_eq!(o.status.code(), Some(i32::from(count("errors") > 0)), "exit 1 exactly on an error: {stderr}");
    for id in ids.keys() {
        assert!(stderr.contains(id.as_str()) && stderr.contains("in pipeline '"), "{id} not on stderr: {stderr}");
    }
}

/// `warm --key`: the loader's `require_signature`. A signed archive loads; an unsigned one,
/// one signed by another key and a signed one with a changed byte are refused before any
/// pipeline is created (exit 2, saying why).
#[test]
fn warm_with_a_key_loads_only_archives_that_key_signed() {
    if common::vulkan_device(&bin()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let archive = harvest(dir.path(), "a.granary");
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    for name in ["studio", "other"] {
        let o = granary(&["sign", "--generate-key", &p(name)]);
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let o = granary(&["sign", archive.to_str().unwrap(), "--key", &p("studio.key"), "-o", &p("signed.granary")]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));

    let (code, w, stderr) = warm(Path::new(&p("signed.granary")), &["--key", &p("studio.pub")]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(w["created"], EXAMPLE_PIPELINES);

    let (code, _, stderr) = warm(&archive, &["--key", &p("studio.pub")]);
    assert_eq!(code, 2, "an unsigned archive: {stderr}");
    assert!(stderr.to_lowercase().contains("unsigned"), "{stderr}");
    let (code, _, stderr) = warm(Path::new(&p("signed.granary")), &["--key", &p("other.pub")]);
    assert_eq!(code, 2, "another key's archive: {stderr}");

    let mut bytes = std::fs::read(p("signed.granary")).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(p("tampered.granary"), &bytes).unwrap();
    let (code, w, stderr) = warm(Path::new(&p("tampered.granary")), &["--key", &p("studio.pub")]);
    assert_eq!(code, 2, "a changed byte: {stderr}");
    // Nothing was created: the JSON is the error object alone (docs/JSON.md).
    assert_eq!(w["error"]["exit_status"], 2, "{w:#}");
    assert!(w["created"].is_null(), "nothing was created: {w:#}");
}
