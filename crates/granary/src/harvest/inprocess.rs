//! The in-process runner: N threads over the planned task list.
//!
//! [`run_plan`] is the schedule itself (threads pulling tasks from one cursor, libraries and
//! stage functions warming the front end, pipelines handed to a step); the harvest's
//! pipeline step ([`run`]) records into the sink, and granary-lab's benchmark times the same
//! schedule with its own step.

use super::plan::{Plan, Task};
use super::sink::{compile_failure, Sink};
use super::trace::Tracer;
use crate::compiler::{CompileError, Compiler};
use crate::descriptor::PipelineDescriptor;
use crate::measure::thread_cpu_time;
use crate::script::Script;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// One worker thread's share of a run of the schedule.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ThreadShare {
    /// Summed wall time of the tasks it ran (waits inside a task included).
    pub busy: Duration,
    /// Its CPU time.
    pub cpu: Duration,
    /// Tasks it ran.
    pub tasks: usize,
}

/// The harvest's in-process schedule: `threads` threads take the tasks of `plan` in order
/// from one cursor; a library or stage-function task compiles it in `compiler`'s front end
/// (its error surfaces through the pipelines that use it), a pipeline task calls
/// `pipeline(thread, index)` with its index in the plan's input. Returns each thread's share,
/// in spawn order. Not API: exposed for granary-lab's benchmark, which must time the shipped
/// schedule.
#[doc(hidden)]
pub fn run_plan(
    plan: &Plan,
    compiler: &Compiler,
    threads: usize,
    pipeline: &(dyn Fn(usize, usize) + Sync),
) -> Vec<ThreadShare> {
    schedule(plan, compiler, threads, None, &|thread, index, _| pipeline(thread, index), &|_| {}, &|| false)
}

/// [`run_plan`] with tracing: `pipeline(thread, index, start)` gets the task's start time too,
/// `done` is called after every task with it, and no task starts once `stop` says so.
fn schedule(
    plan: &Plan,
    compiler: &Compiler,
    threads: usize,
    tracer: Option<&Tracer>,
    pipeline: &(dyn Fn(usize, usize, Instant) + Sync),
    done: &(dyn Fn(&Task) + Sync),
    stop: &(dyn Fn() -> bool + Sync),
) -> Vec<ThreadShare> {
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|worker| {
                let next = &next;
                s.spawn(move || {
                    let cpu0 = thread_cpu_time();
                    let track = super::trace::WORKER0 + worker;
                    let mut share = ThreadShare::default();
                    while let Some(task) = plan.tasks.get(next.fetch_add(1, Ordering::Relaxed)) {
                        if stop() {
                            break;
                        }
                        let t0 = Instant::now();
                        // The slice's arguments are built only when tracing.
                        let traced = |name: &'static str, args: &dyn Fn() -> serde_json::Value| {
                            if let Some(t) = tracer {
                                t.slice(track, name, t0, Instant::now(), args());
                            }
                        };
                        // Library and function errors surface through the pipelines that use
                        // them, with the pipeline named.
                        match task {
                            Task::Library(l) => {
                                let ok = front_task(compiler.frontend(), task) == Some(true);
                                traced("library", &|| serde_json::json!({"library": l.name(), "ok": ok}));
                            }
                            Task::Function(f, stage, _) => {
                                let ok = front_task(compiler.frontend(), task) == Some(true);
                                traced(
                                    "stage function",
                                    &|| serde_json::json!({"function": f.describe(), "stage": stage.name(), "ok": ok}),
                                );
                            }
                            Task::Pipeline(p) => pipeline(worker, *p, t0),
                        }
                        share.busy += t0.elapsed();
                        share.tasks += 1;
                        done(task);
                    }
                    share.cpu = thread_cpu_time() - cpu0;
                    share
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or_default()).collect()
    })
}

/// Runs a library or stage-function task in `frontend` (a library parsed, a function
/// specialized and written; panics in naga are caught inside the front end and cached as the
/// library's or function's error): `Some(ok)`, or `None` for a pipeline task.
pub(super) fn front_task(frontend: &crate::frontend::Frontend, task: &Task) -> Option<bool> {
    match task {
        Task::Library(l) => Some(frontend.library(l).is_ok()),
        Task::Function(f, stage, None) => Some(frontend.function(f, *stage).is_ok()),
        Task::Function(f, stage, Some(s)) => Some(frontend.native_function(f, *stage, Some(s)).is_ok()),
        Task::Pipeline(_) => None,
    }
}

/// Runs every task of `plan` on `threads` threads, each pipeline recorded in `sink`; returns
/// the threads' total CPU time.
pub(crate) fn run(
    plan: &Plan,
    script: &Script,
    by_index: &HashMap<usize, &PipelineDescriptor>,
    compiler: &Compiler,
    threads: usize,
    sink: &Sink<'_>,
    tracer: Option<&Tracer>,
) -> Duration {
    let pipeline = |worker: usize, p: usize, t0: Instant| {
        let track = super::trace::WORKER0 + worker;
        let Some(desc) = by_index.get(&p) else { return };
        // The task boundary: whatever panics in here (code granary does not control) costs
        // this pipeline, never the thread.
        let outcome = crate::contain::catch(|| {
            if let Some(a) = crate::fault::action_for(desc.label()) {
                crate::fault::trigger(a);
            }
            compiler.compile_detailed(desc)
        });
        // Expanded variants (numbered after the script's pipelines) are always labelled.
        let name = || match (desc.label(), script.pipelines.get(p)) {
            (Some(l), _) => l.to_string(),
            (None, Some(sp)) => sp.display_name(),
            (None, None) => format!("pipelines[{p}]"),
        };
        if let Some(t) = tracer {
            let ok = matches!(outcome, Ok(Ok(_)));
            let args = serde_json::json!({"pipeline": name(), "index": p, "ok": ok});
            t.slice(track, "pipeline", t0, Instant::now(), args);
            if let Ok(Ok(o)) = &outcome {
                if let Some((a, b)) = o.device_span {
                    t.slice(track, "device compile", a, b, serde_json::json!({"pipeline": name()}));
                }
            }
        }
        match outcome {
            Ok(Ok(o)) => sink.compiled_with(p, &name(), o.targets, &o.lost),
            Ok(Err(e)) => sink.failed(compile_failure(p, name(), &e)),
            Err(report) => sink.failed(compile_failure(p, name(), &CompileError::Panic { pipeline: name(), report })),
        }
    };
    schedule(plan, compiler, threads, tracer, &pipeline, &|t| sink.progress(matches!(t, Task::Pipeline(_))), &|| {
        sink.stopped()
    })
    .iter()
    .map(|s| s.cpu)
    .sum()
}
