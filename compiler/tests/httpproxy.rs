//! ROUTING.md §3, HTTPProxy inclusion (seed 004, Contour's rules): condition concatenation,
//! malformed include and route conditions (skipped alone), header and query conflicts, 502 for
//! broken includes, cycles, roots including roots, orphans, namespaces, `--root-namespaces`; §5's
//! service ports (503 when unresolvable); plus the route features the table carries.

mod common;

use common::*;
use switchyard_compiler::objects::Kind;
use switchyard_compiler::status::{Reason, Status};
use switchyard_compiler::Options;
use switchyard_table::{ActionSpec, ConditionSource, MatchOp, PathSpec};

/// An HTTPProxy manifest from its name (`ns/name`) and the YAML of its spec (indented by 2).
fn proxy(id: &str, spec: &str) -> String {
    let (ns, name) = id.split_once('/').unwrap();
    format!("apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n{spec}---\n")
}

fn route(service: &str) -> String {
    format!("  routes:\n    - services:\n        - name: {service}\n          port: 80\n")
}

fn path_of(c: &switchyard_compiler::Compiled, service: &str) -> PathSpec {
    c.table
        .rules
        .iter()
        .find(|r| matches!(&r.action, ActionSpec::Route(a) if a.backends[0].cluster.contains(&format!("/{service}:"))))
        .unwrap_or_else(|| panic!("no rule for {service}: {:#?}", c.table.rules))
        .path
        .clone()
}

const ROOT_TO_CHILD: &str = "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: child\n      conditions:\n        - prefix: /api\n";

#[test]
fn include_prefixes_concatenate_from_the_root_down() {
    let yaml = format!(
        "{}{}{}",
        proxy("default/root", ROOT_TO_CHILD),
        proxy("default/child", "  includes:\n    - name: grandchild\n      conditions:\n        - prefix: /v1\n"),
        proxy("default/grandchild", "  routes:\n    - conditions:\n        - prefix: /users\n      services:\n        - name: users\n          port: 80\n")
    );
    let c = compile_default(&yaml);
    assert_eq!(path_of(&c, "users"), PathSpec::Prefix("/api/v1/users".into()));
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/api/v1/users/7")).as_deref(),
        Some("default/users:80")
    );
}

#[test]
fn repeated_slashes_collapse_when_prefixes_concatenate() {
    let yaml = format!(
        "{}{}",
        proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: child\n      conditions:\n        - prefix: /api/\n"),
        proxy("default/child", "  routes:\n    - conditions:\n        - prefix: /v1\n      services:\n        - name: v1\n          port: 80\n")
    );
    assert_eq!(
        path_of(&compile_default(&yaml), "v1"),
        PathSpec::Prefix("/api/v1".into())
    );
}

#[test]
fn child_route_without_conditions_inherits_the_include_prefix() {
    let yaml = format!(
        "{}{}",
        proxy("default/root", ROOT_TO_CHILD),
        proxy("default/child", &route("plain"))
    );
    assert_eq!(
        path_of(&compile_default(&yaml), "plain"),
        PathSpec::Prefix("/api".into())
    );
}

#[test]
fn child_exact_after_inherited_prefix_becomes_one_exact() {
    let yaml = format!(
        "{}{}",
        proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: child\n      conditions:\n        - prefix: /static\n"),
        proxy("default/child", "  routes:\n    - conditions:\n        - exact: /main.js\n      services:\n        - name: js\n          port: 80\n")
    );
    let c = compile_default(&yaml);
    assert_eq!(path_of(&c, "js"), PathSpec::Exact("/static/main.js".into()));
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/static/main.js")).as_deref(),
        Some("default/js:80")
    );
    assert_eq!(rule_for(&c, &get("http://root.example.com/static/main.jsx")), None);
}

