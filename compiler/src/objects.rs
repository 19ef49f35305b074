//! The Kubernetes objects the compiler reads, and the bits of metadata every stage needs.
//!
//! Ingress, IngressClass and Service come from `k8s-openapi`. Contour's HTTPProxy
//! (`projectcontour.io/v1`) is declared here with `kube`'s `CustomResource` derive, with only the
//! fields Switchyard routes on (serde ignores the rest), so that the watch command can reuse it;
//! NGINX's VirtualServer and VirtualServerRoute likewise in [`nginx`].

pub mod nginx;

pub mod transport;

pub mod secret;

pub mod policy;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A kind of object the compiler reads: one vector of [`Objects`], named by [`Object::KIND`].
/// Implemented by [`objects!`] for each row of the list of kinds, and only there.
pub trait Object:
    kube::Resource<DynamicType = ()>
    + Serialize
    + serde::de::DeserializeOwned
    + Clone
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// Its kind.
    const KIND: Kind;
    /// Its objects in `objects`.
    fn of(objects: &Objects) -> &Vec<Arc<Self>>;
    /// Its objects in `objects`, to change.
    fn of_mut(objects: &mut Objects) -> &mut Vec<Arc<Self>>;
    /// Whether two versions have the same spec (what the incremental compiler compares, with
    /// the metadata it reads).
    fn same_spec(&self, other: &Self) -> bool;
    /// The class it asks for (`spec.ingressClassName`), for the class check the pipeline applies
    /// to the kinds with a class ([`Kind::has_class`]); `None` for the others.
    fn class_name(&self) -> Option<&str>;
}

/// Something done once per kind of [`Objects`], given the kind as a type: [`Objects::each_kind`]
/// calls [`EachKind::kind`] for every kind, and [`Objects::one_kind`] for one. A consumer that
/// handles every kind writes one generic method (over [`Object::of`], [`Object::KIND`]) instead of a
/// line per kind, so a kind added to the list is handled wherever this is used.
pub trait EachKind {
    /// Called with one kind.
    fn kind<T: Object>(&mut self);
}

