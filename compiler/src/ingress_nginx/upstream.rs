//! §7, the upstream side: the `proxy-ssl-*` annotations (the check of an HTTPS or GRPCS backend's
//! certificate), `load-balance`, and the affinities (`affinity: cookie` with `session-cookie-*`,
//! `upstream-hash-by`), read as ingress-nginx v1.15 reads them
//! (`internal/ingress/annotations/proxyssl`, `loadbalancing`, `sessionaffinity`,
//! `upstreamhashby`; `rootfs/etc/nginx/lua/balancer/sticky.lua`), into the parts of a
//! [`crate::upstream::variant::Variant`] they set and the key the filter hashes by. The protocol,
//! `proxy-connect-timeout` and `service-upstream` are read with the routing annotations
//! ([`super::annotations`]).

use std::collections::BTreeMap;

use switchyard_table::{Affinity, PathSpec};

use super::annotations::Problem;
use crate::https::{SecretRef, TlsRange};
use crate::status::Reason;
use crate::upstream::affinity::{nginx_hash, CookieAttributes};
use crate::upstream::variant::{Balance, Verify};

/// The affinity cookie's name without `session-cookie-name`.
pub const DEFAULT_COOKIE_NAME: &str = "INGRESSCOOKIE";

/// The name nginx checks a backend's certificate against, and sends as SNI, without
/// `proxy-ssl-name`: its `proxy_ssl_name` default, the `proxy_pass` host, which in ingress-nginx's
/// template is always `upstream_balancer`.
pub const DEFAULT_PROXY_SSL_NAME: &str = "upstream_balancer";

/// The annotations this module reads.
pub const READ: &[&str] = &[
    "proxy-ssl-secret",
    "proxy-ssl-verify",
    "proxy-ssl-verify-depth",
    "proxy-ssl-name",
    "proxy-ssl-server-name",
    "proxy-ssl-protocols",
    "load-balance",
    "affinity",
    "affinity-mode",
    "session-cookie-name",
    "session-cookie-path",
    "session-cookie-domain",
    "session-cookie-expires",
    "session-cookie-max-age",
    "session-cookie-samesite",
    "session-cookie-secure",
    "upstream-hash-by",
];

/// An Ingress's affinity: `affinity: cookie` (which wins, as ingress-nginx's sticky balancer
/// does), or `upstream-hash-by`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IngressAffinity {
    /// The cookie's name and attributes, its `Path` the location's when not given.
    Cookie(String, CookieAttributes),
    /// The hash key's parts.
    Hash(Affinity),
}

impl IngressAffinity {
    /// Reads the annotations (`mine`: name without prefix → value), listing invalid ones in
    /// `problems`.
    pub fn read(mine: &BTreeMap<&str, &str>, prefix: &str, problems: &mut Vec<Problem>) -> Option<IngressAffinity> {
        let mut invalid = |name: &str, why: String| {
            problems.push(Problem {
                name: name.to_owned(),
                reason: Reason::AnnotationInvalid,
                message: format!("{prefix}/{name}: {why}"),
            });
        };
        match mine.get("affinity").map(|v| v.trim()) {
            Some("cookie") => {}
            Some(other) => invalid("affinity", format!("{other:?} is not cookie; no affinity")),
            None => {
                let key = mine.get("upstream-hash-by")?;
                return match nginx_hash(key) {
                    Ok(parts) => Some(IngressAffinity::Hash(Affinity::Hash(parts))),
                    Err(why) => {
                        invalid("upstream-hash-by", format!("{why}; round robin stands"));
                        None
                    }
                };
            }
        }
        if let Some(mode) = mine.get("affinity-mode").map(|v| v.trim()) {
            if !matches!(mode, "balanced" | "persistent") {
                invalid(
                    "affinity-mode",
                    format!("{mode:?} is not balanced or persistent; balanced stands"),
                );
            }
        }
        let name = match mine.get("session-cookie-name").map(|v| v.trim()) {
            None => DEFAULT_COOKIE_NAME.to_owned(),
            Some(name) if switchyard_table::field::is_token(name) => name.to_owned(),
            Some(name) => {
                invalid(
                    "session-cookie-name",
                    format!("{name:?} is not a cookie name; {DEFAULT_COOKIE_NAME} stands"),
                );
                DEFAULT_COOKIE_NAME.to_owned()
            }
        };
        let mut seconds = |name: &str| {
            let value = mine.get(name)?.trim();
            let parsed = value.parse::<u64>().ok();
            if parsed.is_none() {
                invalid(name, format!("{value:?} is not a number of seconds; ignored"));
            }
            parsed
        };
        let max_age = seconds("session-cookie-max-age").or_else(|| seconds("session-cookie-expires"));
        let same_site = mine.get("session-cookie-samesite").and_then(|v| match v.trim() {
            same_site @ ("None" | "Lax" | "Strict") => Some(same_site.to_owned()),
            other => {
                invalid(
                    "session-cookie-samesite",
                    format!("{other:?} is not None, Lax or Strict; ignored"),
                );
                None
            }
        });
        let secure = mine.get("session-cookie-secure").is_some_and(|v| v.trim() == "true");
        let text = |name: &str| (mine.get(name).map(|v| v.trim().to_owned())).filter(|v| !v.is_empty());
        let attributes = CookieAttributes {
            path: text("session-cookie-path"),
            max_age,
            domain: text("session-cookie-domain"),
            // Browsers refuse `SameSite=None` without `Secure`.
            secure: secure || same_site.as_deref() == Some("None"),
            same_site,
            http_only: true,
        };
        Some(IngressAffinity::Cookie(name, attributes))
    }

