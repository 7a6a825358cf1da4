//! The seed-scale workload generator: determinism, shape, and that everything it writes
//! compiles and links.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use granary::descriptor::{stage_key, KeyContext, MaybeSpecialized, PipelineDescriptor, ShaderStage};
use granary::harvest::harvest;
use granary::script::Script;
use granary_lab::workload::{seed_scale, GenError, GenSummary, SeedScaleOptions};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

fn opts(pipelines: usize, vertex_functions: usize, max_run: usize, seed: u64) -> SeedScaleOptions {
    SeedScaleOptions { pipelines, vertex_functions, max_run, seed }
}

fn generate(o: &SeedScaleOptions) -> (tempfile::TempDir, GenSummary) {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = seed_scale(o, dir.path()).expect("generate");
    (dir, summary)
}

/// Every file under `dir`, by relative path.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).expect("read_dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).expect("under root").to_path_buf();
                out.insert(rel, std::fs::read(&p).expect("read"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Loads the script; every library and pipeline must load.
fn load(summary: &GenSummary) -> (Script, Vec<PipelineDescriptor>) {
    let script = Script::load(&summary.script).expect("script loads");
    for (name, lib) in &script.libraries {
        assert!(lib.is_ok(), "library {name}: {:?}", lib.as_ref().err());
    }
    let descs = script
        .pipelines
        .iter()
        .map(|p| p.descriptor.clone().unwrap_or_else(|e| panic!("{}: {e}", p.display_name())))
        .collect();
    (script, descs)
}

/// Lengths of the maximal runs of consecutive pipelines with the same vertex stage key.
fn runs(descs: &[PipelineDescriptor]) -> Vec<usize> {
    let ctx = KeyContext { target_options: 0 };
    let mut out: Vec<usize> = Vec::new();
    let mut prev = None;
    for d in descs {
        let (_, vs) = d.stages()[0];
        let k = stage_key(vs, ShaderStage::Vertex, &ctx);
        if prev == Some(k) {
            if let Some(last) = out.last_mut() {
                *last += 1;
            }
        } else {
            out.push(1);
        }
        prev = Some(k);
    }
    out
}

fn distinct_stages(descs: &[PipelineDescriptor], stage: ShaderStage) -> usize {
    let ctx = KeyContext { target_options: 0 };
    let keys: HashSet<_> = descs
        .iter()
        .flat_map(|d| {
            d.stages().into_iter().filter(|(s, _)| *s == stage).map(|(s, f)| stage_key(f, s, &ctx)).collect::<Vec<_>>()
        })
        .collect();
    keys.len()
}

#[test]
fn same_seed_writes_identical_files_and_another_seed_does_not() {
    let o = opts(2_000, 300, 200, 7);
    let (a, _) = generate(&o);
    let (b, _) = generate(&o);
    let fa = files(a.path());
    assert!(fa.contains_key(Path::new("pipelines.json")));
    assert!(fa.len() > 4, "libraries written: {:?}", fa.keys().collect::<Vec<_>>());
    assert!(fa == files(b.path()), "same seed, different files");

    let (c, _) = generate(&SeedScaleOptions { seed: 8, ..o });
    let script = |d: &Path| std::fs::read(d.join("pipelines.json")).expect("read script");
    assert_ne!(script(a.path()), script(c.path()));
}

#[test]
fn small_workload_has_the_requested_shape() {
    let (_dir, summary) = generate(&opts(2_000, 300, 200, 1));
    assert_eq!(summary.pipelines, 2_000);
    assert_eq!(summary.vertex_functions, 300);
    assert_eq!(summary.longest_run, 200);
    let (script, descs) = load(&summary);
    assert_eq!(descs.len(), 2_000);

    let r = runs(&descs);
    assert_eq!(r.iter().copied().max(), Some(200), "longest run");
    assert_eq!(r.len(), summary.runs);
    assert!(r.iter().filter(|&&l| l == 1).count() > r.len() / 3, "most runs are short: {r:?}");
    assert_eq!(distinct_stages(&descs, ShaderStage::Vertex), 300);
    assert_eq!(distinct_stages(&descs, ShaderStage::Fragment), summary.fragment_functions);
    assert!(summary.fragment_functions >= 8);

    let ctx = KeyContext { target_options: 0 };
    let keys: HashSet<_> = descs.iter().map(|d| d.key(&ctx)).collect();
    assert_eq!(keys.len(), descs.len(), "every pipeline key is distinct");
    let labels: HashSet<_> = script.pipelines.iter().map(|p| p.label.clone().expect("labelled")).collect();
    assert_eq!(labels.len(), descs.len(), "labels are unique");

    let (mut specialized, mut plain) = (0, 0);
    for d in &descs {
        let PipelineDescriptor::Render(r) = d else { panic!("only render pipelines") };
        assert!(!r.state.color_attachments.is_empty());
        for a in &r.state.color_attachments {
            assert!(
                a.format == MaybeSpecialized::Unspecialized
                    && a.blend == MaybeSpecialized::Unspecialized
                    && a.write_mask == MaybeSpecialized::Unspecialized,
                "{:?}: {a:?}",
                r.label
            );
        }
        for (_, f) in d.stages() {
            match f {
                granary::descriptor::FunctionDescriptor::Specialized { .. } => specialized += 1,
                _ => plain += 1,
            }
        }
    }
    assert!(specialized > 0 && plain > 0, "{specialized} specialized, {plain} plain stages");
}

fn harvest_all(dir: &Path, summary: &GenSummary) {
    let h =
        harvest(&common::harvest_options(&summary.script, &dir.join("out.granary")), &|_| {}).expect("harvest runs");
    for f in &h.failures {
        eprintln!("{} [{}]: {}", f.pipeline, f.phase, f.message);
    }
    assert_eq!(h.failed, 0, "{} of {} pipelines failed", h.failed, h.pipelines);
    assert_eq!(h.succeeded, summary.pipelines);
    assert_eq!(h.archive_pipelines, summary.pipelines, "distinct keys");
}

#[test]
fn every_pipeline_of_a_small_workload_compiles() {
    let o = opts(300, 60, 50, 3);
    let (dir, summary) = generate(&o);
    harvest_all(dir.path(), &summary);
}

#[test]
fn edge_sizes_keep_their_promises() {
    // (pipelines, vertex functions, max run) → (vertex functions used, longest run)
    // The longest run is max_run (capped at the pipeline count) and takes priority; vertex
    // functions are used as far as they fit beside it.
    let cases = [
        ((40, 100, 10), (31, 10)), // fewer pipelines than functions: 30 runs of 1 + one of 10
        ((40, 40, 10), (31, 10)),  // the long run leaves room for 30 more functions
        ((2_000, 1_990, 200), (1_801, 200)),
        ((50, 10, 1), (10, 1)),    // max run 1: functions repeat, never adjacent
        ((25, 1, 5), (1, 25)),     // one vertex function: one run
        ((30, 5, 1_000), (1, 30)), // max run ≥ pipelines: a single run
        ((60, 10, 3), (10, 3)),    // runs of ≤ 3 need repeats of the 10 functions
        ((1, 1, 1), (1, 1)),
    ];
    for ((p, v, m), (want_v, want_run)) in cases {
        let (dir, s) = generate(&opts(p, v, m, 11));
        let (_, descs) = load(&s);
        let r = runs(&descs);
        assert_eq!((s.pipelines, descs.len()), (p, p), "{p} {v} {m}");
        assert_eq!((s.vertex_functions, s.longest_run), (want_v, want_run), "{p} {v} {m}");
        assert_eq!(distinct_stages(&descs, ShaderStage::Vertex), want_v, "{p} {v} {m}");
        assert_eq!(r.iter().copied().max(), Some(want_run), "{p} {v} {m}: {r:?}");
        harvest_all(dir.path(), &s);
    }
}

#[test]
fn zero_sizes_are_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    for o in [opts(0, 1, 1, 1), opts(1, 0, 1, 1), opts(1, 1, 0, 1)] {
        let e = seed_scale(&o, dir.path()).expect_err("invalid");
        assert!(matches!(e, GenError::Options(_)), "{e}");
    }
}

#[test]
fn an_unwritable_folder_is_named_in_the_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("not-a-folder");
    std::fs::write(&file, b"x").expect("write");
    let e = seed_scale(&opts(10, 5, 3, 1), &file).expect_err("cannot write under a file");
    assert!(e.to_string().contains("not-a-folder"), "{e}");
}
