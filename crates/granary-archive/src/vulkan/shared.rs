//! [`Shared`]: objects made once per key and shared (`Arc`) by every caller, made outside any
//! lock. A failure is handed to every caller waiting for that attempt and then forgotten, so a
//! transient error (out of memory) is not cached forever: the next caller tries again.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, OnceLock};

type Cell<T> = Arc<OnceLock<Result<Arc<T>, String>>>;

/// A map from key to the one shared value made for it.
///
/// Thread safety: `Send + Sync` for `Send + Sync` keys and values. [`get_or_try`](Shared::get_or_try) may be
/// called from any number of threads at once: for one key, one caller runs `make` while the
/// others wait on its once-cell; the map lock is held only to find or insert the cell.
pub struct Shared<K, T> {
    map: Mutex<HashMap<K, Cell<T>>>,
}

impl<K, T> Default for Shared<K, T> {
    fn default() -> Self {
        Shared { map: Mutex::new(HashMap::new()) }
    }
}

impl<K: Eq + Hash + Clone, T> Shared<K, T> {
    /// The value for `key`, made by `make` if no caller made it yet. An error is returned to
    /// this attempt's callers and the entry removed, so a later call runs `make` again.
    pub fn get_or_try(&self, key: K, make: impl FnOnce() -> Result<T, String>) -> Result<Arc<T>, String> {
        let cell = self.map.lock().unwrap_or_else(|p| p.into_inner()).entry(key.clone()).or_default().clone();
        let result = cell.get_or_init(|| make().map(Arc::new)).clone();
        if result.is_err() {
            let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
            if map.get(&key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
                map.remove(&key);
            }
        }
        result
    }

    /// How many values are held (made or being made).
    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_not_cached_but_values_are() {
        let s: Shared<u32, u32> = Shared::default();
        assert!(s.get_or_try(1, || Err("out of memory".into())).is_err());
        assert!(s.is_empty());
        assert_eq!(*s.get_or_try(1, || Ok(7)).unwrap(), 7);
        assert_eq!(*s.get_or_try(1, || panic!("made twice")).unwrap(), 7);
        assert_eq!(s.len(), 1);
    }
}
