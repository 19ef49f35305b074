//! What HTTPS changes in a kind's rules, for the processors to apply (ROUTING.md §8.3, §8.5,
//! §8.6): the HTTPS listener runs the same filter and table as the plain one, and a rule tells the
//! two apart by the request's `:scheme` (`https` on a TLS connection, which Envoy sets).
//!
//! - A redirect to https answers a rule's plain-HTTP requests: a twin of the rule, before it
//!   (one condition more), whose `Location` is `https://<host without port><path>?<query>`.
//! - A rule of a host its kind does not serve on HTTPS takes only plain HTTP (§8.1.6: on HTTPS it
//!   finds no rule, the no-route 404); one that leaves port 80 takes only HTTPS.

use switchyard_table::{ActionSpec, ConditionSource, ConditionSpec, MatchOp, Redirect, RuleSpec};

/// The scheme a rule is limited to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP, the listener on port 80.
    Http,
    /// HTTPS, the TLS listener.
    Https,
}

impl Scheme {
    fn word(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// The condition: the request came with this `:scheme`.
pub fn scheme_is(scheme: Scheme) -> ConditionSpec {
    header_is(":scheme", scheme.word())
}

/// The condition: header `name` is exactly `value`.
pub fn header_is(name: &str, value: &str) -> ConditionSpec {
    ConditionSpec {
        on: ConditionSource::Header,
        name: Some(name.to_owned()),
        op: MatchOp::Exact,
        value: Some(value.to_owned()),
        invert: false,
        ignore_case: false,
    }
}

/// The `Location` of every HTTPS redirect of §8: the host without its port, the path and query.
pub const HTTPS_LOCATION: &str = "https://${host}${request_uri}";

/// The twin of `rule` that answers its plain-HTTP requests with `status` to https (named after it,
/// `….https-redirect`).
pub fn https_redirect(rule: &RuleSpec, status: u16) -> RuleSpec {
    let mut conditions = rule.conditions.clone();
    conditions.push(scheme_is(Scheme::Http));
    RuleSpec {
        name: format!("{}.https-redirect", rule.name),
        host: rule.host.clone(),
        path: rule.path.clone(),
        conditions,
        action: ActionSpec::Redirect(Redirect {
            url: HTTPS_LOCATION.to_owned(),
            status,
        }),
        hsts: None,
        policy: None,
    }
}

/// Limits `rule` to requests of `scheme`.
pub fn only(rule: &mut RuleSpec, scheme: Scheme) {
    rule.conditions.push(scheme_is(scheme));
}