#[test]
fn child_regex_after_inherited_prefix_becomes_one_regex() {
    let yaml = format!(
        "{}{}",
        proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: child\n      conditions:\n        - prefix: /static\n"),
        proxy("default/child", "  routes:\n    - conditions:\n        - regex: /.*/main.js\n      services:\n        - name: js\n          port: 80\n")
    );
    let c = compile_default(&yaml);
    assert_eq!(path_of(&c, "js"), PathSpec::Regex("/static/.*/main.js".into()));
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/static/v2/main.js")).as_deref(),
        Some("default/js:80")
    );
    assert_eq!(rule_for(&c, &get("http://root.example.com/other/v2/main.js")), None);
}

#[test]
fn exact_in_include_conditions_makes_the_include_invalid() {
    for condition in ["exact: /api", "regex: /api.*"] {
        let yaml = format!(
            "{}{}",
            proxy("default/root", &format!("  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: child\n      conditions:\n        - {condition}\n{}", route("root").trim_start_matches("  routes:\n").replace("    - services", "  routes:\n    - services"))),
            proxy("default/child", &route("child"))
        );
        let c = compile_default(&yaml);
        let root = status_of(&c, "HTTPProxy", "default", "root");
        assert_eq!(root.status, Status::Invalid, "{condition}");
        assert!(
            has_reason(root, Reason::PathMatchConditionsNotValid),
            "{condition}: {root:#?}"
        );
        // The include is skipped (no 502: nothing was delegated), the child is orphaned, and the
        // root's own route still serves.
        assert_eq!(status(&c, "HTTPProxy", "default", "child"), Status::Orphaned);
        assert_eq!(
            cluster_for(&c, &get("http://root.example.com/api")).as_deref(),
            Some("default/root:80")
        );
    }
}

#[test]
fn at_most_one_path_condition_per_block() {
    let yaml = proxy(
        "default/root",
        "  virtualhost:\n    fqdn: root.example.com\n  routes:\n    - conditions:\n        - prefix: /a\n        - exact: /b\n      services:\n        - name: s\n          port: 80\n",
    );
    let c = compile_default(&yaml);
    let root = status_of(&c, "HTTPProxy", "default", "root");
    assert_eq!(root.status, Status::Invalid);
    assert!(has_reason(root, Reason::PathMatchConditionsNotValid));
    assert!(c.table.rules.is_empty());
}

#[test]
fn a_path_condition_must_start_with_a_slash() {
    let yaml = proxy(
        "default/root",
        "  virtualhost:\n    fqdn: root.example.com\n  routes:\n    - conditions:\n        - prefix: api\n      services:\n        - name: s\n          port: 80\n",
    );
    let c = compile_default(&yaml);
    assert!(message(
        status_of(&c, "HTTPProxy", "default", "root"),
        Reason::PathMatchConditionsNotValid
    )
    .contains("must start with '/'"));
}

#[test]
fn header_and_query_conditions_are_unioned_down_the_tree() {
    let yaml = format!(
        "{}{}",
        proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: child\n      conditions:\n        - prefix: /api\n        - header:\n            name: X-Team\n            exact: shop\n"),
        proxy("default/child", "  routes:\n    - conditions:\n        - queryParameter:\n            name: v\n            exact: \"2\"\n        - header:\n            name: x-canary\n            present: true\n      services:\n        - name: s\n          port: 80\n")
    );
    let c = compile_default(&yaml);
    let rule = &c.table.rules[0];
    let kinds: Vec<(ConditionSource, &str, MatchOp)> = rule
        .conditions
        .iter()
        .map(|c| (c.on, c.name.as_deref().unwrap(), c.op))
        .collect();
    assert_eq!(
        kinds,
        [
            (ConditionSource::Header, "x-team", MatchOp::Exact),
            (ConditionSource::Query, "v", MatchOp::Exact),
            (ConditionSource::Header, "x-canary", MatchOp::Present),
            // A root without `tls` is served on plain HTTP only (ROUTING.md §8.1.6).
            (ConditionSource::Header, ":scheme", MatchOp::Exact)
        ]
    );
    let request = get("http://root.example.com/api/x?v=2")
        .header("X-Team", "shop")
        .header("X-Canary", "yes");
    assert_eq!(cluster_for(&c, &request).as_deref(), Some("default/s:80"));
    assert_eq!(
        rule_for(&c, &get("http://root.example.com/api/x?v=2").header("X-Canary", "yes")),
        None
    );
}

