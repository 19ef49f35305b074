//! ROUTING.md §3 and §5 end to end: manifests compiled by `switchyard compile` (`SWITCHYARD_BIN`),
//! the table loaded into a real Envoy with the filter, and real requests answered by the backend or
//! by the filter's direct response that the contract names. One case per behaviour; the compiler's
//! own tests (compiler/tests) cover the variants. Needs `ENVOY_BIN`, `SWITCHYARD_WASM` and
//! `SWITCHYARD_BIN` (`make test-envoy` sets them); fails without them.

use switchyard_e2e::{compile_manifests, get, Envoy, Request, Response};

const WEB: &str = "default/web:80";

/// An HTTPProxy manifest in `default` from its name and the YAML of its spec (indented by 2).
fn proxy(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: {name}, namespace: default}}\nspec:\n{spec}---\n"
    )
}

/// A root on root.example.com whose own route sends everything to `web`, with these includes.
fn root_with(includes: &str) -> String {
    proxy(
        "root",
        &format!("  virtualhost: {{fqdn: root.example.com}}\n  routes:\n    - services: [{{name: web, port: 80}}]\n  includes:\n{includes}"),
    )
}

/// Envoy with the filter routing the table `switchyard compile` makes of `yaml`.
fn envoy_for(yaml: &str, clusters: &[&str]) -> Envoy {
    Envoy::start(&compile_manifests(yaml, &[]), clusters)
}

fn send(envoy: &Envoy, request: Request) -> Response {
    let response = envoy.send(&request);
    eprintln!(
        "{} {}{} -> {} {:?}",
        request.method, request.host, request.path, response.status, response.body
    );
    response
}

#[test]
fn include_of_another_root_answers_502() {
    let yaml = format!(
        "{}{}",
        root_with("    - {name: other, conditions: [{prefix: /other}]}\n"),
        proxy(
            "other",
            "  virtualhost: {fqdn: other.example.com}\n  routes:\n    - services: [{name: other, port: 80}]\n"
        )
    );
    let envoy = envoy_for(&yaml, &[WEB, "default/other:80"]);
    let broken = send(&envoy, get("root.example.com", "/other/x"));
    assert_eq!(broken.status, 502);
    assert!(broken.body.starts_with("502 bad gateway for host"), "{broken:?}");
    assert_eq!(send(&envoy, get("root.example.com", "/x")).backend(), Some("web"));
    assert_eq!(
        send(&envoy, get("other.example.com", "/other")).backend(),
        Some("other")
    );
}

#[test]
fn include_with_a_malformed_prefix_is_skipped_and_the_rest_of_the_proxy_serves() {
    let yaml = format!(
        "{}{}{}",
        root_with(
            "    - {name: child, conditions: [{prefix: api}]}\n    - {name: second, conditions: [{prefix: /second}]}\n"
        ),
        proxy("child", "  routes:\n    - services: [{name: child, port: 80}]\n"),
        proxy("second", "  routes:\n    - services: [{name: second, port: 80}]\n")
    );
    let envoy = envoy_for(&yaml, &[WEB, "default/child:80", "default/second:80"]);
    assert_eq!(
        send(&envoy, get("root.example.com", "/second/x")).backend(),
        Some("second")
    );
    assert_eq!(send(&envoy, get("root.example.com", "/api")).backend(), Some("web"));
    assert_eq!(send(&envoy, get("root.example.com", "/x")).backend(), Some("web"));
}

#[test]
fn two_exact_query_conditions_on_one_name_make_the_proxy_invalid() {
    let yaml = format!(
        "{}{}",
        root_with("    - name: child\n      conditions: [{prefix: /api}, {queryParameter: {name: v, exact: \"1\"}}]\n"),
        proxy(
            "child",
            "  routes:\n    - conditions: [{queryParameter: {name: v, exact: \"2\"}}]\n      services: [{name: child, port: 80}]\n"
        )
    );
    let envoy = envoy_for(&yaml, &[WEB, "default/child:80"]);
    // A request carrying both values would satisfy both conditions; the child is un-routable, so
    // the root's own route answers.
    assert_eq!(
        send(&envoy, get("root.example.com", "/api?v=1&v=2")).backend(),
        Some("web")
    );
}

#[test]
fn contains_and_notcontains_with_the_same_value_make_the_proxy_invalid() {
    let yaml = format!(
        "{}{}",
        root_with("    - name: child\n      conditions: [{prefix: /api}, {header: {name: x-a, contains: abc}}]\n"),
        proxy(
            "child",
            "  routes:\n    - conditions: [{header: {name: x-a, notcontains: abc}}]\n      services: [{name: never, port: 80}]\n    - services: [{name: child, port: 80}]\n"
        )
    );
    let envoy = envoy_for(&yaml, &[WEB, "default/never:80", "default/child:80"]);
    // None of the child's routes is in the table, its plain one included.
    let request = get("root.example.com", "/api/x").header("x-a", "abc");
    assert_eq!(send(&envoy, request).backend(), Some("web"));
}

#[test]
fn unresolvable_service_port_answers_503_not_a_shorter_prefix() {
    let yaml = "apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: shop}
spec:
  rules:
    - host: web.example.com
      http:
        paths:
          - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
          - {path: /api, pathType: Prefix, backend: {service: {name: api, port: {name: http}}}}
";
    let envoy = envoy_for(yaml, &["shop/web:80"]);
    let unavailable = send(&envoy, get("web.example.com", "/api/users"));
    assert_eq!(unavailable.status, 503);
    assert!(
        unavailable.body.starts_with("503 service unavailable for host"),
        "{unavailable:?}"
    );
    assert_eq!(send(&envoy, get("web.example.com", "/other")).backend(), Some("web"));
}
