//! Helpers shared by the table's integration tests: terse rule builders and a `winner` query.
#![allow(dead_code)]

use serde_json::{json, Value};
use switchyard_table::precedence::by_precedence;
use switchyard_table::{RouteTable, RuleSpec, SimpleRequest, TableSpec};

/// A rule routing to `cluster`; `host` "" means no host; `path` is `type:value`
/// (`exact:/a`, `segment:/a`, `prefix:/a`, `regex:/a.*`). Built with the shared builder.
pub fn rule(name: &str, host: &str, path: &str, cluster: &str) -> Value {
    let (kind, value) = path.split_once(':').unwrap();
    let kind = match kind {
        "segment" => "segment_prefix",
        other => other,
    };
    let rule = switchyard_cases::rule(name).path(kind, value);
    let rule = if host.is_empty() { rule } else { rule.host(host) };
    rule.to(cluster)
}

/// Adds a condition `on`/`name`/`match`/`value` to a rule.
pub fn with(rule: Value, on: &str, name: &str, op: &str, value: &str) -> Value {
    push_condition(rule, on, name, op, value, false)
}

/// Adds an inverted condition.
pub fn without(rule: Value, on: &str, name: &str, op: &str, value: &str) -> Value {
    push_condition(rule, on, name, op, value, true)
}

/// `rule` with one more condition, written by the shared builder.
fn push_condition(mut rule: Value, on: &str, name: &str, op: &str, value: &str, invert: bool) -> Value {
    let built = switchyard_cases::rule("");
    let built = if invert {
        built.unless(on, name, op, value)
    } else {
        built.when(on, name, op, value)
    };
    let condition = built.to("")["conditions"][0].clone();
    match rule["conditions"].as_array_mut() {
        Some(list) => list.push(condition),
        None => rule["conditions"] = json!([condition]),
    }
    rule
}

/// A table with the rules in the order given.
pub fn table(rules: Vec<Value>) -> RouteTable {
    let json = json!({ "version": 1, "rules": rules });
    RouteTable::from_json(json.to_string().as_bytes()).unwrap()
}

/// A table whose rules are sorted by the priority keys 1 to 4 first, as the compiler sorts them
/// (a stable sort, so equal rules keep the order given: the compiler's key 5).
pub fn ranked(rules: Vec<Value>) -> RouteTable {
    let mut specs: Vec<RuleSpec> = rules.into_iter().map(|r| RuleSpec::from_value(r).unwrap()).collect();
    specs.sort_by(by_precedence);
    RouteTable::try_from(TableSpec {
        rules: specs,
        ..TableSpec::default()
    })
    .unwrap()
}

/// The name of the rule that wins `request`, or `None`.
pub fn winner(table: &RouteTable, request: &SimpleRequest) -> Option<String> {
    table.route(request, 0).map(|d| d.rule.name().to_owned())
}

/// The cluster `request` is sent to, or `None`.
pub fn cluster(table: &RouteTable, request: &SimpleRequest) -> Option<String> {
    table
        .route(request, 0)
        .and_then(|d| d.backend)
        .map(|b| b.cluster.clone())
}

/// A GET for a URL like `http://example.net/bar`.
pub fn get(url: &str) -> SimpleRequest {
    SimpleRequest::from_url(url)
}
