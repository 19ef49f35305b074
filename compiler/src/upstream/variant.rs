//! How the gateway speaks to a backend, per rule: the protocol (ingress-nginx's `backend-protocol`,
//! HTTPProxy's `services[].protocol`, a VirtualServer upstream's `tls.enable`), the check of the
//! backend's certificate (ingress-nginx's `proxy-ssl-*`, HTTPProxy's `services[].validation`), the
//! connect timeout (ingress-nginx's `proxy-connect-timeout`, a VirtualServer upstream's
//! `connect-timeout`), the Service's own address (ingress-nginx's `service-upstream`), the idle
//! connection timeout (HTTPProxy's `timeoutPolicy.idleConnection`), the load balancer
//! (ingress-nginx's `load-balance`, affinity and `upstream-hash-by`; HTTPProxy's
//! `loadBalancerPolicy`; a VirtualServer upstream's `lb-method`) and the active health check
//! (HTTPProxy's `healthCheckPolicy`, a VirtualServer upstream's `healthCheck`), carried to the
//! sidecar in the cluster name the filter picks.
//!
//! A backend with the defaults keeps the template's name; any other setting makes a variant
//! cluster of the same Service port, named by the template's name, `~`, and the settings that
//! differ joined by `+` (`shop/api:443~tls`, `shop/api:443~tls-h2+connect=10000ms`,
//! `shop/api:443~tls+ca=shop/api-ca+san=api.shop`), so the rule names it and
//! [`crate::upstream::plan`] finds the Service port and the settings again from the name alone.
//! A value that could hold `+`, `,` or `%` (a health check's path) has them percent-encoded.

use serde::Serialize;

use crate::https::{SecretRef, TlsRange, TlsVersion};
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
    /// HTTP/1.1 over TLS, the backend's certificate checked only with a [`Verify`]
    /// (ingress-nginx's `HTTPS`; HTTPProxy's `tls`; a VirtualServer's `tls.enable`).
    Tls,
    /// HTTP/2 over TLS, the certificate checked only with a [`Verify`] (ingress-nginx's `GRPCS`;
    /// HTTPProxy's `h2`).
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
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Variant {
    /// The protocol.
    pub protocol: UpstreamProtocol,
    /// The check of a TLS backend's certificate; `None`: not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<Verify>,
    /// How long a connection to an endpoint may take, in milliseconds.
    pub connect_timeout_ms: u32,
    /// Whether the one endpoint is the Service's cluster IP and port, not its EndpointSlices'
    /// (ingress-nginx's `service-upstream`).
    pub service_upstream: bool,
    /// How long an idle upstream connection is kept, in milliseconds, `Some(0)` for ever
    /// (HTTPProxy's `timeoutPolicy.idleConnection`); `None`: Envoy's hour.
    pub idle_timeout_ms: Option<u32>,
    /// How an endpoint is picked.
    pub balance: Balance,
    /// The active health check of the endpoints; `None`: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheck>,
}

/// How a TLS backend's certificate is checked.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Verify {
    /// The Secret whose `ca.crt` holds the trusted certificate authorities.
    pub ca: SecretRef,
    /// The names one of which the certificate must carry (as a DNS subject alternative name);
    /// empty: the chain alone is checked.
    pub names: Vec<String>,
    /// The server name sent in the handshake (SNI); `None`: none.
    pub sni: Option<String>,
    /// How many certificate authorities may stand between the certificate and a trusted one
    /// (nginx's `proxy_ssl_verify_depth`); `None`: Envoy's limit.
    pub depth: Option<u32>,
    /// The TLS versions offered; `None`: Envoy's.
    pub versions: Option<TlsRange>,
}

/// How an endpoint is picked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Balance {
    /// In turn: the default (ingress-nginx's `round_robin`, Contour's `RoundRobin`).
    #[default]
    RoundRobin,
    /// The one with fewer requests in flight of two picked at random (ingress-nginx's `ewma`,
    /// Contour's `WeightedLeastRequest`, NGINX's `least_conn` and `random two least_conn`).
    LeastRequest,
    /// At random (Contour's `Random`, NGINX's `random`).
    Random,
    /// By a hash of the request (the filter's `x-switchyard-hash` header, else the client's
    /// address), on a ring so that a key keeps its endpoint while the endpoints stay: cookie
    /// affinity and `upstream-hash-by`, Contour's `Cookie` and `RequestHash`, NGINX's `hash` and
    /// `ip_hash`.
    RingHash,
}

