//! The shipped filter exports exactly what `filter/exports.json` keeps (the graph `make build-wasm`
//! hands to `wasm-metadce`), and works without the callbacks it dropped: a host that finds no
//! `proxy_on_request_trailers` or `proxy_on_response_body` goes on with the request, as Envoy does.
//! `proxy_on_request_body` is kept: it counts a body against its rule's limit.

mod common;

use std::collections::BTreeSet;

use serde_json::json;
use switchyard_cases::rule;
use switchyard_host_sim::{Action, Phase, Request, Response, Sim};

/// `filter/exports.json`, as `wasm-metadce` reads it.
const KEPT: &str = include_str!("../../filter/exports.json");

/// The export names the kept list holds.
fn kept() -> BTreeSet<String> {
    let graph: serde_json::Value = serde_json::from_str(KEPT).expect("filter/exports.json is JSON");
    graph
        .as_array()
        .expect("a list of graph nodes")
        .iter()
        .map(|node| node["export"].as_str().expect("every node names an export").to_owned())
        .collect()
}

#[test]
fn the_shipped_filter_exports_exactly_the_kept_list() {
    let sim = Sim::load(common::filter_wasm()).expect("the filter loads");
    let exported: BTreeSet<String> = sim.exports().into_iter().collect();
    assert_eq!(exported, kept(), "exports of {}", common::filter_wasm().display());
}

/// Every entry is a root with its reason, and the file stays in the JSON subset `wasm-metadce`
/// parses (no escapes, so no backslash anywhere).
#[test]
fn every_kept_export_is_a_root_and_says_why() {
    assert!(!KEPT.contains('\\'), "wasm-metadce's parser does not read escapes");
    let graph: serde_json::Value = serde_json::from_str(KEPT).unwrap();
    for node in graph.as_array().unwrap() {
        assert_eq!(node["root"], json!(true), "{node}");
        assert_eq!(node["name"], node["export"], "{node}");
        assert!(node["why"].as_str().is_some_and(|why| why.len() > 20), "{node}");
    }
    for gone in [
        "proxy_on_request_trailers",
        "proxy_on_response_body",
        "proxy_on_grpc_receive",
        "proxy_on_queue_ready",
    ] {
        assert!(!kept().contains(gone), "{gone}");
    }
}

/// A request with a body and trailers, and a response with a body: the filter routes it from its
/// headers, lets the body through (a rule without a limit counts nothing), and the trailer and
/// response body phases, which it does not export, let everything through.
#[test]
fn a_request_with_a_body_and_trailers_is_routed_without_body_callbacks() {
    let mut sim = Sim::load(common::filter_wasm()).unwrap();
    let table = json!({ "version": 1, "rules": [rule("I/a/x#0").segment_prefix("/upload").to("a/up:80")] });
    assert!(sim.configure(table.to_string()));
    let outcome = sim.request(
        Request::new("POST", "http://example.net/upload")
            .body("a body of some bytes")
            .trailer("x-checksum", "abc")
            .response(Response::new(200).body("stored")),
    );
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert!(outcome.forwarded);
    assert_eq!(outcome.request_header("x-route-cluster"), Some("a/up:80"));
    let phases: Vec<(Phase, Action)> = outcome.phases.iter().map(|p| (p.phase, p.action)).collect();
    assert_eq!(
        phases,
        [
            (Phase::RequestHeaders, Action::Continue),
            (Phase::RequestBody, Action::Continue),
            (Phase::ResponseHeaders, Action::Continue)
        ]
    );
}

/// A rule's body limit (issue "Policies beyond the route") on a body that comes without a
/// `content-length`: counted in the body phase, answered 413 once over the limit, never forwarded;
/// one within the limit goes on.
#[test]
fn a_body_over_its_rules_limit_is_answered_413_in_the_body_phase() {
    let mut sim = Sim::load(common::filter_wasm()).unwrap();
    let mut limited = rule("I/a/x#0").segment_prefix("/upload").to("a/up:80");
    limited["policy"] = json!({ "max_body_bytes": 10 });
    let table = json!({ "version": 1, "rules": [limited] });
    assert!(sim.configure(table.to_string()));
    let over = sim.request(Request::new("POST", "http://example.net/upload").body("eleven byte"));
    assert!(over.error.is_none(), "{:?}", over.error);
    assert_eq!(over.local_status(), Some(413), "{over:?}");
    assert!(!over.forwarded);
    let within = sim.request(Request::new("POST", "http://example.net/upload").body("ten bytes."));
    assert!(within.forwarded, "{within:?}");
}
