//! deploy/grafana/switchyard.json asks only for what the filter exports: every metric a panel or a
//! template variable names is one of the per-resource metrics of docs/operations.md ("Per-resource
//! request metrics", the metrics' contract), a histogram through its `_bucket`, `_sum` and `_count`
//! series, and every label it matches or groups by is one of that metric's labels (`le` for a
//! bucket). So the dashboard and the contract cannot drift apart: a renamed metric or label fails
//! here until both agree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The workspace root (this crate is `tests/cases`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The heading of the contract's list in docs/operations.md.
const CONTRACT_HEADING: &str = "### Per-resource request metrics";

/// Each series name a query may use, with the labels it has.
type Contract = BTreeMap<String, BTreeSet<String>>;

/// The contract's metrics: the section's bullets that open with a metric in code,
/// `` - `name{label,...}` — counter|gauge|histogram``; a histogram gives its three series.
fn contract(operations: &str) -> Contract {
    let section = operations
        .split_once(CONTRACT_HEADING)
        .map(|(_, rest)| rest.split("\n#").next().unwrap_or(rest))
        .unwrap_or_else(|| panic!("docs/operations.md has no {CONTRACT_HEADING:?}"));
    let mut metrics = Contract::new();
    for bullet in section.lines().filter_map(|l| l.strip_prefix("- `")) {
        let (metric, rest) = bullet.split_once('`').expect("a metric in code");
        let (name, labels) = match metric.split_once('{') {
            Some((name, labels)) => (name, labels.trim_end_matches('}')),
            None => (metric, ""),
        };
        let labels: BTreeSet<String> = labels.split(',').filter(|l| !l.is_empty()).map(str::to_owned).collect();
        let kind = rest
            .trim_start_matches([' ', '—'])
            .split([' ', ':'])
            .next()
            .unwrap_or_default();
        match kind {
            "counter" | "gauge" => {
                metrics.insert(name.to_owned(), labels);
            }
            "histogram" => {
                let mut bucket = labels.clone();
                bucket.insert("le".to_owned());
                metrics.insert(format!("{name}_bucket"), bucket);
                metrics.insert(format!("{name}_sum"), labels.clone());
                metrics.insert(format!("{name}_count"), labels);
            }
            other => panic!("{name}: a counter, gauge or histogram, not {other:?}"),
        }
    }
    metrics
}

/// What one PromQL expression names.
#[derive(Debug, Default, PartialEq)]
struct Names {
    /// Each metric, with the labels its selector matches on.
    metrics: Vec<(String, Vec<String>)>,
    /// The labels of `by (...)`, `without (...)`, `on (...)`, `ignoring (...)`, `group_left (...)`,
    /// `group_right (...)`.
    grouped_by: Vec<String>,
}

/// Words of PromQL that are not metrics when they are not followed by `(` either.
const KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "offset",
    "bool",
    "and",
    "or",
    "unless",
];
/// PromQL's aggregation operators, which take their `by (...)` before or after their argument.
const AGGREGATIONS: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];
/// The keywords followed by a list of labels.
const LABEL_LISTS: &[&str] = &["by", "without", "on", "ignoring", "group_left", "group_right"];

/// The metrics and labels `expr` names: strings, durations (`[5m]`), numbers and Grafana's variables
/// (`$namespace`, `${datasource}`, `$__rate_interval`) skipped; a word followed by `(` is a function.
fn names(expr: &str) -> Names {
    let chars: Vec<char> = expr.chars().collect();
    let mut names = Names::default();
    let mut i = 0;
    let word_at = |i: usize| -> (String, usize) {
        let mut end = i;
        while end < chars.len() && (chars[end].is_ascii_alphanumeric() || chars[end] == '_' || chars[end] == ':') {
            end += 1;
        }
        (chars[i..end].iter().collect(), end)
    };
    let next_char = |mut i: usize| {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        (chars.get(i).copied(), i)
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i = skip_string(&chars, i);
        } else if c == '[' {
            i = chars[i..]
                .iter()
                .position(|&c| c == ']')
                .map_or(chars.len(), |p| i + p + 1);
        } else if c == '$' {
            i += 1;
            if chars.get(i) == Some(&'{') {
                i = chars[i..]
                    .iter()
                    .position(|&c| c == '}')
                    .map_or(chars.len(), |p| i + p + 1);
            } else {
                i = word_at(i).1;
            }
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let (word, end) = word_at(i);
            let (after, at) = next_char(end);
            i = end;
            if LABEL_LISTS.contains(&word.as_str()) && after == Some('(') {
                let close = chars[at..]
                    .iter()
                    .position(|&c| c == ')')
                    .map_or(chars.len(), |p| at + p);
                let list: String = chars[at + 1..close].iter().collect();
                names
                    .grouped_by
                    .extend(list.split(',').map(|l| l.trim().to_owned()).filter(|l| !l.is_empty()));
                i = close + 1;
            } else if after == Some('(') || KEYWORDS.contains(&word.as_str()) || AGGREGATIONS.contains(&word.as_str()) {
                // A function or an aggregation, or a keyword.
            } else if after == Some('{') {
                let (labels, end) = matchers(&chars, at);
                names.metrics.push((word, labels));
                i = end;
            } else {
                names.metrics.push((word, Vec::new()));
            }
        } else if c == '{' {
            // A selector without a metric name (`{__name__=~"..."}`): its labels name no metric.
            let (labels, end) = matchers(&chars, i);
            names.metrics.push((String::new(), labels));
            i = end;
        } else {
            i += 1;
        }
    }
    names
}

