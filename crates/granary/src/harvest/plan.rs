//! Turning a script into an ordered task list: libraries → stage functions → pipelines, in
//! waves of [`WAVE`] pipelines.
//!
//! An offline harvest knows every pipeline up front, so it schedules each unique library and
//! each unique stage function once, before the pipelines that need them. It does so wave by
//! wave, one wave ahead: the libraries and stage functions first used by wave 0, then those
//! of wave 1, then wave 0's pipelines, then wave 2's functions and wave 1's pipelines, and so
//! on. Two promises follow. Pipelines land (and can be journaled) from the first wave on, not
//! only after every stage function of the script has compiled, so a kill or an interrupt
//! loses at most the stage functions of about two waves beyond what `--flush-every` bounds.
//! And a pipeline task rarely waits: its functions were queued a whole wave of functions
//! earlier, so by the time a thread takes it they are cached (a thread that does get there
//! first waits on the function's cell, never compiles it twice).

use crate::descriptor::{
    native_stage_key, FunctionDescriptor, KeyContext, Library, PipelineDescriptor, ShaderStage, StageKey,
};
use granary_archive::native::Specialization;
use std::collections::HashSet;
use std::sync::Arc;

/// Pipelines per wave: the most pipelines whose stage functions are queued ahead of them.
pub const WAVE: usize = 256;

/// One unit of work.
pub enum Task {
    /// Parse and validate a library.
    Library(Arc<Library>),
    /// Specialize and write a stage function (with a native stage's own
    /// `VkSpecializationInfo`, which is part of its key).
    Function(FunctionDescriptor, ShaderStage, Option<Arc<Specialization>>),
    /// Compile pipeline `index` of the plan's pipeline list.
    Pipeline(usize),
}

/// The task list for a set of pipelines.
pub struct Plan {
    /// Tasks in execution order.
    pub tasks: Vec<Task>,
    /// Unique libraries.
    pub libraries: usize,
    /// Unique stage functions.
    pub functions: usize,
    /// Stage-function references across all pipelines.
    pub stage_references: usize,
}

/// Plans `pipelines` (each with its index into the caller's list), computing stage keys on
/// up to `threads` threads. The task order does not depend on `threads`: libraries and stage
/// functions appear in the order of their first use in `pipelines`.
pub fn plan(pipelines: &[(usize, &PipelineDescriptor)], ctx: &KeyContext, threads: usize) -> Plan {
    // Hashing every stage reference's canonical encoding is most of the planning work (66,000
    // stage keys at seed scale): compute them in parallel, in order, then deduplicate serially.
    let threads = threads.clamp(1, pipelines.len() / 512 + 1);
    let chunk = pipelines.len().div_ceil(threads).max(1);
    let keys_of = |part: &[(usize, &PipelineDescriptor)]| -> Vec<StageKey> {
        part.iter().flat_map(|(_, d)| d.stage_keys(ctx)).collect()
    };
    let parts: Vec<&[(usize, &PipelineDescriptor)]> = pipelines.chunks(chunk).collect();
    let keyed: Vec<Vec<StageKey>> = std::thread::scope(|s| {
        let keys_of = &keys_of;
        let handles: Vec<_> = parts.iter().map(|part| s.spawn(move || keys_of(part))).collect();
        // Hashing cannot panic on any input; should a thread die anyway, its chunk is keyed
        // again here, so every stage reference keeps its own key.
        handles.into_iter().zip(&parts).map(|(h, part)| h.join().unwrap_or_else(|_| keys_of(part))).collect()
    });
    let mut keys = keyed.into_iter().flatten();
    let mut libs = HashSet::new();
    let mut funcs = HashSet::new();
    // Per wave: the libraries and stage functions it uses first, and its pipelines.
    let mut waves: Vec<(Vec<Task>, Vec<Task>)> = Vec::new();
    let (mut libraries, mut functions, mut stage_references) = (0, 0, 0);
    for (n, (index, d)) in pipelines.iter().enumerate() {
        if n % WAVE == 0 {
            waves.push((Vec::new(), Vec::new()));
        }
        let Some((ahead, wave)) = waves.last_mut() else { break };
        let specs: Vec<Option<Arc<Specialization>>> = match d {
            PipelineDescriptor::Native(n) => n.stages.iter().map(|s| s.specialization.clone()).collect(),
            _ => Vec::new(),
        };
        for (i, (stage, f)) in d.stages().into_iter().enumerate() {
            let spec = specs.get(i).cloned().flatten();
            stage_references += 1;
            let (lib, _) = f.base();
            if libs.insert(lib.hash()) {
                libraries += 1;
                ahead.push(Task::Library(lib.clone()));
            }
            // Always `next`: one key per stage reference, in order.
            let key = keys.next().unwrap_or_else(|| native_stage_key(f, stage, spec.as_deref(), ctx));
            if funcs.insert(key) {
                functions += 1;
                ahead.push(Task::Function(f.clone(), stage, spec));
            }
        }
        wave.push(Task::Pipeline(*index));
    }
    // Wave w's pipelines follow wave w+1's libraries and functions.
    let mut tasks = Vec::with_capacity(libraries + functions + pipelines.len());
    let mut behind: Option<Vec<Task>> = None;
    for (ahead, wave) in waves {
        tasks.extend(ahead);
        tasks.extend(behind.replace(wave).into_iter().flatten());
    }
    tasks.extend(behind.into_iter().flatten());
    Plan { tasks, libraries, functions, stage_references }
}
