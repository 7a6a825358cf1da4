//! The harvest library on the bundled example: the archive's bytes do not depend on the thread
//! count or on flushes; `--resume` after a shader edit or a relabel equals a fresh harvest of
//! the script as it is now; `prune` keeps exactly what a script produces, relabelled from it.
//! (Moved from granary-cli's tests, which keep what the binary adds: arguments, messages,
//! exit codes and `--json`.)

mod common;

use common::{assert_labels_unique, copy_example, edit_shader, harvest_options, EXAMPLE};
use granary::archive::{self, Archive};
use granary::descriptor::{Target, TargetSet};
use granary::harvest::{harvest, prune, EarlyFrontEnd, HarvestOptions, HarvestSummary, IsolateOptions};
use std::path::{Path, PathBuf};

fn run(opts: &HarvestOptions) -> HarvestSummary {
    let s = harvest(opts, &|_| {}).expect("harvest");
    assert_eq!(s.failed, 0, "{:?}", s.failures);
    s
}

#[test]
fn one_thread_and_eight_with_flushes_write_byte_identical_archives() {
    let dir = common::tempdir();
    let (a, b) = (dir.path().join("j1.granary"), dir.path().join("j8.granary"));
    let targets = TargetSet::of(&[Target::Spirv, Target::Msl]);
    let s1 = run(&HarvestOptions { threads: 1, targets, ..harvest_options(Path::new(EXAMPLE), &a) });
    let s8 =
        run(&HarvestOptions { threads: 8, targets, flush_every: Some(25), ..harvest_options(Path::new(EXAMPLE), &b) });
    assert_eq!(s1.pipelines, s8.pipelines);
    assert!(s8.flushes >= 1, "flushes happened during the 8-thread run");
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

/// The front end started before the harvest (as the CLI does while the device opens) changes
/// nothing the harvest writes or counts: the same archive bytes, libraries parsed, unique stage
/// functions and output checks as without it, at one thread and at eight; the harvest finds
/// the early work done (every library and stage function task ran early). Where its selection
/// could differ from the harvest's (`--resume`, `--isolate`, a shard) or the preflight refuses
/// the options, it does not start.
#[test]
fn an_early_front_end_changes_no_byte_and_no_count() {
    let dir = common::tempdir();
    for threads in [1, 8] {
        let (a, b) =
            (dir.path().join(format!("plain{threads}.granary")), dir.path().join(format!("early{threads}.granary")));
        let plain = run(&HarvestOptions { threads, ..harvest_options(Path::new(EXAMPLE), &a) });
        let opts = HarvestOptions { threads, ..harvest_options(Path::new(EXAMPLE), &b) };
        let early = EarlyFrontEnd::start(&opts, false).expect("an early front end starts").wait();
        assert_eq!(
            early.tasks as u64,
            plain.libraries_parsed + plain.unique_stage_functions,
            "every library and stage function ran early"
        );
        let s = run(&HarvestOptions { early: Some(early), ..opts });
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), "{threads} threads: same bytes");
        assert_eq!(
            (s.succeeded, s.libraries_parsed, s.unique_stage_functions, s.stage_references),
            (plain.succeeded, plain.libraries_parsed, plain.unique_stage_functions, plain.stage_references)
        );
        let checked = |s: &HarvestSummary| s.output_checks.stats.as_ref().map(|c| c.checked);
        assert_eq!(checked(&s), checked(&plain), "each output checked once");
    }
    let out = dir.path().join("x.granary");
    let opts = harvest_options(Path::new(EXAMPLE), &out);
    assert!(EarlyFrontEnd::start(&HarvestOptions { resume: true, ..opts.clone() }, false).is_none());
    assert!(EarlyFrontEnd::start(&opts, true).is_none(), "a shard selects its own pipelines");
    let isolate = IsolateOptions {
        worker: granary::harvest::WorkerCommand {
            program: PathBuf::from("granary-worker-that-never-runs"),
            args: Vec::new(),
            env: Vec::new(),
        },
        timeout: None,
        recycle_after: 1,
        memory_limit: None,
        device: None,
    };
    assert!(EarlyFrontEnd::start(&HarvestOptions { isolate: Some(isolate), ..opts.clone() }, false).is_none());
    let missing = dir.path().join("no-such-folder").join("x.granary");
    assert!(EarlyFrontEnd::start(&harvest_options(Path::new(EXAMPLE), &missing), false).is_none(), "preflight");
}

