//! A Secret's certificate, read and checked (ROUTING.md §8.2): `tls.crt` a PEM chain, leaf first;
//! `tls.key` one private key matching the leaf. What the HTTPS stage keeps of it is public: the
//! leaf's SHA-256, its names and its validity. The key is parsed only to compare its public half
//! with the leaf's, and is never kept.

use std::fmt;

use rustls::sign::SigningKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::objects::secret::{Secret, CERTIFICATE, PRIVATE_KEY};

/// Seconds in a day.
const DAY: i64 = 24 * 60 * 60;
/// Under this many days to expiry, a certificate is reported `CertificateExpiresSoon`
/// (ingress-nginx's `createServers` warns at 10 days).
pub const EXPIRES_SOON_DAYS: i64 = 10;

/// A usable certificate: what is public about its leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Certificate {
    /// The leaf's SHA-256, in lowercase hex: the identity the filter compares (§8.1.5).
    pub fingerprint: String,
    /// The DNS names it covers: its `subjectAltName` DNS entries, or its subject's CN when it has
    /// none (as ingress-nginx reads a leaf), lowercased.
    pub names: Vec<String>,
    /// `notAfter`, in seconds since the epoch.
    pub not_after: i64,
    /// How many certificates the chain holds (the leaf first).
    pub chain_length: usize,
}

/// Why a Secret's certificate cannot be served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unusable {
    /// Its type is not one the resource's kind accepts.
    WrongType {
        /// Its type.
        found: String,
        /// The types accepted.
        accepted: &'static [&'static str],
    },
    /// An entry is missing.
    Missing(&'static str),
    /// `tls.crt` holds no PEM certificate, or one that does not parse.
    Chain(String),
    /// `tls.key` holds no private key, or one that does not parse.
    Key(String),
    /// The key is not the leaf's.
    KeyMismatch,
}

impl fmt::Display for Unusable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unusable::WrongType { found, accepted } => {
                write!(f, "its type is {found}, not {}", accepted.join(" or "))
            }
            Unusable::Missing(entry) => write!(f, "it has no {entry}"),
            Unusable::Chain(why) => write!(f, "its {CERTIFICATE} is not a PEM certificate chain: {why}"),
            Unusable::Key(why) => write!(f, "its {PRIVATE_KEY} is not a PEM private key: {why}"),
            Unusable::KeyMismatch => write!(f, "its {PRIVATE_KEY} is not the key of the leaf certificate"),
        }
    }
}

/// How close a certificate is to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// More than [`EXPIRES_SOON_DAYS`] left.
    Fine,
    /// Fewer days left than [`EXPIRES_SOON_DAYS`]; the whole days left.
    Soon(i64),
    /// Past `notAfter`.
    Expired,
}

impl Certificate {
    /// Reads and checks `secret`'s certificate, given the types its kind accepts.
    pub fn of_secret(secret: &Secret, accepted: &'static [&'static str]) -> Result<Certificate, Unusable> {
        if !accepted.contains(&secret.type_name()) {
            return Err(Unusable::WrongType {
                found: secret.type_name().to_owned(),
                accepted,
            });
        }
        let chain = secret.entry(CERTIFICATE).ok_or(Unusable::Missing(CERTIFICATE))?;
        let key = secret.entry(PRIVATE_KEY).ok_or(Unusable::Missing(PRIVATE_KEY))?;
        Certificate::read(chain, key)
    }

    /// Reads a PEM chain (leaf first) and the PEM key that must match its leaf.
    pub fn read(chain_pem: &[u8], key_pem: &[u8]) -> Result<Certificate, Unusable> {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain_pem)
            .collect::<Result<_, _>>()
            .map_err(|e| Unusable::Chain(e.to_string()))?;
        let leaf = chain
            .first()
            .ok_or_else(|| Unusable::Chain("no CERTIFICATE block".to_owned()))?;
        for der in &chain {
            X509Certificate::from_der(der).map_err(|e| Unusable::Chain(e.to_string()))?;
        }
        let (_, parsed) = X509Certificate::from_der(leaf).map_err(|e| Unusable::Chain(e.to_string()))?;
        let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| Unusable::Key(e.to_string()))?;
        let signer = rustls::crypto::ring::sign::any_supported_type(&key).map_err(|e| Unusable::Key(e.to_string()))?;
        if !key_matches(signer.as_ref(), parsed.public_key().raw) {
            return Err(Unusable::KeyMismatch);
        }
        Ok(Certificate {
            fingerprint: hex(ring::digest::digest(&ring::digest::SHA256, leaf).as_ref()),
            names: names(&parsed),
            not_after: parsed.validity().not_after.timestamp(),
            chain_length: chain.len(),
        })
    }

    /// Whether it covers `host` (ROUTING.md §8.4: SAN, else CN): a name equal to the host, or a
    /// `*.` name one label above it. A wildcard host is covered by the same wildcard name.
    pub fn covers(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.names.iter().any(|name| {
            *name == host
                || name.strip_prefix("*.").is_some_and(|parent| {
                    host.split_once('.')
                        .is_some_and(|(label, rest)| rest == parent && !label.is_empty() && label != "*")
                })
        })
    }

    /// How close it is to its end at `now` (seconds since the epoch).
    pub fn expiry(&self, now: i64) -> Expiry {
        let left = self.not_after - now;
        match left {
            _ if left <= 0 => Expiry::Expired,
            _ if left < EXPIRES_SOON_DAYS * DAY => Expiry::Soon(left / DAY),
            _ => Expiry::Fine,
        }
    }
}

