//! `switchyard watch --kubernetes --istio-gateway` through a real istiod (issue 27): a TLS-passthrough
//! TransportServer reached by SNI, the client seeing the backend's own certificate, and a TCP
//! listener (a GlobalConfiguration's), through the Gateway and VirtualService the watch applies and
//! the listeners istiod builds from them in a plain Envoy.
//!
//! The sink writes `networking.istio.io/v1beta1`, which Istio 1.14's own CRDs (this istiod's) serve, as
//! every Istio from 1.5 on does.
//!
//! Needs what `make test-istio` sets (`KUBEBUILDER_ASSETS`, `PILOT_DISCOVERY`, `ISTIO_CRDS`,
//! `ENVOY_BIN`, `SWITCHYARD_BIN`).

use std::net::SocketAddr;

use serde_json::json;
use switchyard_e2e::l4::{tcp_ask, tcp_echo, tls_hello, TlsBackend};
use switchyard_free_port::free_port;
use switchyard_istio::objects::{secure_transport_server, service_entry};
use switchyard_istio::{ingressgateway, Istio};

#[tokio::test]
async fn tls_passthrough_and_tcp_through_the_istio_gateway_the_watch_applies() {
    let istio = Istio::start().await.unwrap_or_else(|e| panic!("{e}"));
    let admin = istio.admin().await;
    istio.install_other_kinds_crds(&admin).await;

    let ns = istio.env.namespace("l4").await;
    let tls = TlsBackend::start("tls-app", "secure.example.com");
    let echo = tcp_echo("echo");
    let (passthrough, tcp) = (free_port(), free_port());
    let fqdn = |name: &str| format!("{name}.{ns}.svc.cluster.local");
    let global = json!({
        "apiVersion": "k8s.nginx.org/v1", "kind": "GlobalConfiguration",
        "metadata": {"name": "nginx-configuration", "namespace": ns},
        "spec": {"listeners": [{"name": "echo-tcp", "port": tcp, "protocol": "TCP"}]}
    });
    let secure = secure_transport_server(&ns);
    let tcp_server = json!({
        "apiVersion": "k8s.nginx.org/v1", "kind": "TransportServer",
        "metadata": {"name": "echo", "namespace": ns},
        "spec": {
            "listener": {"name": "echo-tcp", "protocol": "TCP"},
            "upstreams": [{"name": "echo", "service": "echo", "port": 5353}],
            "action": {"pass": "echo"}
        }
    });
    istio
        .apply(&[
            service_entry("tls-app", &fqdn("tls-app"), 8443, "TLS", tls.addr),
            service_entry("echo", &fqdn("echo"), 5353, "TCP", echo),
            global,
            secure,
            tcp_server,
        ])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let gateway = istio.gateway("istio-ingressgateway-0", &ingressgateway());
    let watch = istio.gateway_watch(&ns, passthrough).await;

    let at = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
    let describe = |e: &str| {
        format!(
            "{e}\n--- listeners: {:?}\n--- istiod:\n{}\n--- watch:\n{}",
            gateway.listeners(),
            istio.istiod_log_tail(30),
            watch.log()
        )
    };
    let answer = gateway
        .wait_for("TLS passthrough by SNI to the backend", |_| {
            tls_hello(
                at(passthrough),
                "secure.example.com",
                std::slice::from_ref(&tls.certificate),
            )
        })
        .await
        .unwrap_or_else(|e| panic!("{}", describe(&e)));
    assert_eq!(answer.line, "backend: tls-app");
    assert_eq!(answer.certificate, tls.certificate, "the backend's own certificate");
    // An SNI no TransportServer has is not passed anywhere.
    assert!(tls_hello(
        at(passthrough),
        "other.example.com",
        std::slice::from_ref(&tls.certificate)
    )
    .is_err());
    let line = gateway
        .wait_for("the TCP listener to the echo backend", |_| tcp_ask(at(tcp), "hello"))
        .await
        .unwrap_or_else(|e| panic!("{}", describe(&e)));
    assert_eq!(line, "echo: hello");
    assert_eq!(gateway.rejected_updates(), 0, "{}", gateway.log_tail());
    let log = watch.log();
    assert!(!log.contains("Forbidden"), "{log}");
}
