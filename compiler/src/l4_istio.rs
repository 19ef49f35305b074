//! The L4 routes ([`crate::l4`]) and the HTTPS hosts ([`crate::https`]) for Istio: a
//! `networking.istio.io/v1beta1` Gateway that opens the ports on the ingress gateway (a TLS
//! `PASSTHROUGH` server for the passthrough hosts, the `HTTPS` servers of [`crate::https::istio`]
//! on the same port, a `TCP` server per GlobalConfiguration TCP listener) and a VirtualService bound
//! to it with `tls` routes by SNI host and `tcp` routes by port, each to the winner's Service. The
//! HTTPS hosts need no route of ours: the gateway's HTTP filters (the Switchyard filter among them)
//! and `deploy/istio/*/route.yaml` route them as they route port 80.
//!
//! Istio routes to a Service host and port (`svc.ns.svc.cluster.local`), not to a cluster name, so
//! these objects do not use the cluster template. Istio's Gateway has no UDP servers: UDP listeners
//! are left out here, and [`unsupported`] names them so that the caller can say so.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::https::istio::{self, IstioHttpsOptions};
use crate::https::{Https, Presented};
use crate::l4::{L4Listener, L4Protocol, L4Route, L4Routes};

/// Where the two objects go and which gateway pods they configure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IstioGatewayOptions {
    /// The namespace of the Gateway and the VirtualService.
    pub namespace: String,
    /// Their name (both objects share it).
    pub name: String,
    /// The gateway pods' labels (`istio=ingressgateway`).
    pub selector: BTreeMap<String, String>,
    /// The port of the TLS passthrough server and of the HTTPS servers.
    pub passthrough_port: u16,
    /// `--reject-unknown-sni`: no default HTTPS server.
    pub reject_unknown_sni: bool,
}

/// The Gateway: one TLS passthrough server for every passthrough host, the HTTPS servers of the
/// terminated hosts, one TCP server per TCP listener; and the Secrets its HTTPS servers name, by
/// the name of their copies in the Gateway's namespace.
pub fn gateway<'h>(
    routes: &L4Routes,
    https: &'h Https,
    options: &IstioGatewayOptions,
) -> (Value, BTreeMap<String, Presented<'h>>) {
    let mut servers = Vec::new();
    let passthrough = routes.passthrough_hosts();
    let https_options = IstioHttpsOptions {
        port: options.passthrough_port,
        reject_unknown_sni: options.reject_unknown_sni,
    };
    let (terminated, copies) = istio::servers(https, &passthrough, https_options);
    if !routes.passthrough.is_empty() {
        servers.push(json!({
            "port": { "number": options.passthrough_port, "name": "tls-passthrough", "protocol": "TLS" },
            "hosts": passthrough,
            "tls": { "mode": "PASSTHROUGH" },
        }));
    }
    servers.extend(terminated);
    for listener in tcp_listeners(routes) {
        servers.push(json!({
            "port": { "number": listener.port, "name": format!("tcp-{}", listener.name), "protocol": "TCP" },
            "hosts": ["*"],
        }));
    }
    let gateway = json!({
        "apiVersion": "networking.istio.io/v1beta1",
        "kind": "Gateway",
        "metadata": { "name": options.name, "namespace": options.namespace },
        "spec": { "selector": options.selector, "servers": servers },
    });
    (gateway, copies)
}

/// The VirtualService bound to [`gateway`]: `tls` routes by SNI host on the passthrough port, `tcp`
/// routes by listener port (a TCP listener's SNI hosts as `tls` routes on its port).
pub fn virtual_service(routes: &L4Routes, options: &IstioGatewayOptions) -> Value {
    let mut tls = Vec::new();
    let mut tcp = Vec::new();
    for route in &routes.passthrough {
        tls.push(tls_route(route, options.passthrough_port));
    }
    for listener in tcp_listeners(routes) {
        for route in &listener.routes {
            match route.host {
                Some(_) => tls.push(tls_route(route, listener.port)),
                None => tcp.push(json!({
                    "match": [{ "port": listener.port }],
                    "route": [destination(route)],
                })),
            }
        }
    }
    let mut hosts = routes.passthrough_hosts();
    if !tcp.is_empty() || hosts.is_empty() {
        hosts.push("*");
    }
    json!({
        "apiVersion": "networking.istio.io/v1beta1",
        "kind": "VirtualService",
        "metadata": { "name": options.name, "namespace": options.namespace },
        "spec": {
            "hosts": hosts,
            "gateways": [format!("{}/{}", options.namespace, options.name)],
            "tls": tls,
            "tcp": tcp,
        },
    })
}

