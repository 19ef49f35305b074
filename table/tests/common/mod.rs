//! Helpers shared by the table's integration tests: terse rule builders and a `winner` query.
#![allow(dead_code)]

use serde_json::{json, Value};
use switchyard_table::precedence::by_precedence;
use switchyard_table::{RouteTable, RuleSpec, SimpleRequest, TableSpec};

/// A rule routing to `cluster`; `host` "" means no host; `path` is `type:value`
/// (`exact:/a`, `segment:/a`, `prefix:/a`, `regex:/a.*`).
pub fn rule(name: &str, host: &str, path: &str, cluster: &str) -> Value {
    let (kind, value) = path.split_once(':').unwrap();
    let kind = match kind {
        "segment" => "segment_prefix",
        other => other,
    };
    let mut rule = json!({
        "name": name,
        "path": { "type": kind, "value": value },
        "action": { "route": { "backends": [ { "cluster": cluster } ] } }
    });
    if !host.is_empty() {
        rule["host"] = json!(host);
    }
    rule
}

/// Adds a condition `on`/`name`/`match`/`value` to a rule.
pub fn with(mut rule: Value, on: &str, name: &str, op: &str, value: &str) -> Value {
    let mut condition = json!({ "on": on, "match": op });
    if !name.is_empty() {
        condition["name"] = json!(name);
    }
    if !value.is_empty() || op != "present" {
        condition["value"] = json!(value);
    }
    push_condition(&mut rule, condition);
    rule
}

/// Adds an inverted condition.
pub fn without(mut rule: Value, on: &str, name: &str, op: &str, value: &str) -> Value {
    rule = with(rule, on, name, op, value);
    if let Some(last) = rule["conditions"].as_array_mut().and_then(|c| c.last_mut()) {
        last["invert"] = json!(true);
    }
    rule
}

fn push_condition(rule: &mut Value, condition: Value) {
    match rule["conditions"].as_array_mut() {
        Some(list) => list.push(condition),
        None => rule["conditions"] = json!([condition]),
    }
}

/// A table with the rules in the order given.
pub fn table(rules: Vec<Value>) -> RouteTable {
    let json = json!({ "version": 1, "rules": rules });
    RouteTable::from_json(json.to_string().as_bytes()).unwrap()
}

/// A table whose rules are sorted by the priority keys 1 to 4 first, as the compiler sorts them
/// (a stable sort, so equal rules keep the order given: the compiler's key 5).
pub fn ranked(rules: Vec<Value>) -> RouteTable {
    let mut specs: Vec<RuleSpec> = rules.into_iter().map(|r| serde_json::from_value(r).unwrap()).collect();
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
