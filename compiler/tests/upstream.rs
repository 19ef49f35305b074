//! The clusters a plain Envoy is given (issue "The upstream side"): one per backend the table names,
//! with the ready endpoints of its Service's EndpointSlices on the port of the Service port's name,
//! DNS for an ExternalName Service, and the CDS and EDS documents Envoy reads.

mod common;

use common::*;
use switchyard_compiler::status::Reason;
use switchyard_compiler::upstream::cds::cds_document;
use switchyard_compiler::upstream::endpoints::Endpoint;
use switchyard_compiler::upstream::variant::{UpstreamProtocol, Variant};
use switchyard_compiler::upstream::{plan, Endpoints, Upstream};
use switchyard_compiler::Options;
use switchyard_table::{Affinity, AffinityCookie, HashPart};

/// An Ingress sending `/` on `shop.example.com` to `web:80` and `/ext` to `external:443`, and
/// `/gone` to `missing:80`.
const INGRESS: &str = r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: shop}
spec:
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}
      - {path: /ext, pathType: Prefix, backend: {service: {name: external, port: {number: 443}}}}
      - {path: /gone, pathType: Prefix, backend: {service: {name: missing, port: {number: 80}}}}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  ports:
  - {name: metrics, port: 9090, targetPort: 9090}
  - {name: http, port: 80, targetPort: web}
---
apiVersion: v1
kind: Service
metadata: {name: external, namespace: shop}
spec: {type: ExternalName, externalName: api.example.org, ports: [{port: 443}]}
---
"#;

/// An EndpointSlice of `web` with its `http` port on `port` and `endpoints` as YAML.
fn slice(name: &str, port: u16, endpoints: &str) -> String {
    format!(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {name}\n  namespace: shop\n  labels: {{kubernetes.io/service-name: web}}\naddressType: IPv4\nports:\n- {{name: metrics, port: 9090}}\n- {{name: http, port: {port}}}\nendpoints:\n{endpoints}---\n"
    )
}

fn upstream(yaml: &str) -> Upstream {
    let loaded = load(yaml);
    let options = Options::default();
    let compiled = switchyard_compiler::compile(&loaded.objects, &options).unwrap();
    plan(&loaded.objects, &compiled.table, &compiled.l4, &options)
}

fn endpoint(address: &str, port: u16) -> Endpoint {
    Endpoint {
        address: address.into(),
        port,
    }
}

#[test]
fn a_backend_gets_the_ready_endpoints_of_its_services_slices_on_the_ports_target() {
    let yaml = format!(
        "{INGRESS}{}{}",
        slice(
            "web-a",
            8080,
            "- {addresses: [10.0.0.2]}\n- {addresses: [10.0.0.1], conditions: {ready: true}}\n- {addresses: [10.0.0.9], conditions: {ready: false, terminating: true}}\n"
        ),
        slice("web-b", 8080, "- {addresses: [10.0.0.3, 10.0.0.4]}\n")
    );
    let upstream = upstream(&yaml);
    let web = upstream.clusters.iter().find(|c| c.name == "shop/web:80").unwrap();
    assert_eq!(web.service, "shop/web:80");
    assert_eq!(
        web.source,
        Endpoints::Slices(vec![
            endpoint("10.0.0.1", 8080),
            endpoint("10.0.0.2", 8080),
            endpoint("10.0.0.3", 8080),
        ]),
        "ready (or unknown) endpoints, their first address, the http port's 8080 (not metrics' 9090)"
    );
}

#[test]
fn an_externalname_service_is_a_dns_cluster_on_its_name_and_port() {
    let upstream = upstream(INGRESS);
    let external = upstream
        .clusters
        .iter()
        .find(|c| c.name == "shop/external:443")
        .unwrap();
    assert_eq!(
        external.source,
        Endpoints::Dns {
            host: "api.example.org".into(),
            port: 443
        }
    );
    let cds: serde_json::Value = serde_json::from_str(&cds_document(&upstream)).unwrap();
    let resource = (cds["resources"].as_array().unwrap().iter())
        .find(|r| r["name"] == "shop/external:443")
        .unwrap();
    assert_eq!(resource["type"], "STRICT_DNS");
    assert_eq!(
        resource["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"],
        serde_json::json!({"address": "api.example.org", "port_value": 443})
    );
}

#[test]
fn a_backend_without_its_service_has_no_cluster_and_is_named_unknown() {
    let upstream = upstream(INGRESS);
    assert_eq!(upstream.unknown, ["shop/missing:80"]);
    let names: Vec<&str> = upstream.clusters.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["shop/external:443", "shop/web:80"],
        "only the clusters the table names"
    );
}

#[test]
fn a_service_without_ready_endpoints_is_a_cluster_with_none() {
    let yaml = format!(
        "{INGRESS}{}",
        slice("web-a", 8080, "- {addresses: [10.0.0.9], conditions: {ready: false}}\n")
    );
    let upstream = upstream(&yaml);
    let web = upstream.clusters.iter().find(|c| c.name == "shop/web:80").unwrap();
    assert_eq!(web.source, Endpoints::Slices(Vec::new()));
}

#[test]
fn a_cluster_on_endpoints_takes_them_over_ads() {
    let yaml = format!("{INGRESS}{}", slice("web-a", 8080, "- {addresses: [10.0.0.1]}\n"));
    let cds: serde_json::Value = serde_json::from_str(&cds_document(&upstream(&yaml))).unwrap();
    let web = (cds["resources"].as_array().unwrap().iter())
        .find(|r| r["name"] == "shop/web:80")
        .unwrap();
    assert_eq!(web["type"], "EDS");
    assert_eq!(
        web["eds_cluster_config"]["eds_config"],
        serde_json::json!({"ads": {}, "resource_api_version": "V3"})
    );
    assert_eq!(
        web["connect_timeout"], "5s",
        "ingress-nginx's proxy-connect-timeout default"
    );
}

