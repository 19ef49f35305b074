//! `switchyard explain` on a rule's policy (issue "Policies beyond the route"): what it asks of a
//! request, in the words of the manifest field that set it, and, for the request explained, which
//! part answered it and why ("413: a body of 3145728 bytes, over proxy-body-size 1m of Ingress
//! shop/api"), decided by the filter's own checks ([`switchyard_table::cors`],
//! [`switchyard_table::policy`]). The client's address is the one given (`--client-address`);
//! without it, address ranges are described, not decided.

use std::net::IpAddr;

use switchyard_table::basic_auth;
use switchyard_table::cors::{self, CorsVerdict};
use switchyard_table::policy::{check_headers, HeadersVerdict};
use switchyard_table::{Policy, RequestView};

use crate::route_config::RouteSettings;

/// The manifest fields that set a rule's policy, by the kind of resource that wrote it.
struct Fields {
    /// The body limit's.
    body: &'static str,
    /// The address ranges'.
    ranges: &'static str,
    /// Basic authentication's.
    basic_auth: &'static str,
}

/// The fields of the resource of rule `rule` (`Ingress/shop/api#0`): ingress-nginx's annotations,
/// or a VirtualServer's.
fn fields_of(rule: &str) -> Fields {
    match rule.split('/').next() {
        Some("VirtualServer") | Some("VirtualServerRoute") => Fields {
            body: "client-max-body-size",
            ranges: "accessControl",
            basic_auth: "basicAuth Policy",
        },
        _ => Fields {
            body: "proxy-body-size",
            ranges: "whitelist-source-range / denylist-source-range",
            basic_auth: "auth-type basic",
        },
    }
}

/// The resource of rule `rule`, `Ingress shop/api`; the name itself for another shape.
fn resource_of(rule: &str) -> String {
    let base = switchyard_table::metrics::resource_of(rule);
    match base.split_once('/') {
        Some((kind, rest)) => format!("{kind} {rest}"),
        None => base.to_owned(),
    }
}

/// An nginx size for `bytes`: `1m`, `512k`, or bytes.
fn nginx_size(bytes: u64) -> String {
    match bytes {
        b if b % (1 << 20) == 0 => format!("{}m", b >> 20),
        b if b % (1 << 10) == 0 => format!("{}k", b >> 10),
        b => b.to_string(),
    }
}

/// Milliseconds for people: `60 s`, `1.5 s`, `none` for 0.
fn time(ms: u64) -> String {
    match ms {
        0 => "none".to_owned(),
        ms if ms % 1000 == 0 => format!("{} s", ms / 1000),
        ms => format!("{} s", ms as f64 / 1000.0),
    }
}

