//! The incremental encoder of the compact form: whatever it encoded before, it writes exactly the
//! bytes a fresh encoder writes, over sequences of table changes; and it deflates again only the
//! chunks a change touched.

use switchyard_table::compact::{self, Encoder};
use switchyard_table::{
    ActionSpec, Affinity, AffinityCookie, Backend, ConditionSource, ConditionSpec, DirectResponse, HashPart,
    HeaderValue, MatchOp, NoRoute, PathSpec, Policy, Redirect, RouteAction, RuleSpec, TableSpec,
};

/// Rule `i` of a table like the compiler's: mostly routes, some with conditions, rewrites, direct
/// responses and redirects; `salt` changes its backend.
fn rule(i: usize, salt: &str) -> RuleSpec {
    let host = format!("h{}.example", i / 100);
    let conditions = match i % 7 {
        0 => vec![ConditionSpec {
            on: ConditionSource::Header,
            name: Some("x-canary".into()),
            op: MatchOp::Exact,
            value: Some(format!("v{i}")),
            invert: i % 2 == 0,
            ignore_case: false,
        }],
        _ => Vec::new(),
    };
    let action = match i % 13 {
        5 => ActionSpec::DirectResponse(DirectResponse {
            status: 503,
            body: Some(format!("no backend for rule {i}")),
            ..DirectResponse::default()
        }),
        9 => ActionSpec::Redirect(Redirect {
            url: format!("https://${{host}}/r{i}${{request_uri}}"),
            status: 301,
        }),
        _ => ActionSpec::Route(RouteAction {
            backends: vec![Backend {
                cluster: format!("ns{}/s{i}{salt}:80", i % 40),
                weight: 1,
            }],
            rewrite_prefix: (i % 11 == 0).then(|| "/".to_owned()),
            rewrite_regex: None,
            set_headers: match i % 17 {
                3 => vec![HeaderValue {
                    name: "x-team".into(),
                    value: format!("t{i}"),
                }],
                _ => Vec::new(),
            },
            remove_headers: Vec::new(),
            canary: None,
            affinity: match i % 13 {
                5 => Some(Box::new(Affinity::Cookie(AffinityCookie {
                    name: "INGRESSCOOKIE".into(),
                    attributes: format!("Path=/p{i}; HttpOnly"),
                }))),
                9 => Some(Box::new(Affinity::Hash(vec![
                    HashPart::Header("x-user".into()),
                    HashPart::Uri,
                ]))),
                _ => None,
            },
        }),
    };
    RuleSpec {
        name: format!("Ingress/ns{}/app{}#{}", i % 40, i / 100, i % 100),
        host: Some(host),
        path: PathSpec::SegmentPrefix(format!("/app{}/p{}", i / 100, i % 100)),
        conditions,
        action,
        hsts: None,
        // Every seventh rule a body limit, one of two: the encoders share what repeats.
        policy: (i % 7 == 2).then(|| {
            std::sync::Arc::new(Policy {
                max_body_bytes: Some(1_048_576 << (i % 2)),
                ..Policy::default()
            })
        }),
    }
}

fn table(rules: Vec<RuleSpec>) -> TableSpec {
    TableSpec {
        generation: format!("g{}", rules.len()),
        rules,
        ..TableSpec::default()
    }
}

