//! An HTTPProxy route's upstream side beyond the protocol: its `loadBalancerPolicy` and
//! `healthCheckPolicy` (one for all its services) and each service's `validation`, read as
//! Contour reads them (its defaults; `internal/dag/httpproxy_processor.go`,
//! `internal/envoy/v3/cluster.go`), into the [`Variant`] of the service's cluster.

use crate::https::SecretRef;
use crate::objects::{HttpHealthCheckPolicy, LoadBalancerPolicy, ProxyRoute, UpstreamValidation};
use crate::upstream::variant::{Balance, HealthCheck, Verify};

/// Contour's health check `Host` when the policy names none.
const HEALTH_CHECK_HOST: &str = "contour-envoy-healthcheck";

/// What a route's policies set on each of its services' clusters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteUpstream {
    /// `loadBalancerPolicy.strategy`.
    pub balance: Balance,
    /// `healthCheckPolicy`.
    pub health_check: Option<HealthCheck>,
}

/// The route's `loadBalancerPolicy` and `healthCheckPolicy`, or why the route is not valid (at
/// `at`, the route's place in the manifest).
pub fn route_upstream(route: &ProxyRoute, at: &str) -> Result<RouteUpstream, String> {
    Ok(RouteUpstream {
        balance: match &route.load_balancer_policy {
            None => Balance::RoundRobin,
            Some(policy) => balance(policy).map_err(|why| format!("{at}.loadBalancerPolicy: {why}"))?,
        },
        health_check: match &route.health_check_policy {
            None => None,
            Some(policy) => Some(health_check(policy).map_err(|why| format!("{at}.healthCheckPolicy: {why}"))?),
        },
    })
}

/// Contour's strategies: `Cookie` and `RequestHash` hash the request on a ring (the filter gives
/// the key).
fn balance(policy: &LoadBalancerPolicy) -> Result<Balance, String> {
    match policy.strategy.as_deref().unwrap_or("RoundRobin") {
        "RoundRobin" => Ok(Balance::RoundRobin),
        "WeightedLeastRequest" => Ok(Balance::LeastRequest),
        "Random" => Ok(Balance::Random),
        "Cookie" | "RequestHash" => Ok(Balance::RingHash),
        other => Err(format!(
            "strategy {other:?} is not RoundRobin, WeightedLeastRequest, Random, Cookie or RequestHash"
        )),
    }
}

/// The policy with Contour's defaults: every 5 s, 2 s to answer, out after 3 failures, back after 2.
fn health_check(policy: &HttpHealthCheckPolicy) -> Result<HealthCheck, String> {
    if !policy.path.starts_with('/') {
        return Err(format!("path {:?} is not an absolute path", policy.path));
    }
    let positive = |value: Option<i64>, default: u32, field: &str| match value {
        None => Ok(default),
        Some(n) => u32::try_from(n)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("{field} {n} is not a positive number")),
    };
    let seconds = |value, default, field| Ok::<u32, String>(positive(value, default, field)?.saturating_mul(1000));
    Ok(HealthCheck {
        path: policy.path.clone(),
        host: Some(policy.host.clone().unwrap_or_else(|| HEALTH_CHECK_HOST.to_owned())),
        interval_ms: seconds(policy.interval_seconds, 5, "intervalSeconds")?,
        timeout_ms: seconds(policy.timeout_seconds, 2, "timeoutSeconds")?,
        unhealthy: positive(policy.unhealthy_threshold_count, 3, "unhealthyThresholdCount")?,
        healthy: positive(policy.healthy_threshold_count, 2, "healthyThresholdCount")?,
    })
}

/// A service's `validation` in namespace `namespace`: its CA Secret (`name`, or `namespace/name`
/// of the proxy's own namespace: Contour needs a delegation for another's, which is not read
/// here, so another namespace is refused) and the names its certificate must carry.
pub fn verify(validation: &UpstreamValidation, namespace: &str) -> Result<Verify, String> {
    let ca = match validation.ca_secret.split_once('/') {
        None => validation.ca_secret.clone(),
        Some((ns, name)) if ns == namespace => name.to_owned(),
        Some((ns, _)) => {
            return Err(format!(
                "caSecret {:?} is in namespace {ns:?}, which needs a TLSCertificateDelegation that is not read here",
                validation.ca_secret
            ))
        }
    };
    if ca.is_empty() {
        return Err("caSecret is empty".to_owned());
    }
    let mut names: Vec<String> = match validation.subject_names.is_empty() {
        true => vec![validation.subject_name.clone()],
        false => validation.subject_names.clone(),
    };
    names.retain(|name| !name.is_empty());
    if names.is_empty() {
        return Err("subjectName is empty".to_owned());
    }
    names.sort();
    names.dedup();
    Ok(Verify {
        ca: SecretRef {
            namespace: namespace.to_owned(),
            name: ca,
        },
        names,
        sni: None,
        depth: None,
        versions: None,
    })
}