#[test]
fn the_same_manifests_give_the_same_documents() {
    let yaml = format!(
        "{INGRESS}{}{}",
        slice("web-b", 8080, "- {addresses: [10.0.0.3]}\n"),
        slice("web-a", 8080, "- {addresses: [10.0.0.1]}\n")
    );
    let (a, b) = (upstream(&yaml), upstream(&yaml));
    assert_eq!(a, b);
    assert_eq!(cds_document(&a), cds_document(&b));
}

// ingress-nginx's `backend-protocol` (§7, issue "The upstream side")

/// An ingress-nginx Ingress `api` to `api:443` with `annotations` (YAML lines), its Service.
fn nginx_api(annotations: &str) -> String {
    format!(
        "{}apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: api\n  namespace: shop\n  annotations:\n{annotations}spec:\n  ingressClassName: nginx\n  rules:\n  - host: api.example.com\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, backend: {{service: {{name: api, port: {{number: 443}}}}}}}}\n---\napiVersion: v1\nkind: Service\nmetadata: {{name: api, namespace: shop}}\nspec: {{ports: [{{name: https, port: 443}}]}}\n---\n",
        ingress_class("nginx", "k8s.io/ingress-nginx", false, "")
    )
}

fn nginx_compiled(yaml: &str) -> (switchyard_compiler::Compiled, Upstream) {
    planned_with(yaml, nginx_options())
}

fn routed_cluster(compiled: &switchyard_compiler::Compiled) -> String {
    clusters_of(compiled, "Ingress/shop/api").remove(0)
}

#[test]
fn backend_protocol_https_is_a_tls_cluster_that_checks_no_certificate_and_sends_no_sni() {
    let (compiled, upstream) = nginx_compiled(&nginx_api("    nginx.ingress.kubernetes.io/backend-protocol: HTTPS\n"));
    assert_eq!(routed_cluster(&compiled), "shop/api:443~tls");
    let cluster = &upstream.clusters[0];
    assert_eq!(
        (cluster.name.as_str(), cluster.service.as_str()),
        ("shop/api:443~tls", "shop/api:443")
    );
    assert_eq!(cluster.variant.protocol, UpstreamProtocol::Tls);
    let cds: serde_json::Value = serde_json::from_str(&cds_document(&upstream)).unwrap();
    let socket = &cds["resources"][0]["transport_socket"];
    assert_eq!(socket["name"], "envoy.transport_sockets.tls");
    let context = &socket["typed_config"];
    assert!(
        context.get("sni").is_none(),
        "proxy_ssl_server_name is off by default: {context}"
    );
    assert!(
        context["common_tls_context"].get("validation_context").is_none(),
        "proxy_ssl_verify is off"
    );
    assert_eq!(
        context["common_tls_context"]["alpn_protocols"],
        serde_json::json!(["http/1.1"])
    );
    assert!(
        cds["resources"][0].get("typed_extension_protocol_options").is_none(),
        "HTTP/1.1"
    );
}

#[test]
fn backend_protocol_grpc_is_http2_in_the_clear_and_grpcs_http2_over_tls() {
    let (compiled, upstream) = nginx_compiled(&nginx_api("    nginx.ingress.kubernetes.io/backend-protocol: grpc\n"));
    assert_eq!(
        routed_cluster(&compiled),
        "shop/api:443~h2c",
        "the value is read in any case"
    );
    let cds: serde_json::Value = serde_json::from_str(&cds_document(&upstream)).unwrap();
    let options = &cds["resources"][0]["typed_extension_protocol_options"]
        ["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"];
    assert_eq!(
        options["explicit_http_config"],
        serde_json::json!({"http2_protocol_options": {}})
    );
    assert!(cds["resources"][0].get("transport_socket").is_none());

    let (compiled, upstream) = nginx_compiled(&nginx_api("    nginx.ingress.kubernetes.io/backend-protocol: GRPCS\n"));
    assert_eq!(routed_cluster(&compiled), "shop/api:443~tls-h2");
    assert_eq!(upstream.clusters[0].variant.protocol, UpstreamProtocol::TlsH2);
}

#[test]
fn backend_protocol_http_keeps_the_templates_name() {
    let (compiled, _) = nginx_compiled(&nginx_api("    nginx.ingress.kubernetes.io/backend-protocol: HTTP\n"));
    assert_eq!(routed_cluster(&compiled), "shop/api:443");
}

#[test]
fn backend_protocol_outside_ingress_nginxs_list_is_invalid_and_fcgi_not_honoured_both_http() {
    for (value, reason) in [
        ("H2C", Reason::AnnotationInvalid),
        ("FCGI", Reason::AnnotationNotHonored),
        ("AUTO_HTTP", Reason::AnnotationNotHonored),
    ] {
        let (compiled, _) = nginx_compiled(&nginx_api(&format!(
            "    nginx.ingress.kubernetes.io/backend-protocol: {value}\n"
        )));
        assert_eq!(routed_cluster(&compiled), "shop/api:443", "{value}: spoken to in HTTP");
        let status = status_of(&compiled, "Ingress", "shop", "api");
        assert!(
            message(status, reason).contains("backend-protocol"),
            "{value}: {status:?}"
        );
    }
}

