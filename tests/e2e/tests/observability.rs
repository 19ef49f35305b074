//! Which Ingress served this request (issue "Which Ingress served this request"), through a real
//! Envoy in both filter forms: the access log of `envoy.yaml` and `deploy/`
//! ([`switchyard_e2e::ACCESS_LOG_FORMAT`]) names the rule that won each request (and so its resource),
//! from the filter state the filter leaves, and says `none` for a request no rule took; Envoy's
//! Prometheus endpoint counts each resource's requests (`switchyard_table::metrics`).
//!
//! Needs `ENVOY_BIN`, the filter and the module (`make test-envoy` sets them).

use std::collections::BTreeMap;

use switchyard_cases::rule;
use switchyard_e2e::table::table;
use switchyard_e2e::{eventually, get, send, ConfigForm, Envoy, FilterForm};
use switchyard_table::metrics::{DURATION, FOLDED_RESOURCES, REQUESTS, REQUEST_LABELS};

#[test]
fn the_access_log_names_the_rule_that_won_and_none_when_no_rule_did() {
    let rules = vec![
        rule("Ingress/shop/api#0")
            .host("api.example")
            .prefix("/")
            .to("shop/api:80"),
        rule("Ingress/shop/web#1")
            .host("web.example")
            .prefix("/")
            .to("shop/web:80"),
    ];
    let table = table("observability", rules);
    for form in [FilterForm::Wasm, FilterForm::Module] {
        let envoy = Envoy::start_logged(&table, &["shop/api:80", "shop/web:80"], form);
        for (host, path) in [("api.example", "/a"), ("web.example", "/b"), ("nobody.example", "/c")] {
            envoy.send(&get(host, path));
        }
        let lines = envoy.access_log(&[" /a ", " /b ", " /c "]);
        let line = |path: &str| {
            (lines.iter())
                .find(|l| l.contains(&format!(" {path} ")))
                .unwrap_or_else(|| panic!("{form:?}: no line for {path} in {lines:?}"))
                .clone()
        };
        let api = line("/a");
        assert!(
            api.contains("rule=Ingress/shop/api#0 upstream=shop/api:80"),
            "{form:?}: {api}"
        );
        assert!(api.contains(" 200 "), "{form:?}: {api}");
        assert!(line("/b").contains("rule=Ingress/shop/web#1 upstream="), "{form:?}");
        let nobody = line("/c");
        assert!(
            nobody.contains("rule=none upstream=") && nobody.contains(" 404 "),
            "{form:?}: {nobody}"
        );
    }
}

/// The samples of `metric` in Envoy's `/stats/prometheus`, each as its labels (`name="value"`,
/// sorted) and value; not the harness's probe rules' (kind `Probe`), whose requests the wasm
/// filter may hand Envoy at any tick.
fn samples(envoy: &Envoy, metric: &str) -> BTreeMap<String, u64> {
    let text = send(envoy.admin, &get("admin", "/stats/prometheus")).unwrap().body;
    (text.lines())
        .filter_map(|line| {
            let rest = line.strip_prefix(metric)?.strip_prefix('{')?;
            if rest.contains("kind=\"Probe\"") {
                return None;
            }
            let (labels, value) = rest.rsplit_once("} ")?;
            let mut labels: Vec<&str> = labels.split(',').collect();
            labels.sort();
            Some((labels.join(","), value.trim().parse().ok()?))
        })
        .collect()
}

/// What `metric`'s samples grew by since `before` (the harness's own probe requests, sent while
/// Envoy starts, are in `before`), the series that did not grow left out.
fn grown(envoy: &Envoy, metric: &str, before: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    (samples(envoy, metric).into_iter())
        .map(|(labels, value)| {
            let grown = value - before.get(&labels).copied().unwrap_or(0);
            (labels, grown)
        })
        .filter(|(_, grown)| *grown > 0)
        .collect()
}

