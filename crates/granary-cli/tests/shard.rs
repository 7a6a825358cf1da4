//! `harvest --shard I/N`, `granary plan --shards N` and exact merging of shard archives, end
//! to end on the bundled example.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use granary::archive::Archive;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/renderer/pipelines.json");

/// `granary ARGS` with neither shard-index variable set, plus `env`.
fn granary_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_granary"));
    c.args(args).env_remove("SLURM_ARRAY_TASK_ID").env_remove("JOB_COMPLETION_INDEX");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run granary")
}

fn granary(args: &[&str]) -> Output {
    granary_env(args, &[])
}

fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "granary failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    o
}

/// Harvests the example into `out` with `extra` arguments; returns the JSON summary.
fn harvest(out: &Path, extra: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    let mut args = vec!["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "--json", "-q"];
    args.extend_from_slice(extra);
    serde_json::from_slice(&ok(granary_env(&args, env)).stdout).expect("summary JSON")
}

/// Harvests every shard of `n` into `dir`; returns their paths (in index order) and summaries.
fn harvest_shards(dir: &Path, n: u32) -> (Vec<PathBuf>, Vec<serde_json::Value>) {
    (0..n)
        .map(|i| {
            let p = dir.join(format!("shard-{i}-of-{n}.granary"));
            let s = harvest(&p, &["-j", "2", "--shard", &format!("{i}/{n}")], &[]);
            (p, s)
        })
        .unzip()
}

fn merge(inputs: &[&PathBuf], out: &Path) -> Output {
    let mut args = vec!["merge".to_string()];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    args.extend(["-o".to_string(), out.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    granary(&args)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn merged_shards_are_byte_identical_to_a_plain_harvest_for_1_to_4_shards() {
    let dir = common::tempdir();
    let full = dir.path().join("full.granary");
    let summary = harvest(&full, &["-j", "2"], &[]);
    assert_eq!(summary["failed"], 0);
    assert!(summary.get("shard").is_none(), "an unsharded summary has no shard");
    let full_bytes = std::fs::read(&full).unwrap();
    let full_archive = Archive::open(&full).unwrap();
    assert_eq!(full_archive.shard(), None, "an unsharded harvest records no shard");
    for n in 1..=4u32 {
        let (paths, summaries) = harvest_shards(dir.path(), n);
        let mut script = None;
        let mut total = 0;
        for (i, (p, s)) in paths.iter().zip(&summaries).enumerate() {
            let a = Archive::open(p).unwrap();
            a.verify().unwrap();
            let r = a.shard().expect("a shard archive records its shard");
            assert_eq!((r.index, r.count), (i as u32, n));
            assert_eq!(*script.get_or_insert(r.script), r.script, "every shard names the same script");
            assert_eq!(s["shard"]["index"], i);
            assert_eq!(s["shard"]["count"], n);
            assert_eq!(s["shard"]["script"], format!("{:032x}", r.script));
            assert_eq!(s["shard"]["pipelines"].as_u64().unwrap() as usize, a.len());
            // `ls` shows the record (JSON and text).
            let ls: serde_json::Value =
                serde_json::from_slice(&ok(granary(&["ls", p.to_str().unwrap(), "--json"])).stdout).unwrap();
            assert_eq!(
                (ls["shard"]["index"].as_u64(), ls["shard"]["count"].as_u64()),
                (Some(i as u64), Some(n as u64))
            );
            let text = String::from_utf8(ok(granary(&["ls", p.to_str().unwrap()])).stdout).unwrap();
            assert!(text.contains(&format!("shard {i} of {n}")), "{text}");
            total += a.len();
        }
        assert_eq!(total, full_archive.len(), "n={n}: every pipeline in exactly one shard");
        let forward: Vec<&PathBuf> = paths.iter().collect();
        let mut other: Vec<&PathBuf> = paths.iter().rev().collect();
        other.rotate_left(n as usize / 2);
        for (name, order) in [("forward", forward), ("reversed and rotated", other)] {
            let out = dir.path().join(format!("merged-{n}.granary"));
            ok(merge(&order, &out));
            assert!(
                std::fs::read(&out).unwrap() == full_bytes,
                "n={n}, {name} order: merged bytes differ from a plain harvest"
            );
            let ls: serde_json::Value =
                serde_json::from_slice(&ok(granary(&["ls", out.to_str().unwrap(), "--json"])).stdout).unwrap();
            assert!(ls["shard"].is_null(), "a merged archive is no shard");
            std::fs::remove_file(&out).unwrap();
        }
    }
}

#[test]
fn a_missing_duplicated_or_foreign_shard_is_refused_and_named() {
    let dir = common::tempdir();
    let (three, _) = harvest_shards(dir.path(), 3);
    let out = dir.path().join("merged.granary");
    let refused = |inputs: &[&PathBuf], want: &[&str]| {
        let o = merge(inputs, &out);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "refused: {err}");
        for w in want {
            assert!(err.contains(w), "{err:?} should say {w:?}");
        }
        assert!(!out.exists(), "a refused merge writes nothing");
    };
    refused(&[&three[0], &three[2]], &["shard 1/3", "missing"]);
    refused(&[&three[2]], &["shards 0/3, 1/3", "missing"]);
    refused(&[&three[0], &three[1], &three[1], &three[2]], &["shard 1/3 is given twice", "shard-1-of-3.granary"]);
    let (two, _) = harvest_shards(dir.path(), 2);
    refused(&[&three[0], &three[1], &three[2], &two[0]], &["different shard counts", "shard-0-of-2.granary"]);
    let plain = dir.path().join("plain.granary");
    harvest(&plain, &["-j", "2"], &[]);
    refused(&[&three[0], &three[1], &three[2], &plain], &["not a shard archive", "plain.granary"]);
    // Shards of another script (same writer options) are refused: the script hashes differ.
    // A copy of the example (shaders and all) with fewer pipelines: another script.
    let copy = dir.path().join("renderer");
    copy_dir(Path::new(EXAMPLE).parent().unwrap(), &copy);
    let edited = copy.join("pipelines.json");
    let mut script: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&edited).unwrap()).unwrap();
    script["pipelines"].as_array_mut().unwrap().truncate(40);
    std::fs::write(&edited, serde_json::to_string(&script).unwrap()).unwrap();
    let other = dir.path().join("other-0-of-3.granary");
    let o = granary(&["harvest", edited.to_str().unwrap(), "-o", other.to_str().unwrap(), "-q", "--shard", "0/3"]);
    ok(o);
    refused(&[&other, &three[1], &three[2]], &["different scripts", "other-0-of-3.granary"]);
}

#[test]
fn the_shard_index_comes_from_slurm_or_kubernetes_when_not_given() {
    let dir = common::tempdir();
    let explicit = dir.path().join("explicit.granary");
    harvest(&explicit, &["-j", "2", "--shard", "1/2"], &[]);
    let slurm = dir.path().join("slurm.granary");
    harvest(&slurm, &["-j", "2", "--shard", "/2"], &[("SLURM_ARRAY_TASK_ID", "1")]);
    assert_eq!(std::fs::read(&slurm).unwrap(), std::fs::read(&explicit).unwrap());
    let k8s = dir.path().join("k8s.granary");
    harvest(&k8s, &["-j", "2", "--shards", "2"], &[("JOB_COMPLETION_INDEX", "1")]);
    assert_eq!(std::fs::read(&k8s).unwrap(), std::fs::read(&explicit).unwrap());
    let r = Archive::open(&k8s).unwrap().shard().unwrap();
    assert_eq!((r.index, r.count), (1, 2));

    let none = dir.path().join("none.granary");
    let o = granary(&["harvest", EXAMPLE, "-o", none.to_str().unwrap(), "-q", "--shards", "2"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("SLURM_ARRAY_TASK_ID") && err.contains("JOB_COMPLETION_INDEX"), "{err}");
    assert!(!none.exists());
    let o = granary_env(
        &["harvest", EXAMPLE, "-o", none.to_str().unwrap(), "-q", "--shards", "2"],
        &[("SLURM_ARRAY_TASK_ID", "2")],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("SLURM_ARRAY_TASK_ID=2 is out of range"), "{err}");
    let o = granary(&["harvest", EXAMPLE, "-o", none.to_str().unwrap(), "-q", "--shard", "2/2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("out of range"));
}

#[test]
fn plan_json_agrees_with_the_shard_archives() {
    let dir = common::tempdir();
    for n in [2u32, 3] {
        let o = ok(granary(&["plan", EXAMPLE, "--shards", &n.to_string(), "--json"]));
        let plan: serde_json::Value = serde_json::from_slice(&o.stdout).expect("plan JSON");
        let (paths, summaries) = harvest_shards(dir.path(), n);
        assert_eq!(plan["shards"], n);
        let per_shard = plan["per_shard"].as_array().unwrap();
        assert_eq!(per_shard.len(), n as usize);
        let mut total = 0;
        let mut costs = Vec::new();
        for (i, s) in per_shard.iter().enumerate() {
            let a = Archive::open(&paths[i]).unwrap();
            assert_eq!(s["index"], i);
            assert_eq!(s["pipelines"].as_u64().unwrap() as usize, a.len(), "shard {i}/{n} pipelines");
            assert_eq!(s["stage_functions"], summaries[i]["unique_stage_functions"], "shard {i}/{n} stage functions");
            let cost = s["cost"].as_u64().unwrap();
            let weight = plan["pipeline_weight"].as_u64().unwrap();
            assert_eq!(cost, weight * s["pipelines"].as_u64().unwrap() + s["stage_functions"].as_u64().unwrap());
            assert_eq!(plan["script_hash"], format!("{:032x}", a.shard().unwrap().script));
            total += a.len();
            costs.push(cost as f64);
        }
        assert_eq!(plan["pipelines"].as_u64().unwrap() as usize, total);
        let mean = costs.iter().sum::<f64>() / costs.len() as f64;
        let max = costs.iter().cloned().fold(0.0, f64::max);
        assert!((plan["imbalance"].as_f64().unwrap() - max / mean).abs() < 1e-9);
        // Duplicated stage functions: each in 2..=n shards, and the extra compiles add up
        // to what the shards compile beyond the script's unique stage functions.
        let dup = plan["duplicated_stage_functions"].as_array().unwrap();
        let extra: usize = dup
            .iter()
            .map(|d| {
                let shards = d["shards"].as_array().unwrap();
                assert!(shards.len() >= 2 && shards.len() <= n as usize);
                shards.len() - 1
            })
            .sum();
        assert_eq!(plan["extra_stage_function_compiles"].as_u64().unwrap() as usize, extra);
        let compiled: u64 = per_shard.iter().map(|s| s["stage_functions"].as_u64().unwrap()).sum();
        assert_eq!(compiled, plan["stage_functions"].as_u64().unwrap() + extra as u64);
        let text = ok(granary(&["plan", EXAMPLE, "--shards", &n.to_string()])).stdout;
        let text = String::from_utf8_lossy(&text);
        assert!(text.contains("expected imbalance (max/mean cost)"), "{text}");
    }
}

#[test]
fn a_shard_resumed_from_its_own_or_another_shards_archive_is_the_same_shard() {
    let dir = common::tempdir();
    let reference = dir.path().join("ref.granary");
    harvest(&reference, &["-j", "2", "--shard", "1/2"], &[]);
    let want = std::fs::read(&reference).unwrap();
    // Its own archive: everything is kept.
    let again = dir.path().join("again.granary");
    std::fs::copy(&reference, &again).unwrap();
    let s = harvest(&again, &["-j", "2", "--shard", "1/2", "--resume"], &[]);
    assert_eq!(s["resumed"], s["shard"]["pipelines"]);
    assert!(std::fs::read(&again).unwrap() == want);
    // The other shard's archive: nothing of it belongs to shard 1, all is dropped.
    let other = dir.path().join("other.granary");
    harvest(&other, &["-j", "2", "--shard", "0/2"], &[]);
    let n0 = Archive::open(&other).unwrap().len();
    let s = harvest(&other, &["-j", "2", "--shard", "1/2", "--resume"], &[]);
    assert_eq!(s["resumed"], 0);
    assert_eq!(s["dropped"].as_u64().unwrap() as usize, n0);
    assert!(std::fs::read(&other).unwrap() == want);
}
