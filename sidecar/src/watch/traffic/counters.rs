//! From Envoy's counters to running tallies per resource.
//!
//! `switchyard_resource_requests_total{kind,namespace,resource,backend,status_class}` has one series
//! per resource, backend and status class, and every Envoy restart sets them all back to zero.
//! [`Counters::add`] turns each reading into what each series counted since the reading before, as
//! Prometheus' `increase` does:
//!
//! - a series lower than it was has been reset: it counted its whole value since;
//! - a series that was not there at the reading before is new (Envoy creates a counter at its first
//!   request, and after a restart): it counted its whole value since, too;
//! - on the very first reading every series is a starting point, counted as nothing (its value
//!   covers Envoy's whole life, not the last seconds);
//! - a series missing from a reading is forgotten (Envoy restarted and it has not counted since):
//!   when it comes back it is new.
//!
//! Those increases are summed per [`Target`] (the resource, or all `folded` resources, or requests
//! no rule took) into a [`Tally`] that only grows, which [`super::window`] turns into rates.

use std::collections::{BTreeMap, HashMap};

use super::exposition::Sample;

/// The counter Envoy's admin API is asked for.
pub const REQUESTS: &str = "switchyard_resource_requests_total";

/// The `status_class` of the responses counted as errors.
pub const ERROR_CLASS: &str = "5xx";

/// Whose requests a series counts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// The resource whose rule won.
    Resource {
        /// `Ingress`, `HTTPProxy`, ...
        kind: String,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// Resources beyond the gateway's `--metrics-max-resources`, counted together (`folded`).
    Folded,
    /// Requests no rule took (`none`: the filter's 404, or `no_route: pass`).
    Unrouted,
}

impl std::fmt::Display for Target {
    /// `Kind/namespace/name` (the access log's `resource=`), `folded`, or `none`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Resource { kind, namespace, name } => write!(f, "{kind}/{namespace}/{name}"),
            Target::Folded => f.write_str("folded"),
            Target::Unrouted => f.write_str("none"),
        }
    }
}

/// One series of [`REQUESTS`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Series {
    /// Whose requests it counts.
    pub target: Target,
    /// The cluster the rule sends to, or `direct`.
    pub backend: String,
    /// `1xx` … `5xx`, or `0xx`.
    pub status_class: String,
}

/// Requests and errors counted for one target since the watch first read Envoy; only grows.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    /// Requests.
    pub requests: f64,
    /// Of which answered with a 5xx.
    pub errors: f64,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.requests += other.requests;
        self.errors += other.errors;
    }
}

/// The series of [`REQUESTS`] in `samples`, with their values (the same series twice is summed);
/// `Err` for a series without one of the contract's labels or with a value that is not a count.
pub fn requests(samples: &[Sample]) -> Result<HashMap<Series, f64>, String> {
    let mut series = HashMap::new();
    for sample in samples.iter().filter(|s| s.name == REQUESTS) {
        let (one, value) = series_of(sample)?;
        *series.entry(one).or_insert(0.0) += value;
    }
    Ok(series)
}

/// One sample of [`REQUESTS`] as a series and its value.
fn series_of(sample: &Sample) -> Result<(Series, f64), String> {
    let label = |name: &str| {
        sample
            .label(name)
            .map(str::to_owned)
            .ok_or_else(|| format!("{REQUESTS} without the label {name}"))
    };
    let (kind, namespace, name) = (label("kind")?, label("namespace")?, label("resource")?);
    let series = Series {
        target: target(kind, namespace, name),
        backend: label("backend")?,
        status_class: label("status_class")?,
    };
    if !(sample.value.is_finite() && sample.value >= 0.0) {
        return Err(format!(
            "{REQUESTS} of {} is {}, not a count",
            series.target, sample.value
        ));
    }
    Ok((series, sample.value))
}

/// The target of a series' labels: `none` and `folded` in all three are the special series.
fn target(kind: String, namespace: String, name: String) -> Target {
    let all = |word: &str| kind == word && namespace == word && name == word;
    if all("none") {
        Target::Unrouted
    } else if all("folded") {
        Target::Folded
    } else {
        Target::Resource { kind, namespace, name }
    }
}

