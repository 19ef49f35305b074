//! Envoy's listeners for the L4 routes ([`crate::l4`]): a `DiscoveryResponse` for LDS from a file
//! (`dynamic_resources.lds_config.path_config_source`), written by `switchyard compile --l4` and
//! `switchyard watch --lds-file`.
//!
//! - TLS passthrough: one listener on `passthrough_port` with the `tls_inspector` listener filter and
//!   one filter chain per SNI host (`server_names`), each a `tcp_proxy` to the winner's cluster. TLS is
//!   never terminated: the client sees the backend's own certificate. A connection whose SNI no chain
//!   names finds no filter chain, and Envoy closes it.
//! - A GlobalConfiguration TCP listener: one listener on its port, `tcp_proxy` to the winner's cluster
//!   (with a host, by SNI as above; the host-less winner is the default chain).
//! - A UDP listener: one listener with `udp_proxy` routing every datagram to the winner's cluster.
//!
//! Clusters are not defined here: they are named by the cluster template, as the HTTP table's are,
//! and come from wherever the gateway's clusters come from (CDS, static configuration).
//!
//! Envoy matches a wildcard `server_names` entry (`*.example.com`) against any number of leading
//! labels; ROUTING.md §4's one-label rule is the HTTP table's, not the L4 listener's.

use serde_json::{json, Value};

use crate::https::listener::{chains, HttpsOptions};
use crate::https::Https;
use crate::l4::{L4Listener, L4Protocol, L4Route, L4Routes};
use crate::model::DEFAULT_TLS_PASSTHROUGH_PORT;

/// The name of the TLS passthrough listener.
pub const PASSTHROUGH_LISTENER: &str = "switchyard-tls-passthrough";
/// The name of the HTTPS listener (ROUTING.md §8), which also passes TLS through.
pub const HTTPS_LISTENER: &str = "switchyard-https";

/// Where the listeners listen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdsOptions {
    /// The address every listener binds (`0.0.0.0` in a gateway, `127.0.0.1` in tests).
    pub address: String,
    /// The port of the TLS passthrough listener (NGINX's `tls-passthrough` listener is its HTTPS port).
    pub passthrough_port: u16,
    /// The HTTPS listener on the same port, when the gateway serves HTTPS (ROUTING.md §8).
    pub https: Option<HttpsOptions>,
}

impl Default for LdsOptions {
    fn default() -> Self {
        LdsOptions {
            address: "0.0.0.0".to_owned(),
            passthrough_port: DEFAULT_TLS_PASSTHROUGH_PORT,
            https: None,
        }
    }
}

/// The LDS `DiscoveryResponse` for `routes`: the passthrough listener (when a host is passed
/// through) then one listener per GlobalConfiguration listener. An empty `routes` gives an empty
/// response, which removes every listener an earlier response added.
pub fn discovery_response(routes: &L4Routes, options: &LdsOptions) -> Value {
    listeners(routes, &Https::default(), options)
}

/// The LDS `DiscoveryResponse` of the L4 routes and, with [`LdsOptions::https`], of the HTTPS
/// listener: on the passthrough port, one listener holds the passthrough hosts' chains, the
/// chains of `https`'s certificates ([`crate::https::listener`]) and the default certificate's.
pub fn listeners(routes: &L4Routes, https: &Https, options: &LdsOptions) -> Value {
    let mut resources = Vec::new();
    if let Some(https_options) = &options.https {
        let mut listener = tcp_listener(
            HTTPS_LISTENER,
            &options.address,
            options.passthrough_port,
            &routes.passthrough,
        );
        let taken = routes.passthrough_hosts();
        let (terminated, default) = chains(https, &taken, https_options);
        let mut all = listener["filter_chains"].as_array().cloned().unwrap_or_default();
        all.extend(terminated);
        listener["filter_chains"] = Value::Array(all);
        // `--reject-unknown-sni` (§8.1.2): a handshake without SNI, or naming no host, finds no
        // chain, and Envoy closes the connection.
        if !https_options.reject_unknown_sni {
            listener["default_filter_chain"] = default;
        }
        listener["listener_filters"] = tls_inspector();
        resources.push(listener);
    } else if !routes.passthrough.is_empty() {
        resources.push(tcp_listener(
            PASSTHROUGH_LISTENER,
            &options.address,
            options.passthrough_port,
            &routes.passthrough,
        ));
    }
    for listener in &routes.listeners {
        resources.push(listener_resource(listener, &options.address));
    }
    json!({ "resources": resources })
}

/// The document's text: pretty JSON and a final newline, as the ECDS file.
pub fn document(routes: &L4Routes, options: &LdsOptions) -> String {
    https_document(routes, &Https::default(), options)
}

/// [`listeners`]' text, as [`document`].
pub fn https_document(routes: &L4Routes, https: &Https, options: &LdsOptions) -> String {
    // A `Value` of strings and numbers always serializes.
    let text = serde_json::to_string_pretty(&listeners(routes, https, options)).unwrap_or_default();
    text + "\n"
}

