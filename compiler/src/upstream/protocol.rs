//! How the gateway speaks to a backend: the upstream protocol each dialect asks for
//! (ingress-nginx's `backend-protocol`, HTTPProxy's `services[].protocol`, a VirtualServer
//! upstream's `tls.enable`), carried to the sidecar in the cluster name the filter picks.
//!
//! A backend with the default protocol keeps the template's name; another protocol is a variant
//! cluster of the same Service port, the template's name and `~` and the protocol's word
//! (`shop/api:443~tls`), so the rule names it and [`crate::upstream::plan`] finds the Service port
//! and the protocol again from the name alone.

use serde::Serialize;

/// What joins a template's name and a protocol's word in a variant cluster's name.
const VARIANT: char = '~';

/// The protocol the gateway speaks to a backend.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UpstreamProtocol {
    /// HTTP/1.1 in the clear: the default.
    #[default]
    Http,
    /// HTTP/2 in the clear (prior knowledge): ingress-nginx's `GRPC`, HTTPProxy's `h2c`.
    H2c,
    /// HTTP/1.1 over TLS, the backend's certificate not checked (ingress-nginx's `HTTPS` with
    /// `proxy-ssl-verify` off, its default; HTTPProxy's `tls`; a VirtualServer's `tls.enable`).
    Tls,
    /// HTTP/2 over TLS, its certificate not checked (ingress-nginx's `GRPCS`; HTTPProxy's `h2`).
    TlsH2,
}

impl UpstreamProtocol {
    /// Its word in a cluster's name.
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamProtocol::Http => "http",
            UpstreamProtocol::H2c => "h2c",
            UpstreamProtocol::Tls => "tls",
            UpstreamProtocol::TlsH2 => "tls-h2",
        }
    }

    /// The protocol of word `word`.
    pub fn named(word: &str) -> Option<UpstreamProtocol> {
        [
            UpstreamProtocol::Http,
            UpstreamProtocol::H2c,
            UpstreamProtocol::Tls,
            UpstreamProtocol::TlsH2,
        ]
        .into_iter()
        .find(|p| p.as_str() == word)
    }

    /// The name of the cluster of template name `base` spoken to with this protocol.
    pub fn cluster(self, base: String) -> String {
        match self {
            UpstreamProtocol::Http => base,
            other => format!("{base}{VARIANT}{}", other.as_str()),
        }
    }

    /// A cluster name's template name and protocol (the name itself and HTTP when it names no
    /// variant).
    pub fn of_cluster(name: &str) -> (&str, UpstreamProtocol) {
        (name.rsplit_once(VARIANT))
            .and_then(|(base, word)| Some((base, UpstreamProtocol::named(word)?)))
            .filter(|(_, protocol)| *protocol != UpstreamProtocol::Http)
            .unwrap_or((name, UpstreamProtocol::Http))
    }

    /// Whether it is TLS.
    pub fn tls(self) -> bool {
        matches!(self, UpstreamProtocol::Tls | UpstreamProtocol::TlsH2)
    }

    /// Whether it is HTTP/2.
    pub fn http2(self) -> bool {
        matches!(self, UpstreamProtocol::H2c | UpstreamProtocol::TlsH2)
    }
}

impl Serialize for UpstreamProtocol {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_protocol_keeps_the_templates_name_and_a_variant_names_its_protocol() {
        assert_eq!(UpstreamProtocol::Http.cluster("shop/web:80".into()), "shop/web:80");
        let name = UpstreamProtocol::TlsH2.cluster("shop/web:443".into());
        assert_eq!(name, "shop/web:443~tls-h2");
        assert_eq!(
            UpstreamProtocol::of_cluster(&name),
            ("shop/web:443", UpstreamProtocol::TlsH2)
        );
        assert_eq!(
            UpstreamProtocol::of_cluster("a~b:80"),
            ("a~b:80", UpstreamProtocol::Http),
            "no variant word"
        );
        assert_eq!(
            UpstreamProtocol::of_cluster("shop/web:80~http"),
            ("shop/web:80~http", UpstreamProtocol::Http)
        );
    }
}
