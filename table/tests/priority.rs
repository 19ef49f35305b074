//! ROUTING.md §4, "Which rule wins a request": the priority keys and the fallback, one test per
//! sentence, and every example of seed 002 (BFE's priority document) written as a table.
//!
//! `ranked` sorts rules by keys 1 to 4 as the compiler does; `table` keeps the order given.

mod common;

use common::{get, ranked, rule, table, winner, with};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

// ---- the matcher honours table order ---------------------------------------------------------

/// A rule matches when its host, its path and every one of its conditions match.
#[test]
fn rule_matches_only_when_host_path_and_every_condition_match() {
    let t = table(vec![with(
        with(
            rule("r", "example.net", "segment:/bar", "c"),
            "header",
            "a",
            "exact",
            "1",
        ),
        "cookie",
        "b",
        "exact",
        "2",
    )]);
    let full = get("http://example.net/bar").header("a", "1").cookie("b", "2");
    assert_eq!(winner(&t, &full).as_deref(), Some("r"));
    assert_eq!(
        winner(&t, &get("http://example.net/bar").header("a", "1")),
        None,
        "one condition missing"
    );
    assert_eq!(
        winner(&t, &get("http://other.net/bar").header("a", "1").cookie("b", "2")),
        None,
        "wrong host"
    );
    assert_eq!(
        winner(&t, &get("http://example.net/baz").header("a", "1").cookie("b", "2")),
        None,
        "wrong path"
    );
}

/// The winner is the first rule in table order whose host, path and conditions match, whatever
/// its precision: the compiler sorts, the matcher obeys.
#[test]
fn first_matching_rule_in_table_order_wins() {
    let t = table(vec![
        rule("catch-all", "", "prefix:/", "a"),
        rule("exact", "example.net", "exact:/bar", "b"),
    ]);
    assert_eq!(winner(&t, &get("http://example.net/bar")).as_deref(), Some("catch-all"));
}

/// With equal keys 1 to 4 the order given (the compiler's key 5: age, uid, name, position) stands.
#[test]
fn equal_precedence_keeps_table_order() {
    let t = ranked(vec![
        rule("older", "example.net", "segment:/bar", "a"),
        rule("newer", "example.net", "segment:/bar", "b"),
    ]);
    assert_eq!(winner(&t, &get("http://example.net/bar")).as_deref(), Some("older"));
}

// ---- key 1: host precision --------------------------------------------------------------------

/// Seed 002 "Hostname precision first": `example.net` beats `*.net` for http://example.net/bar.
#[test]
fn exact_host_beats_wildcard() {
    let t = ranked(vec![
        rule(
            "Ingress/production/host_priority2#0",
            "*.net",
            "segment:/bar",
            "production/service2:80",
        ),
        rule(
            "Ingress/production/host_priority1#0",
            "example.net",
            "segment:/bar",
            "production/service1:80",
        ),
    ]);
    assert_eq!(
        winner(&t, &get("http://example.net/bar")).as_deref(),
        Some("Ingress/production/host_priority1#0")
    );
    assert_eq!(
        winner(&t, &get("http://other.net/bar")).as_deref(),
        Some("Ingress/production/host_priority2#0")
    );
}

/// A wildcard host beats a rule with no host, even when the catch-all's path is more precise.
#[test]
fn wildcard_host_beats_catch_all() {
    let t = ranked(vec![
        rule("any", "", "exact:/bar", "a"),
        rule("wild", "*.example.net", "segment:/", "b"),
    ]);
    assert_eq!(winner(&t, &get("http://a.example.net/bar")).as_deref(), Some("wild"));
    assert_eq!(winner(&t, &get("http://elsewhere.org/bar")).as_deref(), Some("any"));
}

/// `*.example.net` matches exactly one extra label: `a.example.net`, not `a.b.example.net`, not
/// `example.net`.
#[test]
fn wildcard_matches_exactly_one_label() {
    let t = table(vec![rule("wild", "*.example.net", "segment:/", "a")]);
    assert_eq!(winner(&t, &get("http://a.example.net/")).as_deref(), Some("wild"));
    assert_eq!(winner(&t, &get("http://a.b.example.net/")), None);
    assert_eq!(winner(&t, &get("http://example.net/")), None);
}

