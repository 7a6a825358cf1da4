//! Splitting a harvest into N shards (`harvest --shard I/N`, `granary plan --shards N`).
//!
//! The assignment is a pure function of the pipelines' keys, their stage keys and N: script
//! order, thread count and machine change nothing, so N machines that each read the same
//! script agree on who compiles what without talking to each other.
//!
//! How:
//! - **Units.** Pipelines are grouped by their vertex stage key (a compute pipeline by its
//!   compute stage key). A group whose estimated cost exceeds the fair share is split, its
//!   pipelines in key order, into consecutive parts of at most the fair share each (a part
//!   holds at least one pipeline); only then is its vertex function compiled in more than one
//!   shard.
//! - **Estimated cost** of a set of pipelines: [`PIPELINE_WEIGHT`] per pipeline plus one per
//!   unique stage function among them. The fair share is `ceil(total cost / N)`.
//! - **Growing shards.** Shards are filled one after another, each grown along shared stage
//!   functions: it starts from the largest unplaced unit, then repeatedly takes the unplaced
//!   unit with the most of its stage functions already in the shard (fewest new ones
//!   breaking ties; a unit sharing nothing only when no unit shares anything), while taking it
//!   brings the shard closer to its target; the last shard takes the rest. Pipelines that share
//!   a fragment (or any) stage function therefore land together unless that would overfill a
//!   shard, and a cluster of pipelines that fits in one shard is never split.
//! - **Targets.** A shard's target is what is left to place divided by the shards left. What
//!   is left includes the stage functions that will be compiled again in later shards, known
//!   only once placed, so [`assign`] grows the shards [`GROW_PASSES`] times, each pass aiming at
//!   the total the previous one reached, and keeps the pass with the lowest maximum shard cost.
//!
//! Everything is computed from the keys in sorted order, so it is deterministic.
//!
//! Measured on the 33,000-pipeline seed workload (docs/BENCHMARKS.md "Sharded harvests"):
//! against grouping by vertex function alone, this halves the extra stage-function compiles at
//! N = 16 and 64, and the plan's imbalance stays within a few per cent.

use crate::descriptor::{KeyContext, PipelineDescriptor, ShaderStage};
use std::collections::{BTreeMap, BTreeSet};

/// `--shard I/N`: shard `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardSpec {
    /// `0..count`.
    pub index: u32,
    /// At least 1.
    pub count: u32,
}

impl ShardSpec {
    /// Parses `I/N` (`index` `Some(I)`) or `/N` (`index` `None`: taken from the job
    /// scheduler's environment, [`index_from_env`]).
    pub fn parse(text: &str) -> Result<(Option<u32>, u32), String> {
        let bad = || format!("'{text}' is not a shard: write I/N (shard I of N, 0 ≤ I < N) or /N");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        if n == 0 {
            return Err(format!("'{text}': the shard count must be at least 1"));
        }
        if i.trim().is_empty() {
            return Ok((None, n));
        }
        let i: u32 = i.trim().parse().map_err(|_| bad())?;
        if i >= n {
            return Err(format!("'{text}': shard index {i} is out of range (0..{n})"));
        }
        Ok((Some(i), n))
    }
}

/// The environment variables a shard index is taken from, in order: Slurm job arrays, then
/// Kubernetes Indexed Jobs.
pub const INDEX_VARIABLES: [&str; 2] = ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"];

/// The shard index from the job scheduler's environment (`get` reads a variable): the first
/// of [`INDEX_VARIABLES`] that is set, checked against `count`.
pub fn index_from_env(count: u32, get: impl Fn(&str) -> Option<String>) -> Result<u32, String> {
    for var in INDEX_VARIABLES {
        if let Some(v) = get(var) {
            let i: u32 = v.trim().parse().map_err(|_| format!("{var}={v} is not a shard index"))?;
            if i >= count {
                return Err(format!("{var}={i} is out of range for {count} shards (0..{count})"));
            }
            return Ok(i);
        }
    }
    Err(format!(
        "no shard index: give --shard I/{count}, or set {} (a Slurm job array) or {} (a Kubernetes Indexed Job)",
        INDEX_VARIABLES[0], INDEX_VARIABLES[1]
    ))
}

