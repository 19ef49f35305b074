//! ROUTING.md §6 through the real filter (`switchyard_filter.wasm`) in host-sim: the tables
//! `switchyard compile` made of NGINX's VirtualServer examples (the checked-in goldens of
//! `examples/003-*`, which `cargo test -p switchyard --test golden` keeps equal to what the compiler
//! writes) answer as the compiler's own tests say they route natively: matches on the method and a
//! cookie (any case), the split, VirtualServerRoute delegation, the host's own 404, a redirect with
//! its variables filled in, and a `return` with its content type.

mod common;

use switchyard_host_sim::{Outcome, Request, Sim};

/// A simulator running the filter with the golden table of `example`.
fn filter(example: &str) -> Sim {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../sidecar/tests/golden")
        .join(format!("{example}.json"));
    let table = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut sim = Sim::load(common::filter_wasm()).expect("the filter loads");
    assert!(
        sim.configure(table),
        "the filter refused {example}: {:?}",
        sim.take_logs()
    );
    sim
}

fn cluster(outcome: &Outcome) -> Option<&str> {
    assert!(outcome.error.is_none(), "the filter failed: {:?}", outcome.error);
    outcome.request_header("x-route-cluster")
}

/// Advanced routing: the first match in list order wins over the route's own action; a plain value
/// compares in any case; the route's own splits serve when no match holds.
#[test]
fn matches_on_method_and_cookie_then_the_split_through_the_filter() {
    let mut sim = filter("003-advanced-routing");
    let host = "http://cafe-advanced.example.com";
    let post = sim.request(Request::get(&format!("{host}/tea")).method("POST"));
    assert_eq!(cluster(&post), Some("default/tea-post-svc:80"));
    let get = sim.request(Request::get(&format!("{host}/tea")));
    assert_eq!(cluster(&get), Some("default/tea-svc:80"));
    let v2 = sim.request(Request::get(&format!("{host}/coffee")).cookie("version", "V2"));
    assert_eq!(cluster(&v2), Some("default/coffee-v2-svc:80"));
    let mut v1 = 0;
    for _ in 0..500 {
        match cluster(&sim.request(Request::get(&format!("{host}/coffee")))) {
            Some("default/coffee-v1-svc:80") => v1 += 1,
            Some("default/coffee-v2-svc:80") => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!((350..=450).contains(&v1), "about 80 % of 500 to coffee-v1, got {v1}");
}

/// A redirect's `${scheme}` and `${host}` are the request's; a `return` answers with its type.
#[test]
fn redirect_and_return_are_answered_by_the_filter() {
    let mut sim = filter("003-advanced-routing");
    // Plain HTTP: a VirtualServer without `tls` is not served on HTTPS (ROUTING.md §8.6).
    let old = sim.request(Request::get("http://cafe-advanced.example.com:8080/old?x=1"));
    let local = old.local_response.as_ref().expect("a local reply");
    assert_eq!(local.status, 302);
    assert_eq!(local.header("location"), Some("http://cafe-advanced.example.com/tea"));
    let health = sim.request(Request::get("http://cafe-advanced.example.com/health"));
    let local = health.local_response.as_ref().expect("a local reply");
    assert_eq!(
        (local.status, local.header("content-type")),
        (200, Some("application/json"))
    );
    assert_eq!(local.body_text(), "{\"status\": \"ok\"}");
}

/// VirtualServerRoutes in other namespaces serve their subroutes; a path no route matches is the
/// VirtualServer's own 404.
#[test]
fn virtualserverroute_delegation_and_the_hosts_own_404_through_the_filter() {
    let mut sim = filter("003-cross-namespace");
    let tea = sim.request(Request::get("http://cafe-cross.example.com/tea"));
    assert_eq!(cluster(&tea), Some("tea/tea-svc:80"));
    let coffee = sim.request(Request::get("http://cafe-cross.example.com/coffee/latte"));
    assert_eq!(cluster(&coffee), Some("coffee/coffee-svc:80"));
    let milk = sim.request(Request::get("http://cafe-cross.example.com/milk"));
    assert_eq!(milk.local_status(), Some(404));
    assert_eq!(milk.request_header("x-route-cluster"), None);
}

/// Seed 003: the VirtualServer created first owns the host; the Ingress keeps its other host.
#[test]
fn seed_003_the_older_virtualserver_owns_the_host_through_the_filter() {
    let mut sim = filter("003-host-collision");
    let cafe = sim.request(Request::get("http://cafe.example.com/tea"));
    assert_eq!(cluster(&cafe), Some("default/coffee-vs:80"));
    let pub_ = sim.request(Request::get("http://pub.example.com/"));
    assert_eq!(cluster(&pub_), Some("default/pub:80"));
    let mut sim = filter("003-ingress-first");
    let cafe = sim.request(Request::get("http://cafe.example.org/"));
    assert_eq!(cluster(&cafe), Some("ingress-first/coffee-ingress:80"));
}
