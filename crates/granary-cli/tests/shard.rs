//! `harvest --shard I/N`, `granary plan --shards N` and exact merging of shard archives, end
//! to end on the bundled example.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::EXAMPLE;
use granary::archive::Archive;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// `--shard I/N` reaches the harvest: each summary and `ls` (JSON and text) show the shard's
/// record, `granary merge` of the shards writes the plain harvest's bytes, and `ls` shows no
/// record on the merge. (For 1–4 shards and in two merge orders, the library's:
/// granary/tests/harvest.rs.)
#[test]
fn shard_archives_show_their_record_and_merge_to_a_plain_harvest() {
    let dir = common::tempdir();
    let full = dir.path().join("full.granary");
    let summary = harvest(&full, &["-j", "2"], &[]);
    assert_eq!(summary["failed"], 0);
    assert!(summary["shard"].is_null(), "an unsharded summary has no shard: {summary}");
    let full_bytes = std::fs::read(&full).unwrap();
    let n = 2u32;
    let (paths, summaries) = harvest_shards(dir.path(), n);
    for (i, (p, s)) in paths.iter().zip(&summaries).enumerate() {
        let a = Archive::open(p).unwrap();
        let r = a.shard().expect("a shard archive records its shard");
        assert_eq!(s["shard"]["index"], i);
        assert_eq!(s["shard"]["count"], n);
        assert_eq!(s["shard"]["script"], format!("{:032x}", r.script));
        assert_eq!(s["shard"]["pipelines"].as_u64().unwrap() as usize, a.len());
        // `ls` shows the record (JSON and text).
        let ls: serde_json::Value =
            serde_json::from_slice(&ok(granary(&["ls", p.to_str().unwrap(), "--json"])).stdout).unwrap();
        assert_eq!((ls["shard"]["index"].as_u64(), ls["shard"]["count"].as_u64()), (Some(i as u64), Some(n as u64)));
        let text = String::from_utf8(ok(granary(&["ls", p.to_str().unwrap()])).stdout).unwrap();
        assert!(text.contains(&format!("shard {i} of {n}")), "{text}");
    }
    let out = dir.path().join("merged.granary");
    ok(merge(&paths.iter().rev().collect::<Vec<_>>(), &out));
    assert!(std::fs::read(&out).unwrap() == full_bytes, "merged bytes differ from a plain harvest");
    let ls: serde_json::Value =
        serde_json::from_slice(&ok(granary(&["ls", out.to_str().unwrap(), "--json"])).stdout).unwrap();
    assert!(ls["shard"].is_null(), "a merged archive is no shard");
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

/// `granary ARGS --json`'s exit code and JSON output.
fn json_of(args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut all = args.to_vec();
    all.push("--json");
    let o = granary(&all);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: no JSON ({e}): {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code(), v)
}

fn text_of(args: &[&str]) -> String {
    String::from_utf8(ok(granary(args)).stdout).unwrap()
}

fn prune(input: &Path, script: &Path, out: &Path) -> serde_json::Value {
    let (code, r) =
        json_of(&["prune", input.to_str().unwrap(), "--script", script.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(code, Some(0), "prune {}: {r}", input.display());
    r
}

/// Every label of `path`, sorted.
fn labels(path: &Path) -> Vec<String> {
    let a = Archive::open(path).unwrap();
    let mut l: Vec<String> = a.labels().unwrap().into_iter().map(|(l, _)| l.to_string()).collect();
    l.sort();
    l
}

/// A copy of the example (shaders and all) in `dir`, its script passed through `edit`.
fn edited_example(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    copy_dir(Path::new(EXAMPLE).parent().unwrap(), dir);
    let path = dir.join("pipelines.json");
    let mut script: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut script);
    std::fs::write(&path, serde_json::to_string(&script).unwrap()).unwrap();
    path
}

/// `archive` rewritten without the pipelines labelled `drop` (its shard record kept).
fn without(archive: &Path, drop: &[String], out: &Path) {
    let a = Archive::read(archive).unwrap();
    let entries: Vec<_> =
        a.entries().unwrap().into_iter().filter(|w| !w.labels.iter().any(|l| drop.contains(l))).collect();
    granary::archive::write_shard_entries(out, &entries, &a.meta().unwrap(), a.shard().as_ref()).unwrap();
}

fn merged_bytes(inputs: &[&PathBuf], out: &Path) -> Vec<u8> {
    ok(merge(inputs, out));
    std::fs::read(out).unwrap()
}

#[test]
fn prune_keeps_a_shards_record_and_counts_missing_against_its_share_while_the_script_is_unchanged() {
    let dir = common::tempdir();
    let full = dir.path().join("full.granary");
    harvest(&full, &["-j", "2"], &[]);
    let full_bytes = std::fs::read(&full).unwrap();
    let (shards, _) = harvest_shards(dir.path(), 3);
    let script = Path::new(EXAMPLE);
    // Pruned against the script it was harvested from, every shard is itself, record and all,
    // and the pruned shards still merge to the plain harvest.
    let mut pruned = Vec::new();
    for (i, s) in shards.iter().enumerate() {
        let out = dir.path().join(format!("pruned-{i}.granary"));
        let r = prune(s, script, &out);
        let record = Archive::open(s).unwrap().shard().unwrap();
        assert_eq!(r["shard"]["index"], i);
        assert_eq!(r["shard"]["count"], 3);
        assert_eq!(r["shard"]["script"], format!("{:032x}", record.script));
        assert_eq!(r["shard"]["pipelines"].as_u64().unwrap() as usize, Archive::open(s).unwrap().len());
        assert!(r["shard_dropped"].is_null() && r["expanded"] == false, "{r}");
        assert_eq!((r["missing"].as_array().unwrap().len(), r["dropped"].as_u64()), (0, Some(0)), "{r}");
        assert!(std::fs::read(&out).unwrap() == std::fs::read(s).unwrap(), "shard {i}: pruned to itself");
        pruned.push(out);
    }
    let all: Vec<&PathBuf> = pruned.iter().collect();
    assert!(merged_bytes(&all, &dir.path().join("m.granary")) == full_bytes);

    // Shard 1 without three of its pipelines: exactly those are missing (not the other
    // shards' pipelines), the output is still shard 1/3, and resuming it completes it.
    let share = labels(&shards[1]);
    let gone: Vec<String> = share[..3].to_vec();
    let partial = dir.path().join("partial.granary");
    without(&shards[1], &gone, &partial);
    let out = dir.path().join("partial-pruned.granary");
    let r = prune(&partial, script, &out);
    let mut missing: Vec<String> =
        r["missing"].as_array().unwrap().iter().map(|m| m.as_str().unwrap().to_string()).collect();
    missing.sort(); // listed in script order
    assert_eq!(missing, gone, "{r}");
    assert_eq!(r["shard"]["pipelines"].as_u64().unwrap() as usize, share.len());
    assert_eq!(r["script_pipelines"], 335);
    assert_eq!(Archive::open(&out).unwrap().shard(), Archive::open(&shards[1]).unwrap().shard());
    let text = text_of(&["prune", partial.to_str().unwrap(), "--script", EXAMPLE, "-o", out.to_str().unwrap()]);
    assert!(text.contains(&format!("3 of shard 1/3's {} pipelines missing", share.len())), "{text}");
    assert!(text.contains("is still shard 1 of 3"), "{text}");
    let s = harvest(&out, &["-j", "2", "--shard", "1/3", "--resume"], &[]);
    assert_eq!(s["resumed"].as_u64().unwrap() as usize, share.len() - 3);
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&shards[1]).unwrap());

    // Labels do not change keys: a relabelled script has the same shards, and the pruned shard
    // is the shard a harvest of the relabelled script writes.
    let renamed = share[0].clone();
    let relabelled = edited_example(&dir.path().join("relabelled"), |s| {
        for p in s["pipelines"].as_array_mut().unwrap() {
            if p["label"] == renamed.as_str() {
                p["label"] = serde_json::Value::String(format!("{renamed}/renamed"));
            }
        }
    });
    let out = dir.path().join("relabelled-pruned.granary");
    let r = prune(&shards[1], &relabelled, &out);
    assert_eq!(r["shard"]["index"], 1, "{r}");
    let fresh = dir.path().join("relabelled-1.granary");
    let o = granary(&["harvest", relabelled.to_str().unwrap(), "-o", fresh.to_str().unwrap(), "-q", "--shard", "1/3"]);
    ok(o);
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&fresh).unwrap());
    assert!(labels(&out).contains(&format!("{renamed}/renamed")) && !labels(&out).contains(&renamed));
}