/// Declares [`Objects`] (one vector per kind), [`Object`] for each kind's type, and the visitors,
/// from one list: `field: Type => Kind`, then `class(f)` for a kind with a class, `f` reading its
/// `spec.ingressClassName`. A [`Kind`] missing from the list does not compile
/// ([`Objects::one_kind`] matches every kind).
macro_rules! objects {
    (@class $object:ident) => { None };
    (@class $object:ident $class:path) => { $class($object) };
    (@same $object:ident $other:ident) => { $object.spec == $other.spec };
    (@same $object:ident $other:ident $same:path) => { $same($object, $other) };
    ($($(#[$doc:meta])* $field:ident: $ty:ty => $kind:ident $(class($class:path))? $(same($same:path))?,)+) => {
        /// Everything one compilation reads: one vector per [`Kind`]. The order of the vectors does
        /// not matter: the pipeline sorts.
        ///
        /// Each object is behind an [`Arc`]: a source that holds its objects between compilations
        /// (the folder's merged files, the cluster's watch stores) hands them to every
        /// compilation, and to the status writer, without copying one; the incremental compiler
        /// keeps the same `Arc`s, and one it was given before is unchanged at a glance
        /// ([`Arc::ptr_eq`]).
        ///
        /// Code that does the same to every kind goes through [`Objects::each_kind`], never through
        /// the fields one by one.
        #[derive(Debug, Clone, Default)]
        pub struct Objects {
            $($(#[$doc])* pub $field: Vec<Arc<$ty>>,)+
        }

        $(impl Object for $ty {
            const KIND: Kind = Kind::$kind;

            fn of(objects: &Objects) -> &Vec<Arc<Self>> {
                &objects.$field
            }

            fn of_mut(objects: &mut Objects) -> &mut Vec<Arc<Self>> {
                &mut objects.$field
            }

            fn same_spec(&self, other: &Self) -> bool {
                objects!(@same self other $($same)?)
            }

            fn class_name(&self) -> Option<&str> {
                objects!(@class self $($class)?)
            }
        })+

        impl Objects {
            /// Calls `visitor` with the type of `kind`.
            pub fn one_kind(kind: Kind, visitor: &mut impl EachKind) {
                match kind {
                    $(Kind::$kind => visitor.kind::<$ty>(),)+
                }
            }
        }
    };
}

objects! {
    /// `networking.k8s.io/v1` Ingresses (older versions are converted by [`crate::load`]).
    ingresses: Ingress => Ingress class(classes::ingress),
    /// IngressClasses, for class eligibility (ROUTING.md §1).
    ingress_classes: IngressClass => IngressClass,
    /// Services, to resolve backend ports (ROUTING.md §5, [`crate::services`]).
    services: Service => Service,
    /// Contour HTTPProxies.
    http_proxies: HTTPProxy => HTTPProxy class(classes::http_proxy),
    /// NGINX VirtualServers.
    virtual_servers: nginx::VirtualServer => VirtualServer class(classes::virtual_server),
    /// NGINX VirtualServerRoutes.
    virtual_server_routes: nginx::VirtualServerRoute => VirtualServerRoute class(classes::virtual_server_route),
    /// NGINX TransportServers (L4 routes, ROUTING.md §6).
    transport_servers: transport::TransportServer => TransportServer class(classes::transport_server),
    /// NGINX GlobalConfigurations (the listeners TransportServers use).
    global_configurations: transport::GlobalConfiguration => GlobalConfiguration,
    /// Secrets: the certificates of the HTTPS listener (ROUTING.md §8), only their `tls.crt` and
    /// `tls.key` ([`secret`]).
    secrets: secret::Secret => Secret same(secret::Secret::same_content),
    /// EndpointSlices: the endpoints of the Services the table names, for the clusters the
    /// sidecar gives Envoy ([`crate::upstream`]); they change no rule.
    endpoint_slices: EndpointSlice => EndpointSlice same(same_endpoints),
    /// NGINX Policies, which VirtualServers and VirtualServerRoutes reference ([`policy`]).
    policies: policy::Policy => Policy,
}

/// Whether two versions of an EndpointSlice hold the same endpoints and ports (an EndpointSlice has
/// no `spec`).
fn same_endpoints(a: &EndpointSlice, b: &EndpointSlice) -> bool {
    a.endpoints == b.endpoints && a.ports == b.ports && a.metadata.labels == b.metadata.labels
}

/// Where each kind with a class ([`Kind::has_class`]) writes it ([`Object::class_name`]).
mod classes {
    use super::{nginx, transport, HTTPProxy, Ingress};

    pub fn ingress(o: &Ingress) -> Option<&str> {
        o.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref())
    }

    pub fn http_proxy(o: &HTTPProxy) -> Option<&str> {
        o.spec.ingress_class_name.as_deref()
    }

    pub fn virtual_server(o: &nginx::VirtualServer) -> Option<&str> {
        o.spec.ingress_class_name.as_deref()
    }

    pub fn virtual_server_route(o: &nginx::VirtualServerRoute) -> Option<&str> {
        o.spec.ingress_class_name.as_deref()
    }

    pub fn transport_server(o: &transport::TransportServer) -> Option<&str> {
        o.spec.ingress_class_name.as_deref()
    }
}

impl Objects {
    /// Calls `visitor` once per kind, in [`Kind`]'s order.
    pub fn each_kind(visitor: &mut impl EachKind) {
        for &kind in Kind::ALL {
            Objects::one_kind(kind, visitor);
        }
    }

    /// How many objects there are, of every kind.
    pub fn len(&self) -> usize {
        struct Count<'o>(&'o Objects, usize);
        impl EachKind for Count<'_> {
            fn kind<T: Object>(&mut self) {
                self.1 += T::of(self.0).len();
            }
        }
        let mut count = Count(self, 0);
        Objects::each_kind(&mut count);
        count.1
    }

    /// Whether there are no objects at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `from`'s objects (the same `Arc`s) to these.
    pub fn merge(&mut self, from: &Objects) {
        struct Merge<'o>(&'o mut Objects, &'o Objects);
        impl EachKind for Merge<'_> {
            fn kind<T: Object>(&mut self) {
                T::of_mut(self.0).extend(T::of(self.1).iter().cloned());
            }
        }
        Objects::each_kind(&mut Merge(self, from));
    }

    /// Takes `from`'s objects out of these (each once; the order of these does not matter).
    /// `from` is what was merged into these before: its objects are the very `Arc`s these hold.
    pub fn unmerge(&mut self, from: &Objects) {
        struct Unmerge<'o>(&'o mut Objects, &'o Objects);
        impl EachKind for Unmerge<'_> {
            fn kind<T: Object>(&mut self) {
                let into = T::of_mut(self.0);
                for object in T::of(self.1) {
                    if let Some(i) = into.iter().position(|o| Arc::ptr_eq(o, object)) {
                        into.swap_remove(i);
                    }
                }
            }
        }
        Objects::each_kind(&mut Unmerge(self, from));
    }
}

