//! `--backend vulkan` end to end on a real Vulkan driver (lavapipe in CI; any device here).
//!
//! Each test asks `granary devices` for a device first: without one it prints one `SKIPPED`
//! line and checks nothing, unless `GRANARY_REQUIRE_VULKAN=1` (set by `.ci/run`) makes that a
//! failure.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::EXAMPLE;
use granary::archive::{Archive, WriteEntry};
use granary::descriptor::PipelineDescriptor;
use granary::descriptor::Target;
use granary::script::Script;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EXAMPLE_PIPELINES: usize = 335;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_granary"))
}

/// Runs granary. A `harvest --backend vulkan` that names no `--capture` gets `--capture
/// device`: these tests check what the device's own kind of capture gives (binaries where it
/// has them), not the default's measurement, which `capture_modes_say_what_they_stored_and_why`
/// tests (through [`granary_as_given`]).
fn granary(args: &[&str], env: &[(&str, &str)]) -> Output {
    let device_kind = args.first() == Some(&"harvest")
        && args.contains(&"vulkan")
        && !args.iter().any(|a| a.starts_with("--capture") || *a == "--no-pipeline-binaries");
    let mut args = args.to_vec();
    if device_kind {
        args.extend(["--capture", "device"]);
    }
    granary_as_given(&args, env)
}

/// Runs granary with exactly `args`.
fn granary_as_given(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(bin());
    // No machine record of `--capture auto` decisions unless a test names one: each test
    // measures (or not) on its own, whatever ran before it on this machine.
    c.args(args).env_remove("GRANARY_FAULT").env("GRANARY_CACHE_DIR", "");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run granary")
}

/// The first device, or `None` (skipped) without a driver.
fn device() -> Option<Value> {
    common::vulkan_device(&bin())
}

/// Whether the device captures real driver binaries (else its pipeline-cache data).
fn captures_binaries(d: &Value) -> bool {
    d["captures"] == "pipeline-binaries"
}

/// Harvests `script` into `out` with `extra` arguments; returns the exit code and summary.
fn harvest(script: &str, out: &Path, extra: &[&str], env: &[(&str, &str)]) -> (i32, Value) {
    let mut args = vec!["harvest", script, "-o", out.to_str().unwrap(), "--json", "-q"];
    args.extend_from_slice(extra);
    let o = granary(&args, env);
    let summary = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("summary JSON ({e}): {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code().unwrap_or(-1), summary)
}

/// Runs `granary prune ARCHIVE --script SCRIPT -o OUT --json`, expecting success; returns the
/// report.
fn prune(archive: &Path, script: &Path, out: &Path) -> Value {
    prune_with(archive, script, out, &[])
}

/// [`prune`] with more arguments (`--force`).
fn prune_with(archive: &Path, script: &Path, out: &Path, extra: &[&str]) -> Value {
    let args = [
        &[
            "prune",
            archive.to_str().unwrap(),
            "--script",
            script.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--json",
        ][..],
        extra,
    ]
    .concat();
    let o = granary(&args, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The archive re-encoded without its device sections: what the `none` backend writes.
fn portable_entries(path: &Path) -> Vec<u8> {
    let a = Archive::read(path).expect("archive");
    a.verify().expect("verifies");
    let entries: Vec<WriteEntry> =
        a.entries().expect("entries").into_iter().map(|w| WriteEntry { binaries: Vec::new(), ..w }).collect();
    let meta = granary::archive::ArchiveMeta { device_caches: Vec::new(), ..a.meta().expect("meta") };
    granary::archive::encode(&entries, &meta)
}

/// The example script as JSON, its library paths made absolute so it can be written anywhere.
fn example_json() -> Value {
    let mut script: Value = serde_json::from_str(&std::fs::read_to_string(EXAMPLE).unwrap()).unwrap();
    let base = Path::new(EXAMPLE).parent().unwrap();
    for lib in script["libraries"].as_array_mut().unwrap() {
        if let Some(p) = lib.get("path").and_then(Value::as_str).map(str::to_string) {
            lib["path"] = Value::String(base.join(p).display().to_string());
        }
    }
    script
}

/// The example script with `expand_unspecialized` to `formats`, written as `pipelines.json` in
/// `dir`.
fn expanded_example(dir: &Path, formats: &[&str]) -> PathBuf {
    let mut script = example_json();
    script["expand_unspecialized"] = serde_json::json!({ "formats": formats });
    let path = dir.join("pipelines.json");
    std::fs::write(&path, serde_json::to_string(&script).unwrap()).unwrap();
    path
}

fn needs_libraries(label: &str) -> bool {
    let script = Script::load(Path::new(EXAMPLE)).expect("example");
    let d: &PipelineDescriptor = script
        .pipelines
        .iter()
        .find(|p| p.label.as_deref() == Some(label))
        .and_then(|p| p.descriptor.as_ref().ok())
        .expect("pipeline");
    d.needs_libraries()
}

#[test]
fn devices_lists_the_identity_and_what_each_device_supports() {
    let Some(d) = device() else { return };
    for field in ["device_name", "driver_name", "driver_info", "pipeline_cache_uuid", "identity"] {
        assert!(d[field].as_str().is_some_and(|s| !s.is_empty()), "{field} in {d}");
    }
    assert_eq!(d["pipeline_cache_uuid"].as_str().map(str::len), Some(32));
    assert!(d["supports"]["dynamic_rendering"].as_bool().is_some());
    // The global key is listed exactly where pipeline binaries exist.
    assert_eq!(d["pipeline_binary_global_key"].is_string(), d["supports"]["pipeline_binaries"] == true, "{d}");
    let text = granary(&["devices"], &[]);
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(d["device_name"].as_str().unwrap()) && text.contains("pipeline cache UUID"), "{text}");
}

/// The bundled example on the driver: every pipeline created, -j1 and -j2 agree, the
/// translations are exactly the `none` backend's, every pipeline has one binary set for the
/// device, built as a library exactly when a colour attachment is unspecialized.
#[test]
fn the_example_harvests_on_the_driver_and_j1_equals_j2() {
    let Some(d) = device() else { return };
    let dir = common::tempdir();
    let (a, b, none) = (dir.path().join("a.granary"), dir.path().join("b.granary"), dir.path().join("n.granary"));
    let (code, s) = harvest(EXAMPLE, &a, &["--backend", "vulkan", "-j", "1"], &[]);
    assert_eq!((code, s["succeeded"].as_u64()), (0, Some(EXAMPLE_PIPELINES as u64)), "{s}");
    assert_eq!(s["backend"], "vulkan");
    let dev = &s["device"];
    let created = dev["pipelines_created"].as_u64().unwrap() + dev["libraries_created"].as_u64().unwrap();
    let shared = dev["pipelines_shared"].as_u64().unwrap();
    assert_eq!(
        created + shared,
        EXAMPLE_PIPELINES as u64,
        "each pipeline created on the driver once, or sharing a driver-identical one's capture: {dev}"
    );
    assert!(shared < 20, "only pipelines with equal SPIR-V, state and layout are shared: {dev}");
    // One shader module per stage function at most (the backend's own test checks exactly
    // one per stage function): a pipeline sharing a driver-identical pipeline's capture
    // creates none.
    let (modules, functions) = (dev["shader_modules"].as_u64().unwrap(), s["unique_stage_functions"].as_u64().unwrap());
    assert!(modules <= functions && (shared > 0 || modules == functions), "{s}");
    let (code, _) = harvest(EXAMPLE, &b, &["--backend", "vulkan", "-j", "2"], &[]);
    assert_eq!(code, 0);
    let (code, _) = harvest(EXAMPLE, &none, &["-j", "2"], &[]);
    assert_eq!(code, 0);

    // The translations do not change with the backend.
    let portable = portable_entries(&none);
    assert_eq!(portable_entries(&a), portable);
    assert_eq!(portable_entries(&b), portable);
    if captures_binaries(&d) {
        // Driver binaries are not reproducible byte for byte; everything else is.
        eprintln!("device captures binaries: -j1/-j2 compared without their bytes");
    } else {
        // Cache-data devices record no per-pipeline bytes: the files are identical.
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), "-j1 and -j2 differ");
    }

    let archive = Archive::read(&b).unwrap();
    let devices = archive.devices().unwrap();
    assert_eq!(devices.len(), 1);
    let dev = &devices[0];
    assert_eq!(dev.pipeline_count(), EXAMPLE_PIPELINES);
    assert_eq!(dev.identity().device_name, d["device_name"].as_str().unwrap());
    assert_eq!(dev.has_pipeline_binaries(), captures_binaries(&d));
    if !captures_binaries(&d) {
        assert!(!dev.caches().unwrap().is_empty(), "a cache-data device stores its VkPipelineCache data");
    }
    let mut libraries = 0;
    for p in archive.iter() {
        let p = p.unwrap();
        let set = dev.binaries(&p).unwrap().expect("every pipeline has a set for the device");
        let label = archive.entries().unwrap()[p.index()].labels[0].clone();
        let library = set.flags() & granary::archive::BINARY_SET_LIBRARY != 0;
        assert_eq!(library, needs_libraries(&label), "{label}");
        libraries += usize::from(library);
        assert_eq!(set.is_empty(), !captures_binaries(&d), "{label}");
        for binary in set.iter() {
            let binary = binary.unwrap();
            assert!(!binary.key.is_empty() && !binary.data.is_empty());
        }
    }
    assert!(libraries > 0 && libraries < EXAMPLE_PIPELINES, "{libraries} libraries");
    let ls = granary(&["ls", b.to_str().unwrap()], &[]);
    assert!(String::from_utf8_lossy(&ls.stdout).contains(&format!("{EXAMPLE_PIPELINES} pipelines")));
}

