//! A process's memory as the kernel counts it (a module of the envtest suite's benchmarks): what a
//! Deployment's memory limit is measured against.
//!
//! - `VmRSS`: resident now;
//! - `VmHWM`: the most it was ever resident (the peak of the first full compile included);
//! - `LazyFree` (`smaps_rollup`): pages the allocator freed with `MADV_FREE`, resident until the
//!   kernel needs them (it takes them back before the cgroup's limit kills anything).

use std::fmt;

/// One process's memory, in KiB.
#[derive(Debug, Clone, Copy)]
pub struct Resident {
    pub rss: u64,
    pub peak: u64,
    pub lazy_free: u64,
}

/// The value of `field` (`VmRSS:` ...) in a `/proc` file of `key: value kB` lines.
fn kib(text: &str, field: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

impl Resident {
    /// The memory of process `pid` now (`None` once it is gone).
    pub fn of(pid: u32) -> Option<Resident> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
        Some(Resident {
            rss: kib(&status, "VmRSS:")?,
            peak: kib(&status, "VmHWM:")?,
            lazy_free: kib(&rollup, "LazyFree:").unwrap_or(0),
        })
    }
}

impl fmt::Display for Resident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RSS {} MiB (peak {} MiB, lazily freed {} MiB)",
            self.rss / 1024,
            self.peak / 1024,
            self.lazy_free / 1024
        )
    }
}
