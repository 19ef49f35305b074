//! ROUTING.md §4 on the compiler's side: the table order (keys 1 to 5, total) and the fall-back
//! from a rule whose conditions fail to the next one down, across paths and host levels.

mod common;

use common::*;
use switchyard_compiler::model::{Claiming, Draft, HostOrder};
use switchyard_compiler::objects::{Age, Kind, ResourceKey};
use switchyard_table::{ActionSpec, Backend, ConditionSource, ConditionSpec, MatchOp, PathSpec, RouteAction, RuleSpec};

fn rule(name: &str, host: Option<&str>, path: PathSpec, conditions: &[ConditionSource]) -> RuleSpec {
    RuleSpec {
        name: name.to_owned(),
        host: host.map(str::to_owned),
        path,
        conditions: conditions
            .iter()
            .map(|&on| ConditionSpec {
                on,
                name: (on != ConditionSource::Method).then(|| "k".to_owned()),
                op: MatchOp::Exact,
                value: Some("v".into()),
                invert: false,
                ignore_case: false,
            })
            .collect(),
        action: ActionSpec::Route(RouteAction {
            backends: vec![Backend {
                cluster: "c".into(),
                weight: 1,
            }],
            rewrite_prefix: None,
            rewrite_regex: None,
            set_headers: vec![],
            remove_headers: vec![],
            canary: None,
            affinity: None,
        }),
        hsts: None,
        policy: None,
    }
}

fn draft(rule: RuleSpec, created: Option<i64>, uid: &str, namespace: &str, name: &str, position: usize) -> Draft {
    let key = ResourceKey {
        kind: Kind::Ingress,
        namespace: namespace.into(),
        name: name.into(),
    };
    let age = std::sync::Arc::new(Age {
        created: created.map(|s| (s, 0)),
        uid: uid.into(),
        key: key.clone(),
    });
    Draft {
        owner: key.clone(),
        age: age.clone(),
        position,
        claimant: key,
        claimant_age: age,
        rule,
        order: HostOrder::General,
        claiming: Claiming::Contends,
    }
}

fn order(drafts: Vec<Draft>) -> Vec<String> {
    switchyard_compiler::order::sort(drafts)
        .into_iter()
        .map(|r| r.name)
        .collect()
}

fn simple(name: &str, host: Option<&str>, path: PathSpec, conditions: &[ConditionSource]) -> Draft {
    draft(rule(name, host, path, conditions), Some(0), "", "ns", name, 0)
}

fn seg(p: &str) -> PathSpec {
    PathSpec::SegmentPrefix(p.into())
}

#[test]
fn exact_host_beats_wildcard_beats_catch_all() {
    let drafts = vec![
        simple("any", None, PathSpec::Exact("/x".into()), &[ConditionSource::Cookie]),
        simple("wild", Some("*.example.net"), seg("/"), &[]),
        simple("exact", Some("a.example.net"), seg("/"), &[]),
    ];
    assert_eq!(order(drafts), ["exact", "wild", "any"]);
}

#[test]
fn exact_path_beats_regex_beats_prefix() {
    let h = Some("h.example.net");
    let drafts = vec![
        simple("prefix", h, PathSpec::Prefix("/a/very/long/prefix".into()), &[]),
        simple("regex", h, PathSpec::Regex("/a.*".into()), &[]),
        simple("exact", h, PathSpec::Exact("/a".into()), &[]),
    ];
    assert_eq!(order(drafts), ["exact", "regex", "prefix"]);
}

#[test]
fn longer_prefix_wins_and_segment_beats_string_at_equal_length() {
    let h = Some("h.example.net");
    let drafts = vec![
        simple("short", h, seg("/a"), &[]),
        simple("string", h, PathSpec::Prefix("/abc".into()), &[]),
        simple("segment", h, seg("/abc"), &[]),
        simple("longest", h, PathSpec::Prefix("/abcd".into()), &[]),
    ];
    assert_eq!(order(drafts), ["longest", "segment", "string", "short"]);
}

#[test]
fn longer_regex_wins_among_regexes() {
    let h = Some("h.example.net");
    let drafts = vec![
        simple("short", h, PathSpec::Regex("/.*".into()), &[]),
        simple("long", h, PathSpec::Regex("/a/.*".into()), &[]),
    ];
    assert_eq!(order(drafts), ["long", "short"]);
}