type Edit = (&'static str, fn(&mut TableSpec));

/// Each edit applies to the table the previous one left, in order.
const EDITS: &[Edit] = &[
    ("one rule's backend changed in the middle", |t| {
        t.rules[1234] = rule(1234, "-b")
    }),
    ("a rule inserted at the start", |t| t.rules.insert(0, rule(90_000, ""))),
    ("a rule inserted in the middle", |t| {
        t.rules.insert(2000, rule(90_001, ""))
    }),
    ("a rule appended", |t| t.rules.push(rule(90_002, ""))),
    ("the first rule removed", |t| drop(t.rules.remove(0))),
    ("a rule removed in the middle", |t| drop(t.rules.remove(3000))),
    ("the last rule removed", |t| drop(t.rules.pop())),
    ("one Ingress's 100 rules changed", |t| {
        for i in 2500..2600 {
            t.rules[i] = rule(i, "-c");
        }
    }),
    ("one Ingress's 100 rules removed", |t| drop(t.rules.drain(1000..1100))),
    ("one Ingress's 100 rules inserted", |t| {
        let new: Vec<RuleSpec> = (80_000..80_100).map(|i| rule(i, "")).collect();
        t.rules.splice(4000..4000, new);
    }),
    ("a condition added to a rule", |t| {
        t.rules[10].conditions.push(ConditionSpec {
            on: ConditionSource::Cookie,
            name: Some("user".into()),
            op: MatchOp::Present,
            value: None,
            invert: false,
            ignore_case: false,
        })
    }),
    ("the generation changed", |t| t.generation = "another".into()),
    ("the cluster header changed", |t| t.cluster_header = "x-other".into()),
    ("no_route changed", |t| t.no_route = NoRoute::Pass),
    ("the debug rule header turned on", |t| t.debug_rule_header = true),
    ("two rules swapped", |t| t.rules.swap(100, 4100)),
    ("every rule's backend changed", |t| {
        for (i, r) in t.rules.iter_mut().enumerate() {
            *r = rule(i, "-d");
        }
    }),
    ("a rule repeated many times (identical pieces)", |t| {
        let r = t.rules[0].clone();
        t.rules.splice(50..50, std::iter::repeat_n(r, 3000));
    }),
    ("down to one rule", |t| t.rules.truncate(1)),
    ("no rules", |t| t.rules.clear()),
    ("back to 5,000 rules", |t| {
        t.rules = (0..5000).map(|i| rule(i, "")).collect()
    }),
];

fn decoded(text: &str) -> serde_json::Value {
    let wrapper: serde_json::Value = serde_json::from_str(text).unwrap();
    compact::unwrap(wrapper).unwrap()
}

#[test]
fn incremental_encoding_is_byte_identical_to_a_fresh_encoding_over_every_change() {
    let mut t = table((0..5000).map(|i| rule(i, "")).collect());
    let mut encoder = Encoder::new();
    let first = encoder.encode(&t).unwrap();
    assert_eq!(first, compact::to_text(&t).unwrap());
    assert_eq!(decoded(&first), serde_json::to_value(&t).unwrap());
    for (what, edit) in EDITS {
        edit(&mut t);
        let incremental = encoder.encode(&t).unwrap();
        let fresh = compact::to_text(&t).unwrap();
        assert!(
            incremental == fresh,
            "{what}: the incremental encoding differs from a fresh one"
        );
        assert_eq!(decoded(&incremental), serde_json::to_value(&t).unwrap(), "{what}");
        assert_eq!(TableSpec::from_value(decoded(&incremental)).unwrap(), t, "{what}");
    }
}

#[test]
fn a_change_deflates_only_the_chunks_it_touches() {
    let mut t = table((0..20_000).map(|i| rule(i, "")).collect());
    let mut encoder = Encoder::new();
    encoder.encode(&t).unwrap();
    let all = encoder.stats();
    assert_eq!(all.chunks, all.deflated, "a fresh encoder deflates every chunk");
    assert!(all.chunks > 40, "{all:?}");

    // Each chunk is deflated after the PRIME_BYTES before it: a changed chunk changes the
    // compressed form of the next (and of the one after, when the next is shorter than that). The
    // head (table settings, rule count) is a chunk of its own.
    t.rules[7777] = rule(7777, "-x");
    t.generation = "g2".into();
    encoder.encode(&t).unwrap();
    assert!(
        (3..=4).contains(&encoder.stats().deflated),
        "the head, the changed rule's chunk and the next: {:?}",
        encoder.stats()
    );

    t.rules.insert(12_345, rule(99_999, ""));
    encoder.encode(&t).unwrap();
    // The head, the chunk the new rule joined (two, if it ends one) and the next.
    assert!((3..=5).contains(&encoder.stats().deflated), "{:?}", encoder.stats());

    // One Ingress's 100 rules, adjacent: the head, their chunk or two, and the next.
    for i in 3000..3100 {
        t.rules[i] = rule(i, "-y");
    }
    t.generation = "g3".into();
    encoder.encode(&t).unwrap();
    assert!((3..=6).contains(&encoder.stats().deflated), "{:?}", encoder.stats());

    // The same table again: every chunk, the head included, is in the cache.
    encoder.encode(&t).unwrap();
    assert_eq!(encoder.stats().deflated, 0, "{:?}", encoder.stats());
}

/// The cache holds the chunks of the last table only: a big table then a small one leave the
/// small one's chunks.
#[test]
fn the_cache_keeps_the_last_table_s_chunks_only() {
    let mut encoder = Encoder::new();
    encoder
        .encode(&table((0..20_000).map(|i| rule(i, "")).collect()))
        .unwrap();
    let big = encoder.stats();
    assert!(big.cached > 40 && big.cached <= big.chunks, "{big:?}");
    encoder
        .encode(&table((0..300).map(|i| rule(i, "-s")).collect()))
        .unwrap();
    let small = encoder.stats();
    assert!(small.cached <= small.chunks && small.chunks < 10, "{small:?}");
    encoder.encode(&table(Vec::new())).unwrap();
    // What comes before the empty `rules` and what comes after it (`version`, in key order).
    assert_eq!(encoder.stats().cached, 2, "{:?}", encoder.stats());
}

/// The binary document of a table is that of its JSON value: objects' keys in order, as
/// `serde_json::Value` keeps them, whatever the order of the struct's fields.
#[test]
fn a_table_encodes_as_its_json_value_does() {
    let t = table((0..300).map(|i| rule(i, "")).collect());
    let value = serde_json::to_value(&t).unwrap();
    assert_eq!(compact::to_binary(&t).unwrap(), compact::to_binary(&value).unwrap());
    assert_eq!(compact::to_text(&t).unwrap(), compact::to_text(&value).unwrap());
}

#[test]
fn every_corpus_table_encodes_alike_fresh_and_after_another() {
    let mut encoder = Encoder::new();
    for case in switchyard_cases::routing_cases() {
        let document = case.table();
        let text = encoder.encode(&document).unwrap();
        assert_eq!(text, compact::to_text(&document).unwrap(), "{}", case.name);
        assert_eq!(decoded(&text), document, "{}", case.name);
    }
}
