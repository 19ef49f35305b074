//! Envoy's clusters (CDS) as a file, as [`crate::lds`] writes the listeners: one `DiscoveryResponse`
//! with every cluster. A cluster on a Service's endpoints takes them by EDS over ADS (the
//! sidecar's `--ads-listen` server, named in Envoy's bootstrap as `ads_config`): one stream for
//! every cluster, where a file per cluster would cost Envoy an inotify instance each
//! (`docs/deploy-envoy.md`, "Clusters and endpoints"). An `ExternalName` Service's cluster holds its
//! one DNS endpoint itself.
//!
//! Only a backend added or removed changes this file, and Envoy leaves the clusters whose
//! configuration did not change untouched: an endpoint change never re-creates a cluster.

use serde_json::{json, Value};

use crate::order::fnv1a;
use crate::upstream::variant::{Balance, HealthCheck};
use crate::upstream::{Endpoints, Upstream, UpstreamCluster};

/// The type URL of a cluster.
pub const CLUSTER_TYPE: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

/// The CDS `DiscoveryResponse`: every cluster.
pub fn cds_document(upstream: &Upstream) -> String {
    let resources: Vec<Value> = upstream.clusters.iter().map(cluster_resource).collect();
    // A `Value` of strings and numbers always serializes.
    let compact = serde_json::to_string(&resources).unwrap_or_default();
    let version = format!("{:016x}", fnv1a(compact.as_bytes()));
    let document = json!({ "version_info": version, "resources": resources });
    // A `Value` of strings and numbers always serializes.
    serde_json::to_string_pretty(&document).unwrap_or_default() + "\n"
}

/// One cluster as Envoy's `Cluster` (with its `@type`).
pub fn cluster_resource(cluster: &UpstreamCluster) -> Value {
    let mut resource = json!({
        "@type": CLUSTER_TYPE,
        "name": cluster.name,
        "connect_timeout": seconds(cluster.variant.connect_timeout_ms),
    });
    let (http2, idle) = (cluster.variant.protocol.http2(), cluster.variant.idle_timeout_ms);
    if http2 || idle.is_some() {
        let explicit = match http2 {
            true => json!({ "http2_protocol_options": {} }),
            false => json!({ "http_protocol_options": {} }),
        };
        let mut options = json!({
            "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
            "explicit_http_config": explicit,
        });
        if let Some(ms) = idle {
            // 0 s: Envoy keeps an idle connection for ever (Contour's `infinity`).
            options["common_http_protocol_options"] = json!({ "idle_timeout": seconds(ms) });
        }
        resource["typed_extension_protocol_options"] =
            json!({ "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": options });
    }
    if cluster.variant.protocol.tls() {
        resource["transport_socket"] = transport_socket(cluster);
    }
    if cluster.variant.balance != Balance::RoundRobin {
        resource["lb_policy"] = json!(cluster.variant.balance.envoy());
    }
    if let Some(check) = &cluster.variant.health_check {
        resource["health_checks"] = json!([health_check(check, cluster)]);
    }
    match &cluster.source {
        Endpoints::Slices(_) => {
            resource["type"] = json!("EDS");
            resource["eds_cluster_config"] = json!({ "eds_config": { "ads": {}, "resource_api_version": "V3" } });
        }
        Endpoints::ControlPlane { service_name } => {
            resource["type"] = json!("EDS");
            resource["eds_cluster_config"] = json!({
                "service_name": service_name,
                "eds_config": { "ads": {}, "resource_api_version": "V3" },
            });
        }
        Endpoints::Dns { host, port } => {
            resource["type"] = json!("STRICT_DNS");
            // An IPv4 address when the name has one (Envoy's default asks for IPv6 first).
            resource["dns_lookup_family"] = json!("V4_PREFERRED");
            resource["load_assignment"] = json!({
                "cluster_name": cluster.name,
                "endpoints": [{ "lb_endpoints": [
                    { "endpoint": { "address": { "socket_address": { "address": host, "port_value": port } } } }
                ] }],
            });
        }
    }
    resource
}

/// A TLS backend's transport socket. Without a [`Verify`], no SNI and no check of the backend's
/// certificate: ingress-nginx's `proxy_ssl_server_name` and `proxy_ssl_verify` are off unless asked
/// for, and Contour's and NGINX's upstream TLS check nothing without a `validation` either. With
/// one, the chain is checked against the CA Secret's `ca.crt` (held in
/// [`UpstreamCluster::trusted_ca`]: a cluster whose CA is missing is not made, so its requests
/// fail) and the certificate must name one of its names. ALPN offers the protocol spoken.
fn transport_socket(cluster: &UpstreamCluster) -> Value {
    let alpn = match cluster.variant.protocol.http2() {
        true => "h2",
        false => "http/1.1",
    };
    let mut context = json!({ "common_tls_context": { "alpn_protocols": [alpn] } });
    if let (Some(verify), Some(ca)) = (&cluster.variant.verify, &cluster.trusted_ca) {
        let mut validation = json!({ "trusted_ca": { "inline_string": ca } });
        if !verify.names.is_empty() {
            let names: Vec<Value> = (verify.names.iter())
                .map(|name| json!({ "san_type": "DNS", "matcher": { "exact": name } }))
                .collect();
            validation["match_typed_subject_alt_names"] = json!(names);
        }
        if let Some(depth) = verify.depth {
            validation["max_verify_depth"] = json!(depth);
        }
        context["common_tls_context"]["validation_context"] = validation;
        if let Some(range) = verify.versions {
            context["common_tls_context"]["tls_params"] = json!({
                "tls_minimum_protocol_version": range.min.envoy(),
                "tls_maximum_protocol_version": range.max.envoy(),
            });
        }
        if let Some(sni) = &verify.sni {
            context["sni"] = json!(sni);
        }
    } else if let Some(name) = &cluster.server_name {
        context["sni"] = json!(name);
    }
    context["@type"] = json!("type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext");
    json!({ "name": "envoy.transport_sockets.tls", "typed_config": context })
}

/// An active HTTP health check (HTTP/2 when the backend speaks it). Without a `Host` of its own
/// it sends the Service's DNS name (`name.namespace.svc`), not Envoy's default, the cluster's
/// name, which is no host name.
fn health_check(check: &HealthCheck, cluster: &UpstreamCluster) -> Value {
    let host = check.host.clone().unwrap_or_else(|| service_host(&cluster.service));
    let mut http = json!({ "path": check.path, "host": host });
    if cluster.variant.protocol.http2() {
        http["codec_client_type"] = json!("HTTP2");
    }
    json!({
        "timeout": seconds(check.timeout_ms),
        "interval": seconds(check.interval_ms),
        "unhealthy_threshold": check.unhealthy,
        "healthy_threshold": check.healthy,
        "http_health_check": http,
    })
}

/// `namespace/name:port` → `name.namespace.svc`.
fn service_host(service: &str) -> String {
    let without_port = service.rsplit_once(':').map_or(service, |(s, _)| s);
    match without_port.split_once('/') {
        Some((namespace, name)) => format!("{name}.{namespace}.svc"),
        None => without_port.to_owned(),
    }
}

/// Milliseconds as a protobuf JSON duration (`12s`, `0.5s`).
fn seconds(ms: u32) -> String {
    format!("{}s", f64::from(ms) / 1000.0)
}
