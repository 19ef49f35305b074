//! The L4 configuration (ROUTING.md §6, TransportServer) in a real Envoy: the listeners
//! `switchyard_compiler::lds` writes pass TLS through by SNI (the client sees the backend's own
//! certificate), proxy TCP and UDP to their backends, and follow a changed LDS file without a
//! restart.

use std::net::SocketAddr;

use switchyard_compiler::l4::{L4Listener, L4Protocol, L4Route, L4Routes};
use switchyard_compiler::lds::{self, LdsOptions};
use switchyard_e2e::l4::{tcp_ask, tcp_echo, tls_hello, udp_ask, udp_echo, L4Envoy, TlsBackend};
use switchyard_free_port::{free_port, free_udp_port};

/// A route to Service `service` port `port` in `default` (cluster `default/SERVICE:PORT`).
fn route(host: Option<&str>, service: &str, port: u16) -> L4Route {
    L4Route::to_service("default", host, service, port)
}

fn options(passthrough_port: u16) -> LdsOptions {
    LdsOptions {
        address: "127.0.0.1".to_owned(),
        passthrough_port,
        https: None,
    }
}

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

#[test]
fn tls_passthrough_reaches_each_backend_by_sni_with_its_own_certificate_and_refuses_an_unknown_sni() {
    let a = TlsBackend::start("a", "a.example.com");
    let b = TlsBackend::start("b", "b.example.com");
    let port = free_port();
    let routes = L4Routes {
        passthrough: vec![
            route(Some("a.example.com"), "a", 443),
            route(Some("b.example.com"), "b", 443),
        ],
        listeners: vec![],
    };
    let envoy = L4Envoy::start(
        &[("default/a:443", a.addr), ("default/b:443", b.addr)],
        &lds::document(&routes, &options(port)),
    );
    let trusted = [a.certificate.clone(), b.certificate.clone()];

    let answer = tls_hello(local(port), "a.example.com", &trusted).unwrap_or_else(|e| panic!("{e}\n{}", envoy.log()));
    assert_eq!(answer.line, "backend: a");
    assert_eq!(
        answer.certificate, a.certificate,
        "TLS must pass through: the client sees a's own certificate"
    );

    let answer = tls_hello(local(port), "b.example.com", &trusted).unwrap_or_else(|e| panic!("{e}\n{}", envoy.log()));
    assert_eq!(answer.line, "backend: b");
    assert_eq!(answer.certificate, b.certificate);

    let unknown = tls_hello(local(port), "c.example.com", &trusted);
    assert!(
        unknown.is_err(),
        "an SNI no TransportServer won must be refused, got {unknown:?}"
    );
    assert_eq!(
        envoy.no_chain_matched(port),
        1,
        "Envoy itself refused it: no filter chain for that SNI"
    );
}

#[test]
fn tcp_and_udp_listeners_proxy_to_their_backends() {
    let tcp_backend = tcp_echo("tcp-echo");
    let udp_backend = udp_echo("udp-echo");
    let (tcp_port, udp_port) = (free_port(), free_udp_port());
    let routes = L4Routes {
        passthrough: vec![],
        listeners: vec![
            L4Listener {
                name: "tcp-1".into(),
                port: tcp_port,
                protocol: L4Protocol::Tcp,
                routes: vec![route(None, "tcp-echo", 7)],
            },
            L4Listener {
                name: "udp-1".into(),
                port: udp_port,
                protocol: L4Protocol::Udp,
                routes: vec![route(None, "udp-echo", 7)],
            },
        ],
    };
    let envoy = L4Envoy::start(
        &[("default/tcp-echo:7", tcp_backend), ("default/udp-echo:7", udp_backend)],
        &lds::document(&routes, &options(free_port())),
    );
    let answer = tcp_ask(local(tcp_port), "hello").unwrap_or_else(|e| panic!("{e}\n{}", envoy.log()));
    assert_eq!(answer, "tcp-echo: hello");
    let answer = udp_ask(local(udp_port), "ping").unwrap_or_else(|e| panic!("{e}\n{}", envoy.log()));
    assert_eq!(answer, "udp-echo: ping");
}

