//! The five scenarios.
//!
//! Every compiler here comes from [`Workload::compiler`], so with a device backend they all
//! share its one device. Final archives are encoded with their device data: a capture through
//! [`encode_capture`] (its entries' binary sets and its backends' caches), merged pieces from
//! the files as written (binary sets and caches as `write_archive` put them there).

use super::check::{check_final, check_write};
use super::reference::{encode_capture, Workload};
use super::{Mode, StressReport};
use granary::archive::{encode, merge, Archive};
use granary::capture::{Capture, CaptureMode};
use granary::compiler::Compiler;
use granary::descriptor::PipelineKey;
use granary::sync::lock_std;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// Shared state of one iteration.
struct Run<'a> {
    w: &'a Workload,
    next: AtomicUsize,
    violations: Mutex<Vec<String>>,
    compiles: AtomicUsize,
    writes: AtomicUsize,
    writes_checked: AtomicUsize,
    /// Pipelines created on the device before the iteration began.
    driver_before: u64,
}

impl<'a> Run<'a> {
    fn new(w: &'a Workload) -> Self {
        Run {
            w,
            next: AtomicUsize::new(0),
            violations: Mutex::new(Vec::new()),
            compiles: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
            writes_checked: AtomicUsize::new(0),
            driver_before: w.driver_creates(),
        }
    }
    fn violation(&self, v: String) {
        lock_std(&self.violations).push(v);
    }
    /// Compiles the next pipeline with `c`, noting its key in `returned`; false when none is
    /// left.
    fn step(&self, c: &Compiler, returned: &Mutex<Vec<PipelineKey>>) -> bool {
        let Some(p) = self.w.pipelines.get(self.next.fetch_add(1, Ordering::Relaxed)) else { return false };
        self.compiles.fetch_add(1, Ordering::Relaxed);
        match c.compile(p) {
            Ok(e) => lock_std(returned).push(e.key),
            Err(e) => self.violation(format!("compile failed under concurrency: {e}")),
        }
        true
    }
    /// Writes `capture` while others may compile into it, then checks the file against the
    /// keys in `returned` (compiles into this capture that returned before the write).
    fn write_and_check(&self, capture: &Capture, name: &str, returned: &Mutex<Vec<PipelineKey>>) -> Option<Archive> {
        let before = lock_std(returned).clone();
        let path = self.w.dir.join(name);
        if let Err(e) = capture.write_archive(&path) {
            self.violation(format!("write_archive failed: {e}"));
            return None;
        }
        self.writes.fetch_add(1, Ordering::Relaxed);
        let mut v = Vec::new();
        if check_write(&path, &before, &mut v) {
            self.writes_checked.fetch_add(1, Ordering::Relaxed);
        }
        for x in v {
            self.violation(x);
        }
        Archive::read(&path).ok()
    }
    fn finish(self, final_bytes: Vec<u8>, mode: Mode, report: &mut StressReport) {
        let mut v = self.violations.into_inner().unwrap_or_else(|p| p.into_inner());
        let created = self.w.driver_creates().saturating_sub(self.driver_before);
        report.driver_creates += created;
        if self.w.device.is_some() && created != self.w.pipelines.len() as u64 {
            v.push(format!(
                "{}: {created} pipelines created on the device for {} pipelines (each should be created exactly once)",
                mode.name(),
                self.w.pipelines.len()
            ));
        }
        check_final(self.w, &final_bytes, mode.name(), &mut v);
        report.violations.extend(v);
        report.compiles += self.compiles.into_inner();
        report.writes += self.writes.into_inner();
        report.writes_checked += self.writes_checked.into_inner();
    }
}

/// The bytes of `archives` merged into one; a failed merge is a violation (naming `what` was
/// merged) and gives no bytes.
fn merged(run: &Run<'_>, archives: &[Archive], what: &str) -> Vec<u8> {
    match merge(archives) {
        Ok((entries, meta)) => encode(&entries, &meta),
        Err(e) => {
            run.violation(format!("merging {what} failed: {e}"));
            Vec::new()
        }
    }
}

fn join_all<T>(run: &Run<'_>, handles: Vec<std::thread::ScopedJoinHandle<'_, T>>) {
    for h in handles {
        if let Err(p) = h.join() {
            let msg = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
            run.violation(format!("a thread panicked: {}", msg.unwrap_or_default()));
        }
    }
}

/// Runs one iteration of `mode`.
pub(super) fn run(mode: Mode, w: &Workload, threads: usize, rotate_every: usize, report: &mut StressReport) {
    let run = Run::new(w);
    let bytes = match mode {
        Mode::SharedVertex => shared_vertex(&run, threads),
        Mode::FlushDuringCompile => flush_during_compile(&run, threads),
        Mode::Rotate => rotate(&run, threads, rotate_every, false),
        Mode::PerThread => per_thread(&run, threads),
        Mode::SeedMix => rotate(&run, threads, rotate_every, true),
    };
    run.finish(bytes, mode, report);
}

fn shared_vertex(run: &Run<'_>, threads: usize) -> Vec<u8> {
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let c = run.w.compiler(Some(capture.clone()), threads);
    let returned = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        let hs = (0..threads).map(|_| s.spawn(|| while run.step(&c, &returned) {})).collect();
        join_all(run, hs);
    });
    let compiled = c.stats().functions_compiled;
    if compiled != run.w.unique_functions {
        run.violation(format!(
            "{compiled} stage-function compiles for {} unique stage functions",
            run.w.unique_functions
        ));
    }
    encode_capture(&capture)
}