/// Contour's HTTPProxy: only the fields that decide routing.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "projectcontour.io",
    version = "v1",
    kind = "HTTPProxy",
    plural = "httpproxies",
    namespaced,
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct HTTPProxySpec {
    /// Present only on a root: the virtual host this tree serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtualhost: Option<VirtualHost>,
    /// The class this proxy asks for (same rules as Ingress, ROUTING.md §1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_class_name: Option<String>,
    /// Routes of this proxy.
    #[serde(default)]
    pub routes: Vec<ProxyRoute>,
    /// Delegations to other proxies.
    #[serde(default)]
    pub includes: Vec<Include>,
    /// TCP proxying: with `virtualhost.tls.passthrough`, where TLS goes undecrypted (ROUTING.md §8.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcpproxy: Option<TcpProxy>,
}

/// `spec.tcpproxy`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TcpProxy {
    /// The services, in the proxy's namespace.
    #[serde(default)]
    pub services: Vec<ProxyService>,
}

/// `spec.virtualhost`: its host, its TLS (ROUTING.md §8.5) and its access controls (§9), these
/// decoded whatever their shape so that none is skipped ([`crate::httpproxy::access_fields`]).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualHost {
    /// The fully qualified host name.
    #[serde(default)]
    pub fqdn: String,
    /// An external authorization server for every route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<serde_json::Value>,
    /// JWT verification providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwt_providers: Option<serde_json::Value>,
    /// Client addresses allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_allow_policy: Option<serde_json::Value>,
    /// Client addresses denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_deny_policy: Option<serde_json::Value>,
    /// `rateLimitPolicy`: only `local` is read (every route of the host shares its bucket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_policy: Option<RateLimitPolicy>,
    /// The host's CORS, for every route of the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cors_policy: Option<CorsPolicy>,
    /// TLS: only `clientValidation` is read here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<VirtualHostTls>,
}

/// `spec.virtualhost.tls` (ROUTING.md §8.5; `clientValidation` is an access control, §9).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualHostTls {
    /// The certificate's Secret: `name`, or `namespace/name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
    /// `1.2` or `1.3`; other values take the default (1.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_protocol_version: Option<String>,
    /// `1.2` or `1.3`; other values take the default (1.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_protocol_version: Option<String>,
    /// TLS passed through to the services of `tcpproxy`, never decrypted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub passthrough: bool,
    /// Whether a handshake without SNI (the default certificate) may reach this host.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enable_fallback_certificate: bool,
    /// Client certificate validation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_validation: Option<serde_json::Value>,
}

/// One `includes[]` entry.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Include {
    /// The included proxy's name.
    #[serde(default)]
    pub name: String,
    /// Its namespace; the parent's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Conditions added to every route of the included proxy.
    #[serde(default)]
    pub conditions: Vec<MatchCondition>,
}

