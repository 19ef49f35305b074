//! Where the incremental compiler's memory goes at 100,000 rules (issue 13's cluster: 1,000
//! Ingresses of 100 paths over 300 hosts), counted by a global allocator that tracks the bytes
//! live and the peak: what it keeps between changes, and that a change of one Ingress splices the
//! table in place, with no second copy of it at any moment, and that the first full compile peaks
//! at a bounded number of tables (deploy/README.md sizes the sidecar by both). Run with
//! `--nocapture` for the figures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use switchyard_compiler::incremental::{Incremental, Path};
use switchyard_compiler::{Objects, Options};

mod issue13;
use issue13::ingress;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed) + layout.size() as isize;
        PEAK.fetch_max(live, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let delta = new_size as isize - layout.size() as isize;
        let live = LIVE.fetch_add(delta, Ordering::Relaxed) + delta;
        PEAK.fetch_max(live, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

fn reset_peak() -> isize {
    let live = live();
    PEAK.store(live, Ordering::Relaxed);
    live
}

fn mib(bytes: isize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

#[test]
fn one_changed_ingress_among_100000_rules_is_compiled_without_a_copy_of_the_table() {
    let start = live();
    let base = Objects {
        ingresses: (0..1_000).map(|i| Arc::new(ingress(i, 0))).collect(),
        ..Objects::default()
    };
    let objects = live() - start;
    let mut changed = base.clone();
    changed.ingresses[500] = Arc::new(ingress(500, 1));
    let before = reset_peak();
    let mut incremental = Incremental::new(Options::default());
    incremental.update(&base).unwrap();
    let after_full = live();
    let peak_full = PEAK.load(Ordering::Relaxed);
    let before_table = live();
    let table = (**incremental.compiled().unwrap().table).clone();
    let table_bytes = live() - before_table;
    drop(table);
    let statuses = incremental.compiled().unwrap().statuses.to_vec();
    let status_bytes = live() - before_table;
    drop(statuses);
    let hashes = incremental.rule_hashes();
    drop(hashes);
    reset_peak();
    let update = incremental.update(&changed).unwrap();
    assert_eq!(update.path, Path::Incremental);
    let after_incremental = live();
    let peak_incremental = PEAK.load(Ordering::Relaxed);
    eprintln!("objects (1,000 Ingresses of 100 paths): {:.1} MiB", mib(objects));
    eprintln!(
        "incremental compiler after the first update: {:.1} MiB (peak during it {:.1} MiB over what was live before)",
        mib(after_full - before),
        mib(peak_full - before)
    );
    eprintln!(
        "  a copy of its table: {:.1} MiB; of its statuses {:.1} MiB",
        mib(table_bytes),
        mib(status_bytes)
    );
    eprintln!(
        "after one incremental update: {:.1} MiB (peak during it {:.1} MiB over what was live before)",
        mib(after_incremental - before),
        mib(peak_incremental - after_full)
    );
    // The first full compile holds every draft (a rule and what the later stages need of it) and
    // then the table made of them: 4.2 tables over what was live when each draft carried its own
    // ages and keys and the drafts grew by doubling (the sidecar was killed at 256 MiB, issue 28);
    // 3.0 since.
    assert!(
        peak_full - before < table_bytes * 7 / 2,
        "the first full compile peaked {:.1} MiB over what was live, against a table of {:.1} MiB",
        mib(peak_full - before),
        mib(table_bytes)
    );
    assert!(
        peak_incremental - after_full < table_bytes / 8,
        "an update of one Ingress peaked {:.1} MiB over what was live, against a table of {:.1} MiB: a copy of it",
        mib(peak_incremental - after_full),
        mib(table_bytes)
    );
    assert!(
        after_incremental - before < table_bytes * 2,
        "the compiler keeps {:.1} MiB for a table of {:.1} MiB",
        mib(after_incremental - before),
        mib(table_bytes)
    );
}