impl Balance {
    /// Its word in a cluster's name (`lb=…`).
    pub fn as_str(self) -> &'static str {
        match self {
            Balance::RoundRobin => "round-robin",
            Balance::LeastRequest => "least-request",
            Balance::Random => "random",
            Balance::RingHash => "ring-hash",
        }
    }

    fn named(word: &str) -> Option<Balance> {
        [Balance::LeastRequest, Balance::Random, Balance::RingHash]
            .into_iter()
            .find(|b| b.as_str() == word)
    }

    /// Envoy's `lb_policy`.
    pub fn envoy(self) -> &'static str {
        match self {
            Balance::RoundRobin => "ROUND_ROBIN",
            Balance::LeastRequest => "LEAST_REQUEST",
            Balance::Random => "RANDOM",
            Balance::RingHash => "RING_HASH",
        }
    }
}

impl Serialize for Balance {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// An active HTTP health check: an endpoint failing `unhealthy` checks in a row is taken out until
/// it passes `healthy` in a row.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct HealthCheck {
    /// The path asked for.
    pub path: String,
    /// The `Host` sent; `None`: the cluster's name, as Envoy sends it.
    pub host: Option<String>,
    /// Between two checks, in milliseconds.
    pub interval_ms: u32,
    /// How long a check may take, in milliseconds.
    pub timeout_ms: u32,
    /// Failed checks in a row that take an endpoint out.
    pub unhealthy: u32,
    /// Passed checks in a row that put it back.
    pub healthy: u32,
}

impl HealthCheck {
    /// A manifest's count or number of seconds (`field`, for the message): `default` when absent,
    /// else a positive number that fits a `u32`.
    pub fn positive(value: Option<i64>, default: u32, field: &str) -> Result<u32, String> {
        match value {
            None => Ok(default),
            Some(n) => (u32::try_from(n).ok().filter(|n| *n > 0))
                .ok_or_else(|| format!("{field} {n} is not a positive number")),
        }
    }
}