#[test]
fn proxy_ssl_verify_on_without_a_proxy_ssl_secret_answers_503_never_unchecked() {
    let (compiled, _) = nginx_compiled(&nginx_api(
        "    nginx.ingress.kubernetes.io/backend-protocol: HTTPS\n    nginx.ingress.kubernetes.io/proxy-ssl-verify: \"on\"\n",
    ));
    assert!(
        routed_cluster(&compiled).starts_with("DirectResponse(DirectResponse { status: 503,"),
        "{}",
        routed_cluster(&compiled)
    );
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        message(status, Reason::AnnotationNotHonored).contains("503"),
        "{status:?}"
    );
}

// HTTPProxy `services[].protocol` and `validation`, VirtualServer `upstreams[].tls`

/// An HTTPProxy root `p` routing `/` to `services` (YAML list items).
fn proxy(services: &str) -> String {
    httpproxy(&format!("\n{services}"), "")
}

fn clusters_of(compiled: &switchyard_compiler::Compiled, owner: &str) -> Vec<String> {
    let rule = compiled.table.rules.iter().find(|r| r.name.starts_with(owner)).unwrap();
    match &rule.action {
        switchyard_table::ActionSpec::Route(route) => route.backends.iter().map(|b| b.cluster.clone()).collect(),
        other => vec![format!("{other:?}")],
    }
}

#[test]
fn an_httpproxy_service_protocol_names_its_variant_cluster() {
    let compiled = compile_yaml(
        &proxy("    - {name: a, port: 443, protocol: h2}\n    - {name: b, port: 80, protocol: h2c}\n    - {name: c, port: 443, protocol: tls}\n    - {name: d, port: 80}\n"),
        &with_variants(Options::default()),
    );
    assert_eq!(
        clusters_of(&compiled, "HTTPProxy/shop/p"),
        ["shop/a:443~tls-h2", "shop/b:80~h2c", "shop/c:443~tls", "shop/d:80"]
    );
}

#[test]
fn an_httpproxy_service_asking_for_validation_gets_no_traffic_without_variant_clusters() {
    let compiled = compile_yaml(
        &proxy("    - {name: a, port: 443, protocol: tls, validation: {caSecret: ca, subjectName: a.shop}}\n"),
        &Options::default(),
    );
    assert!(
        clusters_of(&compiled, "HTTPProxy/shop/p")[0].contains("status: 503"),
        "fail closed"
    );
    let status = status_of(&compiled, "HTTPProxy", "shop", "p");
    assert!(
        message(status, Reason::ServicePortNotFound).contains("validation"),
        "{status:?}"
    );
}

#[test]
fn an_httpproxy_service_protocol_contour_does_not_know_skips_its_route() {
    let compiled = compile_yaml(
        &proxy("    - {name: a, port: 443, protocol: h3}\n"),
        &Options::default(),
    );
    assert!(!compiled
        .table
        .rules
        .iter()
        .any(|r| r.name.starts_with("HTTPProxy/shop/p")));
    let status = status_of(&compiled, "HTTPProxy", "shop", "p");
    assert!(
        message(status, Reason::ServiceInvalid).contains("protocol"),
        "{status:?}"
    );
}

#[test]
fn a_virtualserver_upstream_with_tls_enabled_is_spoken_to_over_tls() {
    let compiled = compile_yaml(
        "apiVersion: k8s.nginx.org/v1\nkind: VirtualServer\nmetadata: {name: v, namespace: shop}\nspec:\n  host: v.example.com\n  upstreams:\n  - {name: secure, service: api, port: 443, tls: {enable: true}}\n  - {name: plain, service: web, port: 80, tls: {enable: false}}\n  routes:\n  - {path: /api, action: {pass: secure}}\n  - {path: /, action: {pass: plain}}\n",
        &with_variants(Options::default()),
    );
    let mut clusters: Vec<String> = (compiled.table.rules.iter())
        .filter(|r| r.name.starts_with("VirtualServer/shop/v"))
        .flat_map(|r| match &r.action {
            switchyard_table::ActionSpec::Route(route) => route.backends.iter().map(|b| b.cluster.clone()).collect(),
            _ => Vec::new(),
        })
        .collect();
    clusters.sort();
    assert_eq!(clusters, ["shop/api:443~tls", "shop/web:80"]);
}

// Connect timeouts: ingress-nginx's `proxy-connect-timeout` (and its ConfigMap's), a VirtualServer
// upstream's `connect-timeout`

#[test]
fn proxy_connect_timeout_names_a_variant_whose_cluster_connects_within_it() {
    let (compiled, upstream) = nginx_compiled(&nginx_api(
        "    nginx.ingress.kubernetes.io/backend-protocol: HTTPS\n    nginx.ingress.kubernetes.io/proxy-connect-timeout: \"12\"\n",
    ));
    assert_eq!(routed_cluster(&compiled), "shop/api:443~tls+connect=12000ms");
    assert_eq!(upstream.clusters[0].variant.connect_timeout_ms, 12_000);
    let cds: serde_json::Value = serde_json::from_str(&cds_document(&upstream)).unwrap();
    assert_eq!(cds["resources"][0]["connect_timeout"], "12s");
}

#[test]
fn proxy_connect_timeout_not_a_number_of_seconds_is_invalid_and_the_configmaps_stands() {
    let yaml = nginx_api("    nginx.ingress.kubernetes.io/proxy-connect-timeout: 10s\n");
    let (compiled, _) = nginx_compiled(&yaml);
    assert_eq!(
        routed_cluster(&compiled),
        "shop/api:443",
        "ingress-nginx reads whole seconds only"
    );
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        message(status, Reason::AnnotationInvalid).contains("proxy-connect-timeout"),
        "{status:?}"
    );

    // The ConfigMap's value is every Ingress's default.
    let data = std::collections::BTreeMap::from([("proxy-connect-timeout".to_owned(), "7".to_owned())]);
    let mut options = with_variants(nginx_options());
    options.ingress_nginx_config = switchyard_compiler::ingress_nginx::configmap::ControllerConfig::from_data(&data);
    let loaded = load(&yaml);
    let compiled = switchyard_compiler::compile(&loaded.objects, &options).unwrap();
    assert_eq!(routed_cluster(&compiled), "shop/api:443~connect=7000ms");
}