fn header_conflict(include_header: &str, route_header: &str) -> switchyard_compiler::Compiled {
    let yaml = format!(
        "{}{}",
        proxy("default/root", &format!("  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: child\n      conditions:\n        - prefix: /api\n        - header:\n            name: x-a\n            {include_header}\n")),
        proxy("default/child", &format!("  routes:\n    - conditions:\n        - header:\n            name: X-A\n            {route_header}\n      services:\n        - name: s\n          port: 80\n    - services:\n        - name: other\n          port: 80\n"))
    );
    compile_default(&yaml)
}

#[test]
fn duplicate_exact_header_conditions_make_the_proxy_invalid() {
    for (a, b) in [("exact: \"1\"", "exact: \"2\""), ("exact: \"1\"", "exact: \"1\"")] {
        let c = header_conflict(a, b);
        let child = status_of(&c, "HTTPProxy", "default", "child");
        assert_eq!(child.status, Status::Invalid);
        assert!(has_reason(child, Reason::DuplicateMatchConditionHeaders), "{child:#?}");
        // Un-routable: none of the child's routes is in the table.
        assert!(c.table.rules.is_empty(), "{:#?}", c.table.rules);
    }
}

#[test]
fn present_and_notpresent_on_one_header_make_the_proxy_invalid() {
    let c = header_conflict("present: true", "notpresent: true");
    assert!(has_reason(
        status_of(&c, "HTTPProxy", "default", "child"),
        Reason::HeaderMatchConditionsNotValid
    ));
    assert!(c.table.rules.is_empty());
}

#[test]
fn exact_and_notexact_with_the_same_value_make_the_proxy_invalid() {
    let c = header_conflict("exact: \"1\"", "notexact: \"1\"");
    assert!(has_reason(
        status_of(&c, "HTTPProxy", "default", "child"),
        Reason::HeaderMatchConditionsNotValid
    ));
    // Different values are fine.
    let ok = header_conflict("exact: \"1\"", "notexact: \"2\"");
    assert_eq!(status(&ok, "HTTPProxy", "default", "child"), Status::Valid);
    assert_eq!(ok.table.rules.len(), 2);
}

#[test]
fn contains_and_notcontains_with_the_same_value_make_the_proxy_invalid() {
    let c = header_conflict("contains: abc", "notcontains: abc");
    let child = status_of(&c, "HTTPProxy", "default", "child");
    assert_eq!(child.status, Status::Invalid);
    assert!(
        message(child, Reason::HeaderMatchConditionsNotValid).contains("must both contain and not contain \"abc\""),
        "{child:#?}"
    );
    // Un-routable: neither of the child's routes is in the table.
    assert!(c.table.rules.is_empty(), "{:#?}", c.table.rules);
    // Different values are fine.
    let ok = header_conflict("contains: abc", "notcontains: xyz");
    assert_eq!(status(&ok, "HTTPProxy", "default", "child"), Status::Valid);
    assert_eq!(ok.table.rules.len(), 2);
}

#[test]
fn two_exact_query_conditions_on_one_name_make_the_proxy_invalid() {
    let yaml = |route_query: &str| {
        format!(
            "{}{}",
            proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: child\n      conditions:\n        - prefix: /api\n        - queryParameter: {name: v, exact: \"1\"}\n"),
            proxy("default/child", &format!("  routes:\n    - conditions:\n        - queryParameter: {route_query}\n      services: [{{name: s, port: 80}}]\n    - services: [{{name: other, port: 80}}]\n"))
        )
    };
    let c = compile_default(&yaml("{name: v, exact: \"2\"}"));
    let child = status_of(&c, "HTTPProxy", "default", "child");
    assert_eq!(child.status, Status::Invalid);
    assert!(
        message(child, Reason::QueryParameterMatchConditionsNotValid)
            .contains("query parameter \"v\" has two exact conditions"),
        "{child:#?}"
    );
    assert!(c.table.rules.is_empty(), "{:#?}", c.table.rules);
    assert_eq!(rule_for(&c, &get("http://root.example.com/api?v=1&v=2")), None);
    // Another name, or another kind of test on the same name, is fine.
    for fine in ["{name: w, exact: \"2\"}", "{name: v, prefix: \"1\"}"] {
        let ok = compile_default(&yaml(fine));
        assert_eq!(status(&ok, "HTTPProxy", "default", "child"), Status::Valid, "{fine}");
        assert_eq!(ok.table.rules.len(), 2, "{fine}");
    }
}