#[test]
fn a_new_winner_takes_a_listener_and_a_host_leaves_the_passthrough_without_an_envoy_restart() {
    let (first, second) = (tcp_echo("first"), tcp_echo("second"));
    let a = TlsBackend::start("a", "a.example.com");
    let b = TlsBackend::start("b", "b.example.com");
    let (tcp_port, tls_port) = (free_port(), free_port());
    let tcp = |service: &str| L4Listener {
        name: "tcp-1".into(),
        port: tcp_port,
        protocol: L4Protocol::Tcp,
        routes: vec![route(None, service, 7)],
    };
    let before = L4Routes {
        passthrough: vec![
            route(Some("a.example.com"), "a", 443),
            route(Some("b.example.com"), "b", 443),
        ],
        listeners: vec![tcp("first")],
    };
    let envoy = L4Envoy::start(
        &[
            ("default/first:7", first),
            ("default/second:7", second),
            ("default/a:443", a.addr),
            ("default/b:443", b.addr),
        ],
        &lds::document(&before, &options(tls_port)),
    );
    assert_eq!(tcp_ask(local(tcp_port), "x").as_deref(), Ok("first: x"));
    let trusted = [a.certificate.clone(), b.certificate.clone()];
    assert!(tls_hello(local(tls_port), "b.example.com", &trusted).is_ok());

    let after = L4Routes {
        passthrough: vec![route(Some("a.example.com"), "a", 443)],
        listeners: vec![tcp("second")],
    };
    assert!(
        envoy.update(&lds::document(&after, &options(tls_port))),
        "Envoy rejected the update:\n{}",
        envoy.log()
    );
    assert_eq!(tcp_ask(local(tcp_port), "y").as_deref(), Ok("second: y"));
    assert_eq!(
        tls_hello(local(tls_port), "a.example.com", &trusted)
            .map(|a| a.line)
            .as_deref(),
        Ok("backend: a")
    );
    assert!(
        tls_hello(local(tls_port), "b.example.com", &trusted).is_err(),
        "b left the passthrough"
    );
    assert_eq!(envoy.no_chain_matched(tls_port), 1);

    let nothing = L4Routes::default();
    assert!(envoy.update(&lds::document(&nothing, &options(tls_port))));
    assert!(
        envoy.listeners().is_empty(),
        "an empty document removes every listener: {:?}",
        envoy.listeners()
    );
    assert!(tcp_ask(local(tcp_port), "z").is_err());
}

/// A TLS passthrough TransportServer for `host` to Service `service` port 443.
fn passthrough_server(name: &str, host: &str, service: &str, created: &str) -> String {
    format!(
        "apiVersion: k8s.nginx.org/v1\nkind: TransportServer\nmetadata:\n  name: {name}\n  namespace: default\n  creationTimestamp: \"{created}\"\nspec:\n  listener:\n    name: tls-passthrough\n    protocol: TLS_PASSTHROUGH\n  host: {host}\n  upstreams:\n  - name: up\n    service: {service}\n    port: 443\n  action:\n    pass: up\n---\n"
    )
}

#[test]
fn compiled_transport_servers_pass_tls_through_and_proxy_tcp_in_envoy() {
    let a = TlsBackend::start("a", "a.example.com");
    let b = TlsBackend::start("b", "b.example.com");
    let echo = tcp_echo("dns");
    let (tls_port, tcp_port) = (free_port(), free_port());
    let manifests = format!(
        "{}{}{}apiVersion: k8s.nginx.org/v1\nkind: GlobalConfiguration\nmetadata:\n  name: nginx-configuration\n  namespace: nginx-ingress\nspec:\n  listeners:\n  - name: dns-tcp\n    port: {tcp_port}\n    protocol: TCP\n---\napiVersion: k8s.nginx.org/v1\nkind: TransportServer\nmetadata:\n  name: tcp-1\n  namespace: default\nspec:\n  listener:\n    name: dns-tcp\n    protocol: TCP\n  upstreams:\n  - name: dns\n    service: dns\n    port: 53\n  action:\n    pass: dns\n",
        passthrough_server("a", "a.example.com", "a", "2024-01-01T00:00:00Z"),
        passthrough_server("b", "b.example.com", "b", "2024-01-01T00:00:00Z"),
        // Younger than `a`: loses a.example.com, so a's backend keeps it.
        passthrough_server("late", "a.example.com", "b", "2024-06-01T00:00:00Z"),
    );
    let lds = switchyard_e2e::l4::compile_l4(&manifests, tls_port);
    let envoy = L4Envoy::start(
        &[
            ("default/a:443", a.addr),
            ("default/b:443", b.addr),
            ("default/dns:53", echo),
        ],
        &lds,
    );
    let trusted = [a.certificate.clone(), b.certificate.clone()];
    for (host, backend, certificate) in [
        ("a.example.com", "a", &a.certificate),
        ("b.example.com", "b", &b.certificate),
    ] {
        let answer =
            tls_hello(local(tls_port), host, &trusted).unwrap_or_else(|e| panic!("{host}: {e}\n{}", envoy.log()));
        assert_eq!(answer.line, format!("backend: {backend}"));
        assert_eq!(&answer.certificate, certificate);
    }
    assert_eq!(tcp_ask(local(tcp_port), "q").as_deref(), Ok("dns: q"));
}