/// Issue 7 item 3: after a shader is edited, resume keeps only the entries the script still
/// produces and compiles the rest; the archive equals a fresh harvest of the edited script
/// byte for byte (before the fix it held 354 pipelines for 335, 19 labels doubled).
#[test]
fn resume_after_editing_a_shader_equals_a_fresh_harvest_of_the_edited_script() {
    let dir = common::tempdir();
    let script = copy_example(dir.path());
    let out = dir.path().join("out.granary");
    let first = run(&harvest_options(&script, &out));
    let n = first.pipelines;
    assert_eq!(first.archive_pipelines, n);
    edit_shader(&script, "postprocess.wgsl");
    let s = run(&HarvestOptions { resume: true, ..harvest_options(&script, &out) });
    assert!(s.dropped > 0 && s.dropped < n, "some but not all pipelines use the edited shader: {}", s.dropped);
    assert_eq!(s.resumed + s.dropped, n, "every pipeline not using the shader was kept");
    assert_eq!((s.archive_pipelines, s.succeeded), (n, n));
    let fresh = dir.path().join("fresh.granary");
    run(&harvest_options(&script, &fresh));
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&fresh).unwrap(), "resumed archive equals a fresh harvest");
    assert_labels_unique(&out);
}

/// Labels come from the script as it is now, not from the archive being resumed.
#[test]
fn resume_takes_labels_from_the_current_script() {
    let dir = common::tempdir();
    let script = copy_example(dir.path());
    let out = dir.path().join("out.granary");
    run(&harvest_options(&script, &out));
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&script).unwrap()).unwrap();
    let old = doc["pipelines"][0]["label"].as_str().unwrap().to_string();
    doc["pipelines"][0]["label"] = serde_json::Value::String(format!("{old}/renamed"));
    std::fs::write(&script, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let s = run(&HarvestOptions { resume: true, ..harvest_options(&script, &out) });
    assert_eq!((s.resumed, s.dropped), (s.pipelines, 0), "a label is not part of a key");
    let ar = Archive::read(&out).unwrap();
    assert!(ar.lookup_label(&old).unwrap().is_none(), "the old label is gone");
    assert!(ar.lookup_label(&format!("{old}/renamed")).unwrap().is_some());
    let fresh = dir.path().join("fresh.granary");
    run(&harvest_options(&script, &fresh));
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&fresh).unwrap());
}

/// `prune` keeps exactly the entries a script produces, relabelled from the script: the union
/// of the original and the edited harvests pruned against either script equals a fresh
/// harvest of that script; the original archive against the edited script reports exactly
/// the edited pipelines missing; pruning in place works.
#[test]
fn prune_keeps_exactly_what_the_script_produces() {
    let dir = common::tempdir();
    let (original, edited) = common::original_and_edited(dir.path(), "postprocess.wgsl");
    let a = dir.path().join("a.granary");
    let e = dir.path().join("e.granary");
    let n = run(&harvest_options(&original, &a)).pipelines;
    run(&harvest_options(&edited, &e));
    // The union: every original entry with its labels, every edited one without labels (so
    // no label names two pipelines; prune must supply the edited script's labels).
    let mut union = Archive::read(&a).unwrap().entries().unwrap();
    for w in Archive::read(&e).unwrap().entries().unwrap() {
        union.push(archive::WriteEntry { entry: w.entry, labels: Vec::new().into(), binaries: Vec::new() });
    }
    let m = dir.path().join("union.granary");
    archive::write_entries(&m, &union, &archive::portable_meta()).unwrap();
    let total = Archive::read(&m).unwrap().len();
    assert!(total > n, "the union holds stale entries: {total}");

    let p = dir.path().join("p.granary");
    let r = prune(&m, &edited, &p, false).unwrap();
    Archive::read(&p).unwrap().verify().unwrap();
    assert_eq!((r.kept, r.dropped, r.missing.len()), (n, total - n, 0));
    assert_eq!(
        std::fs::read(&p).unwrap(),
        std::fs::read(&e).unwrap(),
        "pruned to the edited script = its fresh harvest"
    );
    let r = prune(&m, &original, &p, false).unwrap();
    assert_eq!(r.kept, n);
    assert_eq!(
        std::fs::read(&p).unwrap(),
        std::fs::read(&a).unwrap(),
        "pruned to the original script = its fresh harvest"
    );

    // The original archive against the edited script: the edited pipelines are missing.
    let r = prune(&a, &edited, &p, false).unwrap();
    let stale = total - n;
    assert_eq!((r.kept, r.dropped), (n - stale, stale));
    let mut missing: Vec<&str> = r.missing.iter().map(String::as_str).collect();
    // Exactly the labels of the edited harvest's pipelines the original archive lacks.
    let (ea, aa) = (Archive::read(&e).unwrap(), Archive::read(&a).unwrap());
    let mut expected: Vec<&str> = ea
        .labels()
        .unwrap()
        .into_iter()
        .filter(|(_, i)| aa.get(ea.pipeline(*i).unwrap().key()).unwrap().is_none())
        .map(|(l, _)| l)
        .collect();
    missing.sort();
    expected.sort();
    assert_eq!(missing.len(), stale);
    assert_eq!(missing, expected);

    // In place.
    prune(&m, &edited, &m, false).unwrap();
    assert_eq!(std::fs::read(&m).unwrap(), std::fs::read(&e).unwrap());
}

