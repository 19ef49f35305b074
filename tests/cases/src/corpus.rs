//! `routing.json` read into [`Case`]s, and each case's table in the order the filter is given it.

use serde_json::{json, Value};
use switchyard_table::precedence::by_precedence;
use switchyard_table::RuleSpec;

/// The corpus, as written in this crate's `routing.json`.
const ROUTING: &str = include_str!("../routing.json");

/// How a case's rules are ordered in the table every layer is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Sorted by the priority keys 1 to 4 as the compiler sorts them (a stable sort: rules with
    /// equal keys keep the order written, the compiler's key 5).
    Precedence,
    /// As written: the case is about the matcher honouring table order.
    AsWritten,
}

/// One routing case: a table, requests, and the rule each must reach.
#[derive(Debug, Clone)]
pub struct Case {
    /// The behaviour, as a test name: `exact_host_beats_wildcard`.
    pub name: String,
    /// The sentence of ROUTING.md (or the seed example) the case pins.
    pub about: String,
    /// How the rules are ordered in [`Case::table`].
    pub order: Order,
    /// The rules as written (shorthand expanded).
    pub rules: Vec<Value>,
    /// The requests and their expected winners.
    pub probes: Vec<Probe>,
}

/// A request and the rule that must win it.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The method (`GET` unless the corpus says otherwise).
    pub method: String,
    /// `http://authority/path?query`.
    pub url: String,
    /// Request headers in order (a `cookie` header carries cookies).
    pub headers: Vec<(String, String)>,
    /// The name of the rule that wins, or `None` for no route.
    pub want: Option<String>,
}

impl Case {
    /// The table document every layer loads: `version` 1, the case's name as `generation`, the
    /// debug header on (so a response names its rule), the rules in [`Case::order`].
    pub fn table(&self) -> Value {
        json!({
            "version": 1,
            "generation": self.name,
            "debug_rule_header": true,
            "rules": self.ordered_rules(),
        })
    }

    fn ordered_rules(&self) -> Vec<Value> {
        match self.order {
            Order::AsWritten => self.rules.clone(),
            Order::Precedence => {
                let mut ranked: Vec<(RuleSpec, &Value)> = self
                    .rules
                    .iter()
                    .map(|rule| match RuleSpec::from_value(rule.clone()) {
                        Ok(spec) => (spec, rule),
                        Err(e) => panic!("case {}: rule {rule} is not a table rule: {e}", self.name),
                    })
                    .collect();
                ranked.sort_by(|a, b| by_precedence(&a.0, &b.0));
                ranked.into_iter().map(|(_, rule)| rule.clone()).collect()
            }
        }
    }

    /// The cluster the rule `name` routes to.
    pub fn cluster_of(&self, name: &str) -> Option<&str> {
        self.rules
            .iter()
            .find(|rule| rule["name"] == name)
            .and_then(|rule| rule["action"]["route"]["backends"][0]["cluster"].as_str())
    }

    /// Every cluster the case's rules route to.
    pub fn clusters(&self) -> Vec<&str> {
        self.rules
            .iter()
            .filter_map(|rule| rule["action"]["route"]["backends"][0]["cluster"].as_str())
            .collect()
    }
}

impl Probe {
    /// The authority of [`Probe::url`] (`example.net:8080`).
    pub fn authority(&self) -> &str {
        url_parts(&self.url).0
    }

    /// The path and query of [`Probe::url`] (`/bar?x=1`).
    pub fn path(&self) -> &str {
        url_parts(&self.url).1
    }
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        describe_request(f, &self.method, &self.url, &self.headers)
    }
}

/// A corpus URL's authority, and its path with the query (`/` when it has none).
pub(crate) fn url_parts(url: &str) -> (&str, &str) {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, "/"),
    }
}

/// A corpus request for a failure message: `GET http://… [name: value]…`.
pub(crate) fn describe_request(
    f: &mut std::fmt::Formatter<'_>,
    method: &str,
    url: &str,
    headers: &[(String, String)],
) -> std::fmt::Result {
    write!(f, "{method} {url}")?;
    for (name, value) in headers {
        write!(f, " [{name}: {value}]")?;
    }
    Ok(())
}