#[test]
fn missing_include_answers_502_for_its_conditions() {
    let yaml = proxy(
        "default/root",
        &format!("  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: missing\n      conditions:\n        - prefix: /missing\n        - header:\n            name: x-team\n            exact: a\n{}", route("root")),
    );
    let c = compile_default(&yaml);
    let root = status_of(&c, "HTTPProxy", "default", "root");
    assert_eq!(root.status, Status::Invalid);
    assert!(message(root, Reason::IncludeNotFound).contains("default/missing not found"));
    assert_eq!(
        direct_status(&c, &get("http://root.example.com/missing/x").header("x-team", "a")),
        Some(502)
    );
    // Requests outside the include's conditions are not affected.
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/missing/x")).as_deref(),
        Some("default/root:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/other")).as_deref(),
        Some("default/root:80")
    );
}

#[test]
fn include_that_closes_a_cycle_answers_502() {
    let yaml = format!(
        "{}{}{}",
        proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: a\n      conditions:\n        - prefix: /a\n"),
        proxy("default/a", &format!("  includes:\n    - name: b\n      conditions:\n        - prefix: /b\n{}", route("sa"))),
        proxy("default/b", "  includes:\n    - name: a\n      conditions:\n        - prefix: /again\n")
    );
    let c = compile_default(&yaml);
    let b = status_of(&c, "HTTPProxy", "default", "b");
    assert_eq!(b.status, Status::Invalid);
    assert!(has_reason(b, Reason::IncludeCreatesCycle));
    assert_eq!(
        direct_status(&c, &get("http://root.example.com/a/b/again/x")),
        Some(502)
    );
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/a/x")).as_deref(),
        Some("default/sa:80")
    );
}

#[test]
fn proxy_including_itself_is_a_cycle() {
    let yaml = format!(
        "{}{}",
        proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: a\n      conditions:\n        - prefix: /a\n"),
        proxy("default/a", "  includes:\n    - name: a\n      conditions:\n        - prefix: /self\n")
    );
    let c = compile_default(&yaml);
    assert!(has_reason(
        status_of(&c, "HTTPProxy", "default", "a"),
        Reason::IncludeCreatesCycle
    ));
    assert_eq!(direct_status(&c, &get("http://root.example.com/a/self")), Some(502));
}

#[test]
fn include_of_another_root_answers_502() {
    let yaml = format!(
        "{}{}",
        proxy("default/root", &format!("  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: other\n      conditions:\n        - prefix: /other\n{}", route("root"))),
        proxy("default/other", &format!("  virtualhost:\n    fqdn: other.example.com\n{}", route("other")))
    );
    let c = compile_default(&yaml);
    let root = status_of(&c, "HTTPProxy", "default", "root");
    assert_eq!(root.status, Status::Invalid);
    assert!(
        message(root, Reason::RootIncludesRoot).contains("requests for it get 502"),
        "{root:#?}"
    );
    // Requests for the include's conditions get 502, not the root's own `/` route; the rest of the
    // root serves, and the other root keeps its own host.
    assert_eq!(direct_status(&c, &get("http://root.example.com/other/x")), Some(502));
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/x")).as_deref(),
        Some("default/root:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://other.example.com/other")).as_deref(),
        Some("default/other:80")
    );
    assert_eq!(status(&c, "HTTPProxy", "default", "other"), Status::Valid);
}

