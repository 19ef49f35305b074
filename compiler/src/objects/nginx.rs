//! NGINX Ingress Controller's `k8s.nginx.org/v1` VirtualServer and VirtualServerRoute (ROUTING.md
//! §6), declared with `kube`'s `CustomResource` derive like HTTPProxy, with only the fields
//! Switchyard routes on, and their `policies` (ROUTING.md §9), decoded whatever their shape so that
//! none is skipped (serde ignores the rest: TLS, snippets, error pages...).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `VirtualServer.spec`: one host, its upstreams and its routes.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "k8s.nginx.org",
    version = "v1",
    kind = "VirtualServer",
    plural = "virtualservers",
    namespaced,
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct VirtualServerSpec {
    /// The host this VirtualServer owns (`*.example.com` allowed).
    #[serde(default)]
    pub host: String,
    /// The class it asks for (ROUTING.md §1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_class_name: Option<String>,
    /// Named upstreams (a Service and port each).
    #[serde(default)]
    pub upstreams: Vec<Upstream>,
    /// Routes, each a path with an action, splits, matches, or a VirtualServerRoute reference.
    #[serde(default)]
    pub routes: Vec<Route>,
    /// References to `Policy` objects for every route (ROUTING.md §9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policies: Option<serde_json::Value>,
    /// HTTPS (ROUTING.md §8.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<VirtualServerTls>,
}

/// `VirtualServer.spec.tls`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualServerTls {
    /// The certificate's Secret, in the VirtualServer's namespace; empty: the default certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// The redirect of plain HTTP to https.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect: Option<TlsRedirect>,
}

/// `VirtualServer.spec.tls.redirect`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsRedirect {
    /// Whether plain HTTP is redirected.
    #[serde(default)]
    pub enable: bool,
    /// 301 (default), 302, 307 or 308.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    /// `scheme` (default) or `x-forwarded-proto`: what says the request was plain HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub based_on: Option<String>,
}

/// `VirtualServerRoute.spec`: routes delegated by a VirtualServer, on the same host.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "k8s.nginx.org",
    version = "v1",
    kind = "VirtualServerRoute",
    plural = "virtualserverroutes",
    namespaced,
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct VirtualServerRouteSpec {
    /// Must equal the referencing VirtualServer's host.
    #[serde(default)]
    pub host: String,
    /// The class it asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_class_name: Option<String>,
    /// Named upstreams, in the VirtualServerRoute's namespace.
    #[serde(default)]
    pub upstreams: Vec<Upstream>,
    /// Subroutes: routes whose paths live under the referencing route's path.
    #[serde(default)]
    pub subroutes: Vec<Route>,
}

/// One `upstreams[]` entry.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Upstream {
    /// The name actions refer to.
    #[serde(default)]
    pub name: String,
    /// `svc` or `ns/svc`.
    #[serde(default)]
    pub service: String,
    /// The Service port.
    #[serde(default)]
    pub port: i32,
    /// Pod label selector: cannot be expressed by a cluster name (routes using it are refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subselector: Option<std::collections::BTreeMap<String, String>>,
    /// `tls.enable`: HTTPS to the upstream (its certificate not checked, as NGINX does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<UpstreamTls>,
    /// `connect-timeout`: an nginx time (`30s`).
    #[serde(default, rename = "connect-timeout", skip_serializing_if = "Option::is_none")]
    pub connect_timeout: Option<String>,
    /// `read-timeout`: an nginx time (`60s` when absent).
    #[serde(default, rename = "read-timeout", skip_serializing_if = "Option::is_none")]
    pub read_timeout: Option<String>,
    /// `send-timeout`: an nginx time (`60s` when absent).
    #[serde(default, rename = "send-timeout", skip_serializing_if = "Option::is_none")]
    pub send_timeout: Option<String>,
    /// `next-upstream`: nginx's `proxy_next_upstream` cases (`error timeout` when absent).
    #[serde(default, rename = "next-upstream", skip_serializing_if = "Option::is_none")]
    pub next_upstream: Option<String>,
    /// `next-upstream-tries` (`0`, no limit, when absent).
    #[serde(default, rename = "next-upstream-tries", skip_serializing_if = "Option::is_none")]
    pub next_upstream_tries: Option<i64>,
    /// `next-upstream-timeout`: an nginx time (`0`, no limit, when absent).
    #[serde(default, rename = "next-upstream-timeout", skip_serializing_if = "Option::is_none")]
    pub next_upstream_timeout: Option<String>,
    /// `client-max-body-size`: an nginx size (`10m`; `0`: no limit); NGINX's 1 MiB when absent.
    #[serde(default, rename = "client-max-body-size", skip_serializing_if = "Option::is_none")]
    pub client_max_body_size: Option<String>,
    /// `lb-method`: `round_robin`, `least_conn`, `random`, `random two [least_conn]`, `ip_hash`,
    /// `hash <key> [consistent]`, … (NGINX's `random two least_conn` when absent).
    #[serde(default, rename = "lb-method", skip_serializing_if = "Option::is_none")]
    pub lb_method: Option<String>,
    /// `healthCheck`: NGINX Plus's active health check.
    #[serde(default, rename = "healthCheck", skip_serializing_if = "Option::is_none")]
    pub health_check: Option<UpstreamHealthCheck>,
    /// `sessionCookie`: NGINX Plus's cookie affinity.
    #[serde(default, rename = "sessionCookie", skip_serializing_if = "Option::is_none")]
    pub session_cookie: Option<SessionCookie>,
}

