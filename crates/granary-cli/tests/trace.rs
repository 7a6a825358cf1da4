//! `harvest --trace`: the timeline parses as Chrome JSON trace events, names every track,
//! holds every pipeline once, and slices on one track never overlap (a driver compile lies
//! inside its pipeline).

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Command;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/renderer/pipelines.json");

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

/// Checks the trace's invariants; returns the slices by name.
fn check(trace: &Value, pipelines: usize) -> HashMap<String, Vec<Value>> {
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let named: HashSet<u64> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    let mut by_track: HashMap<u64, Vec<(f64, f64, String)>> = HashMap::new();
    let mut by_name: HashMap<String, Vec<Value>> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let tid = e["tid"].as_u64().unwrap();
        assert!(named.contains(&tid), "track {tid} has no name");
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(ts >= 0.0 && dur >= 0.0, "{e}");
        by_track.entry(tid).or_default().push((ts, ts + dur, e["name"].as_str().unwrap().to_string()));
        by_name.entry(e["name"].as_str().unwrap().to_string()).or_default().push(e.clone());
    }
    for (tid, slices) in &mut by_track {
        let (top, inner): (Vec<_>, Vec<_>) = slices.iter().cloned().partition(|s| s.2 != "device compile");
        let mut top = top;
        top.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in top.windows(2) {
            assert!(w[0].1 <= w[1].0 + 1e-3, "track {tid}: {:?} overlaps {:?}", w[0], w[1]);
        }
        for d in inner {
            assert!(
                top.iter().any(|p| p.2 == "pipeline" && p.0 <= d.0 + 1e-3 && d.1 <= p.1 + 1e-3),
                "track {tid}: device compile {d:?} outside every pipeline slice"
            );
        }
    }
    let labels: Vec<&str> = by_name["pipeline"].iter().map(|e| e["args"]["pipeline"].as_str().unwrap()).collect();
    let unique: HashSet<&str> = labels.iter().copied().collect();
    assert_eq!((labels.len(), unique.len()), (pipelines, pipelines), "every pipeline exactly once");
    by_name
}

#[test]
fn the_timeline_holds_every_pipeline_once_without_overlaps() {
    let dir = common::tempdir();
    let (trace, s) = traced(dir.path(), "inproc", &["-j", "2", "--flush-every", "60"]);
    let n = s["pipelines"].as_u64().unwrap() as usize;
    let slices = check(&trace, n);
    assert_eq!(slices["stage function"].len() as u64, s["unique_stage_functions"].as_u64().unwrap());
    assert_eq!(slices["library"].len() as u64, s["libraries_parsed"].as_u64().unwrap());
    assert!(!slices["journal flush"].is_empty(), "flushes are on the timeline");
    for name in ["load script", "plan", "final write"] {
        assert_eq!(slices[name].len(), 1, "{name}");
    }
    // Worker tracks are those of the two threads (and main/flush).
    let tracks: HashSet<u64> = slices["pipeline"].iter().map(|e| e["tid"].as_u64().unwrap()).collect();
    assert!(!tracks.is_empty() && tracks.len() <= 2, "{tracks:?}");

    let (trace, s) = traced(dir.path(), "iso", &["-j", "2", "--isolate"]);
    let slices = check(&trace, s["pipelines"].as_u64().unwrap() as usize);
    assert!(slices["pipeline"].iter().all(|e| e["args"]["worker_pid"].as_u64().is_some()));
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
    let slices = check(&trace, n);
    assert_eq!(slices["device compile"].len(), n);
}