/// The report's workload: every colour attachment unspecialized, runs sharing one vertex
/// function. Every pipeline harvests, as a library.
#[test]
fn the_seed_workload_with_every_attachment_unspecialized_harvests_as_libraries() {
    let Some(d) = device() else { return };
    let dir = common::tempdir();
    let w = dir.path().join("w");
    let g = granary(
        &[
            "gen",
            "seed-scale",
            "-o",
            w.to_str().unwrap(),
            "--pipelines",
            "240",
            "--vertex-functions",
            "60",
            "--max-run",
            "60",
        ],
        &[],
    );
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    let script = w.join("pipelines.json");
    let out = dir.path().join("seed.granary");
    let (code, s) = harvest(script.to_str().unwrap(), &out, &["--backend", "vulkan", "-j", "2"], &[]);
    // The only pipelines allowed to fail are those whose MSAA sample count the device lacks
    // (lavapipe has 1 and 4 samples, the workload also uses 2), each saying so.
    let supported: Vec<u64> = d["sample_counts"].as_array().unwrap().iter().filter_map(Value::as_u64).collect();
    let failures = s["failures"].as_array().unwrap();
    for f in failures {
        let m = f["message"].as_str().unwrap();
        assert!(m.contains("is not supported by device") && m.contains("sample_count"), "{m}");
        let n: u64 = m.split("sample_count ").nth(1).and_then(|t| t.split(' ').next()).unwrap().parse().unwrap();
        assert!(!supported.contains(&n), "{m}: the device supports {supported:?}");
    }
    let landed = 240 - failures.len() as u64;
    assert_eq!(s["succeeded"].as_u64(), Some(landed), "{s}");
    assert_eq!(code, if failures.is_empty() { 0 } else { 1 });
    assert!(landed >= 200, "{s}");
    let libraries = s["device"]["libraries_created"].as_u64().unwrap();
    assert_eq!(libraries + s["device"]["pipelines_shared"].as_u64().unwrap(), landed, "{s}");
    let archive = Archive::read(&out).unwrap();
    let dev = &archive.devices().unwrap()[0];
    for p in archive.iter() {
        let set = dev.binaries(&p.unwrap()).unwrap().unwrap();
        assert_eq!(set.flags() & granary::archive::BINARY_SET_LIBRARY, granary::archive::BINARY_SET_LIBRARY);
    }
}

/// Without graphics pipeline libraries (as on a device that lacks them), exactly the
/// pipelines with an unspecialized colour attachment fail, with a message that says why and
/// what to do; the rest land.
#[test]
fn without_pipeline_libraries_unspecialized_pipelines_fail_saying_so() {
    if device().is_none() {
        return;
    }
    let dir = common::tempdir();
    let out = dir.path().join("a.granary");
    let (code, s) = harvest(EXAMPLE, &out, &["--backend", "vulkan", "--no-pipeline-libraries", "-j", "2"], &[]);
    assert_eq!(code, 1, "{s}");
    let failures = s["failures"].as_array().unwrap();
    let expected = Script::load(Path::new(EXAMPLE))
        .unwrap()
        .pipelines
        .iter()
        .filter(|p| p.descriptor.as_ref().is_ok_and(|d| d.needs_libraries()))
        .count();
    assert_eq!(failures.len(), expected);
    for f in failures {
        assert_eq!(f["phase"], "device", "{f}");
        let m = f["message"].as_str().unwrap();
        assert!(m.contains("is unspecialized") && m.contains("no graphics pipeline libraries"), "{m}");
        assert!(needs_libraries(f["pipeline"].as_str().unwrap()));
    }
    assert_eq!(s["succeeded"].as_u64().unwrap() as usize, EXAMPLE_PIPELINES - expected);
    assert_eq!(Archive::read(&out).unwrap().devices().unwrap()[0].pipeline_count(), EXAMPLE_PIPELINES - expected);
}

