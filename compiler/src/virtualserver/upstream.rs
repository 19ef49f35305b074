//! A VirtualServer upstream's settings beyond its Service port, read as NGINX reads them, into the
//! [`Variant`] of its cluster: `tls.enable`, `connect-timeout`, `lb-method` and `healthCheck`.
//! An invalid value is the VirtualServer's fault, as NGINX's validation makes it.

use super::scope::Fault;
use crate::nginx::time_ms;
use crate::objects::nginx::{Upstream, UpstreamHealthCheck};
use crate::upstream::variant::{Balance, HealthCheck, UpstreamProtocol, Variant, DEFAULT_CONNECT_TIMEOUT_MS};

/// How Envoy speaks to an upstream: over TLS with `tls.enable` (NGINX checks no certificate unless
/// told to), else HTTP/1.1 in the clear; within `connect-timeout` when given (else the clusters'
/// 5 s, not NGINX's 60 s: docs/routing.md, "The upstream side"); by its `lb-method`; checked by
/// its `healthCheck`.
pub(super) fn upstream_variant(upstream: &Upstream, at: &str) -> Result<Variant, Fault> {
    let invalid = |why: String| Fault::Invalid(format!("{at}: upstream {:?}: {why}", upstream.name));
    let protocol = match upstream.tls.as_ref().is_some_and(|tls| tls.enable) {
        true => UpstreamProtocol::Tls,
        false => UpstreamProtocol::Http,
    };
    let connect_timeout_ms = match &upstream.connect_timeout {
        None => DEFAULT_CONNECT_TIMEOUT_MS,
        Some(time) => time_ms(time).ok_or_else(|| invalid(format!("connect-timeout {time:?} is not an nginx time")))?,
    };
    let balance = match upstream.lb_method.as_deref() {
        None => Balance::RoundRobin,
        Some(method) => {
            lb_method(method).ok_or_else(|| invalid(format!("lb-method {method:?} is not one NGINX has")))?
        }
    };
    let health_check = match &upstream.health_check {
        Some(check) if check.enable => Some(health_check(check).map_err(|why| invalid(format!("healthCheck.{why}")))?),
        _ => None,
    };
    Ok(Variant {
        protocol,
        connect_timeout_ms,
        balance,
        health_check,
        ..Variant::default()
    })
}

/// NGINX's load-balancing methods as Envoy's: `least_conn`, `least_time` and the `random two`
/// forms pick the less busy of two (Envoy's least request); `ip_hash` and `hash` hash on a ring.
fn lb_method(method: &str) -> Option<Balance> {
    let words: Vec<&str> = method.split_whitespace().collect();
    match words.as_slice() {
        ["round_robin"] => Some(Balance::RoundRobin),
        ["least_conn"] | ["least_time", ..] => Some(Balance::LeastRequest),
        ["random"] => Some(Balance::Random),
        ["random", "two"]
        | ["random", "two", "least_conn"]
        | ["random", "two", "least_time=header" | "least_time=last_byte"] => Some(Balance::LeastRequest),
        ["ip_hash"] | ["hash", _] | ["hash", _, "consistent"] => Some(Balance::RingHash),
        _ => None,
    }
}

/// NGINX Plus's defaults: `/` every 5 s, out after 1 failure, back after 1 pass, 60 s to answer
/// (`proxy_read_timeout`'s).
fn health_check(check: &UpstreamHealthCheck) -> Result<HealthCheck, String> {
    let time = |value: &Option<String>, field: &str, default: u32| match value {
        None => Ok(default),
        Some(text) => time_ms(text).ok_or_else(|| format!("{field} {text:?} is not an nginx time")),
    };
    let count = |value: Option<i64>, field: &str| match value {
        None => Ok(1),
        Some(n) => u32::try_from(n)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("{field} {n} is not a positive number")),
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
        unhealthy: count(check.fails, "fails")?,
        healthy: count(check.passes, "passes")?,
    })
}
