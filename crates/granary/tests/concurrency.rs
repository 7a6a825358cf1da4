//! The thread-safety and snapshot contracts, under the report's workload patterns.

mod common;

use granary::archive::Archive;
use granary::capture::{Capture, CaptureMode};
use granary::compiler::{Compiler, CompilerOptions};
use granary::descriptor::{PipelineKey, TargetSet};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The report's crash: many threads compiling, with capture attached, long runs of pipelines
/// that share one vertex function. Every compile succeeds and each stage function is
/// specialized exactly once.
#[test]
fn sixteen_threads_runs_of_a_thousand_sharing_one_vertex_function() {
    let fx = common::fixture();
    const RUNS: u32 = 3;
    const PER_RUN: u32 = 1000;
    const MATERIALS: u32 = 20;
    let pipelines = Arc::new(fx.runs(RUNS, PER_RUN, MATERIALS));
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let compiler = Arc::new(Compiler::new(CompilerOptions {
        targets: TargetSet::of(&[granary::descriptor::Target::Spirv, granary::descriptor::Target::Msl]),
        max_concurrent_tasks: Some(16),
        capture: Some(capture.clone()),
        cache_functions: true,
        ..Default::default()
    }));
    let next = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..16)
        .map(|_| {
            let (pipelines, compiler, next) = (pipelines.clone(), compiler.clone(), next.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(p) = pipelines.get(i) else { break n };
                    compiler.compile(p).expect("compile");
                    n += 1;
                }
            })
        })
        .collect();
    let per_thread: Vec<usize> = threads.into_iter().map(|t| t.join().expect("no panic")).collect();
    assert_eq!(per_thread.iter().sum::<usize>(), (RUNS * PER_RUN) as usize);
    let stats = compiler.stats();
    assert_eq!(stats.libraries_parsed, 2, "each library parsed once");
    assert_eq!(stats.functions_compiled, u64::from(RUNS + MATERIALS), "each stage function compiled once");
    assert_eq!(stats.function_requests, u64::from(2 * RUNS * PER_RUN));
    assert_eq!(capture.len(), (RUNS * PER_RUN) as usize);
}

/// `write_archive` in a loop while 8 threads compile into the same capture: every written
/// archive verifies and holds every pipeline whose compile returned before the write began.
#[test]
fn write_archive_while_eight_threads_compile() {
    let fx = common::fixture();
    let pipelines = Arc::new(fx.runs(4, 300, 10));
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let compiler = Arc::new(Compiler::new(CompilerOptions {
        max_concurrent_tasks: Some(8),
        capture: Some(capture.clone()),
        ..Default::default()
    }));
    let returned: Arc<Mutex<Vec<PipelineKey>>> = Arc::new(Mutex::new(Vec::new()));
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let writing = Arc::new(AtomicBool::new(false));
    let dir = common::tempdir();
    let path = dir.path().join("live.granary");

    let writer = {
        let (capture, returned, done, path, writing) =
            (capture.clone(), returned.clone(), done.clone(), path.clone(), writing.clone());
        std::thread::spawn(move || {
            let mut writes = 0;
            let mut checked_nonempty = 0;
            loop {
                let finished = done.load(Ordering::SeqCst);
                writing.store(true, Ordering::SeqCst);
                let before: Vec<PipelineKey> = returned.lock().unwrap().clone();
                let report = capture.write_archive(&path).expect("write");
                let archive = Archive::open(&path).expect("open");
                archive.verify().expect("every written archive verifies");
                assert!(report.pipelines >= before.len());
                for k in &before {
                    assert!(
                        archive.get(*k).unwrap().is_some(),
                        "pipeline {k} returned before the write began but is missing"
                    );
                }
                writes += 1;
                if !before.is_empty() {
                    checked_nonempty += 1;
                }
                if finished {
                    break (writes, checked_nonempty);
                }
            }
        })
    };
    // Compiles start once the writer is writing, so the two always overlap.
    while !writing.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (pipelines, compiler, next, returned) =
                (pipelines.clone(), compiler.clone(), next.clone(), returned.clone());
            std::thread::spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(p) = pipelines.get(i) else { break };
                let entry = compiler.compile(p).expect("compile");
                returned.lock().unwrap().push(entry.key);
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    done.store(true, Ordering::SeqCst);
    let (writes, nonempty) = writer.join().expect("writer");
    assert!(writes >= 2, "the writer ran during compilation ({writes} writes)");
    assert!(nonempty >= 1);
    let archive = Archive::open(&path).unwrap();
    assert_eq!(archive.len(), pipelines.len());
    let all: HashSet<_> = returned.lock().unwrap().iter().copied().collect();
    assert_eq!(all.len(), pipelines.len());
}