/// What `policy` of rule `rule` asks, one line per part.
pub fn describe(policy: &Policy, rule: &str) -> Vec<String> {
    let fields = fields_of(rule);
    let mut lines = Vec::new();
    if let Some(max) = policy.max_body_bytes {
        lines.push(format!("body limit {} ({max} bytes, {})", nginx_size(max), fields.body));
    }
    if !(policy.allow.is_empty() && policy.deny.is_empty()) {
        let list = |ranges: &[switchyard_table::IpRange]| {
            ranges
                .iter()
                .map(|r| format!("{}/{}", r.network, r.prefix))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut line = String::from("client addresses");
        if !policy.deny.is_empty() {
            line.push_str(&format!(" denied {}", list(&policy.deny)));
        }
        if !policy.allow.is_empty() {
            let and = if policy.deny.is_empty() { "" } else { ";" };
            line.push_str(&format!("{and} allowed only {}", list(&policy.allow)));
        }
        lines.push(format!("{line} ({})", fields.ranges));
    }
    if let Some(cors) = &policy.cors {
        let credentials = match cors.allow_credentials {
            true => "credentials allowed",
            false => "no credentials",
        };
        let regexes = cors
            .allow_origin_regex
            .iter()
            .map(|r| format!("{} (regex)", r.as_str()));
        let origins: Vec<String> = cors.allow_origin.iter().cloned().chain(regexes).collect();
        let age = cors
            .max_age
            .map_or("no max age".to_owned(), |age| format!("max age {age} s"));
        lines.push(format!(
            "CORS from {}: methods {}; {credentials}; {age}",
            origins.join(", "),
            cors.allow_methods,
        ));
    }
    if let Some(limit) = &policy.rate_limit {
        lines.push(describe_rate_limit(limit));
    }
    if let Some(auth) = &policy.basic_auth {
        // The users are counted, never listed with their hashes.
        lines.push(format!(
            "basic auth, realm {:?}: {} users of {} ({})",
            auth.realm,
            auth.users.len(),
            auth.source,
            fields.basic_auth
        ));
    }
    if let Some(auth) = &policy.external_auth {
        lines.push(describe_external_auth(auth));
    }
    if let Some(route) = &policy.route {
        lines.push(match RouteSettings::of_name(route) {
            Some(settings) => format!("gateway route: {}", describe_route(&settings)),
            None => format!("gateway route {route:?} (spells no settings: the default route applies)"),
        });
    }
    lines
}

/// An external authentication for people (`explain` never asks the service: it says who decides).
fn describe_external_auth(auth: &switchyard_table::external_auth::ExternalAuth) -> String {
    let mut line = format!(
        "external auth: {} decides (auth-url; {} at most, else 500)",
        auth.url,
        time(auth.timeout_ms)
    );
    if let Some(method) = &auth.method {
        line.push_str(&format!("; asked with {method}"));
    }
    if !auth.response_headers.is_empty() {
        line.push_str(&format!("; its {} go upstream", auth.response_headers.join(", ")));
    }
    if let Some(signin) = &auth.signin {
        line.push_str(&format!("; a 401 redirects to {signin}"));
    }
    line
}

/// A rate limit for people.
fn describe_rate_limit(limit: &switchyard_table::RateLimit) -> String {
    let mut parts = Vec::new();
    for (rate, per) in [
        (limit.per_second, "second"),
        (limit.per_minute, "minute"),
        (limit.per_hour, "hour"),
    ] {
        if let Some(rate) = rate {
            parts.push(format!("{} requests per {per}, burst {}", rate.requests, rate.burst));
        }
    }
    if let Some(max) = limit.in_flight {
        parts.push(format!("{max} in flight (answered {} past it)", limit.in_flight_status));
    }
    let whom = match limit.per_client {
        true => "per client address",
        false => "for every client together",
    };
    let mut line = format!("rate limit {whom}, zone {}: {}", limit.zone, parts.join("; "));
    if limit.per_second.is_some() || limit.per_minute.is_some() || limit.per_hour.is_some() {
        line.push_str(&format!(" (answered {} over it)", limit.status));
    }
    if !limit.exempt.is_empty() {
        let exempt: Vec<String> = limit
            .exempt
            .iter()
            .map(|r| format!("{}/{}", r.network, r.prefix))
            .collect();
        line.push_str(&format!("; exempt {}", exempt.join(", ")));
    }
    line
}

/// A route's settings for people.
fn describe_route(settings: &RouteSettings) -> String {
    let mut parts = Vec::new();
    if let Some(ms) = settings.timeout_ms {
        parts.push(format!("total timeout {}", time(ms)));
    }
    if let Some(ms) = settings.idle_timeout_ms {
        parts.push(format!("idle timeout {}", time(ms)));
    }
    if let Some(ms) = settings.upstream_idle_timeout_ms {
        parts.push(format!("each try idle at most {}", time(ms)));
    }
    match &settings.retry {
        None => parts.push("no retries".to_owned()),
        Some(retry) => {
            let on: Vec<&str> = retry.on.iter().map(|on| on.as_str()).collect();
            let mut line = format!("up to {} retries on {}", retry.retries, on.join(", "));
            if !retry.status_codes.is_empty() {
                let codes: Vec<String> = retry.status_codes.iter().map(u16::to_string).collect();
                line.push_str(&format!(" ({})", codes.join(", ")));
            }
            if retry.idempotent_only {
                line.push_str(", not for POST, LOCK or PATCH");
            }
            if retry.other_host {
                line.push_str(", each to another endpoint");
            }
            parts.push(line);
        }
    }
    if settings.response_headers.is_some() {
        parts.push("the CORS headers added to every response".to_owned());
    }
    parts.join("; ")
}

/// Which part of `policy` answers `request` locally and why, as the filter decides: a CORS
/// preflight (204, or 200 for Envoy's), an address outside the ranges (403, only with `client` given), a declared body
/// over the limit (413), no credential of a basic authentication's users (401). `None`: the request goes upstream (its body, if it has no
/// `content-length`, counted as it streams).
pub fn answer(
    policy: &Policy,
    rule: &str,
    request: &impl RequestView,
    client: Option<IpAddr>,
) -> Option<(u16, String)> {
    let fields = fields_of(rule);
    let resource = resource_of(rule);
    if let Some(CorsVerdict::Preflight(answer)) = policy.cors.as_ref().map(|c| cors::check(c, request)) {
        return Some((
            answer.status(),
            format!("a CORS preflight from an allowed origin, answered by {resource}'s CORS"),
        ));
    }
    let ranged = !(policy.allow.is_empty() && policy.deny.is_empty());
    let checked = Policy {
        allow: if client.is_some() {
            policy.allow.clone()
        } else {
            Vec::new()
        },
        deny: if client.is_some() {
            policy.deny.clone()
        } else {
            Vec::new()
        },
        ..policy.clone()
    };
    match check_headers(&checked, request, || client) {
        HeadersVerdict::Pass(_) => match &policy.basic_auth {
            Some(auth) if !basic_auth::admits(auth, request) => Some((
                basic_auth::UNAUTHORIZED,
                format!(
                    "no credential of a user of {} ({} of {resource}): challenged for realm {:?}",
                    auth.source,
                    fields_of(rule).basic_auth,
                    auth.realm
                ),
            )),
            _ => None,
        },
        HeadersVerdict::Refuse(status) if status == switchyard_table::policy::FORBIDDEN && ranged => Some((
            status,
            format!(
                "the client address {} is not let through by {} of {resource}",
                client.map(|a| a.to_string()).unwrap_or_default(),
                fields.ranges
            ),
        )),
        HeadersVerdict::Refuse(status) => {
            let max = policy.max_body_bytes.unwrap_or_default();
            let mut declared = String::new();
            request.any_header_value("content-length", &mut |v| {
                declared = v.trim().to_owned();
                true
            });
            Some((
                status,
                format!(
                    "a body of {declared} bytes, over {} {} of {resource}",
                    fields.body,
                    nginx_size(max)
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_table::SimpleRequest;

    fn policy() -> Policy {
        Policy {
            max_body_bytes: Some(1 << 20),
            allow: vec![switchyard_table::IpRange::parse("10.0.0.0/8").unwrap()],
            ..Policy::default()
        }
    }

    #[test]
    fn a_body_over_the_limit_is_answered_413_naming_the_field_and_the_ingress() {
        let request = SimpleRequest::get("h", "/")
            .method("POST")
            .header("content-length", "3145728");
        let (status, why) = answer(&policy(), "Ingress/shop/api#0", &request, None).unwrap();
        assert_eq!(status, 413);
        assert_eq!(
            why,
            "a body of 3145728 bytes, over proxy-body-size 1m of Ingress shop/api"
        );
    }

    #[test]
    fn ranges_are_decided_only_for_a_given_client_address() {
        let request = SimpleRequest::get("h", "/");
        assert_eq!(answer(&policy(), "Ingress/shop/api#0", &request, None), None);
        let outside: IpAddr = "192.0.2.1".parse().unwrap();
        let (status, why) = answer(&policy(), "Ingress/shop/api#0", &request, Some(outside)).unwrap();
        assert_eq!(status, 403);
        assert!(
            why.contains("192.0.2.1") && why.contains("whitelist-source-range"),
            "{why}"
        );
        let inside: IpAddr = "10.1.2.3".parse().unwrap();
        assert_eq!(answer(&policy(), "Ingress/shop/api#0", &request, Some(inside)), None);
    }

    #[test]
    fn a_rate_limit_is_described_with_its_zone_rates_and_exemptions() {
        let limited = Policy {
            rate_limit: Some(switchyard_table::RateLimit {
                zone: "shop/api".to_owned(),
                per_second: Some(switchyard_table::Rate { requests: 5, burst: 25 }),
                per_minute: None,
                in_flight: Some(3),
                exempt: vec![switchyard_table::IpRange::parse("10.0.0.0/8").unwrap()],
                ..switchyard_table::RateLimit::default()
            }),
            ..Policy::default()
        };
        assert_eq!(
            describe(&limited, "Ingress/shop/api#0"),
            [
                "rate limit per client address, zone shop/api: 5 requests per second, burst 25; 3 in flight \
              (answered 503 past it) (answered 503 over it); exempt 10.0.0.0/8"
            ]
        );
    }

    #[test]
    fn a_policy_is_described_in_its_manifests_words() {
        let lines = describe(&policy(), "VirtualServer/shop/v#0");
        assert_eq!(
            lines,
            [
                "body limit 1m (1048576 bytes, client-max-body-size)",
                "client addresses allowed only 10.0.0.0/8 (accessControl)"
            ]
        );
        let route = Policy {
            route: Some(
                "timeout=0ms+idle=60000ms+upstream-idle=5000ms+retry=connect-failure+retries=2+idempotent".to_owned(),
            ),
            ..Policy::default()
        };
        assert_eq!(
            describe(&route, "Ingress/shop/api#0"),
            ["gateway route: total timeout none; idle timeout 60 s; each try idle at most 5 s; up to 2 retries on connect-failure, not for POST, LOCK or PATCH"]
        );
        let with_headers = Policy {
            route: Some("headers=b518cc837a6aeabe".to_owned()),
            ..Policy::default()
        };
        assert_eq!(
            describe(&with_headers, "Ingress/shop/api#0"),
            ["gateway route: no retries; the CORS headers added to every response"]
        );
    }

    #[test]
    fn basic_auth_is_described_without_its_hashes_and_a_request_without_a_credential_is_answered_401() {
        let auth = switchyard_table::basic_auth::BasicAuth {
            realm: "Staff".to_owned(),
            source: "Secret shop/basic-auth".to_owned(),
            users: vec![switchyard_table::basic_auth::Credential {
                user: "alice".to_owned(),
                hash: "{PLAIN}s3cret".to_owned(),
            }],
        };
        let policy = Policy {
            basic_auth: Some(std::sync::Arc::new(auth)),
            ..Policy::default()
        };
        let lines = describe(&policy, "Ingress/shop/api#0");
        assert_eq!(
            lines,
            ["basic auth, realm \"Staff\": 1 users of Secret shop/basic-auth (auth-type basic)"]
        );
        let nginx = describe(&policy, "VirtualServer/shop/api#0");
        assert!(nginx[0].ends_with("(basicAuth Policy)"), "{nginx:?}");
        let anonymous = SimpleRequest::get("h", "/");
        let (status, why) = answer(&policy, "Ingress/shop/api#0", &anonymous, None).unwrap();
        assert_eq!(status, 401);
        assert!(
            why.contains("Secret shop/basic-auth") && why.contains("Ingress shop/api"),
            "{why}"
        );
        assert!(!why.contains("s3cret"));
        let alice = SimpleRequest::get("h", "/").header("authorization", "Basic YWxpY2U6czNjcmV0");
        assert_eq!(answer(&policy, "Ingress/shop/api#0", &alice, None), None);
    }

    #[test]
    fn external_auth_is_described_as_the_service_that_decides() {
        let auth = switchyard_table::external_auth::ExternalAuth {
            cluster: "external-auth|http|auth|80".to_owned(),
            url: "http://auth/check".to_owned(),
            response_headers: vec!["x-user".to_owned()],
            signin: Some("https://login/?rd=${escaped_request_uri}".to_owned()),
            timeout_ms: 60_000,
            ..Default::default()
        };
        let policy = Policy {
            external_auth: Some(std::sync::Arc::new(auth)),
            ..Policy::default()
        };
        assert_eq!(
            describe(&policy, "Ingress/shop/api#0"),
            ["external auth: http://auth/check decides (auth-url; 60 s at most, else 500); its x-user go upstream; a 401 redirects to https://login/?rd=${escaped_request_uri}"]
        );
    }
}