/// What the series counted since the reading before, summed per target, and the running tallies.
#[derive(Debug, Default)]
pub struct Counters {
    /// Each series' value at the last reading; `None` before the first.
    last: Option<HashMap<Series, f64>>,
    /// Each target's running tally.
    tallies: BTreeMap<Target, Tally>,
}

impl Counters {
    /// Adds the reading `now` (each series and its value) to the tallies.
    pub fn add(&mut self, now: HashMap<Series, f64>) {
        for (series, value) in &now {
            let before = match &self.last {
                None => Some(*value),
                Some(last) => last.get(series).copied(),
            };
            let counted = increase(before, *value);
            let error = series.status_class == ERROR_CLASS;
            let tally = self.tallies.entry(series.target.clone()).or_default();
            tally.add(Tally {
                requests: counted,
                errors: if error { counted } else { 0.0 },
            });
        }
        self.last = Some(now);
    }

    /// Each target's running tally.
    pub fn tallies(&self) -> &BTreeMap<Target, Tally> {
        &self.tallies
    }

    /// Whether any series of the last reading counts `target`.
    pub fn counts(&self, target: &Target) -> bool {
        (self.last.iter().flatten()).any(|(series, _)| series.target == *target)
    }

    /// Forgets `target`'s tally (it has not counted for longer than anything looks back).
    pub fn forget(&mut self, target: &Target) {
        self.tallies.remove(target);
    }
}

