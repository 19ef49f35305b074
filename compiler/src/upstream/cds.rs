//! Envoy's clusters (CDS) and endpoints (EDS) from files, as [`crate::lds`] writes the listeners:
//! one CDS `DiscoveryResponse` with every cluster, and one EDS file per cluster (Envoy's file EDS
//! takes one `ClusterLoadAssignment` per subscription), named by [`eds_file_name`].
//!
//! An endpoint change rewrites one small EDS file: Envoy updates that cluster's hosts in place, no
//! cluster is re-created and no connection drains. Only a cluster added or removed changes the CDS
//! file, and Envoy leaves the clusters whose configuration did not change untouched.

use serde_json::{json, Value};

use crate::order::fnv1a;
use crate::upstream::{Endpoints, Upstream, UpstreamCluster};

/// The type URL of a cluster.
pub const CLUSTER_TYPE: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
/// The type URL of a cluster's endpoints.
pub const LOAD_ASSIGNMENT_TYPE: &str = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";

/// How long a connection to an endpoint may take: ingress-nginx's `proxy-connect-timeout` default.
const CONNECT_TIMEOUT: &str = "5s";

/// The EDS file of cluster `name`: its characters outside `[A-Za-z0-9._-]` as `_`, then a hash of
/// the whole name (two names never share a file), `.json`.
pub fn eds_file_name(name: &str) -> String {
    let readable: String = (name.chars().take(120))
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{readable}-{:016x}.json", fnv1a(name.as_bytes()))
}

/// The CDS `DiscoveryResponse`: every cluster, its EDS file in `eds_folder` (an absolute path).
pub fn cds_document(upstream: &Upstream, eds_folder: &str) -> String {
    let resources: Vec<Value> = (upstream.clusters.iter())
        .map(|cluster| cluster_resource(cluster, eds_folder))
        .collect();
    document(&json!({ "version_info": version(&resources), "resources": resources }))
}

/// The EDS `DiscoveryResponse` of `cluster`; `None` for a DNS cluster (its one endpoint is in
/// the CDS file).
pub fn eds_document(cluster: &UpstreamCluster) -> Option<String> {
    let Endpoints::Slices(endpoints) = &cluster.source else {
        return None;
    };
    let hosts: Vec<(&str, u16)> = endpoints.iter().map(|e| (e.address.as_str(), e.port)).collect();
    let mut assignment = load_assignment(&cluster.name, &hosts);
    assignment["@type"] = json!(LOAD_ASSIGNMENT_TYPE);
    let resources = [assignment];
    Some(document(
        &json!({ "version_info": version(&resources), "resources": resources }),
    ))
}

fn cluster_resource(cluster: &UpstreamCluster, eds_folder: &str) -> Value {
    let mut resource = json!({
        "@type": CLUSTER_TYPE,
        "name": cluster.name,
        "connect_timeout": CONNECT_TIMEOUT,
    });
    match &cluster.source {
        Endpoints::Slices(_) => {
            resource["type"] = json!("EDS");
            let path = format!("{eds_folder}/{}", eds_file_name(&cluster.name));
            resource["eds_cluster_config"] = json!({
                "eds_config": { "path_config_source": { "path": path }, "resource_api_version": "V3" },
            });
        }
        Endpoints::Dns { host, port } => {
            resource["type"] = json!("STRICT_DNS");
            // An IPv4 address when the name has one (Envoy's default asks for IPv6 first).
            resource["dns_lookup_family"] = json!("V4_PREFERRED");
            resource["load_assignment"] = load_assignment(&cluster.name, &[(host.as_str(), *port)]);
        }
    }
    resource
}

fn load_assignment(cluster: &str, hosts: &[(&str, u16)]) -> Value {
    let lb_endpoints: Vec<Value> = (hosts.iter())
        .map(|(address, port)| {
            json!({ "endpoint": { "address": { "socket_address": { "address": address, "port_value": port } } } })
        })
        .collect();
    json!({ "cluster_name": cluster, "endpoints": [{ "lb_endpoints": lb_endpoints }] })
}

/// A version naming the content (Envoy logs it; the same content, the same version).
fn version(resources: &[Value]) -> String {
    format!("{:016x}", fnv1a(Value::from(resources.to_vec()).to_string().as_bytes()))
}

fn document(value: &Value) -> String {
    // A `Value` of strings and numbers always serializes.
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}
