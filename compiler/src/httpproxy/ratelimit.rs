//! An HTTPProxy's `rateLimitPolicy.local` (issue "Policies beyond the route"), read as Contour reads
//! it (`internal/dag/policy.go`): Envoy's local rate limit, one token bucket per Envoy for every
//! client together, `requests` per `unit` (`second`, `minute`, `hour`) and room for `requests +
//! burst` at once, answered with `responseStatusCode` (429 when 0). The virtual host's bucket is
//! shared by all its routes; a route's own replaces it. It becomes the table's [`RateLimit`] of a
//! zone that counts every client together ([`RateLimit::per_client`] off), whose burst above the
//! first request is `requests + burst - 1`, so the same number of requests pass at once.

use switchyard_table::{Rate, RateLimit};

use crate::objects::LocalRateLimitPolicy;

/// The rate limit of `policy` counted in `zone`, or why Contour refuses it (at `at`); with a note
/// when it has `responseHeadersToAdd`, which are not added.
pub fn local(policy: &LocalRateLimitPolicy, zone: String, at: &str) -> Result<(RateLimit, Option<String>), String> {
    let requests = u32::try_from(policy.requests)
        .ok()
        .filter(|r| *r > 0)
        .ok_or_else(|| format!("{at}.requests: {} is not a number of requests above 0", policy.requests))?;
    let burst = u32::try_from(policy.burst).map_err(|_| format!("{at}.burst: {} is below 0", policy.burst))?;
    let status = match policy.response_status_code {
        0 => 429,
        code => u16::try_from(code)
            .ok()
            .filter(|c| (100..=599).contains(c))
            .ok_or_else(|| format!("{at}.responseStatusCode: {code} is not an HTTP status"))?,
    };
    let rate = Rate {
        requests,
        burst: (requests.saturating_add(burst)).saturating_sub(1),
    };
    let mut limit = RateLimit {
        zone,
        per_client: false,
        status,
        ..RateLimit::default()
    };
    match policy.unit.as_str() {
        "second" => limit.per_second = Some(rate),
        "minute" => limit.per_minute = Some(rate),
        "hour" => limit.per_hour = Some(rate),
        unit => return Err(format!("{at}.unit: {unit:?} is not second, minute or hour")),
    }
    let note = (!policy.response_headers_to_add.is_empty())
        .then(|| format!("{at}.responseHeadersToAdd: not added to the answer of a request over the limit"));
    Ok((limit, note))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(yaml: &str) -> LocalRateLimitPolicy {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn a_local_rate_limit_counts_every_client_together_with_contours_defaults() {
        let (limit, note) = local(&policy("{requests: 10, unit: minute, burst: 5}"), "z".into(), "at").unwrap();
        assert!(!limit.per_client);
        assert_eq!(
            limit.per_minute,
            Some(Rate {
                requests: 10,
                burst: 14
            })
        );
        assert_eq!((limit.status, note), (429, None));
    }

    #[test]
    fn contour_refuses_no_requests_an_unknown_unit_or_a_status_that_is_none() {
        for bad in [
            "{requests: 0, unit: second}",
            "{requests: 1, unit: day}",
            "{requests: 1, unit: second, responseStatusCode: 700}",
        ] {
            assert!(local(&policy(bad), "z".into(), "at").is_err(), "{bad}");
        }
    }
}
