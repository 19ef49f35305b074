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
    let compact_text = compact::to_text(&written);
    let wrapper: serde_json::Value = serde_json::from_str(&compact_text).unwrap();
    assert_eq!(compact::unwrap(wrapper).unwrap(), written);
    assert_eq!(
        RouteTable::from_json(compact_text.as_bytes()).unwrap().rules().len(),
        4,
        "RouteTable::from_json reads the compact form"
    );
    let t = RouteTable::try_from(spec).unwrap();
    assert_eq!((t.rules().len(), t.host_count()), (4, 3));
}
