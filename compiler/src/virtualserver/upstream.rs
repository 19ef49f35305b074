//! A VirtualServer upstream's settings beyond its Service port, read as NGINX reads them, into the
//! [`Variant`] of its cluster: `tls.enable`, `connect-timeout`, `lb-method`, `healthCheck` and
//! `sessionCookie`, with the affinity the last two key requests by. An invalid value is the
//! VirtualServer's fault, as NGINX's validation makes it.

use switchyard_table::{Affinity, HashPart};

use super::scope::Fault;
use crate::nginx::time_ms;
use crate::objects::nginx::{SessionCookie, Upstream, UpstreamHealthCheck};
use crate::upstream::affinity::{nginx_hash, CookieAttributes};
use crate::upstream::variant::{Balance, HealthCheck, UpstreamProtocol, Variant, DEFAULT_CONNECT_TIMEOUT_MS};

/// How Envoy speaks to an upstream: over TLS with `tls.enable` (NGINX checks no certificate unless
/// told to), else HTTP/1.1 in the clear; within `connect-timeout` when given (else the clusters'
/// 5 s, not NGINX's 60 s: docs/routing.md, "The upstream side"); by its `lb-method`; checked by
/// its `healthCheck`; with the key its `sessionCookie` or hashing `lb-method` makes.
pub(super) fn upstream_variant(upstream: &Upstream, at: &str) -> Result<(Variant, Option<Affinity>), Fault> {
    let invalid = |why: String| Fault::Invalid(format!("{at}: upstream {:?}: {why}", upstream.name));
    let protocol = match upstream.tls.as_ref().is_some_and(|tls| tls.enable) {
        true => UpstreamProtocol::Tls,
        false => UpstreamProtocol::Http,
    };
    let connect_timeout_ms = match &upstream.connect_timeout {
        None => DEFAULT_CONNECT_TIMEOUT_MS,
        Some(time) => time_ms(time).ok_or_else(|| invalid(format!("connect-timeout {time:?} is not an nginx time")))?,
    };
    let (mut balance, mut affinity) = match upstream.lb_method.as_deref() {
        None => (Balance::RoundRobin, None),
        Some(method) => lb_method(method).map_err(|why| invalid(format!("lb-method {method:?}: {why}")))?,
    };
    if let Some(cookie) = upstream.session_cookie.as_ref().filter(|c| c.enable) {
        let cookie = session_cookie(cookie).map_err(|why| invalid(format!("sessionCookie.{why}")))?;
        (balance, affinity) = (Balance::RingHash, Some(cookie));
    }
    let health_check = match &upstream.health_check {
        Some(check) if check.enable => Some(health_check(check).map_err(|why| invalid(format!("healthCheck.{why}")))?),
        _ => None,
    };
    let variant = Variant {
        protocol,
        connect_timeout_ms,
        balance,
        health_check,
        ..Variant::default()
    };
    Ok((variant, affinity))
}

/// NGINX's load-balancing methods as Envoy's: `least_conn`, `least_time` and the `random two`
/// forms pick the less busy of two (Envoy's least request); `ip_hash` and `hash` hash on a ring,
/// by the client's address or the key's variables.
fn lb_method(method: &str) -> Result<(Balance, Option<Affinity>), String> {
    let words: Vec<&str> = method.split_whitespace().collect();
    let plain = |balance| Ok((balance, None));
    match words.as_slice() {
        ["round_robin"] => plain(Balance::RoundRobin),
        ["least_conn"] | ["least_time", ..] => plain(Balance::LeastRequest),
        ["random"] => plain(Balance::Random),
        ["random", "two"]
        | ["random", "two", "least_conn"]
        | ["random", "two", "least_time=header" | "least_time=last_byte"] => plain(Balance::LeastRequest),
        ["ip_hash"] => Ok((Balance::RingHash, Some(Affinity::Hash(vec![HashPart::ClientAddress])))),
        ["hash", key] | ["hash", key, "consistent"] => Ok((Balance::RingHash, Some(Affinity::Hash(nginx_hash(key)?)))),
        _ => Err("not a method NGINX has".to_owned()),
    }
}

/// NGINX Plus's `sticky cookie`: `Path`, `Max-Age` (from `expires`; `max`: ten years, as NGINX's
/// `expires max`), `Domain`, `SameSite`, `Secure`, `HttpOnly` as the upstream asks.
fn session_cookie(cookie: &SessionCookie) -> Result<Affinity, String> {
    if !switchyard_table::field::is_token(&cookie.name) {
        return Err(format!("name {:?} is not a cookie name", cookie.name));
    }
    let max_age = match cookie.expires.as_deref().map(str::trim) {
        None => None,
        Some("max") => Some(315_360_000),
        Some(time) => {
            let ms = time_ms(time).ok_or_else(|| format!("expires {time:?} is not an nginx time"))?;
            Some(u64::from(ms / 1000))
        }
    };
    let same_site = match cookie.samesite.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None => None,
        Some("strict") => Some("Strict"),
        Some("lax") => Some("Lax"),
        Some("none") => Some("None"),
        Some(other) => return Err(format!("samesite {other:?} is not strict, lax or none")),
    };
    let attributes = CookieAttributes {
        path: cookie.path.clone(),
        max_age,
        domain: cookie.domain.clone(),
        same_site: same_site.map(str::to_owned),
        secure: cookie.secure,
        http_only: cookie.http_only,
    };
    Ok(attributes.affinity(&cookie.name))
}

/// NGINX Plus's defaults: `/` every 5 s, out after 1 failure, back after 1 pass, 60 s to answer
/// (`proxy_read_timeout`'s).
fn health_check(check: &UpstreamHealthCheck) -> Result<HealthCheck, String> {
    let time = |value: &Option<String>, field: &str, default: u32| match value {
        None => Ok(default),
        Some(text) => time_ms(text).ok_or_else(|| format!("{field} {text:?} is not an nginx time")),
    };
    let path = check.path.clone().unwrap_or_else(|| "/".to_owned());
    if !path.starts_with('/') {
        return Err(format!("path {path:?} is not an absolute path"));
    }
    Ok(HealthCheck {
        path,
        host: None,
        interval_ms: time(&check.interval, "interval", 5_000)?,
        timeout_ms: time(&check.read_timeout, "read-timeout", 60_000)?,
        unhealthy: HealthCheck::positive(check.fails, 1, "fails")?,
        healthy: HealthCheck::positive(check.passes, 1, "passes")?,
    })
}
