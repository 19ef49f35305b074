//! The gateway's traffic per resource, read from Envoy, for `/status` `traffic` and the dashboard.
//!
//! The filter counts every request by the resource whose rule won in Envoy's stats
//! (`switchyard_resource_requests_total`; `docs/operations.md`, "Per-resource request metrics").
//! With `--envoy-admin ADDR` and `--dashboard-listen`, the watch reads them every [`POLL_EVERY`]
//! from Envoy's admin API at [`STATS_PATH`], step by step:
//!
//! 1. the answer's text → samples ([`exposition::parse`]);
//! 2. samples → the counter's series ([`counters::requests`]);
//! 3. series → running tallies per resource, counter resets included ([`counters::Counters::add`]);
//! 4. tallies → a point of the history ([`window::History::push`]);
//! 5. history → requests per second and the share of 5xx over the last minute and the last five
//!    ([`Traffic::report`]).
//!
//! A reading that fails (Envoy not answering, an answer that does not parse) makes the traffic
//! unknown, with why, until one works: it is never shown as no traffic.

pub mod counters;
pub mod exposition;
pub mod window;

use std::net::SocketAddr;
use std::time::Duration;

use serde::Serialize;

use self::counters::{Counters, Target};
use self::window::{History, Point, Rate};

/// How often Envoy's stats are read (`--traffic-every` overrides it).
pub const POLL_EVERY: Duration = Duration::from_secs(10);

/// What is asked of Envoy's admin API: the one counter, in Prometheus' text format.
pub const STATS_PATH: &str = "/stats/prometheus?filter=switchyard_resource_requests_total";

/// The short window, in seconds: the rate the dashboard shows beside each resource.
pub const LAST_MINUTE: f64 = 60.0;

/// The long window, in seconds; the history keeps what it needs.
pub const LAST_FIVE_MINUTES: f64 = 300.0;

/// How the traffic reads now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reading {
    /// No source: `--envoy-admin` was not given.
    Off,
    /// Not read yet.
    Waiting,
    /// The last reading failed (`error` says why).
    Unknown,
    /// One reading so far: rates need a second one.
    Measuring,
    /// Rates over what the history covers.
    Known,
}

/// The traffic as last read, and how to read it.
#[derive(Debug, Default)]
pub struct Traffic {
    /// Envoy's admin address and how often it is read; `None`: no source.
    source: Option<(SocketAddr, Duration)>,
    counters: Counters,
    history: History,
    /// The last reading: when (milliseconds since the Unix epoch), and why it failed.
    last: Option<(u64, Option<String>)>,
    /// Readings tried so far (what the dashboard's change events count).
    attempts: u64,
}

impl Traffic {
    /// Traffic read from the Envoy whose admin API is at `addr`, every `every`.
    pub fn from_envoy(addr: SocketAddr, every: Duration) -> Traffic {
        Traffic {
            source: Some((addr, every)),
            ..Traffic::default()
        }
    }

    /// Readings tried so far.
    pub fn attempts(&self) -> u64 {
        self.attempts
    }

    /// Takes Envoy's answer to [`STATS_PATH`] (or why there is none), read `at` seconds on a
    /// monotonic clock, `at_unix_ms` on the wall clock.
    pub fn read(&mut self, at: f64, at_unix_ms: u64, answer: Result<String, String>) {
        self.attempts += 1;
        let was_failing = matches!(self.last, Some((_, Some(_))));
        match answer.and_then(|text| series_of(&text)) {
            Ok(series) => {
                self.counters.add(series);
                let tallies = self.counters.tallies().clone();
                self.history.push(Point { at, tallies }, LAST_FIVE_MINUTES);
                self.forget_quiet_targets();
                if was_failing {
                    tracing::info!("traffic: Envoy's stats are read again");
                }
                self.last = Some((at_unix_ms, None));
            }
            Err(why) => {
                // Before a first reading, Envoy is most likely still starting (deploy/envoy/'s
                // starts once the watch has written its files): said, but not as a warning.
                match (&self.last, was_failing) {
                    (None, _) => tracing::info!("traffic: waiting for Envoy's admin (said once): {why}"),
                    (Some(_), false) => tracing::warn!("traffic unknown (said once until a reading works): {why}"),
                    (Some(_), true) => {}
                }
                self.last = Some((at_unix_ms, Some(why)));
            }
        }
    }

