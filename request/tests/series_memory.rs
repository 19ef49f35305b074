//! What the per-resource metrics' series book holds at 10,000 resources (BENCHMARKS.md,
//! "Per-resource request metrics"): counted by this test binary's allocator, natively (64-bit
//! pointers; a wasm32 VM's book is smaller), and bounded so that a change that made a series
//! costly fails here.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use switchyard_request::meter::SeriesBook;
use switchyard_table::metrics::Series;

/// The system allocator, counting the bytes held.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is the system allocator's, with the caller's layout.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn the_series_of_10000_resources_take_a_few_mib() {
    const N: usize = 10_000;
    let names: Vec<(String, String)> = (0..N)
        .map(|i| {
            (
                format!("Ingress/team{:03}/service-{i:05}", i % 500),
                format!("team{:03}/service-{i:05}_80", i % 500),
            )
        })
        .collect();
    let before = HELD.load(Ordering::Relaxed);
    let mut book = SeriesBook::default();
    for (resource, backend) in &names {
        book.id(Series::Resource {
            resource,
            backend: Some(backend),
        });
    }
    let held = HELD.load(Ordering::Relaxed) - before;
    eprintln!(
        "series book, {N} resources with one backend each: {held} bytes ({} per series)",
        held / N
    );
    assert_eq!(book.len(), N + 2);
    assert!(held < 4 << 20, "{held} bytes");
}
