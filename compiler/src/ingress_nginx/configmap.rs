//! ROUTING.md §7.8: the controller's ConfigMap (`--ingress-nginx-configmap NAMESPACE/NAME`): the
//! routing keys read, the access-control keys of §9 kept (they protect every Ingress of the class),
//! every other key listed as not honoured.

use std::collections::BTreeMap;

use super::proxying::Proxying;
use crate::https::TlsRange;
use crate::nginx::size_bytes;

/// The ConfigMap keys that protect every Ingress of the class (ROUTING.md §9; [`super::access`]
/// makes them fields of each Ingress).
pub const ACCESS_KEYS: &[&str] = &[
    "global-auth-url",
    "whitelist-source-range",
    "denylist-source-range",
    "block-cidrs",
    "block-user-agents",
    "block-referers",
];

/// A comma-separated list of locations, blanks left out.
fn locations(value: &str) -> Vec<String> {
    (value.split(','))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The ConfigMap's routing settings, with ingress-nginx's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfig {
    /// `ssl-redirect` (default true).
    pub ssl_redirect: bool,
    /// `force-ssl-redirect` (default false).
    pub force_ssl_redirect: bool,
    /// `http-redirect-code` (default 308; ingress-nginx accepts 301, 302, 307 and 308).
    pub http_redirect_code: u16,
    /// `preserve-trailing-slash` (default false).
    pub preserve_trailing_slash: bool,
    /// `no-tls-redirect-locations` (default `/.well-known/acme-challenge`), split on `,`.
    pub no_tls_redirect_locations: Vec<String>,
    /// `ssl-protocols` (default `TLSv1.2 TLSv1.3`): the TLS range of every server (ROUTING.md §8.4).
    pub ssl_protocols: TlsRange,
    /// `hsts` (default true): `Strict-Transport-Security` on every HTTPS response (ROUTING.md §8.4).
    pub hsts: bool,
    /// `hsts-max-age` (default 31536000 seconds).
    pub hsts_max_age: u64,
    /// `hsts-include-subdomains` (default true).
    pub hsts_include_subdomains: bool,
    /// `hsts-preload` (default false).
    pub hsts_preload: bool,
    /// `proxy-connect-timeout` in seconds (default 5), in milliseconds: every Ingress's unless its
    /// annotation says otherwise.
    pub proxy_connect_timeout_ms: u32,
    /// `proxy-body-size` (default `1m`), in bytes, `None` for `0` (no limit): every Ingress's unless
    /// its annotation says otherwise.
    pub proxy_body_size: Option<u64>,
    /// The timeouts and retries (`proxy-read-timeout`, `proxy-send-timeout`, `proxy-next-upstream*`,
    /// `retry-non-idempotent`): every Ingress's unless its annotations say otherwise.
    pub proxying: Proxying,
    /// `limit-req-status-code` (default 503): the answer to a request over a rate limit.
    pub limit_req_status_code: u16,
    /// `limit-conn-status-code` (default 503): the answer to a request over `limit-connections`.
    pub limit_conn_status_code: u16,
    /// The access-control keys that are set (ROUTING.md §9, [`ACCESS_KEYS`]), key
    /// and value, in key order: they protect every Ingress of the class.
    pub access: Vec<(String, String)>,
    /// The global external authentication's other keys (`global-auth-method`, `-signin`, …),
    /// key and value: they go with `global-auth-url` ([`super::external_auth::read_global`]).
    pub global_auth: BTreeMap<String, String>,
    /// `no-auth-locations` (default `/.well-known/acme-challenge`), split on `,`: the locations
    /// whose path starts with one are authenticated by nothing (no `auth-url`, global or own, no
    /// basic authentication).
    pub no_auth_locations: Vec<String>,
    /// Keys that are not routing (or whose value is invalid, then the default stands), in order.
    pub not_honored: Vec<String>,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            ssl_redirect: true,
            force_ssl_redirect: false,
            http_redirect_code: 308,
            preserve_trailing_slash: false,
            no_tls_redirect_locations: vec!["/.well-known/acme-challenge".to_owned()],
            ssl_protocols: TlsRange::default(),
            hsts: true,
            hsts_max_age: 31_536_000,
            hsts_include_subdomains: true,
            hsts_preload: false,
            proxy_connect_timeout_ms: 5_000,
            proxy_body_size: Some(1 << 20),
            proxying: Proxying::default(),
            limit_req_status_code: 503,
            limit_conn_status_code: 503,
            access: Vec::new(),
            global_auth: BTreeMap::new(),
            no_auth_locations: vec!["/.well-known/acme-challenge".to_owned()],
            not_honored: Vec::new(),
        }
    }
}

