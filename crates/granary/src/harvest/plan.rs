//! Turning a script into an ordered task list: libraries → stage functions → pipelines.
//!
//! An offline harvest knows every pipeline up front, so it schedules each unique library and
//! each unique stage function once, before the pipelines that need them: when the pipeline
//! tasks run, their stage functions are already cached and no thread waits on another.

use crate::descriptor::{
    native_stage_key, FunctionDescriptor, KeyContext, Library, PipelineDescriptor, ShaderStage, StageKey,
};
use granary_archive::native::Specialization;
use std::collections::HashSet;
use std::sync::Arc;

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
    let mut lib_tasks = Vec::new();
    let mut func_tasks = Vec::new();
    let mut stage_references = 0;
    for (_, d) in pipelines {
        let specs: Vec<Option<Arc<Specialization>>> = match d {
            PipelineDescriptor::Native(n) => n.stages.iter().map(|s| s.specialization.clone()).collect(),
            _ => Vec::new(),
        };
        for (i, (stage, f)) in d.stages().into_iter().enumerate() {
            let spec = specs.get(i).cloned().flatten();
            stage_references += 1;
            let (lib, _) = f.base();
            if libs.insert(lib.hash()) {
                lib_tasks.push(Task::Library(lib.clone()));
            }
            // Always `next`: one key per stage reference, in order.
            let key = keys.next().unwrap_or_else(|| native_stage_key(f, stage, spec.as_deref(), ctx));
            if funcs.insert(key) {
                func_tasks.push(Task::Function(f.clone(), stage, spec));
            }
        }
    }
    let (libraries, functions) = (lib_tasks.len(), func_tasks.len());
    let mut tasks = Vec::with_capacity(libraries + functions + pipelines.len());
    tasks.extend(lib_tasks);
    tasks.extend(func_tasks);
    tasks.extend(pipelines.iter().map(|(i, _)| Task::Pipeline(*i)));
    Plan { tasks, libraries, functions, stage_references }
}
