//! Issue 23 (ROUTING.md §2 and §6) through the real filter (`switchyard_filter.wasm`) in host-sim:
//! the NGINX manifests of `tests/cases/nginx/` are compiled (the compiler's own tests run the same
//! files natively, compiler/tests/virtualserver.rs and collisions.rs) and the table is configured
//! into the filter, which must answer as NGINX does: regex paths written with a space after the
//! modifier, the four redirect variables, `rewritePath` with a regex's groups, a VirtualServerRoute
//! outside its route's prefix, condition names NGINX cannot read, and a mergeable master Ingress.

mod common;

use switchyard_compiler::load::{parse_text, Loaded};
use switchyard_compiler::{compile, Options};
use switchyard_host_sim::{Outcome, Request, Sim};

/// A simulator running the filter with the table compiled from `tests/cases/nginx/<case>.yaml`.
fn filter(case: &str) -> Sim {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/cases/nginx")
        .join(format!("{case}.yaml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut loaded = Loaded::default();
    parse_text(&text, case, &mut loaded).unwrap();
    let compiled = compile(&loaded.objects, &Options::default()).unwrap();
    let mut sim = Sim::load(common::filter_wasm()).expect("the filter loads");
    let table = serde_json::to_string(&compiled.table).unwrap();
    assert!(sim.configure(table), "the filter refused {case}: {:?}", sim.take_logs());
    sim
}

fn cluster(outcome: &Outcome) -> Option<&str> {
    assert!(outcome.error.is_none(), "the filter failed: {:?}", outcome.error);
    outcome.request_header("x-route-cluster")
}

/// Item 1: `~ ^/coffee/.*\.jpg$` (a space after the modifier), `~*` with a tab, `= /menu`,
/// `^~ /static` and a VirtualServerRoute's `~  ^/juice/` route as written without the space.
#[test]
fn regex_path_with_space_after_modifier_matches_in_the_filter() {
    let mut sim = filter("regex-path-space");
    let mut to = |path: &str| {
        let outcome = sim.request(Request::get(&format!("http://cafe.example.com{path}")));
        cluster(&outcome).map(str::to_owned)
    };
    assert_eq!(to("/coffee/beans.jpg").as_deref(), Some("default/images-svc:80"));
    assert_eq!(to("/coffee/beans.png").as_deref(), Some("default/root-svc:80"));
    assert_eq!(to("/TEA/cup.PNG").as_deref(), Some("default/icons-svc:80"));
    assert_eq!(to("/menu").as_deref(), Some("default/menu-svc:80"));
    assert_eq!(to("/static/a.jpg").as_deref(), Some("default/static-svc:80"));
    assert_eq!(to("/juice/orange").as_deref(), Some("default/juice-svc:80"));
}

/// Item 2: `${http_x_forwarded_proto}` is the request's X-Forwarded-Proto (empty when absent);
/// `${scheme}` the request's scheme.
#[test]
fn redirect_fills_http_x_forwarded_proto_in_the_filter() {
    let mut sim = filter("redirect-variables");
    let behind_tls =
        sim.request(Request::get("http://cafe.example.com/old/menu?x=1").header("x-forwarded-proto", "https"));
    let local = behind_tls.local_response.as_ref().expect("a local reply");
    assert_eq!(local.status, 302);
    assert_eq!(
        local.header("location"),
        Some("https://cafe.example.com/new/old/menu?x=1")
    );
    let bare = sim.request(Request::get("http://cafe.example.com/old"));
    let local = bare.local_response.as_ref().expect("a local reply");
    assert_eq!(local.header("location"), Some("://cafe.example.com/new/old"));
    // Plain HTTP: a VirtualServer without `tls` is not served on HTTPS (ROUTING.md §8.6).
    let plain = sim.request(Request::get("http://cafe.example.com/plain"));
    let local = plain.local_response.as_ref().expect("a local reply");
    assert_eq!(
        (local.status, local.header("location")),
        (301, Some("http://cafe.example.com/tea"))
    );
}

/// Item 3: the filter sends `:path` rebuilt from the regex's groups, the query string kept (NGINX
/// Ingress Controller's tests/suite/test_rewrites.py expectations), in a VirtualServerRoute and a
/// match too.
#[test]
fn rewrite_path_on_a_regex_location_substitutes_the_groups_in_the_filter() {
    let mut sim = filter("regex-rewrite");
    for (path, want) in [
        ("/regex1/?arg=value", "/?arg=value"),
        ("/regex1/abc?arg=value", "/abc?arg=value"),
        ("/COFFEE/latte/hot?x=1", "/beans/hot/latte?x=1"),
        ("/regex2/abc?arg=value", "/?arg=value"),
    ] {
        let outcome = sim.request(Request::get(&format!("http://vs.example.com{path}")));
        assert_eq!(cluster(&outcome), Some("default/hello-svc:80"), "{path}");
        assert_eq!(outcome.request_header(":path"), Some(want), "{path}");
    }
    let john = sim.request(Request::get("http://vs.example.com/regex2/abc?arg=value").cookie("user", "john"));
    assert_eq!(john.request_header(":path"), Some("/user/john/?arg=value"));
}

/// Item 4: the route whose VirtualServerRoute does not fit answers 502; the subroute's own path is
/// the VirtualServer's 404.
#[test]
fn route_to_a_virtualserverroute_outside_its_prefix_answers_502_in_the_filter() {
    let mut sim = filter("subroute-outside-prefix");
    let tea = sim.request(Request::get("http://cafe.example.com/tea"));
    assert_eq!(tea.local_status(), Some(502));
    assert_eq!(tea.request_header("x-route-cluster"), None);
    let coffee = sim.request(Request::get("http://cafe.example.com/coffee"));
    assert_eq!(coffee.local_status(), Some(404));
}

/// Item 5: the VirtualServer with cookie `x-version` is Invalid and routes nothing (the filter's
/// 404, never a backend); the VirtualServerRoute with argument `beer.kind` is Invalid, its route 502.
#[test]
fn condition_name_nginx_cannot_read_routes_nothing_in_the_filter() {
    let mut sim = filter("condition-names");
    let coffee = sim.request(Request::get("http://cafe.example.com/coffee").cookie("x-version", "v2"));
    assert_eq!(coffee.local_status(), Some(404));
    assert_eq!(coffee.request_header("x-route-cluster"), None);
    let beer = sim.request(Request::get("http://bar.example.com/beer?beer.kind=ale"));
    assert_eq!(beer.local_status(), Some(502));
    let other = sim.request(Request::get("http://bar.example.com/wine"));
    assert_eq!(cluster(&other), Some("default/beer-svc:80"));
}

/// Item 6: the master Ingress (oldest, no paths) holds the host for its minions against the younger
/// VirtualServer.
#[test]
fn mergeable_master_ingress_holds_the_host_for_its_minions_in_the_filter() {
    let mut sim = filter("mergeable-master");
    let coffee = sim.request(Request::get("http://cafe.example.com/coffee"));
    assert_eq!(cluster(&coffee), Some("default/coffee-svc:80"));
    let tea = sim.request(Request::get("http://cafe.example.com/tea"));
    assert_eq!(cluster(&tea), Some("default/tea-svc:80"));
    let root = sim.request(Request::get("http://cafe.example.com/"));
    assert_eq!(root.local_status(), Some(404));
}
