//! The HTTPS half of the end-to-end harness (ROUTING.md §8): a client that sends one request over
//! TLS with an SNI of its choosing (or none) and reports the certificate the gateway presented, and
//! test certificates with their Secret manifests.
//!
//! The client accepts any certificate whose handshake signature checks (it is what the tests look
//! at, not what they trust), with rustls on ring as everywhere in the harness.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::{send_on, Request, Response};

/// A certificate made for a test: its PEM chain and key, and its DER (what a client sees).
#[derive(Debug, Clone)]
pub struct TestCertificate {
    /// The chain, PEM.
    pub chain_pem: String,
    /// The key, PEM.
    pub key_pem: String,
    /// The leaf, DER.
    pub der: CertificateDer<'static>,
}

impl TestCertificate {
    /// A self-signed certificate for `names`.
    pub fn new(names: &[&str]) -> TestCertificate {
        let certified = rcgen::generate_simple_self_signed(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap_or_else(|e| panic!("certificate for {names:?}: {e}"));
        TestCertificate {
            chain_pem: certified.cert.pem(),
            key_pem: certified.signing_key.serialize_pem(),
            der: certified.cert.der().clone(),
        }
    }

    /// A `kubernetes.io/tls` Secret manifest holding it.
    pub fn secret(&self, namespace: &str, name: &str) -> String {
        let indent = |pem: &str| pem.lines().map(|l| format!("    {l}\n")).collect::<String>();
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {namespace}\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: |\n{}  tls.key: |\n{}",
            indent(&self.chain_pem),
            indent(&self.key_pem)
        )
    }
}

/// A certificate authority made for a test: its PEM certificate, and what signs the certificates
/// it issues.
pub struct TestCa {
    /// Its certificate, PEM.
    pub pem: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl TestCa {
    /// A CA named `name`.
    pub fn new(name: &str) -> TestCa {
        let key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("CA key: {e}"));
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let certificate = params.self_signed(&key).unwrap_or_else(|e| panic!("CA {name}: {e}"));
        TestCa {
            pem: certificate.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// A certificate for `names` that this CA signed (its chain: the leaf alone).
    pub fn issue(&self, names: &[&str]) -> TestCertificate {
        let key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("key: {e}"));
        let params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap_or_else(|e| panic!("certificate for {names:?}: {e}"));
        let certificate = params
            .signed_by(&key, &self.issuer)
            .unwrap_or_else(|e| panic!("certificate for {names:?}: {e}"));
        TestCertificate {
            chain_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
            der: certificate.der().clone(),
        }
    }

    /// An `Opaque` Secret manifest holding it as `ca.crt` (what a backend's certificate is checked
    /// against).
    pub fn secret(&self, namespace: &str, name: &str) -> String {
        let indent = self.pem.lines().map(|l| format!("    {l}\n")).collect::<String>();
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {namespace}\nstringData:\n  ca.crt: |\n{indent}"
        )
    }
}

/// What one request over TLS got.
#[derive(Debug)]
pub struct HttpsAnswer {
    /// The response.
    pub response: Response,
    /// The leaf the gateway presented.
    pub certificate: CertificateDer<'static>,
}

/// Sends `request` over TLS to `addr`, naming `sni` in the ClientHello (`None`: no SNI), and reads
/// the response. `Err` when the handshake fails or the connection closes.
pub fn https_send(addr: SocketAddr, sni: Option<&str>, request: &Request) -> Result<HttpsAnswer, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    // rustls sends no SNI for an IP address.
    let name = match sni {
        Some(host) => ServerName::try_from(host.to_owned()).map_err(|e| format!("{host}: {e}"))?,
        None => ServerName::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST).into()),
    };
    let connection = rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    let stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let mut tls = rustls::StreamOwned::new(connection, stream);
    while tls.conn.is_handshaking() {
        tls.conn
            .complete_io(&mut tls.sock)
            .map_err(|e| format!("TLS handshake with {addr} as {sni:?}: {e}"))?;
    }
    let certificate = (tls.conn.peer_certificates())
        .and_then(|chain| chain.first().cloned())
        .ok_or("no server certificate")?;
    let response = send_on(&mut tls, request).map_err(|e| format!("request over TLS as {sni:?}: {e}"))?;
    Ok(HttpsAnswer { response, certificate })
}

/// Accepts the server's certificate, checking only the handshake's signatures.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