    /// The affinity of a location matching `path`: the cookie's `Path` is the location's (`/` for a
    /// regex) unless `session-cookie-path` gave one.
    pub fn at(&self, path: &PathSpec) -> Affinity {
        match self {
            IngressAffinity::Hash(affinity) => affinity.clone(),
            IngressAffinity::Cookie(name, attributes) => {
                let mut attributes = attributes.clone();
                if attributes.path.is_none() {
                    let location = match path {
                        PathSpec::Prefix(p) | PathSpec::Exact(p) | PathSpec::SegmentPrefix(p) => p.as_str(),
                        PathSpec::Regex(_) => "/",
                    };
                    attributes.path = Some(location.to_owned());
                }
                attributes.affinity(name)
            }
        }
    }
}

/// The `proxy-ssl-*` annotations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxySsl {
    /// `proxy-ssl-secret`, `namespace/name`: the Secret whose `ca.crt` is trusted.
    pub secret: Option<SecretRef>,
    /// `proxy-ssl-verify: on`.
    pub verify: bool,
    /// `proxy-ssl-name`.
    pub name: Option<String>,
    /// `proxy-ssl-server-name: on`: the name is sent as SNI.
    pub server_name: bool,
    /// `proxy-ssl-verify-depth` (1).
    pub depth: u32,
    /// `proxy-ssl-protocols`.
    pub versions: Option<TlsRange>,
}

impl ProxySsl {
    /// Reads the annotations (`mine`: name without prefix → value), listing invalid ones in
    /// `problems`.
    pub fn read(mine: &BTreeMap<&str, &str>, prefix: &str, problems: &mut Vec<Problem>) -> ProxySsl {
        let mut invalid = |name: &str, why: String| {
            problems.push(Problem {
                name: name.to_owned(),
                reason: Reason::AnnotationInvalid,
                message: format!("{prefix}/{name}: {why}"),
            });
        };
        let on = |name: &str| mine.get(name).is_some_and(|v| v.trim().eq_ignore_ascii_case("on"));
        let secret = mine
            .get("proxy-ssl-secret")
            .and_then(|value| match value.trim().split_once('/') {
                Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() => Some(SecretRef {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                }),
                _ => {
                    invalid("proxy-ssl-secret", format!("{value:?} is not namespace/name; ignored"));
                    None
                }
            });
        let depth = match mine.get("proxy-ssl-verify-depth") {
            None => 1,
            Some(value) => value.trim().parse().unwrap_or_else(|_| {
                invalid("proxy-ssl-verify-depth", format!("{value:?} is not a number; 1 stands"));
                1
            }),
        };
        let versions = mine.get("proxy-ssl-protocols").and_then(|value| {
            let range = TlsRange::of_nginx(value);
            if range.is_none() {
                invalid(
                    "proxy-ssl-protocols",
                    format!("{value:?} names no TLS version; ignored"),
                );
            }
            range
        });
        ProxySsl {
            secret,
            verify: on("proxy-ssl-verify"),
            name: (mine.get("proxy-ssl-name").map(|v| v.trim().to_owned())).filter(|v| !v.is_empty()),
            server_name: on("proxy-ssl-server-name"),
            depth,
            versions,
        }
    }

    /// The check of the backend's certificate of an Ingress in `namespace`: `None` when
    /// `proxy-ssl-verify` is off (or absent), else the check, or why it cannot be made (no
    /// `proxy-ssl-secret`, or one in another namespace, which ingress-nginx refuses too).
    pub fn check(&self, namespace: &str) -> Option<Result<Verify, String>> {
        if !self.verify {
            return None;
        }
        let why = match &self.secret {
            None => {
                "proxy-ssl-verify \"on\" has no proxy-ssl-secret to check the backend's certificate with".to_owned()
            }
            Some(secret) if secret.namespace != namespace => format!(
                "proxy-ssl-secret {secret} is in another namespace, which ingress-nginx refuses \
                 (allow-cross-namespace-resources is off)"
            ),
            Some(secret) => {
                let name = self.name.clone().unwrap_or_else(|| DEFAULT_PROXY_SSL_NAME.to_owned());
                return Some(Ok(Verify {
                    ca: secret.clone(),
                    sni: self.server_name.then(|| name.clone()),
                    names: vec![name],
                    depth: Some(self.depth),
                    versions: self.versions,
                }));
            }
        };
        Some(Err(why))
    }
}

/// `load-balance`: `round_robin` (the default) or `ewma`, which Envoy's least request stands in
/// for (docs/routing.md, "The upstream side").
pub fn load_balance(mine: &BTreeMap<&str, &str>, prefix: &str, problems: &mut Vec<Problem>) -> Balance {
    match mine.get("load-balance").map(|v| v.trim()) {
        None | Some("round_robin") => Balance::RoundRobin,
        Some("ewma") => Balance::LeastRequest,
        Some(other) => {
            problems.push(Problem {
                name: "load-balance".to_owned(),
                reason: Reason::AnnotationInvalid,
                message: format!("{prefix}/load-balance: {other:?} is not round_robin or ewma; round_robin stands"),
            });
            Balance::RoundRobin
        }
    }
}