    /// Forgets what no series counts any more and did not move within the history (a resource
    /// gone, and Envoy restarted since): nothing looks back that far.
    fn forget_quiet_targets(&mut self) {
        let quiet: Vec<Target> = (self.counters.tallies().keys())
            .filter(|t| !self.counters.counts(t) && !self.history.moved(t))
            .cloned()
            .collect();
        for target in &quiet {
            self.counters.forget(target);
            self.history.forget(target);
        }
    }

    /// How the traffic reads now.
    pub fn reading(&self) -> Reading {
        match (&self.source, &self.last) {
            (None, _) => Reading::Off,
            (Some(_), None) => Reading::Waiting,
            (Some(_), Some((_, Some(_)))) => Reading::Unknown,
            (Some(_), Some((_, None))) if self.history.total(LAST_MINUTE).is_none() => Reading::Measuring,
            (Some(_), Some((_, None))) => Reading::Known,
        }
    }

    /// The `/status` field `traffic`.
    pub fn report(&self) -> Report {
        let state = self.reading();
        let rates_of = |target: &Target| rates(&self.history, target);
        let shown = state == Reading::Known;
        let resources = (self.history.newest().filter(|_| shown))
            .map(|point| point.tallies.keys().filter_map(|t| resource(t, rates_of(t)?)).collect())
            .unwrap_or_default();
        let special = |target: Target| {
            let counted = self.history.newest().is_some_and(|p| p.tallies.contains_key(&target));
            rates_of(&target).filter(|_| shown && counted)
        };
        Report {
            source: match self.source {
                Some((addr, every)) => format!("Envoy admin {addr} ({} every {} s)", STATS_PATH, every.as_secs_f64()),
                None => "none: give --envoy-admin ADDR:PORT (Envoy's admin API, with --ecds-file) to read the \
                         gateway's traffic per resource"
                    .to_owned(),
            },
            state,
            error: match &self.last {
                Some((_, Some(why))) => Some(format!("traffic unknown: {why}")),
                _ => None,
            },
            read_at_unix_ms: self.last.as_ref().map(|(at, _)| *at),
            total: (self
                .history
                .total(LAST_MINUTE)
                .zip(self.history.total(LAST_FIVE_MINUTES)))
            .filter(|_| shown)
            .map(|(minute, five)| Rates::of(minute, five)),
            resources,
            folded: special(Target::Folded),
            unrouted: special(Target::Unrouted),
        }
    }
}

/// Envoy's answer as the counter's series and their values.
fn series_of(text: &str) -> Result<std::collections::HashMap<counters::Series, f64>, String> {
    let samples = exposition::parse(text).map_err(|e| format!("Envoy's {STATS_PATH} does not parse: {e}"))?;
    counters::requests(&samples)
}

/// `target`'s rates over the last minute and the last five.
fn rates(history: &History, target: &Target) -> Option<Rates> {
    Some(Rates::of(
        history.rate(target, LAST_MINUTE)?,
        history.rate(target, LAST_FIVE_MINUTES)?,
    ))
}

/// A resource's entry; `None` for the special targets.
fn resource(target: &Target, rates: Rates) -> Option<ResourceTraffic> {
    match target {
        Target::Resource { kind, namespace, name } => Some(ResourceTraffic {
            kind: kind.clone(),
            namespace: namespace.clone(),
            name: name.clone(),
            rates,
        }),
        Target::Folded | Target::Unrouted => None,
    }
}