/// A root with its own route, a malformed include of `child` and a good include of `second`.
fn root_with_a_malformed_include(conditions: &str) -> String {
    format!(
        "{}{}{}",
        proxy("default/root", &format!("  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: child\n      conditions:\n{conditions}    - name: second\n      conditions:\n        - prefix: /second\n{}", route("root"))),
        proxy("default/child", &route("child")),
        proxy("default/second", &route("second"))
    )
}

#[test]
fn include_with_a_malformed_prefix_is_skipped_and_the_rest_of_the_proxy_serves() {
    for (conditions, why) in [
        ("        - prefix: api\n", "path \"api\" must start with '/'"),
        (
            "        - prefix: /a\n        - prefix: /b\n",
            "an include may have at most one prefix condition",
        ),
    ] {
        let c = compile_default(&root_with_a_malformed_include(conditions));
        let root = status_of(&c, "HTTPProxy", "default", "root");
        assert_eq!(root.status, Status::Invalid, "{conditions}");
        let said = message(root, Reason::PathMatchConditionsNotValid);
        assert!(said.contains(why) && said.contains("this include is skipped"), "{said}");
        // The root's own route and its other include keep serving; nothing answers 502 (nothing was
        // delegated) and the child is orphaned.
        assert_eq!(
            cluster_for(&c, &get("http://root.example.com/api/x")).as_deref(),
            Some("default/root:80")
        );
        assert_eq!(
            cluster_for(&c, &get("http://root.example.com/second/x")).as_deref(),
            Some("default/second:80")
        );
        assert_eq!(status(&c, "HTTPProxy", "default", "child"), Status::Orphaned);
        assert_eq!(status(&c, "HTTPProxy", "default", "second"), Status::Valid);
    }
}

#[test]
fn child_of_a_skipped_include_is_orphaned_unless_another_include_reaches_it() {
    let yaml = format!(
        "{}{}",
        proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: child\n      conditions:\n        - prefix: api\n    - name: child\n      conditions:\n        - prefix: /c\n"),
        proxy("default/child", &route("child"))
    );
    let c = compile_default(&yaml);
    assert_eq!(status(&c, "HTTPProxy", "default", "root"), Status::Invalid);
    assert_eq!(status(&c, "HTTPProxy", "default", "child"), Status::Valid);
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/c/x")).as_deref(),
        Some("default/child:80")
    );
    assert_eq!(rule_for(&c, &get("http://root.example.com/api")), None);
}

#[test]
fn route_with_malformed_conditions_is_refused_alone() {
    let yaml = proxy(
        "default/root",
        "  virtualhost:\n    fqdn: root.example.com\n  routes:\n    - conditions: [{prefix: api}]\n      services: [{name: a, port: 80}]\n    - conditions: [{prefix: /b}, {exact: /b/c}]\n      services: [{name: b, port: 80}]\n    - conditions: [{prefix: /h}, {header: {name: x-a, present: true, exact: \"1\"}}]\n      services: [{name: h, port: 80}]\n    - conditions: [{prefix: /}]\n      services: [{name: ok, port: 80}]\n",
    );
    let c = compile_default(&yaml);
    let root = status_of(&c, "HTTPProxy", "default", "root");
    assert_eq!(root.status, Status::Invalid);
    let path_errors: Vec<&str> = root
        .conditions
        .iter()
        .filter(|c| c.reason == Reason::PathMatchConditionsNotValid)
        .map(|c| c.message.as_str())
        .collect();
    assert_eq!(path_errors.len(), 2, "{root:#?}");
    assert!(path_errors[0].starts_with("spec.routes[0].conditions: path \"api\" must start with '/'"));
    assert!(path_errors[1].starts_with("spec.routes[1].conditions: at most one"));
    assert!(message(root, Reason::ConditionsNotValid).starts_with("spec.routes[2].conditions: header condition"));
    // The good route serves everything, under its own number (refused routes keep theirs).
    assert_eq!(rule_names(&c), ["HTTPProxy/default/root#3"]);
    for path in ["/api", "/b/c", "/h"] {
        let request = get(&format!("http://root.example.com{path}")).header("x-a", "1");
        assert_eq!(cluster_for(&c, &request).as_deref(), Some("default/ok:80"), "{path}");
    }
}

