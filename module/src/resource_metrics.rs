//! The per-resource request metrics in the module ([`switchyard_table::metrics`]): the same names,
//! labels and shapes as the wasm filter's (the durations as counters shaped as a Prometheus
//! histogram), handed to Envoy with real labels (the ABI has them), so no `stats_tags` is needed.
//!
//! A worker counts each request in its own [`Tallies`] when the stream completes, calling nothing
//! in Envoy; once a second a [`Flusher`] thread has the configuration's scheduler run
//! [`ResourceMetrics::flush`] on Envoy's main thread, which hands Envoy the sums: one labelled
//! increment per stat that moved, not three per request. A labelled increment costs Envoy about
//! 6,700 instructions (it resolves the labels to a stat every time): per request, the counter and
//! the histogram took 6 % of what a request costs Envoy (BENCHMARKS.md, "Envoy's instructions
//! per request").

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::{Arc, Condvar, LazyLock, Mutex, PoisonError};
use std::thread::JoinHandle;

use switchyard_request::meter::{Ended, SeriesBook, SeriesId, Stat, Tallies, Tally, Winner};
use switchyard_table::metrics::{FLUSH_EVERY, FOLDED_RESOURCES};

use crate::abi::{self, ConfigEnvoyPtr, ModuleBuffer, METRICS_SUCCESS};

/// The scheduler event that flushes (the configuration schedules no other).
const FLUSH_EVENT: u64 = 1;

/// What one worker counted since the last flush, with each series' labels (`kind`, `namespace`,
/// `resource`, `backend`, copied from the worker's book the first time it counts the series);
/// locked by its worker on the request path (uncontended but during a flush) and by the main
/// thread once a second.
#[derive(Default)]
struct Counts {
    tallies: Tallies,
    /// By series id.
    labels: Vec<Option<[String; 4]>>,
}

impl Counts {
    fn count(&mut self, series: SeriesId, ended: Ended, labels: impl FnOnce() -> [String; 4]) {
        let index = series.0 as usize;
        if self.labels.len() <= index {
            self.labels.resize(index + 1, None);
        }
        if let Some(slot @ None) = self.labels.get_mut(index) {
            *slot = Some(labels());
        }
        self.tallies.count(series, ended);
    }

    fn drain(&mut self) -> Vec<([String; 4], Tally)> {
        let Counts { tallies, labels } = self;
        (tallies.drain())
            .filter_map(|(series, tally)| Some((labels.get(series.0 as usize)?.clone()?, tally)))
            .collect()
    }
}

thread_local! {
    /// This worker's series.
    static BOOK: RefCell<SeriesBook> = RefCell::new(SeriesBook::default());
    /// This worker's counts, registered in [`WORKERS`] when it first counts.
    static MINE: Arc<Mutex<Counts>> = {
        let mine = Arc::new(Mutex::new(Counts::default()));
        WORKERS.lock().unwrap_or_else(PoisonError::into_inner).push(Arc::clone(&mine));
        mine
    };
}

/// Every worker's counts, for the flush.
static WORKERS: LazyLock<Mutex<Vec<Arc<Mutex<Counts>>>>> = LazyLock::new(|| Mutex::new(Vec::new()));

/// The series `winner`'s request counts in, in this worker's book (`None`: never, the book being
/// busy).
pub fn note(winner: Winner<'_>) -> Option<SeriesId> {
    BOOK.with(|book| Some(book.try_borrow_mut().ok()?.id(winner.series)))
}

/// Counts a request noted in `series` that ended as `ended`, in this worker's counts.
pub fn count(series: SeriesId, ended: Ended) {
    BOOK.with(|book| {
        let Ok(book) = book.try_borrow() else {
            return;
        };
        let labels = || book.labels(series).map(str::to_owned);
        MINE.with(|mine| {
            mine.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .count(series, ended, labels)
        });
    });
}

/// What every worker counted since the last call, each series with its labels.
fn drain_workers() -> Vec<([String; 4], Tally)> {
    let workers = WORKERS.lock().unwrap_or_else(PoisonError::into_inner).clone();
    (workers.iter())
        .flat_map(|worker| worker.lock().unwrap_or_else(PoisonError::into_inner).drain())
        .collect()
}

