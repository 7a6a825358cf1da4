//! `harvest --trace`: the timeline parses as Chrome JSON trace events and has the harvest's
//! structure: exactly the tracks main, flush and one per worker; main's load, plan and final
//! write in order around every other slice; every script pipeline once under its index;
//! libraries, stage functions, flushes and worker processes counted as the summary counts
//! them; and slices on one track never overlap (a driver compile lies inside its pipeline).

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::EXAMPLE;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Command;

fn traced(dir: &Path, name: &str, extra: &[&str]) -> (Value, Value) {
    let (out, trace) = (dir.join(format!("{name}.granary")), dir.join(format!("{name}.json")));
    let mut args =
        vec!["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "--trace", trace.to_str().unwrap(), "--json", "-q"];
    args.extend_from_slice(extra);
    let o = Command::new(env!("CARGO_BIN_EXE_granary")).args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["trace"].as_str(), Some(trace.to_str().unwrap()));
    (serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).expect("trace JSON"), summary)
}

/// The script's pipeline labels, by index.
fn labels() -> Vec<String> {
    granary::script::Script::load(Path::new(EXAMPLE))
        .unwrap()
        .pipelines
        .iter()
        .map(|p| p.label.clone().unwrap())
        .collect()
}

/// A complete slice: track, start and end (µs since the harvest started), name, arguments.
#[derive(Debug, Clone)]
struct Slice {
    tid: u64,
    start: f64,
    end: f64,
    name: String,
    args: Value,
}

/// Slack for comparing timestamps that went through the same float conversion.
const EPS: f64 = 1e-3;

/// Checks the trace's structure against the harvest's `summary` (`threads` worker tracks,
/// named as `isolate` names them); returns the slices by name.
fn check(trace: &Value, summary: &Value, threads: usize, isolate: bool) -> HashMap<String, Vec<Slice>> {
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    // Every track is named once: main, flush, and one per worker thread or slot.
    let mut names: HashMap<u64, String> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "M" && e["name"] == "thread_name") {
        let tid = e["tid"].as_u64().unwrap();
        let name = e["args"]["name"].as_str().unwrap().to_string();
        assert!(names.insert(tid, name).is_none(), "track {tid} named twice");
    }
    let mut expected: HashMap<u64, String> = HashMap::from([(0, "main".into()), (1, "flush".into())]);
    for i in 0..threads {
        let name = if isolate { format!("worker process slot {i}") } else { format!("worker {i}") };
        expected.insert(2 + i as u64, name);
    }
    assert_eq!(names, expected, "the tracks");

    let mut by_track: HashMap<u64, Vec<Slice>> = HashMap::new();
    let mut by_name: HashMap<String, Vec<Slice>> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let tid = e["tid"].as_u64().unwrap();
        assert!(names.contains_key(&tid), "track {tid} has no name");
        let (ts, dur) = (e["ts"].as_f64().expect("ts"), e["dur"].as_f64().expect("dur"));
        assert!(ts >= 0.0 && dur >= 0.0, "{e}");
        let slice = Slice {
            tid,
            start: ts,
            end: ts + dur,
            name: e["name"].as_str().unwrap().to_string(),
            args: e["args"].clone(),
        };
        by_track.entry(tid).or_default().push(slice.clone());
        by_name.entry(slice.name.clone()).or_default().push(slice);
    }
    let names_on =
        |tid: u64| -> HashSet<String> { by_track.get(&tid).into_iter().flatten().map(|s| s.name.clone()).collect() };

    // main: load script, plan, then (after every other slice) the final write, in that order.
    let main = &by_track[&0];
    let order: Vec<&str> = main.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(order, ["load script", "plan", "final write"], "the main track");
    assert!(main[0].end <= main[1].start + EPS && main[1].end <= main[2].start + EPS, "{main:?}");
    let (planned, compiled) = (main[1].end, main[2].start);
    for (tid, slices) in by_track.iter().filter(|(tid, _)| **tid != 0) {
        for s in slices {
            assert!(
                planned <= s.start + EPS && s.end <= compiled + EPS,
                "track {tid}: {s:?} outside the compile phase"
            );
        }
    }
    // flush: only journal flushes; the records they appended are the summary's flushes
    // (a flush that found more than --flush-every new entries appends several records), a
    // flush appends a record exactly when it found entries, and no pipeline is journaled twice.
    assert!(names_on(1).iter().all(|n| n == "journal flush"), "{:?}", names_on(1));
    let slices: Vec<&Slice> = by_name.get("journal flush").into_iter().flatten().collect();
    let flushes: Vec<u64> = slices.iter().map(|s| s.args["entries"].as_u64().unwrap()).collect();
    let records: u64 = slices.iter().map(|s| s.args["records"].as_u64().unwrap()).sum();
    assert_eq!(records, summary["flushes"].as_u64().unwrap(), "{flushes:?}");
    assert!(slices.iter().all(|s| (s.args["entries"] == 0) == (s.args["records"] == 0)), "{flushes:?}");
    assert!(flushes.iter().sum::<u64>() <= summary["pipelines"].as_u64().unwrap(), "{flushes:?}");
    // Worker tracks: only tasks. In-process threads run libraries, stage functions and
    // pipelines; a worker slot's track shows its pipelines (its worker compiles the rest).
    let tasks: HashSet<String> = if isolate {
        ["pipeline"].map(String::from).into()
    } else {
        ["library", "stage function", "pipeline", "device compile"].map(String::from).into()
    };
    for i in 0..threads as u64 {
        assert!(names_on(2 + i).is_subset(&tasks), "worker track {i}: {:?}", names_on(2 + i));
    }

    // On a track, slices never overlap, except a device compile inside its pipeline.
    for (tid, slices) in &by_track {
        let (mut top, inner): (Vec<_>, Vec<_>) = slices.iter().cloned().partition(|s| s.name != "device compile");
        top.sort_by(|a, b| a.start.total_cmp(&b.start));
        for w in top.windows(2) {
            assert!(w[0].end <= w[1].start + EPS, "track {tid}: {:?} overlaps {:?}", w[0], w[1]);
        }
        for d in inner {
            assert!(
                top.iter().any(|p| p.name == "pipeline"
                    && p.args["pipeline"] == d.args["pipeline"]
                    && p.start <= d.start + EPS
                    && d.end <= p.end + EPS),
                "track {tid}: device compile {d:?} outside its pipeline's slice"
            );
        }
    }

    // Every pipeline of the script exactly once, with its own index, and it succeeded.
    let labels = labels();
    assert_eq!(summary["pipelines"].as_u64(), Some(labels.len() as u64));
    assert_eq!(summary["failed"].as_u64(), Some(0));
    let mut seen: Vec<(u64, String)> = by_name["pipeline"]
        .iter()
        .map(|s| (s.args["index"].as_u64().unwrap(), s.args["pipeline"].as_str().unwrap().to_string()))
        .collect();
    seen.sort();
    let script: Vec<(u64, String)> = labels.into_iter().enumerate().map(|(i, l)| (i as u64, l)).collect();
    assert_eq!(seen, script, "every pipeline exactly once, under its index");
    if !isolate {
        assert!(by_name["pipeline"].iter().all(|s| s.args["ok"] == true), "every pipeline compiled");
    }
    by_name
}