/// `/status` `traffic`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Where the traffic comes from (Envoy's admin address), or why there is none.
    pub source: String,
    /// How it reads now: `off`, `waiting`, `unknown`, `measuring` or `known`.
    pub state: Reading,
    /// `traffic unknown: <why>` while the last reading failed.
    pub error: Option<String>,
    /// When it was last read (or tried), in milliseconds since the Unix epoch.
    pub read_at_unix_ms: Option<u64>,
    /// Every request together (resources, `folded` and no rule's).
    pub total: Option<Rates>,
    /// Each resource with its own series.
    pub resources: Vec<ResourceTraffic>,
    /// The resources beyond the gateway's `--metrics-max-resources`, together.
    pub folded: Option<Rates>,
    /// The requests no rule took.
    pub unrouted: Option<Rates>,
}

/// One resource's traffic.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceTraffic {
    /// Its kind.
    pub kind: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its rates.
    #[serde(flatten)]
    pub rates: Rates,
}

/// Rates over the last minute, and over the last five in `five_minutes` (each over what the
/// history covers so far, `window_seconds`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rates {
    /// Over the last minute.
    #[serde(flatten)]
    pub last_minute: Rate,
    /// Over the last five minutes.
    pub five_minutes: Rate,
}

impl Rates {
    fn of(last_minute: Rate, five_minutes: Rate) -> Rates {
        Rates {
            last_minute: rounded(last_minute),
            five_minutes: rounded(five_minutes),
        }
    }
}

