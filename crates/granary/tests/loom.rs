//! loom models of the concurrency core. Run with
//! `RUSTFLAGS="--cfg loom" cargo test --test loom --target-dir target/loom --profile loom`
//! (`.ci/run` does). Under `--cfg loom` the crate's `sync` module is built on loom's `Mutex`
//! and `Condvar`, so these models check the shipped code under every interleaving.
#![cfg(loom)]

use granary::capture::{Capture, CaptureMode};
use granary::descriptor::*;
use granary::sync::{ComputeOnce, TaskLimiter};
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;

/// Every caller gets the value, and it is computed exactly once, whatever the interleaving.
#[test]
fn compute_once_runs_once_and_everyone_sees_the_value() {
    loom::model(|| {
        let cell = Arc::new(ComputeOnce::<u32>::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (cell, runs) = (cell.clone(), runs.clone());
                loom::thread::spawn(move || {
                    cell.get_or_compute(|| {
                        runs.fetch_add(1, Ordering::SeqCst);
                        42
                    })
                    .0
                })
            })
            .collect();
        let mine = cell.get_or_compute(|| {
            runs.fetch_add(1, Ordering::SeqCst);
            42
        });
        assert_eq!(mine.0, 42);
        for h in handles {
            assert_eq!(h.join().unwrap(), 42);
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(cell.get(), Some(42));
    });
}

fn descriptor(label: &str, lib: &std::sync::Arc<Library>) -> PipelineDescriptor {
    PipelineDescriptor::Compute(ComputePipelineDescriptor {
        label: Some(label.to_string()),
        compute: FunctionDescriptor::library(lib.clone(), "main"),
        layout: None,
    })
}

fn entry(key: u128) -> std::sync::Arc<PipelineEntry> {
    std::sync::Arc::new(PipelineEntry {
        key: PipelineKey(key),
        kind: PipelineKind::Compute,
        stages: vec![StageEntry {
            key: StageKey(key),
            stage: ShaderStage::Compute,
            entry_point: "main".into(),
            outputs: TargetOutputs::default(),
            specialization: None,
        }],
        layout: None,
        state: None,
    })
}

/// The snapshot contract: an entry whose `record` returned before a snapshot began is in it,
/// and no snapshot sees a partial entry (labels and stages arrive together).
#[test]
fn snapshot_holds_everything_recorded_before_it_began() {
    loom::model(|| {
        let lib = Library::wgsl("l", "@compute @workgroup_size(1) fn main() {}");
        let capture = Arc::new(Capture::new(CaptureMode::Outputs));
        let recorded = Arc::new(AtomicBool::new(false));
        let writer = {
            let (capture, recorded, lib) = (capture.clone(), recorded.clone(), lib.clone());
            loom::thread::spawn(move || {
                capture.record(&entry(2), &descriptor("a", &lib));
                recorded.store(true, Ordering::SeqCst);
            })
        };
        let other = {
            let (capture, lib) = (capture.clone(), lib.clone());
            // Key 4 shares a shard with key 2 (two shards under loom); key 3 does not.
            loom::thread::spawn(move || {
                capture.record(&entry(4), &descriptor("b", &lib));
                capture.record(&entry(3), &descriptor("c", &lib));
            })
        };
        let before = recorded.load(Ordering::SeqCst);
        let snap = capture.snapshot();
        if before {
            assert!(snap.entries.iter().any(|e| e.entry.key.0 == 2), "recorded before the snapshot but missing");
        }
        for e in &snap.entries {
            assert_eq!(e.entry.stages.len(), 1);
            assert_eq!(e.labels.len(), 1, "labels arrive with their entry");
        }
        writer.join().unwrap();
        other.join().unwrap();
        let keys: Vec<u128> = capture.snapshot().entries.iter().map(|e| e.entry.key.0).collect();
        assert_eq!(keys, vec![2, 3, 4]);
    });
}

/// Re-recording a key merges its label without ever losing one.
#[test]
fn concurrent_records_of_one_key_merge_labels() {
    loom::model(|| {
        let lib = Library::wgsl("l", "@compute @workgroup_size(1) fn main() {}");
        let capture = Arc::new(Capture::new(CaptureMode::Outputs));
        let t = {
            let (capture, lib) = (capture.clone(), lib.clone());
            loom::thread::spawn(move || capture.record(&entry(7), &descriptor("x", &lib)))
        };
        capture.record(&entry(7), &descriptor("y", &lib));
        t.join().unwrap();
        let snap = capture.snapshot();
        assert_eq!(snap.entries.len(), 1);
        let mut labels = snap.entries[0].labels.to_vec();
        labels.sort();
        assert_eq!(labels, vec!["x".to_string(), "y".to_string()]);
    });
}

/// The task limiter never admits more tasks than its bound.
#[test]
fn limiter_bounds_concurrency() {
    loom::model(|| {
        let limiter = Arc::new(TaskLimiter::new(1));
        let inside = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (limiter, inside) = (limiter.clone(), inside.clone());
                loom::thread::spawn(move || {
                    let _p = limiter.acquire();
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                    inside.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
}