/// What the assignment needs of one pipeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardItem {
    /// The pipeline key.
    pub key: u128,
    /// The key it is grouped by: its vertex (or compute) stage key.
    pub group: u128,
    /// Its stage keys, sorted, without duplicates.
    pub functions: Vec<u128>,
}

impl ShardItem {
    /// The item of `desc` under `ctx`.
    pub fn of(desc: &PipelineDescriptor, ctx: &KeyContext) -> ShardItem {
        let stages = desc.stages();
        let keys = desc.stage_keys(ctx);
        let key = desc.key_with_stage_keys(&keys).0;
        let lead = stages.iter().position(|(s, _)| *s == ShaderStage::Vertex || *s == ShaderStage::Compute);
        let group = lead.or(if keys.is_empty() { None } else { Some(0) }).map_or(key, |i| keys[i].0);
        let mut functions: Vec<u128> = keys.iter().map(|k| k.0).collect();
        functions.sort_unstable();
        functions.dedup();
        ShardItem { key, group, functions }
    }
}

/// Names the assignment [`assign`] computes: the domain string of [`script_hash`]. Change it
/// whenever a change to [`assign`] could move any pipeline to another shard, so shards split
/// by two versions of granary never pass for one set (their merge could lose pipelines).
pub const ASSIGNMENT_VERSION: &[u8] = b"granary shard script v2\0";

/// The hash that names a script's shards: `xxh3_128` of [`ASSIGNMENT_VERSION`] followed by
/// the set of its pipeline keys (sorted, each once, little-endian). Equal hashes mean the same
/// pipelines split by the same assignment.
pub fn script_hash(keys: impl IntoIterator<Item = u128>) -> u128 {
    let set: BTreeSet<u128> = keys.into_iter().collect();
    let mut bytes = Vec::with_capacity(32 + set.len() * 16);
    bytes.extend_from_slice(ASSIGNMENT_VERSION);
    for k in set {
        bytes.extend_from_slice(&k.to_le_bytes());
    }
    granary_archive::content_hash(&bytes).0
}

/// What a pipeline costs in the estimate, in stage functions: a device harvest is dominated
/// by the driver compiling each pipeline whole (about 40 ms a pipeline on NVIDIA, against
/// about 0.3 ms to translate a stage function; docs/BENCHMARKS.md "Sharded harvests"), so
/// shards are balanced mostly by pipelines, and stage functions count for what they cost a
/// translation-only harvest.
pub const PIPELINE_WEIGHT: usize = 16;

/// One shard's share.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ShardCost {
    /// Pipelines it compiles.
    pub pipelines: usize,
    /// Unique stage functions it compiles.
    pub stage_functions: usize,
    /// Estimated cost: [`PIPELINE_WEIGHT`] × pipelines + unique stage functions.
    pub cost: usize,
}

/// Which shard compiles each pipeline.
#[derive(Clone, Debug)]
pub struct Assignment {
    /// N.
    pub count: u32,
    /// Pipeline key → shard index.
    pub shard_of: BTreeMap<u128, u32>,
    /// [`script_hash`] of every pipeline key.
    pub script: u128,
    /// Per shard.
    pub shards: Vec<ShardCost>,
    /// Stage functions compiled in more than one shard, each with its shards (ascending).
    pub duplicated: BTreeMap<u128, Vec<u32>>,
    /// Unique stage functions of the whole script.
    pub stage_functions: usize,
    /// The fair share: `ceil(([`PIPELINE_WEIGHT`] × pipelines + unique stage functions) / N)`.
    pub fair_share: usize,
}

