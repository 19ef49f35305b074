//! ROUTING.md §7.6 as the table decides it: `action.route.canary`, per request, the header (value,
//! pattern, `always`/`never`, or a pattern that did not compile), then the cookie (`always`/`never`,
//! its name in any case), then the weight out of the total (counted only above 100), else the main
//! backends; the main location's rewrite applies to canary requests too.

mod common;

use common::{get, rule, table};
use serde_json::{json, Value};
use switchyard_table::canary::CanaryStep;
use switchyard_table::{RouteTable, SimpleRequest};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// A location to `ns/main:80` with a canary to `ns/canary:80`.
fn with_canary(canary: Value) -> RouteTable {
    let mut r = rule("loc", "h.example", "prefix:/", "ns/main:80");
    let mut canary = canary;
    canary["cluster"] = json!("ns/canary:80");
    r["action"]["route"]["canary"] = canary;
    table(vec![r])
}

/// The cluster `request` goes to with `random`, and the step that decided.
fn goes(t: &RouteTable, request: &SimpleRequest, random: u64) -> (String, Option<CanaryStep>) {
    let decision = t.route(request, random).unwrap();
    (
        decision.backend.unwrap().cluster.clone(),
        decision.canary.map(|c| c.step),
    )
}

const CANARY: &str = "ns/canary:80";
const MAIN: &str = "ns/main:80";

#[test]
fn canary_by_header_value_equal_goes_to_canary_and_other_values_go_on() {
    let t = with_canary(json!({ "header": { "name": "X-Canary", "value": "v2" } }));
    let request = get("http://h.example/").header("x-canary", "v2");
    assert_eq!(goes(&t, &request, 0), (CANARY.into(), Some(CanaryStep::Header)));
    // "always" is not the value: on to the cookie, then the weight (0): main.
    let request = get("http://h.example/").header("x-canary", "always");
    assert_eq!(
        goes(&t, &request, 0),
        (MAIN.into(), Some(CanaryStep::Weight { weight: 0, total: 100 }))
    );
}

#[test]
fn canary_by_header_pattern_searches_the_value_case_sensitively() {
    let t = with_canary(json!({ "header": { "name": "x-canary", "pattern": "^v[23]$" } }));
    assert_eq!(
        goes(&t, &get("http://h.example/").header("x-canary", "v3"), 0).0,
        CANARY
    );
    assert_eq!(goes(&t, &get("http://h.example/").header("x-canary", "V3"), 0).0, MAIN);
}

#[test]
fn canary_header_whose_pattern_did_not_compile_answers_main_and_stops() {
    let t = with_canary(json!({ "header": { "name": "x-canary", "main": true }, "weight": 100 }));
    let request = get("http://h.example/").header("x-canary", "anything");
    assert_eq!(goes(&t, &request, 0), (MAIN.into(), Some(CanaryStep::Header)));
    // Without the header the weight (100 of 100) decides.
    assert_eq!(goes(&t, &get("http://h.example/"), 0).0, CANARY);
}

#[test]
fn canary_by_header_always_and_never_decide_and_never_stops_before_the_cookie() {
    let t = with_canary(json!({ "header": { "name": "x-canary" }, "cookie": "canary" }));
    let always = get("http://h.example/").header("x-canary", "always");
    assert_eq!(goes(&t, &always, 0), (CANARY.into(), Some(CanaryStep::Header)));
    let never = get("http://h.example/")
        .header("x-canary", "never")
        .cookie("canary", "always");
    assert_eq!(goes(&t, &never, 0), (MAIN.into(), Some(CanaryStep::Header)));
    let other = get("http://h.example/")
        .header("x-canary", "maybe")
        .cookie("canary", "always");
    assert_eq!(goes(&t, &other, 0), (CANARY.into(), Some(CanaryStep::Cookie)));
}

#[test]
fn canary_by_cookie_name_is_compared_in_any_case() {
    let t = with_canary(json!({ "cookie": "Canary", "weight": 100 }));
    let never = get("http://h.example/").cookie("cAnArY", "never");
    assert_eq!(goes(&t, &never, 0), (MAIN.into(), Some(CanaryStep::Cookie)));
    let always = get("http://h.example/").cookie("canary", "always");
    assert_eq!(goes(&t, &always, 0), (CANARY.into(), Some(CanaryStep::Cookie)));
}

