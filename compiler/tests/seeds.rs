//! Every example of the five seed documents, end to end: the manifests under `examples/` →
//! compile → `RouteTable` → `route(request)` → the service (or status) the document states.

mod common;

use common::*;
use switchyard_compiler::status::{Reason, Status};

// ---- seed 002: BFE's priority of route rules ---------------------------------------------------------

#[test]
fn exact_host_beats_wildcard_seed_002_host_priority() {
    let c = compile_example("002-host-priority");
    // curl "http://example.net/bar" → host_priority1.
    assert_eq!(
        cluster_for(&c, &get("http://example.net/bar")).as_deref(),
        Some("production/service1:80")
    );
    assert_eq!(
        rule_for(&c, &get("http://example.net/bar")).as_deref(),
        Some("Ingress/production/host_priority1#0")
    );
    // The wildcard still serves the hosts it alone matches.
    assert_eq!(
        cluster_for(&c, &get("http://other.net/bar")).as_deref(),
        Some("production/service2:80")
    );
}

#[test]
fn more_precise_path_beats_more_conditions_seed_002_path_priority() {
    let c = compile_example("002-path-priority");
    // curl "http://example.net/bar/foo" -H "Key: value" → path_priority1.
    let request = get("http://example.net/bar/foo").header("Key", "value");
    assert_eq!(cluster_for(&c, &request).as_deref(), Some("production/service1:80"));
    assert_eq!(
        rule_for(&c, &request).as_deref(),
        Some("Ingress/production/path_priority1#0")
    );
}

#[test]
fn more_conditions_win_when_host_and_path_are_equal_seed_002_cond_priority() {
    let c = compile_example("002-cond-priority");
    // curl "http://example.net/bar/foo" -H "Key: value" → cond_priority1.
    let request = get("http://example.net/bar/foo").header("Key", "value");
    assert_eq!(cluster_for(&c, &request).as_deref(), Some("production/service1:80"));
    // Without the header, cond_priority1's condition fails and cond_priority2 gets its chance.
    assert_eq!(
        cluster_for(&c, &get("http://example.net/bar/foo")).as_deref(),
        Some("production/service2:80")
    );
}

#[test]
fn cookie_condition_beats_header_condition_seed_002_multi_cond_priority() {
    let c = compile_example("002-multi-cond-priority");
    // curl "http://example.net/bar/foo" -H "Header-key: value" --cookie "cookie-key: value" → multi_cond_priority2.
    let request = get("http://example.net/bar/foo")
        .header("Header-key", "value")
        .cookie("cookie-key", "value");
    assert_eq!(cluster_for(&c, &request).as_deref(), Some("production/service2:80"));
    assert_eq!(
        rule_for(&c, &request).as_deref(),
        Some("Ingress/production/multi_cond_priority2#0")
    );
    // With only the header, the header rule matches.
    let header_only = get("http://example.net/bar/foo").header("Header-key", "value");
    assert_eq!(cluster_for(&c, &header_only).as_deref(), Some("production/service1:80"));
    // With neither, nothing matches: 404.
    assert_eq!(rule_for(&c, &get("http://example.net/bar/foo")), None);
}

#[test]
fn seed_002_ingresses_need_ingress_class_bfe() {
    // They carry kubernetes.io/ingress.class: bfe; without --ingress-class bfe they are not ours.
    let loaded = switchyard_compiler::load::read_paths(&[examples_dir().join("002-host-priority")]).unwrap();
    let c = switchyard_compiler::compile(&loaded.objects, &switchyard_compiler::Options::default()).expect("compiles");
    assert!(c.table.rules.is_empty());
    assert_eq!(status(&c, "Ingress", "production", "host_priority1"), Status::Ignored);
}

// ---- seed 000: HAProxy's IngressClass documentation ---------------------------------------------------

#[test]
fn ingress_class_name_pointing_at_our_controller_is_routed_seed_000() {
    let c = compile_example("000-class-name");
    assert_eq!(status(&c, "Ingress", "default", "test"), Status::Accepted);
    // servicePort: http is resolved through the Service http-echo.
    assert_eq!(
        cluster_for(&c, &get("http://test.k8s.local/")).as_deref(),
        Some("default/http-echo:8080")
    );
}

#[test]
fn ingress_class_flag_selects_the_controller_slash_class_seed_000() {
    let c = compile_example("000-class-prod");
    assert_eq!(status(&c, "Ingress", "default", "test"), Status::Accepted);
    assert_eq!(status(&c, "Ingress", "default", "other-instance"), Status::Ignored);
    assert_eq!(status(&c, "IngressClass", "", "haproxy-prod"), Status::Valid);
    assert_eq!(status(&c, "IngressClass", "", "haproxy"), Status::Ignored);
    // /other belongs to the other controller instance: here it falls to test's "/".
    assert_eq!(
        cluster_for(&c, &get("http://test.k8s.local/other")).as_deref(),
        Some("default/http-echo:8080")
    );
}