/// The Envoy name of a GlobalConfiguration listener.
pub fn listener_name(listener: &L4Listener) -> String {
    format!(
        "switchyard-{}-{}",
        listener.protocol.to_string().to_ascii_lowercase(),
        listener.name
    )
}

fn listener_resource(listener: &L4Listener, address: &str) -> Value {
    let name = listener_name(listener);
    match listener.protocol {
        L4Protocol::Tcp => tcp_listener(&name, address, listener.port, &listener.routes),
        L4Protocol::Udp => udp_listener(&name, address, listener.port, &listener.routes),
    }
}

/// A TCP listener: one filter chain per route, by SNI when the route has a host (then the
/// `tls_inspector` reads the ClientHello), the host-less route as the default chain.
fn tcp_listener(name: &str, address: &str, port: u16, routes: &[L4Route]) -> Value {
    let stat_prefix = stat_prefix(name);
    let mut listener = json!({
        "@type": "type.googleapis.com/envoy.config.listener.v3.Listener",
        "name": name,
        "address": { "socket_address": { "address": address, "port_value": port } },
    });
    let mut chains = Vec::new();
    for route in routes {
        let tcp_proxy = json!({
            "name": "envoy.filters.network.tcp_proxy",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
                "stat_prefix": stat_prefix,
                "cluster": route.cluster,
            }
        });
        match &route.host {
            Some(host) => chains.push(json!({
                "name": host,
                "filter_chain_match": { "server_names": [host] },
                "filters": [tcp_proxy],
            })),
            None => listener["default_filter_chain"] = json!({ "name": "default", "filters": [tcp_proxy] }),
        }
    }
    if !chains.is_empty() {
        listener["listener_filters"] = tls_inspector();
        listener["filter_chains"] = Value::Array(chains);
    }
    listener
}

/// The listener filter that reads the SNI of a ClientHello.
fn tls_inspector() -> Value {
    json!([{
        "name": "envoy.filters.listener.tls_inspector",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"
        }
    }])
}

/// A UDP listener: every datagram to the host-less route's cluster (UDP has no SNI; the compiler
/// gives a UDP listener one host-less route).
fn udp_listener(name: &str, address: &str, port: u16, routes: &[L4Route]) -> Value {
    let cluster = routes
        .iter()
        .find(|route| route.host.is_none())
        .map(|route| route.cluster.as_str());
    let mut proxy = json!({
        "@type": "type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig",
        "stat_prefix": stat_prefix(name),
    });
    if let Some(cluster) = cluster {
        proxy["matcher"] = json!({
            "on_no_match": {
                "action": {
                    "name": "route",
                    "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.Route",
                        "cluster": cluster,
                    }
                }
            }
        });
    }
    json!({
        "@type": "type.googleapis.com/envoy.config.listener.v3.Listener",
        "name": name,
        "address": { "socket_address": { "protocol": "UDP", "address": address, "port_value": port } },
        "udp_listener_config": {},
        "listener_filters": [{ "name": "envoy.filters.udp_listener.udp_proxy", "typed_config": proxy }],
    })
}

/// Where an LDS document sends TLS connections for one SNI host: `switchyard explain --l4`'s answer
/// for a host a TransportServer passes through.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SniRoute {
    /// The Envoy listener.
    pub listener: String,
    /// Its port.
    pub port: u64,
    /// The `tcp_proxy` cluster.
    pub cluster: String,
}

/// The filter chain of `document` (an LDS `DiscoveryResponse`, as [`document`] writes it) whose
/// `server_names` match `host` as Envoy matches them (exactly, else the longest wildcard suffix).
pub fn sni_route(document: &Value, host: &str) -> Option<SniRoute> {
    let (listener, chain) = sni_chain(document, host, proxies_tcp)?;
    Some(SniRoute {
        listener: listener["name"].as_str().unwrap_or_default().to_owned(),
        port: listener["address"]["socket_address"]["port_value"]
            .as_u64()
            .unwrap_or_default(),
        cluster: chain["filters"][0]["typed_config"]["cluster"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    })
}

/// Whether a filter chain proxies TCP (a passthrough or TCP route), not HTTP.
pub fn proxies_tcp(chain: &Value) -> bool {
    chain["filters"][0]["name"] == "envoy.filters.network.tcp_proxy"
}

/// The (listener, filter chain) of `document` among the chains `keep` keeps whose `server_names`
/// match `host` as Envoy matches them: exactly, else the longest wildcard suffix.
pub fn sni_chain<'d>(document: &'d Value, host: &str, keep: fn(&Value) -> bool) -> Option<(&'d Value, &'d Value)> {
    let host = host.to_ascii_lowercase();
    let mut best: Option<(usize, (&Value, &Value))> = None;
    for listener in document["resources"].as_array()? {
        for chain in (listener["filter_chains"].as_array().into_iter().flatten()).filter(|c| keep(c)) {
            let names = chain["filter_chain_match"]["server_names"]
                .as_array()
                .into_iter()
                .flatten();
            for name in names.filter_map(Value::as_str) {
                let score = match name.strip_prefix('*') {
                    _ if name == host => usize::MAX,
                    Some(suffix) if host.ends_with(suffix) && host.len() > suffix.len() => suffix.len(),
                    _ => continue,
                };
                if best.as_ref().is_none_or(|(s, _)| *s < score) {
                    best = Some((score, (listener, chain)));
                }
            }
        }
    }
    best.map(|(_, found)| found)
}

