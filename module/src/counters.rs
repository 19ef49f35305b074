//! A rule's rate-limit counts ([`switchyard_table::ratelimit`]) for the module: one store in the
//! process, which every worker shares (the wasm filter's VMs share Envoy's shared data the same
//! way), each value with a version written only if unchanged. The keys are bounded by the
//! limiter's slots.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use switchyard_table::ratelimit::Counters;

/// The process's counts.
#[derive(Debug, Default)]
pub struct ProcessCounters {
    values: Mutex<HashMap<String, (Vec<u8>, u32)>>,
}

impl ProcessCounters {
    /// The process's one store.
    pub fn get() -> &'static ProcessCounters {
        static STORE: OnceLock<ProcessCounters> = OnceLock::new();
        STORE.get_or_init(ProcessCounters::default)
    }
}

impl Counters for ProcessCounters {
    fn get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
        let values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        values.get(key).cloned()
    }

    fn set(&self, key: &str, value: &[u8], version: Option<u32>) -> bool {
        let mut values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        let current = values.get(key).map(|(_, version)| *version);
        if version.is_some() && current != version {
            return false;
        }
        let next = current.map_or(1, |v| v.wrapping_add(1).max(1));
        values.insert(key.to_owned(), (value.to_vec(), next));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_with_a_stale_version_is_refused() {
        let store = ProcessCounters::default();
        assert!(store.set("k", b"a", None));
        let (_, version) = Counters::get(&store, "k").unwrap();
        assert!(store.set("k", b"b", Some(version)));
        assert!(!store.set("k", b"c", Some(version)), "stale");
        assert_eq!(Counters::get(&store, "k").unwrap().0, b"b");
    }
}
