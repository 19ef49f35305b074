//! A process's CPU time as the kernel counts it (a module of the sidecar's benchmarks): every
//! thread's run time from `/proc/<pid>/task/*/schedstat`, in nanoseconds.

/// CPU time of every thread of `pid`, in nanoseconds.
pub fn cpu_ns(pid: u32) -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let text = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        total += text
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    total
}