#[test]
fn legacy_ingress_class_annotation_selects_the_controller_seed_000() {
    let c = compile_example("000-class-annotation");
    assert_eq!(status(&c, "Ingress", "default", "test"), Status::Accepted);
    assert_eq!(status(&c, "Ingress", "default", "nginx-one"), Status::Ignored);
    assert_eq!(
        cluster_for(&c, &get("http://test.k8s.local/x")).as_deref(),
        Some("default/http-echo:8080")
    );
    assert_eq!(rule_for(&c, &get("http://nginx.k8s.local/")), None);
}

// ---- seed 001: the default IngressClass ------------------------------------------------------------------

#[test]
fn classless_ingress_is_unrouted_when_another_controller_owns_the_default_seed_001() {
    let c = compile_example("001-no-default-class");
    assert_eq!(status(&c, "Ingress", "default", "playground"), Status::Ignored);
    assert!(c.table.rules.is_empty());
    assert_eq!(rule_for(&c, &get("http://api-test.ifuryst.com/metrics")), None);
    let why = message(
        status_of(&c, "Ingress", "default", "playground"),
        Reason::IgnoredByClass,
    );
    assert!(why.contains("traefik"), "{why}");
}

#[test]
fn classless_ingress_is_routed_when_our_class_is_the_default_seed_001() {
    let c = compile_example("001-default-class-ours");
    assert_eq!(status(&c, "Ingress", "default", "playground"), Status::Accepted);
    // extensions/v1beta1, ImplementationSpecific /metrics: a segment prefix.
    assert_eq!(
        cluster_for(&c, &get("http://api-test.ifuryst.com/metrics")).as_deref(),
        Some("default/playground:2112")
    );
    assert_eq!(
        cluster_for(&c, &get("http://api-test.ifuryst.com/metrics/x")).as_deref(),
        Some("default/playground:2112")
    );
    assert_eq!(rule_for(&c, &get("http://api-test.ifuryst.com/metricsx")), None);
    // TLS settings do not affect routing: plain HTTP to the same host routes.
}

// ---- seed 003: NGINX's host collisions -------------------------------------------------------------------

#[test]
fn oldest_resource_wins_the_host_and_the_loser_keeps_its_other_hosts_seed_003() {
    let c = compile_example("003-host-collision");
    assert_eq!(
        cluster_for(&c, &get("http://cafe.example.com/")).as_deref(),
        Some("default/coffee-vs:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://cafe.example.com/tea")).as_deref(),
        Some("default/coffee-vs:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://pub.example.com/")).as_deref(),
        Some("default/pub:80")
    );
    let ingress = status_of(&c, "Ingress", "default", "cafe-ingress");
    assert_eq!(ingress.status, Status::Accepted);
    assert_eq!(
        message(ingress, Reason::HostTaken),
        "host cafe.example.com is taken by VirtualServer/default/cafe-virtual-server"
    );
    let second = status_of(&c, "Ingress", "default", "cafe-ingress-2");
    assert_eq!(second.status, Status::Rejected);
    assert_eq!(
        message(second, Reason::Rejected),
        "All hosts are taken by other resources"
    );
    assert_eq!(
        status(&c, "VirtualServer", "default", "cafe-virtual-server"),
        Status::Valid
    );
}

#[test]
fn older_ingress_wins_the_host_and_the_virtualserver_is_rejected_seed_003() {
    let c = compile_example("003-ingress-first");
    assert_eq!(
        cluster_for(&c, &get("http://cafe.example.org/")).as_deref(),
        Some("ingress-first/coffee-ingress:80")
    );
    let vs = status_of(&c, "VirtualServer", "ingress-first", "cafe-virtual-server");
    assert_eq!(vs.status, Status::Rejected);
    let nginx = vs.nginx.clone().unwrap();
    assert_eq!((nginx.state.as_str(), nginx.reason.as_str()), ("Warning", "Rejected"));
    assert!(!has_reason(vs, Reason::AddedOrUpdated), "{vs:?}");
}

#[test]
fn cross_namespace_virtualserver_delegates_to_virtualserverroutes_nginx_example() {
    let c = compile_example("003-cross-namespace");
    assert_eq!(
        cluster_for(&c, &get("http://cafe-cross.example.com/tea")).as_deref(),
        Some("tea/tea-svc:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://cafe-cross.example.com/coffee")).as_deref(),
        Some("coffee/coffee-svc:80")
    );
    assert_eq!(direct_status(&c, &get("http://cafe-cross.example.com/milk")), Some(404));
    for (ns, name) in [("tea", "tea"), ("coffee", "coffee")] {
        assert_eq!(status(&c, "VirtualServerRoute", ns, name), Status::Valid);
    }
}

