//! The L4 half of `make run` (examples/003-transport-server): the TLS and TCP backends of the
//! clusters envoy.yaml marks `# demo: tls HOST` or `# demo: tcp`, and samples through the listeners
//! of the LDS file `switchyard watch --lds-file` writes: a TLS connection by SNI through the
//! passthrough listener (the client trusts only the backend's own certificate, so a handshake that
//! succeeds proves Envoy did not terminate TLS), an unknown SNI refused, and a line echoed through
//! each TCP listener.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use switchyard_e2e::https::https_send;
use switchyard_e2e::l4::{tcp_ask, tcp_echo_on, tls_hello, TlsBackend};
use switchyard_e2e::{get, send};

/// The SNI no TransportServer claims, to show that Envoy refuses it.
const UNKNOWN_SNI: &str = "unknown.example.com";

/// How long a sample retries (Envoy may still be applying the LDS file, the backends writing their
/// certificates).
const PATIENCE: Duration = Duration::from_secs(10);

/// The file under `cert_dir` holding the certificate (DER) of the TLS backend for `host`.
fn certificate_file(cert_dir: &Path, host: &str) -> PathBuf {
    cert_dir.join(format!("{}.der", host.replace('*', "wildcard")))
}

/// Starts a TLS backend named `name` for `host` on 127.0.0.1:`port` and writes its fresh
/// self-signed certificate to `cert_dir` (for the samples, which trust only it). Returns what to
/// print.
pub fn start_tls(name: &str, host: &str, port: u16, cert_dir: &Path) -> Result<String, String> {
    let backend = TlsBackend::start_on(name, host, &format!("127.0.0.1:{port}"))?;
    let file = certificate_file(cert_dir, host);
    std::fs::create_dir_all(cert_dir).map_err(|e| format!("{}: {e}", cert_dir.display()))?;
    std::fs::write(&file, backend.certificate.as_ref()).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(format!(
        "tls://{}  (its own self-signed certificate for {host}: {})",
        backend.addr,
        file.display()
    ))
}

/// Starts a TCP echo backend named `name` on 127.0.0.1:`port`. Returns what to print.
pub fn start_tcp(name: &str, port: u16) -> Result<String, String> {
    let addr = tcp_echo_on(name, &format!("127.0.0.1:{port}"))?;
    Ok(format!("tcp://{addr}  (echoes every line as \"{name}: line\")"))
}

/// One listener of the LDS document, as far as the samples need it.
struct Listener {
    name: String,
    addr: SocketAddr,
    udp: bool,
    /// The SNI hosts of its filter chains that pass TLS through.
    server_names: Vec<String>,
    /// The SNI hosts of its filter chains that terminate TLS (the HTTPS listener, ROUTING.md §8).
    terminated: Vec<String>,
    /// Whether it has a default chain proxying TCP (a TCP listener's host-less TransportServer).
    default_chain: bool,
    /// Whether its default chain terminates TLS with the default certificate (the HTTPS listener).
    default_certificate: bool,
}

/// Whether a filter chain proxies TCP (passthrough), rather than terminating TLS for HTTP.
fn proxies_tcp(chain: &Value) -> bool {
    chain["filters"][0]["name"] == "envoy.filters.network.tcp_proxy"
}