/// `rate` with figures a person reads: thousandths of a request per second, tenths of a percent.
fn rounded(rate: Rate) -> Rate {
    let to = |x: f64, scale: f64| (x * scale).round() / scale;
    Rate {
        requests_per_second: to(rate.requests_per_second, 1e3),
        errors_per_second: to(rate.errors_per_second, 1e3),
        error_rate: rate.error_rate.map(|r| to(r, 1e4)),
        window_seconds: to(rate.window_seconds, 10.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADMIN: &str = "127.0.0.1:9901";

    fn line(kind: &str, namespace: &str, resource: &str, class: &str, value: u64) -> String {
        format!(
            "switchyard_resource_requests_total{{kind=\"{kind}\",namespace=\"{namespace}\",resource=\"{resource}\",backend=\"b\",status_class=\"{class}\"}} {value}\n"
        )
    }

    /// Envoy's answer when `api` has counted `ok` 2xx and `failed` 5xx, `folded` 2xx `n`, none `n`.
    fn answer(ok: u64, failed: u64, n: u64) -> Result<String, String> {
        Ok("# TYPE switchyard_resource_requests_total counter\n".to_owned()
            + &line("Ingress", "shop", "api", "2xx", ok)
            + &line("Ingress", "shop", "api", "5xx", failed)
            + &line("folded", "folded", "folded", "2xx", n)
            + &line("none", "none", "none", "4xx", n))
    }

    fn traffic() -> Traffic {
        Traffic::from_envoy(ADMIN.parse().unwrap(), POLL_EVERY)
    }

    fn json(traffic: &Traffic) -> serde_json::Value {
        serde_json::to_value(traffic.report()).unwrap()
    }

    #[test]
    fn without_a_source_the_report_says_how_to_get_one() {
        let report = json(&Traffic::default());
        assert_eq!(report["state"], "off");
        assert!(report["source"].as_str().unwrap().contains("--envoy-admin"), "{report}");
        assert_eq!(report["resources"], serde_json::json!([]));
        assert_eq!(report["total"], serde_json::Value::Null);
    }

    #[test]
    fn rates_per_resource_over_the_readings_with_folded_and_unrouted_apart() {
        let mut traffic = traffic();
        assert_eq!(traffic.reading(), Reading::Waiting);
        traffic.read(0.0, 1_000, answer(1000, 10, 5));
        assert_eq!(traffic.reading(), Reading::Measuring);
        assert_eq!(json(&traffic)["resources"], serde_json::json!([]));
        traffic.read(10.0, 11_000, answer(1090, 20, 25));
        assert_eq!(traffic.reading(), Reading::Known);
        let report = json(&traffic);
        assert_eq!(
            report["source"],
            format!("Envoy admin {ADMIN} ({STATS_PATH} every 10 s)")
        );
        assert_eq!(report["read_at_unix_ms"], 11_000);
        assert_eq!(
            report["resources"],
            serde_json::json!([{
                "kind": "Ingress", "namespace": "shop", "name": "api",
                "requests_per_second": 10.0, "errors_per_second": 1.0, "error_rate": 0.1, "window_seconds": 10.0,
                "five_minutes": {"requests_per_second": 10.0, "errors_per_second": 1.0, "error_rate": 0.1, "window_seconds": 10.0}
            }])
        );
        assert_eq!(report["folded"]["requests_per_second"], 2.0);
        assert_eq!(report["folded"]["error_rate"], 0.0);
        assert_eq!(report["unrouted"]["requests_per_second"], 2.0);
        assert_eq!(report["total"]["requests_per_second"], 14.0);
        assert_eq!(report["total"]["errors_per_second"], 1.0);
        // 10 of 140, to a hundredth of a percent.
        assert_eq!(report["total"]["error_rate"], 0.0714);
    }

    #[test]
    fn a_failed_reading_is_unknown_with_why_not_zero_and_the_next_one_counts_over_the_gap() {
        let mut traffic = traffic();
        traffic.read(0.0, 0, answer(0, 0, 0));
        traffic.read(10.0, 10_000, answer(100, 0, 0));
        traffic.read(20.0, 20_000, Err(format!("Envoy admin {ADMIN}: Connection refused")));
        let report = json(&traffic);
        assert_eq!(report["state"], "unknown");
        assert_eq!(
            report["error"],
            format!("traffic unknown: Envoy admin {ADMIN}: Connection refused")
        );
        assert_eq!(report["resources"], serde_json::json!([]));
        assert_eq!(report["total"], serde_json::Value::Null);
        assert_eq!(report["read_at_unix_ms"], 20_000);
        // Envoy restarted meanwhile: its counters start again from zero.
        traffic.read(30.0, 30_000, answer(40, 20, 0));
        let report = json(&traffic);
        assert_eq!(report["state"], "known");
        assert_eq!(report["error"], serde_json::Value::Null);
        // The minute covers 0 s to 30 s: 100 requests, then 60 after the restart.
        assert_eq!(report["resources"][0]["window_seconds"], 30.0);
        assert_eq!(report["resources"][0]["requests_per_second"], 5.333);
        assert_eq!(report["resources"][0]["error_rate"], 0.125);
    }

    #[test]
    fn an_answer_that_does_not_parse_is_unknown_with_the_line() {
        let mut traffic = traffic();
        traffic.read(
            0.0,
            0,
            Ok("switchyard_resource_requests_total{kind=\"Ingress} 1\n".to_owned()),
        );
        assert_eq!(
            json(&traffic)["error"],
            format!(
                "traffic unknown: Envoy's {STATS_PATH} does not parse: line 1: label kind: the quoted value does not end"
            )
        );
    }

    #[test]
    fn a_resource_gone_is_forgotten_once_the_history_no_longer_sees_it_move() {
        let mut traffic = traffic();
        traffic.read(0.0, 0, answer(0, 0, 0));
        traffic.read(10.0, 0, answer(50, 0, 0));
        // Envoy restarted and the Ingress is gone: no series of it any more.
        let others = |n: u64| Ok(line("folded", "folded", "folded", "2xx", n));
        traffic.read(20.0, 0, others(1));
        let names = |t: &Traffic| json(t)["resources"].as_array().unwrap().len();
        assert_eq!(names(&traffic), 1, "it moved within the history");
        let mut at = 30.0;
        while at <= 20.0 + LAST_FIVE_MINUTES + 10.0 {
            traffic.read(at, 0, others(1));
            at += 10.0;
        }
        assert_eq!(names(&traffic), 0, "{}", json(&traffic));
    }
}