#[test]
fn proxies_no_valid_root_reaches_are_orphaned() {
    let c = compile_default(&proxy("default/lonely", &route("lonely")));
    let lonely = status_of(&c, "HTTPProxy", "default", "lonely");
    assert_eq!(lonely.status, Status::Orphaned);
    assert!(message(lonely, Reason::Orphaned).contains("no valid root HTTPProxy includes"));
    assert!(c.table.rules.is_empty());
}

#[test]
fn include_defaults_to_the_parents_namespace_and_may_cross_namespaces() {
    let yaml = format!(
        "{}{}{}",
        proxy("team/root", "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: same\n      conditions:\n        - prefix: /same\n    - name: blog\n      namespace: marketing\n      conditions:\n        - prefix: /blog\n"),
        proxy("team/same", &route("same")),
        proxy("marketing/blog", &route("blog"))
    );
    let c = compile_default(&yaml);
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/same")).as_deref(),
        Some("team/same:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/blog")).as_deref(),
        Some("marketing/blog:80")
    );
}

#[test]
fn root_namespaces_make_roots_elsewhere_invalid_and_their_children_orphaned() {
    let yaml = format!(
        "{}{}{}",
        proxy("team/root", "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: child\n      conditions:\n        - prefix: /c\n"),
        proxy("team/child", &route("child")),
        proxy("infra/root", &format!("  virtualhost:\n    fqdn: infra.example.com\n{}", route("infra")))
    );
    let options = Options {
        root_namespaces: vec!["infra".into()],
        ..Options::default()
    };
    let c = compile_yaml(&yaml, &options);
    let team_root = status_of(&c, "HTTPProxy", "team", "root");
    assert_eq!(team_root.status, Status::Invalid);
    assert!(has_reason(team_root, Reason::RootProxyNotAllowedInNamespace));
    assert_eq!(status(&c, "HTTPProxy", "team", "child"), Status::Orphaned);
    assert_eq!(status(&c, "HTTPProxy", "infra", "root"), Status::Valid);
    assert_eq!(rule_names(&c), ["HTTPProxy/infra/root#0"]);
}

#[test]
fn httpproxy_prefix_is_a_string_prefix() {
    let yaml = proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  routes:\n    - conditions:\n        - prefix: /foo\n      services:\n        - name: foo\n          port: 80\n");
    let c = compile_default(&yaml);
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/foobar")).as_deref(),
        Some("default/foo:80")
    );
}

#[test]
fn weighted_services_become_weighted_backends() {
    let yaml = proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  routes:\n    - services:\n        - name: v1\n          port: 8080\n          weight: 90\n        - name: v2\n          port: 8080\n          weight: 10\n    - conditions:\n        - prefix: /even\n      services:\n        - name: a\n          port: 80\n        - name: b\n          port: 80\n");
    let c = compile_default(&yaml);
    let weights = |i: usize| match &c.table.rules[i].action {
        ActionSpec::Route(r) => r
            .backends
            .iter()
            .map(|b| (b.cluster.clone(), b.weight))
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        weights(0),
        [("default/a:80".to_owned(), 1), ("default/b:80".to_owned(), 1)]
    );
    assert_eq!(
        weights(1),
        [("default/v1:8080".to_owned(), 90), ("default/v2:8080".to_owned(), 10)]
    );
}

#[test]
fn replace_prefix_and_request_headers_policy_reach_the_table() {
    let yaml = format!(
        "{}{}",
        proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: child\n      conditions:\n        - prefix: /api\n"),
        proxy("default/child", "  routes:\n    - services:\n        - name: s\n          port: 80\n      pathRewritePolicy:\n        replacePrefix:\n          - replacement: /\n      requestHeadersPolicy:\n        set:\n          - name: x-team\n            value: shop\n        remove:\n          - x-debug\n")
    );
    let c = compile_default(&yaml);
    let ActionSpec::Route(action) = &c.table.rules[0].action else {
        panic!()
    };
    assert_eq!(action.rewrite_prefix.as_deref(), Some("/"));
    assert_eq!(action.set_headers[0].name, "x-team");
    assert_eq!(action.remove_headers, ["x-debug"]);
    let t = table(&c);
    let decision = t.route(&get("http://root.example.com/api/users"), 0).unwrap();
    assert_eq!(
        decision.rule.rewrite("/api/users").map(|r| r.path).as_deref(),
        Some("/users")
    );
}