/// The listeners Istio's Gateway cannot carry (UDP), for a warning.
pub fn unsupported(routes: &L4Routes) -> Vec<&L4Listener> {
    routes
        .listeners
        .iter()
        .filter(|l| l.protocol == L4Protocol::Udp)
        .collect()
}

fn tcp_listeners(routes: &L4Routes) -> impl Iterator<Item = &L4Listener> {
    routes.listeners.iter().filter(|l| l.protocol == L4Protocol::Tcp)
}

fn tls_route(route: &L4Route, port: u16) -> Value {
    json!({
        "match": [{ "port": port, "sniHosts": route.host.iter().collect::<Vec<_>>() }],
        "route": [destination(route)],
    })
}

fn destination(route: &L4Route) -> Value {
    json!({ "destination": { "host": route.backend.fqdn(), "port": { "number": route.backend.port } } })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A route to Service `service` port `port` in `shop` (cluster `shop/SERVICE:PORT`).
    fn route(host: Option<&str>, service: &str, port: u16) -> L4Route {
        L4Route::to_service("shop", host, service, port)
    }

    fn options() -> IstioGatewayOptions {
        IstioGatewayOptions {
            namespace: "istio-system".into(),
            name: "switchyard-l4".into(),
            selector: BTreeMap::from([("istio".to_owned(), "ingressgateway".to_owned())]),
            passthrough_port: 443,
            reject_unknown_sni: false,
        }
    }

    fn routes() -> L4Routes {
        L4Routes {
            passthrough: vec![route(Some("app.example.com"), "app", 8443)],
            listeners: vec![
                L4Listener {
                    name: "tcp-1".into(),
                    port: 5432,
                    protocol: L4Protocol::Tcp,
                    routes: vec![route(None, "postgres", 5432)],
                },
                L4Listener {
                    name: "dns".into(),
                    port: 53,
                    protocol: L4Protocol::Udp,
                    routes: vec![route(None, "dns", 53)],
                },
            ],
        }
    }

    #[test]
    fn passthrough_hosts_are_a_tls_passthrough_server_and_tcp_listeners_tcp_servers() {
        let https = Https::default();
        let (gateway, copies) = gateway(&routes(), &https, &options());
        assert!(copies.is_empty());
        let servers = &gateway["spec"]["servers"];
        assert_eq!(servers[0]["tls"]["mode"], "PASSTHROUGH");
        assert_eq!(servers[0]["hosts"], json!(["app.example.com"]));
        assert_eq!(
            servers[1]["port"],
            json!({ "number": 5432, "name": "tcp-tcp-1", "protocol": "TCP" })
        );
        assert_eq!(
            servers.as_array().map(Vec::len),
            Some(2),
            "Istio has no UDP server: {servers}"
        );
        assert_eq!(gateway["spec"]["selector"]["istio"], "ingressgateway");
    }

    #[test]
    fn the_virtual_service_routes_sni_hosts_and_ports_to_the_winners_services() {
        let service = virtual_service(&routes(), &options());
        let spec = &service["spec"];
        assert_eq!(spec["gateways"], json!(["istio-system/switchyard-l4"]));
        assert_eq!(spec["hosts"], json!(["app.example.com", "*"]));
        assert_eq!(
            spec["tls"][0]["match"][0],
            json!({ "port": 443, "sniHosts": ["app.example.com"] })
        );
        assert_eq!(
            spec["tls"][0]["route"][0]["destination"],
            json!({ "host": "app.shop.svc.cluster.local", "port": { "number": 8443 } })
        );
        assert_eq!(spec["tcp"][0]["match"][0]["port"], 5432);
        assert_eq!(
            spec["tcp"][0]["route"][0]["destination"]["host"],
            "postgres.shop.svc.cluster.local"
        );
    }

    #[test]
    fn udp_listeners_are_named_as_unsupported_by_istio() {
        let routes = routes();
        let names: Vec<&str> = unsupported(&routes).iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["dns"]);
    }
}
