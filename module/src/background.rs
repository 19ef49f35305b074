//! The module's own work off Envoy's threads, at a lower CPU priority than Envoy's: decoding a
//! pushed table and freeing an old one.
//!
//! Envoy creates a filter configuration on its main thread, which on a small machine shares the
//! cores with the workers: decoding and indexing 100,000 rules (about 200 ms) there delayed
//! requests by 2 – 5 ms during pushes (BENCHMARKS.md, "Native module"). Run at a nice value of
//! [`NICE`], that work yields the cores to the workers when they need them, and takes what they
//! leave: a push applies a little later on a busy gateway, requests are not delayed. Not idle
//! scheduling (`SCHED_IDLE`): on a gateway whose workers never rest, the main thread, which waits
//! for the decode, would wait for ever.

use std::thread;

/// The nice value of the module's threads (Envoy's run at 0; 19 is the lowest priority).
pub const NICE: i32 = 10;

/// Lowers the calling thread's priority to [`NICE`] (on Linux a nice value is a thread's own).
/// Failing, the thread runs at its priority.
fn lower_priority() {
    // SAFETY: setpriority reads its arguments only; `who` 0 is the calling thread.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, NICE);
    }
}

/// `work`'s result, computed on a thread of the module's at a lower priority while the calling
/// thread waits; `None` when no thread could be made (then nothing ran) or `work` panicked.
pub fn run<T: Send>(name: &str, work: impl FnOnce() -> T + Send) -> Option<T> {
    thread::scope(|scope| {
        let handle = thread::Builder::new()
            .name(name.to_owned())
            .spawn_scoped(scope, || {
                lower_priority();
                work()
            })
            .ok()?;
        handle.join().ok()
    })
}

/// Runs `work` on a thread of the module's at a lower priority, without waiting for it. When no
/// thread can be made, `work` is dropped (not run) here.
pub fn detach(name: &str, work: impl FnOnce() + Send + 'static) {
    let _ = thread::Builder::new().name(name.to_owned()).spawn(move || {
        lower_priority();
        work()
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The running thread's nice value, from `/proc/thread-self/stat` (field 19).
    fn nice() -> i32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        after_name.split(' ').nth(16).unwrap().parse().unwrap()
    }

    #[test]
    fn work_runs_on_a_named_thread_of_lower_priority_and_its_result_comes_back() {
        let caller = nice();
        let (name, niceness, sum) = run("switchyard-test", || {
            let name = thread::current().name().map(str::to_owned);
            (name, nice(), (1..=10).sum::<u32>())
        })
        .unwrap();
        assert_eq!(name.as_deref(), Some("switchyard-test"));
        assert_eq!(niceness, NICE.max(caller));
        assert_eq!(sum, 55);
        assert_eq!(nice(), caller, "the calling thread keeps its priority");
    }

    #[test]
    fn a_panic_in_the_work_is_none_not_a_panic_of_the_caller() {
        assert_eq!(run("switchyard-test", || -> u32 { panic!("in the work") }), None);
    }
}