fn flush_during_compile(run: &Run<'_>, threads: usize) -> Vec<u8> {
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let c = run.w.compiler(Some(capture.clone()), threads);
    let done = AtomicBool::new(false);
    let writing = AtomicBool::new(false);
    let returned = Mutex::new(Vec::new());
    let compilers = threads.saturating_sub(1).max(1);
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let mut i = 0;
            while !done.load(Ordering::SeqCst) {
                writing.store(true, Ordering::SeqCst);
                run.write_and_check(&capture, &format!("flush-{}.granary", i % 2), &returned);
                i += 1;
            }
        });
        // Compiles start once the writer is writing, so the two always overlap.
        while !writing.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        let hs = (0..compilers).map(|_| s.spawn(|| while run.step(&c, &returned) {})).collect();
        join_all(run, hs);
        done.store(true, Ordering::SeqCst);
        join_all(run, vec![writer]);
    });
    run.write_and_check(&capture, "flush-final.granary", &returned);
    encode_capture(&capture)
}

/// One compiler generation: a compiler, its capture, and the keys of compiles into it that
/// have returned.
struct Generation {
    compiler: Compiler,
    capture: Arc<Capture>,
    returned: Mutex<Vec<PipelineKey>>,
}

fn generation(w: &Workload, threads: usize) -> Arc<Generation> {
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    Arc::new(Generation {
        compiler: w.compiler(Some(capture.clone()), threads),
        capture,
        returned: Mutex::new(Vec::new()),
    })
}

/// The report's rotation: every `k` pipelines the archive is written and a fresh compiler and
/// capture take over. The old generation is written once every compile still using it has
/// returned (they hold an `Arc` to it), so nothing is lost between pieces. With `mix`, a flush
/// thread also writes the current generation continuously and half the threads compile into
/// per-thread compilers, all at once.
fn rotate(run: &Run<'_>, threads: usize, k: usize, mix: bool) -> Vec<u8> {
    let k = k.max(1);
    let current = RwLock::new(generation(run.w, threads));
    let pieces: Mutex<Vec<Archive>> = Mutex::new(Vec::new());
    let rotated = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let shared_threads = if mix { threads.div_ceil(2) } else { threads };
    let rotate_now = |gen: Arc<Generation>| {
        let n = rotated.fetch_add(1, Ordering::SeqCst);
        // Wait until every compile still holding the old generation has returned.
        while Arc::strong_count(&gen) > 1 {
            std::thread::yield_now();
        }
        if let Some(e) = run.write_and_check(&gen.capture, &format!("piece-{n}.granary"), &gen.returned) {
            lock_std(&pieces).push(e);
        }
    };
    std::thread::scope(|s| {
        let mut hs = Vec::new();
        for _ in 0..shared_threads {
            hs.push(s.spawn(|| loop {
                let gen = match current.read() {
                    Ok(g) => g.clone(),
                    Err(p) => p.into_inner().clone(),
                };
                if !run.step(&gen.compiler, &gen.returned) {
                    break;
                }
                let n = gen.capture.records() as usize;
                if n >= k {
                    // Swap in a fresh generation exactly once per generation.
                    let old = {
                        let mut cur = current.write().unwrap_or_else(|p| p.into_inner());
                        if Arc::ptr_eq(&cur, &gen) {
                            Some(std::mem::replace(&mut *cur, generation(run.w, threads)))
                        } else {
                            None
                        }
                    };
                    drop(gen);
                    if let Some(old) = old {
                        rotate_now(old);
                    }
                }
            }));
        }
        if mix {
            for _ in shared_threads..threads {
                hs.push(s.spawn(|| {
                    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
                    let c = run.w.compiler(Some(capture.clone()), 1);
                    let returned = Mutex::new(Vec::new());
                    while run.step(&c, &returned) {}
                    drop(c);
                    let n = rotated.fetch_add(1, Ordering::SeqCst);
                    if let Some(e) = run.write_and_check(&capture, &format!("piece-{n}.granary"), &returned) {
                        lock_std(&pieces).push(e);
                    }
                }));
            }
            let flusher = s.spawn(|| {
                let mut i = 0;
                while !done.load(Ordering::SeqCst) {
                    let gen = current.read().unwrap_or_else(|p| p.into_inner()).clone();
                    // The snapshot contract for the generation being compiled into.
                    run.write_and_check(&gen.capture, &format!("mix-flush-{}.granary", i % 2), &gen.returned);
                    drop(gen);
                    i += 1;
                }
            });
            join_all(run, hs);
            done.store(true, Ordering::SeqCst);
            join_all(run, vec![flusher]);
        } else {
            join_all(run, hs);
        }
    });
    let last = current.into_inner().unwrap_or_else(|p| p.into_inner());
    rotate_now(last);
    let archives = pieces.into_inner().unwrap_or_else(|p| p.into_inner());
    merged(run, &archives, "the pieces")
}

fn per_thread(run: &Run<'_>, threads: usize) -> Vec<u8> {
    let pieces: Mutex<Vec<Archive>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        let hs = (0..threads)
            .map(|t| {
                let pieces = &pieces;
                s.spawn(move || {
                    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
                    let c = run.w.compiler(Some(capture.clone()), 1);
                    let returned = Mutex::new(Vec::new());
                    while run.step(&c, &returned) {}
                    run.write_and_check(&capture, &format!("thread-{t}.granary"), &returned);
                    if let Ok(a) = Archive::read(&run.w.dir.join(format!("thread-{t}.granary"))) {
                        lock_std(pieces).push(a);
                    }
                })
            })
            .collect();
        join_all(run, hs);
    });
    let pieces = pieces.into_inner().unwrap_or_else(|p| p.into_inner());
    merged(run, &pieces, "per-thread archives")
}
