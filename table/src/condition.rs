//! Conditions beyond host and path: header, cookie, query parameter and method tests.
//!
//! ROUTING.md §4 "Conditions": a request carrying several values matches when any one does; an
//! inverted condition holds when none does (so an inverted `present` is "not present").

use regex_lite::Regex;

use crate::error::Problem;
use crate::field::is_token;
use crate::format::{ConditionSource, ConditionSpec, MatchOp};
use crate::path::anchored_regex;
use crate::request::RequestView;

/// A validated condition.
#[derive(Debug, Clone)]
pub struct Condition {
    source: ConditionSource,
    name: String,
    test: ValueTest,
    invert: bool,
}

#[derive(Debug, Clone)]
enum ValueTest {
    Exact(String),
    Prefix(String),
    Contains(String),
    /// `ignore_case`: ASCII letters compare in any case.
    ExactNoCase(String),
    PrefixNoCase(String),
    ContainsNoCase(String),
    Regex(Regex),
    Present,
}

impl Condition {
    /// Validates a condition; the `&'static str` is the failing field inside the condition.
    pub fn compile(spec: &ConditionSpec) -> Result<Condition, (&'static str, Problem)> {
        let name = match (spec.on, spec.name.as_deref()) {
            (ConditionSource::Method, None) => String::new(),
            (ConditionSource::Method, Some(_)) => {
                return Err(("name", Problem::ConditionName("a method condition has no name")));
            }
            (_, None | Some("")) => {
                return Err((
                    "name",
                    Problem::ConditionName("header, cookie and query conditions need a name"),
                ));
            }
            (ConditionSource::Header, Some(name)) => {
                // `:scheme` is the one pseudo-header a condition reads: `http` or `https` as
                // Envoy sets it (ingress-nginx's HTTPS redirect applies to `http` requests only).
                if !is_token(name) && !name.eq_ignore_ascii_case(":scheme") {
                    return Err(("name", Problem::BadHeaderName(name.to_owned())));
                }
                name.to_ascii_lowercase()
            }
            (_, Some(name)) => name.to_owned(),
        };
        let value = || {
            spec.value
                .clone()
                .ok_or(("value", Problem::MissingValue { op: op_name(spec.op) }))
        };
        let test = match (spec.op, spec.ignore_case) {
            (MatchOp::Exact, false) => ValueTest::Exact(value()?),
            (MatchOp::Prefix, false) => ValueTest::Prefix(value()?),
            (MatchOp::Contains, false) => ValueTest::Contains(value()?),
            (MatchOp::Exact, true) => ValueTest::ExactNoCase(value()?),
            (MatchOp::Prefix, true) => ValueTest::PrefixNoCase(value()?),
            (MatchOp::Contains, true) => ValueTest::ContainsNoCase(value()?),
            (MatchOp::Regex, false) => ValueTest::Regex(anchored_regex(&value()?).map_err(|p| ("value", p))?),
            (MatchOp::Present, false) => ValueTest::Present,
            (MatchOp::Regex | MatchOp::Present, true) => {
                return Err(("ignore_case", Problem::IgnoreCaseNotAllowed { op: op_name(spec.op) }))
            }
        };
        Ok(Condition {
            source: spec.on,
            name,
            test,
            invert: spec.invert,
        })
    }

    /// What part of the request this condition reads.
    pub fn source(&self) -> ConditionSource {
        self.source
    }

    /// Whether the request satisfies this condition.
    pub fn holds(&self, request: &impl RequestView) -> bool {
        let test = &mut |value: &str| self.test.accepts(value);
        let any = match self.source {
            ConditionSource::Method => test(request.method()),
            ConditionSource::Header => request.any_header_value(&self.name, test),
            ConditionSource::Cookie => request.any_cookie_value(&self.name, test),
            ConditionSource::Query => request.any_query_value(&self.name, test),
        };
        any != self.invert
    }
}

impl ValueTest {
    fn accepts(&self, value: &str) -> bool {
        match self {
            ValueTest::Exact(expected) => value == expected,
            ValueTest::Prefix(prefix) => value.starts_with(prefix.as_str()),
            ValueTest::Contains(part) => value.contains(part.as_str()),
            ValueTest::ExactNoCase(expected) => value.eq_ignore_ascii_case(expected),
            ValueTest::PrefixNoCase(prefix) => value
                .as_bytes()
                .get(..prefix.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes())),
            ValueTest::ContainsNoCase(part) => {
                part.is_empty()
                    || value
                        .as_bytes()
                        .windows(part.len())
                        .any(|window| window.eq_ignore_ascii_case(part.as_bytes()))
            }
            ValueTest::Regex(regex) => regex.is_match(value),
            ValueTest::Present => true,
        }
    }
}

fn op_name(op: MatchOp) -> &'static str {
    match op {
        MatchOp::Exact => "exact",
        MatchOp::Prefix => "prefix",
        MatchOp::Contains => "contains",
        MatchOp::Regex => "regex",
        MatchOp::Present => "present",
    }
}