fn virtual_server(upstream_extra: &str) -> String {
    format!(
        "apiVersion: k8s.nginx.org/v1\nkind: VirtualServer\nmetadata: {{name: v, namespace: shop}}\nspec:\n  host: v.example.com\n  upstreams:\n  - {{name: api, service: api, port: 80{upstream_extra}}}\n  routes:\n  - {{path: /, action: {{pass: api}}}}\n"
    )
}

#[test]
fn a_virtualserver_upstream_connect_timeout_is_an_nginx_time_and_an_invalid_one_makes_it_invalid() {
    let variants = with_variants(Options::default());
    let compiled = compile_yaml(&virtual_server(", connect-timeout: 1m30s"), &variants);
    assert_eq!(
        clusters_of(&compiled, "VirtualServer/shop/v"),
        ["shop/api:80~connect=90000ms"]
    );
    let compiled = compile_yaml(&virtual_server(", connect-timeout: soon"), &variants);
    assert!(!compiled
        .table
        .rules
        .iter()
        .any(|r| r.name.starts_with("VirtualServer/shop/v")));
    assert_invalid_naming(&compiled, ("VirtualServer", "shop", "v"), "connect-timeout");
}

#[test]
fn the_default_connect_timeout_is_ingress_nginxs_five_seconds() {
    assert_eq!(Variant::default().connect_timeout_ms, 5_000);
    let compiled = compile_yaml(&virtual_server(""), &Options::default());
    assert_eq!(clusters_of(&compiled, "VirtualServer/shop/v"), ["shop/api:80"]);
}

/// `options` for a gateway whose clusters come from the sidecar (`--clusters-dir`): variant
/// clusters are named.
fn with_variants(mut options: Options) -> Options {
    options.upstream_variants = true;
    options
}

#[test]
fn without_the_sidecars_clusters_a_setting_that_needs_a_variant_is_not_honoured_and_the_template_serves() {
    let loaded = load(&nginx_api(
        "    nginx.ingress.kubernetes.io/backend-protocol: HTTPS\n    nginx.ingress.kubernetes.io/proxy-connect-timeout: \"9\"\n",
    ));
    let compiled = switchyard_compiler::compile(&loaded.objects, &nginx_options()).unwrap();
    assert_eq!(
        routed_cluster(&compiled),
        "shop/api:443",
        "a static or Istio cluster of that name still serves"
    );
    let status = status_of(&compiled, "Ingress", "shop", "api");
    let said = format!("{status:?}");
    assert!(
        said.contains("backend-protocol needs a cluster of its own") && said.contains("proxy-connect-timeout needs"),
        "{said}"
    );

    let compiled = compile_yaml(
        &proxy("    - {name: a, port: 443, protocol: h2}\n"),
        &Options::default(),
    );
    assert_eq!(clusters_of(&compiled, "HTTPProxy/shop/p"), ["shop/a:443"]);
    let status = status_of(&compiled, "HTTPProxy", "shop", "p");
    assert!(
        message(status, Reason::UpstreamSettingNotHonored).contains("protocol"),
        "{status:?}"
    );
    assert_eq!(status.status, switchyard_compiler::status::Status::Valid);

    let compiled = compile_yaml(&virtual_server(", tls: {enable: true}"), &Options::default());
    assert_eq!(clusters_of(&compiled, "VirtualServer/shop/v"), ["shop/api:80"]);
    let status = status_of(&compiled, "VirtualServer", "shop", "v");
    assert!(
        message(status, Reason::UpstreamSettingNotHonored).contains("tls"),
        "{status:?}"
    );
}

#[test]
fn service_upstream_sends_to_the_services_cluster_ip_and_port_not_its_endpoints() {
    let yaml = nginx_api("    nginx.ingress.kubernetes.io/service-upstream: \"true\"\n")
        .replace("spec: {ports: [{name: https, port: 443}]}", "spec: {clusterIP: 10.96.0.7, ports: [{name: https, port: 443}]}")
        + "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: api-1, namespace: shop, labels: {kubernetes.io/service-name: api}}\naddressType: IPv4\nports: [{name: https, port: 8443}]\nendpoints: [{addresses: [10.0.0.1]}]\n";
    let (compiled, upstream) = nginx_compiled(&yaml);
    assert_eq!(routed_cluster(&compiled), "shop/api:443~service-upstream");
    assert_eq!(
        upstream.clusters[0].source,
        Endpoints::Slices(vec![endpoint("10.96.0.7", 443)]),
        "the Service's address, not the pod's"
    );
    let loaded = load(&yaml);
    let compiled = switchyard_compiler::compile(&loaded.objects, &nginx_options()).unwrap();
    assert_eq!(routed_cluster(&compiled), "shop/api:443", "without variant clusters");
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        format!("{status:?}").contains("service-upstream needs a cluster of its own"),
        "{status:?}"
    );
}