/// A TransportServer on listener `dns-tcp` passing to Service `service` port 7.
fn tcp_server(name: &str, service: &str, created: &str) -> String {
    format!(
        "apiVersion: k8s.nginx.org/v1\nkind: TransportServer\nmetadata:\n  name: {name}\n  namespace: default\n  creationTimestamp: \"{created}\"\nspec:\n  listener:\n    name: dns-tcp\n    protocol: TCP\n  upstreams:\n  - name: up\n    service: {service}\n    port: 7\n  action:\n    pass: up\n"
    )
}

/// `switchyard watch --manifests DIR --lds-file FILE`, killed on drop.
struct WatchL4 {
    child: std::process::Child,
    log: std::path::PathBuf,
}

impl WatchL4 {
    fn start(manifests: &std::path::Path, lds_file: &std::path::Path, passthrough_port: u16) -> WatchL4 {
        let bin = switchyard_e2e::required_path("SWITCHYARD_BIN");
        let log = manifests.with_extension("log");
        let child = std::process::Command::new(bin)
            .args(["watch", "--manifests"])
            .arg(manifests)
            .arg("--lds-file")
            .arg(lds_file)
            .args([
                "--l4-address",
                "127.0.0.1",
                "--tls-passthrough-port",
                &passthrough_port.to_string(),
            ])
            .args(["--debounce-ms", "50"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        WatchL4 { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for WatchL4 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn watch_follows_a_listeners_winner_deleted_with_no_envoy_restart() {
    let (first, second) = (tcp_echo("first"), tcp_echo("second"));
    let tcp_port = free_port();
    let envoy = L4Envoy::start(
        &[("default/first:7", first), ("default/second:7", second)],
        "{\"resources\": []}\n",
    );
    let dir = switchyard_e2e::fresh_dir("watch-l4");
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    let global = format!(
        "apiVersion: k8s.nginx.org/v1\nkind: GlobalConfiguration\nmetadata:\n  name: nginx-configuration\n  namespace: nginx-ingress\nspec:\n  listeners:\n  - name: dns-tcp\n    port: {tcp_port}\n    protocol: TCP\n"
    );
    switchyard_e2e::write_file(&manifests.join("global.yaml"), &global);
    switchyard_e2e::write_file(
        &manifests.join("tcp-1.yaml"),
        &tcp_server("tcp-1", "first", "2024-01-01T00:00:00Z"),
    );
    switchyard_e2e::write_file(
        &manifests.join("tcp-2.yaml"),
        &tcp_server("tcp-2", "second", "2024-02-01T00:00:00Z"),
    );

    let before = envoy.updates();
    let watch = WatchL4::start(&manifests, &envoy.lds_file(), free_port());
    assert!(
        envoy.wait_for_update(before),
        "Envoy rejected the watch's listeners:\n{}",
        envoy.log()
    );
    let answer = tcp_ask(local(tcp_port), "x").unwrap_or_else(|e| panic!("{e}\n{}\n{}", watch.log(), envoy.log()));
    assert_eq!(answer, "first: x", "tcp-1 is older: it owns the listener");

    let pid = envoy.pid();
    let before = envoy.updates();
    std::fs::remove_file(manifests.join("tcp-1.yaml")).unwrap();
    assert!(envoy.wait_for_update(before), "{}", watch.log());
    assert_eq!(
        tcp_ask(local(tcp_port), "y").as_deref(),
        Ok("second: y"),
        "tcp-2 takes the listener over"
    );
    assert_eq!(envoy.pid(), pid, "no Envoy restart");
    assert!(watch.log().contains("1 TCP/UDP listener(s)"), "{}", watch.log());
    let _ = std::fs::remove_dir_all(&dir);
}