/// The end of the string literal opening at `start`.
fn skip_string(chars: &[char], start: usize) -> usize {
    let quote = chars[start];
    let mut i = start + 1;
    while i < chars.len() && chars[i] != quote {
        i += if chars[i] == '\\' && quote != '`' { 2 } else { 1 };
    }
    i + 1
}

/// The label names of the matchers in the braces opening at `open`, and where they close.
fn matchers(chars: &[char], open: usize) -> (Vec<String>, usize) {
    let mut labels = Vec::new();
    let mut i = open + 1;
    while i < chars.len() && chars[i] != '}' {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i = skip_string(chars, i);
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            labels.push(chars[start..i].iter().collect());
        } else {
            i += 1;
        }
    }
    (labels, i + 1)
}

/// Every query of the dashboard: `(where, PromQL)`, panels (rows' nested ones too) and variables.
fn queries(dashboard: &Value) -> Vec<(String, String)> {
    fn panels(list: &Value, out: &mut Vec<(String, String)>) {
        for panel in list.as_array().into_iter().flatten() {
            let title = panel["title"].as_str().unwrap_or("?");
            for target in panel["targets"].as_array().into_iter().flatten() {
                if let Some(expr) = target["expr"].as_str() {
                    out.push((format!("panel {title:?} {}", target["refId"]), expr.to_owned()));
                }
            }
            panels(&panel["panels"], out);
        }
    }
    let mut out = Vec::new();
    panels(&dashboard["panels"], &mut out);
    for variable in dashboard["templating"]["list"].as_array().into_iter().flatten() {
        if variable["type"] != "query" {
            continue;
        }
        let name = variable["name"].as_str().unwrap_or("?");
        for query in [&variable["definition"], &variable["query"], &variable["query"]["query"]] {
            if let Some(query) = query.as_str() {
                out.push((format!("variable {name}"), query.to_owned()));
            }
        }
    }
    out
}

