//! ROUTING.md §4 "Conditions": headers, cookies, query parameters and methods, their case rules,
//! several values, negation, and the BFE annotations' `a|b` alternatives.

mod common;

use common::{get, rule, table, winner, with, without};
use switchyard_table::RouteTable;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn one(on: &str, name: &str, op: &str, value: &str) -> RouteTable {
    table(vec![with(rule("r", "", "prefix:/", "c"), on, name, op, value)])
}

fn not(on: &str, name: &str, op: &str, value: &str) -> RouteTable {
    table(vec![without(rule("r", "", "prefix:/", "c"), on, name, op, value)])
}

fn hit(t: &RouteTable, request: switchyard_table::SimpleRequest) -> bool {
    winner(t, &request).is_some()
}

/// Header names are case-insensitive, in the table and in the request.
#[test]
fn header_names_are_case_insensitive() {
    let t = one("header", "X-Team", "exact", "blue");
    assert!(hit(&t, get("http://h/").header("x-team", "blue")));
    assert!(hit(&t, get("http://h/").header("X-TEAM", "blue")));
}

/// Header values are compared case-sensitively.
#[test]
fn header_values_are_case_sensitive() {
    let t = one("header", "x-team", "exact", "blue");
    assert!(!hit(&t, get("http://h/").header("x-team", "Blue")));
}

/// The kinds exact, prefix, contains, regex and present.
#[test]
fn header_match_kinds() {
    let cases = [
        ("exact", "abc", "abc", true),
        ("exact", "abc", "abcd", false),
        ("prefix", "ab", "abc", true),
        ("prefix", "bc", "abc", false),
        ("contains", "b", "abc", true),
        ("contains", "x", "abc", false),
        ("regex", "a.c", "abc", true),
        ("regex", "b", "abc", false),
        ("present", "", "", true),
    ];
    for (op, operand, value, expected) in cases {
        let t = one("header", "h", op, operand);
        assert_eq!(
            hit(&t, get("http://h/").header("h", value)),
            expected,
            "{op} {operand:?} on {value:?}"
        );
    }
    assert!(!hit(&one("header", "h", "present", ""), get("http://h/")));
}

/// Each kind negated: holds exactly when the plain test fails for every value.
#[test]
fn negated_conditions_hold_when_no_value_matches() {
    assert!(
        hit(&not("header", "h", "present", ""), get("http://h/")),
        "notpresent without the header"
    );
    assert!(!hit(
        &not("header", "h", "present", ""),
        get("http://h/").header("h", "")
    ));
    assert!(hit(
        &not("header", "h", "exact", "a"),
        get("http://h/").header("h", "b")
    ));
    assert!(
        !hit(
            &not("header", "h", "exact", "a"),
            get("http://h/").header("h", "b").header("h", "a")
        ),
        "one value matches"
    );
    assert!(hit(&not("header", "h", "contains", "x"), get("http://h/")));
    assert!(hit(
        &not("header", "h", "prefix", "x"),
        get("http://h/").header("h", "ax")
    ));
    assert!(!hit(
        &not("header", "h", "regex", "a+"),
        get("http://h/").header("h", "aa")
    ));
}

/// A request carrying the header several times matches when any one value does.
#[test]
fn any_of_several_header_values_matches() {
    let t = one("header", "x-env", "exact", "canary");
    assert!(hit(
        &t,
        get("http://h/").header("x-env", "prod").header("X-Env", "canary")
    ));
    assert!(!hit(
        &t,
        get("http://h/").header("x-env", "prod").header("x-env", "dev")
    ));
}

/// Cookies are parsed from every `Cookie` header.
#[test]
fn cookies_are_read_from_every_cookie_header() {
    let t = one("cookie", "session", "exact", "abc");
    assert!(hit(
        &t,
        get("http://h/")
            .header("cookie", "a=1; b=2")
            .header("Cookie", "c=3; session=abc")
    ));
    assert!(hit(&t, get("http://h/").header("cookie", "a=1;session=abc;b=2")));
    assert!(!hit(&t, get("http://h/").header("cookie", "a=1; b=2")));
    assert!(
        !hit(&t, get("http://h/").header("x-session", "session=abc")),
        "only Cookie headers"
    );
}

