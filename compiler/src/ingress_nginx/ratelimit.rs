//! An Ingress's request rates (issue "Policies beyond the route"): `limit-rps`, `limit-rpm`,
//! `limit-burst-multiplier`, `limit-connections` and `limit-whitelist`, read as ingress-nginx
//! v1.15's `ratelimit` parser reads them, into the table's [`RateLimit`] (nginx's `limit_req …
//! burst=… nodelay`, the burst the rate times the multiplier, 5 by default; `limit_conn`; one zone
//! per Ingress), answered with the ConfigMap's `limit-req-status-code` and
//! `limit-conn-status-code` (503 by default). `limit-rate*` (bandwidth) is not read here: it stays
//! not honoured.

use std::collections::BTreeMap;

use switchyard_table::{IpRange, Rate, RateLimit};

use super::annotations::Problem;
use crate::status::Reason;

/// The annotations this module reads.
pub const READ: &[&str] = &[
    "limit-rps",
    "limit-rpm",
    "limit-burst-multiplier",
    "limit-connections",
    "limit-whitelist",
];

/// ingress-nginx's burst multiplier when none is given.
const DEFAULT_BURST_MULTIPLIER: u32 = 5;

/// The rate limit `mine` (annotation names without the prefix) asks for on Ingress
/// `namespace/name`, answered with `status` (a rate's and the requests in flight's); `None`
/// without a rate or a limit in flight. Each refused value is reported
/// in `problems` (a rate ingress-nginx refuses is no rate, as there).
pub fn read(
    mine: &BTreeMap<&str, &str>,
    (prefix, zone): (&str, String),
    (status, in_flight_status): (u16, u16),
    problems: &mut Vec<Problem>,
) -> Option<RateLimit> {
    let mut invalid = |name: &str, value: &str, then: &str| {
        problems.push(Problem {
            name: name.to_owned(),
            reason: Reason::AnnotationInvalid,
            message: format!("{prefix}/{name}: {value:?} is not a value ingress-nginx takes; {then}"),
        });
    };
    let mut number = |name: &str, then: &str| {
        let value = mine.get(name)?;
        let parsed = value.trim().parse::<u32>().ok();
        if parsed.is_none() {
            invalid(name, value, then);
        }
        parsed
    };
    let per_second = number("limit-rps", "no rate per second").filter(|r| *r > 0);
    let per_minute = number("limit-rpm", "no rate per minute").filter(|r| *r > 0);
    let in_flight = number("limit-connections", "no limit in flight").filter(|r| *r > 0);
    let multiplier = number("limit-burst-multiplier", "the multiplier is 5").unwrap_or(DEFAULT_BURST_MULTIPLIER);
    let exempt = match mine.get("limit-whitelist") {
        None => Vec::new(),
        Some(value) => {
            let ranges: Option<Vec<IpRange>> = (value.split(',').map(str::trim))
                .filter(|entry| !entry.is_empty())
                .map(IpRange::parse)
                .collect();
            ranges.unwrap_or_else(|| {
                invalid("limit-whitelist", value, "no address is exempt");
                Vec::new()
            })
        }
    };
    if per_second.is_none() && per_minute.is_none() && in_flight.is_none() {
        return None;
    }
    let rate = |requests: u32| Rate {
        requests,
        burst: requests.saturating_mul(multiplier),
    };
    Some(RateLimit {
        zone,
        per_second: per_second.map(rate),
        per_minute: per_minute.map(rate),
        in_flight,
        exempt,
        status,
        in_flight_status,
        ..RateLimit::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(pairs: &[(&str, &str)]) -> (Option<RateLimit>, Vec<Problem>) {
        let mine: BTreeMap<&str, &str> = pairs.iter().copied().collect();
        let mut problems = Vec::new();
        let zone = ("nginx.ingress.kubernetes.io", "shop/api".to_owned());
        (read(&mine, zone, (503, 503), &mut problems), problems)
    }

    #[test]
    fn limit_rps_takes_five_times_its_rate_at_once_unless_told_otherwise() {
        let (limit, problems) = limit(&[("limit-rps", "10")]);
        let limit = limit.unwrap();
        assert!(problems.is_empty());
        assert_eq!(
            limit.per_second,
            Some(Rate {
                requests: 10,
                burst: 50
            })
        );
        assert_eq!((limit.zone.as_str(), limit.status), ("shop/api", 503));
        let (limit, _) = self::limit(&[("limit-rpm", "60"), ("limit-burst-multiplier", "1")]);
        assert_eq!(
            limit.unwrap().per_minute,
            Some(Rate {
                requests: 60,
                burst: 60
            })
        );
    }

    #[test]
    fn limit_connections_is_the_requests_in_flight() {
        let (limit, _) = limit(&[("limit-connections", "3")]);
        let limit = limit.unwrap();
        assert_eq!((limit.in_flight, limit.per_second), (Some(3), None));
    }

    #[test]
    fn limit_whitelist_exempts_its_ranges() {
        let (limit, _) = limit(&[("limit-rps", "1"), ("limit-whitelist", "10.0.0.0/8, 192.168.1.7")]);
        assert_eq!(limit.unwrap().exempt.len(), 2);
    }

    #[test]
    fn no_rate_is_no_limit_and_a_refused_value_is_reported() {
        assert_eq!(limit(&[("limit-whitelist", "10.0.0.0/8")]).0, None);
        let (limit, problems) = limit(&[("limit-rps", "ten")]);
        assert_eq!(limit, None);
        assert_eq!(problems[0].name, "limit-rps");
    }
}