/// One `routes[]` entry.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProxyRoute {
    /// Conditions of this route.
    #[serde(default)]
    pub conditions: Vec<MatchCondition>,
    /// Upstream services, weighted.
    #[serde(default)]
    pub services: Vec<ProxyService>,
    /// Path rewriting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_rewrite_policy: Option<PathRewritePolicy>,
    /// Request header changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_headers_policy: Option<HeadersPolicy>,
    /// The route's part of its virtual host's authorization (ROUTING.md §9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_policy: Option<serde_json::Value>,
    /// JWT verification for this route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwt_verification_policy: Option<serde_json::Value>,
    /// Client addresses allowed on this route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_allow_policy: Option<serde_json::Value>,
    /// Client addresses denied on this route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_deny_policy: Option<serde_json::Value>,
    /// On a TLS root: whether plain HTTP is served too, instead of a 301 to https (ROUTING.md §8.5).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub permit_insecure: bool,
    /// `timeoutPolicy`: the response and idle timeouts of its requests, and how long an idle
    /// upstream connection is kept (Go durations or `infinity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_policy: Option<TimeoutPolicy>,
    /// `retryPolicy`: when and how often a failed request is tried again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_policy: Option<RetryPolicy>,
    /// `rateLimitPolicy`: only `local` is read (the route's own bucket, in place of the host's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_policy: Option<RateLimitPolicy>,
    /// How an endpoint of the route's services is picked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_policy: Option<LoadBalancerPolicy>,
    /// The active health check of the route's services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_policy: Option<HttpHealthCheckPolicy>,
}

/// A route's `loadBalancerPolicy`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerPolicy {
    /// `RoundRobin` (absent), `WeightedLeastRequest`, `Random`, `Cookie` or `RequestHash`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// With `RequestHash`: what the hash is made of, in order.
    #[serde(default)]
    pub request_hash_policies: Vec<RequestHashPolicy>,
}

/// One `requestHashPolicies` entry: exactly one of a header, a query parameter, the client's address.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestHashPolicy {
    /// The entries after this one are not used when this one gives a value.
    #[serde(default)]
    pub terminal: bool,
    /// A request header's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_hash_options: Option<HeaderHashOptions>,
    /// A query parameter's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_parameter_hash_options: Option<QueryParameterHashOptions>,
    /// The client's address.
    #[serde(default, rename = "hashSourceIP")]
    pub hash_source_ip: bool,
}

/// `headerHashOptions`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeaderHashOptions {
    /// The header.
    #[serde(default)]
    pub header_name: String,
}

/// `queryParameterHashOptions`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryParameterHashOptions {
    /// The parameter.
    #[serde(default)]
    pub parameter_name: String,
}

/// A route's `healthCheckPolicy` (Contour's defaults when a field is absent).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpHealthCheckPolicy {
    /// The path asked for (required).
    #[serde(default)]
    pub path: String,
    /// The `Host` sent (`contour-envoy-healthcheck`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Seconds between checks (5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_seconds: Option<i64>,
    /// Seconds a check may take (2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    /// Failed checks that take an endpoint out (3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealthy_threshold_count: Option<i64>,
    /// Passed checks that put it back (2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy_threshold_count: Option<i64>,
}

/// A condition block: at most one of `prefix`, `exact`, `regex`, or a `header`, or a `queryParameter`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchCondition {
    /// String prefix of the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Exact path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<String>,
    /// Regex over the whole path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// A header test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<HeaderMatch>,
    /// A query parameter test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_parameter: Option<QueryMatch>,
}

/// Contour's `HeaderMatchCondition`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeaderMatch {
    /// Header name.
    #[serde(default)]
    pub name: String,
    /// The header is present.
    #[serde(default)]
    pub present: bool,
    /// The header is absent.
    #[serde(default)]
    pub notpresent: bool,
    /// A value contains this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// No value contains this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notcontains: Option<String>,
    /// A value equals this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<String>,
    /// No value equals this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notexact: Option<String>,
    /// A value matches this regex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// Compare `exact`/`contains` case-insensitively.
    #[serde(default)]
    pub ignore_case: bool,
}