#[test]
fn every_httpproxy_gets_a_status() {
    let yaml = format!(
        "{}{}{}",
        proxy("default/root", ROOT_TO_CHILD),
        proxy("default/child", &route("c")),
        proxy("default/lonely", &route("l"))
    );
    let c = compile_default(&yaml);
    let proxies: Vec<(&str, Status)> = c
        .statuses
        .iter()
        .filter(|s| s.kind == Kind::HTTPProxy)
        .map(|s| (s.name.as_str(), s.status))
        .collect();
    assert_eq!(
        proxies,
        [
            ("child", Status::Valid),
            ("lonely", Status::Orphaned),
            ("root", Status::Valid)
        ]
    );
}

#[test]
fn a_bad_route_regex_is_refused_by_the_compiler_not_the_filter() {
    let yaml = proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  routes:\n    - conditions:\n        - regex: /(unclosed\n      services:\n        - name: s\n          port: 80\n    - services:\n        - name: ok\n          port: 80\n");
    let c = compile_default(&yaml);
    let root = status_of(&c, "HTTPProxy", "default", "root");
    assert!(has_reason(root, Reason::RouteNotValid), "{root:#?}");
    // The refused route keeps its number: names do not shift when one route is fixed.
    assert_eq!(rule_names(&c), ["HTTPProxy/default/root#1"]);
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/(unclosed")).as_deref(),
        Some("default/ok:80")
    );
}

#[test]
fn include_of_a_proxy_of_another_class_is_not_found_and_answers_502() {
    let yaml = format!(
        "{}{}",
        proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: child\n      conditions:\n        - prefix: /c\n"),
        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata:\n  name: child\n  namespace: default\n  annotations:\n    kubernetes.io/ingress.class: other\nspec:\n  routes:\n    - services:\n        - name: s\n          port: 80\n"
    );
    let c = compile_default(&yaml);
    let why = message(status_of(&c, "HTTPProxy", "default", "root"), Reason::IncludeNotFound);
    assert!(why.contains("exists but is not ours"), "{why}");
    assert_eq!(status(&c, "HTTPProxy", "default", "child"), Status::Ignored);
    assert_eq!(direct_status(&c, &get("http://root.example.com/c")), Some(502));
}

#[test]
fn the_502_rule_sits_below_routes_that_are_more_precise() {
    // A broken include under /api answers 502 only where no more precise rule of the tree matches.
    let yaml = proxy(
        "default/root",
        "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: missing\n      conditions:\n        - prefix: /api\n  routes:\n    - conditions:\n        - prefix: /api/health\n      services:\n        - name: health\n          port: 80\n",
    );
    let c = compile_default(&yaml);
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/api/health")).as_deref(),
        Some("default/health:80")
    );
    assert_eq!(direct_status(&c, &get("http://root.example.com/api/users")), Some(502));
    assert_eq!(rule_for(&c, &get("http://root.example.com/other")), None);
}

#[test]
fn include_trees_that_explode_are_cut_with_a_status() {
    // 20 levels of diamonds: 2^20 paths from the root. The walk is bounded and says so.
    let mut yaml = proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: l0\n      conditions: [{prefix: /a}]\n    - name: l0\n      conditions: [{prefix: /b}]\n");
    for level in 0..20 {
        let next = level + 1;
        yaml.push_str(&proxy(
            &format!("default/l{level}"),
            &format!("  includes:\n    - name: l{next}\n      conditions: [{{prefix: /a}}]\n    - name: l{next}\n      conditions: [{{prefix: /b}}]\n"),
        ));
    }
    yaml.push_str(&proxy("default/l20", &route("leaf")));
    let c = compile_default(&yaml);
    assert!(has_reason(
        status_of(&c, "HTTPProxy", "default", "root"),
        Reason::IncludeTreeTooLarge
    ));
    assert!(c.table.rules.len() <= 10_000);
}