/// Whether the signing key's public half is the leaf's `subjectPublicKeyInfo`.
fn key_matches(signer: &dyn SigningKey, leaf_spki: &[u8]) -> bool {
    signer.public_key().is_some_and(|spki| spki.as_ref() == leaf_spki)
}

/// The leaf's DNS names: its SAN DNS entries, else its CN.
fn names(leaf: &X509Certificate<'_>) -> Vec<String> {
    let sans: Vec<String> = match leaf.subject_alternative_name() {
        Ok(Some(ext)) => (ext.value.general_names.iter())
            .filter_map(|n| match n {
                GeneralName::DNSName(d) => Some(d.to_ascii_lowercase()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    if !sans.is_empty() {
        return sans;
    }
    (leaf.subject().iter_common_name())
        .filter_map(|cn| cn.as_str().ok())
        .map(str::to_ascii_lowercase)
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::objects::secret::TLS_TYPE;

    /// A self-signed certificate for `names`, valid from `not_before` to `not_after` (seconds
    /// since the epoch): (chain PEM, key PEM).
    pub fn self_signed(names: &[&str], not_after: i64) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = time_of(not_after);
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn time_of(seconds: i64) -> time::OffsetDateTime {
        time::OffsetDateTime::from_unix_timestamp(seconds).unwrap()
    }

    pub const NOW: i64 = 1_800_000_000;
    pub const YEAR: i64 = 365 * DAY;

    #[test]
    fn a_chain_and_its_key_are_usable_and_name_the_leafs_hosts() {
        let (chain, key) = self_signed(&["shop.example.com", "*.shop.example.com"], NOW + YEAR);
        let cert = Certificate::read(chain.as_bytes(), key.as_bytes()).unwrap();
        assert_eq!(cert.names, ["shop.example.com", "*.shop.example.com"]);
        assert_eq!(cert.fingerprint.len(), 64);
        assert_eq!(cert.chain_length, 1);
        assert_eq!(cert.expiry(NOW), Expiry::Fine);
    }

    #[test]
    fn a_key_that_is_not_the_leafs_is_unusable() {
        let (chain, _) = self_signed(&["a.example.com"], NOW + YEAR);
        let (_, other_key) = self_signed(&["a.example.com"], NOW + YEAR);
        assert_eq!(
            Certificate::read(chain.as_bytes(), other_key.as_bytes()),
            Err(Unusable::KeyMismatch)
        );
    }

    #[test]
    fn a_chain_that_is_not_pem_or_a_key_that_is_not_pem_is_unusable() {
        let (chain, key) = self_signed(&["a.example.com"], NOW + YEAR);
        assert!(matches!(
            Certificate::read(b"hello", key.as_bytes()),
            Err(Unusable::Chain(_))
        ));
        assert!(matches!(
            Certificate::read(chain.as_bytes(), b"hello"),
            Err(Unusable::Key(_))
        ));
        let garbled = chain.replace("MII", "MIX");
        assert!(matches!(
            Certificate::read(garbled.as_bytes(), key.as_bytes()),
            Err(Unusable::Chain(_))
        ));
    }

    #[test]
    fn a_secret_of_a_type_its_kind_does_not_accept_is_unusable() {
        let (chain, key) = self_signed(&["a.example.com"], NOW + YEAR);
        let mut secret = Secret::default();
        secret
            .data
            .insert(CERTIFICATE.into(), k8s_openapi::ByteString(chain.into_bytes()));
        secret
            .data
            .insert(PRIVATE_KEY.into(), k8s_openapi::ByteString(key.into_bytes()));
        assert!(Certificate::of_secret(&secret, &["Opaque", TLS_TYPE]).is_ok());
        let err = Certificate::of_secret(&secret, &[TLS_TYPE]).unwrap_err();
        assert_eq!(err.to_string(), "its type is Opaque, not kubernetes.io/tls");
        secret.data.remove(PRIVATE_KEY);
        assert_eq!(
            Certificate::of_secret(&secret, &["Opaque"]),
            Err(Unusable::Missing(PRIVATE_KEY))
        );
    }

    #[test]
    fn a_wildcard_name_covers_one_label_only() {
        let cert = Certificate {
            fingerprint: String::new(),
            names: vec!["*.example.com".into(), "example.org".into()],
            not_after: 0,
            chain_length: 1,
        };
        assert!(cert.covers("a.example.com") && cert.covers("A.Example.com") && cert.covers("example.org"));
        assert!(!cert.covers("a.b.example.com") && !cert.covers("example.com") && !cert.covers("x.example.org"));
        assert!(
            cert.covers("*.example.com"),
            "a wildcard host is covered by the same wildcard name"
        );
    }

    #[test]
    fn expiry_is_reported_ten_days_ahead_and_after_the_end() {
        let (chain, key) = self_signed(&["a.example.com"], NOW + 3 * DAY + 60);
        let cert = Certificate::read(chain.as_bytes(), key.as_bytes()).unwrap();
        assert_eq!(cert.expiry(NOW), Expiry::Soon(3));
        assert_eq!(cert.expiry(NOW + 4 * DAY), Expiry::Expired);
        assert_eq!(cert.expiry(NOW - 30 * DAY), Expiry::Fine);
    }

    #[test]
    fn a_name_without_sans_is_read_from_the_common_name() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "Legacy.Example.com");
        let cert = params.self_signed(&key).unwrap();
        let read = Certificate::read(cert.pem().as_bytes(), key.serialize_pem().as_bytes()).unwrap();
        assert_eq!(read.names, ["legacy.example.com"]);
    }
}
