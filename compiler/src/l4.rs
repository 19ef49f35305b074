//! The L4 routes (ROUTING.md §6, TransportServer): what the TransportServers that won their contests
//! route, which the HTTP table cannot carry. TLS passthrough hosts go to a cluster by SNI, without
//! terminating TLS; GlobalConfiguration's TCP and UDP listeners go to a cluster by port.
//!
//! A leaf (it reads only [`crate::model`]): the processors fill it, [`crate::lds`] turns it into Envoy listeners. Every vector is
//! sorted (passthrough routes by host, listeners by port then protocol, a listener's routes by host),
//! so the same manifests give byte-identical output.

use serde::Serialize;

use crate::model::Options;

/// Everything the L4 configuration routes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct L4Routes {
    /// TLS passthrough: one route per SNI host (the `tls-passthrough` listener), sorted by host.
    pub passthrough: Vec<L4Route>,
    /// TCP and UDP listeners defined by a GlobalConfiguration that a TransportServer won, sorted by
    /// port then protocol.
    pub listeners: Vec<L4Listener>,
}

impl L4Routes {
    /// Whether nothing is routed at L4.
    pub fn is_empty(&self) -> bool {
        self.passthrough.is_empty() && self.listeners.is_empty()
    }

    /// The SNI hosts passed through (the HTTPS listener terminates the others).
    pub fn passthrough_hosts(&self) -> Vec<&str> {
        self.passthrough.iter().filter_map(|r| r.host.as_deref()).collect()
    }
}

/// One route: connections for `host` (by SNI; `None` on a listener: every connection) go to
/// `cluster`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct L4Route {
    /// The SNI host (normalised: lowercase, no trailing dot); `None` matches any connection.
    pub host: Option<String>,
    /// The Service behind it (Istio routes to a Service, not to a cluster name).
    pub backend: L4Backend,
    /// The Envoy cluster, from the cluster template (ROUTING.md §5).
    pub cluster: String,
    /// The TransportServer that won this route, as `TransportServer/namespace/name`.
    pub resource: String,
}

impl L4Route {
    /// A route for `host` to `backend`, its cluster named by the cluster template of `options`;
    /// `resource` is the winner, `TransportServer/namespace/name`.
    pub fn new(host: Option<String>, backend: L4Backend, options: &Options, resource: String) -> L4Route {
        let cluster = options.cluster(&backend.namespace, &backend.service, i32::from(backend.port));
        L4Route {
            host,
            backend,
            cluster,
            resource,
        }
    }

    /// A route for `host` to port `port` of Service `namespace/service`, won by a TransportServer
    /// named after that Service, its cluster by the default template (`namespace/service:port`):
    /// the route that tests and examples write.
    pub fn to_service(namespace: &str, host: Option<&str>, service: &str, port: u16) -> L4Route {
        let backend = L4Backend {
            namespace: namespace.to_owned(),
            service: service.to_owned(),
            port,
        };
        let resource = format!("TransportServer/{namespace}/{service}");
        L4Route::new(host.map(str::to_owned), backend, &Options::default(), resource)
    }
}

/// The Service a TransportServer's upstream names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct L4Backend {
    /// The Service's namespace (the TransportServer's).
    pub namespace: String,
    /// The Service's name.
    pub service: String,
    /// The Service port.
    pub port: u16,
}

impl L4Backend {
    /// The Service's cluster-local host name, as Istio's destinations name it.
    pub fn fqdn(&self) -> String {
        format!("{}.{}.svc.cluster.local", self.service, self.namespace)
    }
}

/// A GlobalConfiguration listener with the TransportServers that won it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct L4Listener {
    /// The listener's name in the GlobalConfiguration (`spec.listeners[].name`).
    pub name: String,
    /// The port Envoy listens on.
    pub port: u16,
    /// TCP or UDP.
    pub protocol: L4Protocol,
    /// The winners, sorted by host (the host-less route first).
    pub routes: Vec<L4Route>,
}

/// A GlobalConfiguration listener's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum L4Protocol {
    /// A TCP proxy (`tcp_proxy` in Envoy).
    Tcp,
    /// A UDP proxy (`udp_proxy` in Envoy).
    Udp,
}

impl std::fmt::Display for L4Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            L4Protocol::Tcp => "TCP",
            L4Protocol::Udp => "UDP",
        })
    }
}
