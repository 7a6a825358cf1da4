//! A map split into independently locked shards, keyed by 128-bit hashes.

use super::{lock, Mutex};
use std::collections::HashMap;

/// Number of shards; a power of two well above any realistic thread count, so that two
/// threads rarely contend for one shard.
#[cfg(not(loom))]
const SHARDS: usize = 64;
/// Under loom, two shards, so that the models cover keys sharing a shard.
#[cfg(loom)]
const SHARDS: usize = 2;

/// A concurrent map from 128-bit keys (already uniformly distributed hashes) to values.
///
/// Each shard is a `HashMap` behind its own mutex; a lock is held only for one lookup, insert
/// or copy of one shard, never while user code runs. [`ShardedMap::snapshot`] visits the shards
/// one after another, so it observes every insert that completed before it started.
///
/// Thread safety: `Send + Sync` when `V: Send`; all methods take `&self`.
pub struct ShardedMap<V> {
    shards: Box<[Mutex<HashMap<u128, V>>]>,
}

impl<V> Default for ShardedMap<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> ShardedMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        ShardedMap { shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect() }
    }

    fn shard(&self, key: u128) -> &Mutex<HashMap<u128, V>> {
        // Keys are hashes: their low bits are uniform.
        &self.shards[(key as usize) & (SHARDS - 1)]
    }

    /// Runs `f` on the entry for `key` under the shard's lock. `f` must be short: it blocks
    /// every other access to that shard.
    pub fn with_entry<R>(&self, key: u128, f: impl FnOnce(&mut HashMap<u128, V>) -> R) -> R {
        f(&mut lock(self.shard(key)))
    }

    /// Returns a clone of the value for `key`, inserting `make()` first if absent.
    pub fn get_or_insert_with(&self, key: u128, make: impl FnOnce() -> V) -> V
    where
        V: Clone,
    {
        self.with_entry(key, |m| m.entry(key).or_insert_with(make).clone())
    }

    /// Number of entries (a moment's view; may be stale by the time it returns).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(s).len()).sum()
    }

    /// Whether the map is empty (a moment's view).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies every `(key, value)` pair out, one shard at a time. Each shard is locked only
    /// for the copy of its entries (values are expected to be cheap clones such as `Arc`s).
    pub fn snapshot(&self) -> Vec<(u128, V)>
    where
        V: Clone,
    {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            let g = lock(shard);
            out.extend(g.iter().map(|(k, v)| (*k, v.clone())));
        }
        out
    }
}
