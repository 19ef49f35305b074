//! §7, the upstream side: the `proxy-ssl-*` annotations (the check of an HTTPS or GRPCS backend's
//! certificate) and `load-balance`, read as ingress-nginx v1.15 reads them
//! (`internal/ingress/annotations/proxyssl`, `loadbalancing`), into the parts of a [`Variant`]
//! they set. The protocol, `proxy-connect-timeout` and `service-upstream` are read with the
//! routing annotations ([`super::annotations`]).

use std::collections::BTreeMap;

use super::annotations::Problem;
use crate::https::{SecretRef, TlsRange};
use crate::status::Reason;
use crate::upstream::variant::{Balance, Verify};

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
];

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
