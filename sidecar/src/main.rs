//! The `switchyard` binary: see [`switchyard::cli`].

/// mimalloc instead of the system allocator: every push copies and frees the table (100,000 rules:
/// some 200,000 small allocations), which glibc's malloc does much slower (BENCHMARKS.md,
/// "Incremental compile").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(switchyard::cli::run(std::env::args_os()));
}
