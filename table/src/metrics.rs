//! The per-resource request metrics' vocabulary (docs/operations.md, "Per-resource request
//! metrics"): what both filter forms count in Envoy's stats, under which names and labels, and
//! whose requests a series counts ([`Series`]; beyond the gateway's limit, [`MetricsFold`]).
//!
//! The native module hands Envoy the labels as tags. The wasm filter's ABI has no tags: it writes
//! them into the stat's name ([`wasm_stat_name`]: `kind=.=Ingress;.;…;.;switchyard_resource_requests_total`,
//! the encoding Istio's stats use) and the bootstrap's `stats_config.stats_tags` ([`stats_tags`])
//! takes them out again. Both forms then print the same series at `/stats/prometheus`.

use std::collections::BTreeSet;

use crate::format::{MetricsFold, RuleSpec, NO_RULE};

/// Requests, by resource, backend and status class (a counter).
pub const REQUESTS: &str = "switchyard_resource_requests_total";
/// Each request's duration in milliseconds, by resource (a histogram).
pub const DURATION: &str = "switchyard_resource_request_duration_milliseconds";
/// How many resources are counted as [`FOLDED`] (a gauge).
pub const FOLDED_RESOURCES: &str = "switchyard_resources_folded";
/// How often both filter forms hand Envoy the counts they keep in their own memory (the wasm
/// filter on its VM's tick, the module from a thread of its own): a scrape sees a request within
/// this (Envoy's own histograms lag by its stats flush, 5 s by default).
pub const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The labels of [`REQUESTS`], in the order [`Series::labels`] and the status class give them.
pub const REQUEST_LABELS: [&str; 5] = ["kind", "namespace", "resource", "backend", "status_class"];
/// The labels of [`DURATION`]: the resource's three.
pub const DURATION_LABELS: [&str; 3] = ["kind", "namespace", "resource"];
/// The label of a duration bucket's upper bound (the wasm filter's buckets are counters).
pub const BUCKET_LABEL: &str = "le";

/// The upper bounds of the duration's buckets, in milliseconds: Envoy's default histogram buckets,
/// as its Prometheus output writes them (`le`), then `+Inf`.
pub const DURATION_BUCKETS: [(&str, u64); 20] = [
    ("0.5", 0),
    ("1", 1),
    ("5", 5),
    ("10", 10),
    ("25", 25),
    ("50", 50),
    ("100", 100),
    ("250", 250),
    ("500", 500),
    ("1000", 1_000),
    ("2500", 2_500),
    ("5000", 5_000),
    ("10000", 10_000),
    ("30000", 30_000),
    ("60000", 60_000),
    ("300000", 300_000),
    ("600000", 600_000),
    ("1800000", 1_800_000),
    ("3600000", 3_600_000),
    ("+Inf", u64::MAX),
];

/// The index in [`DURATION_BUCKETS`] of the first bucket a duration of `ms` whole milliseconds
/// falls in (`0.5` holds 0 ms only).
pub fn duration_bucket(ms: u64) -> usize {
    DURATION_BUCKETS.partition_point(|(_, bound)| *bound < ms)
}

/// Every label of a series counted together beyond the limit.
pub const FOLDED: &str = "folded";
/// The backend of a rule that answers itself (a redirect, a direct response).
pub const DIRECT: &str = "direct";

/// The status classes, by [`status_class`]: `0xx` is a request that got no response (the client
/// went away first).
pub const STATUS_CLASSES: [&str; 6] = ["0xx", "1xx", "2xx", "3xx", "4xx", "5xx"];

/// The index in [`STATUS_CLASSES`] of response code `code` (`0xx` for none or one out of range).
pub fn status_class(code: u64) -> usize {
    match code {
        100..=599 => (code / 100) as usize,
        _ => 0,
    }
}

/// Whose requests a series counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Series<'a> {
    /// A resource's requests to one backend (`None`: the rule answers itself).
    Resource {
        /// `Kind/namespace/name`.
        resource: &'a str,
        /// The cluster the rule sent the request to.
        backend: Option<&'a str>,
    },
    /// The requests of every resource beyond the limit.
    Folded,
    /// The requests no rule took (labels all [`NO_RULE`]).
    Unrouted,
}

impl<'a> Series<'a> {
    /// The series of a request won by rule `rule` (its name) sending it to `backend`, under the
    /// table's `fold`.
    pub fn of(rule: &'a str, backend: Option<&'a str>, fold: Option<&MetricsFold>) -> Series<'a> {
        let resource = resource_of(rule);
        match fold {
            Some(fold) if fold.folds(resource) => Series::Folded,
            _ => Series::Resource { resource, backend },
        }
    }

    /// Its `kind`, `namespace`, `resource` and `backend` labels. A rule name that is not
    /// `Kind/namespace/name#n` (a hand-written table's) is the `resource` alone.
    pub fn labels(&self) -> [&'a str; 4] {
        match *self {
            Series::Resource { resource, backend } => {
                let backend = backend.unwrap_or(DIRECT);
                let mut parts = resource.splitn(3, '/');
                match (parts.next(), parts.next(), parts.next()) {
                    (Some(kind), Some(namespace), Some(name)) => [kind, namespace, name, backend],
                    _ => ["", "", resource, backend],
                }
            }
            Series::Folded => [FOLDED; 4],
            Series::Unrouted => [NO_RULE; 4],
        }
    }
}

/// The resource of rule `name`: the name before its `#` (`Ingress/shop/api#0` → `Ingress/shop/api`).
pub fn resource_of(name: &str) -> &str {
    name.split_once('#').map_or(name, |(resource, _)| resource)
}