/// The ids of a filter configuration's per-resource metrics; one Envoy refused is `None`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResourceMetrics {
    requests: Option<usize>,
    buckets: Option<usize>,
    sum: Option<usize>,
    count: Option<usize>,
    folded: Option<usize>,
}

impl ResourceMetrics {
    /// Defines them in `config`'s stats scope.
    ///
    /// # Safety
    /// `config` is the configuration Envoy is creating (the running `config_new` hook's).
    pub unsafe fn define(config: ConfigEnvoyPtr) -> ResourceMetrics {
        let counter = |stat: Stat| {
            let name = stat.name();
            let mut labels: Vec<ModuleBuffer> = stat.label_names().into_iter().map(ModuleBuffer::of).collect();
            let mut id = 0usize;
            // SAFETY: the caller's contract; the name and labels are lent for the call.
            let result = unsafe {
                abi::envoy_dynamic_module_callback_http_filter_config_define_counter(
                    config,
                    ModuleBuffer::of(&name),
                    labels.as_mut_ptr(),
                    labels.len(),
                    &mut id,
                )
            };
            (result == METRICS_SUCCESS).then_some(id)
        };
        let mut folded = 0usize;
        // SAFETY: as above; a gauge without labels.
        let folded_defined = unsafe {
            abi::envoy_dynamic_module_callback_http_filter_config_define_gauge(
                config,
                ModuleBuffer::of(FOLDED_RESOURCES),
                std::ptr::null_mut(),
                0,
                &mut folded,
            )
        };
        ResourceMetrics {
            requests: counter(Stat::Requests(0)),
            buckets: counter(Stat::Bucket(0)),
            sum: counter(Stat::Sum),
            count: counter(Stat::Count),
            folded: (folded_defined == METRICS_SUCCESS).then_some(folded),
        }
    }

    /// Sets the folded resources' gauge.
    ///
    /// # Safety
    /// `config` is the configuration that defined these metrics, during its `config_new` hook.
    pub unsafe fn set_folded(&self, config: ConfigEnvoyPtr, folded: u32) {
        if let Some(id) = self.folded {
            // SAFETY: the caller's contract.
            unsafe {
                abi::envoy_dynamic_module_callback_http_filter_config_set_gauge(
                    config,
                    id,
                    std::ptr::null_mut(),
                    0,
                    u64::from(folded),
                );
            }
        }
    }

    /// Hands Envoy what every worker counted since the last flush. A refused increment loses that
    /// count, nothing else.
    ///
    /// # Safety
    /// `config` is the configuration that defined these metrics, on Envoy's main thread (its
    /// `config_scheduled` hook).
    pub unsafe fn flush(&self, config: ConfigEnvoyPtr) {
        for (labels, tally) in drain_workers() {
            let labels = labels.each_ref().map(String::as_str);
            for (stat, n) in tally.moved() {
                let Some(id) = self.id(stat) else {
                    continue;
                };
                let mut values: Vec<ModuleBuffer> = (stat.labels(labels).into_iter())
                    .map(|(_, value)| ModuleBuffer::of(value))
                    .collect();
                // SAFETY: the caller's contract; the label values are lent for the call.
                unsafe {
                    abi::envoy_dynamic_module_callback_http_filter_config_increment_counter(
                        config,
                        id,
                        values.as_mut_ptr(),
                        values.len(),
                        n,
                    );
                }
            }
        }
    }

    /// The id of `stat`'s counter (`None`: Envoy refused to define it).
    fn id(&self, stat: Stat) -> Option<usize> {
        match stat {
            Stat::Requests(_) => self.requests,
            Stat::Bucket(_) => self.buckets,
            Stat::Sum => self.sum,
            Stat::Count => self.count,
        }
    }
}

/// A configuration's scheduler, which any thread may ask to run an event on Envoy's main thread.
struct Scheduler(*mut c_void);

// SAFETY: Envoy's scheduler is made for committing from other threads (it posts to the main
// thread's dispatcher); it is deleted only after the thread that commits has stopped.
unsafe impl Send for Scheduler {}
// SAFETY: as above; the module never touches it but through `commit` and `delete`.
unsafe impl Sync for Scheduler {}