/// Without libraries, a script's `expand_unspecialized` replaces each pipeline with
/// unspecialized colour output by its specialized variants, each created whole on the device.
#[test]
fn expand_unspecialized_compiles_specialized_variants_without_libraries() {
    if device().is_none() {
        return;
    }
    let dir = common::tempdir();
    let path = expanded_example(dir.path(), &["rgba8unorm", "rgba16float"]);
    let parsed = Script::load(&path).unwrap();
    let open = parsed.pipelines.iter().filter(|p| p.descriptor.as_ref().is_ok_and(|d| d.needs_libraries())).count();
    let out = dir.path().join("a.granary");
    let (code, s) =
        harvest(path.to_str().unwrap(), &out, &["--backend", "vulkan", "--no-pipeline-libraries", "-j", "2"], &[]);
    assert_eq!(code, 0, "{s}");
    assert_eq!(s["expanded"].as_u64(), Some(open as u64), "{s}");
    let variants = s["variants"].as_u64().unwrap() as usize;
    assert!(variants >= open, "{s}");
    assert_eq!(s["pipelines"].as_u64(), Some((EXAMPLE_PIPELINES - open + variants) as u64));
    assert_eq!(s["device"]["libraries_created"], 0, "{s}");
    let archive = Archive::read(&out).unwrap();
    // The unspecialized originals are replaced; their variants are found by label.
    assert!(archive.lookup_label("post/blit/unspecialized").unwrap().is_none());
    let blit = archive.lookup_label("post/blit/unspecialized@rgba16float").unwrap().expect("variant");
    // It equals the script's own rgba16float blit: one entry, both labels.
    assert_eq!(Some(blit.key()), archive.lookup_label("post/blit/rgba16float").unwrap().map(|p| p.key()));
    let dev = &archive.devices().unwrap()[0];
    for p in archive.iter() {
        let set = dev.binaries(&p.unwrap()).unwrap().unwrap();
        assert_eq!(set.flags() & granary::archive::BINARY_SET_LIBRARY, 0, "every variant is a whole pipeline");
    }
    // Under --isolate the workers compile the same variants (each expands the pipeline it is
    // asked for a variant of): the same pipelines, keys, labels and outputs as in process.
    let isolated = dir.path().join("isolated.granary");
    let (code, si) = harvest(
        path.to_str().unwrap(),
        &isolated,
        &["--backend", "vulkan", "--no-pipeline-libraries", "-j", "2", "--isolate"],
        &[],
    );
    assert_eq!(code, 0, "{si}");
    assert_eq!((si["expanded"].clone(), si["variants"].clone()), (s["expanded"].clone(), s["variants"].clone()));
    assert_eq!(si["pipelines"], s["pipelines"], "{si}");
    let iso = Archive::read(&isolated).unwrap();
    let entries = |a: &Archive| {
        let pipelines: Vec<_> = a
            .iter()
            .map(|p| {
                let p = p.unwrap();
                let stages: Vec<_> = p
                    .stages()
                    .unwrap()
                    .iter()
                    .map(|s| (s.key, s.entry_point.to_string(), s.output(Target::Spirv).unwrap().map(<[u8]>::to_vec)))
                    .collect();
                (p.key(), p.state_bytes().unwrap().map(<[u8]>::to_vec), stages)
            })
            .collect();
        let labels: Vec<_> = a.labels().unwrap().into_iter().map(|(l, i)| (l.to_string(), i)).collect();
        (pipelines, labels)
    };
    assert!(entries(&iso) == entries(&archive), "the isolated harvest differs from the in-process one");
    // With libraries the field is ignored: the originals stay unspecialized.
    let (code, s) = harvest(path.to_str().unwrap(), &out, &["--backend", "vulkan", "-j", "2"], &[]);
    assert_eq!((code, s["expanded"].as_u64()), (0, Some(0)), "{s}");
}

