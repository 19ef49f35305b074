//! NGINX Ingress Controller's `k8s.nginx.org/v1` TransportServer and GlobalConfiguration (ROUTING.md
//! §6), declared with `kube`'s `CustomResource` derive like HTTPProxy, with only the fields
//! Switchyard routes on (serde ignores the rest: health checks, snippets, session parameters...).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The listener name that means TLS passthrough on NGINX's HTTPS port (no GlobalConfiguration entry).
pub const TLS_PASSTHROUGH_LISTENER: &str = "tls-passthrough";

/// The protocol of the TLS passthrough listener.
pub const TLS_PASSTHROUGH_PROTOCOL: &str = "TLS_PASSTHROUGH";

/// `TransportServer.spec`: a listener, an optional host, upstreams and the one `action.pass`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "k8s.nginx.org",
    version = "v1",
    kind = "TransportServer",
    plural = "transportservers",
    namespaced,
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct TransportServerSpec {
    /// The listener it serves: `tls-passthrough`, or one a GlobalConfiguration defines.
    #[serde(default)]
    pub listener: TransportListener,
    /// The SNI host (TLS passthrough: the host it claims).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The class it asks for (ROUTING.md §1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_class_name: Option<String>,
    /// Named upstreams (a Service and port each).
    #[serde(default)]
    pub upstreams: Vec<TransportUpstream>,
    /// What to do with a connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<TransportAction>,
}

/// `spec.listener`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct TransportListener {
    /// The listener's name.
    #[serde(default)]
    pub name: String,
    /// `TLS_PASSTHROUGH`, `TCP` or `UDP`.
    #[serde(default)]
    pub protocol: String,
}

/// One `upstreams[]` entry.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct TransportUpstream {
    /// The name `action.pass` refers to.
    #[serde(default)]
    pub name: String,
    /// The Service, in the TransportServer's namespace.
    #[serde(default)]
    pub service: String,
    /// The Service port.
    #[serde(default)]
    pub port: i64,
}

/// `spec.action`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct TransportAction {
    /// The upstream every connection goes to.
    #[serde(default)]
    pub pass: String,
}

/// `GlobalConfiguration.spec`: the listeners TransportServers may use.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "k8s.nginx.org",
    version = "v1",
    kind = "GlobalConfiguration",
    plural = "globalconfigurations",
    namespaced,
    derive = "PartialEq"
)]
pub struct GlobalConfigurationSpec {
    /// The listeners.
    #[serde(default)]
    pub listeners: Vec<GlobalListener>,
}

/// One `listeners[]` entry.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct GlobalListener {
    /// Its name, which a TransportServer's `listener.name` refers to.
    #[serde(default)]
    pub name: String,
    /// The port.
    #[serde(default)]
    pub port: i64,
    /// `TCP` or `UDP`.
    #[serde(default)]
    pub protocol: String,
}
