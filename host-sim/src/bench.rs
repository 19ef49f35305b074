//! `host-sim bench`: the whole request lifecycle repeated, timed in this thread's CPU time; with
//! `--against`, a second module timed side by side in the same process. Its batches alternate
//! with the first's (in A B B A order, so neither always runs first), so both see the same machine
//! from one moment to the next; the difference is the median of the adjacent batches' paired
//! differences, which a machine whose speed drifts between runs cannot fake.
//!
//! A benchmarked request's [`crate::Outcome`] leaves the metrics out
//! ([`Sim::without_metrics_in_outcomes`]): Envoy copies no stat per request, and the copy would
//! charge a module for every metric it defines.

use crate::{Outcome, Request, Sim};
use serde::Serialize;
use std::time::{Duration, Instant};

/// Untimed requests before the timed ones (the first requests fill caches and grow memory).
pub const WARM_UP: u64 = 1000;

/// The JSON `bench` prints.
#[derive(Debug, Serialize)]
pub struct BenchReport {
    pub configured: bool,
    pub requests: u64,
    /// Wall-clock time per request.
    pub ns_per_request: f64,
    /// CPU time of the benchmarking thread per request (Linux), which other processes competing
    /// for the cores do not inflate.
    pub cpu_ns_per_request: Option<f64>,
    pub action: String,
    pub forwarded: bool,
    pub local_status: Option<u32>,
    /// The module's linear memory after configuring and the timed requests, in bytes (wasm memory
    /// never shrinks, so this is its peak: what each of a proxy's VMs holds for this table).
    pub memory_bytes: usize,
    /// The module timed side by side (`--against`), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against: Option<Against>,
}

/// The second module of a side-by-side bench, and how the first compares with it.
#[derive(Debug, Serialize)]
pub struct Against {
    pub wasm: String,
    pub requests: u64,
    pub cpu_ns_per_request: Option<f64>,
    /// Requests per batch; each module ran `requests / batch` batches.
    pub batch: u64,
    /// Per pair of adjacent batches: the first module's CPU ns per request minus this one's.
    pub difference_cpu_ns_per_request: Spread,
    /// Per pair of adjacent batches: the first module's CPU time over this one's.
    pub ratio: Spread,
}

/// The least, middle and greatest of a set of figures.
#[derive(Debug, Serialize, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of `figures`; none when there are none.
    pub fn of(mut figures: Vec<f64>) -> Option<Spread> {
        figures.sort_by(f64::total_cmp);
        let (first, last) = (*figures.first()?, *figures.last()?);
        let n = figures.len();
        let median = match n % 2 {
            1 => figures[n / 2],
            _ => (figures[n / 2 - 1] + figures[n / 2]) / 2.0,
        };
        Some(Spread {
            min: first,
            median,
            max: last,
        })
    }
}

/// What one stretch of timed requests took.
#[derive(Debug, Clone, Copy, Default)]
struct Timing {
    cpu_ns: Option<u64>,
    wall: Duration,
}

/// How a request was answered, which every request of a bench must share: a figure that mixes
/// two answers (a rate limit that fills up, a cache that starts refusing) times neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Answer {
    forwarded: bool,
    local_status: Option<u32>,
}

impl Answer {
    fn of(outcome: &Outcome) -> Answer {
        Answer {
            forwarded: outcome.forwarded,
            local_status: outcome.local_status(),
        }
    }
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.forwarded, self.local_status) {
            (_, Some(status)) => write!(f, "locally with {status}"),
            (true, None) => f.write_str("upstream"),
            (false, None) => f.write_str("by neither (held)"),
        }
    }
}

/// One module under the bench: its simulator, the last request's outcome, the first request's
/// answer and how many requests were answered otherwise.
pub struct Runner {
    sim: Sim,
    last: Option<Outcome>,
    first: Option<Answer>,
    others: u64,
}

impl Runner {
    /// Prepares `sim` for timing: no metrics copied per request.
    pub fn new(mut sim: Sim) -> Runner {
        sim.without_metrics_in_outcomes();
        Runner {
            sim,
            last: None,
            first: None,
            others: 0,
        }
    }

    fn run(&mut self, request: &Request, n: u64) -> Timing {
        let cpu_start = thread_cpu_ns();
        let start = Instant::now();
        for _ in 0..n {
            let outcome = self.sim.request_ref(request);
            let answer = Answer::of(&outcome);
            match self.first {
                None => self.first = Some(answer),
                Some(first) => self.others += u64::from(first != answer),
            }
            self.last = Some(outcome);
        }
        let wall = start.elapsed();
        Timing {
            cpu_ns: cpu_start.zip(thread_cpu_ns()).map(|(a, b)| b.saturating_sub(a)),
            wall,
        }
    }