#[test]
fn more_conditions_win_at_equal_host_and_path() {
    use ConditionSource::*;
    let h = Some("h.example.net");
    let drafts = vec![
        simple("one", h, seg("/"), &[Cookie]),
        simple("two", h, seg("/"), &[Method, Query]),
        simple("none", h, seg("/"), &[]),
    ];
    assert_eq!(order(drafts), ["two", "one", "none"]);
}

#[test]
fn condition_kinds_compare_strongest_first_cookie_header_query_method() {
    use ConditionSource::*;
    let h = Some("h.example.net");
    let drafts = vec![
        simple("method", h, seg("/"), &[Method]),
        simple("header", h, seg("/"), &[Header]),
        simple("query", h, seg("/"), &[Query]),
        simple("cookie", h, seg("/"), &[Cookie]),
    ];
    assert_eq!(order(drafts), ["cookie", "header", "query", "method"]);
    // cookie+header beats cookie+query, whatever order the conditions are written in.
    let drafts = vec![
        simple("cq", h, seg("/"), &[Query, Cookie]),
        simple("ch", h, seg("/"), &[Header, Cookie]),
    ];
    assert_eq!(order(drafts), ["ch", "cq"]);
}

#[test]
fn at_equal_keys_the_older_resource_then_smaller_uid_then_name_then_position_wins() {
    let h = Some("h.example.net");
    let same = |name: &str| rule(name, h, seg("/"), &[]);
    let drafts = vec![
        draft(same("newest"), Some(300), "a", "ns", "newest", 0),
        draft(same("uid-b"), Some(100), "b", "ns", "uid-b", 0),
        draft(same("uid-a-name-z"), Some(100), "a", "ns", "z", 0),
        draft(same("uid-a-name-y-1"), Some(100), "a", "ns", "y", 1),
        draft(same("uid-a-name-y-0"), Some(100), "a", "ns", "y", 0),
        draft(same("unstamped"), None, "z", "ns", "unstamped", 0),
    ];
    assert_eq!(
        order(drafts),
        [
            "unstamped",
            "uid-a-name-y-0",
            "uid-a-name-y-1",
            "uid-a-name-z",
            "uid-b",
            "newest"
        ]
    );
}

#[test]
fn table_order_does_not_depend_on_input_order() {
    let yaml = [
        simple_ingress("a", "shop.example.com", "/", "a", "", None),
        simple_ingress(
            "b",
            "shop.example.com",
            "/b",
            "b",
            "  annotations:\n    switchyard.io/router.header: \"x: 1\"\n",
            None,
        ),
        simple_ingress("c", "*.example.com", "/", "c", "", None),
        simple_ingress("d", "shop.example.com", "/b", "d", "", None),
    ];
    let forward = compile_default(&yaml.concat());
    let backward = compile_default(&yaml.iter().rev().cloned().collect::<String>());
    assert_eq!(
        serde_json::to_string(&forward.table).unwrap(),
        serde_json::to_string(&backward.table).unwrap()
    );
    assert_eq!(forward.statuses, backward.statuses);
}

#[test]
fn a_rule_whose_conditions_fail_falls_back_to_the_next_rule_across_paths_and_hosts() {
    let header = "  annotations:\n    switchyard.io/router.header: \"x-canary: 1\"\n";
    let yaml = [
        simple_ingress("canary", "shop.example.com", "/api", "canary", header, None),
        simple_ingress("root", "shop.example.com", "/", "root", header, None),
        simple_ingress("wild", "*.example.com", "/", "wild", "", None),
    ]
    .concat();
    let c = compile_default(&yaml);
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/api").header("x-canary", "1")).as_deref(),
        Some("default/canary:80")
    );
    // Both exact-host rules need the header: the request falls to the wildcard host.
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/api")).as_deref(),
        Some("default/wild:80")
    );
}

#[test]
fn generation_is_a_content_hash_of_the_table() {
    let a = compile_default(&simple_ingress("a", "shop.example.com", "/", "a", "", None));
    let again = compile_default(&simple_ingress("a", "shop.example.com", "/", "a", "", None));
    let b = compile_default(&simple_ingress("a", "shop.example.com", "/", "b", "", None));
    assert_eq!(a.table.generation, again.table.generation);
    assert_ne!(a.table.generation, b.table.generation);
    assert_eq!(a.table.generation.len(), 16);
}
