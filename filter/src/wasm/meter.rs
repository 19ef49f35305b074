//! The VM's counts: the per-resource request metrics ([`Meter`], kept across root contexts) with
//! the filter's request totals ([`Total`]), handed to Envoy on the root's tick; and the filter's
//! own counters and gauges ([`Metrics`]).

use std::any::Any;
use std::cell::RefCell;
use std::rc::Weak;

use proxy_wasm::hostcalls;
use proxy_wasm::types::MetricType;
use switchyard_table::metrics::{self, wasm_stat_name, DURATION_BUCKETS, STATUS_CLASSES};

use switchyard_request::meter::{Ended, SeriesBook, SeriesId, Stat, Tallies, Winner};

thread_local! {
    /// The VM's per-resource request metrics, kept across root contexts as the shards are: a
    /// request counts into the series its winner noted.
    static METER: RefCell<Meter> = RefCell::new(Meter::default());
}

/// `act` on the VM's meter; none if it is borrowed already, which never happens: nothing that
/// holds it calls back into the module.
fn with_meter<R>(act: impl FnOnce(&mut Meter) -> R) -> Option<R> {
    METER.with(|meter| Some(act(&mut *meter.try_borrow_mut().ok()?)))
}

/// The series `winner` is counted in, found in the VM's book by its rule's place in `table`.
pub(super) fn series_of(winner: Winner<'_>, table: &Weak<dyn Any>) -> Option<SeriesId> {
    with_meter(|meter| meter.book.winner_id(winner, table))
}

/// Counts a request of `series` that ended as `ended`.
pub(super) fn count(series: SeriesId, ended: Ended) {
    with_meter(|meter| meter.tallies.count(series, ended));
}

/// Hands Envoy what the VM counted since the last flush, its totals to the counters `totals` names.
pub(super) fn flush(totals: &[u32; Total::ALL.len()]) {
    with_meter(|meter| meter.flush(totals));
}

/// The per-resource request metrics of a VM ([`switchyard_table::metrics`]). A request is counted
/// in the VM ([`Tallies`]); every [`metrics::FLUSH_EVERY`] the root hands Envoy what moved, one
/// host call per stat, each stat defined the first time it moves. The labels go in the stat's name, which the
/// bootstrap's `stats_tags` turn back into tags. The durations are counters shaped as a
/// Prometheus histogram (`_bucket{le}`, `_sum`, `_count`), the buckets Envoy's own.
#[derive(Default)]
struct Meter {
    book: SeriesBook,
    /// What was counted since the last flush.
    tallies: Tallies,
    /// By series id: the ids of its stats in Envoy (0: not defined yet).
    stats: Vec<SeriesStats>,
    /// The filter's request totals counted since the last flush, by [`Total`].
    totals: [u64; Total::ALL.len()],
}

/// How the filter ended a request, each a total of the VM's (`switchyard_requests_*`): counted in
/// the [`Meter`] and handed over with its flush, one host call a total a flush rather than one a
/// request (that call cost Envoy's V8 1,211 instructions, 0.6 % of a request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Total {
    Routed,
    RouteFailed,
    NotRouted,
    Direct,
}

impl Total {
    const ALL: [Total; 4] = [Total::Routed, Total::RouteFailed, Total::NotRouted, Total::Direct];

    /// Counts a request that ended as `self` in the VM's meter.
    pub(super) fn count(self) {
        with_meter(|meter| {
            if let Some(n) = meter.totals.get_mut(self as usize) {
                *n += 1;
            }
        });
    }
}

/// The ids of a series' stats in Envoy (0: not defined yet).
#[derive(Clone, Copy, Default)]
struct SeriesStats {
    requests: [u32; STATUS_CLASSES.len()],
    buckets: [u32; DURATION_BUCKETS.len()],
    sum: u32,
    count: u32,
}

impl Meter {
    /// Hands Envoy what was counted since the last flush, the totals to the counters `totals` names.
    /// A refused call loses that count, nothing else.
    fn flush(&mut self, totals: &[u32; Total::ALL.len()]) {
        let Meter {
            book,
            tallies,
            stats,
            totals: counted,
        } = self;
        for (&id, n) in totals.iter().zip(counted.iter_mut()) {
            if *n > 0 {
                let _ = hostcalls::increment_metric(id, i64::try_from(std::mem::take(n)).unwrap_or(i64::MAX));
            }
        }
        for (series, tally) in tallies.drain() {
            let index = series.0 as usize;
            if stats.len() <= index {
                stats.resize(index + 1, SeriesStats::default());
            }
            let Some(ids) = stats.get_mut(index) else {
                continue;
            };
            let labels = book.labels(series);
            for (stat, n) in tally.moved() {
                if let Some(id) = ids.id(stat) {
                    add(id, n, || wasm_stat_name(&stat.name(), &stat.labels(labels)));
                }
            }
        }
    }
}

impl SeriesStats {
    /// The id of `stat` in Envoy (0: not defined yet).
    fn id(&mut self, stat: Stat) -> Option<&mut u32> {
        match stat {
            Stat::Requests(class) => self.requests.get_mut(class),
            Stat::Bucket(bucket) => self.buckets.get_mut(bucket),
            Stat::Sum => Some(&mut self.sum),
            Stat::Count => Some(&mut self.count),
        }
    }
}

/// Adds `n` to the counter `*id` names, defined (named `name()`) when it is 0; left 0 when the
/// host refuses it (then asked again at the next flush). Adding 0 defines it (a sum of zeros).
pub(super) fn add(id: &mut u32, n: u64, name: impl FnOnce() -> String) {
    if *id == 0 {
        *id = hostcalls::define_metric(MetricType::Counter, &name()).unwrap_or(0);
    }
    if *id != 0 && n > 0 {
        let _ = hostcalls::increment_metric(*id, i64::try_from(n).unwrap_or(i64::MAX));
    }
}

/// The filter's counters and gauges; Envoy shows them as `wasmcustom.<name>`.
pub(super) struct Metrics {
    /// By [`Total`].
    pub(super) totals: [u32; Total::ALL.len()],
    pub(super) accepted: u32,
    pub(super) refused: u32,
    pub(super) rules: u32,
    pub(super) folded: u32,
}

impl Metrics {
    pub(super) fn define() -> Self {
        let counter = |name| hostcalls::define_metric(MetricType::Counter, name).unwrap_or(u32::MAX);
        Metrics {
            totals: Total::ALL.map(|total| {
                counter(match total {
                    Total::Routed => "switchyard_requests_routed",
                    Total::RouteFailed => "switchyard_requests_route_failed",
                    Total::NotRouted => "switchyard_requests_not_routed",
                    Total::Direct => "switchyard_requests_direct_response",
                })
            }),
            accepted: counter("switchyard_tables_accepted"),
            refused: counter("switchyard_tables_refused"),
            rules: hostcalls::define_metric(MetricType::Gauge, "switchyard_rules").unwrap_or(u32::MAX),
            folded: hostcalls::define_metric(MetricType::Gauge, metrics::FOLDED_RESOURCES).unwrap_or(u32::MAX),
        }
    }

    pub(super) fn increment(id: u32) {
        let _ = hostcalls::increment_metric(id, 1);
    }
}
