//! ROUTING.md §4 key 2, path matching: the Kubernetes Ingress documentation's examples table for
//! `Exact` and `Prefix`, HTTPProxy string prefixes and anchored regexes.

mod common;

use common::{get, ranked, rule, table, winner};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn matches(path: &str, request_path: &str) -> bool {
    let t = table(vec![rule("r", "", path, "c")]);
    winner(&t, &get(&format!("http://h{request_path}"))).is_some()
}

/// The examples table of the Kubernetes Ingress documentation, row by row.
#[test]
fn segment_prefix_follows_the_kubernetes_examples_table() {
    let rows = [
        ("segment:/", "/anything/at/all", true),
        ("exact:/foo", "/foo", true),
        ("exact:/foo", "/bar", false),
        ("exact:/foo", "/foo/", false),
        ("exact:/foo/", "/foo", false),
        ("segment:/foo", "/foo", true),
        ("segment:/foo", "/foo/", true),
        ("segment:/foo/", "/foo", true),
        ("segment:/foo/", "/foo/", true),
        ("segment:/aaa/bb", "/aaa/bbb", false),
        ("segment:/aaa/bbb", "/aaa/bbb", true),
        ("segment:/aaa/bbb/", "/aaa/bbb", true),
        ("segment:/aaa/bbb", "/aaa/bbb/", true),
        ("segment:/aaa/bbb", "/aaa/bbb/ccc", true),
        ("segment:/aaa/bbb", "/aaa/bbbxyz", false),
        ("segment:/foo", "/foobar", false),
        ("segment:/foo", "/foo/bar", true),
    ];
    for (path, request, expected) in rows {
        assert_eq!(matches(path, request), expected, "{path} against {request}");
    }
}

/// Several prefixes: the longest that matches whole segments wins (`/`, `/aaa`, `/aaa/bbb`).
#[test]
fn longest_matching_segment_prefix_wins() {
    let t = ranked(vec![
        rule("root", "", "segment:/", "a"),
        rule("aaa", "", "segment:/aaa", "b"),
        rule("bbb", "", "segment:/aaa/bbb", "c"),
    ]);
    assert_eq!(winner(&t, &get("http://h/aaa/bbb")).as_deref(), Some("bbb"));
    assert_eq!(winner(&t, &get("http://h/aaa/ccc")).as_deref(), Some("aaa"));
    assert_eq!(winner(&t, &get("http://h/ccc")).as_deref(), Some("root"));
    assert_eq!(winner(&t, &get("http://h/aaa/bbbxyz")).as_deref(), Some("aaa"));
}

/// Exact `/foo` and Prefix `/foo` on one host: a request for `/foo` takes the exact rule.
#[test]
fn exact_wins_over_prefix_for_the_same_path() {
    let t = ranked(vec![
        rule("prefix", "", "segment:/foo", "a"),
        rule("exact", "", "exact:/foo", "b"),
    ]);
    assert_eq!(winner(&t, &get("http://h/foo")).as_deref(), Some("exact"));
    assert_eq!(winner(&t, &get("http://h/foo/x")).as_deref(), Some("prefix"));
}

/// `pathType: Exact`: the path must be equal, case-sensitively.
#[test]
fn exact_path_is_case_sensitive() {
    assert!(matches("exact:/Foo", "/Foo"));
    assert!(!matches("exact:/Foo", "/foo"));
    assert!(!matches("segment:/Foo", "/foo/bar"));
}

/// HTTPProxy `prefix` is a string prefix: `/foo` matches `/foobar`.
#[test]
fn string_prefix_matches_inside_a_segment() {
    assert!(matches("prefix:/foo", "/foobar"));
    assert!(matches("prefix:/foo", "/foo/bar"));
    assert!(!matches("prefix:/foo", "/fo"));
}

/// HTTPProxy `regex`: the whole path must match.
#[test]
fn regex_must_match_the_whole_path() {
    assert!(matches("regex:/static/.*/main.js", "/static/v1/main.js"));
    assert!(!matches("regex:/static/.*/main.js", "/static/v1/main.js.map"));
    assert!(!matches("regex:/static", "/x/static"));
    assert!(!matches("regex:/a|/b", "/b/c"), "alternation is anchored as a whole");
}

/// The query string is not part of the path, for every path kind.
#[test]
fn query_string_is_not_part_of_the_path() {
    assert!(matches("exact:/foo", "/foo?x=1"));
    assert!(matches("segment:/foo", "/foo?bar/baz"));
    assert!(!matches("prefix:/foo?x", "/foo?x=1"));
    assert!(matches("regex:/fo+", "/foo?x"));
}

/// A rewrite replaces the matched prefix and keeps the query string.
#[test]
fn decision_gives_the_rewritten_upstream_path() {
    let mut r = rule("r", "", "prefix:/api", "c");
    r["action"]["route"]["rewrite_prefix"] = serde_json::json!("/v2");
    let t = table(vec![r]);
    let request = get("http://h/api/users?id=7");
    let decision = t.route(&request, 0).unwrap();
    assert_eq!(
        decision.rule.rewrite(&request.path).map(|r| r.path).as_deref(),
        Some("/v2/users?id=7")
    );
}