impl Assignment {
    /// Max shard cost over mean shard cost (1.0 is perfect; 1.0 for an empty script).
    pub fn imbalance(&self) -> f64 {
        let total: usize = self.shards.iter().map(|s| s.cost).sum();
        let max = self.shards.iter().map(|s| s.cost).max().unwrap_or(0);
        if total == 0 {
            1.0
        } else {
            max as f64 / (total as f64 / self.shards.len() as f64)
        }
    }
    /// Stage-function compiles beyond one per unique function (the cost of sharding).
    pub fn extra_compiles(&self) -> usize {
        self.duplicated.values().map(|s| s.len() - 1).sum()
    }
}

/// Pipelines placed together: a vertex (or compute) function's pipelines, or a part of them.
struct Unit<'a> {
    members: Vec<&'a ShardItem>,
    /// Indices into the sorted table of the script's stage functions, each once.
    functions: Vec<usize>,
}

impl<'a> Unit<'a> {
    /// The unit of `members`; `table` holds every stage function of the script, sorted.
    fn of(members: Vec<&'a ShardItem>, table: &[u128]) -> Unit<'a> {
        let f: BTreeSet<usize> =
            members.iter().flat_map(|m| m.functions.iter().filter_map(|f| table.binary_search(f).ok())).collect();
        Unit { members, functions: f.into_iter().collect() }
    }
    fn cost(&self) -> usize {
        PIPELINE_WEIGHT * self.members.len() + self.functions.len()
    }
}

/// Assigns `items` to `count` shards (see the module doc). Items with the same key are one
/// pipeline. `count` 0 is taken as 1.
pub fn assign(items: &[ShardItem], count: u32) -> Assignment {
    let count = count.max(1);
    let n = count as usize;
    let by_key: BTreeMap<u128, &ShardItem> = items.iter().map(|i| (i.key, i)).collect();
    let all_functions: BTreeSet<u128> = by_key.values().flat_map(|i| i.functions.iter().copied()).collect();
    let table: Vec<u128> = all_functions.iter().copied().collect();
    let total = PIPELINE_WEIGHT * by_key.len() + all_functions.len();
    let fair = total.div_ceil(n).max(1);
    let mut groups: BTreeMap<u128, Vec<&ShardItem>> = BTreeMap::new();
    for item in by_key.values() {
        groups.entry(item.group).or_default().push(item);
    }
    let unit = |members| Unit::of(members, &table);
    let mut units: Vec<Unit> = Vec::new();
    for (_, members) in groups {
        let whole = unit(members);
        if whole.cost() <= fair {
            units.push(whole);
            continue;
        }
        // Too big for one shard: consecutive parts (in key order) of at most the fair share.
        let mut part: Vec<&ShardItem> = Vec::new();
        let mut funcs: BTreeSet<u128> = BTreeSet::new();
        for m in whole.members {
            let new = m.functions.iter().filter(|f| !funcs.contains(f)).count();
            if !part.is_empty() && PIPELINE_WEIGHT * (part.len() + 1) + funcs.len() + new > fair {
                units.push(unit(std::mem::take(&mut part)));
                funcs.clear();
            }
            funcs.extend(m.functions.iter().copied());
            part.push(m);
        }
        if !part.is_empty() {
            units.push(unit(part));
        }
    }
    // The shards' costs include the functions compiled in several of them, which are known
    // only once placed: each pass aims at the total the previous pass reached; the pass with
    // the lowest maximum shard cost wins (ties: the earlier).
    let mut best: Option<(usize, Vec<usize>)> = None;
    let mut estimate = None;
    for _ in 0..GROW_PASSES {
        let (placed, loads) = grow_shards(&units, table.len(), n, estimate);
        let max = loads.iter().copied().max().unwrap_or(0);
        estimate = Some(loads.iter().sum());
        if best.as_ref().is_none_or(|(m, _)| max < *m) {
            best = Some((max, placed));
        }
    }
    let placed = best.map(|(_, p)| p).unwrap_or_default();
    let mut shard_of = BTreeMap::new();
    let mut members_of: Vec<Vec<&ShardItem>> = vec![Vec::new(); n];
    for (unit, s) in units.iter().zip(placed) {
        for m in &unit.members {
            shard_of.insert(m.key, s as u32);
            members_of[s].push(m);
        }
    }
    let mut where_compiled: BTreeMap<u128, Vec<u32>> = BTreeMap::new();
    let shards = members_of
        .iter()
        .enumerate()
        .map(|(s, members)| {
            let f: BTreeSet<u128> = members.iter().flat_map(|m| m.functions.iter().copied()).collect();
            for k in &f {
                where_compiled.entry(*k).or_default().push(s as u32);
            }
            ShardCost {
                pipelines: members.len(),
                stage_functions: f.len(),
                cost: PIPELINE_WEIGHT * members.len() + f.len(),
            }
        })
        .collect();
    where_compiled.retain(|_, s| s.len() > 1);
    Assignment {
        count,
        script: script_hash(by_key.keys().copied()),
        shard_of,
        shards,
        duplicated: where_compiled,
        stage_functions: all_functions.len(),
        fair_share: fair,
    }
}

/// How many times [`assign`] grows the shards, each pass aiming at the previous pass's total.
pub const GROW_PASSES: usize = 4;

/// Places `units` (using `functions` stage functions in all) on `n` shards by growing one
/// shard at a time (see the module doc); returns each unit's shard. Deterministic: it reads
/// only the units, in their order.
fn grow_shards(units: &[Unit], functions: usize, n: usize, total: Option<usize>) -> (Vec<usize>, Vec<usize>) {
    let mut loads = vec![0usize; n];
    if n <= 1 {
        loads[0] = units.iter().map(Unit::cost).sum();
        return (vec![0; units.len()], loads);
    }
    const UNPLACED: usize = usize::MAX;
    let mut shard = vec![UNPLACED; units.len()];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); functions];
    for (u, unit) in units.iter().enumerate() {
        for &f in &unit.functions {
            users[f].push(u);
        }
    }
    // Seeds of a new shard, or where its frontier runs dry: largest unit first.
    let mut seeds: Vec<usize> = (0..units.len()).collect();
    seeds.sort_by_key(|&u| (std::cmp::Reverse(units[u].cost()), u));
    let mut next_seed = 0;
    // What is left, as a lower bound on its cost: its pipelines and its distinct functions.
    let mut left_users: Vec<usize> = users.iter().map(Vec::len).collect();
    let mut left_pipelines: usize = units.iter().map(|u| u.members.len()).sum();
    let mut left_functions = left_users.iter().filter(|&&c| c > 0).count();
    // The shard being grown: its functions, and per unit how many of its functions it has.
    let mut present = vec![false; functions];
    let mut present_list: Vec<usize> = Vec::new();
    let mut gain = vec![0usize; units.len()];
    let mut touched: Vec<usize> = Vec::new();
    // `tried[u] == s + 1`: unit u was passed over for shard s (it would have overfilled it).
    let mut tried = vec![0usize; units.len()];
    // Frontier: units sharing a function with the shard, bucketed by
    // `functions present − functions absent + widest`, highest first; stale entries skipped.
    let widest = units.iter().map(|u| u.functions.len()).max().unwrap_or(0);
    let mut buckets: Vec<Vec<usize>> = vec![Vec::new(); 2 * widest + 1];
    let mut top = 0usize;
    let priority = |u: usize, gain: &[usize]| 2 * gain[u] + widest - units[u].functions.len();
    // Big units (a quarter of a fair share or more) are hard to fit into what is left of a
    // shard, so they are spread first, largest first onto the shard with the least of them
    // (ties to the lower index); each shard then grows from its big units.
    let fair = total.unwrap_or(PIPELINE_WEIGHT * left_pipelines + left_functions).div_ceil(n);
    let mut big: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut big_load = vec![0usize; n];
    for &u in seeds.iter().take_while(|&&u| 4 * units[u].cost() >= fair) {
        let s = (0..n).min_by_key(|&s| (big_load[s], s)).unwrap_or(0);
        big_load[s] += units[u].cost();
        big[s].push(u);
        shard[u] = s;
    }
    for s in 0..n {
        let last = s + 1 == n;
        let placed_so_far: usize = loads[..s].iter().sum();
        let left = match total {
            Some(t) => t.saturating_sub(placed_so_far).max(PIPELINE_WEIGHT * left_pipelines + left_functions),
            None => PIPELINE_WEIGHT * left_pipelines + left_functions,
        };
        let target = left.div_ceil(n - s);
        let mut load = 0usize;
        // Seeds are scanned from here for this shard; units that did not fit are skipped.
        let mut cursor = next_seed;
        let mut forced = std::mem::take(&mut big[s]).into_iter();
        loop {
            let mut pick = forced.next();
            let is_big = pick.is_some();
            if !is_big && !last && load >= target {
                break;
            }
            while pick.is_none() {
                match buckets[top].pop() {
                    Some(u) if shard[u] == UNPLACED && priority(u, &gain) == top => pick = Some(u),
                    Some(_) => {}
                    None if top == 0 => break,
                    None => top -= 1,
                }
            }
            if pick.is_none() {
                while cursor < seeds.len() && (shard[seeds[cursor]] != UNPLACED || tried[seeds[cursor]] == s + 1) {
                    cursor += 1;
                }
                pick = seeds.get(cursor).copied();
            }
            let Some(u) = pick else { break };
            let marginal = PIPELINE_WEIGHT * units[u].members.len() + units[u].functions.len() - gain[u];
            // Add while that brings the shard closer to its target (a unit that would not is
            // passed over for this shard); the last shard takes the rest.
            if !is_big && !last && load > 0 && 2 * load + marginal >= 2 * target {
                tried[u] = s + 1;
                continue;
            }
            shard[u] = s;
            load += marginal;
            left_pipelines -= units[u].members.len();
            for &f in &units[u].functions {
                left_users[f] -= 1;
                if left_users[f] == 0 {
                    left_functions -= 1;
                }
                if present[f] {
                    continue;
                }
                present[f] = true;
                present_list.push(f);
                for &v in &users[f] {
                    if shard[v] != UNPLACED {
                        continue;
                    }
                    if gain[v] == 0 {
                        touched.push(v);
                    }
                    gain[v] += 1;
                    let p = priority(v, &gain);
                    buckets[p].push(v);
                    top = top.max(p);
                }
            }
        }
        loads[s] = load;
        while next_seed < seeds.len() && shard[seeds[next_seed]] != UNPLACED {
            next_seed += 1;
        }
        for f in present_list.drain(..) {
            present[f] = false;
        }
        for v in touched.drain(..) {
            gain[v] = 0;
        }
        buckets.iter_mut().for_each(Vec::clear);
        top = 0;
    }
    // The last shard takes whatever is left, so every unit is placed; the clamp keeps an
    // index in range should that ever not hold.
    debug_assert!(shard.iter().all(|&s| s < n));
    (shard.into_iter().map(|s| s.min(n - 1)).collect(), loads)
}

