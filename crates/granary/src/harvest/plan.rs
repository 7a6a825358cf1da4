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
use std::collections::{HashMap, HashSet};
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
    // Each pipeline's stage keys, one per stage reference, in order (`next` always: a chunk's
    // keys are its stage references').
    let stage_keys: Vec<Vec<StageKey>> = pipelines
        .iter()
        .map(|(_, d)| {
            let specs = native_specializations(d);
            d.stages()
                .into_iter()
                .enumerate()
                .map(|(i, (stage, f))| {
                    keys.next()
                        .unwrap_or_else(|| native_stage_key(f, stage, specs.get(i).cloned().flatten().as_deref(), ctx))
                })
                .collect()
        })
        .collect();
    let mut libs = HashSet::new();
    let mut funcs = HashSet::new();
    // Per wave: the libraries and stage functions it uses first, and its pipelines.
    let mut waves: Vec<(Vec<Task>, Vec<Task>)> = Vec::new();
    let (mut libraries, mut functions, mut stage_references) = (0, 0, 0);
    for (n, &p) in spread_shared_stages(&stage_keys).iter().enumerate() {
        let (index, d) = pipelines[p];
        if n % WAVE == 0 {
            waves.push((Vec::new(), Vec::new()));
        }
        let Some((ahead, wave)) = waves.last_mut() else { break };
        let specs = native_specializations(d);
        for (i, ((stage, f), key)) in d.stages().into_iter().zip(&stage_keys[p]).enumerate() {
            stage_references += 1;
            let (lib, _) = f.base();
            if libs.insert(lib.hash()) {
                libraries += 1;
                ahead.push(Task::Library(lib.clone()));
            }
            if funcs.insert(*key) {
                functions += 1;
                ahead.push(Task::Function(f.clone(), stage, specs.get(i).cloned().flatten()));
            }
        }
        wave.push(Task::Pipeline(index));
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

/// A native pipeline's per-stage `VkSpecializationInfo` (part of each stage's key); none for
/// the others.
fn native_specializations(d: &PipelineDescriptor) -> Vec<Option<Arc<Specialization>>> {
    match d {
        PipelineDescriptor::Native(n) => n.stages.iter().map(|s| s.specialization.clone()).collect(),
        _ => Vec::new(),
    }
}

/// The order pipelines are compiled in (positions into `stage_keys`): by how many earlier
/// pipelines of the script have exactly the same stages (keys), then in script order. So the
/// first pipeline of every stage set comes before any second one, every second before any
/// third, and so on.
///
/// A script lists pipelines that share their stages next to each other (the report's runs of
/// one vertex function; a material's passes), and threads taking them in that order compile
/// them at the same moment, so none finds the others' work in a shared pipeline cache: a
/// driver answers a pipeline from the cache only when an equal one has *finished*. Spread
/// this way, a pipeline that the driver compiles to the same code as an earlier one (equal
/// stages, state it does not compile in) comes after that one, typically a whole rank of
/// compiles later. What lands does not depend on the order (the archive is sorted by key).
fn spread_shared_stages(stage_keys: &[Vec<StageKey>]) -> Vec<usize> {
    let mut seen: HashMap<&[StageKey], usize> = HashMap::with_capacity(stage_keys.len());
    let mut ranked: Vec<(usize, usize)> = stage_keys
        .iter()
        .enumerate()
        .map(|(p, keys)| {
            let n = seen.entry(keys.as_slice()).or_insert(0);
            *n += 1;
            (*n - 1, p)
        })
        .collect();
    ranked.sort_unstable();
    ranked.into_iter().map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelines_sharing_stages_are_spread_by_rank_in_script_order() {
        let (a, b, c) = (vec![StageKey(1), StageKey(2)], vec![StageKey(1), StageKey(3)], vec![StageKey(4)]);
        // A run of one stage set, another set twice, a third once.
        let keys = vec![a.clone(), a.clone(), a.clone(), b.clone(), b, c, a];
        let order = spread_shared_stages(&keys);
        assert_eq!(order, vec![0, 3, 5, 1, 4, 2, 6]);
        // Every pipeline exactly once.
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..keys.len()).collect::<Vec<_>>());
        // A stage set's first pipeline is not confused with a prefix of a longer one.
        assert_eq!(spread_shared_stages(&[vec![StageKey(1)], vec![StageKey(1), StageKey(2)]]), vec![0, 1]);
    }
}
