//! ROUTING.md §6, TransportServer (seed 003's second half): a TLS passthrough TransportServer claims
//! its host against Ingresses and HTTPProxy roots (oldest, then smallest uid) and, when it wins, the
//! host leaves the HTTP table for the L4 routes; TransportServers on one listener compete the same
//! way; a listener no GlobalConfiguration defines is refused; class eligibility applies.

mod common;

use common::*;
use switchyard_compiler::l4::L4Protocol;
use switchyard_compiler::status::{Reason, Status};
use switchyard_compiler::Options;

const T1: &str = "2024-01-01T00:00:00Z";
const T2: &str = "2024-02-01T00:00:00Z";

fn meta(created: &str, uid: &str) -> String {
    format!("  creationTimestamp: \"{created}\"\n  uid: \"{uid}\"\n")
}

/// Seed 003's `cafe-ingress` (class `nginx`, here ours by having no class).
fn cafe_ingress(created: &str) -> String {
    simple_ingress(
        "cafe-ingress",
        "cafe.example.com",
        "/",
        "cafe",
        &meta(created, "ingress-uid"),
        None,
    )
}

/// A TLS passthrough TransportServer for `host`, passing to Service `service` port 8443.
fn passthrough(name: &str, host: &str, service: &str, created: &str, uid: &str) -> String {
    format!(
        "apiVersion: k8s.nginx.org/v1\nkind: TransportServer\nmetadata:\n  name: {name}\n  namespace: default\n{}spec:\n  listener:\n    name: tls-passthrough\n    protocol: TLS_PASSTHROUGH\n  host: {host}\n  upstreams:\n  - name: {service}\n    service: {service}\n    port: 8443\n  action:\n    pass: {service}\n---\n",
        meta(created, uid)
    )
}

/// Seed 003's `tcp-1`/`tcp-2`: a TransportServer on listener `dns-tcp`.
fn tcp_server(name: &str, created: &str, uid: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: k8s.nginx.org/v1\nkind: TransportServer\nmetadata:\n  name: {name}\n  namespace: default\n{}spec:\n{extra_spec}  listener:\n    name: dns-tcp\n    protocol: TCP\n  upstreams:\n  - name: dns\n    service: {name}-dns\n    port: 5353\n  action:\n    pass: dns\n---\n",
        meta(created, uid)
    )
}

const GLOBAL_CONFIGURATION: &str = "apiVersion: k8s.nginx.org/v1\nkind: GlobalConfiguration\nmetadata:\n  name: nginx-configuration\n  namespace: nginx-ingress\nspec:\n  listeners:\n  - name: dns-tcp\n    port: 5353\n    protocol: TCP\n  - name: dns-udp\n    port: 5353\n    protocol: UDP\n---\n";

#[test]
fn an_older_passthrough_transport_server_takes_the_host_out_of_the_http_table() {
    let c = compile_default(&format!(
        "{}{}",
        cafe_ingress(T2),
        passthrough("cafe-passthrough", "cafe.example.com", "cafe-tls", T1, "ts-uid")
    ));
    assert_eq!(
        cluster_for(&c, &get("http://cafe.example.com/")),
        None,
        "the host has no HTTP rules"
    );
    assert!(c.table.rules.is_empty(), "{:?}", rule_names(&c));
    assert_eq!(c.l4.passthrough.len(), 1);
    assert_eq!(c.l4.passthrough[0].host.as_deref(), Some("cafe.example.com"));
    assert_eq!(c.l4.passthrough[0].cluster, "default/cafe-tls:8443");
    assert_eq!(
        status(&c, "TransportServer", "default", "cafe-passthrough"),
        Status::Valid
    );
    let ingress = status_of(&c, "Ingress", "default", "cafe-ingress");
    assert_eq!(ingress.status, Status::Rejected);
    assert_eq!(
        message(ingress, Reason::HostTaken),
        "host cafe.example.com is taken by TransportServer/default/cafe-passthrough"
    );
    assert_eq!(
        message(ingress, Reason::Rejected),
        "All hosts are taken by other resources"
    );
}

#[test]
fn an_older_ingress_keeps_its_host_and_the_passthrough_transport_server_is_rejected() {
    let c = compile_default(&format!(
        "{}{}",
        cafe_ingress(T1),
        passthrough("cafe-passthrough", "cafe.example.com", "cafe-tls", T2, "ts-uid")
    ));
    assert_eq!(
        cluster_for(&c, &get("http://cafe.example.com/")).as_deref(),
        Some("default/cafe:80")
    );
    assert!(c.l4.is_empty(), "{:?}", c.l4);
    let server = status_of(&c, "TransportServer", "default", "cafe-passthrough");
    assert_eq!(server.status, Status::Rejected);
    assert!(has_reason(server, Reason::HostTaken), "{server:?}");
    assert_eq!(status(&c, "Ingress", "default", "cafe-ingress"), Status::Accepted);
}

#[test]
fn passthrough_transport_servers_compete_for_a_host_by_age_then_uid() {
    let c = compile_default(&format!(
        "{}{}",
        passthrough("b", "app.example.com", "b", T1, "uid-b"),
        passthrough("a", "app.example.com", "a", T1, "uid-c")
    ));
    assert_eq!(c.l4.passthrough.len(), 1);
    assert_eq!(
        c.l4.passthrough[0].resource, "TransportServer/default/b",
        "equal times: the smaller uid wins"
    );
    assert_eq!(status(&c, "TransportServer", "default", "a"), Status::Rejected);
}

