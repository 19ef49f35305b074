//! The Istio and Kubernetes objects a gateway scenario needs around what it tests, as JSON values
//! to [`crate::Istio::apply`].

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde_json::{json, Value};

use crate::ISTIO_SYSTEM;

/// A `ServiceEntry` in istio-system for `host` on `port` speaking `protocol` (`HTTP`, `TLS`, `TCP`)
/// whose one endpoint is `backend` (127.0.0.1): its cluster in Envoy is `outbound|PORT||HOST`.
pub fn service_entry(name: &str, host: &str, port: u16, protocol: &str, backend: SocketAddr) -> Value {
    let port_name = protocol.to_lowercase();
    json!({
        "apiVersion": "networking.istio.io/v1beta1",
        "kind": "ServiceEntry",
        "metadata": {"name": name, "namespace": ISTIO_SYSTEM},
        "spec": {
            "hosts": [host],
            "location": "MESH_INTERNAL",
            "resolution": "STATIC",
            "ports": [{"number": port, "name": port_name, "protocol": protocol}],
            "endpoints": [{"address": backend.ip().to_string(), "ports": {port_name: backend.port()}}]
        }
    })
}

/// A TransportServer `secure` in `ns` passing TLS for `secure.example.com` through to Service
/// `tls-app` port 8443.
pub fn secure_transport_server(ns: &str) -> Value {
    json!({
        "apiVersion": "k8s.nginx.org/v1", "kind": "TransportServer",
        "metadata": {"name": "secure", "namespace": ns},
        "spec": {
            "listener": {"name": "tls-passthrough", "protocol": "TLS_PASSTHROUGH"},
            "host": "secure.example.com",
            "upstreams": [{"name": "app", "service": "tls-app", "port": 8443}],
            "action": {"pass": "app"}
        }
    })
}

/// One server of a [`gateway`]: its port number, port name and hosts (protocol HTTP).
#[derive(Debug, Clone)]
pub struct Server {
    /// The Gateway's port (Envoy listens on the target port the gateway's [`gateway_service`] maps it to).
    pub port: u16,
    /// The port's name.
    pub name: String,
    /// The hosts.
    pub hosts: Vec<String>,
}

/// An HTTP server of a gateway on `port` for `hosts`.
pub fn server(port: u16, name: &str, hosts: &[&str]) -> Server {
    Server {
        port,
        name: name.to_owned(),
        hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
    }
}

/// A `Gateway` in istio-system selecting `selector`, with `servers`, each bound to 127.0.0.1 (never
/// to every address of the machine).
pub fn gateway(name: &str, selector: &BTreeMap<String, String>, servers: &[Server]) -> Value {
    let servers: Vec<Value> = servers
        .iter()
        .map(|s| {
            json!({
                "port": {"number": s.port, "name": s.name, "protocol": "HTTP"},
                "hosts": s.hosts,
                "bind": "127.0.0.1"
            })
        })
        .collect();
    json!({
        "apiVersion": "networking.istio.io/v1beta1",
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": ISTIO_SYSTEM},
        "spec": {"selector": selector, "servers": servers}
    })
}

/// The gateway pods' `Service` in istio-system (selecting and labelled `selector`): each `(port,
/// target)` maps a Gateway port to the port Envoy listens on, as an ingress gateway's Service maps 80
/// to 8080; istiod puts the listener of a Gateway server on its port's target port.
pub fn gateway_service(name: &str, selector: &BTreeMap<String, String>, ports: &[(u16, u16)]) -> Value {
    let ports: Vec<Value> = ports
        .iter()
        .map(|(port, target)| json!({"name": format!("http-{port}"), "port": port, "targetPort": target}))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ISTIO_SYSTEM, "labels": selector},
        "spec": {"selector": selector, "ports": ports}
    })
}

/// A `VirtualService` in istio-system for `hosts` on `gateways` sending everything to `host:port`.
pub fn virtual_service(name: &str, hosts: &[&str], gateways: &[&str], host: &str, port: u16) -> Value {
    json!({
        "apiVersion": "networking.istio.io/v1beta1",
        "kind": "VirtualService",
        "metadata": {"name": name, "namespace": ISTIO_SYSTEM},
        "spec": {
            "hosts": hosts,
            "gateways": gateways,
            "http": [{"route": [{"destination": {"host": host, "port": {"number": port}}}]}]
        }
    })
}
