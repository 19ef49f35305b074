//! An HTTPProxy route's upstream side beyond the protocol: its `loadBalancerPolicy` and
//! `healthCheckPolicy` (one for all its services) and each service's `validation`, read as
//! Contour reads them (its defaults; `internal/dag/httpproxy_processor.go`,
//! `internal/envoy/v3/cluster.go`), into the [`Variant`] of the service's cluster.

use switchyard_table::{Affinity, HashPart};

use crate::https::SecretRef;
use crate::objects::{HttpHealthCheckPolicy, LoadBalancerPolicy, ProxyRoute, RequestHashPolicy, UpstreamValidation};
use crate::upstream::affinity::CookieAttributes;
use crate::upstream::variant::{Balance, HealthCheck, Verify};

/// Contour's health check `Host` when the policy names none.
const HEALTH_CHECK_HOST: &str = "contour-envoy-healthcheck";
/// The cookie of Contour's `Cookie` strategy.
pub const CONTOUR_AFFINITY_COOKIE: &str = "X-Contour-Session-Affinity";

/// What a route's policies set on each of its services' clusters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteUpstream {
    /// `loadBalancerPolicy.strategy`.
    pub balance: Balance,
    /// `healthCheckPolicy`.
    pub health_check: Option<HealthCheck>,
    /// The key of `Cookie` and `RequestHash`.
    pub affinity: Option<Affinity>,
}

/// The route's `loadBalancerPolicy` and `healthCheckPolicy`, or why the route is not valid (at
/// `at`, the route's place in the manifest).
pub fn route_upstream(route: &ProxyRoute, at: &str) -> Result<RouteUpstream, String> {
    let (balance, affinity) = match &route.load_balancer_policy {
        None => (Balance::RoundRobin, None),
        Some(policy) => balance(policy).map_err(|why| format!("{at}.loadBalancerPolicy: {why}"))?,
    };
    Ok(RouteUpstream {
        balance,
        affinity,
        health_check: match &route.health_check_policy {
            None => None,
            Some(policy) => Some(health_check(policy).map_err(|why| format!("{at}.healthCheckPolicy: {why}"))?),
        },
    })
}

/// Contour's strategies: `Cookie` and `RequestHash` hash the request on a ring, by the key the
/// filter makes: Contour's session cookie (`Path=/`, no lifetime, as Envoy writes it for
/// Contour), or the request hash policies' values in order. `RequestHash` without a usable
/// policy is round robin, as Contour makes it.
fn balance(policy: &LoadBalancerPolicy) -> Result<(Balance, Option<Affinity>), String> {
    let ring = |affinity| (Balance::RingHash, Some(affinity));
    match policy.strategy.as_deref().unwrap_or("RoundRobin") {
        "RoundRobin" => Ok((Balance::RoundRobin, None)),
        "WeightedLeastRequest" => Ok((Balance::LeastRequest, None)),
        "Random" => Ok((Balance::Random, None)),
        "Cookie" => {
            let attributes = CookieAttributes {
                path: Some("/".to_owned()),
                http_only: true,
                ..CookieAttributes::default()
            };
            Ok(ring(attributes.affinity(CONTOUR_AFFINITY_COOKIE)))
        }
        "RequestHash" => {
            let parts: Vec<HashPart> = policy.request_hash_policies.iter().flat_map(hash_parts).collect();
            match parts.is_empty() {
                true => Ok((Balance::RoundRobin, None)),
                false => Ok(ring(Affinity::Hash(parts))),
            }
        }
        other => Err(format!(
            "strategy {other:?} is not RoundRobin, WeightedLeastRequest, Random, Cookie or RequestHash"
        )),
    }
}

/// One request hash policy's part (a header, a query parameter or the client's address; none
/// when it names nothing, which Contour skips), then a stop when it is terminal.
fn hash_parts(policy: &RequestHashPolicy) -> Vec<HashPart> {
    let header = (policy.header_hash_options.as_ref()).map(|h| h.header_name.trim().to_ascii_lowercase());
    let query = (policy.query_parameter_hash_options.as_ref()).map(|q| q.parameter_name.trim().to_owned());
    let part = match (header.filter(|h| !h.is_empty()), query.filter(|q| !q.is_empty())) {
        (Some(header), _) => HashPart::Header(header),
        (None, Some(query)) => HashPart::Query(query),
        (None, None) if policy.hash_source_ip => HashPart::ClientAddress,
        (None, None) => return Vec::new(),
    };
    match policy.terminal {
        true => vec![part, HashPart::Stop],
        false => vec![part],
    }
}

/// The policy with Contour's defaults: every 5 s, 2 s to answer, out after 3 failures, back after 2.
fn health_check(policy: &HttpHealthCheckPolicy) -> Result<HealthCheck, String> {
    if !policy.path.starts_with('/') {
        return Err(format!("path {:?} is not an absolute path", policy.path));
    }
    let positive = HealthCheck::positive;
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
