//! The L4 half of the end-to-end harness: a real Envoy whose listeners come from an LDS file (what
//! `switchyard compile --l4` and `watch --lds-file` write), TLS backends with certificates of their
//! own (to see that TLS passes through untouched), and TCP and UDP echo backends.
//!
//! Listener ports come from the LDS document, so tests pick free ports first
//! (`switchyard_free_port`).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};

use crate::process::{EnvoyProcess, PATIENCE};
use crate::{fresh_dir, get, required_path, send, write_file};

fn crypto() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

// ---- backends ---------------------------------------------------------------------------------

/// A TLS server with its own self-signed certificate for `host`: after the handshake it writes
/// `backend: NAME\n` and closes.
pub struct TlsBackend {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its certificate (DER): what a client that reached it through a passthrough sees.
    pub certificate: CertificateDer<'static>,
}

impl TlsBackend {
    /// Starts a TLS backend named `name` serving a certificate for `host` on a free port.
    pub fn start(name: &str, host: &str) -> TlsBackend {
        TlsBackend::start_on(name, host, "127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts a TLS backend named `name` serving a fresh self-signed certificate for `host` on
    /// `addr` (`make run` gives it the port its cluster names).
    pub fn start_on(name: &str, host: &str, addr: &str) -> Result<TlsBackend, String> {
        let certified = rcgen::generate_simple_self_signed(vec![host.to_owned()])
            .map_err(|e| format!("certificate for {host}: {e}"))?;
        let certificate = certified.cert.der().clone();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der()));
        let config = rustls::ServerConfig::builder_with_provider(crypto())
            .with_safe_default_protocol_versions()
            .and_then(|b| b.with_no_client_auth().with_single_cert(vec![certificate.clone()], key))
            .map_err(|e| format!("TLS server config: {e}"))?;
        let config = Arc::new(config);
        let listener = TcpListener::bind(addr).map_err(|e| format!("bind {addr}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| format!("local_addr: {e}"))?;
        let line = format!("backend: {name}\n");
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (config, line) = (config.clone(), line.clone());
                thread::spawn(move || {
                    let Ok(connection) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    let mut tls = rustls::StreamOwned::new(connection, stream);
                    let _ = tls.write_all(line.as_bytes());
                    let _ = tls.flush();
                    tls.conn.send_close_notify();
                    let _ = tls.flush();
                });
            }
        });
        Ok(TlsBackend { addr, certificate })
    }
}

/// What a TLS client saw: the line the server wrote and the certificate it presented.
#[derive(Debug)]
pub struct TlsAnswer {
    /// The first line the server wrote, without its newline.
    pub line: String,
    /// The server's certificate (DER).
    pub certificate: CertificateDer<'static>,
}

/// Opens TLS to `addr` with `sni` as the server name, trusting only `trusted`, and reads one line.
/// `Err` when the handshake fails or the connection is closed (an unknown SNI at a passthrough).
pub fn tls_hello(addr: SocketAddr, sni: &str, trusted: &[CertificateDer<'static>]) -> Result<TlsAnswer, String> {
    let mut roots = rustls::RootCertStore::empty();
    for certificate in trusted {
        roots.add(certificate.clone()).map_err(|e| format!("root: {e}"))?;
    }
    let config = rustls::ClientConfig::builder_with_provider(crypto())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from(sni.to_owned()).map_err(|e| format!("{sni}: {e}"))?;
    let connection = rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    let stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(rustls::StreamOwned::new(connection, stream));
    let mut line = String::new();
    reader
        .read_line(&mut line)
        .map_err(|e| format!("TLS to {addr} as {sni}: {e}"))?;
    if line.is_empty() {
        return Err(format!("TLS to {addr} as {sni}: closed without a line"));
    }
    let certificate = reader
        .get_ref()
        .conn
        .peer_certificates()
        .and_then(|chain| chain.first().cloned())
        .ok_or("no server certificate")?;
    Ok(TlsAnswer {
        line: line.trim_end().to_owned(),
        certificate,
    })
}

/// A TCP echo server that answers every line with `NAME: line`.
pub fn tcp_echo(name: &str) -> SocketAddr {
    tcp_echo_on(name, "127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"))
}

