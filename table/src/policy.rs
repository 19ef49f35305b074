//! A rule's policies per request ([`Policy`], issue "Policies beyond the route"): what a request
//! must satisfy before the rule's route action sends it upstream. Decided from the request's
//! headers where they suffice, and from its body as it streams where they do not: the filter hands
//! the body's sizes to a [`BodyBudget`].

use crate::format::Policy;
use crate::request::RequestView;

/// The status a body over the limit is answered with (nginx's `client_max_body_size`).
pub const TOO_LARGE: u16 = 413;

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

/// The verdict of `policy` on `request`'s headers. A `content-length` over the limit is refused;
/// one within it needs no counting (Envoy holds the body to its `content-length`); a body without
/// one (chunked, HTTP/2 without the header) is counted.
pub fn check_headers(policy: &Policy, request: &impl RequestView) -> HeadersVerdict {
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
        }
    }

    #[test]
    fn a_content_length_over_the_limit_is_refused_413_and_one_within_passes_uncounted() {
        let over = SimpleRequest::get("h", "/").header("content-length", "1048577");
        assert_eq!(check_headers(&limit(1_048_576), &over), HeadersVerdict::Refuse(413));
        let within = SimpleRequest::get("h", "/").header("content-length", "1048576");
        assert_eq!(check_headers(&limit(1_048_576), &within), HeadersVerdict::Pass(None));
    }

    #[test]
    fn a_body_without_content_length_is_counted_until_it_passes_the_limit() {
        let chunked = SimpleRequest::get("h", "/");
        let HeadersVerdict::Pass(Some(mut budget)) = check_headers(&limit(10), &chunked) else {
            panic!("a budget");
        };
        assert!(budget.take(6));
        assert!(budget.take(4), "exactly the limit passes");
        assert!(!budget.take(1));
    }

    #[test]
    fn a_policy_without_a_limit_passes_everything() {
        let request = SimpleRequest::get("h", "/").header("content-length", "99999999999");
        assert_eq!(check_headers(&Policy::default(), &request), HeadersVerdict::Pass(None));
    }
}