impl ControllerConfig {
    /// Reads the ConfigMap's `data`.
    pub fn from_data(data: &BTreeMap<String, String>) -> ControllerConfig {
        let mut out = ControllerConfig::default();
        for (key, value) in data {
            let value = value.trim();
            if let Some(ok) = out.proxying.read_key(key, value) {
                if !ok {
                    out.not_honored.push(key.clone());
                }
                continue;
            }
            let ok = match key.as_str() {
                "ssl-redirect" => value.parse().map(|v| out.ssl_redirect = v).is_ok(),
                "force-ssl-redirect" => value.parse().map(|v| out.force_ssl_redirect = v).is_ok(),
                "preserve-trailing-slash" => value.parse().map(|v| out.preserve_trailing_slash = v).is_ok(),
                "ssl-protocols" => TlsRange::of_nginx(value).map(|r| out.ssl_protocols = r).is_some(),
                "hsts" => value.parse().map(|v| out.hsts = v).is_ok(),
                "hsts-max-age" => value.parse().map(|v| out.hsts_max_age = v).is_ok(),
                "hsts-include-subdomains" => value.parse().map(|v| out.hsts_include_subdomains = v).is_ok(),
                "hsts-preload" => value.parse().map(|v| out.hsts_preload = v).is_ok(),
                "proxy-connect-timeout" => seconds_ms(value).map(|v| out.proxy_connect_timeout_ms = v).is_some(),
                "proxy-body-size" => size_bytes(value).map(|v| out.proxy_body_size = v).is_some(),
                "limit-req-status-code" => status_code(value).map(|v| out.limit_req_status_code = v).is_some(),
                "limit-conn-status-code" => status_code(value).map(|v| out.limit_conn_status_code = v).is_some(),
                "http-redirect-code" => match value.parse() {
                    Ok(code @ (301 | 302 | 307 | 308)) => {
                        out.http_redirect_code = code;
                        true
                    }
                    _ => false,
                },
                "no-tls-redirect-locations" => {
                    out.no_tls_redirect_locations = locations(value);
                    true
                }
                "no-auth-locations" => {
                    out.no_auth_locations = locations(value);
                    true
                }
                key if key.starts_with("global-auth-") && !ACCESS_KEYS.contains(&key) => {
                    if !value.is_empty() {
                        out.global_auth.insert(key.to_owned(), value.to_owned());
                    }
                    true
                }
                key if ACCESS_KEYS.contains(&key) => {
                    if !value.is_empty() {
                        out.access.push((key.to_owned(), value.to_owned()));
                    }
                    true
                }
                _ => false,
            };
            if !ok {
                out.not_honored.push(key.clone());
            }
        }
        out
    }

    /// The warning that lists the keys not honoured (§7.8), naming the ConfigMap; `None` when all are.
    pub fn not_honored_warning(&self, namespace: &str, name: &str) -> Option<String> {
        (!self.not_honored.is_empty()).then(|| {
            format!(
                "ConfigMap {namespace}/{name}: not honoured (not routing, or an invalid value: the default stands): {}",
                self.not_honored.join(", ")
            )
        })
    }

    /// The `Strict-Transport-Security` value of every HTTPS response of ingress-nginx's servers
    /// (§8.4), as its `lua_ingress.lua` writes it; `None` with `hsts: "false"`.
    pub fn hsts_header(&self) -> Option<String> {
        self.hsts.then(|| {
            let mut value = format!("max-age={}", self.hsts_max_age);
            if self.hsts_include_subdomains {
                value.push_str("; includeSubDomains");
            }
            if self.hsts_preload {
                value.push_str("; preload");
            }
            value
        })
    }

    /// Whether a location's path is exempt from the HTTPS redirect (§7.7.6).
    pub fn exempt_from_tls_redirect(&self, path: &str) -> bool {
        self.no_tls_redirect_locations
            .iter()
            .any(|l| path.starts_with(l.as_str()))
    }
}

/// An HTTP status, 100 to 599.
fn status_code(value: &str) -> Option<u16> {
    value.trim().parse().ok().filter(|code| (100..=599).contains(code))
}

