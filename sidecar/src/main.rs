//! The `switchyard` binary: see [`switchyard::cli`].

/// mimalloc instead of the system allocator: every push copies and frees the table (100,000 rules:
/// some 200,000 small allocations), which glibc's malloc does much slower (BENCHMARKS.md,
/// "Incremental compile").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_decommits` (mimalloc.h's `mi_option_e`, the same place in v2 and v3; the Rust
/// bindings do not name it).
const MI_OPTION_PURGE_DECOMMITS: libmimalloc_sys::mi_option_t = 5;

fn main() {
    // Memory freed and unused for a second is purged by *resetting* it (`MADV_FREE`: the kernel
    // takes it back only when it needs it) rather than by decommitting it (`MADV_DONTNEED`): a
    // change after a quiet second then reuses the pages of the last one instead of faulting in and
    // zeroing tens of megabytes again (with the 100,000-rule table of issue 13, half the CPU of a
    // change in Kubernetes mode; BENCHMARKS.md, "Incremental compile"). Until the kernel reclaims
    // them, those pages still count in the RSS.
    // SAFETY: called once, before any other thread exists (mimalloc's options are not thread-safe
    // to set); the option and the value are ones mimalloc documents.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DECOMMITS, 0) };
    std::process::exit(switchyard::cli::run(std::env::args_os()));
}