    /// The report of `requests` requests that took `timing`; an error when the module failed.
    fn report(&self, requests: u64, timing: Timing) -> Result<BenchReport, String> {
        let last = self.last.as_ref().ok_or("no request ran")?;
        if let Some(error) = &last.error {
            return Err(format!("the module failed: {error}"));
        }
        if let (Some(first), true) = (self.first, self.others > 0) {
            return Err(format!(
                "the answer changed during the run: the first request was answered {first}, {} later ones \
                 otherwise (the last {}); a bench times one answer (a rate limit that filled up?)",
                self.others,
                Answer::of(last)
            ));
        }
        let per_request = |ns: f64| ns / requests.max(1) as f64;
        Ok(BenchReport {
            // A runner exists only for a module that took its configuration.
            configured: true,
            requests,
            ns_per_request: per_request(timing.wall.as_nanos() as f64),
            cpu_ns_per_request: timing.cpu_ns.map(|ns| per_request(ns as f64)),
            action: last.action.to_string(),
            forwarded: last.forwarded,
            local_status: last.local_status(),
            memory_bytes: self.sim.memory_bytes(),
            against: None,
        })
    }
}

/// Times `requests` requests through `runner` after the warm-up.
pub fn alone(mut runner: Runner, request: &Request, requests: u64) -> Result<BenchReport, String> {
    runner.run(request, WARM_UP);
    let timing = runner.run(request, requests);
    runner.report(requests, timing)
}

/// Times `requests` requests through each of `first` and `second` (named `second_name` in the
/// report) in alternating batches of `batch`, and compares them.
pub fn side_by_side(
    mut first: Runner,
    mut second: Runner,
    second_name: String,
    request: &Request,
    requests: u64,
    batch: u64,
) -> Result<BenchReport, String> {
    let batch = batch.clamp(1, requests.max(1));
    first.run(request, WARM_UP);
    second.run(request, WARM_UP);
    let (mut totals, mut differences, mut ratios) = ([Timing::default(); 2], Vec::new(), Vec::new());
    for pair in 0..requests / batch {
        // A B, then B A: whichever runs second in a pair may find the caches the other left.
        let (a, b) = match pair % 2 {
            0 => {
                let a = first.run(request, batch);
                (a, second.run(request, batch))
            }
            _ => {
                let b = second.run(request, batch);
                (first.run(request, batch), b)
            }
        };
        for (total, t) in totals.iter_mut().zip([a, b]) {
            total.wall += t.wall;
            total.cpu_ns = total.cpu_ns.zip(t.cpu_ns).map(|(x, y)| x + y).or(t.cpu_ns);
        }
        if let (Some(a), Some(b)) = (a.cpu_ns, b.cpu_ns) {
            differences.push((a as f64 - b as f64) / batch as f64);
            ratios.push(a as f64 / (b as f64).max(1.0));
        }
    }
    let timed = requests / batch * batch;
    let mut report = first.report(timed, totals[0])?;
    let theirs = second.report(timed, totals[1])?;
    let spread = |figures: Vec<f64>| Spread::of(figures).ok_or("no batch was timed on the thread's CPU clock");
    report.against = Some(Against {
        wasm: second_name,
        requests: timed,
        cpu_ns_per_request: theirs.cpu_ns_per_request,
        batch,
        difference_cpu_ns_per_request: spread(differences)?,
        ratio: spread(ratios)?,
    });
    Ok(report)
}

/// The CPU time this thread has run, in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`: exact at the
/// moment of the call, where /proc's schedstat lags by up to a scheduler tick).
fn thread_cpu_ns() -> Option<u64> {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a live, writable timespec.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    let seconds = u64::try_from(now.tv_sec).ok()?;
    let nanos = u64::try_from(now.tv_nsec).ok()?;
    (status == 0).then(|| seconds * 1_000_000_000 + nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_has_the_middle_figure_or_the_mean_of_the_two_middle_ones() {
        assert_eq!(
            Spread::of(vec![3.0, 1.0, 2.0]),
            Some(Spread {
                min: 1.0,
                median: 2.0,
                max: 3.0
            })
        );
        assert_eq!(Spread::of(vec![4.0, 1.0, 2.0, 3.0]).map(|s| s.median), Some(2.5));
        assert_eq!(Spread::of(Vec::new()), None);
    }

    #[test]
    fn the_thread_clock_moves_with_work() {
        let before = thread_cpu_ns().unwrap();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        assert!(thread_cpu_ns().unwrap() > before, "{x}");
    }
}
