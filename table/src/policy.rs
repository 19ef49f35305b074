//! A rule's policies per request ([`Policy`], issue "Policies beyond the route"): what a request
//! must satisfy before the rule's route action sends it upstream, in nginx's order: the client's
//! address (its access phase), then the body's size. Decided from the request's headers and address
//! where they suffice, and from its body as it streams where they do not: the filter hands the
//! body's sizes to a [`BodyBudget`].

use std::net::IpAddr;

use crate::format::Policy;
use crate::request::RequestView;

/// The status a body over the limit is answered with (nginx's `client_max_body_size`).
pub const TOO_LARGE: u16 = 413;
/// The status a client address outside the allowed ranges, or inside the denied ones, is answered
/// with (nginx's `deny`).
pub const FORBIDDEN: u16 = 403;

/// What the request's headers decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadersVerdict {
    /// The request may go on; with a limit its body must be counted against (no `content-length`
    /// said it is within it).
    Pass(Option<BodyBudget>),
    /// Answer with this status.
    Refuse(u16),
}

/// What is left of a body's limit as it streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyBudget {
    left: u64,
}

impl BodyBudget {
    /// Takes a chunk of `bytes`; `false` once the body is over the limit.
    pub fn take(&mut self, bytes: u64) -> bool {
        match self.left.checked_sub(bytes) {
            Some(left) => {
                self.left = left;
                true
            }
            None => false,
        }
    }
}

/// The verdict of `policy` on `request`'s headers and its client's address (`client`, asked only
/// when the policy has ranges; `None`, an address the host cannot tell, is refused: a range
/// protects something). A denied address, or one outside the allowed ranges, is refused 403. Then
/// a `content-length` over the limit is refused 413; one within it needs no counting (Envoy holds
/// the body to its `content-length`); a body without one (chunked, HTTP/2 without the header) is
/// counted.
pub fn check_headers(
    policy: &Policy,
    request: &impl RequestView,
    client: impl FnOnce() -> Option<IpAddr>,
) -> HeadersVerdict {
    if !(policy.allow.is_empty() && policy.deny.is_empty()) {
        let Some(address) = client() else {
            return HeadersVerdict::Refuse(FORBIDDEN);
        };
        let denied = policy.deny.iter().any(|range| range.contains(address));
        let allowed = policy.allow.is_empty() || policy.allow.iter().any(|range| range.contains(address));
        if denied || !allowed {
            return HeadersVerdict::Refuse(FORBIDDEN);
        }
    }
    let Some(max) = policy.max_body_bytes else {
        return HeadersVerdict::Pass(None);
    };
    let mut declared = None;
    request.any_header_value("content-length", &mut |value| {
        declared = value.trim().parse::<u64>().ok();
        true
    });
    match declared {
        Some(length) if length > max => HeadersVerdict::Refuse(TOO_LARGE),
        Some(_) => HeadersVerdict::Pass(None),
        None => HeadersVerdict::Pass(Some(BodyBudget { left: max })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::SimpleRequest;

    fn limit(bytes: u64) -> Policy {
        Policy {
            max_body_bytes: Some(bytes),
            ..Policy::default()
        }
    }

    fn no_address() -> Option<IpAddr> {
        None
    }

    fn ranges(allow: &[&str], deny: &[&str]) -> Policy {
        let parse = |list: &[&str]| list.iter().map(|r| crate::format::IpRange::parse(r).unwrap()).collect();
        Policy {
            allow: parse(allow),
            deny: parse(deny),
            ..Policy::default()
        }
    }

    #[test]
    fn an_address_outside_the_allowed_ranges_or_inside_the_denied_is_refused_403() {
        let request = SimpleRequest::get("h", "/");
        let from = |ip: &str| -> Option<IpAddr> { ip.parse().ok() };
        let allow = ranges(&["10.0.0.0/8", "192.168.1.7"], &[]);
        assert_eq!(
            check_headers(&allow, &request, || from("10.2.3.4")),
            HeadersVerdict::Pass(None)
        );
        assert_eq!(
            check_headers(&allow, &request, || from("192.168.1.7")),
            HeadersVerdict::Pass(None)
        );
        assert_eq!(
            check_headers(&allow, &request, || from("192.168.1.8")),
            HeadersVerdict::Refuse(403)
        );
        assert_eq!(
            check_headers(&allow, &request, || from("::ffff:10.9.9.9")),
            HeadersVerdict::Pass(None),
            "an IPv4-mapped address is its IPv4 address"
        );
        let both = ranges(&["10.0.0.0/8"], &["10.6.0.0/16"]);
        assert_eq!(
            check_headers(&both, &request, || from("10.6.1.1")),
            HeadersVerdict::Refuse(403),
            "deny first"
        );
        let deny = ranges(&[], &["2001:db8::/32"]);
        assert_eq!(
            check_headers(&deny, &request, || from("2001:db8::1")),
            HeadersVerdict::Refuse(403)
        );
        assert_eq!(
            check_headers(&deny, &request, || from("10.0.0.1")),
            HeadersVerdict::Pass(None)
        );
    }

    #[test]
    fn an_address_the_host_cannot_tell_is_refused_where_ranges_protect() {
        let request = SimpleRequest::get("h", "/");
        assert_eq!(
            check_headers(&ranges(&[], &["10.0.0.0/8"]), &request, no_address),
            HeadersVerdict::Refuse(403)
        );
        assert_eq!(
            check_headers(&limit(10), &request, no_address),
            HeadersVerdict::Pass(Some(BodyBudget { left: 10 }))
        );
    }

    #[test]
    fn a_content_length_over_the_limit_is_refused_413_and_one_within_passes_uncounted() {
        let over = SimpleRequest::get("h", "/").header("content-length", "1048577");
        assert_eq!(
            check_headers(&limit(1_048_576), &over, no_address),
            HeadersVerdict::Refuse(413)
        );
        let within = SimpleRequest::get("h", "/").header("content-length", "1048576");
        assert_eq!(
            check_headers(&limit(1_048_576), &within, no_address),
            HeadersVerdict::Pass(None)
        );
    }

    #[test]
    fn a_body_without_content_length_is_counted_until_it_passes_the_limit() {
        let chunked = SimpleRequest::get("h", "/");
        let HeadersVerdict::Pass(Some(mut budget)) = check_headers(&limit(10), &chunked, no_address) else {
            panic!("a budget");
        };
        assert!(budget.take(6));
        assert!(budget.take(4), "exactly the limit passes");
        assert!(!budget.take(1));
    }

    #[test]
    fn a_policy_without_a_limit_passes_everything() {
        let request = SimpleRequest::get("h", "/").header("content-length", "99999999999");
        assert_eq!(
            check_headers(&Policy::default(), &request, no_address),
            HeadersVerdict::Pass(None)
        );
    }

    #[test]
    fn an_address_range_is_read_as_nginx_reads_it() {
        let parse = |text: &str| crate::format::IpRange::parse(text).map(|r| r.to_string());
        assert_eq!(parse("10.1.2.3/8").as_deref(), Some("10.0.0.0/8"), "host bits cleared");
        assert_eq!(parse(" 192.168.1.7 ").as_deref(), Some("192.168.1.7/32"));
        assert_eq!(parse("2001:db8::1/32").as_deref(), Some("2001:db8::/32"));
        assert_eq!(parse("0.0.0.0/0").as_deref(), Some("0.0.0.0/0"));
        for bad in ["10.0.0.0/33", "::/129", "10.0.0/8", "x", ""] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