impl Default for Variant {
    fn default() -> Self {
        Variant {
            protocol: UpstreamProtocol::Http,
            verify: None,
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            service_upstream: false,
            idle_timeout_ms: None,
            balance: Balance::RoundRobin,
            health_check: None,
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
    pub fn cluster(&self, base: String) -> String {
        let settings = self.settings();
        match settings.is_empty() {
            true => base,
            false => format!("{base}{VARIANT}{}", settings.join(&AND.to_string())),
        }
    }

    /// The settings that differ from the defaults, as words of a cluster's name, in a fixed order.
    fn settings(&self) -> Vec<String> {
        let mut settings = Vec::new();
        if self.protocol != UpstreamProtocol::Http {
            settings.push(self.protocol.as_str().to_owned());
        }
        if let Some(verify) = &self.verify {
            settings.push(format!("ca={}", verify.ca));
            settings.extend(verify.names.iter().map(|name| format!("san={}", escape(name))));
            settings.extend(verify.sni.iter().map(|sni| format!("sni={}", escape(sni))));
            settings.extend(verify.depth.iter().map(|depth| format!("depth={depth}")));
            let versions = verify.versions.iter();
            settings.extend(versions.map(|v| format!("tls={}-{}", v.min.as_str(), v.max.as_str())));
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
        if self.balance != Balance::RoundRobin {
            settings.push(format!("lb={}", self.balance.as_str()));
        }
        if let Some(check) = &self.health_check {
            let mut words = vec![
                escape(&check.path),
                format!("{}ms", check.interval_ms),
                format!("{}ms", check.timeout_ms),
                check.unhealthy.to_string(),
                check.healthy.to_string(),
            ];
            words.extend(check.host.iter().map(|host| escape(host)));
            settings.push(format!("hc={}", words.join(",")));
        }
        settings
    }

    /// A cluster name's template name and settings (the name itself and the defaults when it
    /// names no variant).
    pub fn of_cluster(name: &str) -> (&str, Variant) {
        (name.rsplit_once(VARIANT))
            .and_then(|(base, settings)| Some((base, Variant::parse(settings)?)))
            .filter(|(_, variant)| *variant != Variant::default())
            .unwrap_or((name, Variant::default()))
    }

    /// The settings of a variant's name; `None` when any is not one, or the name is not the one
    /// these settings make (a setting twice, out of order, or a default written out).
    fn parse(settings: &str) -> Option<Variant> {
        let mut variant = Variant::default();
        for setting in settings.split(AND) {
            variant.read(setting)?;
        }
        (variant.settings().join(&AND.to_string()) == settings).then_some(variant)
    }

    /// Takes one word of a variant's name.
    fn read(&mut self, setting: &str) -> Option<()> {
        let Some((key, value)) = setting.split_once('=') else {
            match setting {
                SERVICE_UPSTREAM => self.service_upstream = true,
                protocol => self.protocol = UpstreamProtocol::named(protocol)?,
            }
            return Some(());
        };
        let millis = |value: &str| value.strip_suffix("ms")?.parse::<u32>().ok();
        match key {
            "ca" => {
                let (namespace, name) = value.split_once('/')?;
                self.verify = Some(Verify {
                    ca: SecretRef {
                        namespace: namespace.to_owned(),
                        name: name.to_owned(),
                    },
                    names: Vec::new(),
                    sni: None,
                    depth: None,
                    versions: None,
                });
            }
            "san" => self.verify.as_mut()?.names.push(unescape(value)?),
            "sni" => self.verify.as_mut()?.sni = Some(unescape(value)?),
            "depth" => self.verify.as_mut()?.depth = Some(value.parse().ok()?),
            "tls" => {
                let (min, max) = value.split_once('-')?;
                let (min, max) = (TlsVersion::named(min)?, TlsVersion::named(max)?);
                self.verify.as_mut()?.versions = Some(TlsRange { min, max });
            }
            "connect" => self.connect_timeout_ms = millis(value)?,
            "idle" => self.idle_timeout_ms = Some(millis(value)?),
            "lb" => self.balance = Balance::named(value)?,
            "hc" => {
                let words: Vec<&str> = value.split(',').collect();
                let [path, interval, timeout, unhealthy, healthy, host @ ..] = words.as_slice() else {
                    return None;
                };
                self.health_check = Some(HealthCheck {
                    path: unescape(path)?,
                    host: match host {
                        [] => None,
                        [host] => Some(unescape(host)?),
                        _ => return None,
                    },
                    interval_ms: millis(interval)?,
                    timeout_ms: millis(timeout)?,
                    unhealthy: unhealthy.parse().ok()?,
                    healthy: healthy.parse().ok()?,
                });
            }
            _ => return None,
        }
        Some(())
    }
}

/// `value` with the characters that part a name's settings (`+`, `,`, `~`) and `%` percent-encoded.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '%' | '+' | ',' | '~' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// [`escape`] undone; `None` for a `%` not followed by two hex digits.
fn unescape(value: &str) -> Option<String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let hex = rest.get(at + 1..at + 3)?;
        out.push(char::from(u8::from_str_radix(hex, 16).ok()?));
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Some(out)
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
        assert_eq!(Variant::of_cluster(&name), ("shop/web:443", tls_h2.clone()));
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
    fn every_setting_survives_its_cluster_name() {
        let all = Variant {
            protocol: UpstreamProtocol::Tls,
            verify: Some(Verify {
                ca: SecretRef {
                    namespace: "shop".into(),
                    name: "api-ca".into(),
                },
                names: vec!["api.shop".into(), "api.shop.svc".into()],
                sni: Some("api.shop".into()),
                depth: Some(2),
                versions: Some(TlsRange {
                    min: TlsVersion::V1_2,
                    max: TlsVersion::V1_3,
                }),
            }),
            connect_timeout_ms: 1_500,
            service_upstream: false,
            idle_timeout_ms: Some(0),
            balance: Balance::RingHash,
            health_check: Some(HealthCheck {
                path: "/health,z+%~".into(),
                host: Some("probe.shop".into()),
                interval_ms: 5_000,
                timeout_ms: 2_000,
                unhealthy: 3,
                healthy: 2,
            }),
        };
        let name = all.cluster("shop/api:443".into());
        assert_eq!(
            name,
            "shop/api:443~tls+ca=shop/api-ca+san=api.shop+san=api.shop.svc+sni=api.shop+depth=2+tls=1.2-1.3\
             +connect=1500ms+idle=0ms+lb=ring-hash+hc=/health%2Cz%2B%25%7E,5000ms,2000ms,3,2,probe.shop"
        );
        assert_eq!(Variant::of_cluster(&name), ("shop/api:443", all));
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
            "shop/web:80~san=a",
            "shop/web:80~lb=round-robin",
            "shop/web:80~lb=random+tls",
            "shop/web:80~hc=/,1ms,1ms,1",
            "shop/web:80~tls+ca=shop/ca+san=%zz",
        ] {
            assert_eq!(Variant::of_cluster(name), (name, Variant::default()), "{name}");
        }
    }
}