#[test]
fn an_httpproxy_idle_connection_timeout_keeps_upstream_connections_that_long_or_for_ever() {
    let route = |timeout: &str| {
        proxy("    - {name: a, port: 80, protocol: h2c}\n").replace(
            "  - conditions: [{prefix: /}]\n",
            &format!("  - conditions: [{{prefix: /}}]\n    timeoutPolicy: {{idleConnection: {timeout}}}\n"),
        )
    };
    let yaml = route("1m30s")
        + "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: shop}\nspec: {ports: [{port: 80}]}\n";
    let loaded = load(&yaml);
    let options = with_variants(Options::default());
    let compiled = switchyard_compiler::compile(&loaded.objects, &options).unwrap();
    assert_eq!(
        clusters_of(&compiled, "HTTPProxy/shop/p"),
        ["shop/a:80~h2c+idle=90000ms"]
    );
    let upstream = plan(&loaded.objects, &compiled.table, &compiled.l4, &options);
    let cds: serde_json::Value = serde_json::from_str(&cds_document(&upstream)).unwrap();
    let http = &cds["resources"][0]["typed_extension_protocol_options"]
        ["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"];
    assert_eq!(http["common_http_protocol_options"]["idle_timeout"], "90s");
    assert_eq!(
        http["explicit_http_config"],
        serde_json::json!({"http2_protocol_options": {}})
    );

    let compiled = compile_yaml(&route("infinity"), &options);
    assert_eq!(
        clusters_of(&compiled, "HTTPProxy/shop/p"),
        ["shop/a:80~h2c+idle=0ms"],
        "0: for ever"
    );
    let compiled = compile_yaml(&route("soon"), &options);
    assert!(!compiled
        .table
        .rules
        .iter()
        .any(|r| r.name.starts_with("HTTPProxy/shop/p")));
    let status = status_of(&compiled, "HTTPProxy", "shop", "p");
    assert!(
        message(status, Reason::TimeoutPolicyNotValid).contains("idleConnection"),
        "{status:?}"
    );
}

// The backend's certificate, the load balancer and health checks (issue "The upstream side")

/// A CA certificate as PEM (its bytes are only carried, never parsed, by the compiler).
const CA_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUX\n-----END CERTIFICATE-----\n";

/// Secret `name` in `shop` holding `ca.crt`.
fn ca_secret(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: {name}, namespace: shop}}\nstringData:\n  ca.crt: |\n{}---\n",
        CA_PEM.lines().map(|l| format!("    {l}\n")).collect::<String>()
    )
}

/// The only cluster of `upstream` as CDS JSON.
fn only_cds_cluster(upstream: &Upstream) -> serde_json::Value {
    let cds: serde_json::Value = serde_json::from_str(&cds_document(upstream)).unwrap();
    assert_eq!(cds["resources"].as_array().map(Vec::len), Some(1), "{cds}");
    cds["resources"][0].clone()
}

const VERIFY: &str = "    nginx.ingress.kubernetes.io/backend-protocol: HTTPS\n    nginx.ingress.kubernetes.io/proxy-ssl-secret: shop/api-ca\n    nginx.ingress.kubernetes.io/proxy-ssl-verify: \"on\"\n";

#[test]
fn proxy_ssl_verify_checks_the_backend_against_the_secrets_ca_and_the_proxy_ssl_name() {
    let annotations = format!(
        "{VERIFY}    nginx.ingress.kubernetes.io/proxy-ssl-name: api.shop.svc\n    nginx.ingress.kubernetes.io/proxy-ssl-server-name: \"on\"\n    nginx.ingress.kubernetes.io/proxy-ssl-verify-depth: \"2\"\n    nginx.ingress.kubernetes.io/proxy-ssl-protocols: TLSv1.2 TLSv1.3\n"
    );
    let (compiled, upstream) = nginx_compiled(&format!("{}{}", nginx_api(&annotations), ca_secret("api-ca")));
    assert_eq!(
        routed_cluster(&compiled),
        "shop/api:443~tls+ca=shop/api-ca+san=api.shop.svc+sni=api.shop.svc+depth=2+tls=1.2-1.3"
    );
    let cluster = only_cds_cluster(&upstream);
    let context = &cluster["transport_socket"]["typed_config"];
    assert_eq!(context["sni"], "api.shop.svc");
    let validation = &context["common_tls_context"]["validation_context"];
    assert_eq!(validation["trusted_ca"]["inline_string"], CA_PEM);
    assert_eq!(
        validation["match_typed_subject_alt_names"],
        serde_json::json!([{"san_type": "DNS", "matcher": {"exact": "api.shop.svc"}}])
    );
    assert_eq!(validation["max_verify_depth"], 2);
    assert_eq!(
        context["common_tls_context"]["tls_params"],
        serde_json::json!({"tls_minimum_protocol_version": "TLSv1_2", "tls_maximum_protocol_version": "TLSv1_3"})
    );
}

#[test]
fn proxy_ssl_verify_without_proxy_ssl_name_checks_upstream_balancer_as_nginx_does_and_sends_no_sni() {
    let (compiled, upstream) = nginx_compiled(&format!("{}{}", nginx_api(VERIFY), ca_secret("api-ca")));
    assert_eq!(
        routed_cluster(&compiled),
        "shop/api:443~tls+ca=shop/api-ca+san=upstream_balancer+depth=1"
    );
    let context = &only_cds_cluster(&upstream)["transport_socket"]["typed_config"];
    assert!(context.get("sni").is_none(), "{context}");
    assert_eq!(
        context["common_tls_context"]["validation_context"]["max_verify_depth"],
        1
    );
}

#[test]
fn a_checked_backend_whose_ca_secret_is_missing_gets_no_cluster_so_it_is_never_reached_unchecked() {
    for missing in [String::new(), ca_secret("other-ca")] {
        let (compiled, upstream) = nginx_compiled(&format!("{}{missing}", nginx_api(VERIFY)));
        let name = routed_cluster(&compiled);
        assert!(upstream.clusters.is_empty(), "{upstream:?}");
        assert_eq!(upstream.missing_ca, [name]);
    }
}