impl MetricsFold {
    /// The fold of a table of `rules` with at most `limit` resources' series: `None` when its
    /// resources fit.
    pub fn of(rules: &[RuleSpec], limit: usize) -> Option<MetricsFold> {
        let resources: BTreeSet<&str> = rules.iter().map(|rule| resource_of(&rule.name)).collect();
        let folded = resources.len().checked_sub(limit).filter(|&n| n > 0)?;
        let last_own = match limit {
            0 => String::new(),
            _ => (*resources.iter().nth(limit - 1)?).to_owned(),
        };
        Some(MetricsFold {
            last_own,
            folded: u32::try_from(folded).unwrap_or(u32::MAX),
        })
    }

    /// Whether the requests of `resource` (`Kind/namespace/name`) are counted as [`FOLDED`].
    pub fn folds(&self, resource: &str) -> bool {
        resource > self.last_own.as_str()
    }
}

/// The name the wasm filter defines the stat `metric` with `labels` under: each label as
/// `name=.=value;.;`, then the metric (a `;` in a value becomes `_`, so that no value ends its tag
/// early). The bootstrap's [`stats_tags`] turn the labels back into tags.
pub fn wasm_stat_name(metric: &str, labels: &[(&str, &str)]) -> String {
    let mut name = String::with_capacity(metric.len() + 24 * labels.len());
    for (label, value) in labels {
        name.push_str(label);
        name.push_str("=.=");
        name.extend(value.chars().map(|c| if c == ';' { '_' } else { c }));
        name.push_str(";.;");
    }
    name.push_str(metric);
    name
}

/// Every label the wasm filter writes into a stat's name: [`REQUEST_LABELS`] and [`BUCKET_LABEL`].
pub const TAGS: [&str; 6] = ["kind", "namespace", "resource", "backend", "status_class", BUCKET_LABEL];

/// The bootstrap's `stats_config.stats_tags` for the wasm filter's labels ([`TAGS`]): each label's
/// name and the regex that takes it out of a stat's name (Envoy removes the regex's first group
/// from the name and keeps the second as the tag's value).
pub fn stats_tags() -> Vec<(&'static str, String)> {
    TAGS.iter()
        .map(|label| (*label, format!(r"({label}=\.=(.*?);\.;)")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic;

    fn rules(names: &[&str]) -> Vec<RuleSpec> {
        let mut rules = synthetic::table(names.len()).rules;
        rules.truncate(names.len());
        for (rule, name) in rules.iter_mut().zip(names) {
            rule.name = (*name).to_owned();
        }
        rules
    }

    #[test]
    fn resources_past_the_limit_in_name_order_are_folded_and_counted() {
        let rules = rules(&["Ingress/b/x#0", "Ingress/a/y#0", "Ingress/a/y#1", "HTTPProxy/c/z#0"]);
        assert_eq!(MetricsFold::of(&rules, 3), None);
        let fold = MetricsFold::of(&rules, 2).unwrap();
        assert_eq!((fold.last_own.as_str(), fold.folded), ("Ingress/a/y", 1));
        assert!(!fold.folds("HTTPProxy/c/z") && !fold.folds("Ingress/a/y") && fold.folds("Ingress/b/x"));
        let none = MetricsFold::of(&rules, 0).unwrap();
        assert_eq!(none.folded, 3);
        assert!(none.folds("HTTPProxy/c/z"));
    }

    #[test]
    fn a_series_labels_its_resource_and_backend_or_says_folded_direct_or_none() {
        let fold = MetricsFold {
            last_own: "Ingress/a/y".to_owned(),
            folded: 1,
        };
        let api = Series::of("Ingress/a/y#3", Some("a/y_80"), Some(&fold));
        assert_eq!(api.labels(), ["Ingress", "a", "y", "a/y_80"]);
        assert_eq!(Series::of("Ingress/a/y#3", None, None).labels()[3], DIRECT);
        assert_eq!(Series::of("Ingress/b/x#0", Some("b/x_80"), Some(&fold)), Series::Folded);
        assert_eq!(Series::Folded.labels(), [FOLDED; 4]);
        assert_eq!(Series::Unrouted.labels(), [NO_RULE; 4]);
        assert_eq!(
            Series::of("hand-written", None, None).labels(),
            ["", "", "hand-written", DIRECT]
        );
    }

    #[test]
    fn status_codes_fall_into_their_class_and_no_response_is_0xx() {
        let classes: Vec<&str> = [0, 101, 200, 302, 404, 503, 600]
            .map(|c| STATUS_CLASSES[status_class(c)])
            .into();
        assert_eq!(classes, ["0xx", "1xx", "2xx", "3xx", "4xx", "5xx", "0xx"]);
    }

    #[test]
    fn a_duration_falls_in_the_first_bucket_whose_bound_holds_it() {
        let buckets: Vec<&str> = [0, 1, 2, 5, 6, 3_600_000, 3_600_001]
            .map(|ms| DURATION_BUCKETS[duration_bucket(ms)].0)
            .into();
        assert_eq!(buckets, ["0.5", "1", "5", "5", "10", "3600000", "+Inf"]);
    }

    #[test]
    fn each_label_is_written_in_the_name_so_that_its_stats_tag_takes_it_back() {
        let name = wasm_stat_name(REQUESTS, &[("kind", "Ingress"), ("backend", "a;b")]);
        assert_eq!(
            name,
            "kind=.=Ingress;.;backend=.=a_b;.;switchyard_resource_requests_total"
        );
        let tags = stats_tags();
        assert_eq!(tags.len(), REQUEST_LABELS.len() + 1);
        assert_eq!(tags[0], ("kind", r"(kind=\.=(.*?);\.;)".to_owned()));
    }
}
