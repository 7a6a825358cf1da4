//! Splitting a harvest into N shards (`harvest --shard I/N`, `granary plan --shards N`).
//!
//! The assignment is a pure function of the pipelines' keys, their stage keys and N: script
//! order, thread count and machine change nothing, so N machines that each read the same
//! script agree on who compiles what without talking to each other.
//!
//! How:
//! - Pipelines are grouped by their vertex stage key (a compute pipeline by its compute
//!   stage key): a group's pipelines share that stage function, so one shard compiles it once.
//! - Estimated cost of a set of pipelines: one unit per pipeline plus one per unique stage
//!   function among them. The fair share is `ceil(total cost / N)`.
//! - A group whose cost exceeds the fair share is split, its pipelines in key order, into
//!   consecutive parts of at most the fair share each (a part holds at least one pipeline);
//!   only then is its vertex function compiled in more than one shard.
//! - Units (groups and parts) are placed largest first — ties by group key, then part — each
//!   on the shard with the least estimated load so far, ties to the lower index.
//!
//! Bound: every unit costs at most the fair share, so (greedy list scheduling) no shard's
//! load exceeds the least-loaded shard's by more than the fair share; where the units are
//! small against the fair share, the shards are nearly equal.

use crate::descriptor::{stage_key, KeyContext, PipelineDescriptor, ShaderStage};
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
        let keys: Vec<_> = stages.iter().map(|(s, f)| stage_key(f, *s, ctx)).collect();
        let key = desc.key_with_stage_keys(&keys).0;
        let lead = stages.iter().position(|(s, _)| *s == ShaderStage::Vertex || *s == ShaderStage::Compute);
        let group = lead.or(if keys.is_empty() { None } else { Some(0) }).map_or(key, |i| keys[i].0);
        let mut functions: Vec<u128> = keys.iter().map(|k| k.0).collect();
        functions.sort_unstable();
        functions.dedup();
        ShardItem { key, group, functions }
    }
}

/// The hash that names a script's shards: `xxh3_128` of a domain string followed by the set
/// of its pipeline keys (sorted, each once, little-endian).
pub fn script_hash(keys: impl IntoIterator<Item = u128>) -> u128 {
    let set: BTreeSet<u128> = keys.into_iter().collect();
    let mut bytes = Vec::with_capacity(32 + set.len() * 16);
    bytes.extend_from_slice(b"granary shard script v1\0");
    for k in set {
        bytes.extend_from_slice(&k.to_le_bytes());
    }
    granary_archive::content_hash(&bytes).0
}

/// One shard's share.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ShardCost {
    /// Pipelines it compiles.
    pub pipelines: usize,
    /// Unique stage functions it compiles.
    pub stage_functions: usize,
    /// Estimated cost: pipelines + unique stage functions.
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
    /// The fair share: `ceil((pipelines + unique stage functions) / N)`.
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

fn cost_of(members: &[&ShardItem]) -> usize {
    let f: BTreeSet<u128> = members.iter().flat_map(|m| m.functions.iter().copied()).collect();
    members.len() + f.len()
}

/// Assigns `items` to `count` shards (see the module doc). Items with the same key are one
/// pipeline. `count` 0 is taken as 1.
pub fn assign(items: &[ShardItem], count: u32) -> Assignment {
    let count = count.max(1);
    let n = count as usize;
    let by_key: BTreeMap<u128, &ShardItem> = items.iter().map(|i| (i.key, i)).collect();
    let all_functions: BTreeSet<u128> = by_key.values().flat_map(|i| i.functions.iter().copied()).collect();
    let total = by_key.len() + all_functions.len();
    let fair = total.div_ceil(n).max(1);
    let mut groups: BTreeMap<u128, Vec<&ShardItem>> = BTreeMap::new();
    for item in by_key.values() {
        groups.entry(item.group).or_default().push(item);
    }
    // (cost, group, part, members)
    let mut units: Vec<(usize, u128, usize, Vec<&ShardItem>)> = Vec::new();
    for (group, members) in groups {
        let cost = cost_of(&members);
        if cost <= fair {
            units.push((cost, group, 0, members));
            continue;
        }
        let mut part: Vec<&ShardItem> = Vec::new();
        let mut funcs: BTreeSet<u128> = BTreeSet::new();
        for m in members {
            let new = m.functions.iter().filter(|f| !funcs.contains(f)).count();
            if !part.is_empty() && part.len() + 1 + funcs.len() + new > fair {
                let done = std::mem::take(&mut part);
                units.push((done.len() + funcs.len(), group, units.len(), done));
                funcs.clear();
            }
            funcs.extend(m.functions.iter().copied());
            part.push(m);
        }
        if !part.is_empty() {
            units.push((part.len() + funcs.len(), group, units.len(), part));
        }
    }
    units.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut loads = vec![0usize; n];
    let mut shard_of = BTreeMap::new();
    let mut members_of: Vec<Vec<&ShardItem>> = vec![Vec::new(); n];
    for (cost, _, _, members) in units {
        let s = (0..n).min_by_key(|&s| (loads[s], s)).unwrap_or(0);
        loads[s] += cost;
        for m in members {
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
            ShardCost { pipelines: members.len(), stage_functions: f.len(), cost: members.len() + f.len() }
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
            let largest_group = 6 + 1 + 6;
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
