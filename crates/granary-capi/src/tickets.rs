//! [`Table`]: the warm-up's tickets as small integers (what C holds), readable without a lock.
//!
//! A ticket is `index + 1` into an append-only table (0 is `GRANARY_TICKET_NONE`). Entries
//! live in segments that double in size, each allocated once and never moved, so a reader
//! (`granary_warmup_try_get`, on the frame's path) finds its entry with two once-cell reads
//! and no lock; writers (requests) take one mutex, held only to append.
//!
//! *Invariants:* an id is handed out only after its entry is set, and an entry never changes
//! or moves; one key gets one id.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, OnceLock};

/// Entries of segment 0; segment `k` holds `BASE << k`.
const BASE: usize = 64;
/// Segments: `BASE * (2^SEGMENTS - 1)` entries in all, more than `u32::MAX`.
const SEGMENTS: usize = 27;

/// An append-only table of `T` by key, with ids `1..`.
pub struct Table<K, T> {
    segments: [OnceLock<Box<[OnceLock<T>]>>; SEGMENTS],
    index: Mutex<Index<K>>,
}

struct Index<K> {
    ids: HashMap<K, u32>,
    len: usize,
}

/// The segment and offset of entry `i`.
fn locate(i: usize) -> (usize, usize) {
    let j = i / BASE + 1;
    let k = (usize::BITS - 1 - j.leading_zeros()) as usize;
    (k, i - BASE * ((1 << k) - 1))
}

impl<K: Hash + Eq, T> Default for Table<K, T> {
    fn default() -> Self {
        Table {
            segments: std::array::from_fn(|_| OnceLock::new()),
            index: Mutex::new(Index { ids: HashMap::new(), len: 0 }),
        }
    }
}

impl<K: Hash + Eq, T> Table<K, T> {
    /// The id of `key`, and whether it was new: an existing one, or a new entry made by `make`
    /// (called under the table's lock; `None` from it adds nothing). `Err` when the table is
    /// full (`u32::MAX - 1` entries).
    pub fn insert(&self, key: K, make: impl FnOnce() -> Option<T>) -> Result<Option<(u32, bool)>, String> {
        let mut index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(id) = index.ids.get(&key) {
            return Ok(Some((*id, false)));
        }
        let i = index.len;
        let id = u32::try_from(i + 1).ok().filter(|id| *id != u32::MAX).ok_or("the warm-up holds 2^32 - 2 tickets")?;
        let Some(value) = make() else { return Ok(None) };
        let (k, off) = locate(i);
        let segment = self.segments[k].get_or_init(|| (0..BASE << k).map(|_| OnceLock::new()).collect());
        // A fresh index under the lock: the cell is empty.
        let _ = segment[off].set(value);
        index.len = i + 1;
        index.ids.insert(key, id);
        Ok(Some((id, true)))
    }

    /// The entry of `id`, without a lock; `None` for 0 or an id not handed out.
    pub fn get(&self, id: u32) -> Option<&T> {
        let i = (id as usize).checked_sub(1)?;
        let (k, off) = locate(i);
        self.segments.get(k)?.get()?.get(off)?.get()
    }

    /// Every entry, in id order.
    pub fn all(&self) -> Vec<&T> {
        let len = self.index.lock().unwrap_or_else(|p| p.into_inner()).len;
        (1..=len).filter_map(|id| u32::try_from(id).ok().and_then(|id| self.get(id))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_tile_the_indices() {
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(BASE - 1), (0, BASE - 1));
        assert_eq!(locate(BASE), (1, 0));
        assert_eq!(locate(3 * BASE - 1), (1, 2 * BASE - 1));
        assert_eq!(locate(3 * BASE), (2, 0));
        let (k, _) = locate(u32::MAX as usize);
        assert!(k < SEGMENTS);
    }

    #[test]
    fn ids_are_stable_deduplicated_and_readable_from_other_threads() {
        let t: std::sync::Arc<Table<u32, u32>> = Default::default();
        for n in 0..1000 {
            assert_eq!(t.insert(n, || Some(n * 2)).unwrap(), Some((n + 1, true)));
        }
        assert_eq!(t.insert(5, || panic!("not called")).unwrap(), Some((6, false)));
        assert_eq!(t.insert(5000, || None).unwrap(), None);
        let reader = {
            let t = t.clone();
            std::thread::spawn(move || (1..=1000).all(|id| t.get(id) == Some(&((id - 1) * 2))))
        };
        assert!(reader.join().unwrap());
        assert_eq!(t.get(0), None);
        assert_eq!(t.get(1001), None);
        assert_eq!(t.get(u32::MAX), None);
        assert_eq!(t.all().len(), 1000);
    }
}