#[test]
fn proxy_ssl_secret_of_another_namespace_is_refused_as_ingress_nginx_refuses_it_and_answers_503() {
    let annotations = VERIFY.replace("shop/api-ca", "other/api-ca");
    let (compiled, _) = nginx_compiled(&nginx_api(&annotations));
    assert!(
        routed_cluster(&compiled).contains("status: 503"),
        "{}",
        routed_cluster(&compiled)
    );
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        message(status, Reason::AnnotationNotHonored).contains("another namespace"),
        "{status:?}"
    );
}

#[test]
fn proxy_ssl_verify_on_an_http_backend_checks_nothing_as_nginx_speaks_no_tls() {
    let annotations = VERIFY.replace("backend-protocol: HTTPS", "backend-protocol: HTTP");
    let (compiled, _) = nginx_compiled(&nginx_api(&annotations));
    assert_eq!(routed_cluster(&compiled), "shop/api:443");
}

#[test]
fn load_balance_ewma_is_least_request_and_round_robin_the_template() {
    let (compiled, upstream) = nginx_compiled(&nginx_api("    nginx.ingress.kubernetes.io/load-balance: ewma\n"));
    assert_eq!(routed_cluster(&compiled), "shop/api:443~lb=least-request");
    assert_eq!(only_cds_cluster(&upstream)["lb_policy"], "LEAST_REQUEST");
    let (compiled, _) = nginx_compiled(&nginx_api(
        "    nginx.ingress.kubernetes.io/load-balance: round_robin\n",
    ));
    assert_eq!(routed_cluster(&compiled), "shop/api:443");
    let (compiled, _) = nginx_compiled(&nginx_api("    nginx.ingress.kubernetes.io/load-balance: fastest\n"));
    assert_eq!(routed_cluster(&compiled), "shop/api:443");
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        message(status, Reason::AnnotationInvalid).contains("load-balance"),
        "{status:?}"
    );
}

/// Compiles and plans `yaml` with variant clusters.
fn planned(yaml: &str) -> (switchyard_compiler::Compiled, Upstream) {
    planned_with(yaml, Options::default())
}

/// Compiles and plans `yaml` under `options`, with variant clusters.
fn planned_with(yaml: &str, options: Options) -> (switchyard_compiler::Compiled, Upstream) {
    let loaded = load(yaml);
    let options = with_variants(options);
    let compiled = switchyard_compiler::compile(&loaded.objects, &options).unwrap();
    let upstream = plan(&loaded.objects, &compiled.table, &compiled.l4, &options);
    (compiled, upstream)
}

/// Service `name` in `shop` on `port`.
fn service(name: &str, port: u16) -> String {
    format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: shop}}\nspec: {{ports: [{{port: {port}}}]}}\n---\n")
}

#[test]
fn an_httpproxy_service_validation_checks_its_certificate_against_the_ca_and_subject_name() {
    let (compiled, upstream) = planned(&format!(
        "{}{}{}",
        proxy("    - {name: a, port: 443, protocol: tls, validation: {caSecret: a-ca, subjectName: a.shop}}\n"),
        service("a", 443),
        ca_secret("a-ca")
    ));
    assert_eq!(
        clusters_of(&compiled, "HTTPProxy/shop/p"),
        ["shop/a:443~tls+ca=shop/a-ca+san=a.shop"]
    );
    let validation =
        &only_cds_cluster(&upstream)["transport_socket"]["typed_config"]["common_tls_context"]["validation_context"];
    assert_eq!(validation["trusted_ca"]["inline_string"], CA_PEM);
    assert_eq!(
        validation["match_typed_subject_alt_names"][0]["matcher"]["exact"],
        "a.shop"
    );
}

#[test]
fn an_httpproxy_validation_on_a_clear_service_or_of_another_namespace_skips_its_route() {
    for services in [
        "    - {name: a, port: 80, validation: {caSecret: a-ca, subjectName: a.shop}}\n",
        "    - {name: a, port: 443, protocol: tls, validation: {caSecret: other/a-ca, subjectName: a.shop}}\n",
        "    - {name: a, port: 443, protocol: tls, validation: {caSecret: a-ca}}\n",
    ] {
        let compiled = compile_yaml(&proxy(services), &with_variants(Options::default()));
        assert!(
            !compiled
                .table
                .rules
                .iter()
                .any(|r| r.name.starts_with("HTTPProxy/shop/p")),
            "{services}"
        );
        let status = status_of(&compiled, "HTTPProxy", "shop", "p");
        assert!(
            message(status, Reason::ServiceInvalid).contains("validation"),
            "{status:?}"
        );
    }
}

/// An HTTPProxy root `p` routing `/` to `a:80` with `policies` (YAML lines of the route).
fn proxy_with(policies: &str) -> String {
    format!(
        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: p, namespace: shop}}\nspec:\n  virtualhost: {{fqdn: p.example.com}}\n  routes:\n  - conditions: [{{prefix: /}}]\n{policies}    services: [{{name: a, port: 80}}]\n---\n{}",
        service("a", 80)
    )
}

