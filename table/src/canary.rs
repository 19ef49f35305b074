//! ingress-nginx's canary (ROUTING.md §7.6, `action.route.canary`): per request, the header, then
//! the cookie, then the weight decide whether the canary's cluster or the main backends serve, as
//! ingress-nginx's `balancer.lua` (`route_to_alternative_balancer`) decides. Validated and its
//! pattern compiled once when the table loads; decided per request without allocating.
//! Which step decided is part of the decision ([`CanaryStep`]) for `switchyard explain`.

use regex_lite::Regex;

use crate::error::Problem;
use crate::field::{field_value, is_token};
use crate::format::{Backend, Canary};
use crate::request::{cookie_pairs, RequestView};

/// A validated canary, ready to decide.
#[derive(Debug, Clone)]
pub struct CanaryPolicy {
    /// The canary's cluster, as the backend a decision names.
    backend: Backend,
    /// The header's lowercase name and its test.
    header: Option<(String, HeaderTest)>,
    cookie: Option<String>,
    weight: u64,
    total: u64,
}

#[derive(Debug, Clone)]
enum HeaderTest {
    Value(String),
    Pattern(Regex),
    Main,
    AlwaysOrNever,
}

/// Which step decided (for `switchyard explain`, which reads the request's value itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CanaryStep {
    /// The header.
    Header,
    /// The cookie.
    Cookie,
    /// The weight: `weight` in `total`.
    Weight {
        /// The canary's share.
        weight: u64,
        /// Out of.
        total: u64,
    },
}

/// The decision for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CanaryDecision {
    /// Whether the canary serves it.
    pub canary: bool,
    /// What decided.
    pub step: CanaryStep,
}

impl CanaryPolicy {
    /// Validates a canary; the `&str` names the failing field inside `canary`.
    pub fn compile(spec: &Canary) -> Result<CanaryPolicy, (&'static str, Problem)> {
        let bad = |field: &'static str, why: String| (field, Problem::Canary(why));
        if spec.cluster.is_empty() {
            return Err(("cluster", Problem::EmptyCluster));
        }
        field_value(&spec.cluster).map_err(|fault| bad("cluster", format!("{:?}: {fault}", spec.cluster)))?;
        let header = match &spec.header {
            None => None,
            Some(header) => {
                if !is_token(&header.name) {
                    return Err(bad("header.name", format!("{:?} is not a header name", header.name)));
                }
                let test = match (&header.value, &header.pattern, header.main) {
                    (Some(value), None, false) => HeaderTest::Value(value.clone()),
                    (None, Some(pattern), false) => {
                        HeaderTest::Pattern(Regex::new(pattern).map_err(|e| bad("header.pattern", e.to_string()))?)
                    }
                    (None, None, true) => HeaderTest::Main,
                    (None, None, false) => HeaderTest::AlwaysOrNever,
                    _ => return Err(bad("header", "at most one of value, pattern and main".to_owned())),
                };
                Some((header.name.to_ascii_lowercase(), test))
            }
        };
        if let Some(cookie) = &spec.cookie {
            if !is_token(cookie) {
                return Err(bad("cookie", format!("{cookie:?} is not a cookie name")));
            }
        }
        // ingress-nginx counts the total only above 100.
        let total = spec.weight_total.max(100);
        if spec.weight > total {
            return Err(bad(
                "weight",
                format!("weight {} is more than the total {total}", spec.weight),
            ));
        }
        Ok(CanaryPolicy {
            backend: Backend {
                cluster: spec.cluster.clone(),
                weight: 1,
            },
            header,
            cookie: spec.cookie.clone(),
            weight: u64::from(spec.weight),
            total: u64::from(total),
        })
    }

    /// The canary's backend.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// Decides one request; `random` is any 64 random bits.
    pub fn decide(&self, request: &impl RequestView, random: u64) -> CanaryDecision {
        if let Some(decision) = self.by_header(request) {
            return decision;
        }
        if let Some(decision) = self.by_cookie(request) {
            return decision;
        }
        // `math.random(total) <= weight`: 1..=total, so weight 0 never and weight == total always.
        let ticket = splitmix(random) % self.total + 1;
        CanaryDecision {
            canary: ticket <= self.weight,
            step: CanaryStep::Weight {
                weight: self.weight,
                total: self.total,
            },
        }
    }

    /// Step 1, on the header's first value (nginx's `$http_name`).
    fn by_header(&self, request: &impl RequestView) -> Option<CanaryDecision> {
        let (name, test) = self.header.as_ref()?;
        let mut decided = None;
        request.any_header_value(name, &mut |value| {
            decided = match test {
                HeaderTest::Value(wanted) => (value == wanted).then_some(true),
                HeaderTest::Pattern(regex) => regex.is_match(value).then_some(true),
                HeaderTest::Main => Some(false),
                HeaderTest::AlwaysOrNever => always_or_never(value),
            };
            true
        });
        decided.map(|canary| CanaryDecision {
            canary,
            step: CanaryStep::Header,
        })
    }

    /// Step 2, on the first cookie of that name in any case (nginx's `$cookie_name`).
    fn by_cookie(&self, request: &impl RequestView) -> Option<CanaryDecision> {
        let name = self.cookie.as_deref()?;
        let mut decided = None;
        request.any_header_value("cookie", &mut |header| match cookie_pairs(header)
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
        {
            Some((_, value)) => {
                decided = always_or_never(value);
                true
            }
            None => false,
        });
        decided.map(|canary| CanaryDecision {
            canary,
            step: CanaryStep::Cookie,
        })
    }
}

/// `always` → canary, `never` → main, anything else: no decision.
fn always_or_never(value: &str) -> Option<bool> {
    match value {
        "always" => Some(true),
        "never" => Some(false),
        _ => None,
    }
}

/// SplitMix64's finaliser: the weight's ticket does not share bits with the main backends' pick.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