#[test]
fn the_oldest_transport_server_owns_the_listener_and_the_other_is_told_it_is_taken() {
    for (first, second) in [("tcp-1", "tcp-2"), ("tcp-2", "tcp-1")] {
        let c = compile_default(&format!(
            "{GLOBAL_CONFIGURATION}{}{}",
            tcp_server(first, T1, "uid-9", ""),
            tcp_server(second, T2, "uid-1", "")
        ));
        assert_eq!(c.l4.listeners.len(), 1);
        let listener = &c.l4.listeners[0];
        assert_eq!(
            (listener.name.as_str(), listener.port, listener.protocol),
            ("dns-tcp", 5353, L4Protocol::Tcp)
        );
        assert_eq!(listener.routes[0].cluster, format!("default/{first}-dns:5353"));
        assert_eq!(status(&c, "TransportServer", "default", first), Status::Valid);
        let loser = status_of(&c, "TransportServer", "default", second);
        assert_eq!(loser.status, Status::Rejected);
        assert_eq!(
            message(loser, Reason::ListenerTaken),
            "Listener dns-tcp is taken by another resource"
        );
    }
}

#[test]
fn a_listener_without_a_global_configuration_is_rejected_as_not_existing() {
    let c = compile_default(&tcp_server("tcp-1", T1, "uid-1", ""));
    assert!(c.l4.is_empty());
    let server = status_of(&c, "TransportServer", "default", "tcp-1");
    assert_eq!(server.status, Status::Rejected);
    assert_eq!(
        message(server, Reason::ListenerNotFound),
        "Listener dns-tcp doesn't exist"
    );
}

#[test]
fn a_transport_server_of_another_class_is_ignored() {
    let options = Options {
        ingress_class: "switchyard".to_owned(),
        ..Options::default()
    };
    let c = compile_yaml(
        &format!(
            "{GLOBAL_CONFIGURATION}{}",
            tcp_server("tcp-1", T1, "uid-1", "  ingressClassName: nginx\n")
        ),
        &options,
    );
    assert!(c.l4.is_empty());
    assert_eq!(status(&c, "TransportServer", "default", "tcp-1"), Status::Ignored);
}

#[test]
fn the_same_manifests_in_any_order_give_the_same_l4_routes() {
    let parts = [
        GLOBAL_CONFIGURATION.to_owned(),
        tcp_server("tcp-1", T1, "uid-1", ""),
        tcp_server("tcp-2", T2, "uid-2", ""),
        passthrough("p", "p.example.com", "p", T1, "uid-p"),
    ];
    let forward = compile_default(&parts.concat());
    let backward = compile_default(&parts.iter().rev().cloned().collect::<String>());
    assert_eq!(forward.l4, backward.l4);
    assert_eq!(forward.l4.passthrough.len() + forward.l4.listeners.len(), 2);
}

/// The status NGINX's controller would write: (state, reason, message).
fn nginx(c: &switchyard_compiler::Compiled, name: &str) -> (String, String, String) {
    let status = status_of(c, "TransportServer", "default", name);
    let nginx = status
        .nginx
        .as_ref()
        .unwrap_or_else(|| panic!("no NGINX status: {status:?}"));
    (nginx.state.to_string(), nginx.reason.to_string(), nginx.message.clone())
}

#[test]
fn transport_server_status_is_written_in_nginxs_words() {
    let c = compile_default(&format!(
        "{GLOBAL_CONFIGURATION}{}{}{}{}",
        tcp_server("tcp-1", T1, "uid-1", ""),
        tcp_server("tcp-2", T2, "uid-2", ""),
        cafe_ingress(T1),
        passthrough("cafe-passthrough", "cafe.example.com", "cafe-tls", T2, "ts-uid"),
    ));
    let said = |state: &str, reason: &str, message: &str| (state.to_owned(), reason.to_owned(), message.to_owned());
    assert_eq!(
        nginx(&c, "tcp-1"),
        said(
            "Valid",
            "AddedOrUpdated",
            "Configuration for default/tcp-1 was added or updated"
        )
    );
    assert_eq!(
        nginx(&c, "tcp-2"),
        said("Warning", "Rejected", "Listener dns-tcp is taken by another resource")
    );
    assert_eq!(
        nginx(&c, "cafe-passthrough"),
        said("Warning", "Rejected", "Host is taken by another resource")
    );
    let missing = compile_default(&tcp_server("tcp-1", T1, "uid-1", ""));
    assert_eq!(
        nginx(&missing, "tcp-1"),
        said("Warning", "Rejected", "Listener dns-tcp doesn't exist")
    );
    let invalid = compile_default(
        &tcp_server("tcp-1", T1, "uid-1", "  action: {pass: nowhere}\n").replace("  action:\n    pass: dns\n", ""),
    );
    let (state, reason, message) = nginx(&invalid, "tcp-1");
    assert_eq!((state.as_str(), reason.as_str()), ("Invalid", "Rejected"));
    assert!(message.contains("spec.action.pass"), "{message}");
}