/// The thread that has a configuration's [`ResourceMetrics::flush`] run every [`FLUSH_EVERY`]
/// (`None` from [`Flusher::start`]: no scheduler or no thread, and then the counts wait for the
/// next configuration's flusher). Stopped and joined when the configuration goes; what the workers
/// counted in its last second is handed over by the next configuration's, or lost with Envoy.
pub struct Flusher {
    scheduler: Arc<Scheduler>,
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Flusher {
    /// Starts one for `config`.
    ///
    /// # Safety
    /// `config` is the configuration Envoy is creating (the running `config_new` hook's).
    pub unsafe fn start(config: ConfigEnvoyPtr) -> Option<Flusher> {
        // SAFETY: the caller's contract.
        let scheduler = unsafe { abi::envoy_dynamic_module_callback_http_filter_config_scheduler_new(config) };
        if scheduler.is_null() {
            return None;
        }
        let scheduler = Arc::new(Scheduler(scheduler));
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = {
            let (scheduler, stop) = (Arc::clone(&scheduler), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("switchyard-metrics".to_owned())
                .spawn(move || loop {
                    let (stopped, wake) = &*stop;
                    let stopped = stopped.lock().unwrap_or_else(PoisonError::into_inner);
                    let (stopped, _) = wake
                        .wait_timeout(stopped, FLUSH_EVERY)
                        .unwrap_or_else(PoisonError::into_inner);
                    if *stopped {
                        return;
                    }
                    // SAFETY: the scheduler lives until this thread has been joined.
                    unsafe {
                        abi::envoy_dynamic_module_callback_http_filter_config_scheduler_commit(scheduler.0, FLUSH_EVENT)
                    };
                })
        };
        match thread {
            Ok(thread) => Some(Flusher {
                scheduler,
                stop,
                thread: Some(thread),
            }),
            Err(_) => {
                // SAFETY: no thread holds it.
                unsafe { abi::envoy_dynamic_module_callback_http_filter_config_scheduler_delete(scheduler.0) };
                None
            }
        }
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // SAFETY: the thread that committed has stopped; nothing else holds the scheduler.
        unsafe { abi::envoy_dynamic_module_callback_http_filter_config_scheduler_delete(self.scheduler.0) };
    }
}

/// The response code of stream `filter` (`None` before a response: the client went away).
///
/// # Safety
/// `filter` is the running hook's stream.
pub unsafe fn response_code(filter: abi::FilterEnvoyPtr) -> Option<u64> {
    let mut code = 0u64;
    // SAFETY: the caller's contract; `code` is a live local.
    let found = unsafe {
        abi::envoy_dynamic_module_callback_http_filter_get_attribute_int(filter, abi::RESPONSE_CODE, &mut code)
    };
    found.then_some(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_table::metrics::Series;

    #[test]
    fn a_flush_takes_what_every_worker_counted_once_with_its_labels() {
        let winner = Winner {
            rule: "Ingress/flushed/here#0",
            series: Series::Resource {
                resource: "Ingress/flushed/here",
                backend: Some("flushed/here:80"),
            },
            place: None,
        };
        let series = note(winner).unwrap();
        count(series, Ended::new(Some(200), 3));
        count(series, Ended::new(Some(503), 70));
        let other = std::thread::spawn(move || {
            let series = note(winner).unwrap();
            count(series, Ended::new(Some(200), 1));
        });
        other.join().unwrap();
        let mut moved = drain_workers();
        moved.retain(|(labels, _)| labels[1] == "flushed");
        assert_eq!(moved.len(), 2, "one series per worker: {moved:?}");
        let labels = ["Ingress", "flushed", "here", "flushed/here:80"].map(str::to_owned);
        assert!(moved.iter().all(|(l, _)| *l == labels));
        let total: u64 = moved.iter().map(|(_, tally)| tally.count()).sum();
        assert_eq!(total, 3);
        assert!(
            drain_workers().iter().all(|(labels, _)| labels[1] != "flushed"),
            "taken once"
        );
    }
}
