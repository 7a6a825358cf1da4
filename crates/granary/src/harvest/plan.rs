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
//!
//! Pipelines are taken in a fixed scattered order ([`spread`]), not in script order: related
//! pipelines that a script lists together then rarely compile at the same moment, so a
//! backend's shared pipeline cache can answer the later ones from the earlier ones' work.

use crate::descriptor::{FunctionDescriptor, KeyContext, Library, PipelineDescriptor, ShaderStage, StageKey};
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
/// up to `threads` threads. The task order does not depend on `threads`: pipelines come in
/// [`spread`] order of their positions in `pipelines`, libraries and stage functions in the
/// order of their first use in that order.
pub fn plan(pipelines: &[(usize, &PipelineDescriptor)], ctx: &KeyContext, threads: usize) -> Plan {
    // Hashing every stage reference's canonical encoding is most of the planning work (66,000
    // stage keys at seed scale): compute them in parallel, in order, then deduplicate serially.
    let threads = threads.clamp(1, pipelines.len() / 512 + 1);
    let chunk = pipelines.len().div_ceil(threads).max(1);
    // Each pipeline's stage keys, one per stage reference, in `pipelines`' order.
    let keys_of = |part: &[(usize, &PipelineDescriptor)]| -> Vec<Vec<StageKey>> {
        part.iter().map(|(_, d)| d.stage_keys(ctx)).collect()
    };
    let parts: Vec<&[(usize, &PipelineDescriptor)]> = pipelines.chunks(chunk).collect();
    let stage_keys: Vec<Vec<StageKey>> = std::thread::scope(|s| {
        let keys_of = &keys_of;
        let handles: Vec<_> = parts.iter().map(|part| s.spawn(move || keys_of(part))).collect();
        // Hashing cannot panic on any input; should a thread die anyway, its chunk is keyed
        // again here, so every stage reference keeps its own key.
        handles.into_iter().zip(&parts).flat_map(|(h, part)| h.join().unwrap_or_else(|_| keys_of(part))).collect()
    });
    let mut libs = HashSet::new();
    let mut funcs = HashSet::new();
    // Per wave: the libraries and stage functions it uses first, and its pipelines.
    let mut waves: Vec<(Vec<Task>, Vec<Task>)> = Vec::new();
    let (mut libraries, mut functions, mut stage_references) = (0, 0, 0);
    for (n, p) in spread(pipelines.len()).enumerate() {
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

/// The order the pipelines `0..n` are compiled in: a fixed permutation that scatters script
/// neighbours (positions sorted by a bijective 64-bit mix of each position), the same for every
/// run, thread count and machine.
///
/// Scripts list related pipelines together (the report's runs of one vertex function, a
/// material's passes). Threads taking them in script order create them at the same moment, so
/// a driver's shared pipeline cache answers none of them from another's work: a pipeline is
/// found in the cache only once an equal one (to the driver) has finished. Scattered, such
/// pipelines are usually far apart, as in a loader that creates an archive's pipelines in key
/// order. What lands does not depend on the order (the archive is sorted by key).
pub fn spread(n: usize) -> impl Iterator<Item = usize> {
    let mut order: Vec<(u64, usize)> = (0..n).map(|p| (mix(p as u64), p)).collect();
    order.sort_unstable();
    order.into_iter().map(|(_, p)| p)
}

/// splitmix64's finalizer: a bijection on `u64` whose outputs of neighbouring inputs look
/// unrelated.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_order_is_a_fixed_permutation_that_scatters_neighbours() {
        for n in [0, 1, 2, 7, 256, 1000] {
            let order: Vec<usize> = spread(n).collect();
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "every pipeline exactly once");
            assert_eq!(order, spread(n).collect::<Vec<_>>(), "the same every time");
        }
        // A run of 250 neighbours (one vertex function) spreads over the whole order: among
        // the first 100 of 2,000 positions compiled, only a handful come from it.
        let first: Vec<usize> = spread(2000).take(100).collect();
        let from_run = first.iter().filter(|&&p| (500..750).contains(&p)).count();
        assert!((3..=30).contains(&from_run), "{from_run} of the first 100 from one run of 250");
    }
}