/// Host matching is case-insensitive; the port and a trailing dot are ignored.
#[test]
fn host_matching_ignores_case_port_and_trailing_dot() {
    let t = table(vec![
        rule("exact", "Example.NET", "segment:/", "a"),
        rule("wild", "*.Example.org", "segment:/", "b"),
    ]);
    for authority in [
        "example.net",
        "EXAMPLE.net",
        "example.net:8080",
        "example.net.",
        "Example.Net.:443",
    ] {
        assert_eq!(
            winner(&t, &get(&format!("http://{authority}/"))).as_deref(),
            Some("exact"),
            "{authority}"
        );
    }
    assert_eq!(winner(&t, &get("http://A.EXAMPLE.ORG.:80/")).as_deref(), Some("wild"));
}

// ---- key 2: path precision --------------------------------------------------------------------

/// Exact beats regex, which beats prefix, whatever their lengths.
#[test]
fn exact_path_beats_regex_beats_prefix() {
    let t = ranked(vec![
        rule("prefix", "example.net", "segment:/bar/foo/long", "a"),
        rule("regex", "example.net", "regex:/bar/.*", "b"),
        rule("exact", "example.net", "exact:/bar/foo/long", "c"),
    ]);
    assert_eq!(
        winner(&t, &get("http://example.net/bar/foo/long")).as_deref(),
        Some("exact")
    );
    assert_eq!(
        winner(&t, &get("http://example.net/bar/foo/long/x")).as_deref(),
        Some("regex")
    );
}

/// Seed 002 "Path precision first when hostname are identical": `/bar/foo` beats `/bar` even
/// though `/bar` has a header condition the request satisfies.
#[test]
fn longer_prefix_beats_shorter_even_with_conditions() {
    let t = ranked(vec![
        with(
            rule(
                "Ingress/production/path_priority2#0",
                "example.net",
                "segment:/bar",
                "production/service2:80",
            ),
            "header",
            "key",
            "exact",
            "value",
        ),
        rule(
            "Ingress/production/path_priority1#0",
            "example.net",
            "segment:/bar/foo",
            "production/service1:80",
        ),
    ]);
    let request = get("http://example.net/bar/foo").header("Key", "value");
    assert_eq!(
        winner(&t, &request).as_deref(),
        Some("Ingress/production/path_priority1#0")
    );
}

/// At equal length a segment prefix beats a string prefix.
#[test]
fn segment_prefix_beats_string_prefix_of_equal_length() {
    let t = ranked(vec![
        rule("string", "example.net", "prefix:/bar", "a"),
        rule("segment", "example.net", "segment:/bar", "b"),
    ]);
    assert_eq!(winner(&t, &get("http://example.net/bar/x")).as_deref(), Some("segment"));
    assert_eq!(winner(&t, &get("http://example.net/barx")).as_deref(), Some("string"));
}

/// Among regexes the longer pattern wins.
#[test]
fn longer_regex_beats_shorter_regex() {
    let t = ranked(vec![
        rule("short", "example.net", "regex:/.*", "a"),
        rule("long", "example.net", "regex:/api/v[0-9]+/.*", "b"),
    ]);
    assert_eq!(
        winner(&t, &get("http://example.net/api/v2/users")).as_deref(),
        Some("long")
    );
    assert_eq!(winner(&t, &get("http://example.net/web")).as_deref(), Some("short"));
}

// ---- keys 3 and 4: conditions -----------------------------------------------------------------

/// Seed 002 "More advanced condition first": same host and path, the rule with the header
/// condition wins for a request carrying `Key: value`.
#[test]
fn more_conditions_beat_fewer() {
    let t = ranked(vec![
        rule(
            "Ingress/production/cond_priority2#0",
            "example.net",
            "segment:/bar",
            "production/service2:80",
        ),
        with(
            rule(
                "Ingress/production/cond_priority1#0",
                "example.net",
                "segment:/bar",
                "production/service1:80",
            ),
            "header",
            "key",
            "exact",
            "value",
        ),
    ]);
    let request = get("http://example.net/bar/foo").header("Key", "value");
    assert_eq!(
        winner(&t, &request).as_deref(),
        Some("Ingress/production/cond_priority1#0")
    );
    assert_eq!(
        winner(&t, &get("http://example.net/bar/foo")).as_deref(),
        Some("Ingress/production/cond_priority2#0")
    );
}

/// Seed 002 "Matched advanced condition with higher priority first": a cookie condition beats a
/// header condition when both match.
#[test]
fn cookie_condition_beats_header_condition() {
    let t = ranked(vec![
        with(
            rule(
                "Ingress/production/multi_cond_priority1#0",
                "example.net",
                "segment:/bar",
                "production/service1:80",
            ),
            "header",
            "header-key",
            "exact",
            "value",
        ),
        with(
            rule(
                "Ingress/production/multi_cond_priority2#0",
                "example.net",
                "segment:/bar",
                "production/service2:80",
            ),
            "cookie",
            "cookie-key",
            "exact",
            "value",
        ),
    ]);
    let request = get("http://example.net/bar/foo")
        .header("Header-key", "value")
        .cookie("cookie-key", "value");
    assert_eq!(
        winner(&t, &request).as_deref(),
        Some("Ingress/production/multi_cond_priority2#0")
    );
    let header_only = get("http://example.net/bar/foo").header("Header-key", "value");
    assert_eq!(
        winner(&t, &header_only).as_deref(),
        Some("Ingress/production/multi_cond_priority1#0")
    );
}