/// The contract in the type system.
#[test]
fn public_types_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Compiler>();
    assert_send_sync::<Capture>();
    assert_send_sync::<Archive>();
    assert_send_sync::<granary::descriptor::PipelineDescriptor>();
    assert_send_sync::<granary::descriptor::Library>();
    assert_send_sync::<granary::descriptor::PipelineEntry>();
    assert_send_sync::<granary::frontend::Frontend>();
    assert_send_sync::<granary::sync::ComputeOnce<Arc<u8>>>();
    assert_send_sync::<granary::sync::ShardedMap<Arc<u8>>>();
}

/// Eight threads each compile a pipeline and then write the capture to one path: writes land
/// in snapshot order, so the file left at the end holds every pipeline (an older snapshot
/// landing last would lose the newest pipelines).
#[test]
fn concurrent_writes_to_one_path_land_in_snapshot_order() {
    let fx = common::fixture();
    let pipelines = Arc::new(fx.runs(4, 20, 4));
    let dir = common::tempdir();
    let path = Arc::new(dir.path().join("same.granary"));
    for round in 0..10 {
        let capture = Arc::new(Capture::new(CaptureMode::Outputs));
        let compiler =
            Arc::new(Compiler::new(CompilerOptions { capture: Some(capture.clone()), ..Default::default() }));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (c, cap, ps, path) = (compiler.clone(), capture.clone(), pipelines.clone(), path.clone());
                std::thread::spawn(move || {
                    for p in ps.iter().skip(t).step_by(8).skip(round % 2).step_by(2) {
                        c.compile(p).unwrap();
                        cap.write_archive(&path).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let a = Archive::open(&path).unwrap();
        assert_eq!(a.len(), capture.len(), "round {round}: the last write to land is not the newest snapshot");
    }
}

/// Planning computes stage keys on several threads; the task list it returns (and so the
/// harvest's schedule and counts) is the same for any thread count.
#[test]
fn plan_is_the_same_for_any_thread_count() {
    use granary::descriptor::stage_key;
    use granary::harvest::{plan, Task};
    let fx = common::fixture();
    let pipelines = fx.runs(7, 300, 5);
    let indexed: Vec<(usize, &granary::descriptor::PipelineDescriptor)> = pipelines.iter().enumerate().collect();
    let ctx = Compiler::new(CompilerOptions::default()).key_context();
    let shape = |threads: usize| {
        let p = plan(&indexed, &ctx, threads);
        let tasks: Vec<String> = p
            .tasks
            .iter()
            .map(|t| match t {
                Task::Library(l) => format!("L{}", l.hash()),
                Task::Function(f, s, _) => format!("F{}", stage_key(f, *s, &ctx)),
                Task::Pipeline(i) => format!("P{i}"),
            })
            .collect();
        (tasks, p.libraries, p.functions, p.stage_references)
    };
    let one = shape(1);
    assert_eq!(one.2, 7 + 5, "7 vertex variants and 5 fragment variants");
    for threads in [2, 3, 8, 64] {
        assert!(shape(threads) == one, "plan differs with {threads} threads");
    }
}

/// A backend whose device cannot hand over its pipeline-cache data (`vkGetPipelineCacheData`
/// failed): the archive write fails saying so and leaves no file, instead of writing an archive
/// that silently lacks the cache (the Vulkan backend used to swallow the error).
#[test]
fn a_device_cache_that_cannot_be_read_fails_the_write_instead_of_vanishing() {
    use granary::backend::Backend;
    use granary::descriptor::PipelineDescriptor;
    use granary::frontend::StageFunction;
    struct Failing;
    impl Backend for Failing {
        fn name(&self) -> &'static str {
            "failing-cache"
        }
        fn link(&self, desc: &PipelineDescriptor, stages: &[Arc<StageFunction>]) -> Result<(), String> {
            granary::backend::link_check(desc, stages)
        }
        fn device_caches(&self) -> Result<Vec<granary::archive::DeviceCache>, String> {
            Err("vkGetPipelineCacheData failed: ERROR_OUT_OF_HOST_MEMORY".into())
        }
    }
    let fx = common::fixture();
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let options = CompilerOptions { capture: Some(capture.clone()), ..Default::default() };
    let compiler = Compiler::with_backend(options, Arc::new(Failing));
    compiler.compile(&fx.pipeline(0, 0, 1)).expect("compiles");
    let dir = common::tempdir();
    let path = dir.path().join("a.granary");
    let e = capture.write_archive(&path).expect_err("the cache could not be read").to_string();
    assert!(e.contains("ERROR_OUT_OF_HOST_MEMORY") && e.contains("reading device data"), "{e}");
    assert!(!path.exists());
}