#[test]
fn the_timeline_holds_every_pipeline_once_without_overlaps() {
    let dir = common::tempdir();
    let (trace, s) = traced(dir.path(), "inproc", &["-j", "2", "--flush-every", "60"]);
    let slices = check(&trace, &s, 2, false);
    assert_eq!(slices["stage function"].len() as u64, s["unique_stage_functions"].as_u64().unwrap());
    assert_eq!(slices["library"].len() as u64, s["libraries_parsed"].as_u64().unwrap());
    assert!(s["flushes"].as_u64().unwrap() > 0 && !slices["journal flush"].is_empty(), "flushes are on the timeline");
    // Each library is parsed once (library names are unique in a script).
    let libraries: HashSet<&str> = slices["library"].iter().map(|s| s.args["library"].as_str().unwrap()).collect();
    assert_eq!(libraries.len(), slices["library"].len(), "a library parsed twice");

    let (trace, s) = traced(dir.path(), "iso", &["-j", "2", "--isolate"]);
    let slices = check(&trace, &s, 2, true);
    // Each pipeline names the worker process that answered it; a worker serves one slot, and
    // the pids are exactly the workers the summary counts.
    let mut slot_of: HashMap<u64, u64> = HashMap::new();
    for p in &slices["pipeline"] {
        let pid = p.args["worker_pid"].as_u64().expect("worker_pid");
        assert_eq!(*slot_of.entry(pid).or_insert(p.tid), p.tid, "worker {pid} on two tracks");
    }
    assert_eq!(slot_of.len() as u64, s["workers_started"].as_u64().unwrap(), "{s}");
}

/// With a device backend each pipeline's driver compile is a slice inside it.
#[test]
fn driver_compiles_are_slices_inside_their_pipelines() {
    if common::vulkan_device(Path::new(env!("CARGO_BIN_EXE_granary"))).is_none() {
        return;
    }
    let dir = common::tempdir();
    let (trace, s) = traced(dir.path(), "vk", &["-j", "2", "--backend", "vulkan"]);
    let n = s["pipelines"].as_u64().unwrap() as usize;
    let slices = check(&trace, &s, 2, false);
    assert_eq!(slices["device compile"].len(), n);
}