/// Kinds are compared element by element, strongest first: cookie+header beats cookie+query.
#[test]
fn cookie_and_header_beat_cookie_and_query() {
    let t = ranked(vec![
        with(
            with(
                rule("cookie+query", "example.net", "segment:/", "a"),
                "query",
                "q",
                "exact",
                "1",
            ),
            "cookie",
            "c",
            "exact",
            "1",
        ),
        with(
            with(
                rule("cookie+header", "example.net", "segment:/", "b"),
                "cookie",
                "c",
                "exact",
                "1",
            ),
            "header",
            "h",
            "exact",
            "1",
        ),
    ]);
    let request = get("http://example.net/?q=1").cookie("c", "1").header("h", "1");
    assert_eq!(winner(&t, &request).as_deref(), Some("cookie+header"));
}

/// The full kind order: cookie > header > query > method.
#[test]
fn header_beats_query_beats_method() {
    let t = ranked(vec![
        with(
            rule("method", "example.net", "segment:/", "a"),
            "method",
            "",
            "exact",
            "GET",
        ),
        with(
            rule("query", "example.net", "segment:/", "b"),
            "query",
            "q",
            "present",
            "",
        ),
        with(
            rule("header", "example.net", "segment:/", "c"),
            "header",
            "h",
            "present",
            "",
        ),
    ]);
    assert_eq!(
        winner(&t, &get("http://example.net/?q").header("h", "")).as_deref(),
        Some("header")
    );
    assert_eq!(winner(&t, &get("http://example.net/?q")).as_deref(), Some("query"));
    assert_eq!(winner(&t, &get("http://example.net/")).as_deref(), Some("method"));
}

// ---- fallback ---------------------------------------------------------------------------------

/// A rule whose conditions fail does not match; a shorter path of the same host gets its chance.
#[test]
fn failed_conditions_fall_back_to_shorter_path() {
    let t = ranked(vec![
        rule("short", "example.net", "segment:/bar", "a"),
        with(
            rule("long", "example.net", "segment:/bar/foo", "b"),
            "header",
            "key",
            "exact",
            "value",
        ),
    ]);
    assert_eq!(winner(&t, &get("http://example.net/bar/foo")).as_deref(), Some("short"));
    assert_eq!(
        winner(&t, &get("http://example.net/bar/foo").header("key", "value")).as_deref(),
        Some("long")
    );
}

/// Falling back crosses host levels: from the exact host to the wildcard.
#[test]
fn failed_conditions_fall_back_to_wildcard_host() {
    let t = ranked(vec![
        with(
            rule("exact", "a.example.net", "segment:/", "a"),
            "cookie",
            "beta",
            "exact",
            "1",
        ),
        rule("wild", "*.example.net", "segment:/", "b"),
    ]);
    assert_eq!(winner(&t, &get("http://a.example.net/x")).as_deref(), Some("wild"));
    assert_eq!(
        winner(&t, &get("http://a.example.net/x").cookie("beta", "1")).as_deref(),
        Some("exact")
    );
}

/// ... and on to the catch-all.
#[test]
fn failed_conditions_fall_back_to_catch_all() {
    let t = ranked(vec![
        with(
            rule("exact", "a.example.net", "exact:/x", "a"),
            "header",
            "h",
            "exact",
            "1",
        ),
        with(
            rule("wild", "*.example.net", "segment:/", "b"),
            "header",
            "h",
            "exact",
            "2",
        ),
        rule("default", "", "prefix:/", "c"),
    ]);
    assert_eq!(winner(&t, &get("http://a.example.net/x")).as_deref(), Some("default"));
    assert_eq!(
        winner(&t, &get("http://a.example.net/x").header("h", "2")).as_deref(),
        Some("wild")
    );
}

/// Nothing matching gives no route (the filter answers 404 or passes, per the table).
#[test]
fn no_matching_rule_gives_no_route() {
    let t = table(vec![rule("r", "example.net", "segment:/bar", "a")]);
    assert!(t.route(&get("http://example.net/baz"), 0).is_none());
}