#[test]
fn an_httpproxy_load_balancer_strategy_is_envoys_lb_policy() {
    for (strategy, name, policy) in [
        ("RoundRobin", "shop/a:80", None),
        (
            "WeightedLeastRequest",
            "shop/a:80~lb=least-request",
            Some("LEAST_REQUEST"),
        ),
        ("Random", "shop/a:80~lb=random", Some("RANDOM")),
        (
            "RequestHash, requestHashPolicies: [{hashSourceIP: true}]",
            "shop/a:80~lb=ring-hash",
            Some("RING_HASH"),
        ),
        ("RequestHash", "shop/a:80", None),
    ] {
        let (compiled, upstream) = planned(&proxy_with(&format!(
            "    loadBalancerPolicy: {{strategy: {strategy}}}\n"
        )));
        assert_eq!(clusters_of(&compiled, "HTTPProxy/shop/p"), [name], "{strategy}");
        assert_eq!(
            only_cds_cluster(&upstream).get("lb_policy").and_then(|p| p.as_str()),
            policy
        );
    }
    let compiled = compile_yaml(
        &proxy_with("    loadBalancerPolicy: {strategy: Fastest}\n"),
        &with_variants(Options::default()),
    );
    assert!(!compiled
        .table
        .rules
        .iter()
        .any(|r| r.name.starts_with("HTTPProxy/shop/p")));
}

#[test]
fn an_httpproxy_health_check_policy_takes_contours_defaults() {
    let (compiled, upstream) = planned(&proxy_with("    healthCheckPolicy: {path: /healthz}\n"));
    assert_eq!(
        clusters_of(&compiled, "HTTPProxy/shop/p"),
        ["shop/a:80~hc=/healthz,5000ms,2000ms,3,2,contour-envoy-healthcheck"]
    );
    assert_eq!(
        only_cds_cluster(&upstream)["health_checks"],
        serde_json::json!([{
            "timeout": "2s", "interval": "5s", "unhealthy_threshold": 3, "healthy_threshold": 2,
            "http_health_check": {"path": "/healthz", "host": "contour-envoy-healthcheck"}
        }])
    );
    let (compiled, _) = planned(&proxy_with(
        "    healthCheckPolicy: {path: /up, host: probe, intervalSeconds: 10, timeoutSeconds: 1, unhealthyThresholdCount: 5, healthyThresholdCount: 1}\n",
    ));
    assert_eq!(
        clusters_of(&compiled, "HTTPProxy/shop/p"),
        ["shop/a:80~hc=/up,10000ms,1000ms,5,1,probe"]
    );
    let compiled = compile_yaml(
        &proxy_with("    healthCheckPolicy: {path: up}\n"),
        &with_variants(Options::default()),
    );
    let status = status_of(&compiled, "HTTPProxy", "shop", "p");
    assert!(format!("{status:?}").contains("healthCheckPolicy"), "{status:?}");
}

#[test]
fn a_virtualserver_lb_method_is_envoys_lb_policy_and_an_unknown_one_makes_it_invalid() {
    let variants = with_variants(Options::default());
    for (method, name) in [
        ("round_robin", "shop/api:80"),
        ("least_conn", "shop/api:80~lb=least-request"),
        ("random two least_conn", "shop/api:80~lb=least-request"),
        ("random", "shop/api:80~lb=random"),
        ("ip_hash", "shop/api:80~lb=ring-hash"),
    ] {
        let compiled = compile_yaml(&virtual_server(&format!(", lb-method: {method}")), &variants);
        assert_eq!(clusters_of(&compiled, "VirtualServer/shop/v"), [name], "{method}");
    }
    let compiled = compile_yaml(&virtual_server(", lb-method: fastest"), &variants);
    assert_invalid_naming(&compiled, ("VirtualServer", "shop", "v"), "lb-method");
}

#[test]
fn a_virtualserver_health_check_takes_nginxs_defaults_and_the_services_host() {
    let (compiled, upstream) = planned(&format!(
        "{}---\n{}",
        virtual_server(", healthCheck: {enable: true, path: /healthz, interval: 10s}"),
        service("api", 80)
    ));
    assert_eq!(
        clusters_of(&compiled, "VirtualServer/shop/v"),
        ["shop/api:80~hc=/healthz,10000ms,60000ms,1,1"]
    );
    let check = &only_cds_cluster(&upstream)["health_checks"][0];
    assert_eq!(check["http_health_check"]["host"], "api.shop.svc");
    let compiled = compile_yaml(
        &virtual_server(", healthCheck: {enable: false, path: /healthz}"),
        &with_variants(Options::default()),
    );
    assert_eq!(clusters_of(&compiled, "VirtualServer/shop/v"), ["shop/api:80"]);
}

/// The affinity the rule of `owner` keys its requests by.
fn affinity_of(compiled: &switchyard_compiler::Compiled, owner: &str) -> Option<Affinity> {
    let rule = compiled.table.rules.iter().find(|r| r.name.starts_with(owner)).unwrap();
    match &rule.action {
        switchyard_table::ActionSpec::Route(route) => route.affinity.as_deref().cloned(),
        _ => None,
    }
}

fn cookie(name: &str, attributes: &str) -> Option<Affinity> {
    Some(Affinity::Cookie(AffinityCookie {
        name: name.into(),
        attributes: attributes.into(),
    }))
}

#[test]
fn affinity_cookie_hashes_on_a_ring_by_ingresscookie_whose_path_is_the_locations() {
    let (compiled, upstream) = nginx_compiled(&nginx_api("    nginx.ingress.kubernetes.io/affinity: cookie\n"));
    assert_eq!(routed_cluster(&compiled), "shop/api:443~lb=ring-hash");
    assert_eq!(only_cds_cluster(&upstream)["lb_policy"], "RING_HASH");
    assert_eq!(
        affinity_of(&compiled, "Ingress/shop/api"),
        cookie("INGRESSCOOKIE", "Path=/; HttpOnly")
    );
}

