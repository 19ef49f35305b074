//! How the gateway speaks to a backend, per rule: the protocol (ingress-nginx's `backend-protocol`,
//! HTTPProxy's `services[].protocol`, a VirtualServer upstream's `tls.enable`), the connect
//! timeout (ingress-nginx's `proxy-connect-timeout`, a VirtualServer upstream's `connect-timeout`),
//! the Service's own address (ingress-nginx's `service-upstream`) and the idle connection timeout
//! (HTTPProxy's `timeoutPolicy.idleConnection`), carried to the sidecar in the cluster name the
//! filter picks.
//!
//! A backend with the defaults keeps the template's name; any other setting makes a variant
//! cluster of the same Service port, named by the template's name, `~`, and the settings that
//! differ joined by `+` (`shop/api:443~tls`, `shop/api:443~tls-h2+connect=10000ms`), so the rule
//! names it and [`crate::upstream::plan`] finds the Service port and the settings again from the
//! name alone.

use serde::Serialize;

use crate::model::Options;

/// What joins a template's name and the settings in a variant cluster's name.
const VARIANT: char = '~';
/// What joins two settings.
const AND: char = '+';
/// The setting of a cluster whose endpoint is its Service's cluster IP.
const SERVICE_UPSTREAM: &str = "service-upstream";
/// The connect timeout every cluster has unless told otherwise: ingress-nginx's
/// `proxy-connect-timeout` default, 5 s.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u32 = 5_000;

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

/// How the gateway speaks to one backend: a cluster's settings beyond its Service port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Variant {
    /// The protocol.
    pub protocol: UpstreamProtocol,
    /// How long a connection to an endpoint may take, in milliseconds.
    pub connect_timeout_ms: u32,
    /// Whether the one endpoint is the Service's cluster IP and port, not its EndpointSlices'
    /// (ingress-nginx's `service-upstream`).
    pub service_upstream: bool,
    /// How long an idle upstream connection is kept, in milliseconds, `Some(0)` for ever
    /// (HTTPProxy's `timeoutPolicy.idleConnection`); `None`: Envoy's hour.
    pub idle_timeout_ms: Option<u32>,
}

impl Default for Variant {
    fn default() -> Self {
        Variant {
            protocol: UpstreamProtocol::Http,
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            service_upstream: false,
            idle_timeout_ms: None,
        }
    }
}

impl Variant {
    /// The defaults with `protocol`.
    pub fn speaking(protocol: UpstreamProtocol) -> Variant {
        Variant {
            protocol,
            ..Variant::default()
        }
    }

    /// The settings a gateway can speak with under `options`: these when it makes variant
    /// clusters ([`Options::upstream_variants`]), else the defaults.
    pub fn under(self, options: &Options) -> Variant {
        match options.upstream_variants {
            true => self,
            false => Variant::default(),
        }
    }

    /// The name of the cluster of template name `base` with these settings.
    pub fn cluster(self, base: String) -> String {
        let mut settings = Vec::new();
        if self.protocol != UpstreamProtocol::Http {
            settings.push(self.protocol.as_str().to_owned());
        }
        if self.connect_timeout_ms != DEFAULT_CONNECT_TIMEOUT_MS {
            settings.push(format!("connect={}ms", self.connect_timeout_ms));
        }
        if self.service_upstream {
            settings.push(SERVICE_UPSTREAM.to_owned());
        }
        if let Some(ms) = self.idle_timeout_ms {
            settings.push(format!("idle={ms}ms"));
        }
        match settings.is_empty() {
            true => base,
            false => format!("{base}{VARIANT}{}", settings.join(&AND.to_string())),
        }
    }

    /// A cluster name's template name and settings (the name itself and the defaults when it
    /// names no variant).
    pub fn of_cluster(name: &str) -> (&str, Variant) {
        (name.rsplit_once(VARIANT))
            .and_then(|(base, settings)| Some((base, Variant::parse(settings)?)))
            .filter(|(_, variant)| *variant != Variant::default())
            .unwrap_or((name, Variant::default()))
    }

    /// The settings of a variant's name, each given at most once; `None` when any is not one.
    fn parse(settings: &str) -> Option<Variant> {
        let mut variant = Variant::default();
        let (mut protocol, mut connect) = (false, false);
        for setting in settings.split(AND) {
            if setting == SERVICE_UPSTREAM {
                if std::mem::replace(&mut variant.service_upstream, true) {
                    return None;
                }
            } else if let Some(ms) = setting.strip_prefix("idle=").and_then(|v| v.strip_suffix("ms")) {
                if variant.idle_timeout_ms.replace(ms.parse().ok()?).is_some() {
                    return None;
                }
            } else if let Some(ms) = setting.strip_prefix("connect=").and_then(|v| v.strip_suffix("ms")) {
                variant.connect_timeout_ms = ms.parse().ok().filter(|_| !std::mem::replace(&mut connect, true))?;
            } else {
                variant.protocol =
                    UpstreamProtocol::named(setting).filter(|_| !std::mem::replace(&mut protocol, true))?;
            }
        }
        Some(variant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_keep_the_templates_name_and_a_variant_names_what_differs() {
        assert_eq!(Variant::default().cluster("shop/web:80".into()), "shop/web:80");
        let tls_h2 = Variant::speaking(UpstreamProtocol::TlsH2);
        let name = tls_h2.cluster("shop/web:443".into());
        assert_eq!(name, "shop/web:443~tls-h2");
        assert_eq!(Variant::of_cluster(&name), ("shop/web:443", tls_h2));
        let slow = Variant {
            connect_timeout_ms: 10_000,
            ..tls_h2
        };
        let name = slow.cluster("shop/web:443".into());
        assert_eq!(name, "shop/web:443~tls-h2+connect=10000ms");
        assert_eq!(Variant::of_cluster(&name), ("shop/web:443", slow));
        let direct = Variant {
            service_upstream: true,
            ..Variant::default()
        };
        let name = direct.cluster("shop/web:80".into());
        assert_eq!(name, "shop/web:80~service-upstream");
        assert_eq!(Variant::of_cluster(&name), ("shop/web:80", direct));
    }

    #[test]
    fn a_name_whose_suffix_is_no_variant_is_a_template_name() {
        for name in [
            "a~b:80",
            "shop/web:80~http",
            "shop/web:80~tls+tls",
            "shop/web:80~connect=5000ms",
            "shop/web:80~tls+x",
            "shop/web:80~service-upstream+service-upstream",
        ] {
            assert_eq!(Variant::of_cluster(name), (name, Variant::default()), "{name}");
        }
    }
}