/// Contour's `QueryParameterMatchCondition`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryMatch {
    /// Parameter name.
    #[serde(default)]
    pub name: String,
    /// The value equals this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<String>,
    /// The value starts with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// The value ends with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suffix: Option<String>,
    /// The value matches this regex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// The value contains this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// The parameter is present.
    #[serde(default)]
    pub present: bool,
    /// Compare case-insensitively.
    #[serde(default)]
    pub ignore_case: bool,
}

/// One upstream service of a route.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProxyService {
    /// Service name (in the proxy's namespace).
    #[serde(default)]
    pub name: String,
    /// Service port.
    #[serde(default)]
    pub port: i32,
    /// Relative weight; when every weight is zero or absent, traffic is split evenly. The CRD allows
    /// any int64; one outside 0..=u32::MAX makes its route invalid (checked in `httpproxy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i64>,
    /// How Envoy speaks to it: `h2` (HTTP/2 over TLS), `h2c` (HTTP/2 in the clear), `tls`
    /// (HTTP/1.1 over TLS); absent: HTTP/1.1 in the clear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Checking the service's certificate against a CA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<UpstreamValidation>,
}

/// A service's `validation`: its certificate must chain to `caSecret`'s `ca.crt` and name
/// `subjectName` (or one of `subjectNames`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamValidation {
    /// The Secret holding `ca.crt`: `name` in the proxy's namespace, or `namespace/name`.
    #[serde(default)]
    pub ca_secret: String,
    /// The name the certificate must carry.
    #[serde(default)]
    pub subject_name: String,
    /// The names one of which the certificate must carry (its first is `subjectName`).
    #[serde(default)]
    pub subject_names: Vec<String>,
}

/// A route's `timeoutPolicy`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimeoutPolicy {
    /// How long the whole response may take (Envoy's route `timeout`; 15 s when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    /// How long a request's stream may stay without a byte either way (the route's `idle_timeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<String>,
    /// How long a connection to the service is kept with no request on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_connection: Option<String>,
}

/// A `rateLimitPolicy` (its `global` part is not read: it needs a rate limit service).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitPolicy {
    /// Envoy's local rate limit: one token bucket per Envoy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalRateLimitPolicy>,
    /// Descriptors for a global rate limit service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global: Option<serde_json::Value>,
}

/// `virtualhost.corsPolicy`, as Contour's CRD writes it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CorsPolicy {
    /// `Access-Control-Allow-Credentials: true`.
    #[serde(default)]
    pub allow_credentials: bool,
    /// `*`, exact origins (`scheme://host[:port]`), or regexes.
    #[serde(default)]
    pub allow_origin: Vec<String>,
    /// `Access-Control-Allow-Methods`.
    #[serde(default)]
    pub allow_methods: Vec<String>,
    /// `Access-Control-Allow-Headers`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_headers: Vec<String>,
    /// `Access-Control-Expose-Headers`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expose_headers: Vec<String>,
    /// How long a preflight's answer may be cached: a Go duration, `0s` not at all.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub max_age: String,
    /// Whether a preflight asking for the private network is allowed it.
    #[serde(default)]
    pub allow_private_network: bool,
}

/// `rateLimitPolicy.local`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalRateLimitPolicy {
    /// Requests per unit.
    #[serde(default)]
    pub requests: i64,
    /// `second`, `minute` or `hour`.
    #[serde(default)]
    pub unit: String,
    /// Requests taken at once above the rate.
    #[serde(default)]
    pub burst: i64,
    /// The status of a request over the limit (429 when 0).
    #[serde(default)]
    pub response_status_code: i64,
    /// Headers added to that answer (not honoured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub response_headers_to_add: Vec<serde_json::Value>,
}

/// A route's `retryPolicy`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryPolicy {
    /// How many retries (`-1`: none; `0` or absent: Envoy's 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// Each try's own timeout (a Go duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_try_timeout: Option<String>,
    /// Envoy's retry conditions (`5xx` when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retry_on: Vec<String>,
    /// The statuses `retriable-status-codes` retries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retriable_status_codes: Vec<u32>,
}

