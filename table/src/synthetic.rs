//! Synthetic tables of any size, for benchmarks (ours, host-sim's and Envoy's).
//!
//! The mix is meant to look like a real cluster's: about ten rules per host, nine hosts in ten
//! exact and the rest wildcards, segment prefixes one to five segments deep with some string
//! prefixes, exact paths and regexes, a tenth of the rules with a header or cookie condition, and
//! one catch-all. Every table also holds a "deep" host built for the worst case: a request to it
//! ([`worst_request`]) fails the conditions of a rule at every depth of its path, and of the
//! wildcard above it, and falls through to the catch-all. The output is deterministic.

use crate::format::{ActionSpec, ConditionSource, ConditionSpec, MatchOp, PathSpec, RouteAction, RuleSpec, TableSpec};
use crate::precedence::by_precedence;
use crate::request::SimpleRequest;

/// The host whose rules [`worst_request`] falls through.
pub const DEEP_HOST: &str = "deep.example.net";

/// A table of exactly `rules` rules (at least 8), sorted by priority as the compiler sorts.
pub fn table(rules: usize) -> TableSpec {
    let mut specs = deep_rules();
    let filler = rules.saturating_sub(specs.len());
    specs.extend((0..filler).map(filler_rule));
    specs.sort_by(by_precedence); // stable: equal rules keep generation order, as key 5 would
    TableSpec {
        generation: format!("synthetic-{rules}"),
        rules: specs,
        ..TableSpec::default()
    }
}

/// A request that the last plain segment-prefix rule of a table of `rules` rules wins.
pub fn typical_request(rules: usize) -> SimpleRequest {
    let filler = rules.saturating_sub(deep_rules().len());
    let plain = (0..filler)
        .rev()
        .find(|&i| i % 10 != 9 && i % 20 != 7 && i % 20 != 17 && i % 50 % 8 != 5 && !matches!(i % 50, 3 | 4 | 29));
    let i = plain.unwrap_or(0);
    SimpleRequest::get(
        &format!("h{}.example.net", i / 10),
        &format!("{}/page?id=42", filler_segments(i)),
    )
    .header("user-agent", "bench")
    .header("accept", "*/*")
}

/// The deepest fallback: every conditioned rule on the way fails, the catch-all wins.
pub fn worst_request() -> SimpleRequest {
    SimpleRequest::get(DEEP_HOST, "/a/b/c/d/e/f?x=1&y=2")
        .header("user-agent", "bench")
        .header("x-variant", "none")
        .header("cookie", "session=abc; theme=dark")
        .header("cookie", "tracking=0")
}

fn deep_rules() -> Vec<RuleSpec> {
    let mut rules: Vec<RuleSpec> = (1..=5)
        .map(|depth| {
            let path = ["a", "b", "c", "d", "e"][..depth]
                .iter()
                .fold(String::new(), |p, s| p + "/" + s);
            let rule = spec(&format!("deep-{depth}"), Some(DEEP_HOST), PathSpec::SegmentPrefix(path));
            with_condition(
                rule,
                if depth % 2 == 0 {
                    ConditionSource::Cookie
                } else {
                    ConditionSource::Header
                },
            )
        })
        .collect();
    rules.push(spec(
        "deep-regex",
        Some(DEEP_HOST),
        PathSpec::Regex("/a/b/[0-9]+/.*".into()),
    ));
    rules.push(with_condition(
        spec(
            "deep-wildcard",
            Some("*.example.net"),
            PathSpec::SegmentPrefix("/a/b".into()),
        ),
        ConditionSource::Cookie,
    ));
    rules.push(spec("default", None, PathSpec::Prefix("/".into())));
    rules
}

fn filler_rule(i: usize) -> RuleSpec {
    let group = i / 10;
    let host = if i % 10 == 9 {
        format!("*.t{group}.example.net")
    } else {
        format!("h{group}.example.net")
    };
    let segments = filler_segments(i);
    let path = match i % 50 {
        3 => PathSpec::Regex(format!("/r{}/[a-z]+/item-[0-9]+", i % 13)),
        4 | 29 => PathSpec::Exact(format!("{segments}/index.html")),
        n if n % 8 == 5 => PathSpec::Prefix(segments),
        _ => PathSpec::SegmentPrefix(segments),
    };
    let rule = spec(&format!("Ingress/bench/r{i}#0"), Some(&host), path);
    match i % 20 {
        7 => with_condition(rule, ConditionSource::Header),
        17 => with_condition(rule, ConditionSource::Cookie),
        _ => rule,
    }
}

/// One to five segments, `/s3/s4/...`.
fn filler_segments(i: usize) -> String {
    (0..1 + i % 5).map(|d| format!("/s{}", (i / 5 + d) % 7)).collect()
}

fn spec(name: &str, host: Option<&str>, path: PathSpec) -> RuleSpec {
    RuleSpec {
        name: name.to_owned(),
        host: host.map(str::to_owned),
        path,
        conditions: Vec::new(),
        action: ActionSpec::Route(RouteAction::to(format!("bench/{name}:80"))),
        hsts: None,
        policy: None,
    }
}

fn with_condition(mut rule: RuleSpec, on: ConditionSource) -> RuleSpec {
    let name = match on {
        ConditionSource::Cookie => "beta",
        _ => "x-variant",
    };
    rule.conditions.push(ConditionSpec {
        on,
        name: Some(name.to_owned()),
        op: MatchOp::Exact,
        value: Some("canary".to_owned()),
        invert: false,
        ignore_case: false,
    });
    rule
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RouteTable;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn synthetic_tables_have_the_asked_size_and_route_as_designed() {
        for size in [10, 1000] {
            let spec = table(size);
            assert_eq!(spec.rules.len(), size);
            let table = RouteTable::try_from(spec).unwrap();
            assert_eq!(table.route(&worst_request(), 0).unwrap().rule.name(), "default");
            let candidates = table.candidates(&worst_request());
            assert!(
                candidates.len() >= 7,
                "the worst case walks every depth: {}",
                candidates.len()
            );
            let typical = table.route(&typical_request(size), 0).unwrap();
            assert!(
                typical.rule.name().starts_with("Ingress/bench/"),
                "{}",
                typical.rule.name()
            );
        }
    }
}