#[test]
fn canary_weight_is_out_of_the_total_only_above_100() {
    // weight 30 of total 50: the total counts only above 100, so 30 in 100.
    let t = with_canary(json!({ "weight": 30, "weight_total": 50 }));
    let share = (0..10_000u64)
        .filter(|&r| goes(&t, &get("http://h.example/"), r).0 == CANARY)
        .count();
    assert!((2_700..=3_300).contains(&share), "{share} of 10000");
    let t = with_canary(json!({ "weight": 30, "weight_total": 300 }));
    let share = (0..10_000u64)
        .filter(|&r| goes(&t, &get("http://h.example/"), r).0 == CANARY)
        .count();
    assert!((800..=1_200).contains(&share), "{share} of 10000");
}

#[test]
fn canary_weight_zero_never_and_full_always() {
    let none = with_canary(json!({ "weight": 0 }));
    let all = with_canary(json!({ "weight": 1000, "weight_total": 1000 }));
    for r in (0..5_000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)) {
        assert_eq!(goes(&none, &get("http://h.example/"), r).0, MAIN);
        assert_eq!(goes(&all, &get("http://h.example/"), r).0, CANARY);
    }
}

#[test]
fn canary_requests_get_the_main_locations_rewrite() {
    let mut r = rule("loc", "h.example", "regex:(?i)(?:/old(/|$)(.*)).*", "ns/main:80");
    r["action"]["route"]["rewrite_regex"] = json!({ "pattern": "(?i)^(?:/old(/|$)(.*))", "path": "/$2" });
    r["action"]["route"]["canary"] = json!({ "cluster": CANARY, "header": { "name": "x-canary" } });
    let t = table(vec![r]);
    let request = get("http://h.example/old/x?y=1").header("x-canary", "always");
    let decision = t.route(&request, 0).unwrap();
    assert_eq!(decision.backend.unwrap().cluster, CANARY);
    assert_eq!(decision.rule.rewrite(&request.path).unwrap().path, "/x?y=1");
}

#[test]
fn a_canary_the_filter_cannot_decide_with_is_refused_naming_the_field() {
    for (canary, field) in [
        (json!({ "cluster": "c", "weight": 101 }), "canary.weight"),
        (
            json!({ "cluster": "c", "header": { "name": "x", "pattern": "(" } }),
            "canary.header.pattern",
        ),
        (
            json!({ "cluster": "c", "header": { "name": "x", "value": "a", "main": true } }),
            "canary.header",
        ),
        (json!({ "cluster": "c", "cookie": "a b" }), "canary.cookie"),
        (json!({ "cluster": "" }), "canary.cluster"),
    ] {
        let mut r = rule("loc", "h.example", "prefix:/", "ns/main:80");
        r["action"]["route"]["canary"] = canary.clone();
        let json = json!({ "version": 1, "rules": [r] });
        let error = RouteTable::from_json(json.to_string().as_bytes())
            .unwrap_err()
            .to_string();
        assert!(error.contains(field), "{canary}: {error}");
    }
}

#[test]
fn canary_survives_the_compact_form() {
    let mut r = rule("loc", "h.example", "prefix:/", "ns/main:80");
    r["action"]["route"]["canary"] = json!({
        "cluster": CANARY, "header": { "name": "x-canary", "pattern": "^v2" }, "cookie": "c", "weight": 7
    });
    let spec = switchyard_table::TableSpec::from_value(json!({ "version": 1, "rules": [r] })).unwrap();
    let compact = switchyard_table::compact::Encoder::new().encode(&spec).unwrap();
    let t = RouteTable::from_json(compact.as_bytes()).unwrap();
    assert_eq!(t.rules()[0].spec(), &spec.rules[0]);
    assert_eq!(
        goes(&t, &get("http://h.example/").header("x-canary", "v2"), 0).0,
        CANARY
    );
}
