//! Turning a script into an ordered task list: libraries → stage functions → pipelines.
//!
//! An offline harvest knows every pipeline up front, so it schedules each unique library and
//! each unique stage function once, before the pipelines that need them: when the pipeline
//! tasks run, their stage functions are already cached and no thread waits on another.

use crate::descriptor::{stage_key, FunctionDescriptor, KeyContext, Library, PipelineDescriptor, ShaderStage};
use std::collections::HashSet;
use std::sync::Arc;

/// One unit of work.
pub enum Task {
    /// Parse and validate a library.
    Library(Arc<Library>),
    /// Specialize and write a stage function.
    Function(FunctionDescriptor, ShaderStage),
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

/// Plans `pipelines` (each with its index into the caller's list).
pub fn plan(pipelines: &[(usize, &PipelineDescriptor)], ctx: &KeyContext) -> Plan {
    let mut tasks = Vec::new();
    let mut libs = HashSet::new();
    let mut funcs = HashSet::new();
    let mut lib_tasks = Vec::new();
    let mut func_tasks = Vec::new();
    let mut stage_references = 0;
    for (_, d) in pipelines {
        for (stage, f) in d.stages() {
            stage_references += 1;
            let (lib, _) = f.base();
            if libs.insert(lib.hash()) {
                lib_tasks.push(Task::Library(lib.clone()));
            }
            if funcs.insert(stage_key(f, stage, ctx)) {
                func_tasks.push(Task::Function(f.clone(), stage));
            }
        }
    }
    let (libraries, functions) = (lib_tasks.len(), func_tasks.len());
    tasks.extend(lib_tasks);
    tasks.extend(func_tasks);
    tasks.extend(pipelines.iter().map(|(i, _)| Task::Pipeline(*i)));
    Plan { tasks, libraries, functions, stage_references }
}