/// The SNI hosts of `chains` that `keep` keeps.
fn names(chains: &[Value], keep: fn(&Value) -> bool) -> Vec<String> {
    (chains.iter().filter(|c| keep(c)))
        .flat_map(|c| {
            c["filter_chain_match"]["server_names"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|n| n.as_str().map(str::to_owned))
        .collect()
}

fn listeners(document: &Value) -> Vec<Listener> {
    let resources = document["resources"].as_array().cloned().unwrap_or_default();
    resources
        .iter()
        .filter_map(|resource| {
            let socket = &resource["address"]["socket_address"];
            let ip = socket["address"].as_str()?.parse().ok()?;
            let port = u16::try_from(socket["port_value"].as_u64()?).ok()?;
            let chains = resource["filter_chains"].as_array().cloned().unwrap_or_default();
            Some(Listener {
                name: resource["name"].as_str()?.to_owned(),
                addr: SocketAddr::new(ip, port),
                udp: socket["protocol"] == "UDP",
                server_names: names(&chains, proxies_tcp),
                terminated: names(&chains, |c| !proxies_tcp(c) && c.get("transport_socket").is_some()),
                default_chain: resource.get("default_filter_chain").is_some_and(proxies_tcp),
                default_certificate: resource.get("default_filter_chain").is_some_and(|c| !proxies_tcp(c)),
            })
        })
        .collect()
}

/// Tries `attempt` until it succeeds or [`PATIENCE`] runs out; the last error otherwise.
fn retry<T>(mut attempt: impl FnMut() -> Result<T, String>) -> Result<T, String> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match attempt() {
            Ok(value) => return Ok(value),
            Err(e) if Instant::now() > deadline => return Err(e),
            Err(_) => thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// Prints a sample through every listener of the LDS file `lds_file`.
pub fn samples(lds_file: &Path, cert_dir: &Path, admin: SocketAddr) -> Result<(), String> {
    let text = std::fs::read_to_string(lds_file).map_err(|e| format!("{}: {e}", lds_file.display()))?;
    let document: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", lds_file.display()))?;
    let listeners = listeners(&document);
    println!("L4 samples through the listeners of {}:", lds_file.display());
    if listeners.is_empty() {
        println!("  (no listeners: no TransportServer routes)");
    }
    for listener in &listeners {
        if listener.udp {
            println!("  UDP {} {}: not sampled", listener.name, listener.addr);
            continue;
        }
        for host in &listener.server_names {
            tls_sample(listener, host, cert_dir);
        }
        for host in &listener.terminated {
            https_sample(listener, Some(host));
        }
        if listener.default_certificate {
            https_sample(listener, Some(UNKNOWN_SNI));
        } else if !listener.server_names.is_empty() {
            refused_sample(listener, admin);
        }
        if listener.default_chain {
            let line = format!("hello through {}", listener.name);
            let shown = format!("TCP {} (listener {}) <- {line:?}", listener.addr, listener.name);
            match retry(|| tcp_ask(listener.addr, &line)) {
                Ok(answer) => println!("  {shown:<84} -> {answer:?}"),
                Err(e) => println!("  {shown:<84} -> error: {e}"),
            }
        }
    }
    Ok(())
}

/// TLS to the listener with `host` as SNI (a wildcard host as `demo.` under it), trusting only the
/// certificate the demo's backend for `host` wrote.
fn tls_sample(listener: &Listener, host: &str, cert_dir: &Path) {
    let sni = host
        .strip_prefix("*.")
        .map_or(host.to_owned(), |rest| format!("demo.{rest}"));
    let shown = format!("TLS {} (listener {}) SNI {sni}", listener.addr, listener.name);
    let file = certificate_file(cert_dir, host);
    let answer = retry(|| {
        let certificate = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let answer = tls_hello(listener.addr, &sni, &[certificate.clone().into()])?;
        Ok((answer, certificate))
    });
    match answer {
        Ok((answer, certificate)) => {
            let own = if answer.certificate.as_ref() == certificate.as_slice() {
                "the backend's own"
            } else {
                "NOT the backend's"
            };
            println!(
                "  {shown:<84} -> {:?}; certificate: {own} (self-signed for {host}, {}), TLS passed through",
                answer.line,
                file.display()
            );
        }
        Err(e) => println!("  {shown:<84} -> error: {e}"),
    }
}

/// HTTPS through the listener with `sni` (a wildcard host as `demo.` under it): the backend that
/// answered `GET /` and what the presented certificate names.
fn https_sample(listener: &Listener, sni: Option<&str>) {
    let sni = sni.map(|h| h.strip_prefix("*.").map_or(h.to_owned(), |rest| format!("demo.{rest}")));
    let host = sni.clone().unwrap_or_else(|| "localhost".to_owned());
    let shown = format!("HTTPS {} (listener {}) SNI {host}", listener.addr, listener.name);
    match retry(|| https_send(listener.addr, sni.as_deref(), &get(&host, "/"))) {
        Ok(answer) => {
            let names = certificate_for(&answer.certificate, &host);
            let backend = answer.response.backend().map_or_else(
                || format!("{} local reply", answer.response.status),
                |b| format!("backend {b}"),
            );
            println!("  {shown:<84} -> {backend}; certificate for {names}, TLS terminated by Envoy");
        }
        Err(e) => println!("  {shown:<84} -> error: {e}"),
    }
}

/// Whom a certificate (DER) is for: `host` when it names it, the default certificate when it names
/// `ingress.local` (ROUTING.md §8.1.2). A DER holds its names as plain bytes, which is all the demo
/// needs to tell the two apart.
fn certificate_for(der: &[u8], host: &str) -> String {
    let holds = |name: &str| der.windows(name.len()).any(|w| w == name.as_bytes());
    if holds(host) {
        host.to_owned()
    } else if holds("ingress.local") {
        "ingress.local (the default certificate)".to_owned()
    } else {
        format!("another name ({} bytes)", der.len())
    }
}

/// TLS with an SNI no TransportServer claims: Envoy finds no filter chain and closes the connection.
fn refused_sample(listener: &Listener, admin: SocketAddr) {
    let shown = format!("TLS {} (listener {}) SNI {UNKNOWN_SNI}", listener.addr, listener.name);
    match tls_hello(listener.addr, UNKNOWN_SNI, &[]) {
        Ok(answer) => println!("  {shown:<84} -> unexpectedly answered {:?}", answer.line),
        Err(e) => {
            let stat = format!(
                "listener.{}_{}.no_filter_chain_match",
                listener.addr.ip(),
                listener.addr.port()
            );
            let count = send(admin, &get("admin", &format!("/stats?filter=^{stat}$")))
                .map(|r| r.body.trim().to_owned())
                .unwrap_or_default();
            println!("  {shown:<84} -> refused by Envoy, no filter chain for it ({count}): {e}");
        }
    }
}