/// `pathRewritePolicy`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PathRewritePolicy {
    /// Prefix replacements.
    #[serde(default)]
    pub replace_prefix: Vec<ReplacePrefix>,
}

/// One `replacePrefix` entry.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplacePrefix {
    /// The (accumulated) prefix this entry applies to; any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// What replaces the matched prefix.
    #[serde(default)]
    pub replacement: String,
}

/// `requestHeadersPolicy`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeadersPolicy {
    /// Headers to set.
    #[serde(default)]
    pub set: Vec<HeaderSet>,
    /// Header names to remove.
    #[serde(default)]
    pub remove: Vec<String>,
}

/// A header to set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct HeaderSet {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Value.
    #[serde(default)]
    pub value: String,
}

crate::vocabulary! {
    #[ordered_as_declared]
    /// Every kind the compiler reads: the one vocabulary of kinds, at every module boundary (the
    /// status report, the loader, the sidecar's watchers and status writer). Each is one vector of
    /// [`Objects`] ([`Object::KIND`]). Its words are the kinds as Kubernetes spells them; values
    /// order as declared here (part of every [`ResourceKey`]'s order, so new kinds go last).
    pub enum Kind {
        /// `networking.k8s.io/v1` Ingress.
        Ingress,
        /// `projectcontour.io/v1` HTTPProxy.
        HTTPProxy,
        /// `networking.k8s.io/v1` IngressClass (status only).
        IngressClass,
        /// `k8s.nginx.org/v1` VirtualServer.
        VirtualServer,
        /// `k8s.nginx.org/v1` VirtualServerRoute.
        VirtualServerRoute,
        /// `k8s.nginx.org/v1` TransportServer (L4 routes, ROUTING.md §6).
        TransportServer,
        /// `k8s.nginx.org/v1` GlobalConfiguration (listeners; no status).
        GlobalConfiguration,
        /// `v1` Service (backend ports, ROUTING.md §5; no status).
        Service,
        /// `v1` Secret (certificates, ROUTING.md §8; no status).
        Secret,
        /// `discovery.k8s.io/v1` EndpointSlice (a Service's endpoints; no status).
        EndpointSlice,
        /// `k8s.nginx.org/v1` Policy (what VirtualServers' `policies` reference; no status).
        Policy,
    }
}

