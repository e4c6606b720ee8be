//! Audit stores kept open between calls by a resident gavel (`serve
//! --socket`): a call it answers takes its database's store from the pool
//! and gives it back when done, so the next call skips the open.

use std::path::Path;
use std::sync::Mutex;

use crate::store::Store;

/// Audit stores kept open between calls, one pool per resident process.
#[derive(Default)]
pub struct StorePool {
    stores: Mutex<Vec<Store>>,
}

impl std::fmt::Debug for StorePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StorePool")
    }
}

impl StorePool {
    /// At most this many stores are kept (one per call answered at once).
    const KEEP: usize = 8;

    pub fn take(&self, path: &Path) -> Option<Store> {
        let mut stores = self.stores.lock().ok()?;
        let at = stores.iter().position(|s| s.path() == path)?;
        Some(stores.swap_remove(at))
    }

    /// Keeps `store` for the next call; a kept store lives long, so its
    /// WAL checkpoints move to a thread of their own.
    pub fn keep(&self, mut store: Store) {
        let _ = store.checkpoint_in_background();
        if let Ok(mut stores) = self.stores.lock()
            && stores.len() < Self::KEEP
        {
            stores.push(store);
        }
    }
}