#[test]
fn session_cookie_annotations_set_the_cookies_name_and_attributes() {
    let (compiled, _) = nginx_compiled(&nginx_api(
        "    nginx.ingress.kubernetes.io/affinity: cookie\n    nginx.ingress.kubernetes.io/affinity-mode: persistent\n    nginx.ingress.kubernetes.io/session-cookie-name: route\n    nginx.ingress.kubernetes.io/session-cookie-path: /app\n    nginx.ingress.kubernetes.io/session-cookie-expires: \"172800\"\n    nginx.ingress.kubernetes.io/session-cookie-samesite: None\n    nginx.ingress.kubernetes.io/session-cookie-domain: example.com\n",
    ));
    assert_eq!(
        affinity_of(&compiled, "Ingress/shop/api"),
        cookie(
            "route",
            "Path=/app; Max-Age=172800; Domain=example.com; SameSite=None; Secure; HttpOnly"
        )
    );
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        !format!("{status:?}").contains("session-cookie"),
        "all read: {status:?}"
    );
}

#[test]
fn session_cookie_change_on_failure_is_not_honoured_and_said() {
    let (compiled, _) = nginx_compiled(&nginx_api(
        "    nginx.ingress.kubernetes.io/affinity: cookie\n    nginx.ingress.kubernetes.io/session-cookie-change-on-failure: \"true\"\n",
    ));
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        message(status, Reason::AnnotationNotHonored).contains("session-cookie-change-on-failure"),
        "{status:?}"
    );
}

#[test]
fn upstream_hash_by_keys_by_the_nginx_variables_and_an_unknown_one_is_invalid() {
    let (compiled, _) = nginx_compiled(&nginx_api(
        "    nginx.ingress.kubernetes.io/upstream-hash-by: $request_uri\n",
    ));
    assert_eq!(routed_cluster(&compiled), "shop/api:443~lb=ring-hash");
    assert_eq!(
        affinity_of(&compiled, "Ingress/shop/api"),
        Some(Affinity::Hash(vec![HashPart::Uri]))
    );
    let (compiled, _) = nginx_compiled(&nginx_api(
        "    nginx.ingress.kubernetes.io/upstream-hash-by: $ssl_session_id\n",
    ));
    assert_eq!(routed_cluster(&compiled), "shop/api:443");
    assert_eq!(affinity_of(&compiled, "Ingress/shop/api"), None);
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        message(status, Reason::AnnotationInvalid).contains("$ssl_session_id"),
        "{status:?}"
    );
}

#[test]
fn without_variant_clusters_affinity_is_not_honoured_and_the_rule_keys_nothing() {
    let loaded = load(&nginx_api("    nginx.ingress.kubernetes.io/affinity: cookie\n"));
    let compiled = switchyard_compiler::compile(&loaded.objects, &nginx_options()).unwrap();
    assert_eq!(routed_cluster(&compiled), "shop/api:443");
    assert_eq!(affinity_of(&compiled, "Ingress/shop/api"), None);
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        message(status, Reason::AnnotationNotHonored).contains("affinity needs a cluster"),
        "{status:?}"
    );
}

#[test]
fn an_httpproxy_cookie_strategy_sets_contours_session_cookie() {
    let (compiled, _) = planned(&proxy_with("    loadBalancerPolicy: {strategy: Cookie}\n"));
    assert_eq!(clusters_of(&compiled, "HTTPProxy/shop/p"), ["shop/a:80~lb=ring-hash"]);
    assert_eq!(
        affinity_of(&compiled, "HTTPProxy/shop/p"),
        cookie("X-Contour-Session-Affinity", "Path=/; HttpOnly")
    );
}

#[test]
fn an_httpproxy_request_hash_keys_by_its_policies_in_order_stopping_after_a_terminal_one() {
    let (compiled, _) = planned(&proxy_with(
        "    loadBalancerPolicy:\n      strategy: RequestHash\n      requestHashPolicies:\n      - {headerHashOptions: {headerName: X-User}, terminal: true}\n      - {queryParameterHashOptions: {parameterName: id}}\n      - {hashSourceIP: true}\n",
    ));
    assert_eq!(
        affinity_of(&compiled, "HTTPProxy/shop/p"),
        Some(Affinity::Hash(vec![
            HashPart::Header("x-user".into()),
            HashPart::Stop,
            HashPart::Query("id".into()),
            HashPart::ClientAddress
        ]))
    );
}

#[test]
fn a_virtualserver_session_cookie_and_hash_methods_key_requests() {
    let variants = with_variants(Options::default());
    let compiled = compile_yaml(
        &virtual_server(
            ", sessionCookie: {enable: true, name: srv_id, path: /, expires: 1h, httpOnly: true, samesite: lax}",
        ),
        &variants,
    );
    assert_eq!(
        clusters_of(&compiled, "VirtualServer/shop/v"),
        ["shop/api:80~lb=ring-hash"]
    );
    assert_eq!(
        affinity_of(&compiled, "VirtualServer/shop/v"),
        cookie("srv_id", "Path=/; Max-Age=3600; SameSite=Lax; HttpOnly")
    );
    let compiled = compile_yaml(&virtual_server(", lb-method: ip_hash"), &variants);
    assert_eq!(
        affinity_of(&compiled, "VirtualServer/shop/v"),
        Some(Affinity::Hash(vec![HashPart::ClientAddress]))
    );
    let compiled = compile_yaml(&virtual_server(", lb-method: hash $arg_user consistent"), &variants);
    assert_eq!(
        affinity_of(&compiled, "VirtualServer/shop/v"),
        Some(Affinity::Hash(vec![HashPart::Query("user".into())]))
    );
}