/// A stat prefix from a listener name (Envoy's stat names take `_` where we write `-`).
fn stat_prefix(name: &str) -> String {
    name.replace('-', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A route to Service `service` port `port` in `default` (cluster `default/SERVICE:PORT`).
    fn route(host: Option<&str>, service: &str, port: u16) -> L4Route {
        L4Route::to_service("default", host, service, port)
    }

    #[test]
    fn sni_route_finds_the_chain_of_a_passthrough_host_exact_before_wildcard() {
        let routes = L4Routes {
            passthrough: vec![
                route(Some("*.example.com"), "any", 443),
                route(Some("a.example.com"), "a", 443),
            ],
            listeners: vec![],
        };
        let document = discovery_response(&routes, &LdsOptions::default());
        let found = |host: &str| sni_route(&document, host).map(|r| r.cluster);
        assert_eq!(found("A.example.com").as_deref(), Some("default/a:443"));
        assert_eq!(found("b.example.com").as_deref(), Some("default/any:443"));
        assert_eq!(found("example.com"), None);
        assert_eq!(
            sni_route(&document, "a.example.com").map(|r| (r.listener, r.port)),
            Some((PASSTHROUGH_LISTENER.to_owned(), 443))
        );
    }

    #[test]
    fn no_routes_give_an_empty_response_that_removes_every_listener() {
        let response = discovery_response(&L4Routes::default(), &LdsOptions::default());
        assert_eq!(response, json!({ "resources": [] }));
    }

    #[test]
    fn passthrough_hosts_are_filter_chains_by_sni_behind_the_tls_inspector() {
        let routes = L4Routes {
            passthrough: vec![
                route(Some("a.example.com"), "a", 443),
                route(Some("b.example.com"), "b", 443),
            ],
            listeners: vec![],
        };
        let response = discovery_response(&routes, &LdsOptions::default());
        let listener = &response["resources"][0];
        assert_eq!(listener["name"], PASSTHROUGH_LISTENER);
        assert_eq!(listener["address"]["socket_address"]["port_value"], 443);
        assert_eq!(
            listener["listener_filters"][0]["name"],
            "envoy.filters.listener.tls_inspector"
        );
        let chains = listener["filter_chains"].as_array().map(Vec::len);
        assert_eq!(chains, Some(2));
        assert_eq!(
            listener["filter_chains"][1]["filter_chain_match"]["server_names"],
            json!(["b.example.com"])
        );
        assert_eq!(
            listener["filter_chains"][1]["filters"][0]["typed_config"]["cluster"],
            "default/b:443"
        );
        assert!(
            listener.get("default_filter_chain").is_none(),
            "an unknown SNI must find no chain"
        );
    }

    #[test]
    fn a_tcp_listener_without_hosts_proxies_every_connection_without_reading_tls() {
        let routes = L4Routes {
            passthrough: vec![],
            listeners: vec![L4Listener {
                name: "tcp-1".into(),
                port: 5353,
                protocol: L4Protocol::Tcp,
                routes: vec![route(None, "echo", 7)],
            }],
        };
        let listener = &discovery_response(&routes, &LdsOptions::default())["resources"][0];
        assert_eq!(listener["name"], "switchyard-tcp-tcp-1");
        assert_eq!(
            listener["default_filter_chain"]["filters"][0]["typed_config"]["cluster"],
            "default/echo:7"
        );
        assert!(listener.get("listener_filters").is_none());
        assert!(listener.get("filter_chains").is_none());
    }

    #[test]
    fn a_udp_listener_routes_every_datagram_to_its_cluster() {
        let routes = L4Routes {
            passthrough: vec![],
            listeners: vec![L4Listener {
                name: "dns".into(),
                port: 5353,
                protocol: L4Protocol::Udp,
                routes: vec![route(None, "dns", 53)],
            }],
        };
        let listener = &discovery_response(&routes, &LdsOptions::default())["resources"][0];
        assert_eq!(listener["address"]["socket_address"]["protocol"], "UDP");
        let proxy = &listener["listener_filters"][0]["typed_config"];
        assert_eq!(
            proxy["matcher"]["on_no_match"]["action"]["typed_config"]["cluster"],
            "default/dns:53"
        );
    }
}