/// Every case of `routing.json`. Panics on a malformed corpus (naming the case), and when a case
/// gives two rules one backend, or expects a rule it does not have.
pub fn routing_cases() -> Vec<Case> {
    let corpus: Value = serde_json::from_str(ROUTING).unwrap_or_else(|e| panic!("routing.json: {e}"));
    let cases = corpus["cases"].as_array().expect("routing.json: a `cases` list");
    let cases: Vec<Case> = cases.iter().map(case).collect();
    for (i, case) in cases.iter().enumerate() {
        assert!(
            cases[..i].iter().all(|other| other.name != case.name),
            "routing.json: two cases named {}",
            case.name
        );
    }
    cases
}

fn text<'a>(value: &'a Value, field: &str, context: &str) -> &'a str {
    value[field]
        .as_str()
        .unwrap_or_else(|| panic!("routing.json: {context}: `{field}` must be a string"))
}

fn case(value: &Value) -> Case {
    let name = text(value, "name", "a case").to_owned();
    let order = match value.get("order").and_then(Value::as_str) {
        None | Some("precedence") => Order::Precedence,
        Some("as_written") => Order::AsWritten,
        Some(other) => panic!("routing.json: case {name}: order {other:?} is not precedence or as_written"),
    };
    let rules: Vec<Value> = value["rules"]
        .as_array()
        .unwrap_or_else(|| panic!("routing.json: case {name}: a `rules` list"))
        .iter()
        .map(expand_rule)
        .collect();
    let probes = value["requests"]
        .as_array()
        .unwrap_or_else(|| panic!("routing.json: case {name}: a `requests` list"))
        .iter()
        .map(|p| probe(p, &name))
        .collect();
    let case = Case {
        about: text(value, "about", &name).to_owned(),
        name,
        order,
        rules,
        probes,
    };
    let backends: Vec<&str> = case.clusters().into_iter().map(service).collect();
    for (i, backend) in backends.iter().enumerate() {
        assert!(
            !backends[..i].contains(backend),
            "routing.json: case {}: two rules route to the backend {backend}",
            case.name
        );
    }
    for probe in &case.probes {
        if let Some(want) = &probe.want {
            assert!(
                case.cluster_of(want).is_some(),
                "routing.json: case {}: no rule {want} routes to a cluster",
                case.name
            );
        }
    }
    case
}

/// The service part of `ns/service:port`: the name its backend answers with.
fn service(cluster: &str) -> &str {
    let service = cluster.rsplit_once('/').map_or(cluster, |(_, s)| s);
    service.split_once(':').map_or(service, |(s, _)| s)
}

fn expand_rule(rule: &Value) -> Value {
    let mut rule = rule.clone();
    if let Some(object) = rule.as_object_mut() {
        if let Some(cluster) = object.remove("cluster") {
            object.insert(
                "action".to_owned(),
                json!({ "route": { "backends": [ { "cluster": cluster } ] } }),
            );
        }
    }
    rule
}

fn probe(value: &Value, case: &str) -> Probe {
    let url = text(value, "url", case).to_owned();
    let headers = match value.get("headers") {
        None => Vec::new(),
        Some(list) => list
            .as_array()
            .unwrap_or_else(|| panic!("routing.json: case {case}: {url}: `headers` must be a list"))
            .iter()
            .map(|pair| match pair.as_array().map(Vec::as_slice) {
                Some([Value::String(name), Value::String(value)]) => (name.clone(), value.clone()),
                _ => panic!("routing.json: case {case}: {url}: a header is [name, value]"),
            })
            .collect(),
    };
    let want = match &value["want"] {
        Value::Null => None,
        Value::String(name) => Some(name.clone()),
        other => panic!("routing.json: case {case}: {url}: `want` is a rule name or null, not {other}"),
    };
    assert!(
        value.get("want").is_some(),
        "routing.json: case {case}: {url}: say `want` (null for no route)"
    );
    Probe {
        method: value.get("method").and_then(Value::as_str).unwrap_or("GET").to_owned(),
        url,
        headers,
        want,
    }
}
