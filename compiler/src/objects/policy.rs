//! NGINX Ingress Controller's `k8s.nginx.org/v1` Policy, which a VirtualServer's `spec.policies`,
//! a route's `policies` and a VirtualServerRoute subroute's `policies` reference (ROUTING.md §6,
//! §9). Declared with `kube`'s `CustomResource` derive like the other NGINX kinds. The three kinds
//! the gateway enforces (`accessControl`, `rateLimit`, `basicAuth`) are decoded field by field; every
//! other kind (`jwt`, `oidc`, `ingressMTLS`, `egressMTLS`, `waf`, `apiKey`, `externalAuth`, `cors`,
//! `cache`, `hsts`, …) is kept by its field name, whatever its shape, so that a reference to one is
//! recognised and denies ([`crate::virtualserver`]).

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `Policy.spec`: exactly one kind of policy (NGINX's validation refuses none or several).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "k8s.nginx.org",
    version = "v1",
    kind = "Policy",
    plural = "policies",
    namespaced,
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct PolicySpec {
    /// `accessControl`: client addresses allowed or denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_control: Option<AccessControl>,
    /// `rateLimit`: nginx's `limit_req`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimitPolicy>,
    /// `basicAuth`: nginx's `auth_basic` with an htpasswd Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic_auth: Option<BasicAuthPolicy>,
    /// Every other field of the spec, by name (the other kinds, and `ingressClassName`).
    #[serde(flatten, default)]
    pub others: BTreeMap<String, serde_json::Value>,
}

/// `spec.accessControl`: exactly one of `allow` and `deny`, IPs or CIDR ranges.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct AccessControl {
    /// The addresses allowed (`allow …; deny all;`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    /// The addresses denied (`deny …; allow all;`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny: Option<Vec<String>>,
}

/// `spec.rateLimit`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitPolicy {
    /// `10r/s` or `300r/m`.
    #[serde(default)]
    pub rate: String,
    /// What shares a count: `${binary_remote_addr}` is the client's address.
    #[serde(default)]
    pub key: String,
    /// The zone's size (`10M`).
    #[serde(default)]
    pub zone_size: String,
    /// Requests above the rate taken (nginx's `burst`, 0 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<i64>,
    /// Requests of the burst not delayed (nginx's `delay`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<i64>,
    /// Whether the burst is taken without delay (nginx's `nodelay`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_delay: Option<bool>,
    /// Whether requests over the rate are only logged (`limit_req_dry_run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// `info`, `notice`, `warn` or `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    /// The status of a request over the rate (503 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject_code: Option<i64>,
    /// Whether the rate is divided among the controller's replicas.
    #[serde(default)]
    pub scale: bool,
    /// A tiered rate limit's condition (JWT claim or variables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<serde_json::Value>,
}

/// `spec.basicAuth`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct BasicAuthPolicy {
    /// The Secret (type `nginx.org/htpasswd`, entry `htpasswd`) in the Policy's namespace.
    #[serde(default)]
    pub secret: String,
    /// The realm of the challenge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realm: Option<String>,
}