/// The lines of Envoy's stats that name our metrics, for a failure's message.
fn ours(envoy: &Envoy) -> String {
    let text = send(envoy.admin, &get("admin", "/stats/prometheus")).unwrap().body;
    text.lines()
        .filter(|l| l.contains("switchyard_resource"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// [`grown`], once its series add up to `total` (both filter forms hand Envoy their counts every
/// second), or as they are after 20 s.
fn settled(envoy: &Envoy, metric: &str, before: &BTreeMap<String, u64>, total: u64) -> BTreeMap<String, u64> {
    eventually(
        || grown(envoy, metric, before),
        |grown| grown.values().sum::<u64>() >= total,
    )
}

/// The labels of a [`REQUESTS`] series (kind, namespace, resource, backend, status class), as
/// [`samples`] keys them.
fn requests_of(values: [&str; 5]) -> String {
    labels(&REQUEST_LABELS.into_iter().zip(values).collect::<Vec<_>>())
}

/// The labels of a series, as [`samples`] keys them.
fn labels(pairs: &[(&str, &str)]) -> String {
    let mut labels: Vec<String> = pairs.iter().map(|(n, v)| format!("{n}=\"{v}\"")).collect();
    labels.sort();
    labels.join(",")
}

/// Envoy's Prometheus endpoint after known traffic (issue "Which Ingress served this request"):
/// each Ingress's requests by backend and status class and its durations, a request no rule took
/// as `none`, a redirect as `direct`; in both filter forms, under the same names and labels.
#[test]
fn prometheus_counts_each_resources_requests_by_backend_and_status_class_in_both_forms() {
    let rules = vec![
        rule("Ingress/shop/api#0")
            .host("api.example")
            .prefix("/")
            .to("shop/api:80"),
        rule("Ingress/blog/web#0")
            .host("web.example")
            .prefix("/")
            .to("blog/gone:80"),
        rule("Ingress/blog/old#0")
            .host("old.example")
            .prefix("/")
            .action(serde_json::json!({ "redirect": { "url": "https://web.example/", "status": 301 } })),
    ];
    let table = table("metrics", rules);
    for form in [FilterForm::Wasm, FilterForm::Module] {
        // No cluster blog/gone:80 in Envoy: its requests are answered 503.
        let envoy = Envoy::start_logged(&table, &["shop/api:80"], form);
        let (before, durations_before) = (samples(&envoy, REQUESTS), samples(&envoy, &format!("{DURATION}_count")));
        let sent = [
            ("api.example", 3),
            ("web.example", 2),
            ("old.example", 1),
            ("nobody.example", 1),
        ];
        for (host, times) in sent {
            for _ in 0..times {
                envoy.send(&get(host, "/x"));
            }
        }
        let requests = settled(&envoy, REQUESTS, &before, 7);
        let expected = BTreeMap::from([
            (requests_of(["Ingress", "shop", "api", "shop/api:80", "2xx"]), 3),
            (requests_of(["Ingress", "blog", "web", "blog/gone:80", "5xx"]), 2),
            (requests_of(["Ingress", "blog", "old", "direct", "3xx"]), 1),
            (requests_of(["none", "none", "none", "none", "4xx"]), 1),
        ]);
        assert_eq!(requests, expected, "{form:?}: each series, and nothing else counted");
        let api = labels(&[("kind", "Ingress"), ("namespace", "shop"), ("resource", "api")]);
        let durations = settled(&envoy, &format!("{DURATION}_count"), &durations_before, 7);
        assert_eq!(durations.get(&api), Some(&3), "{form:?}: {durations:#?}");
        // The histogram's sum is a series in both forms (for requests of under a millisecond, a
        // sum of zeros: `Tally::moved` always hands it over).
        let sums = samples(&envoy, &format!("{DURATION}_sum"));
        assert!(sums.contains_key(&api), "{form:?}: {sums:#?}");
        let folded = samples(&envoy, FOLDED_RESOURCES);
        assert_eq!(
            folded,
            BTreeMap::from([(String::new(), 0)]),
            "{form:?}: no resource is folded"
        );
    }
}

/// Beyond the table's limit of series (`--metrics-max-resources`, the table's `metrics_fold`), a
/// resource's requests are counted as `folded`, and the gauge says how many resources are.
#[test]
fn resources_beyond_the_limit_are_counted_together_as_folded() {
    let rules = vec![
        rule("VirtualServer/a/first#0")
            .host("first.example")
            .prefix("/")
            .to("a/first:80"),
        rule("VirtualServer/b/second#0")
            .host("second.example")
            .prefix("/")
            .to("a/first:80"),
        rule("VirtualServer/c/third#0")
            .host("third.example")
            .prefix("/")
            .to("a/first:80"),
    ];
    let mut table: serde_json::Value = serde_json::from_str(&table("fold", rules)).unwrap();
    // The harness's probe rules (kind `Probe`) sort before these: they keep series of their own.
    table["metrics_fold"] = serde_json::json!({ "last_own": "VirtualServer/a/first", "folded": 2 });
    let table = table.to_string();
    for form in [FilterForm::Wasm, FilterForm::Module] {
        let envoy = Envoy::start_logged(&table, &["a/first:80"], form);
        let before = samples(&envoy, REQUESTS);
        for host in ["first.example", "second.example", "third.example"] {
            assert_eq!(envoy.send(&get(host, "/")).status, 200, "{form:?}: {host}");
        }
        let requests = settled(&envoy, REQUESTS, &before, 3);
        let own = requests_of(["VirtualServer", "a", "first", "a/first:80", "2xx"]);
        let folded = requests_of(["folded", "folded", "folded", "folded", "2xx"]);
        let expected = BTreeMap::from([(own, 1), (folded, 2)]);
        assert_eq!(requests, expected, "{form:?}\n{}", ours(&envoy));
        let text = send(envoy.admin, &get("admin", "/stats/prometheus")).unwrap().body;
        assert!(
            text.lines()
                .any(|l| l == format!("{FOLDED_RESOURCES}{{}} 2") || l == format!("{FOLDED_RESOURCES} 2")),
            "{form:?}: {}",
            text.lines()
                .filter(|l| l.contains("folded"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// Both forms count in their own memory and hand Envoy the sums every second: a push that replaces
/// the filter's configuration right after some requests (before the old configuration's flush)
/// loses none of them, the next configuration's flush hands them over. Fails if a form's counts
/// went with the configuration that counted them.
#[test]
fn a_push_right_after_requests_loses_none_of_their_counts() {
    let rules = vec![rule("Ingress/shop/api#0")
        .host("api.example")
        .prefix("/")
        .to("shop/api:80")];
    let (first, second) = (table("before-push", rules.clone()), table("after-push", rules));
    for form in [FilterForm::Wasm, FilterForm::Module] {
        let envoy = Envoy::start_logged(&first, &["shop/api:80"], form);
        let before = samples(&envoy, REQUESTS);
        for _ in 0..5 {
            assert_eq!(envoy.send(&get("api.example", "/")).status, 200, "{form:?}");
        }
        assert!(
            envoy.update_table(&second, ConfigForm::StringValue),
            "{form:?}: the push"
        );
        let requests = settled(&envoy, REQUESTS, &before, 5);
        let expected = BTreeMap::from([(requests_of(["Ingress", "shop", "api", "shop/api:80", "2xx"]), 5)]);
        assert_eq!(requests, expected, "{form:?}\n{}", ours(&envoy));
    }
}