/// [`tcp_echo`] on `addr` (`make run` gives it the port its cluster names).
pub fn tcp_echo_on(name: &str, addr: &str) -> Result<SocketAddr, String> {
    let listener = TcpListener::bind(addr).map_err(|e| format!("bind {addr}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| format!("local_addr: {e}"))?;
    let name = name.to_owned();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let name = name.clone();
            thread::spawn(move || {
                let Ok(mut writer) = stream.try_clone() else { return };
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { return };
                    if writer.write_all(format!("{name}: {line}\n").as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok(addr)
}

/// Sends `line` over TCP to `addr` and reads the one-line answer; `Err` when the connection is
/// refused or closed.
pub fn tcp_ask(addr: SocketAddr, line: &str) -> Result<String, String> {
    let mut stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    stream
        .write_all(format!("{line}\n").as_bytes())
        .map_err(|e| e.to_string())?;
    let mut answer = String::new();
    BufReader::new(stream)
        .read_line(&mut answer)
        .map_err(|e| e.to_string())?;
    if answer.is_empty() {
        return Err(format!("{addr}: closed without an answer"));
    }
    Ok(answer.trim_end().to_owned())
}

/// A UDP echo server that answers every datagram with `NAME: datagram`.
pub fn udp_echo(name: &str) -> SocketAddr {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = socket.local_addr().unwrap_or_else(|e| panic!("local_addr: {e}"));
    let name = name.to_owned();
    thread::spawn(move || {
        let mut buffer = [0u8; 1500];
        while let Ok((n, from)) = socket.recv_from(&mut buffer) {
            let answer = format!("{name}: {}", String::from_utf8_lossy(&buffer[..n]));
            let _ = socket.send_to(answer.as_bytes(), from);
        }
    });
    addr
}

/// Sends one datagram to `addr` and waits up to a second for the answer.
pub fn udp_ask(addr: SocketAddr, text: &str) -> Result<String, String> {
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    socket
        .set_read_timeout(Some(Duration::from_secs(1)))
        .map_err(|e| e.to_string())?;
    socket.send_to(text.as_bytes(), addr).map_err(|e| e.to_string())?;
    let mut buffer = [0u8; 1500];
    let (n, _) = socket.recv_from(&mut buffer).map_err(|e| format!("{addr}: {e}"))?;
    Ok(String::from_utf8_lossy(&buffer[..n]).into_owned())
}

/// The LDS document `switchyard compile --l4` writes for `yaml` (manifests), with the listeners on
/// 127.0.0.1 and the TLS passthrough listener on `passthrough_port`.
pub fn compile_l4(yaml: &str, passthrough_port: u16) -> String {
    let dir = fresh_dir("l4-manifests");
    let (manifests, listeners) = (dir.join("manifests.yaml"), dir.join("listeners.json"));
    write_file(&manifests, yaml);
    let port = passthrough_port.to_string();
    let listeners_arg = listeners.display().to_string();
    let args = [
        "--l4",
        &listeners_arg,
        "--l4-address",
        "127.0.0.1",
        "--tls-passthrough-port",
        &port,
    ];
    crate::switchyard_compile(&[&manifests], &args);
    let document = std::fs::read_to_string(&listeners).unwrap_or_else(|e| panic!("{}: {e}", listeners.display()));
    let _ = std::fs::remove_dir_all(&dir);
    document
}

// ---- Envoy ------------------------------------------------------------------------------------

/// A real Envoy with static clusters and its listeners from an LDS file.
pub struct L4Envoy {
    process: EnvoyProcess,
}

impl L4Envoy {
    /// Starts Envoy (`ENVOY_BIN`) with one static cluster per `(name, backend address)` (TCP or UDP
    /// alike) and the LDS document `lds`; returns once the listeners are active.
    pub fn start(clusters: &[(&str, SocketAddr)], lds: &str) -> L4Envoy {
        let envoy_bin = required_path("ENVOY_BIN");
        let dir = fresh_dir("e2e-l4");
        std::fs::create_dir_all(dir.join("lds")).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        write_file(&dir.join("lds/listeners.json"), lds);
        write_file(&dir.join("envoy.yaml"), &bootstrap(&dir, clusters));
        let process = EnvoyProcess::start(&envoy_bin, dir, 1, |p| {
            p.stat("listener_manager.lds.update_success").unwrap_or(0) > 0
        });
        L4Envoy { process }
    }

    /// Envoy's process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The LDS file Envoy watches (a sidecar may write it).
    pub fn lds_file(&self) -> PathBuf {
        self.process.dir.join("lds/listeners.json")
    }

    /// Replaces the LDS file (written beside, then renamed into place) and waits until Envoy
    /// applied it; returns whether it was accepted.
    pub fn update(&self, lds: &str) -> bool {
        let before = self.updates();
        let tmp = self.process.dir.join("lds/listeners.json.tmp");
        write_file(&tmp, lds);
        std::fs::rename(&tmp, self.lds_file()).unwrap_or_else(|e| panic!("rename: {e}"));
        self.wait_for_update(before)
    }

    /// Waits until Envoy counted an LDS update beyond `before` (`(accepted, rejected)`, from
    /// [`L4Envoy::updates`]) and its listeners are warm; returns whether it was accepted.
    pub fn wait_for_update(&self, before: (u64, u64)) -> bool {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let (accepted, rejected) = self.updates();
            if accepted > before.0 && self.stat("listener_manager.total_listeners_warming") == Some(0) {
                return true;
            }
            if rejected > before.1 {
                return false;
            }
            assert!(
                Instant::now() < deadline,
                "Envoy did not apply the LDS file:\n{}",
                self.process.log_tail()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// LDS updates so far: (accepted, rejected).
    pub fn updates(&self) -> (u64, u64) {
        (
            self.stat("listener_manager.lds.update_success").unwrap_or(0),
            self.stat("listener_manager.lds.update_rejected").unwrap_or(0),
        )
    }

    /// One stat's value from the admin API.
    pub fn stat(&self, name: &str) -> Option<u64> {
        self.process.stat(name)
    }

    /// Connections the listener on 127.0.0.1:`port` closed because no filter chain matched them (for
    /// a passthrough listener: an SNI no route names).
    pub fn no_chain_matched(&self, port: u16) -> u64 {
        self.stat(&format!("listener.127.0.0.1_{port}.no_filter_chain_match"))
            .unwrap_or(0)
    }

    /// The names of the listeners Envoy has now.
    pub fn listeners(&self) -> Vec<String> {
        let Ok(listeners) = send(self.process.admin, &get("admin", "/listeners")) else {
            return Vec::new();
        };
        listeners
            .body
            .lines()
            .filter_map(|l| l.split("::").next())
            .map(str::to_owned)
            .collect()
    }

    /// Envoy's log so far.
    pub fn log(&self) -> String {
        self.process.log()
    }
}

/// The bootstrap: admin on a free port, static clusters, listeners from `<dir>/lds/listeners.json`.
fn bootstrap(dir: &std::path::Path, clusters: &[(&str, SocketAddr)]) -> String {
    let lds = dir.join("lds");
    let mut yaml = format!(
        r#"node: {{id: switchyard-l4, cluster: switchyard}}
admin:
  address: {{socket_address: {{address: 127.0.0.1, port_value: 0}}}}
dynamic_resources:
  lds_config:
    path_config_source:
      path: {lds_file}
      watched_directory: {{path: {lds_dir}}}
static_resources:
  clusters:
"#,
        lds_file = lds.join("listeners.json").display(),
        lds_dir = lds.display(),
    );
    for (name, addr) in clusters {
        yaml.push_str(&crate::static_cluster(name, *addr));
    }
    yaml
}
