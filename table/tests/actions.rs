//! ROUTING.md §5 as far as the table decides it: the weighted backend choice, direct responses and
//! table-wide settings.

mod common;

use common::{get, rule, table};
use serde_json::json;
use switchyard_table::{ActionSpec, NoRoute, RouteTable};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn weighted(weights: &[(&str, u32)]) -> RouteTable {
    let mut r = rule("r", "", "prefix:/", "unused");
    r["action"]["route"]["backends"] = json!(weights
        .iter()
        .map(|(c, w)| json!({ "cluster": c, "weight": w }))
        .collect::<Vec<_>>());
    table(vec![r])
}

/// One backend is picked in proportion to its weight: over every ticket 0..total each backend
/// gets exactly its weight.
#[test]
fn weighted_choice_follows_weights() {
    let t = weighted(&[("a", 90), ("b", 10)]);
    let request = get("http://h/");
    let to_a = (0..1000u64)
        .filter(|&r| t.route(&request, r).unwrap().backend.unwrap().cluster == "a")
        .count();
    assert_eq!(to_a, 900);
}

/// A backend of weight zero is never chosen.
#[test]
fn zero_weight_backend_is_never_chosen() {
    let t = weighted(&[("a", 0), ("b", 3), ("c", 0)]);
    let request = get("http://h/");
    assert!((0..100u64).all(|r| t.route(&request, r).unwrap().backend.unwrap().cluster == "b"));
    assert_eq!(t.route(&request, u64::MAX).unwrap().backend.unwrap().cluster, "b");
}

/// A direct-response rule wins like any other and has no backend.
#[test]
fn direct_response_rule_has_no_backend() {
    let mut r = rule("broken-include", "", "prefix:/team", "x");
    r["action"] = json!({ "direct_response": { "status": 502 } });
    let t = table(vec![r, rule("rest", "", "prefix:/", "y")]);
    let decision = t.route(&get("http://h/team/a"), 0).unwrap();
    assert!(decision.backend.is_none());
    assert!(matches!(decision.rule.action(), ActionSpec::DirectResponse(d) if d.status == 502));
}