#[test]
fn a_long_include_chain_is_cut_with_a_status() {
    let mut yaml = proxy(
        "default/root",
        "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: c0\n",
    );
    for i in 0..100 {
        yaml.push_str(&proxy(
            &format!("default/c{i}"),
            &format!("  includes:\n    - name: c{}\n", i + 1),
        ));
    }
    yaml.push_str(&proxy("default/c100", &route("leaf")));
    let c = compile_default(&yaml);
    assert!(has_reason(
        status_of(&c, "HTTPProxy", "default", "root"),
        Reason::IncludeTreeTooLarge
    ));
}

#[test]
fn replace_prefix_entry_is_chosen_by_the_matched_prefix() {
    let yaml = format!(
        "{}{}",
        proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  includes:\n    - name: app\n      conditions: [{prefix: /v1/app}]\n    - name: app\n      conditions: [{prefix: /v2/app}]\n"),
        proxy("default/app", "  routes:\n    - services: [{name: app, port: 80}]\n      pathRewritePolicy:\n        replacePrefix:\n          - prefix: /v1/app\n            replacement: /app/v1\n          - replacement: /app\n")
    );
    let c = compile_default(&yaml);
    let t = table(&c);
    let upstream = |path: &str| {
        t.route(&get(&format!("http://root.example.com{path}")), 0)
            .unwrap()
            .rule
            .rewrite(path)
            .map(|r| r.path)
    };
    assert_eq!(upstream("/v1/app/x").as_deref(), Some("/app/v1/x"));
    assert_eq!(upstream("/v2/app/x").as_deref(), Some("/app/x"));
}

/// A Service `default/api` whose only port is 8080.
const API_SERVICE: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: default}\nspec:\n  ports: [{name: http, port: 8080}]\n---\n";

#[test]
fn service_without_the_routes_port_answers_503_not_a_shorter_prefix() {
    let yaml = format!(
        "{API_SERVICE}{}",
        proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  routes:\n    - conditions: [{prefix: /api}]\n      services: [{name: api, port: 80}]\n    - conditions: [{prefix: /api/v2}]\n      services: [{name: api, port: 8080}]\n    - services: [{name: web, port: 80}]\n")
    );
    let c = compile_default(&yaml);
    let root = status_of(&c, "HTTPProxy", "default", "root");
    assert_eq!(root.status, Status::Invalid);
    assert_eq!(
        message(root, Reason::ServicePortNotFound),
        "spec.routes[0].services[0]: Service default/api has no port 80 (its ports: [http=8080]); requests for this route get 503"
    );
    assert_eq!(direct_status(&c, &get("http://root.example.com/api/users")), Some(503));
    // The Service's own port routes; a service not in the input is taken at its word.
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/api/v2/users")).as_deref(),
        Some("default/api:8080")
    );
    assert_eq!(
        cluster_for(&c, &get("http://root.example.com/other")).as_deref(),
        Some("default/web:80")
    );
}

#[test]
fn weighted_service_without_its_port_gets_no_traffic_and_the_others_share_it() {
    let yaml = format!(
        "{API_SERVICE}{}",
        proxy("default/root", "  virtualhost:\n    fqdn: root.example.com\n  routes:\n    - services:\n        - {name: api, port: 80, weight: 90}\n        - {name: canary, port: 80, weight: 10}\n")
    );
    let c = compile_default(&yaml);
    let root = status_of(&c, "HTTPProxy", "default", "root");
    assert!(message(root, Reason::ServicePortNotFound)
        .ends_with("this service gets no traffic; the route's other services share it"));
    let ActionSpec::Route(action) = &c.table.rules[0].action else {
        panic!("{:#?}", c.table.rules)
    };
    let backends: Vec<(&str, u32)> = action.backends.iter().map(|b| (b.cluster.as_str(), b.weight)).collect();
    assert_eq!(backends, [("default/canary:80", 10)]);
}