/// An upstream's `healthCheck` (the fields read; NGINX's defaults when absent).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct UpstreamHealthCheck {
    /// Whether the check runs.
    #[serde(default)]
    pub enable: bool,
    /// The path asked for (`/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// An nginx time between checks (`5s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// Failed checks that take an endpoint out (1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fails: Option<i64>,
    /// Passed checks that put it back (1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passes: Option<i64>,
    /// An nginx time a check's answer may take (`60s`).
    #[serde(default, rename = "read-timeout", skip_serializing_if = "Option::is_none")]
    pub read_timeout: Option<String>,
}

/// An upstream's `sessionCookie`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCookie {
    /// Whether the cookie is set.
    #[serde(default)]
    pub enable: bool,
    /// The cookie's name.
    #[serde(default)]
    pub name: String,
    /// Its `Path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Its lifetime: an nginx time, or `max`; absent: a session cookie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
    /// Its `Domain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// `HttpOnly`.
    #[serde(default)]
    pub http_only: bool,
    /// `Secure`.
    #[serde(default)]
    pub secure: bool,
    /// `SameSite`: `strict`, `lax` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samesite: Option<String>,
}

/// An upstream's `tls`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct UpstreamTls {
    /// Whether Envoy speaks TLS to the upstream.
    #[serde(default)]
    pub enable: bool,
}

/// One `routes[]` (or `subroutes[]`) entry.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Route {
    /// `/x`, `=/x`, `~re`, `~*re` or `^~/x`.
    #[serde(default)]
    pub path: String,
    /// What the route does when no match holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// Weighted actions, instead of `action`.
    #[serde(default)]
    pub splits: Vec<Split>,
    /// Conditional actions, tried in order.
    #[serde(default)]
    pub matches: Vec<Match>,
    /// A VirtualServerRoute, `[ns/]name`, instead of an action (VirtualServer routes only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// References to `Policy` objects for this route (ROUTING.md §9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policies: Option<serde_json::Value>,
}

/// An action: exactly one of `pass`, `proxy`, `return`, `redirect`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    /// An upstream name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<String>,
    /// An upstream with rewrites.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    /// A direct response.
    #[serde(default, rename = "return", skip_serializing_if = "Option::is_none")]
    pub return_: Option<Return>,
    /// A redirect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect: Option<RedirectAction>,
}

/// `action.proxy`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Proxy {
    /// An upstream name.
    #[serde(default)]
    pub upstream: String,
    /// Replaces the route's path (a prefix rewrite).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite_path: Option<String>,
    /// Request header changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_headers: Option<ProxyRequestHeaders>,
}

/// `action.proxy.requestHeaders`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProxyRequestHeaders {
    /// Headers to set.
    #[serde(default)]
    pub set: Vec<NameValue>,
}

/// A header name and value.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct NameValue {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Value.
    #[serde(default)]
    pub value: String,
}

/// `action.return`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Return {
    /// Status; 200 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    /// Content type; `text/plain` when absent.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Body.
    #[serde(default)]
    pub body: String,
    /// Response headers.
    #[serde(default)]
    pub headers: Vec<NameValue>,
}

/// `action.redirect`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedirectAction {
    /// The location, with `${scheme}`, `${host}`, `${request_uri}`.
    #[serde(default)]
    pub url: String,
    /// 301 (default), 302, 307 or 308.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
}

/// One `splits[]` entry.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Split {
    /// 0 to 100; the weights of a route sum to 100.
    #[serde(default)]
    pub weight: i64,
    /// The action taken for this share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
}

/// One `matches[]` entry.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Match {
    /// All must hold.
    #[serde(default)]
    pub conditions: Vec<MatchCondition>,
    /// The action when they do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// Or weighted actions.
    #[serde(default)]
    pub splits: Vec<Split>,
}

/// One condition: exactly one of `header`, `cookie`, `argument`, `variable`, and its `value`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchCondition {
    /// A request header name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// A cookie name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie: Option<String>,
    /// A query parameter name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument: Option<String>,
    /// An NGINX variable; only `$request_method` is routed on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variable: Option<String>,
    /// A plain value (any case), `!value`, `~re`, `~*re`, or `""` (empty or absent).
    #[serde(default)]
    pub value: String,
}