#[test]
fn advanced_routing_matches_method_and_cookie_and_splits_nginx_example() {
    let c = compile_example("003-advanced-routing");
    let host = "http://cafe-advanced.example.com";
    let tea = get(&format!("{host}/tea"));
    assert_eq!(cluster_for(&c, &tea).as_deref(), Some("default/tea-svc:80"));
    let post = get(&format!("{host}/tea")).method("POST");
    assert_eq!(cluster_for(&c, &post).as_deref(), Some("default/tea-post-svc:80"));
    let v2 = get(&format!("{host}/coffee")).cookie("version", "v2");
    assert_eq!(cluster_for(&c, &v2).as_deref(), Some("default/coffee-v2-svc:80"));
    let table = common::table(&c);
    let coffee = get(&format!("{host}/coffee"));
    let to_v1 = (0..100u64)
        .filter(|&r| table.route(&coffee, r).unwrap().backend.unwrap().cluster == "default/coffee-v1-svc:80")
        .count();
    assert_eq!(to_v1, 80);
    assert_eq!(direct_status(&c, &get(&format!("{host}/health"))), Some(200));
    assert_eq!(status(&c, "VirtualServer", "default", "cafe"), Status::Valid);
}

#[test]
fn older_passthrough_transport_server_takes_the_host_and_the_older_tcp_server_the_listener_seed_003() {
    let c = compile_example("003-transport-server");
    // Host collision: secure-passthrough (older) wins secure.example.com from the VirtualServer; the
    // host leaves the HTTP table and is passed through by SNI.
    assert_eq!(rule_for(&c, &get("http://secure.example.com/")), None);
    let passthrough: Vec<(Option<&str>, &str, &str)> =
        c.l4.passthrough
            .iter()
            .map(|r| (r.host.as_deref(), r.cluster.as_str(), r.resource.as_str()))
            .collect();
    assert_eq!(
        passthrough,
        [(
            Some("secure.example.com"),
            "default/secure-app:8443",
            "TransportServer/default/secure-passthrough"
        )]
    );
    assert_eq!(
        status(&c, "TransportServer", "default", "secure-passthrough"),
        Status::Valid
    );
    let vs = status_of(&c, "VirtualServer", "default", "secure-web");
    assert_eq!(vs.status, Status::Rejected);
    assert_eq!(
        message(vs, Reason::HostTaken),
        "host secure.example.com is taken by TransportServer/default/secure-passthrough"
    );
    // Listener collision: tcp-1 (older) owns dns-tcp, the GlobalConfiguration's port 15353.
    let listeners: Vec<(&str, u16, Vec<&str>)> =
        c.l4.listeners
            .iter()
            .map(|l| {
                (
                    l.name.as_str(),
                    l.port,
                    l.routes.iter().map(|r| r.cluster.as_str()).collect(),
                )
            })
            .collect();
    assert_eq!(listeners, [("dns-tcp", 15353, vec!["default/dns-1:53"])]);
    assert_eq!(status(&c, "TransportServer", "default", "tcp-1"), Status::Valid);
    let loser = status_of(&c, "TransportServer", "default", "tcp-2");
    assert_eq!(loser.status, Status::Rejected);
    assert_eq!(
        message(loser, Reason::ListenerTaken),
        "Listener dns-tcp is taken by another resource"
    );
}

// ---- seed 004: Contour's HTTPProxy inclusion -----------------------------------------------------------------

#[test]
fn inclusion_in_the_same_namespace_prefixes_the_childs_routes_seed_004() {
    let c = compile_example("004-same-namespace");
    assert_eq!(
        cluster_for(&c, &get("http://root.bar.com/service2")).as_deref(),
        Some("default/s2:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://root.bar.com/service2/blog")).as_deref(),
        Some("default/blog:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://root.bar.com/service2/blog/post")).as_deref(),
        Some("default/blog:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://root.bar.com/")).as_deref(),
        Some("default/s1:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://root.bar.com/other")).as_deref(),
        Some("default/s1:80")
    );
    assert_eq!(status(&c, "HTTPProxy", "default", "include-root"), Status::Valid);
    assert_eq!(status(&c, "HTTPProxy", "default", "service2"), Status::Valid);
}

#[test]
fn inclusion_across_namespaces_uses_the_childs_namespace_for_services_seed_004() {
    let c = compile_example("004-across-namespaces");
    assert_eq!(
        cluster_for(&c, &get("http://ns-root.bar.com/blog")).as_deref(),
        Some("marketing/s2:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://ns-root.bar.com/blog/2024")).as_deref(),
        Some("marketing/s2:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://ns-root.bar.com/")).as_deref(),
        Some("default/s1:80")
    );
    assert_eq!(status(&c, "HTTPProxy", "marketing", "blog"), Status::Valid);
    // Orphaned HTTPProxy children are ignored in routing.
    assert_eq!(status(&c, "HTTPProxy", "marketing", "orphan"), Status::Orphaned);
    assert!(!c.table.rules.iter().any(|r| r.name.contains("orphan")));
}
