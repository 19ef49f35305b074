//! Seed 003 and NGINX's VirtualServer examples end to end (ROUTING.md §6): the `examples/003-*`
//! folders compiled by `switchyard compile` (`SWITCHYARD_BIN`) into one table, loaded into a real
//! Envoy with the filter, and real requests answered by the backend the contract names, or by the
//! filter's own reply (a VirtualServer's 404, a redirect, a `return`). Needs `ENVOY_BIN`,
//! `SWITCHYARD_WASM` and `SWITCHYARD_BIN` (`make test-envoy` sets them); fails without them.

use std::path::{Path, PathBuf};

use switchyard_e2e::{get, switchyard_compile, Envoy, Request, Response};

const EXAMPLES: [&str; 4] = [
    "003-host-collision",
    "003-ingress-first",
    "003-cross-namespace",
    "003-advanced-routing",
];

const CLUSTERS: [&str; 10] = [
    "default/coffee-vs:80",
    "default/pub:80",
    "ingress-first/coffee-ingress:80",
    "ingress-first/coffee-vs:80",
    "tea/tea-svc:80",
    "coffee/coffee-svc:80",
    "default/tea-post-svc:80",
    "default/tea-svc:80",
    "default/coffee-v1-svc:80",
    "default/coffee-v2-svc:80",
];

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name)
}

fn envoy() -> Envoy {
    let paths: Vec<PathBuf> = EXAMPLES.iter().map(|e| example(e)).collect();
    let paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    Envoy::start(&switchyard_compile(&paths, &["--debug-rule-header"]), &CLUSTERS)
}

fn send(envoy: &Envoy, request: Request) -> Response {
    let response = envoy.send(&request);
    eprintln!(
        "{} {}{} -> {} {:?} {:?}",
        request.method,
        request.host,
        request.path,
        response.status,
        response.backend(),
        response.header("x-switchyard-rule")
    );
    response
}

/// All of seed 003's and NGINX's examples in one Envoy, as `make run` serves them.
#[test]
fn seed_003_and_nginx_virtualserver_examples_route_in_envoy() {
    let envoy = envoy();
    // Seed 003, VirtualServer created first: it owns cafe.example.com; the Ingress keeps pub.
    let cafe = send(&envoy, get("cafe.example.com", "/tea"));
    assert_eq!(cafe.backend(), Some("coffee-vs"));
    assert_eq!(
        cafe.header("x-switchyard-rule"),
        Some("VirtualServer/default/cafe-virtual-server#0")
    );
    assert_eq!(send(&envoy, get("pub.example.com", "/")).backend(), Some("pub"));
    // Seed 003, Ingress created first: the Ingress owns the host, the VirtualServer is rejected.
    assert_eq!(
        send(&envoy, get("cafe.example.org", "/coffee")).backend(),
        Some("coffee-ingress")
    );
    // Cross-namespace delegation to VirtualServerRoutes; an unmatched path is the host's own 404.
    assert_eq!(
        send(&envoy, get("cafe-cross.example.com", "/tea")).backend(),
        Some("tea-svc")
    );
    assert_eq!(
        send(&envoy, get("cafe-cross.example.com", "/coffee/x")).backend(),
        Some("coffee-svc")
    );
    let milk = send(&envoy, get("cafe-cross.example.com", "/milk"));
    assert_eq!((milk.status, milk.backend()), (404, None));
    // Advanced routing: the method match, the cookie match (any case), the split, redirect, return.
    let host = "cafe-advanced.example.com";
    assert_eq!(
        send(&envoy, get(host, "/tea").method("POST")).backend(),
        Some("tea-post-svc")
    );
    assert_eq!(send(&envoy, get(host, "/tea")).backend(), Some("tea-svc"));
    let v2 = get(host, "/coffee").header("cookie", "version=V2");
    assert_eq!(send(&envoy, v2).backend(), Some("coffee-v2-svc"));
    let split: Vec<String> = (0..50)
        .filter_map(|_| send(&envoy, get(host, "/coffee")).backend().map(str::to_owned))
        .collect();
    assert_eq!(split.len(), 50);
    let v1 = split.iter().filter(|b| *b == "coffee-v1-svc").count();
    assert!((25..50).contains(&v1), "about 80 % of 50 to coffee-v1-svc, got {v1}");
    let old = send(&envoy, get(host, "/old?cup=1"));
    assert_eq!(old.status, 302);
    assert_eq!(old.header("location"), Some("http://cafe-advanced.example.com/tea"));
    let health = send(&envoy, get(host, "/health"));
    assert_eq!(health.status, 200);
    assert_eq!(health.header("content-type"), Some("application/json"));
    assert_eq!(health.body, "{\"status\": \"ok\"}");
}
