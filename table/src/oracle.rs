//! The matcher's definition as a test oracle, and random tables and requests to hold it against.
//!
//! [`scan`] is ROUTING.md §4 read literally: the first rule in table order whose host, path and
//! conditions all match ([`crate::Rule::matches`], no index). [`RouteTable::route`] must agree with it
//! on every table and request; the table's tests and the fuzz targets (`fuzz/`) both check that,
//! drawing tables and requests from the same small vocabularies here (chosen so that hosts, paths and
//! conditions overlap often), through any source of choices: a seeded generator in the tests, the
//! fuzzer's bytes in `fuzz/`.

use crate::format::{ActionSpec, ConditionSource, ConditionSpec, MatchOp, PathSpec, RouteAction, RuleSpec, TableSpec};
use crate::request::{RequestView, SimpleRequest};
use crate::{RouteTable, TableError};

/// The position of the first rule that matches `request`, by a plain scan of every rule.
pub fn scan(table: &RouteTable, request: &impl RequestView) -> Option<usize> {
    table.rules().iter().position(|rule| rule.matches(request))
}

/// Whether the index and the scan pick the same rule; `Err` describes the disagreement.
pub fn agree(table: &RouteTable, request: &SimpleRequest) -> Result<(), String> {
    let routed = table.route(request, 0).map(|d| d.position);
    let scanned = scan(table, request);
    if routed == scanned {
        Ok(())
    } else {
        Err(format!(
            "index picked {routed:?}, the scan {scanned:?}, for {request:?}"
        ))
    }
}

/// Request hosts.
pub const HOSTS: &[&str] = &[
    "a.example.net",
    "b.example.net",
    "example.net",
    "x.a.example.net",
    "other.org",
    "A.Example.NET.:8080",
];
/// Rule hosts (`""`: any host).
pub const RULE_HOSTS: &[&str] = &[
    "a.example.net",
    "*.example.net",
    "example.net",
    "*.net",
    "",
    "other.org",
];
/// Request paths (query strings included).
pub const PATHS: &[&str] = &[
    "/", "/a", "/a/", "/a/b", "/ab", "/a/bc", "/a/b/c", "/b", "/é/x", "/a//b", "/a?x=/b", "", "//", "/a/b/", "/A/B",
    "/AB/c", "/É/x", "/a/b\n",
];
/// Rule paths, `type:value`.
pub const RULE_PATHS: &[&str] = &[
    "segment_prefix:/",
    "segment_prefix:/a",
    "segment_prefix:/a/",
    "segment_prefix:/a/b",
    "segment_prefix:/a//b",
    "prefix:/a",
    "prefix:/a/b",
    "prefix:/",
    "prefix:/a/",
    "exact:/a",
    "exact:/a/b",
    "exact:/",
    "regex:/a/.*",
    "regex:/[ab]+",
    "regex:/ab?/?b*",
    "regex:/a|/b/c",
    "prefix:/é",
    "segment_prefix:/é",
    // ingress-nginx's regex-mode locations (ROUTING.md §7.4): matched without a regex, with a regex
    // after a literal start in any ASCII case, or with no literal start; and a case-sensitive start.
    "regex:(?i)(?:/a).*",
    "regex:(?i)(?:/A/b(/|$)(.*)).*",
    "regex:(?i)(?:/a[/]b).*",
    "regex:(?i)(?:/é).*",
    "regex:(?i)(?:/a|/b).*",
    "regex:/A.*",
];

/// A table of up to `max_rules` rules drawn with `choose(n)`, which returns a number below `n`.
/// Every rule the vocabularies make is valid, so this is `Ok` unless they are broken.
pub fn table(choose: &mut impl FnMut(usize) -> usize, max_rules: usize) -> Result<RouteTable, TableError> {
    let count = 1 + choose(max_rules.max(1));
    let rules = (0..count).map(|i| rule(choose, i)).collect();
    RouteTable::try_from(TableSpec {
        rules,
        ..TableSpec::default()
    })
}

fn pick<'v>(choose: &mut impl FnMut(usize) -> usize, from: &[&'v str]) -> &'v str {
    from.get(choose(from.len())).copied().unwrap_or_default()
}

/// A rule named `r{i}` drawn with `choose` from the vocabularies (always valid).
pub fn rule(choose: &mut impl FnMut(usize) -> usize, i: usize) -> RuleSpec {
    let host = pick(choose, RULE_HOSTS);
    let (kind, value) = pick(choose, RULE_PATHS).split_once(':').unwrap_or(("prefix", "/"));
    let path = match kind {
        "exact" => PathSpec::Exact(value.to_owned()),
        "segment_prefix" => PathSpec::SegmentPrefix(value.to_owned()),
        "regex" => PathSpec::Regex(value.to_owned()),
        _ => PathSpec::Prefix(value.to_owned()),
    };
    let condition = |on, name: &str, op, value: Option<&str>, invert| ConditionSpec {
        on,
        name: (on != ConditionSource::Method).then(|| name.to_owned()),
        op,
        value: value.map(str::to_owned),
        invert,
        ignore_case: false,
    };
    let conditions = match choose(6) {
        0 => vec![condition(
            ConditionSource::Header,
            "h",
            MatchOp::Exact,
            Some("1"),
            false,
        )],
        1 => vec![condition(ConditionSource::Cookie, "k", MatchOp::Present, None, false)],
        2 => vec![condition(
            ConditionSource::Query,
            "q",
            MatchOp::Prefix,
            Some("v"),
            choose(2) == 0,
        )],
        3 => vec![condition(
            ConditionSource::Method,
            "",
            MatchOp::Exact,
            Some("GET"),
            true,
        )],
        _ => Vec::new(),
    };
    RuleSpec {
        name: format!("r{i}"),
        host: (!host.is_empty()).then(|| host.to_owned()),
        path,
        conditions,
        action: ActionSpec::Route(RouteAction::to("c".to_owned())),
        hsts: None,
        policy: None,
    }
}

/// A request drawn with `choose`: a host and path from the vocabularies, maybe a header, a cookie,
/// a query parameter and another method.
pub fn request(choose: &mut impl FnMut(usize) -> usize) -> SimpleRequest {
    let mut path = pick(choose, PATHS).to_owned();
    if choose(3) == 0 {
        path.push_str(if path.contains('?') { "&q=v1" } else { "?q=v1" });
    }
    let mut request = SimpleRequest::get(pick(choose, HOSTS), &path);
    if choose(2) == 0 {
        request = request.header("h", "1");
    }
    if choose(2) == 0 {
        request = request.cookie("k", "v");
    }
    if choose(4) == 0 {
        request = request.method("POST");
    }
    request
}