/// For 1–4 shards: every shard archive verifies and records its shard (index, count, the one
/// script hash every shard computes), its summary says the same, every pipeline is in exactly
/// one shard, and the merge of the shards in two orders is byte-identical to a plain harvest.
#[test]
fn merged_shards_are_byte_identical_to_a_plain_harvest_for_1_to_4_shards() {
    use granary::harvest::{harvest_shard, shard::ShardSpec};
    let dir = common::tempdir();
    let full = dir.path().join("full.granary");
    let summary = run(&harvest_options(Path::new(EXAMPLE), &full));
    assert!(summary.shard.is_none(), "an unsharded summary has no shard");
    let full_bytes = std::fs::read(&full).unwrap();
    let full_archive = Archive::open(&full).unwrap();
    assert_eq!(full_archive.shard(), None, "an unsharded harvest records no shard");
    for n in 1..=4u32 {
        let mut script = None;
        let mut total = 0;
        let mut paths = Vec::new();
        for i in 0..n {
            let p = dir.path().join(format!("shard-{i}-of-{n}.granary"));
            let s = harvest_shard(
                &harvest_options(Path::new(EXAMPLE), &p),
                Some(ShardSpec { index: i, count: n }),
                &|_| {},
            )
            .expect("shard harvest");
            assert_eq!(s.failed, 0);
            let a = Archive::open(&p).unwrap();
            a.verify().unwrap();
            let r = a.shard().expect("a shard archive records its shard");
            assert_eq!((r.index, r.count), (i, n));
            assert_eq!(*script.get_or_insert(r.script), r.script, "every shard names the same script");
            let ss = s.shard.expect("a shard's summary names its shard");
            assert_eq!((ss.index, ss.count, ss.pipelines), (i, n, a.len()));
            assert_eq!(ss.script, format!("{:032x}", r.script));
            total += a.len();
            paths.push(p);
        }
        assert_eq!(total, full_archive.len(), "n={n}: every pipeline in exactly one shard");
        let forward: Vec<&PathBuf> = paths.iter().collect();
        let mut other: Vec<&PathBuf> = paths.iter().rev().collect();
        other.rotate_left(n as usize / 2);
        for (name, order) in [("forward", forward), ("reversed and rotated", other)] {
            let inputs: Vec<Archive> = order.iter().map(|p| Archive::open(p).unwrap()).collect();
            let (entries, meta) = archive::merge(&inputs).unwrap();
            let merged = archive::encode(&entries, &meta);
            assert!(merged == full_bytes, "n={n}, {name} order: merged bytes differ from a plain harvest");
            assert_eq!(Archive::from_bytes(merged).unwrap().shard(), None, "a merged archive is no shard");
        }
    }
}

#[test]
fn every_example_pipeline_is_found_by_descriptor_and_label_with_fresh_outputs() {
    use granary::archive::LookupDescriptor;
    use granary::compiler::{Compiler, CompilerOptions};
    let dir = common::tempdir();
    let out = dir.path().join("r.granary");
    let targets = TargetSet::of(&[Target::Spirv, Target::Hlsl]);
    let summary = run(&HarvestOptions { targets, ..harvest_options(Path::new(EXAMPLE), &out) });
    let script = granary::script::Script::load(Path::new(EXAMPLE)).unwrap();
    assert!(script.pipelines.len() >= 200, "the example is a few hundred pipelines");
    assert_eq!(summary.succeeded, script.pipelines.len());
    assert!(summary.reuse_ratio > 2.0, "{}", summary.reuse_ratio);
    let ar = Archive::open(&out).unwrap();
    ar.verify().unwrap();
    let fresh = Compiler::new(CompilerOptions { targets, ..Default::default() });
    for p in &script.pipelines {
        let d = p.descriptor.as_ref().unwrap();
        let by_desc = ar.lookup(d).unwrap().expect("by descriptor");
        let by_label = ar.lookup_label(p.label.as_deref().unwrap()).unwrap().expect("by label");
        assert_eq!(by_desc.key(), by_label.key());
        let e = fresh.compile(d).unwrap();
        for (s, fs) in by_desc.stages().unwrap().iter().zip(&e.stages) {
            for t in [Target::Spirv, Target::Hlsl] {
                assert_eq!(s.output(t).unwrap(), fs.outputs.get(t).map(|b| b.bytes()));
            }
        }
    }
}