/// Cookie names are case-sensitive.
#[test]
fn cookie_names_are_case_sensitive() {
    let t = one("cookie", "Session", "exact", "abc");
    assert!(hit(&t, get("http://h/").cookie("Session", "abc")));
    assert!(!hit(&t, get("http://h/").cookie("session", "abc")));
}

/// Cookie conditions take every kind, negation included.
#[test]
fn cookie_conditions_take_every_kind() {
    assert!(hit(
        &one("cookie", "v", "regex", "[0-9]+"),
        get("http://h/").cookie("v", "42")
    ));
    assert!(hit(
        &one("cookie", "v", "present", ""),
        get("http://h/").cookie("v", "")
    ));
    assert!(hit(
        &not("cookie", "v", "present", ""),
        get("http://h/").cookie("w", "1")
    ));
}

/// Query parameters are percent-decoded, names and values alike.
#[test]
fn query_parameters_are_percent_decoded() {
    let t = one("query", "user name", "exact", "a&b/c");
    assert!(hit(&t, get("http://h/p?user%20name=a%26b%2Fc")));
    assert!(!hit(&t, get("http://h/p?user%20name=a")));
    let t = one("query", "debug", "present", "");
    assert!(hit(&t, get("http://h/p?x=1&debug")));
    assert!(!hit(&t, get("http://h/p?x=1&nodebug=1")));
}

/// Several values of one query parameter: any one matching is enough.
#[test]
fn any_of_several_query_values_matches() {
    let t = one("query", "v", "exact", "2");
    assert!(hit(&t, get("http://h/?v=1&v=2")));
}

/// A method condition compares the request method.
#[test]
fn method_condition_matches_request_method() {
    let t = one("method", "", "exact", "POST");
    assert!(hit(&t, get("http://h/").method("POST")));
    assert!(!hit(&t, get("http://h/")));
}

/// Regexes in conditions are anchored to the whole value, so the BFE annotation's `a|b`
/// (compiled to the regex `a|b`) means exactly `a` or `b`.
#[test]
fn regex_conditions_are_anchored_so_alternatives_mean_a_or_b() {
    let t = one("header", "key", "regex", "a|b");
    assert!(hit(&t, get("http://h/").header("key", "a")));
    assert!(hit(&t, get("http://h/").header("key", "b")));
    assert!(!hit(&t, get("http://h/").header("key", "ab")));
    assert!(!hit(&t, get("http://h/").header("key", "xa")));
}

/// `ignore_case` compares exact, prefix and contains values in any ASCII case (NGINX's `map`).
#[test]
fn ignore_case_compares_values_in_any_case() {
    let cases = [
        ("exact", "Blue", "bLUE", true),
        ("exact", "Blue", "blues", false),
        ("prefix", "AB", "abc", true),
        ("prefix", "AB", "xab", false),
        ("contains", "B", "abc", true),
        ("contains", "BD", "abc", false),
        ("contains", "", "abc", true),
    ];
    for (op, value, sent, expected) in cases {
        let mut r = with(rule("r", "", "prefix:/", "c"), "header", "x-team", op, value);
        r["conditions"][0]["ignore_case"] = serde_json::json!(true);
        let t = table(vec![r]);
        assert_eq!(
            hit(&t, get("http://h/").header("x-team", sent)),
            expected,
            "{op} {value:?} vs {sent:?}"
        );
    }
}

/// An inverted `ignore_case` condition holds when no value equals in any case (NGINX's `!value`).
#[test]
fn inverted_ignore_case_holds_when_no_value_matches_in_any_case() {
    let mut r = without(rule("r", "", "prefix:/", "c"), "cookie", "user", "exact", "Admin");
    r["conditions"][0]["ignore_case"] = serde_json::json!(true);
    let t = table(vec![r]);
    assert!(!hit(&t, get("http://h/").cookie("user", "ADMIN")));
    assert!(hit(&t, get("http://h/").cookie("user", "guest")));
    assert!(hit(&t, get("http://h/")));
}