/// What a counter counted between `before` (its value at the reading before; `None`: it was not
/// there) and `now`.
fn increase(before: Option<f64>, now: f64) -> f64 {
    match before {
        Some(before) if now >= before => now - before,
        // Reset since (Envoy restarted), or new: counted from zero.
        Some(_) | None => now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::traffic::exposition::parse;

    fn line(kind: &str, namespace: &str, resource: &str, backend: &str, class: &str, value: u64) -> String {
        format!(
            "{REQUESTS}{{kind=\"{kind}\",namespace=\"{namespace}\",resource=\"{resource}\",backend=\"{backend}\",status_class=\"{class}\"}} {value}\n"
        )
    }

    fn reading(text: &str) -> HashMap<Series, f64> {
        requests(&parse(text).unwrap()).unwrap()
    }

    fn api() -> Target {
        Target::Resource {
            kind: "Ingress".into(),
            namespace: "shop".into(),
            name: "api".into(),
        }
    }

    fn tally(counters: &Counters, target: &Target) -> (f64, f64) {
        let t = counters.tallies().get(target).copied().unwrap_or_default();
        (t.requests, t.errors)
    }

    #[test]
    fn the_first_reading_is_a_starting_point_and_the_next_counts_the_difference() {
        let mut counters = Counters::default();
        counters.add(reading(
            &(line("Ingress", "shop", "api", "shop/api_80", "2xx", 100)
                + &line("Ingress", "shop", "api", "shop/api_80", "5xx", 7)),
        ));
        assert_eq!(tally(&counters, &api()), (0.0, 0.0));
        counters.add(reading(
            &(line("Ingress", "shop", "api", "shop/api_80", "2xx", 130)
                + &line("Ingress", "shop", "api", "shop/api_80", "5xx", 12)),
        ));
        assert_eq!(tally(&counters, &api()), (35.0, 5.0));
    }

    #[test]
    fn a_counter_lower_than_before_was_reset_and_counted_its_whole_value() {
        let mut counters = Counters::default();
        counters.add(reading(&line("Ingress", "shop", "api", "b", "2xx", 500)));
        counters.add(reading(&line("Ingress", "shop", "api", "b", "2xx", 520)));
        // Envoy restarted: 520 → 4 is 4 requests, not -516.
        counters.add(reading(&line("Ingress", "shop", "api", "b", "2xx", 4)));
        assert_eq!(tally(&counters, &api()), (24.0, 0.0));
    }

    #[test]
    fn a_series_missing_from_a_reading_counts_from_zero_when_it_comes_back() {
        let mut counters = Counters::default();
        let both = line("Ingress", "shop", "api", "b", "2xx", 50) + &line("Ingress", "shop", "api", "b", "5xx", 40);
        counters.add(reading(&both));
        // Envoy restarted; only the 2xx series has counted since.
        counters.add(reading(&line("Ingress", "shop", "api", "b", "2xx", 3)));
        assert_eq!(tally(&counters, &api()), (3.0, 0.0));
        assert!(counters.counts(&api()));
        // The 5xx series comes back at 45, above its old 40: all 45 are new.
        counters.add(reading(&both.replace("} 40", "} 45")));
        assert_eq!(tally(&counters, &api()), (3.0 + 47.0 + 45.0, 45.0));
    }

    #[test]
    fn a_series_new_after_the_first_reading_counts_its_whole_value() {
        let mut counters = Counters::default();
        counters.add(reading(&line("Ingress", "shop", "api", "b", "2xx", 10)));
        counters.add(reading(
            &(line("Ingress", "shop", "api", "b", "2xx", 10) + &line("Ingress", "shop", "api", "b", "5xx", 2)),
        ));
        assert_eq!(tally(&counters, &api()), (2.0, 2.0));
    }

    #[test]
    fn folded_and_unrouted_are_targets_of_their_own_and_backends_add_up() {
        let mut counters = Counters::default();
        let text = |n: u64| {
            line("none", "none", "none", "none", "4xx", n)
                + &line("folded", "folded", "folded", "folded", "2xx", 2 * n)
                + &line("folded", "folded", "folded", "folded", "5xx", n)
                + &line("Ingress", "shop", "api", "shop/api_80", "2xx", n)
                + &line("Ingress", "shop", "api", "shop/api-canary_80", "2xx", n)
                // A resource may be named `none`: only all three labels `none` are no rule's.
                + &line("Ingress", "none", "none", "none_80", "2xx", n)
        };
        counters.add(reading(&text(1)));
        counters.add(reading(&text(11)));
        assert_eq!(tally(&counters, &Target::Unrouted), (10.0, 0.0));
        assert_eq!(tally(&counters, &Target::Folded), (30.0, 10.0));
        assert_eq!(tally(&counters, &api()), (20.0, 0.0));
        let named_none = Target::Resource {
            kind: "Ingress".into(),
            namespace: "none".into(),
            name: "none".into(),
        };
        assert_eq!(tally(&counters, &named_none), (10.0, 0.0));
    }

    #[test]
    fn other_metrics_are_ignored_and_escaped_label_values_kept() {
        let text = "switchyard_resources_folded 2\n\
                    switchyard_resource_request_duration_milliseconds_count{kind=\"Ingress\",namespace=\"shop\",resource=\"api\"} 9\n"
            .to_owned()
            + "switchyard_resource_requests_total{kind=\"HTTPProxy\",namespace=\"a\\\"b\",resource=\"c\\\\d\",backend=\"x\",status_class=\"2xx\"} 5\n";
        let series = reading(&text);
        assert_eq!(series.len(), 1);
        let (only, value) = series.into_iter().next().unwrap();
        assert_eq!(
            only.target,
            Target::Resource {
                kind: "HTTPProxy".into(),
                namespace: "a\"b".into(),
                name: "c\\d".into()
            }
        );
        assert_eq!(value, 5.0);
    }

    #[test]
    fn a_series_without_a_label_of_the_contract_or_with_a_negative_count_is_refused() {
        let without = format!("{REQUESTS}{{kind=\"Ingress\",namespace=\"shop\",resource=\"api\",backend=\"b\"}} 1\n");
        assert_eq!(
            requests(&parse(&without).unwrap()).unwrap_err(),
            format!("{REQUESTS} without the label status_class")
        );
        let negative = line("Ingress", "shop", "api", "b", "2xx", 1).replace("} 1", "} -1");
        assert!(requests(&parse(&negative).unwrap())
            .unwrap_err()
            .ends_with("is -1, not a count"));
        let nan = line("Ingress", "shop", "api", "b", "2xx", 1).replace("} 1", "} NaN");
        assert!(requests(&parse(&nan).unwrap())
            .unwrap_err()
            .ends_with("is NaN, not a count"));
    }
}