/// [`assign`] for descriptors under `ctx`, returning each descriptor's item too.
pub fn assign_descriptors<'a>(
    descs: impl IntoIterator<Item = &'a PipelineDescriptor>,
    ctx: &KeyContext,
    count: u32,
) -> (Vec<ShardItem>, Assignment) {
    let items: Vec<ShardItem> = descs.into_iter().map(|d| ShardItem::of(d, ctx)).collect();
    let a = assign(&items, count);
    (items, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random stream (splitmix64).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    /// `groups` vertex functions with 1..=8 pipelines each; fragment functions drawn from a
    /// pool of `fragments` (shared across groups).
    fn workload(seed: u64, groups: usize, fragments: u64) -> Vec<ShardItem> {
        let mut r = Rng(seed);
        let mut items = Vec::new();
        for g in 0..groups {
            let vertex = (r.next() as u128) << 64 | g as u128;
            for _ in 0..(r.next() % 8 + 1) {
                let fragment = 1u128 << 127 | (r.next() % fragments) as u128;
                let mut functions = vec![vertex, fragment];
                functions.sort_unstable();
                items.push(ShardItem { key: (r.next() as u128) << 64 | r.next() as u128, group: vertex, functions });
            }
        }
        items
    }

    fn shuffle(items: &mut [ShardItem], seed: u64) {
        let mut r = Rng(seed);
        for i in (1..items.len()).rev() {
            items.swap(i, (r.next() % (i as u64 + 1)) as usize);
        }
    }

    #[test]
    fn shard_assignment_does_not_depend_on_input_order() {
        let items = workload(1, 200, 40);
        for n in [1, 2, 3, 4, 7, 16] {
            let a = assign(&items, n);
            for seed in 0..5 {
                let mut shuffled = items.clone();
                shuffle(&mut shuffled, seed);
                let b = assign(&shuffled, n);
                assert_eq!(a.shard_of, b.shard_of, "n={n} seed={seed}");
                assert_eq!(a.script, b.script);
                assert_eq!(a.shards, b.shards);
                assert_eq!(a.duplicated, b.duplicated);
            }
        }
    }

    #[test]
    fn shard_assignment_puts_every_pipeline_in_exactly_one_shard() {
        let mut items = workload(2, 150, 30);
        items.extend(items[..10].to_vec()); // duplicate keys are one pipeline
        let unique: BTreeSet<u128> = items.iter().map(|i| i.key).collect();
        for n in [1, 2, 3, 5, 64, 1000] {
            let a = assign(&items, n);
            assert_eq!(a.shard_of.len(), unique.len());
            assert!(unique.iter().all(|k| a.shard_of[k] < n));
            assert_eq!(a.shards.len(), n as usize);
            assert_eq!(a.shards.iter().map(|s| s.pipelines).sum::<usize>(), unique.len());
        }
    }

    #[test]
    fn shard_costs_are_balanced_within_the_fair_share() {
        // Disjoint stage functions per group: a shard's cost is the sum of its units', and
        // greedy placement keeps max − min ≤ the largest unit ≤ the fair share.
        let mut items = Vec::new();
        for g in 0..300u128 {
            for p in 0..(g % 6 + 1) {
                items.push(ShardItem { key: g << 8 | p, group: g << 8, functions: vec![g << 8, g << 8 | 0x80 | p] });
            }
        }
        for n in [2, 3, 4, 8, 16] {
            let a = assign(&items, n);
            let max = a.shards.iter().map(|s| s.cost).max().unwrap();
            let min = a.shards.iter().map(|s| s.cost).min().unwrap();
            let largest_group = PIPELINE_WEIGHT * 6 + 1 + 6;
            assert!(max - min <= largest_group.min(a.fair_share), "n={n}: {max} - {min} (fair {})", a.fair_share);
            assert!(a.imbalance() < 1.05, "n={n}: imbalance {}", a.imbalance());
        }
        // Shared fragment functions: the estimate still stays within twice the fair share.
        let items = workload(3, 400, 50);
        for n in [2, 4, 8] {
            let a = assign(&items, n);
            let max = a.shards.iter().map(|s| s.cost).max().unwrap();
            assert!(max <= 2 * a.fair_share, "n={n}: {max} > 2 × {}", a.fair_share);
            assert!(a.imbalance() < 1.25, "n={n}: imbalance {}", a.imbalance());
        }
    }

    #[test]
    fn shard_keeps_a_shared_vertex_function_in_one_shard_when_it_fits() {
        let mut items = workload(4, 100, 20);
        let shared = 0xfeed_u128;
        for p in 0..10u128 {
            items.push(ShardItem { key: 0xa000 + p, group: shared, functions: vec![shared, 0xb000 + p] });
        }
        let a = assign(&items, 4);
        let shards: BTreeSet<u32> = (0..10u128).map(|p| a.shard_of[&(0xa000 + p)]).collect();
        assert_eq!(shards.len(), 1, "the shared vertex function's pipelines were split: {shards:?}");
        assert!(!a.duplicated.contains_key(&shared));
        // A group bigger than the fair share is split, and its vertex function is then
        // reported as duplicated.
        let big: Vec<ShardItem> =
            (0..40u128).map(|p| ShardItem { key: p, group: shared, functions: vec![shared, 0xb000 + p] }).collect();
        let a = assign(&big, 4);
        assert!(a.shards.iter().all(|s| s.pipelines > 0));
        assert!(a.duplicated.contains_key(&shared));
        assert!(a.shards.iter().all(|s| s.cost <= a.fair_share), "{:?} fair {}", a.shards, a.fair_share);
    }

    #[test]
    fn shard_keeps_pipelines_that_share_any_stage_function_together_when_they_fit() {
        // 8 clusters, each of 5 vertex functions whose pipelines draw on the cluster's own 4
        // fragment functions: a vertex grouping alone would scatter the fragments; growing
        // shards along shared functions keeps every cluster whole.
        let mut items = Vec::new();
        let mut r = Rng(7);
        for c in 0..8u128 {
            for v in 0..5u128 {
                let vertex = c << 32 | v << 16;
                for p in 0..4u128 {
                    let fragment = 1u128 << 127 | c << 32 | (r.next() % 4) as u128;
                    let mut functions = vec![vertex, fragment];
                    functions.sort_unstable();
                    items.push(ShardItem { key: c << 64 | v << 32 | p, group: vertex, functions });
                }
            }
        }
        for n in [2, 4, 8] {
            let a = assign(&items, n);
            assert!(a.duplicated.is_empty(), "n={n}: {:?}", a.duplicated);
            assert!(a.imbalance() < 1.2, "n={n}: imbalance {}", a.imbalance());
        }
    }

    #[test]
    fn long_runs_and_many_shards_still_place_every_pipeline_once_and_balance() {
        // Heavy-tailed runs (up to 400 pipelines on one vertex function) over a small pool of
        // shared fragment functions, as in the seed workload: big units are split and spread.
        let mut r = Rng(11);
        let mut items = Vec::new();
        for g in 0..300u128 {
            let len = if g % 50 == 0 { 400 } else { r.next() % 6 + 1 };
            let vertex = g << 64;
            for p in 0..len as u128 {
                let fragment = 1u128 << 127 | (r.next() % 40) as u128;
                let mut functions = vec![vertex, fragment];
                functions.sort_unstable();
                items.push(ShardItem { key: g << 32 | p, group: vertex, functions });
            }
        }
        for n in [2, 3, 7, 16, 64] {
            let a = assign(&items, n);
            assert_eq!(a.shard_of.len(), items.len(), "n={n}");
            assert!(a.shard_of.values().all(|&s| s < n));
            assert!(a.imbalance() < 1.25, "n={n}: imbalance {}", a.imbalance());
            let pipelines: Vec<usize> = a.shards.iter().map(|s| s.pipelines).collect();
            let mean = items.len() as f64 / n as f64;
            let max = *pipelines.iter().max().unwrap() as f64;
            assert!(max / mean < 1.3, "n={n}: pipelines {pipelines:?}");
        }
    }

    #[test]
    fn shard_spec_and_index_from_env() {
        assert_eq!(ShardSpec::parse("2/4"), Ok((Some(2), 4)));
        assert_eq!(ShardSpec::parse("/4"), Ok((None, 4)));
        assert!(ShardSpec::parse("4/4").is_err());
        assert!(ShardSpec::parse("0/0").is_err());
        assert!(ShardSpec::parse("x/2").is_err());
        assert!(ShardSpec::parse("3").is_err());
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(index_from_env(4, env(&[("SLURM_ARRAY_TASK_ID", "3")])), Ok(3));
        assert_eq!(index_from_env(4, env(&[("JOB_COMPLETION_INDEX", "1")])), Ok(1));
        assert!(index_from_env(4, env(&[("JOB_COMPLETION_INDEX", "4")])).unwrap_err().contains("out of range"));
        let e = index_from_env(4, env(&[])).unwrap_err();
        assert!(e.contains("SLURM_ARRAY_TASK_ID") && e.contains("JOB_COMPLETION_INDEX"), "{e}");
    }
}