/// ingress-nginx's timeouts in seconds (an integer, as its annotation parser reads them), in
/// milliseconds; `None` for anything else or zero.
pub fn seconds_ms(value: &str) -> Option<u32> {
    let seconds: u32 = value.trim().parse().ok()?;
    seconds.checked_mul(1000).filter(|ms| *ms > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::https::TlsVersion;

    fn read(pairs: &[(&str, &str)]) -> ControllerConfig {
        ControllerConfig::from_data(&pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect())
    }

    #[test]
    fn defaults_are_ingress_nginxs() {
        let c = read(&[]);
        assert!(c.ssl_redirect && !c.force_ssl_redirect && !c.preserve_trailing_slash);
        assert_eq!(c.hsts_header().as_deref(), Some("max-age=31536000; includeSubDomains"));
        assert_eq!(c.http_redirect_code, 308);
        assert!(c.exempt_from_tls_redirect("/.well-known/acme-challenge/token"));
        assert!(!c.exempt_from_tls_redirect("/app"));
    }

    #[test]
    fn routing_keys_are_read() {
        let c = read(&[
            ("ssl-redirect", "false"),
            ("force-ssl-redirect", "true"),
            ("http-redirect-code", "301"),
            ("preserve-trailing-slash", "true"),
            ("no-tls-redirect-locations", "/a, /b"),
        ]);
        assert!(!c.ssl_redirect && c.force_ssl_redirect && c.preserve_trailing_slash);
        assert_eq!(c.http_redirect_code, 301);
        assert_eq!(c.no_tls_redirect_locations, ["/a", "/b"]);
        assert!(c.not_honored.is_empty());
    }

    #[test]
    fn access_control_keys_are_kept_not_listed_as_not_honoured() {
        let c = read(&[
            ("whitelist-source-range", "10.0.0.0/8"),
            ("block-user-agents", ""),
            ("gzip-level", "5"),
        ]);
        assert_eq!(
            c.access,
            [("whitelist-source-range".to_owned(), "10.0.0.0/8".to_owned())]
        );
        assert_eq!(c.not_honored, ["gzip-level"]);
    }

    #[test]
    fn keys_that_are_not_routing_are_not_honored() {
        let c = read(&[
            ("proxy-body-size", "8 m"),
            ("use-gzip", "true"),
            ("http-redirect-code", "399"),
        ]);
        assert_eq!(c.not_honored, ["http-redirect-code", "proxy-body-size", "use-gzip"]);
        assert_eq!(c.http_redirect_code, 308);
        assert_eq!(c.proxy_body_size, Some(1 << 20), "an invalid size: the default stands");
    }

    #[test]
    fn proxy_body_size_is_an_nginx_size_and_zero_is_no_limit() {
        assert_eq!(read(&[("proxy-body-size", "8m")]).proxy_body_size, Some(8 << 20));
        assert_eq!(read(&[("proxy-body-size", "0")]).proxy_body_size, None);
    }

    #[test]
    fn hsts_is_written_as_ingress_nginx_writes_it_and_off_with_hsts_false() {
        let data = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let custom = ControllerConfig::from_data(&data(&[
            ("hsts-max-age", "600"),
            ("hsts-include-subdomains", "false"),
            ("hsts-preload", "true"),
        ]));
        assert_eq!(custom.hsts_header().as_deref(), Some("max-age=600; preload"));
        assert!(custom.not_honored.is_empty(), "{:?}", custom.not_honored);
        let off = ControllerConfig::from_data(&data(&[("hsts", "false")]));
        assert_eq!(off.hsts_header(), None);
    }

    #[test]
    fn ssl_protocols_give_the_range_lowest_to_highest_listed() {
        let data = |v: &str| BTreeMap::from([("ssl-protocols".to_owned(), v.to_owned())]);
        let old = ControllerConfig::from_data(&data("TLSv1.3 TLSv1.1 TLSv1.2"));
        assert_eq!(
            (old.ssl_protocols.min, old.ssl_protocols.max),
            (TlsVersion::V1_1, TlsVersion::V1_3)
        );
        let none = ControllerConfig::from_data(&data("SSLv3"));
        assert_eq!(none.ssl_protocols, TlsRange::default());
        assert_eq!(
            none.not_honored,
            ["ssl-protocols"],
            "an invalid value: the default stands, said"
        );
    }
}
