//! [`SharedTable`]: the table every worker reads, whose memory is given back off the request path.
//!
//! A filter configuration's table is shared by `Arc`, and whoever drops the last reference frees
//! it. That is not always Envoy's main thread: Envoy destroys an old filter configuration when its
//! last stream ends, often on a worker, and a request routed by the cluster specifier holds a
//! clone while it routes. Freeing 100,000 rules (some 250 MB in many small allocations) took tens of
//! milliseconds, during which that worker served nothing: the slowest request during pushes of
//! 100,000-rule tables waited 40 – 51 ms against a steady 1 – 5 ms (BENCHMARKS.md, "Native module").
//! So a large table is freed by a short-lived thread of its own, at a lower priority than Envoy's
//! ([`crate::background`]); a small one where it is dropped.
//!
//! The thread runs the module's code after the configuration is gone: the module must stay loaded,
//! which Envoy does while another configuration uses it (a push loads the new one first) and always
//! with `do_not_close: true` in `dynamic_module_config`, which every configuration Switchyard writes
//! sets (module/README.md).

use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::sync::Arc;

use crate::loaded::Loaded;

/// Tables of at least this many rules are freed off the thread that drops them (a thread costs
/// some tens of microseconds; freeing 10,000 rules, a few milliseconds).
pub const FREED_OFF_THREAD_FROM: usize = 10_000;

/// A decoded table shared by every worker.
pub type SharedTable = Arc<Table>;

/// A table that frees itself off the dropping thread when it is large.
pub struct Table(ManuallyDrop<Loaded>);

impl Table {
    /// `table`, shared.
    pub fn shared(table: Loaded) -> SharedTable {
        Arc::new(Table(ManuallyDrop::new(table)))
    }
}

impl Deref for Table {
    type Target = Loaded;

    fn deref(&self) -> &Loaded {
        &self.0
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // SAFETY: taken once, here, and `self.0` is not used again.
        let table = unsafe { ManuallyDrop::take(&mut self.0) };
        if table.rule_count() < FREED_OFF_THREAD_FROM {
            return;
        }
        // When the thread cannot be made, the closure, and the table with it, is dropped here.
        crate::background::detach("switchyard-free", move || drop(table));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rules: usize) -> Loaded {
        Loaded::Whole(switchyard_table::RouteTable::try_from(switchyard_table::synthetic::table(rules)).unwrap())
    }

    #[test]
    fn a_shared_table_reads_as_the_table() {
        let shared = Table::shared(table(10));
        assert_eq!(shared.rule_count(), 10);
        assert_eq!(shared.generation(), "synthetic-10");
    }

    /// A large table's last reference dropped here is freed by a `switchyard-free` thread (seen
    /// in `/proc/self/task` while it frees); a small one is freed in place (no such thread).
    #[test]
    fn a_large_table_is_freed_by_a_thread_of_its_own_and_a_small_one_in_place() {
        let threads = || {
            std::fs::read_dir("/proc/self/task")
                .map(|tasks| {
                    tasks
                        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                        .filter(|name| name.trim() == "switchyard-free")
                        .count()
                })
                .unwrap_or(0)
        };
        drop(Table::shared(table(100)));
        assert_eq!(threads(), 0, "a small table is freed in place");
        let large = Table::shared(table(50_000));
        drop(large);
        let started = std::time::Instant::now();
        let mut seen = threads() > 0;
        while !seen && started.elapsed() < std::time::Duration::from_millis(200) {
            seen = threads() > 0;
        }
        assert!(seen, "no switchyard-free thread freed the large table");
    }
}