/// A shard harvested with `expand_unspecialized` applied (a device without graphics pipeline
/// libraries) records the script hash of the expanded pipelines: `prune` recognises it by
/// that record and prunes it as that shard, variants and all; against the script without
/// `expand_unspecialized` (other pipelines, another split) the record is dropped.
#[test]
fn prune_recognises_a_shard_harvested_with_expand_unspecialized() {
    if device().is_none() {
        return;
    }
    let dir = common::tempdir();
    let mut script = example_json();
    let plain = dir.path().join("plain.json");
    std::fs::write(&plain, serde_json::to_string(&script).unwrap()).unwrap();
    script["expand_unspecialized"] = serde_json::json!({"formats": ["rgba8unorm", "rgba16float"]});
    let path = dir.path().join("pipelines.json");
    std::fs::write(&path, serde_json::to_string(&script).unwrap()).unwrap();
    let shard = dir.path().join("shard-0.granary");
    let (code, s) = harvest(
        path.to_str().unwrap(),
        &shard,
        &["--backend", "vulkan", "--no-pipeline-libraries", "-j", "2", "--shard", "0/2"],
        &[],
    );
    assert_eq!(code, 0, "{s}");
    assert!(s["variants"].as_u64().unwrap() > 0, "{s}");
    let out = dir.path().join("pruned.granary");
    let r = prune(&shard, &path, &out);
    assert_eq!((r["expanded"].as_bool(), r["shard"]["index"].as_u64()), (Some(true), Some(0)), "{r}");
    assert_eq!(r["shard"]["pipelines"], s["shard"]["pipelines"], "{r}");
    assert_eq!((r["dropped"].as_u64(), r["missing"].as_array().map(Vec::len)), (Some(0), Some(0)), "{r}");
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&shard).unwrap(), "pruned to itself, variants and all");
    let pruned = Archive::read(&out).unwrap();
    assert!(pruned.labels().unwrap().iter().any(|(l, _)| l.contains('@')), "shard 0 holds variants");
    // The plain script produces few of the shard's (expanded) pipelines: a prune that drops
    // most of an archive needs --force.
    let r = prune_with(&shard, &plain, &out, &["--force"]);
    assert!(r["shard"].is_null() && r["shard_dropped"].is_string() && r["expanded"] == false, "{r}");
    assert_eq!(Archive::read(&out).unwrap().shard(), None);

    // `plan --expand-unspecialized` plans exactly this split; without it, the unexpanded one.
    let plan = |extra: &[&str]| -> Value {
        let mut args = vec!["plan", path.to_str().unwrap(), "--shards", "2", "--json"];
        args.extend_from_slice(extra);
        let o = granary(&args, &[]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let expanded = plan(&["--expand-unspecialized"]);
    let record = Archive::read(&shard).unwrap().shard().unwrap();
    assert_eq!(expanded["script_hash"], format!("{:032x}", record.script), "{expanded}");
    let held = Archive::read(&shard).unwrap().len();
    assert_eq!(expanded["per_shard"][0]["pipelines"].as_u64(), Some(held as u64), "unique pipelines in shard 0");
    assert_eq!(expanded["expanded_variants"], s["variants"]);
    assert_ne!(plan(&[])["script_hash"], expanded["script_hash"]);
}

/// State the device cannot take is that pipeline's error, found before any driver call, and a
/// driver call that fails (injected) costs its pipeline only; both in-process.
#[test]
fn a_pipeline_the_device_refuses_costs_only_that_pipeline() {
    let Some(d) = device() else { return };
    let supported: Vec<u64> = d["sample_counts"].as_array().unwrap().iter().filter_map(Value::as_u64).collect();
    // A sample count the script accepts and the device lacks (lavapipe: 2; most GPUs: 64).
    let Some(samples) = [2u64, 8, 16, 32, 64].into_iter().find(|n| !supported.contains(n)) else {
        panic!("the device supports every sample count: {supported:?}");
    };
    let dir = common::tempdir();
    let mut script = example_json();
    let pipelines = script["pipelines"].as_array_mut().unwrap();
    let mut bad = pipelines.iter().find(|p| p["label"] == "post/blit/rgba16float").unwrap().clone();
    bad["label"] = Value::String("post/blit/unsupported-msaa".into());
    bad["render"]["sample_count"] = Value::from(samples);
    pipelines.push(bad);
    // A vertex stride past every device's maxVertexInputBindingStride (at least 2048 by the
    // specification; a 1 MiB stride is past every real device's), refused by name.
    let mut wide = pipelines.iter().find(|p| p["label"] == "prepass/low/static/opaque").unwrap().clone();
    wide["label"] = Value::String("prepass/low/static/too-wide".into());
    wide["render"]["vertex_buffers"][0]["stride"] = Value::from(1u64 << 20);
    pipelines.push(wide);
    let path = dir.path().join("pipelines.json");
    std::fs::write(&path, serde_json::to_string(&script).unwrap()).unwrap();
    let out = dir.path().join("a.granary");
    let (code, s) = harvest(
        path.to_str().unwrap(),
        &out,
        &["--backend", "vulkan", "-j", "2"],
        &[("GRANARY_FAULT", "device-fail:post/fxaa/low")],
    );
    assert_eq!(code, 1, "{s}");
    let failures = s["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 3, "{s}");
    let by = |label: &str| failures.iter().find(|f| f["pipeline"] == label).unwrap_or_else(|| panic!("{label}: {s}"));
    let msaa = by("post/blit/unsupported-msaa");
    assert_eq!(msaa["phase"], "device");
    assert!(msaa["message"].as_str().unwrap().contains(&format!("sample_count {samples} is not supported")), "{msaa}");
    let wide = by("prepass/low/static/too-wide");
    assert_eq!(wide["phase"], "device");
    let m = wide["message"].as_str().unwrap();
    assert!(m.contains("vertex_buffers[0].stride is 1048576") && m.contains("(maxVertexInputBindingStride)"), "{wide}");
    let fail = by("post/fxaa/low");
    assert_eq!(fail["phase"], "device");
    assert!(fail["message"].as_str().unwrap().contains("vkCreateGraphicsPipelines failed"), "{fail}");
    assert_eq!(s["succeeded"].as_u64().unwrap() as usize, EXAMPLE_PIPELINES - 1);
    assert!(s["failures"][0]["script_position"].as_str().is_some());
}

/// `--isolate`: each worker owns a device; a driver crash (injected SIGSEGV at the device
/// compile step) costs that pipeline only, and without one the archive equals in-process.
#[test]
fn isolated_workers_own_a_device_and_a_driver_crash_costs_one_pipeline() {
    let Some(d) = device() else { return };
    let dir = common::tempdir();
    let (iso, inproc, crashed) =
        (dir.path().join("i.granary"), dir.path().join("p.granary"), dir.path().join("c.granary"));
    let (code, s) =
        harvest(EXAMPLE, &iso, &["--backend", "vulkan", "--isolate", "-j", "2", "--recycle-after", "100"], &[]);
    assert_eq!(code, 0, "{s}");
    assert_eq!(s["device"]["in_workers"], true);
    // Every retired worker hands over its pipeline-cache data on a cache-data device; none
    // has any where the device captures binaries.
    let expected = if captures_binaries(&d) { 0 } else { s["workers_started"].as_u64().unwrap() };
    assert_eq!(s["worker_caches"].as_u64(), Some(expected), "{s}");
    harvest(EXAMPLE, &inproc, &["--backend", "vulkan", "-j", "2"], &[]);
    assert_eq!(portable_entries(&iso), portable_entries(&inproc));
    if !captures_binaries(&d) {
        assert_eq!(std::fs::read(&iso).unwrap(), std::fs::read(&inproc).unwrap());
    }
    let (code, s) = harvest(
        EXAMPLE,
        &crashed,
        &["--backend", "vulkan", "--isolate", "-j", "2"],
        &[("GRANARY_FAULT", "device-crash:post/fxaa/low")],
    );
    assert_eq!(code, 1, "{s}");
    let failures = s["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{s}");
    assert_eq!(failures[0]["pipeline"], "post/fxaa/low");
    assert!(failures[0]["message"].as_str().unwrap().contains("SIGSEGV"), "{s}");
    let archive = Archive::read(&crashed).unwrap();
    assert_eq!(archive.devices().unwrap()[0].pipeline_count(), EXAMPLE_PIPELINES - 1);
    assert!(archive.lookup_label("post/fxaa/low").unwrap().is_none());
}

/// `--resume` keeps the device's records of the pipelines it keeps; merging the device's
/// archive with a translations-only harvest of the same script keeps the device section
/// (the entries are equal, the device data is added).
#[test]
fn resume_and_merge_keep_device_sections() {
    let Some(d) = device() else { return };
    let dir = common::tempdir();
    let out = dir.path().join("a.granary");
    let (code, _) = harvest(EXAMPLE, &out, &["--backend", "vulkan", "-j", "2"], &[]);
    assert_eq!(code, 0);
    let before = std::fs::read(&out).unwrap();
    let (code, s) = harvest(EXAMPLE, &out, &["--backend", "vulkan", "-j", "2", "--resume"], &[]);
    assert_eq!((code, s["resumed"].as_u64()), (0, Some(EXAMPLE_PIPELINES as u64)), "{s}");
    let after = Archive::read(&out).unwrap();
    assert_eq!(after.devices().unwrap()[0].pipeline_count(), EXAMPLE_PIPELINES);
    if !captures_binaries(&d) {
        assert_eq!(std::fs::read(&out).unwrap(), before, "a resume that compiles nothing changes nothing");
    }
    let (none, merged) = (dir.path().join("n.granary"), dir.path().join("m.granary"));
    assert_eq!(harvest(EXAMPLE, &none, &["-j", "2"], &[]).0, 0);
    let o = granary(&["merge", none.to_str().unwrap(), out.to_str().unwrap(), "-o", merged.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&merged).unwrap(), std::fs::read(&out).unwrap(), "merge adds nothing and loses nothing");
}

/// `granary merge A B -o OUT`, expecting success; returns OUT's bytes.
fn merge(a: &Path, b: &Path, out: &Path) -> Vec<u8> {
    let o = granary(&["merge", a.to_str().unwrap(), b.to_str().unwrap(), "-o", out.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read(out).unwrap()
}

/// Each pipeline's binary sets and the pipeline caches of the device `identity`, read back.
type DeviceData = (Vec<(u128, Vec<granary::archive::DeviceBinaries>)>, Vec<granary::archive::DeviceCache>);
fn device_data(path: &Path, identity: &granary::archive::DeviceIdentity) -> DeviceData {
    let a = Archive::read(path).unwrap();
    a.verify().unwrap();
    let sets = a
        .entries()
        .unwrap()
        .into_iter()
        .map(|w| (w.entry.key.0, w.binaries.into_iter().filter(|b| *b.device == *identity).collect()))
        .collect();
    let caches = a.device_caches().unwrap().into_iter().filter(|c| *c.device == *identity).collect();
    (sets, caches)
}

/// Issue 23: with a device backend, `--resume` keeps a pipeline only where the archive holds
/// its binaries (or its pipeline-cache record) for this very device. An archive harvested
/// without a device, and one harvested on another driver version (forged: this GPU's identity
/// with driver_version + 1, as after a driver update), get every pipeline compiled here, and
/// the other device's section stays exactly as it was beside this device's: the bytes of a
/// fresh harvest on this device `granary merge`d with the old archive (on a cache-data device;
/// driver binaries differ from compile to compile, so elsewhere the entries and sections are
/// compared). `warm` then matches the device, and one more resume compiles nothing. (Before
/// the fix every pipeline was kept by key: 0 created, no binaries for this device, exit 0.)
#[test]
fn resume_on_another_device_or_driver_compiles_there_and_keeps_the_other_sections() {
    let Some(d) = device() else { return };
    let dir = common::tempdir();
    let at = |n: &str| dir.path().join(n);
    let fresh = at("fresh.granary");
    let (code, f) = harvest(EXAMPLE, &fresh, &["--backend", "vulkan", "-j", "2"], &[]);
    assert_eq!(code, 0, "{f}");
    let here = Archive::read(&fresh).unwrap().devices().unwrap()[0].identity().clone();
    let created = |s: &Value| (s["device"]["pipelines_created"].clone(), s["device"]["libraries_created"].clone());
    let n = Some(EXAMPLE_PIPELINES as u64);

    // An archive harvested without a device: nothing for this one yet.
    let none = at("none.granary");
    assert_eq!(harvest(EXAMPLE, &none, &["-j", "2"], &[]).0, 0);
    let out = at("out.granary");
    std::fs::copy(&none, &out).unwrap();
    let (code, s) = harvest(EXAMPLE, &out, &["--backend", "vulkan", "-j", "2", "--resume"], &[]);
    assert_eq!(code, 0, "{s}");
    assert_eq!(created(&s), created(&f), "every pipeline created on the device, as a fresh harvest: {s}");
    assert_eq!((s["resumed"].as_u64(), s["recompiled_for_device"].as_u64(), s["succeeded"].as_u64()), (Some(0), n, n));
    let a = Archive::read(&out).unwrap();
    let devices = a.devices().unwrap();
    assert_eq!(devices.len(), 1);
    assert_eq!((devices[0].identity(), devices[0].pipeline_count()), (&here, EXAMPLE_PIPELINES));
    assert_eq!(portable_entries(&out), portable_entries(&fresh));
    if !captures_binaries(&d) {
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&fresh).unwrap(), "a fresh harvest's bytes");
        assert_eq!(std::fs::read(&out).unwrap(), merge(&fresh, &none, &at("m0.granary")));
    }

    // An archive harvested on another driver version: warm refuses it here; resumed, it gets
    // this device's section beside the old one.
    let old = at("old-driver.granary");
    common::forge_driver_version(&fresh, &old);
    let theirs = Archive::read(&old).unwrap().devices().unwrap()[0].identity().clone();
    assert_ne!(theirs, here);
    let w = granary(&["warm", old.to_str().unwrap(), "-j", "2"], &[]);
    assert_eq!(w.status.code(), Some(2), "{}", String::from_utf8_lossy(&w.stderr));
    assert!(String::from_utf8_lossy(&w.stderr).contains("driver_version"));
    std::fs::copy(&old, &out).unwrap();
    let (code, s) = harvest(EXAMPLE, &out, &["--backend", "vulkan", "-j", "2", "--resume"], &[]);
    assert_eq!(code, 0, "{s}");
    assert_eq!(created(&s), created(&f), "{s}");
    assert_eq!((s["resumed"].as_u64(), s["recompiled_for_device"].as_u64(), s["succeeded"].as_u64()), (Some(0), n, n));
    let a = Archive::read(&out).unwrap();
    let mut ids: Vec<_> = a.devices().unwrap().iter().map(|d| (d.identity().clone(), d.pipeline_count())).collect();
    ids.sort_by_key(|(i, _)| i.id());
    let mut want = vec![(here.clone(), EXAMPLE_PIPELINES), (theirs.clone(), EXAMPLE_PIPELINES)];
    want.sort_by_key(|(i, _)| i.id());
    assert_eq!(ids, want, "both devices' sections, every pipeline in each");
    assert!(device_data(&out, &theirs) == device_data(&old, &theirs), "the old driver's section is kept as it was");
    assert_eq!(portable_entries(&out), portable_entries(&fresh));
    if !captures_binaries(&d) {
        assert!(device_data(&out, &here) == device_data(&fresh, &here), "this device's section is a fresh harvest's");
        let merged = merge(&fresh, &old, &at("m1.granary"));
        assert_eq!(std::fs::read(&out).unwrap(), merged, "resume = fresh harvest here merged with the old archive");
        assert_eq!(merge(&old, &fresh, &at("m2.granary")), merged);
    }
    let w = granary(&["warm", out.to_str().unwrap(), "--json", "-j", "2"], &[]);
    assert_eq!(w.status.code(), Some(0), "{}", String::from_utf8_lossy(&w.stderr));
    let w: Value = serde_json::from_slice(&w.stdout).unwrap();
    assert_eq!((w["matches_device"].as_bool(), w["created"].as_u64()), (Some(true), n), "{w}");

    // Resumed once more on this device: everything is kept, nothing is created.
    let before = std::fs::read(&out).unwrap();
    let (code, s) = harvest(EXAMPLE, &out, &["--backend", "vulkan", "-j", "2", "--resume"], &[]);
    assert_eq!(code, 0, "{s}");
    assert_eq!((s["resumed"].as_u64(), s["recompiled_for_device"].as_u64()), (n, Some(0)), "{s}");
    assert_eq!(created(&s), (Value::from(0), Value::from(0)), "{s}");
    if !captures_binaries(&d) {
        assert_eq!(std::fs::read(&out).unwrap(), before, "a resume that compiles nothing changes nothing");
    }
}

/// A device without graphics pipeline libraries harvests a script's `expand_unspecialized`
/// variants instead of its unspecialized pipelines. Resuming, that way, an archive whose
/// unspecialized pipelines carry another driver's binaries would drop those binaries (a merge
/// keeps them): refused before anything compiles (exit 2), saying to harvest into a new
/// archive and merge, and the archive is left as it was.
#[test]
fn resume_refuses_to_drop_another_devices_pipelines_of_the_other_expansion() {
    if device().is_none() {
        return;
    }
    let dir = common::tempdir();
    let path = expanded_example(dir.path(), &["rgba8unorm"]);
    let (a, old) = (dir.path().join("a.granary"), dir.path().join("old.granary"));
    let (code, s) = harvest(path.to_str().unwrap(), &a, &["--backend", "vulkan", "-j", "2"], &[]);
    assert_eq!((code, s["expanded"].as_u64()), (0, Some(0)), "{s}");
    common::forge_driver_version(&a, &old);
    let before = std::fs::read(&old).unwrap();
    let args = ["harvest", path.to_str().unwrap(), "-o", old.to_str().unwrap(), "--backend", "vulkan"];
    let o = granary(&[&args[..], &["--no-pipeline-libraries", "--resume", "-j", "2"]].concat(), &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot resume") && err.contains("expand_unspecialized"), "{err}");
    let theirs = Archive::read(&old).unwrap().devices().unwrap()[0].identity().describe();
    assert!(err.contains("granary merge") && err.contains(&theirs), "names the other device and what to do: {err}");
    assert_eq!(std::fs::read(&old).unwrap(), before, "the archive is left as it was");
}

/// A pipeline recompiled on the device for `--resume` must have the contents the archive holds
/// for its key (a merge refuses one key with two contents): here one entry of a device-less
/// archive lost its layout. The resume compiles, then refuses naming the pipeline (exit 2),
/// and the archive is left as it was.
#[test]
fn resume_refuses_a_recompiled_pipeline_whose_contents_differ_from_the_archive() {
    if device().is_none() {
        return;
    }
    let dir = common::tempdir();
    let (none, out) = (dir.path().join("none.granary"), dir.path().join("out.granary"));
    assert_eq!(harvest(EXAMPLE, &none, &["-j", "2"], &[]).0, 0);
    let a = Archive::read(&none).unwrap();
    let mut entries = a.entries().unwrap();
    let changed = entries[0].entry.key.0;
    let mut entry = (*entries[0].entry).clone();
    entry.layout = None;
    entries[0].entry = std::sync::Arc::new(entry);
    std::fs::write(&out, granary::archive::encode(&entries, &a.meta().unwrap())).unwrap();
    let before = std::fs::read(&out).unwrap();
    let o =
        granary(&["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "--backend", "vulkan", "--resume", "-j", "2"], &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot resume") && err.contains(&format!("{changed:032x}")), "{err}");
    assert!(err.contains("other contents"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), before, "the archive is left as it was");
}

/// Every command that does not need Vulkan works where no Vulkan driver can be found, and the
/// ones that need it say so.
#[test]
fn without_a_driver_only_vulkan_commands_fail_and_they_say_why() {
    let dir = common::tempdir();
    let env = [("VK_DRIVER_FILES", "/nonexistent/icd.json"), ("VK_ICD_FILENAMES", "/nonexistent/icd.json")];
    let out = dir.path().join("a.granary");
    let (code, s) = harvest(EXAMPLE, &out, &["-j", "2"], &env);
    assert_eq!(code, 0, "{s}");
    let o = granary(&["devices"], &env);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("Vulkan"), "{err}");
    let o = granary(&["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "--backend", "vulkan"], &env);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot open the Vulkan device"));
    // The binary does not link the Vulkan loader: it is opened at run time.
    if let Ok(ldd) = Command::new("ldd").arg(bin()).output() {
        assert!(!String::from_utf8_lossy(&ldd.stdout).contains("libvulkan"), "granary links libvulkan");
    }
}

/// An unsharded archive harvested with `expand_unspecialized` applied has no record saying
/// so: `prune` recognises it by its entries (the expanded pipelines find more of them than
/// the script's own) and keeps the variants instead of dropping them.
#[test]
fn prune_keeps_the_variants_of_an_unsharded_expanded_harvest() {
    if device().is_none() {
        return;
    }
    let dir = common::tempdir();
    let path = expanded_example(dir.path(), &["rgba8unorm"]);
    let out = dir.path().join("a.granary");
    let (code, s) =
        harvest(path.to_str().unwrap(), &out, &["--backend", "vulkan", "--no-pipeline-libraries", "-j", "2"], &[]);
    assert_eq!(code, 0, "{s}");
    assert!(s["variants"].as_u64().unwrap() > 0, "{s}");
    let pruned = dir.path().join("pruned.granary");
    let r = prune(&out, &path, &pruned);
    assert_eq!(r["expanded"], true, "{r}");
    assert_eq!((r["dropped"].as_u64(), r["missing"].as_array().map(Vec::len)), (Some(0), Some(0)), "{r}");
    assert_eq!(std::fs::read(&pruned).unwrap(), std::fs::read(&out).unwrap(), "pruned to itself, variants and all");
    // The archive of a harvest with libraries (no expansion) is pruned without it.
    let libs = dir.path().join("libs.granary");
    let (code, s) = harvest(path.to_str().unwrap(), &libs, &["--backend", "vulkan", "-j", "2"], &[]);
    assert_eq!(code, 0, "{s}");
    if s["variants"].as_u64() == Some(0) {
        let r = prune(&libs, &path, &pruned);
        assert_eq!((r["expanded"].as_bool(), r["dropped"].as_u64()), (Some(false), Some(0)), "{r}");
        assert_eq!(std::fs::read(&pruned).unwrap(), std::fs::read(&libs).unwrap());
    }
}

/// A harvest of the example with only `extra` validation settings in its environment (the
/// suite's own `GRANARY_VALIDATE`/`GRANARY_VALIDATE_EXPECT` removed): exit code, the JSON on
/// stdout (which must parse: the layer prints nothing there), stderr. `None`: the validation
/// layer is missing (a failure under `GRANARY_VALIDATE=1` or in CI).
fn validated_harvest(out: &Path, args: &[&str], env: &[(&str, &str)]) -> Option<(i32, Value, String)> {
    let mut c = Command::new(bin());
    c.args(["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "--json", "-q", "--backend", "vulkan"])
        .args(args)
        .env_remove("GRANARY_FAULT")
        .env_remove("GRANARY_VALIDATE")
        .env_remove("GRANARY_VALIDATE_EXPECT");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("run granary");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    if o.status.code() == Some(2) && stderr.contains("vulkan-validationlayers") {
        let required = std::env::var("GRANARY_VALIDATE").is_ok_and(|v| v == "1") || std::env::var_os("CI").is_some();
        assert!(!required, "the validation layer is required here (GRANARY_VALIDATE=1 or CI): {stderr}");
        eprintln!("SKIPPED: no validation layer ({stderr}); this test checked nothing");
        return None;
    }
    let json = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("stdout is not one JSON document ({e}):\n{}\n{stderr}", String::from_utf8_lossy(&o.stdout))
    });
    Some((o.status.code().unwrap_or(-1), json, stderr))
}

/// `(errors, warnings, expected)` per message id of a `validation` object.
fn by_id(s: &Value) -> std::collections::BTreeMap<String, (u64, u64, bool)> {
    let ids = s["validation"]["by_id"].as_object().unwrap_or_else(|| panic!("no validation.by_id: {s}"));
    ids.iter()
        .map(|(id, c)| {
            (id.clone(), (c["errors"].as_u64().unwrap(), c["warnings"].as_u64().unwrap(), c["expected"] == true))
        })
        .collect()
}

/// `harvest --validate --json`: stdout stays one JSON document, with `validation_messages`
/// equal to its per-id breakdown; the exit status is 1 exactly when the layer reported an
/// error (every pipeline of the example lands); an `--isolate` harvest counts exactly the
/// messages of the in-process one (each worker's reach the parent), message id by message id.
#[test]
fn validate_counts_the_layers_messages_in_json_and_workers_report_theirs_exactly() {
    if device().is_none() {
        return;
    }
    let dir = common::tempdir();
    let Some((code, s, stderr)) = validated_harvest(&dir.path().join("a.granary"), &["-j", "1", "--validate"], &[])
    else {
        return;
    };
    assert_eq!(s["succeeded"], EXAMPLE_PIPELINES as u64, "{stderr}");
    let n = s["validation_messages"].as_u64().unwrap_or_else(|| panic!("no validation_messages: {s}"));
    let ids = by_id(&s);
    assert_eq!(ids.values().map(|(e, w, _)| e + w).sum::<u64>(), n, "{s}");
    let errors: u64 = ids.values().map(|(e, _, _)| e).sum();
    assert_eq!(s["validation"]["errors"], errors);
    assert_eq!(code, i32::from(errors > 0), "exit 1 exactly when the layer reported an error: {stderr}");
    // Every message is printed on stderr, with its pipeline; none on stdout (parsed above).
    for id in ids.keys() {
        assert!(stderr.contains(id.as_str()) && stderr.contains("in pipeline '"), "{id} not on stderr: {stderr}");
    }
    let Some((icode, i, istderr)) =
        validated_harvest(&dir.path().join("i.granary"), &["-j", "1", "--validate", "--isolate"], &[])
    else {
        return;
    };
    assert_eq!((icode, i["succeeded"].as_u64()), (code, Some(EXAMPLE_PIPELINES as u64)), "{istderr}");
    assert_eq!(by_id(&i), ids, "the workers' messages, counted by the parent");
    assert_eq!(i["validation_messages"], n);
}

/// `GRANARY_VALIDATE=1` (what `.ci/run` sets) validates without `--validate` and fails on any
/// message, warnings included; `GRANARY_VALIDATE_EXPECT` naming every id seen makes the same
/// harvest succeed, each message still counted and marked expected.
#[test]
fn granary_validate_fails_on_any_unexpected_message_and_expected_ids_are_not_failures() {
    if device().is_none() {
        return;
    }
    let dir = common::tempdir();
    let out = dir.path().join("v.granary");
    let Some((code, s, stderr)) = validated_harvest(&out, &["-j", "2"], &[("GRANARY_VALIDATE", "1")]) else {
        return;
    };
    assert_eq!(s["succeeded"], EXAMPLE_PIPELINES as u64, "{stderr}");
    let n = s["validation_messages"].as_u64().unwrap_or_else(|| panic!("GRANARY_VALIDATE=1 validates: {s}"));
    assert_eq!(s["validation"]["warnings_fail"], true);
    assert_eq!(code, i32::from(n > 0), "any unexpected message fails under GRANARY_VALIDATE=1: {stderr}");
    let ids: Vec<String> = by_id(&s).into_keys().collect();
    let expect = ids.join(",");
    let env = [("GRANARY_VALIDATE", "1"), ("GRANARY_VALIDATE_EXPECT", expect.as_str())];
    let Some((code, e, stderr)) = validated_harvest(&out, &["-j", "2"], &env) else { return };
    assert_eq!(code, 0, "every message expected: {stderr}");
    assert_eq!((e["validation_messages"].as_u64(), e["validation"]["unexpected"].as_u64()), (Some(n), Some(0)), "{e}");
    assert!(by_id(&e).values().all(|(_, _, expected)| *expected), "{e}");
    // `--validate` needs a backend that opens a device.
    let o = granary(&["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "--validate"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--validate needs --backend vulkan"));
}

/// Issue 24 item 4: `--capture` says what a harvest stored and why. `auto` is the default;
/// `device` is the device's own kind; `cache` stores cache data anywhere; `binaries` is
/// refused, exit 2, on a device without `VK_KHR_pipeline_binary`; `auto` there stores cache
/// data saying why, and on a device with binaries measures both on a sample (each harvested and
/// warmed) and stores the one its figures chose — and keeps that choice, unmeasured, when it
/// harvests the same output again, or a new output on a machine that recorded it (until
/// `--recalibrate`); a calibration that cannot run stores cache data and says why; a sharded
/// harvest does not measure.
#[test]
fn capture_modes_say_what_they_stored_and_why() {
    let Some(d) = device() else { return };
    let dir = common::tempdir();
    let out = dir.path().join("c.granary");
    let out_s = out.to_str().unwrap();
    let run = |extra: &[&str]| harvest(EXAMPLE, &out, &[&["--backend", "vulkan", "-j", "2"][..], extra].concat(), &[]);

    // The default, as a user types it: auto.
    let o = granary_as_given(&["harvest", EXAMPLE, "-o", out_s, "--json", "-q", "--backend", "vulkan", "-j", "2"], &[]);
    let s: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    assert!(o.status.code().is_some_and(|c| c <= 1), "{s}");
    assert_eq!(s["capture"]["asked"], "--capture auto", "{s}");
    assert_eq!(s["capture"]["mode"], s["device"]["captures"], "{s}");
    assert_eq!(s["capture"]["calibration"].is_null(), !captures_binaries(&d), "{s}");
    std::fs::remove_file(&out).unwrap();

    let (code, s) = run(&["--capture", "device"]);
    assert!(code <= 1, "{s}");
    assert_eq!(s["capture"]["asked"], "--capture device", "{s}");
    assert_eq!(s["capture"]["mode"], s["device"]["captures"], "{s}");
    assert!(s["capture"]["calibration"].is_null(), "{s}");

    // A shard does not measure: it takes the device's own kind.
    let shard = dir.path().join("shard.granary");
    let (code, s) = harvest(
        EXAMPLE,
        &shard,
        &["--backend", "vulkan", "-j", "2", "--capture", "auto", "--shard", "0/4", "--check-outputs", "off"],
        &[],
    );
    assert!(code <= 1, "{s}");
    assert!(s["capture"]["calibration"].is_null(), "{s}");
    assert_eq!(s["capture"]["mode"], s["device"]["captures"], "{s}");
    if captures_binaries(&d) {
        assert!(s["capture"]["reason"].as_str().unwrap().contains("sharded"), "{s}");
    }

    let (code, s) = run(&["--capture", "cache"]);
    assert!(code <= 1, "{s}");
    assert_eq!((&s["capture"]["mode"], &s["device"]["captures"]), (&"cache-data".into(), &"cache-data".into()), "{s}");

    // A new output: nothing recorded for this device yet.
    std::fs::remove_file(&out).unwrap();
    let (code, s) = run(&["--capture", "auto"]);
    assert!(code <= 1, "{s}");
    assert_eq!(s["capture"]["asked"], "--capture auto", "{s}");
    assert_eq!(s["capture"]["mode"], s["device"]["captures"], "{s}");
    if captures_binaries(&d) {
        let c = &s["capture"]["calibration"];
        for kind in ["binaries", "cache"] {
            assert!(c[kind]["harvest_seconds"].as_f64().unwrap() > 0.0, "{s}");
            assert!(c[kind]["warm_seconds"].as_f64().unwrap() > 0.0, "{s}");
            // Three warms each, the median reported.
            let runs: Vec<f64> = c[kind]["warm_runs"].as_array().unwrap().iter().map(|r| r.as_f64().unwrap()).collect();
            assert_eq!(runs.len(), 3, "{s}");
            assert!(runs.contains(&c[kind]["warm_seconds"].as_f64().unwrap()), "{s}");
        }
        assert!(c["pipelines"].as_u64().unwrap() > 0, "{s}");
        // Harvesting the same output again keeps what the first one decided, unmeasured.
        let chosen = s["capture"]["mode"].clone();
        let (code, s) = run(&["--capture", "auto"]);
        assert!(code <= 1, "{s}");
        assert_eq!(s["capture"]["mode"], chosen, "{s}");
        assert!(s["capture"]["calibration"].is_null(), "{s}");
        assert!(s["capture"]["reason"].as_str().unwrap().contains("kept from the earlier harvest"), "{s}");
        // A new output on a machine with a record of the calibration: the record answers.
        let record = dir.path().join("record");
        let with_record = [("GRANARY_CACHE_DIR", record.to_str().unwrap())];
        let recorded = |extra: &[&str]| {
            harvest(
                EXAMPLE,
                &out,
                &[&["--backend", "vulkan", "-j", "2", "--capture", "auto"][..], extra].concat(),
                &with_record,
            )
        };
        std::fs::remove_file(&out).unwrap();
        let (code, s) = recorded(&[]);
        assert!(code <= 1, "{s}");
        assert!(!s["capture"]["calibration"].is_null(), "nothing recorded yet: {s}");
        assert!(s["capture"]["reason"].as_str().unwrap().contains("recorded in"), "{s}");
        let chosen = s["capture"]["mode"].clone();
        std::fs::remove_file(&out).unwrap();
        let (code, s) = recorded(&[]);
        assert!(code <= 1, "{s}");
        assert_eq!(s["capture"]["mode"], chosen, "{s}");
        assert!(s["capture"]["calibration"].is_null(), "{s}");
        assert!(s["capture"]["reason"].as_str().unwrap().contains("kept from this machine's record"), "{s}");
        // --recalibrate measures regardless; --calibrate-pipelines sizes the sample: 335
        // pipelines at 100 a shard is 4 shards.
        std::fs::remove_file(&out).unwrap();
        let (code, s) = recorded(&["--recalibrate", "--calibrate-pipelines", "100"]);
        assert!(code <= 1, "{s}");
        assert_eq!(s["capture"]["calibration"]["shards"], 4, "{s}");
        // A calibration that cannot run does not fail the harvest: the sample's harvests
        // (the whole script at 400 a shard) crash on a pipeline, the harvest itself survives
        // it under --isolate and stores cache data, saying why.
        std::fs::remove_file(&out).unwrap();
        let (code, s) = harvest(
            EXAMPLE,
            &out,
            &["--backend", "vulkan", "-j", "2", "--isolate", "--capture", "auto", "--calibrate-pipelines", "400"],
            &[("GRANARY_FAULT", "device-crash:post/fxaa/low")],
        );
        assert_eq!(code, 1, "{s}");
        assert_eq!(
            (&s["capture"]["mode"], &s["device"]["captures"]),
            (&"cache-data".into(), &"cache-data".into()),
            "{s}"
        );
        assert!(s["capture"]["calibration"].is_null(), "{s}");
        assert!(s["capture"]["reason"].as_str().unwrap().contains("the calibration failed"), "{s}");
        assert_eq!(s["failures"].as_array().map(Vec::len), Some(1), "{s}");
        std::fs::remove_file(&out).unwrap();
        let o = granary(&["harvest", EXAMPLE, "-o", out_s, "--backend", "vulkan", "--capture", "binaries", "-q"], &[]);
        assert!(o.status.code().is_some_and(|c| c <= 1), "{}", String::from_utf8_lossy(&o.stderr));
    } else {
        assert!(s["capture"]["calibration"].is_null(), "{s}");
        assert!(s["capture"]["reason"].as_str().unwrap().contains("no VK_KHR_pipeline_binary"), "{s}");
        // The same output again: the section this harvest wrote for this device and driver is
        // the recorded decision.
        let (code, s) = run(&["--capture", "auto"]);
        assert!(code <= 1, "{s}");
        assert_eq!(s["capture"]["mode"], "cache-data", "{s}");
        assert!(s["capture"]["reason"].as_str().unwrap().contains("kept from the earlier harvest"), "{s}");
        let o = granary(&["harvest", EXAMPLE, "-o", out_s, "--backend", "vulkan", "--capture", "binaries", "-q"], &[]);
        assert_eq!(o.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&o.stderr).contains("no VK_KHR_pipeline_binary"));
    }
}

/// `--whole-variants` on a device with graphics pipeline libraries: each pipeline with
/// unspecialized colour output is archived as a library and, beside it, as its
/// `expand_unspecialized` variants (whole pipelines labelled `LABEL@FORMAT`). The loader
/// (`warm`) creates the variant in place of linking for the formats one was harvested for
/// (from its own binaries where the device has them), links for any other format, and never
/// takes a pipeline whose label merely looks like a variant's. `prune`, `--resume` and
/// `plan` make the same selection.
#[test]
fn whole_variants_join_their_libraries_and_the_loader_creates_them_for_their_formats() {
    let Some(dev) = device() else { return };
    if dev["supports"]["graphics_pipeline_library"] != true {
        return;
    }
    let dir = common::tempdir();
    let path = expanded_example(dir.path(), &["rgba8unorm"]);
    let parsed = Script::load(&path).unwrap();
    let open = parsed.pipelines.iter().filter(|p| p.descriptor.as_ref().is_ok_and(|d| d.needs_libraries())).count();
    let out = dir.path().join("a.granary");
    let args = ["--backend", "vulkan", "-j", "2", "--whole-variants"];
    let (code, s) = harvest(path.to_str().unwrap(), &out, &args, &[]);
    assert_eq!(code, 0, "{s}");
    assert_eq!((s["whole_variants"].as_bool(), s["expanded"].as_u64()), (Some(true), Some(open as u64)), "{s}");
    assert_eq!(s["variants"].as_u64(), Some(open as u64), "one format: one variant each");
    assert_eq!(s["pipelines"].as_u64(), Some((parsed.pipelines.len() + open) as u64), "{s}");
    assert_eq!(s["failed"], 0, "{s}");
    let archive = Archive::read(&out).unwrap();
    let library = archive.lookup_label("post/blit/unspecialized").unwrap().expect("the library stays");
    let variant = archive.lookup_label("post/blit/unspecialized@rgba8unorm").unwrap().expect("its variant");
    assert_ne!(library.key(), variant.key());
    if captures_binaries(&dev) {
        let d = &archive.devices().unwrap()[0];
        let flags = |p: &granary::archive::PipelineRef<'_>| d.binaries(p).unwrap().expect("binaries").flags();
        assert_ne!(flags(&library) & granary::archive::BINARY_SET_LIBRARY, 0);
        assert_eq!(flags(&variant) & granary::archive::BINARY_SET_LIBRARY, 0, "the variant is whole");
    }
    let w = warm_json(&out, "rgba8unorm");
    assert_eq!((w["failed"].as_u64(), w["linked"].as_u64()), (Some(0), Some(0)), "nothing links");
    assert_eq!(w["whole_variants"].as_u64(), Some(open as u64));
    let blit = warmed(&w, "post/blit/unspecialized");
    assert_eq!((blit["variant"].as_bool(), blit["linked"].as_bool()), (Some(true), Some(false)), "{blit}");
    if captures_binaries(&dev) {
        assert_eq!(blit["source"], "binaries", "the variant from its own binaries: {blit}");
    }
    // Another format: no variant, every library links.
    let w = warm_json(&out, "bgra8unorm");
    assert_eq!((w["whole_variants"].as_u64(), w["linked"].as_u64()), (Some(0), Some(open as u64)), "{}", w["linked"]);
    // Prune finds the selection with the variants beside their pipelines and keeps it all.
    let pruned = dir.path().join("pruned.granary");
    let r = prune(&out, &path, &pruned);
    assert_eq!((r["whole_variants"].as_bool(), r["dropped"].as_u64()), (Some(true), Some(0)), "{r}");
    assert_eq!(std::fs::read(&pruned).unwrap(), std::fs::read(&out).unwrap(), "pruned to itself");
    // Resuming with the same selection compiles nothing.
    let (code, s) = harvest(path.to_str().unwrap(), &out, &[&args[..], &["--resume"]].concat(), &[]);
    assert_eq!((code, s["resumed"].as_u64()), (0, s["pipelines"].as_u64()), "{s}");
    // `plan` counts the same pipelines.
    let o = granary(&["plan", path.to_str().unwrap(), "--shards", "2", "--whole-variants", "--json"], &[]);
    let plan: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan["expanded_variants"].as_u64(), Some(open as u64), "{plan}");
    assert_eq!(plan["pipelines"].as_u64(), Some(archive.len() as u64), "{plan}");

    // A decoy: a whole pipeline labelled as the rgba8unorm variant of a library pipeline, but
    // with another format (the script's rgba16float blit). The loader links the library.
    let script = example_json();
    let find = |label: &str| script["pipelines"].as_array().unwrap().iter().find(|p| p["label"] == label).cloned();
    let mut base = find("post/blit/unspecialized").expect("the blit library");
    let mut decoy = find("post/blit/rgba16float").expect("the rgba16float blit");
    base["label"] = Value::String("blit".into());
    decoy["label"] = Value::String("blit@rgba8unorm".into());
    let small = serde_json::json!({"granary_script": script["granary_script"], "libraries": script["libraries"],
        "pipelines": [base, decoy]});
    let small_path = dir.path().join("decoy.json");
    std::fs::write(&small_path, serde_json::to_string(&small).unwrap()).unwrap();
    let decoyed = dir.path().join("decoy.granary");
    let (code, s) = harvest(small_path.to_str().unwrap(), &decoyed, &["--backend", "vulkan", "-j", "2"], &[]);
    assert_eq!(code, 0, "{s}");
    let w = warm_json(&decoyed, "rgba8unorm");
    let blit = warmed(&w, "blit");
    assert_eq!(
        (blit["variant"].as_bool(), blit["linked"].as_bool()),
        (Some(false), Some(true)),
        "decoy refused: {blit}"
    );
}

/// `granary warm ARCHIVE --json -j 2 --link-format FORMAT`, expecting success.
fn warm_json(archive: &Path, format: &str) -> Value {
    let o = granary(&["warm", archive.to_str().unwrap(), "--json", "-j", "2", "--link-format", format], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The record `warm --json` gives the pipeline labelled `label`.
fn warmed(w: &Value, label: &str) -> Value {
    w["records"].as_array().unwrap().iter().find(|r| r["label"] == label).cloned().unwrap_or_else(|| panic!("{label}"))
}
