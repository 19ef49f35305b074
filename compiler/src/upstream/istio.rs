//! The variant clusters for an Istio gateway (issue "The upstream side", item 4): Istio makes one
//! cluster per Service port (`outbound|443||api.shop.svc.cluster.local`, the cluster template's
//! name); a backend the manifests ask to be spoken to otherwise (TLS checked against a CA, HTTP/2,
//! a ring hash, a health check…) names a variant of it ([`super::variant`]), which this
//! EnvoyFilter adds to the gateway alone: one `CLUSTER` `ADD` patch per variant, in the gateway's
//! namespace, selecting the gateway's pods, so no other workload of the mesh changes. Each added
//! cluster takes its endpoints from istiod under Istio's own cluster's name
//! ([`super::Endpoints::ControlPlane`]), so pods that come and go reach it as they reach Istio's.
//!
//! Chosen over a DestinationRule with a subset per variant: a DestinationRule in the gateway's
//! namespace would replace, for the gateway, any the Service's owners wrote in theirs (istiod
//! takes the first it finds for a host: the proxy's namespace, then the Service's), and one in
//! the Service's namespace would be an object written where the platform team does not run
//! Switchyard. An EnvoyFilter in the gateway's namespace touches nothing but the gateway; its
//! clusters are the same as a plain Envoy's ([`super::cds`]) but for where the endpoints come from.
//! docs/deploy-istio.md, "Backends spoken to otherwise", tells the trade-off.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::cds::cluster_resource;
use super::Upstream;

/// The EnvoyFilter `namespace/name` adding `upstream`'s clusters to the gateway pods with labels
/// `selector`.
pub fn envoy_filter(
    upstream: &Upstream,
    (namespace, name): (&str, &str),
    selector: &BTreeMap<String, String>,
) -> Value {
    let patches: Vec<Value> = (upstream.clusters.iter())
        .map(|cluster| {
            let mut value = cluster_resource(cluster);
            if let Some(fields) = value.as_object_mut() {
                // A patch's value is the message itself, not an `Any`.
                fields.remove("@type");
            }
            json!({
                "applyTo": "CLUSTER",
                "match": { "context": "GATEWAY" },
                "patch": { "operation": "ADD", "value": value },
            })
        })
        .collect();
    json!({
        "apiVersion": "networking.istio.io/v1alpha3",
        "kind": "EnvoyFilter",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": { "app.kubernetes.io/managed-by": "switchyard" },
        },
        "spec": {
            "workloadSelector": { "labels": selector },
            "configPatches": patches,
        },
    })
}
