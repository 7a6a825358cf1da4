//! The front end started while the device opens.
//!
//! A harvest on a device spends its first moments in the driver's start-up (about 0.4 s on
//! NVIDIA 580, one thread busy, the others waiting: docs/BENCHMARKS.md) before its clock
//! starts. [`EarlyFrontEnd::start`] uses that time: it takes the script's libraries and stage
//! functions, in plan order, on the harvest's thread count less one (the opening thread's
//! core), into a front end made as the harvest's compiler makes it ([`Compiler::front_end`]); [`EarlyFrontEnd::finish`] stops it
//! (each thread finishes the task it is on) and hands the front end to the harvest
//! ([`HarvestOptions::early`]), whose compiler is made on it ([`Compiler::with_frontend`]):
//! what was done is a cache hit there.
//!
//! Invariants:
//! - nothing is written: no archive, journal, trace or message; a script that does not load,
//!   or options the preflight refuses, start nothing (the harvest reports them as before);
//! - the script is read once: the harvest takes the text and parse this front end worked
//!   from ([`Early`]), so the two can never see different files;
//! - only libraries and stage functions of pipelines the harvest will compile are started, so
//!   the summary's counts are those of a harvest without it: none under `--resume`,
//!   `--isolate` (workers compile their own) or `--shard` (each selects differently), and the
//!   selection expands unspecialized pipelines as for a device without libraries, whose
//!   variants have their originals' stage functions (a device with libraries compiles the
//!   same functions);
//! - errors and panics of a library or function are cached in the front end as they would be
//!   in the harvest (the front end contains them) and surface through its pipelines there.
//!
//! Thread safety: the threads share only the front end (`Sync`, once-cells per library and
//! function) and an atomic cursor and stop flag.

use super::plan::{self, Task};
use super::select::{Expand, Selection};
use super::HarvestOptions;
use crate::compiler::{Compiler, CompilerOptions};
use crate::frontend::Frontend;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// The front end of a harvest, started before its device is open. Dropping it stops and joins
/// its threads.
///
/// Thread safety: owned by the thread that started it; its worker threads share the front
/// end only.
pub struct EarlyFrontEnd {
    frontend: Arc<Frontend>,
    stop: Arc<AtomicBool>,
    started: Instant,
    thread: Option<JoinHandle<(usize, Option<Loaded>)>>,
}

/// A script as [`super::load`] returns it: its text and what it parses to.
pub(super) type Loaded = Arc<(String, crate::script::Script)>;

/// A front end handed to a harvest ([`HarvestOptions::early`]) and what was done in it.
///
/// Thread safety: `Send + Sync`; the front end is shared by reference count.
#[derive(Clone)]
pub struct Early {
    /// The front end, made for the harvest's options.
    pub(crate) frontend: Arc<Frontend>,
    /// The script it loaded, which the harvest uses instead of loading it again (so its
    /// selection is the one this front end worked for); `None` when it did not load.
    pub(crate) loaded: Option<Loaded>,
    /// Libraries and stage functions done (each task run, whatever its result).
    pub tasks: usize,
    /// From the start to the moment it was stopped.
    pub seconds: f64,
}

impl std::fmt::Debug for Early {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Early").field("tasks", &self.tasks).field("seconds", &self.seconds).finish_non_exhaustive()
    }
}

impl EarlyFrontEnd {
    /// Starts the front end of the harvest `opts` describes (its script, targets, profile,
    /// thread count, library limit and output checks), or `None` where it would not be exact
    /// (see the module's invariants) or the script does not load.
    pub fn start(opts: &HarvestOptions, sharded: bool) -> Option<EarlyFrontEnd> {
        if opts.resume || opts.isolate.is_some() || sharded || super::preflight::check(opts).is_err() {
            return None;
        }
        let threads = opts.threads.max(1);
        let frontend = Arc::new(Compiler::front_end(&compiler_options(opts, threads)));
        let stop = Arc::new(AtomicBool::new(false));
        let (f, halt, o) = (frontend.clone(), stop.clone(), opts.clone());
        let thread = std::thread::Builder::new()
            .name("granary-early".into())
            .spawn(move || {
                // A script that does not load starts nothing: the harvest loads it again and
                // reports the error.
                let Ok(loaded) = super::load(&o).map(Arc::new) else { return (0, None) };
                let expansion = Selection::expansion(&loaded.1, Expand::Replace);
                let selection = Selection::new(&loaded.1, &expansion, f.key_context());
                let plan = plan::plan(&selection.pipelines, &selection.ctx, threads);
                // One core is the opening thread's.
                let tasks = run(&f, &plan.tasks, threads.saturating_sub(1).max(1), &halt);
                (tasks, Some(loaded))
            })
            .ok()?;
        Some(EarlyFrontEnd { frontend, stop, started: Instant::now(), thread: Some(thread) })
    }

    /// Stops taking tasks, waits for the ones running, and hands the front end over.
    pub fn finish(self) -> Early {
        self.stop.store(true, Ordering::Relaxed);
        self.wait()
    }

    /// Waits for every task to run, then hands the front end over (for tests: a caller with
    /// nothing to overlap has no reason to start one).
    #[doc(hidden)]
    pub fn wait(mut self) -> Early {
        let (tasks, loaded) = self.thread.take().and_then(|t| t.join().ok()).unwrap_or((0, None));
        Early { frontend: self.frontend.clone(), loaded, tasks, seconds: self.started.elapsed().as_secs_f64() }
    }
}

impl Drop for EarlyFrontEnd {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The compiler options of the harvest `opts` on `threads` threads (its front end's, and
/// [`super::Setup`]'s without the capture).
pub(super) fn compiler_options(opts: &HarvestOptions, threads: usize) -> CompilerOptions {
    CompilerOptions {
        targets: opts.targets,
        profile: opts.profile,
        max_concurrent_tasks: Some(threads),
        capture: None,
        cache_functions: true,
        require_all_targets: opts.require_all_targets,
        max_library_bytes: opts.max_library_bytes,
        check_outputs: opts.check_outputs,
    }
}

/// Runs the library and stage-function tasks of `tasks` on `threads` threads until `stop`;
/// returns how many ran.
fn run(frontend: &Frontend, tasks: &[Task], threads: usize, stop: &AtomicBool) -> usize {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while let Some(task) = tasks.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if super::inprocess::front_task(frontend, task).is_some() {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    done.load(Ordering::Relaxed)
}