/// Table-wide settings default as documented, and are read when given.
#[test]
fn table_settings_default_and_parse() {
    let t = RouteTable::from_json(br#"{"version":1}"#).unwrap();
    assert_eq!(
        (t.cluster_header(), t.no_route(), t.debug_rule_header()),
        ("x-route-cluster", NoRoute::NotFound, false)
    );
    let t = RouteTable::from_json(
        br#"{"version":1,"generation":"g7","cluster_header":"X-Backend","no_route":"pass","debug_rule_header":true}"#,
    )
    .unwrap();
    assert_eq!(
        (t.generation(), t.cluster_header(), t.no_route(), t.debug_rule_header()),
        ("g7", "x-backend", NoRoute::Pass, true)
    );
}

/// The README's table round-trips through the format types unchanged, as JSON and in the compact form.
#[test]
fn table_json_round_trips() {
    use switchyard_table::{compact, TableSpec};
    let text = include_str!("../README.md");
    let start = text.find("```json").unwrap() + "```json".len();
    let end = start + text[start..].find("```").unwrap();
    let document: serde_json::Value = serde_json::from_str(&text[start..end]).unwrap();
    let spec = TableSpec::from_value(document.clone()).unwrap();
    let written = serde_json::to_value(&spec).unwrap();
    assert_eq!(TableSpec::from_value(written.clone()).unwrap(), spec);
    let compact_text = compact::to_text(&written).unwrap();
    let wrapper: serde_json::Value = serde_json::from_str(&compact_text).unwrap();
    assert_eq!(compact::unwrap(wrapper).unwrap(), written);
    assert_eq!(
        RouteTable::from_json(compact_text.as_bytes()).unwrap().rules().len(),
        spec.rules.len(),
        "RouteTable::from_json reads the compact form"
    );
    let t = RouteTable::try_from(spec).unwrap();
    assert_eq!((t.rules().len(), t.host_count()), (6, 4));
}

/// A direct response carries the content type and the headers the table gives it.
#[test]
fn direct_response_has_its_content_type_and_headers() {
    let mut r = rule("tea", "", "exact:/tea", "x");
    r["action"] = json!({ "direct_response": {
        "status": 200, "body": "{\"tea\":true}", "content_type": "application/json",
        "headers": [ { "name": "x-served-by", "value": "switchyard" } ] } });
    let t = table(vec![r]);
    let decision = t.route(&get("http://h/tea"), 0).unwrap();
    let ActionSpec::DirectResponse(direct) = decision.rule.action() else {
        panic!("not a direct response")
    };
    assert_eq!(direct.content_type.as_deref(), Some("application/json"));
    assert_eq!(
        (direct.headers[0].name.as_str(), direct.headers[0].value.as_str()),
        ("x-served-by", "switchyard")
    );
}

/// A redirect's `${scheme}`, `${host}` and `${request_uri}` are filled in per request: the scheme as
/// sent, the host lowercase without port (NGINX's `$host`), the path with its query string.
#[test]
fn redirect_fills_scheme_host_and_request_uri_per_request() {
    let mut r = rule("moved", "", "prefix:/", "x");
    r["action"] = json!({ "redirect": { "url": "${scheme}://www.${host}${request_uri}", "status": 301 } });
    let t = table(vec![r]);
    let request = get("https://Cafe.Example.com:8080/tea?cup=2");
    let decision = t.route(&request, 0).unwrap();
    assert_eq!(
        decision.rule.redirect_for(&request),
        Some((301, "https://www.cafe.example.com/tea?cup=2".to_owned()))
    );
    assert!(decision.backend.is_none());
}

/// A redirect without variables is its url as written.
#[test]
fn redirect_without_variables_is_literal() {
    let mut r = rule("moved", "", "prefix:/", "x");
    r["action"] = json!({ "redirect": { "url": "http://example.org/new", "status": 308 } });
    let t = table(vec![r]);
    assert_eq!(
        t.rules()[0].redirect_for(&get("http://h/x")),
        Some((308, "http://example.org/new".to_owned()))
    );
}

/// Issue 23, item 2: `${http_x_forwarded_proto}` is the request's `X-Forwarded-Proto` (NGINX's
/// `$http_x_forwarded_proto`): empty when absent, repeated headers joined by `, `.
#[test]
fn redirect_fills_http_x_forwarded_proto_per_request() {
    let mut r = rule("moved", "", "prefix:/", "x");
    r["action"] = json!({ "redirect": { "url": "${http_x_forwarded_proto}://${host}${request_uri}", "status": 302 } });
    let t = table(vec![r]);
    let location =
        |request: &switchyard_table::SimpleRequest| t.route(request, 0).unwrap().rule.redirect_for(request).unwrap().1;
    let behind_tls = get("http://cafe.example.com/tea?x=1").header("X-Forwarded-Proto", "https");
    assert_eq!(location(&behind_tls), "https://cafe.example.com/tea?x=1");
    assert_eq!(location(&get("http://cafe.example.com/tea")), "://cafe.example.com/tea");
    let twice = behind_tls.header("x-forwarded-proto", "http");
    assert_eq!(location(&twice), "https, http://cafe.example.com/tea?x=1");
}

/// Issue 23, item 3: `rewrite_regex` (NGINX's `rewritePath` on a regex location) replaces the whole
/// path with its template, `$1`… being the groups of the regex searched in the path; the query
/// string is kept; a path the regex is not found in is sent as it is.
#[test]
fn regex_rewrite_replaces_the_path_with_the_groups_and_keeps_the_query() {
    let mut r = rule("r", "", "regex:.*(?:/regex1/?(.*)).*", "default/hello:80");
    r["action"]["route"]["rewrite_regex"] = json!({ "pattern": "/regex1/?(.*)", "path": "/$1" });
    let t = table(vec![r]);
    let rule = &t.rules()[0];
    assert_eq!(
        rule.rewrite("/regex1/abc?arg=value").map(|r| r.path).as_deref(),
        Some("/abc?arg=value")
    );
    assert_eq!(rule.rewrite("/x/regex1/").map(|r| r.path).as_deref(), Some("/"));
    assert!(rule.rewrite("/other").is_none());
}

/// A `rewrite_regex` whose pattern does not compile, whose path does not start with `/` or names
/// `$` without a digit, or that comes with a `rewrite_prefix`, refuses the table.
#[test]
fn bad_regex_rewrites_are_refused() {
    for (rewrite, prefix, field) in [
        (
            json!({ "pattern": "(", "path": "/" }),
            None,
            "action.route.rewrite_regex.pattern",
        ),
        (
            json!({ "pattern": "a", "path": "x" }),
            None,
            "action.route.rewrite_regex.path",
        ),
        (
            json!({ "pattern": "a", "path": "/$x" }),
            None,
            "action.route.rewrite_regex.path",
        ),
        (
            json!({ "pattern": "a", "path": "/" }),
            Some("/"),
            "action.route.rewrite_regex",
        ),
    ] {
        let mut r = rule("r", "", "prefix:/", "c");
        r["action"]["route"]["rewrite_regex"] = rewrite;
        if let Some(prefix) = prefix {
            r["action"]["route"]["rewrite_prefix"] = json!(prefix);
        }
        let doc = json!({ "version": 1, "rules": [r] });
        let error = switchyard_table::RouteTable::from_document(doc)
            .unwrap_err()
            .to_string();
        assert!(error.contains(field), "{field}: {error}");
    }
}