impl Kind {
    /// The kind named `word` as Kubernetes spells it, if the compiler reads it.
    pub fn named(word: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.as_str() == word)
    }

    /// The `apiVersion` the compiler reads it at (older Ingress and IngressClass versions are
    /// converted by [`crate::load`]: [`Kind::older_api_versions`]).
    pub fn api_version(self) -> &'static str {
        match self {
            Kind::Ingress | Kind::IngressClass => "networking.k8s.io/v1",
            Kind::HTTPProxy => "projectcontour.io/v1",
            Kind::VirtualServer
            | Kind::VirtualServerRoute
            | Kind::TransportServer
            | Kind::GlobalConfiguration
            | Kind::Policy => "k8s.nginx.org/v1",
            Kind::Service | Kind::Secret => "v1",
            Kind::EndpointSlice => "discovery.k8s.io/v1",
        }
    }

    /// Whether a cluster may not serve this kind (its CRD not installed) without anything opening:
    /// a watch then reads it as none. True of Policy only: a reference to a Policy that does not
    /// exist denies (ROUTING.md §9). Any other kind that is not served is a source down.
    pub fn absence_is_none(self) -> bool {
        matches!(self, Kind::Policy)
    }

    /// The older `apiVersion`s [`crate::load`] accepts and converts.
    pub fn older_api_versions(self) -> &'static [&'static str] {
        match self {
            Kind::Ingress => &["networking.k8s.io/v1beta1", "extensions/v1beta1"],
            Kind::IngressClass => &["networking.k8s.io/v1beta1"],
            Kind::HTTPProxy
            | Kind::VirtualServer
            | Kind::VirtualServerRoute
            | Kind::TransportServer
            | Kind::GlobalConfiguration
            | Kind::Service
            | Kind::Secret
            | Kind::EndpointSlice
            | Kind::Policy => &[],
        }
    }

    /// The resource's plural, as in its API path.
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Ingress => "ingresses",
            Kind::HTTPProxy => "httpproxies",
            Kind::IngressClass => "ingressclasses",
            Kind::VirtualServer => "virtualservers",
            Kind::VirtualServerRoute => "virtualserverroutes",
            Kind::TransportServer => "transportservers",
            Kind::GlobalConfiguration => "globalconfigurations",
            Kind::Service => "services",
            Kind::Secret => "secrets",
            Kind::EndpointSlice => "endpointslices",
            Kind::Policy => "policies",
        }
    }

    /// Whether its objects live in a namespace (IngressClass is cluster-scoped).
    pub fn is_namespaced(self) -> bool {
        match self {
            Kind::IngressClass => false,
            Kind::Ingress
            | Kind::HTTPProxy
            | Kind::VirtualServer
            | Kind::VirtualServerRoute
            | Kind::TransportServer
            | Kind::GlobalConfiguration
            | Kind::Service
            | Kind::Secret
            | Kind::EndpointSlice
            | Kind::Policy => true,
        }
    }

    /// Whether the class rules (ROUTING.md §1) decide if its objects are ours: the kinds that
    /// route, each with a status.
    pub fn has_class(self) -> bool {
        match self {
            Kind::Ingress
            | Kind::HTTPProxy
            | Kind::VirtualServer
            | Kind::VirtualServerRoute
            | Kind::TransportServer => true,
            Kind::IngressClass
            | Kind::GlobalConfiguration
            | Kind::Service
            | Kind::Secret
            | Kind::EndpointSlice
            | Kind::Policy => false,
        }
    }

    /// Where its statuses go in the status report (kinds of one rank mix, by namespace and name).
    pub fn report_rank(self) -> u8 {
        match self {
            Kind::IngressClass => 0,
            Kind::Ingress => 1,
            Kind::HTTPProxy
            | Kind::TransportServer
            | Kind::GlobalConfiguration
            | Kind::Service
            | Kind::Secret
            | Kind::EndpointSlice
            | Kind::Policy => 2,
            Kind::VirtualServer => 3,
            Kind::VirtualServerRoute => 4,
        }
    }
}

/// A resource's identity: kind, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceKey {
    /// Kind.
    pub kind: Kind,
    /// Namespace (`default` when the manifest has none; empty for cluster-scoped kinds).
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ResourceKey {
    /// `Kind/namespace/name`, the prefix of rule names.
    pub fn display(&self) -> String {
        format!("{}/{}/{}", self.kind.as_str(), self.namespace, self.name)
    }
}

/// The age order of ROUTING.md §2 and §4 key 5: older `creationTimestamp` first, then the smaller
/// `uid`, then namespace/name (then kind, so that the order is total). A missing timestamp counts as
/// the zero time, the oldest, as Kubernetes' own Go code compares an unset time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Age {
    /// Seconds and nanoseconds since the epoch; `None` when the manifest has no timestamp.
    pub created: Option<(i64, i32)>,
    /// `metadata.uid`, empty when absent.
    pub uid: String,
    /// Identity, the final tie-breaker.
    pub key: ResourceKey,
}

impl Ord for Age {
    fn cmp(&self, other: &Self) -> Ordering {
        let created = |a: &Age| a.created.unwrap_or((i64::MIN, 0));
        created(self)
            .cmp(&created(other))
            .then_with(|| self.uid.cmp(&other.uid))
            .then_with(|| {
                (&self.key.namespace, &self.key.name, self.key.kind).cmp(&(
                    &other.key.namespace,
                    &other.key.name,
                    other.key.kind,
                ))
            })
    }
}

