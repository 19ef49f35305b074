//! A process's CPU time as the kernel counts it (a module of the sidecar's benchmarks), from the
//! watch process harness.

pub use switchyard_watch_process::cpu_ns;