/// What is wrong with `query` against `contract`: metrics not in it, labels the metrics do not
/// have. `label_values(selector, label)` (a variable's query) is a selector and one of its labels.
fn problems(query: &str, contract: &Contract) -> Vec<String> {
    let (expr, extra_label) = match query
        .trim()
        .strip_prefix("label_values(")
        .and_then(|q| q.strip_suffix(')'))
    {
        Some(args) => match args.rsplit_once(',') {
            Some((selector, label)) => (selector.to_owned(), Some(label.trim().to_owned())),
            None => (args.to_owned(), None),
        },
        None => (query.to_owned(), None),
    };
    let named = names(&expr);
    let mut problems = Vec::new();
    let mut all_labels = BTreeSet::new();
    for (metric, labels) in &named.metrics {
        let Some(known) = contract.get(metric) else {
            problems.push(format!("{metric:?} is not a metric of the contract"));
            continue;
        };
        all_labels.extend(known.iter().cloned());
        for label in labels.iter().filter(|l| !known.contains(*l)) {
            problems.push(format!("{metric} has no label {label}"));
        }
    }
    if named.metrics.is_empty() {
        problems.push("names no metric".to_owned());
    }
    for label in named.grouped_by.iter().chain(&extra_label) {
        if !all_labels.contains(label) {
            problems.push(format!("groups by or asks for {label}, which none of its metrics has"));
        }
    }
    problems
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn every_metric_and_label_of_the_grafana_dashboard_is_in_the_metrics_contract() {
    let contract = contract(&read("docs/operations.md"));
    let dashboard: Value = serde_json::from_str(&read("deploy/grafana/switchyard.json")).unwrap();
    let queries = queries(&dashboard);
    assert!(queries.len() >= 10, "{queries:#?}");
    let wrong: Vec<String> = (queries.iter())
        .flat_map(|(at, query)| {
            problems(query, &contract)
                .into_iter()
                .map(move |p| format!("{at}: {p}\n  {query}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Every metric of the contract has a panel.
    let used: BTreeSet<String> = queries
        .iter()
        .flat_map(|(_, q)| names(q).metrics)
        .map(|(m, _)| m)
        .collect();
    for metric in ["switchyard_resource_requests_total", "switchyard_resources_folded"] {
        assert!(used.contains(metric), "no panel shows {metric}");
    }
    assert!(
        used.iter()
            .any(|m| m.starts_with("switchyard_resource_request_duration_milliseconds_")),
        "no panel shows the latency"
    );
}

#[test]
fn the_dashboard_has_its_variables_and_every_panel_the_chosen_data_source() {
    let dashboard: Value = serde_json::from_str(&read("deploy/grafana/switchyard.json")).unwrap();
    let variables: Vec<(&str, &str)> = (dashboard["templating"]["list"].as_array().unwrap().iter())
        .map(|v| (v["name"].as_str().unwrap(), v["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        variables,
        [
            ("datasource", "datasource"),
            ("namespace", "query"),
            ("resource", "query")
        ]
    );
    let mut ids = BTreeSet::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        assert!(
            ids.insert(panel["id"].as_u64().unwrap()),
            "panel id {} twice",
            panel["id"]
        );
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "{}", panel["title"]);
        for target in panel["targets"].as_array().unwrap() {
            assert_eq!(target["datasource"]["uid"], "${datasource}", "{}", panel["title"]);
            let expr = target["expr"].as_str().unwrap();
            // Panels on requests honour the variables (the special series are panels of their own).
            if expr.contains("switchyard_resource_request") && !expr.contains("kind=\"") {
                assert!(
                    expr.contains("namespace=~\"$namespace\"") && expr.contains("resource=~\"$resource\""),
                    "{}: {expr}",
                    panel["title"]
                );
            }
        }
    }
}

#[test]
fn the_check_finds_a_metric_or_label_out_of_the_contract() {
    let contract = contract(&read("docs/operations.md"));
    assert_eq!(
        contract["switchyard_resource_requests_total"],
        ["backend", "kind", "namespace", "resource", "status_class"]
            .map(String::from)
            .into()
    );
    assert!(contract["switchyard_resource_request_duration_milliseconds_bucket"].contains("le"));
    assert!(contract["switchyard_resources_folded"].is_empty());

    let good = "histogram_quantile(0.99, sum by (le, kind, namespace, resource) \
                (rate(switchyard_resource_request_duration_milliseconds_bucket{namespace=~\"$namespace\"}[$__rate_interval])))";
    assert_eq!(problems(good, &contract), Vec::<String>::new());
    assert_eq!(
        names(good),
        Names {
            metrics: vec![(
                "switchyard_resource_request_duration_milliseconds_bucket".to_owned(),
                vec!["namespace".to_owned()]
            )],
            grouped_by: ["le", "kind", "namespace", "resource"].map(String::from).to_vec(),
        }
    );
    let cases = [
        (
            "sum(rate(switchyard_resource_request_total[5m]))",
            "\"switchyard_resource_request_total\" is not a metric of the contract",
        ),
        (
            "sum(rate(switchyard_resource_requests_total{status=\"500\"}[5m]))",
            "switchyard_resource_requests_total has no label status",
        ),
        (
            "sum by (ingress) (rate(switchyard_resource_requests_total[5m]))",
            "groups by or asks for ingress, which none of its metrics has",
        ),
        (
            "sum without (le) (rate(switchyard_resource_requests_total[5m]))",
            "groups by or asks for le, which none of its metrics has",
        ),
        (
            "rate(envoy_cluster_upstream_rq_time_bucket[5m]) / 1000",
            "\"envoy_cluster_upstream_rq_time_bucket\" is not a metric of the contract",
        ),
        (
            "label_values(switchyard_resource_requests_total, host)",
            "groups by or asks for host, which none of its metrics has",
        ),
    ];
    for (query, problem) in cases {
        assert_eq!(problems(query, &contract), [problem], "{query}");
    }
    // Strings, variables, durations and numbers are no metric.
    assert_eq!(
        problems(
            "sum(rate(switchyard_resource_requests_total{resource=~\"up|down\", kind!=\"none\"}[$__rate_interval] offset 5m)) > 0.5",
            &contract
        ),
        Vec::<String>::new()
    );
}