impl PartialOrd for Age {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Age {
    /// The age of an object with this metadata.
    pub fn of(kind: Kind, meta: &ObjectMeta) -> Age {
        Age {
            created: meta
                .creation_timestamp
                .as_ref()
                .map(|t| (t.0.as_second(), t.0.subsec_nanosecond())),
            uid: meta.uid.clone().unwrap_or_default(),
            key: key_of(kind, meta),
        }
    }
}

/// The key of a namespaced object (namespace `default` when absent).
pub fn key_of(kind: Kind, meta: &ObjectMeta) -> ResourceKey {
    let namespace = if kind.is_namespaced() {
        meta.namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_owned())
    } else {
        String::new()
    };
    ResourceKey {
        kind,
        namespace,
        name: meta.name.clone().unwrap_or_default(),
    }
}

/// The class annotation (ROUTING.md §1, §7.1).
pub const CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

/// An annotation's value.
pub fn annotation<'m>(meta: &'m ObjectMeta, key: &str) -> Option<&'m str> {
    meta.annotations
        .as_ref()
        .and_then(|a: &BTreeMap<String, String>| a.get(key))
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn httpproxy_is_contours_custom_resource() {
        use kube::Resource;
        assert_eq!(HTTPProxy::kind(&()), "HTTPProxy");
        assert_eq!(HTTPProxy::group(&()), "projectcontour.io");
        assert_eq!(HTTPProxy::version(&()), "v1");
        assert_eq!(HTTPProxy::plural(&()), "httpproxies");
    }

    #[test]
    fn every_kind_is_one_vector_and_says_what_kubernetes_says() {
        struct Seen(Vec<Kind>);
        impl EachKind for Seen {
            fn kind<T: Object>(&mut self) {
                assert_eq!(T::KIND.as_str(), T::kind(&()), "{}", T::KIND);
                assert_eq!(T::KIND.api_version(), T::api_version(&()), "{}", T::KIND);
                assert_eq!(T::KIND.plural(), T::plural(&()), "{}", T::KIND);
                self.0.push(T::KIND);
            }
        }
        let mut seen = Seen(Vec::new());
        Objects::each_kind(&mut seen);
        assert_eq!(seen.0, Kind::ALL);
        assert!(Kind::ALL.iter().all(|k| Kind::named(k.as_str()) == Some(*k)));
        assert_eq!(Kind::named("Gateway"), None);
    }

    #[test]
    fn every_kind_with_a_class_reads_its_ingress_class_name() {
        struct Read(Vec<Kind>);
        impl EachKind for Read {
            fn kind<T: Object>(&mut self) {
                if !T::KIND.has_class() {
                    return;
                }
                let object: T = serde_json::from_value(serde_json::json!({
                    "apiVersion": T::KIND.api_version(), "kind": T::KIND.as_str(),
                    "metadata": {"name": "a"},
                    "spec": {"ingressClassName": "c"}
                }))
                .unwrap();
                assert_eq!(object.class_name(), Some("c"), "{}", T::KIND);
                self.0.push(T::KIND);
            }
        }
        let mut read = Read(Vec::new());
        Objects::each_kind(&mut read);
        let with_class: Vec<Kind> = Kind::ALL.iter().copied().filter(|k| k.has_class()).collect();
        assert_eq!(read.0, with_class);
    }

    #[test]
    fn httpproxy_ignores_fields_it_does_not_route_on() {
        let proxy: HTTPProxy = serde_json::from_value(serde_json::json!({
            "apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
            "metadata": {"name": "root"},
            "spec": {"virtualhost": {"fqdn": "a.example.com", "tls": {"secretName": "s"}},
                     "routes": [{"services": [{"name": "s", "port": 80}], "timeoutPolicy": {"response": "1s"}}]}
        }))
        .unwrap();
        assert_eq!(proxy.spec.virtualhost.map(|v| v.fqdn).as_deref(), Some("a.example.com"));
    }

    #[test]
    fn missing_timestamp_is_older_than_any_timestamp() {
        let key = ResourceKey {
            kind: Kind::Ingress,
            namespace: "ns".into(),
            name: "a".into(),
        };
        let unstamped = Age {
            created: None,
            uid: "z".into(),
            key: key.clone(),
        };
        let stamped = Age {
            created: Some((0, 0)),
            uid: "a".into(),
            key,
        };
        assert!(unstamped < stamped);
    }
}
