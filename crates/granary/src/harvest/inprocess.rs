//! The in-process runner: N threads over the planned task list.

use super::plan::{Plan, Task};
use super::sink::{compile_failure, Sink};
use crate::compiler::{CompileError, Compiler};
use crate::descriptor::PipelineDescriptor;
use crate::measure::thread_cpu_time;
use crate::script::Script;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Runs every task of `plan` on `threads` threads; returns the threads' total CPU time.
pub(crate) fn run(
    plan: &Plan,
    script: &Script,
    by_index: &HashMap<usize, &PipelineDescriptor>,
    compiler: &Compiler,
    threads: usize,
    sink: &Sink<'_>,
    tracer: Option<&super::trace::Tracer>,
) -> Duration {
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|worker| {
                let next = &next;
                s.spawn(move || {
                    let cpu0 = thread_cpu_time();
                    let track = super::trace::WORKER0 + worker;
                    while let Some(task) = plan.tasks.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let t0 = std::time::Instant::now();
                        // The slice's arguments are built only when tracing.
                        let traced = |name: &'static str, args: &dyn Fn() -> serde_json::Value| {
                            if let Some(t) = tracer {
                                t.slice(track, name, t0, std::time::Instant::now(), args());
                            }
                        };
                        match task {
                            // Library and function errors surface through the pipelines that
                            // use them, with the pipeline named.
                            // (Panics in naga are caught inside the front end and cached as the
                            // library's or function's error.)
                            Task::Library(l) => {
                                let ok = compiler.frontend().library(l).is_ok();
                                traced("library", &|| serde_json::json!({"library": l.name(), "ok": ok}));
                            }
                            Task::Function(f, stage) => {
                                let ok = compiler.frontend().function(f, *stage).is_ok();
                                traced(
                                    "stage function",
                                    &|| serde_json::json!({"function": f.describe(), "stage": stage.name(), "ok": ok}),
                                );
                            }
                            Task::Pipeline(p) => {
                                if let Some(desc) = by_index.get(p) {
                                    // The task boundary: whatever panics in here (code granary
                                    // does not control) costs this pipeline, never the thread.
                                    let outcome = crate::contain::catch(|| {
                                        if let Some(a) = crate::fault::action_for(desc.label()) {
                                            crate::fault::trigger(a);
                                        }
                                        compiler.compile_detailed(desc)
                                    });
                                    // Expanded variants (numbered after the script's pipelines)
                                    // are always labelled.
                                    let name = || match (desc.label(), script.pipelines.get(*p)) {
                                        (Some(l), _) => l.to_string(),
                                        (None, Some(sp)) => sp.display_name(),
                                        (None, None) => format!("pipelines[{p}]"),
                                    };
                                    if let Some(t) = tracer {
                                        let ok = matches!(outcome, Ok(Ok(_)));
                                        let args = serde_json::json!({"pipeline": name(), "index": p, "ok": ok});
                                        t.slice(track, "pipeline", t0, std::time::Instant::now(), args);
                                        if let Ok(Ok(o)) = &outcome {
                                            if let Some((a, b)) = o.device_span {
                                                t.slice(
                                                    track,
                                                    "device compile",
                                                    a,
                                                    b,
                                                    serde_json::json!({"pipeline": name()}),
                                                );
                                            }
                                        }
                                    }
                                    match outcome {
                                        Ok(Ok(o)) => sink.compiled_with(*p, &name(), o.targets, &o.lost),
                                        Ok(Err(e)) => sink.failed(compile_failure(*p, name(), &e)),
                                        Err(report) => sink.failed(compile_failure(
                                            *p,
                                            name(),
                                            &CompileError::Panic { pipeline: name(), report },
                                        )),
                                    }
                                }
                            }
                        }
                        sink.progress();
                    }
                    thread_cpu_time() - cpu0
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or_default()).sum()
    })
}
