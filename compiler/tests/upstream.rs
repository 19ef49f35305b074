//! The clusters a plain Envoy is given (issue "The upstream side"): one per backend the table names,
//! with the ready endpoints of its Service's EndpointSlices on the port of the Service port's name,
//! DNS for an ExternalName Service, and the CDS and EDS documents Envoy reads.

mod common;

use common::*;
use switchyard_compiler::upstream::cds::cds_document;
use switchyard_compiler::upstream::endpoints::Endpoint;
use switchyard_compiler::upstream::{plan, Endpoints, Upstream};
use switchyard_compiler::Options;

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