#[test]
fn prune_against_a_changed_script_drops_the_shard_record_and_merge_then_treats_it_as_unsharded() {
    let dir = common::tempdir();
    let (shards, _) = harvest_shards(dir.path(), 3);
    let old = Archive::open(&shards[1]).unwrap().shard().unwrap();
    // The script loses its last 35 pipelines: another set of keys, another split.
    let edited = edited_example(&dir.path().join("edited"), |s| s["pipelines"].as_array_mut().unwrap().truncate(300));
    let plan: serde_json::Value =
        serde_json::from_slice(&ok(granary(&["plan", edited.to_str().unwrap(), "--shards", "3", "--json"])).stdout)
            .unwrap();
    let new_hash = plan["script_hash"].as_str().unwrap().to_string();
    assert_ne!(new_hash, format!("{:032x}", old.script));

    let out = dir.path().join("pruned-1.granary");
    let r = prune(&shards[1], &edited, &out);
    assert!(r["shard"].is_null(), "{r}");
    let why = r["shard_dropped"].as_str().expect("the report says the record was dropped");
    assert!(why.contains(&old.to_string()) && why.contains(&new_hash), "{why}");
    assert_eq!(Archive::open(&out).unwrap().shard(), None, "the output no longer claims to be shard 1/3");
    let ls: serde_json::Value =
        serde_json::from_slice(&ok(granary(&["ls", out.to_str().unwrap(), "--json"])).stdout).unwrap();
    assert!(ls["shard"].is_null());
    // An ordinary archive of the edited script: what it lacks is counted against the whole script.
    let script: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&edited).unwrap()).unwrap();
    let have = labels(&out);
    let want_missing: Vec<String> = script["pipelines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["label"].as_str().unwrap().to_string())
        .filter(|l| !have.contains(l))
        .collect();
    let missing: Vec<String> =
        r["missing"].as_array().unwrap().iter().map(|m| m.as_str().unwrap().to_string()).collect();
    assert_eq!(missing, want_missing);
    let text = text_of(&[
        "prune",
        shards[1].to_str().unwrap(),
        "--script",
        edited.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(text.contains("shard record dropped") && text.contains("--shard 1/3 --resume"), "{text}");

    // Merge refuses it among the shards, for what it now is: not a shard archive.
    let merged = dir.path().join("merged.granary");
    let o = merge(&[&shards[0], &out, &shards[2]], &merged);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("not a shard archive") && err.contains("pruned-1.granary"), "{err}");
    // And accepts it with the other shards pruned the same way: together they are the edited
    // script's harvest, byte for byte.
    let mut pruned = Vec::new();
    for (i, s) in shards.iter().enumerate() {
        let p = dir.path().join(format!("pruned-{i}.granary"));
        assert!(prune(s, &edited, &p)["shard"].is_null());
        pruned.push(p);
    }
    let fresh = dir.path().join("edited.granary");
    ok(granary(&["harvest", edited.to_str().unwrap(), "-o", fresh.to_str().unwrap(), "-q"]));
    let all: Vec<&PathBuf> = pruned.iter().collect();
    assert!(merged_bytes(&all, &merged) == std::fs::read(&fresh).unwrap());
    // What the report suggests instead: resuming the shard against the edited script gives
    // shard 1/3 of the edited script.
    let carried = dir.path().join("carried-1.granary");
    std::fs::copy(&shards[1], &carried).unwrap();
    let o = granary(&[
        "harvest",
        edited.to_str().unwrap(),
        "-o",
        carried.to_str().unwrap(),
        "-q",
        "--shard",
        "1/3",
        "--resume",
    ]);
    ok(o);
    assert_eq!(format!("{:032x}", Archive::open(&carried).unwrap().shard().unwrap().script), new_hash);
}

#[test]
fn salvage_keeps_a_shards_record_and_verify_shows_it() {
    let dir = common::tempdir();
    let full = dir.path().join("full.granary");
    harvest(&full, &["-j", "2"], &[]);
    let (shards, _) = harvest_shards(dir.path(), 3);
    let record = Archive::open(&shards[1]).unwrap().shard().unwrap();
    let bytes = std::fs::read(&shards[1]).unwrap();

    // verify shows the record (text and JSON); an unsharded archive has none.
    let text = text_of(&["verify", shards[1].to_str().unwrap(), full.to_str().unwrap()]);
    let line = |name: &str| text.lines().find(|l| l.contains(name)).unwrap().to_string();
    let shard_line = line("shard-1-of-3");
    assert!(
        shard_line.contains(": ok (")
            && shard_line.ends_with(&format!("; shard 1 of 3 (0-based) of script {:032x}", record.script)),
        "{text}"
    );
    assert!(!line("full.granary").contains("shard"), "{text}");
    let (code, v) = json_of(&["verify", shards[1].to_str().unwrap(), full.to_str().unwrap()]);
    let v = &v["archives"];
    assert_eq!(code, Some(0));
    assert_eq!(v[0]["shard"]["index"], 1);
    assert_eq!(v[0]["shard"]["count"], 3);
    assert_eq!(v[0]["shard"]["script"], format!("{:032x}", record.script));
    assert!(v[1]["shard"].is_null(), "{v}");

    // One damaged pipeline record: verify fails and still names the shard; salvage keeps the
    // record, so the output is still shard 1/3 (one pipeline short).
    let a = Archive::open(&shards[1]).unwrap();
    let victim = a.pipeline(a.len() / 2).unwrap();
    let (victim_key, victim_label) = (
        victim.key(),
        labels(&shards[1]).into_iter().find(|l| a.lookup_label(l).unwrap().unwrap().key() == victim.key()).unwrap(),
    );
    let at = bytes.windows(16).position(|w| w == victim_key.0.to_le_bytes()).unwrap();
    let mut bad = bytes.clone();
    bad[at + 1] ^= 0xff;
    let damaged = dir.path().join("damaged-1.granary");
    std::fs::write(&damaged, &bad).unwrap();
    let (code, v) = json_of(&["verify", damaged.to_str().unwrap()]);
    let v = &v["archives"];
    assert_eq!((code, &v[0]["ok"]), (Some(1), &serde_json::Value::Bool(false)));
    assert_eq!(v[0]["shard"]["index"], 1, "{v}");
    let o = granary(&["verify", damaged.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("FAILED")
            && String::from_utf8_lossy(&o.stdout).contains("it records shard 1 of 3")
    );
    let salvaged = dir.path().join("salvaged-1.granary");
    let (code, r) = json_of(&["salvage", damaged.to_str().unwrap(), "-o", salvaged.to_str().unwrap()]);
    assert_eq!(code, Some(1), "a pipeline was lost: {r}");
    assert_eq!((r["shard"]["index"].as_u64(), r["shard"]["count"].as_u64()), (Some(1), Some(3)));
    assert_eq!(r["shard"]["script"], format!("{:032x}", record.script));
    assert!(r["shard_lost"].is_null());
    let s = Archive::open(&salvaged).unwrap();
    s.verify().unwrap();
    assert_eq!((s.shard(), s.len()), (Some(record), a.len() - 1));
    let o = granary(&["salvage", damaged.to_str().unwrap(), "-o", salvaged.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&format!("is still {record}")) && out.contains("--shard 1/3 --resume"), "{out}");
    // Prune of the salvaged shard counts exactly the lost pipeline as missing.
    let r = prune(&salvaged, Path::new(EXAMPLE), &dir.path().join("salvaged-pruned.granary"));
    assert_eq!(r["missing"], serde_json::json!([victim_label]));
    assert_eq!(r["shard"]["index"], 1);
    // The merge takes it as shard 1 (a complete set), though one pipeline short; resumed
    // first, the merge is the plain harvest again.
    let merged = dir.path().join("merged.granary");
    ok(merge(&[&shards[0], &salvaged, &shards[2]], &merged));
    assert_eq!(Archive::open(&merged).unwrap().len(), Archive::open(&full).unwrap().len() - 1);
    let s = harvest(&salvaged, &["-j", "2", "--shard", "1/3", "--resume"], &[]);
    assert_eq!(s["resumed"].as_u64().unwrap() as usize, a.len() - 1);
    assert!(merged_bytes(&[&shards[0], &salvaged, &shards[2]], &merged) == std::fs::read(&full).unwrap());

    // A record the meta section no longer vouches for (`shard=1/3` flipped to `shard=0/3`) is
    // not kept: the salvaged archive is unsharded, and merge refuses it among the shards.
    let text = record.to_text();
    let at = bytes.windows(text.len()).position(|w| w == text.as_bytes()).unwrap();
    let mut bad = bytes.clone();
    bad[at + "shard=".len()] = b'0';
    std::fs::write(&damaged, &bad).unwrap();
    let (code, r) = json_of(&["salvage", damaged.to_str().unwrap(), "-o", salvaged.to_str().unwrap()]);
    assert_eq!(code, Some(1), "losing the record is a loss: {r}");
    assert!(r["shard"].is_null() && r["shard_lost"].as_str().unwrap().contains("fails its checksum"), "{r}");
    assert_eq!(r["recovered"].as_u64().unwrap() as usize, a.len());
    assert_eq!(Archive::open(&salvaged).unwrap().shard(), None);
    let o = granary(&["salvage", damaged.to_str().unwrap(), "-o", salvaged.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("lost shard record"));
    let o = merge(&[&shards[0], &salvaged, &shards[2]], &merged);
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a shard archive"));
}

/// The shards of `paths` rewritten as if harvested on `device`: every pipeline gets a binary
/// set for it; the shard record is kept.
fn on_device(paths: &[PathBuf], device: &std::sync::Arc<granary::archive::DeviceIdentity>, dir: &Path) -> Vec<PathBuf> {
    use granary::archive::{write_shard_entries, BinarySet, DeviceBinaries, DeviceBinary};
    use granary_archive::Blob;
    paths
        .iter()
        .map(|p| {
            let a = Archive::read(p).unwrap();
            let mut entries = a.entries().unwrap();
            for w in &mut entries {
                let own = DeviceBinary { key: w.entry.key.0.to_le_bytes().to_vec(), data: Blob::new(vec![7; 40]) };
                w.binaries = vec![DeviceBinaries {
                    device: device.clone(),
                    set: std::sync::Arc::new(BinarySet { flags: 0, pipeline_key: Vec::new(), binaries: vec![own] }),
                }];
            }
            let out = dir.join(format!("{}-{}", device.device_name, p.file_name().unwrap().to_string_lossy()));
            write_shard_entries(&out, &entries, &a.meta().unwrap(), a.shard().as_ref()).unwrap();
            out
        })
        .collect()
}

#[test]
fn shards_of_two_devices_merge_in_one_call_into_a_two_device_archive() {
    let dir = common::tempdir();
    let (paths, _) = harvest_shards(dir.path(), 2);
    let a = on_device(&paths, &common::test_device("gpu-a", vec![1; 16]), dir.path());
    let b = on_device(&paths, &common::test_device("gpu-b", vec![2; 16]), dir.path());

    // One call, the four shards in any order: both devices, every pipeline on each.
    let all = dir.path().join("all.granary");
    ok(merge(&[&b[1], &a[0], &b[0], &a[1]], &all));
    let merged = Archive::read(&all).unwrap();
    assert_eq!(merged.shard(), None);
    let devices = merged.devices().unwrap();
    assert_eq!(devices.len(), 2);
    assert!(devices.iter().all(|d| d.pipeline_count() == merged.len()));
    // The same bytes as merging each device's shards, then the two archives.
    let (ma, mb, two) = (dir.path().join("a.granary"), dir.path().join("b.granary"), dir.path().join("two.granary"));
    ok(merge(&[&a[0], &a[1]], &ma));
    ok(merge(&[&b[0], &b[1]], &mb));
    ok(merge(&[&ma, &mb], &two));
    assert_eq!(std::fs::read(&all).unwrap(), std::fs::read(&two).unwrap());

    // A shard missing on one device is named with that device.
    let o = merge(&[&a[0], &a[1], &b[0]], &dir.path().join("x.granary"));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("shard 1/2 of script") && err.contains("gpu-b") && err.contains("missing"), "{err}");
    // Shard 0 twice on one device is refused, even with a complete set on the other.
    let o = merge(&[&a[0], &a[1], &b[0], &b[1], &b[0]], &dir.path().join("x.granary"));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("shard 0/2") && err.contains("given twice") && err.contains("gpu-b"), "{err}");
}
