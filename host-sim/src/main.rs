//! `host-sim`: see [`switchyard_host_sim::cli`].

/// mimalloc, as Envoy has tcmalloc: a host call's copies (a header the filter adds, the outcome of
/// each request) then cost what a fast allocator's do, not glibc's, which timed host-sim's own
/// bookkeeping more than the module's work.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    switchyard_host_sim::cli::main()
}
