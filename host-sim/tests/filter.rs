//! Switchyard's filter (`filter/`, the real `switchyard_filter.wasm`) through host-sim: one test
//! per sentence of ROUTING.md §4 (which rule wins) and §5 (what the filter does with the winner)
//! that the filter implements. Tables are JSON literals in the format of table/README.md; rules are
//! in priority order, as the compiler writes them. Every test has its own simulator: they run in
//! parallel. The wasm comes from `SWITCHYARD_WASM` (set by `make test-host-sim`) or
//! `target/wasm32-wasip1/release/switchyard_filter.wasm`; a missing file fails the tests.

mod common;

use serde_json::json;
use switchyard_host_sim::{Action, Outcome, Request, Response, Sim};

/// A simulator running the filter with `table` accepted.
fn filter(table: serde_json::Value) -> Sim {
    let mut sim = Sim::load(common::filter_wasm()).expect("the filter loads");
    let accepted = sim.configure(table.to_string());
    assert!(accepted, "the filter refused the table: {:?}", sim.take_logs());
    sim
}

/// A table of `rules` with the defaults.
fn table(rules: serde_json::Value) -> serde_json::Value {
    json!({ "version": 1, "generation": "test", "rules": rules })
}

/// A rule routing to `cluster`, with `extra` merged into it (host, conditions, ...).
fn rule(name: &str, path: serde_json::Value, cluster: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut rule = json!({
        "name": name,
        "path": path,
        "action": { "route": { "backends": [ { "cluster": cluster } ] } }
    });
    if let (Some(rule), Some(extra)) = (rule.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            rule.insert(k.clone(), v.clone());
        }
    }
    rule
}

fn prefix(value: &str) -> serde_json::Value {
    json!({ "type": "segment_prefix", "value": value })
}

/// The cluster the filter chose (the `x-route-cluster` request header), if it routed.
fn cluster(outcome: &Outcome) -> Option<&str> {
    assert!(outcome.error.is_none(), "the filter failed: {:?}", outcome.error);
    outcome.request_header("x-route-cluster")
}

fn get(sim: &mut Sim, url: &str) -> Outcome {
    sim.request(Request::get(url))
}

// ---- §4: which rule wins ------------------------------------------------------------------------

/// The filter obeys the table's order as written: the first rule that matches wins, even a
/// catch-all placed before an exact host (the compiler is what puts rules in §4's order).
#[test]
fn the_first_matching_rule_in_table_order_wins() {
    let mut sim = filter(table(json!([
        rule("I/a/any#0", prefix("/"), "a/any:80", json!({})),
        rule(
            "I/a/exact#0",
            json!({ "type": "exact", "value": "/x" }),
            "a/exact:80",
            json!({ "host": "foo.example.net" })
        ),
    ])));
    assert_eq!(cluster(&get(&mut sim, "http://foo.example.net/x")), Some("a/any:80"));
}

/// An exact host beats a wildcard host, which beats a catch-all (in the compiled order).
#[test]
fn host_precision_exact_then_wildcard_then_any() {
    let mut sim = filter(table(json!([
        rule(
            "Ingress/a/exact#0",
            prefix("/"),
            "a/exact:80",
            json!({ "host": "foo.example.net" })
        ),
        rule(
            "Ingress/a/wild#0",
            prefix("/"),
            "a/wild:80",
            json!({ "host": "*.example.net" })
        ),
        rule("Ingress/a/any#0", prefix("/"), "a/any:80", json!({})),
    ])));
    assert_eq!(cluster(&get(&mut sim, "http://foo.example.net/")), Some("a/exact:80"));
    assert_eq!(cluster(&get(&mut sim, "http://bar.example.net/")), Some("a/wild:80"));
    assert_eq!(cluster(&get(&mut sim, "http://other.org/")), Some("a/any:80"));
}

/// A wildcard matches exactly one extra label: not two, not none.
#[test]
fn wildcard_hosts_match_one_label() {
    let mut sim = filter(table(json!([rule(
        "Ingress/a/wild#0",
        prefix("/"),
        "a/wild:80",
        json!({ "host": "*.example.net" })
    )])));
    assert_eq!(cluster(&get(&mut sim, "http://a.example.net/")), Some("a/wild:80"));
    assert_eq!(get(&mut sim, "http://a.b.example.net/").local_status(), Some(404));
    assert_eq!(get(&mut sim, "http://example.net/").local_status(), Some(404));
}

/// Host matching is case-insensitive; the port and a trailing dot are ignored.
#[test]
fn hosts_ignore_case_port_and_trailing_dot() {
    let mut sim = filter(table(json!([rule(
        "Ingress/a/x#0",
        prefix("/"),
        "a/x:80",
        json!({ "host": "example.net" })
    )])));
    for url in [
        "http://EXAMPLE.net/",
        "http://example.net:8080/",
        "http://example.net./",
        "http://Example.NET.:443/",
    ] {
        assert_eq!(cluster(&get(&mut sim, url)), Some("a/x:80"), "{url}");
    }
}

/// Exact beats regex beats prefix; the longer prefix wins (in the compiled order).
#[test]
fn path_precision_exact_regex_prefix() {
    let mut sim = filter(table(json!([
        rule(
            "I/a/exact#0",
            json!({ "type": "exact", "value": "/foo/bar" }),
            "a/exact:80",
            json!({})
        ),
        rule(
            "I/a/regex#0",
            json!({ "type": "regex", "value": "/foo/[a-z]+" }),
            "a/regex:80",
            json!({})
        ),
        rule("I/a/long#0", prefix("/foo/bar"), "a/long:80", json!({})),
        rule("I/a/short#0", prefix("/foo"), "a/short:80", json!({})),
    ])));
    assert_eq!(cluster(&get(&mut sim, "http://x/foo/bar")), Some("a/exact:80"));
    assert_eq!(cluster(&get(&mut sim, "http://x/foo/baz")), Some("a/regex:80"));
    assert_eq!(cluster(&get(&mut sim, "http://x/foo/bar/1")), Some("a/long:80"));
    assert_eq!(cluster(&get(&mut sim, "http://x/foo/1")), Some("a/short:80"));
}

/// `Exact` must be equal, case-sensitively.
#[test]
fn exact_paths_are_equal_and_case_sensitive() {
    let mut sim = filter(table(json!([rule(
        "I/a/e#0",
        json!({ "type": "exact", "value": "/Foo" }),
        "a/e:80",
        json!({})
    )])));
    assert_eq!(cluster(&get(&mut sim, "http://x/Foo")), Some("a/e:80"));
    assert_eq!(get(&mut sim, "http://x/foo").local_status(), Some(404));
    assert_eq!(get(&mut sim, "http://x/Foo/").local_status(), Some(404));
}

/// Segment prefix: `/foo` and `/foo/` match `/foo`, `/foo/`, `/foo/bar`, never `/foobar`; `/` matches all.
#[test]
fn segment_prefixes_match_whole_segments() {
    for value in ["/foo", "/foo/"] {
        let mut sim = filter(table(json!([rule("I/a/p#0", prefix(value), "a/p:80", json!({}))])));
        for path in ["/foo", "/foo/", "/foo/bar"] {
            assert_eq!(
                cluster(&get(&mut sim, &format!("http://x{path}"))),
                Some("a/p:80"),
                "{value} {path}"
            );
        }
        assert_eq!(get(&mut sim, "http://x/foobar").local_status(), Some(404), "{value}");
    }
    let mut sim = filter(table(json!([rule("I/a/root#0", prefix("/"), "a/root:80", json!({}))])));
    assert_eq!(cluster(&get(&mut sim, "http://x/anything/at/all")), Some("a/root:80"));
}

/// HTTPProxy `prefix` is a string prefix; `regex` must match the whole path.
#[test]
fn string_prefixes_and_anchored_regexes() {
    let mut sim = filter(table(json!([
        rule(
            "H/a/re#0",
            json!({ "type": "regex", "value": "/r/[0-9]+" }),
            "a/re:80",
            json!({})
        ),
        rule(
            "H/a/str#0",
            json!({ "type": "prefix", "value": "/foo" }),
            "a/str:80",
            json!({})
        ),
    ])));
    assert_eq!(cluster(&get(&mut sim, "http://x/foobar")), Some("a/str:80"));
    assert_eq!(cluster(&get(&mut sim, "http://x/r/123")), Some("a/re:80"));
    assert_eq!(
        get(&mut sim, "http://x/r/123/x").local_status(),
        Some(404),
        "anchored at the end"
    );
    assert_eq!(
        get(&mut sim, "http://x/pre/r/1").local_status(),
        Some(404),
        "anchored at the start"
    );
}

/// The query string is not part of the path.
#[test]
fn the_query_string_is_not_part_of_the_path() {
    let mut sim = filter(table(json!([rule(
        "I/a/e#0",
        json!({ "type": "exact", "value": "/foo" }),
        "a/e:80",
        json!({})
    )])));
    assert_eq!(cluster(&get(&mut sim, "http://x/foo?bar=1")), Some("a/e:80"));
}

/// More conditions win, cookie beats header (seed 002's order, as the compiler writes it), and a
/// rule whose conditions fail lets the next one down have its chance.
#[test]
fn conditions_decide_and_failing_rules_fall_through() {
    let mut sim = filter(json!({ "version": 1, "rules": [
        rule("I/p/cookie#0", prefix("/bar"), "production/service2:80", json!({ "host": "example.net",
            "conditions": [ { "on": "cookie", "name": "cookie-key", "match": "exact", "value": "value" } ] })),
        rule("I/p/header#0", prefix("/bar"), "production/service1:80", json!({ "host": "example.net",
            "conditions": [ { "on": "header", "name": "header-key", "match": "exact", "value": "value" } ] })),
        rule("I/p/plain#0", prefix("/bar"), "production/service0:80", json!({ "host": "example.net" })),
        rule("I/p/any#0", prefix("/"), "production/fallback:80", json!({})),
    ]}));
    let both = sim.request(
        Request::get("http://example.net/bar")
            .header("header-key", "value")
            .cookie("cookie-key", "value"),
    );
    assert_eq!(cluster(&both), Some("production/service2:80"));
    let header = sim.request(Request::get("http://example.net/bar").header("header-key", "value"));
    assert_eq!(cluster(&header), Some("production/service1:80"));
    let neither = sim.request(Request::get("http://example.net/bar").header("header-key", "other"));
    assert_eq!(cluster(&neither), Some("production/service0:80"));
    let other_path = get(&mut sim, "http://example.net/baz");
    assert_eq!(
        cluster(&other_path),
        Some("production/fallback:80"),
        "falls through across paths and host levels"
    );
}

/// Header names are case-insensitive, values case-sensitive; any one of several values matches.
#[test]
fn header_conditions() {
    let mut sim = filter(table(json!([rule(
        "I/a/h#0",
        prefix("/"),
        "a/h:80",
        json!({
        "conditions": [ { "on": "header", "name": "X-Canary", "match": "exact", "value": "On" } ] })
    )])));
    assert_eq!(
        cluster(&sim.request(Request::get("http://x/").header("x-canary", "On"))),
        Some("a/h:80")
    );
    assert_eq!(
        sim.request(Request::get("http://x/").header("x-canary", "on"))
            .local_status(),
        Some(404)
    );
    assert_eq!(
        cluster(
            &sim.request(
                Request::get("http://x/")
                    .header("x-canary", "off")
                    .header("X-CANARY", "On")
            )
        ),
        Some("a/h:80")
    );
}

/// The kinds: prefix, contains, regex (anchored), present, and their negations.
#[test]
fn condition_kinds_and_negations() {
    let cond = |m: &str, v: Option<&str>, invert: bool| {
        let mut c = json!({ "on": "header", "name": "x-v", "match": m, "invert": invert });
        if let Some(v) = v {
            c["value"] = json!(v);
        }
        c
    };
    let cases: Vec<(serde_json::Value, Option<&str>, bool)> = vec![
        (cond("prefix", Some("ab"), false), Some("abc"), true),
        (cond("prefix", Some("ab"), false), Some("cab"), false),
        (cond("contains", Some("b"), false), Some("abc"), true),
        (cond("regex", Some("[a-c]+"), false), Some("abc"), true),
        (cond("regex", Some("[a-c]+"), false), Some("abcd"), false),
        (cond("present", None, false), Some(""), true),
        (cond("present", None, false), None, false),
        (cond("present", None, true), None, true),
        (cond("present", None, true), Some("x"), false),
        (cond("exact", Some("a"), true), Some("b"), true),
        (cond("exact", Some("a"), true), Some("a"), false),
    ];
    for (condition, value, matches) in cases {
        let mut sim = filter(table(json!([rule(
            "I/a/c#0",
            prefix("/"),
            "a/c:80",
            json!({ "conditions": [condition.clone()] })
        )])));
        let mut request = Request::get("http://x/");
        if let Some(v) = value {
            request = request.header("x-v", v);
        }
        let outcome = sim.request(request);
        assert_eq!(cluster(&outcome).is_some(), matches, "{condition} with {value:?}");
    }
}

/// Cookies come from every Cookie header; names are case-sensitive.
#[test]
fn cookie_conditions() {
    let mut sim = filter(table(json!([rule(
        "I/a/c#0",
        prefix("/"),
        "a/c:80",
        json!({
        "conditions": [ { "on": "cookie", "name": "session", "match": "exact", "value": "abc" } ] })
    )])));
    assert_eq!(
        cluster(&sim.request(Request::get("http://x/").cookie("a", "1").cookie("session", "abc"))),
        Some("a/c:80")
    );
    assert_eq!(
        cluster(
            &sim.request(
                Request::get("http://x/")
                    .header("cookie", "a=1")
                    .header("cookie", "session=abc")
            )
        ),
        Some("a/c:80")
    );
    assert_eq!(
        sim.request(Request::get("http://x/").cookie("Session", "abc"))
            .local_status(),
        Some(404)
    );
}

/// Query parameters are percent-decoded; methods are compared.
#[test]
fn query_and_method_conditions() {
    let mut sim = filter(table(json!([
        rule(
            "I/a/q#0",
            prefix("/"),
            "a/q:80",
            json!({ "conditions": [ { "on": "query", "name": "name", "match": "exact", "value": "a b/c" } ] })
        ),
        rule(
            "I/a/m#0",
            prefix("/"),
            "a/m:80",
            json!({ "conditions": [ { "on": "method", "match": "exact", "value": "POST" } ] })
        ),
    ])));
    assert_eq!(cluster(&get(&mut sim, "http://x/?name=a%20b%2Fc")), Some("a/q:80"));
    assert_eq!(cluster(&sim.request(Request::new("POST", "http://x/"))), Some("a/m:80"));
    assert_eq!(sim.request(Request::new("PUT", "http://x/")).local_status(), Some(404));
}

// ---- §5: what the filter does with the winner ------------------------------------------------

/// The winner's cluster goes into `x-route-cluster`, after which Envoy must re-route: the request
/// header mutation clears the route cache.
#[test]
fn the_cluster_header_is_set_and_the_route_cache_cleared() {
    let mut sim = filter(table(json!([rule("I/a/x#0", prefix("/"), "prod/web:8080", json!({}))])));
    let outcome = get(&mut sim, "http://example.net/");
    assert_eq!(outcome.action, Action::Continue);
    assert!(outcome.forwarded);
    assert_eq!(outcome.request_header_all("x-route-cluster"), vec!["prod/web:8080"]);
    assert!(
        outcome.route_cache_clears.total() >= 1,
        "{:?}",
        outcome.route_cache_clears
    );
    assert!(outcome.local_response.is_none());
}

/// The table's `cluster_header` names the header.
#[test]
fn a_custom_cluster_header() {
    let mut sim = filter(json!({ "version": 1, "cluster_header": "x-upstream",
        "rules": [ rule("I/a/x#0", prefix("/"), "outbound|80||web.prod.svc.cluster.local", json!({})) ] }));
    let outcome = get(&mut sim, "http://example.net/");
    assert_eq!(
        outcome.request_header("x-upstream"),
        Some("outbound|80||web.prod.svc.cluster.local")
    );
    assert_eq!(outcome.request_header("x-route-cluster"), None);
}

/// A client never chooses its backend: its cluster header is removed, whatever happens next.
#[test]
fn the_clients_cluster_header_is_stripped() {
    let mut sim = filter(json!({ "version": 1, "no_route": "pass",
        "rules": [ rule("I/a/x#0", prefix("/app"), "prod/web:80", json!({})) ] }));
    let routed = sim.request(Request::get("http://x/app").header("x-route-cluster", "kube-system/secret:443"));
    assert_eq!(routed.request_header_all("x-route-cluster"), vec!["prod/web:80"]);
    let passed = sim.request(Request::get("http://x/other").header("X-Route-Cluster", "kube-system/secret:443"));
    assert!(passed.forwarded);
    assert_eq!(
        passed.request_header("x-route-cluster"),
        None,
        "stripped even when no rule matches"
    );
}

/// Weighted backends: one is picked at random in proportion.
#[test]
fn weighted_backends_are_picked_in_proportion() {
    let mut sim = filter(table(json!([{ "name": "H/d/shop#0", "path": prefix("/"),
        "action": { "route": { "backends": [ { "cluster": "d/v1:80", "weight": 90 }, { "cluster": "d/v2:80", "weight": 10 } ] } } }])));
    let mut v2 = 0;
    for _ in 0..2000 {
        match cluster(&get(&mut sim, "http://x/")) {
            Some("d/v1:80") => {}
            Some("d/v2:80") => v2 += 1,
            other => panic!("unexpected cluster {other:?}"),
        }
    }
    assert!((120..=280).contains(&v2), "about 10% of 2000 should go to v2, got {v2}");
}

/// `rewrite_prefix` rewrites `:path`: `/app` → `/` turns `/app/x` into `/x`; the query stays.
#[test]
fn rewrite_prefix_rewrites_the_path() {
    let mut sim = filter(table(
        json!([{ "name": "H/d/app#0", "path": { "type": "prefix", "value": "/app" },
        "action": { "route": { "backends": [ { "cluster": "d/app:80" } ], "rewrite_prefix": "/" } } }]),
    ));
    let outcome = get(&mut sim, "http://x/app/x?q=1");
    assert_eq!(cluster(&outcome), Some("d/app:80"));
    let path = outcome.request_header(":path").unwrap();
    assert!(path == "/x?q=1" || path == "/x", "{path}");
    assert!(path.starts_with("/x"), "{path}");
}

/// `set_headers` sets and `remove_headers` removes request headers.
#[test]
fn header_actions_set_and_remove() {
    let mut sim = filter(table(json!([{ "name": "H/d/h#0", "path": prefix("/"),
        "action": { "route": { "backends": [ { "cluster": "d/h:80" } ],
            "set_headers": [ { "name": "x-team", "value": "shop" } ], "remove_headers": [ "x-debug" ] } } }])));
    let outcome = sim.request(
        Request::get("http://x/")
            .header("x-debug", "1")
            .header("x-team", "client"),
    );
    assert_eq!(outcome.request_header_all("x-team"), vec!["shop"]);
    assert_eq!(outcome.request_header("x-debug"), None);
    assert_eq!(cluster(&outcome), Some("d/h:80"));
}

/// A direct response (broken includes): 502 with the table's body, or a short line naming host and path.
#[test]
fn direct_responses_answer_locally() {
    let mut sim = filter(table(json!([
        { "name": "H/d/root#0", "host": "root.example.org", "path": { "type": "prefix", "value": "/missing" },
          "action": { "direct_response": { "status": 502 } } },
        { "name": "H/d/body#0", "path": { "type": "prefix", "value": "/body" },
          "action": { "direct_response": { "status": 503, "body": "gone fishing" } } },
    ])));
    let outcome = get(&mut sim, "http://root.example.org/missing/x?q=1");
    assert!(!outcome.forwarded);
    assert_eq!(outcome.action, Action::Pause);
    let local = outcome.local_response.as_ref().expect("a local response");
    assert_eq!(local.status, 502);
    assert!(
        local.body_text().contains("root.example.org") && local.body_text().contains("/missing/x"),
        "{}",
        local.body_text()
    );
    assert_eq!(outcome.request_header("x-route-cluster"), None);
    let body = get(&mut sim, "http://x/body");
    assert_eq!(body.local_status(), Some(503));
    assert_eq!(body.local_response.unwrap().body_text(), "gone fishing");
}

/// No rule matches: a 404 local reply.
#[test]
fn no_route_is_a_404() {
    let mut sim = filter(table(json!([rule(
        "I/a/x#0",
        prefix("/app"),
        "a/x:80",
        json!({ "host": "example.net" })
    )])));
    let outcome = get(&mut sim, "http://example.net/other");
    assert_eq!(outcome.local_status(), Some(404));
    assert!(!outcome.forwarded);
    assert_eq!(outcome.response_header(":status"), Some("404"));
    assert!(outcome.local_response.unwrap().body_text().contains("/other"));
}

/// ... or, with `no_route: pass`, the request goes through untouched.
#[test]
fn no_route_pass_lets_the_request_through_untouched() {
    let mut sim = filter(
        json!({ "version": 1, "no_route": "pass", "rules": [ rule("I/a/x#0", prefix("/app"), "a/x:80", json!({})) ] }),
    );
    let request = Request::get("http://example.net/other?x=1")
        .header("x-keep", "1")
        .cookie("a", "1");
    let outcome = sim.request(request.clone());
    assert!(outcome.forwarded);
    assert_eq!(outcome.action, Action::Continue);
    assert_eq!(outcome.request_headers, request.headers(), "untouched");
    assert!(outcome.local_response.is_none());
}

/// A table that fails to parse or validate is refused and the previous table keeps serving.
#[test]
fn a_refused_table_keeps_the_previous_one() {
    let mut sim = filter(table(json!([rule("I/a/old#0", prefix("/"), "a/old:80", json!({}))])));
    for bad in [
        "not json".to_string(),
        json!({ "version": 2, "rules": [] }).to_string(),
        table(json!([rule(
            "I/a/bad#0",
            json!({ "type": "segment_prefix", "value": "shop" }),
            "a/bad:80",
            json!({})
        )]))
        .to_string(),
        table(json!([rule(
            "I/a/re#0",
            json!({ "type": "regex", "value": "(" }),
            "a/re:80",
            json!({})
        )]))
        .to_string(),
    ] {
        assert!(!sim.configure(bad.clone()), "accepted {bad}");
        assert_eq!(
            cluster(&get(&mut sim, "http://x/")),
            Some("a/old:80"),
            "after refusing {bad}"
        );
    }
    // Not UTF-8: a table with one Latin-1 byte in it.
    let mut latin1 = table(json!([rule("I/a/caf#0", prefix("/caf"), "a/x:80", json!({}))]))
        .to_string()
        .into_bytes();
    let at = latin1.windows(4).position(|w| w == b"/caf").unwrap() + 4;
    latin1.insert(at, 0xe9);
    assert!(!sim.configure(latin1));
    assert_eq!(cluster(&get(&mut sim, "http://x/")), Some("a/old:80"));
    let logs = sim.take_logs();
    assert!(
        logs.iter().any(|l| l.message.contains("must start with '/'")),
        "the refusal names the field: {logs:?}"
    );
    assert!(
        logs.iter()
            .any(|l| l.message.contains(&format!("not UTF-8 (byte 0xe9 at offset {at})"))),
        "invalid UTF-8 is reported as such: {logs:?}"
    );
    let refusals: Vec<_> = logs.iter().filter(|l| l.message.contains("table refused")).collect();
    assert_eq!(refusals.len(), 5, "{logs:?}");
    for refusal in refusals {
        assert!(
            refusal
                .message
                .starts_with("table refused (the table serving before, if any, keeps serving): "),
            "{refusal:?}"
        );
    }
    assert!(sim.configure(table(json!([rule("I/a/new#0", prefix("/"), "a/new:80", json!({}))])).to_string()));
    assert_eq!(cluster(&get(&mut sim, "http://x/")), Some("a/new:80"));
}

/// The README's example table works as documented, wrapped as Istio and StringValue hand it over too.
#[test]
fn the_readme_table_in_its_wrappers() {
    let readme = include_str!("../../table/README.md");
    let start = readme.find("```json").expect("a JSON example") + "```json".len();
    let end = start + readme[start..].find("```").unwrap();
    let example: serde_json::Value = serde_json::from_str(&readme[start..end]).unwrap();
    for config in [
        example.clone(),
        json!({ "value": example.to_string() }),
        json!(example.to_string()),
    ] {
        let mut sim = filter(config);
        let shop = sim.request(Request::get("http://a.example.net/api/list?v=12"));
        assert!(matches!(
            cluster(&shop),
            Some("default/shop-v1:8080") | Some("default/shop-v2:8080")
        ));
        assert_eq!(
            shop.response_header("x-switchyard-rule"),
            Some("HTTPProxy/default/shop#1"),
            "debug_rule_header"
        );
        let cookie = sim.request(Request::get("http://example.net/bar").cookie("cookie-key", "value"));
        assert_eq!(cluster(&cookie), Some("production/service2:80"));
    }
}

/// Metrics: routed, not routed, direct responses, tables accepted and refused, the rule count.
#[test]
fn metrics_are_counted() {
    let mut sim = filter(table(json!([
        rule("I/a/x#0", prefix("/app"), "a/x:80", json!({})),
        { "name": "H/d/gone#0", "path": prefix("/gone"), "action": { "direct_response": { "status": 502 } } },
    ])));
    get(&mut sim, "http://x/app");
    get(&mut sim, "http://x/app/1");
    get(&mut sim, "http://x/nothing");
    get(&mut sim, "http://x/gone");
    sim.configure("{");
    let outcome = get(&mut sim, "http://x/app");
    assert_eq!(outcome.metric("switchyard_requests_routed"), Some(3));
    assert_eq!(outcome.metric("switchyard_requests_not_routed"), Some(1));
    assert_eq!(outcome.metric("switchyard_requests_direct_response"), Some(1));
    assert_eq!(outcome.metric("switchyard_tables_accepted"), Some(1));
    assert_eq!(outcome.metric("switchyard_tables_refused"), Some(1));
    assert_eq!(outcome.metric("switchyard_rules"), Some(2));
}

/// The filter never panics on any request: odd hosts, paths, encodings, methods, huge headers.
#[test]
fn odd_requests_never_crash_the_filter() {
    let mut sim = filter(table(json!([
        rule(
            "I/a/q#0",
            prefix("/"),
            "a/q:80",
            json!({ "conditions": [ { "on": "query", "name": "q", "match": "regex", "value": ".*" } ] })
        ),
        rule(
            "I/a/c#0",
            prefix("/"),
            "a/c:80",
            json!({ "conditions": [ { "on": "cookie", "name": "c", "match": "present" } ] })
        ),
        rule("I/a/x#0", prefix("/"), "a/x:80", json!({ "host": "*.example.net" })),
    ])));
    let long = "a".repeat(64 * 1024);
    let requests = vec![
        Request::get("http://x/?q=%ZZ%"),
        Request::get("http://x/").header(":path", "no-slash"),
        Request::get("http://x/").header(":path", ""),
        Request::get("http://x/").header(":authority", ""),
        Request::get("http://[::1]:8080/"),
        Request::get("http://..example.net../"),
        Request::get("http://x/").header("cookie", ";;=;c"),
        Request::get("http://x/").header("x-long", &long),
        Request::new("", "http://x/"),
        Request::get(&format!("http://{long}.example.net/")),
        Request::get("http://x/\u{e9}t\u{e9}?q=\u{1f600}"),
    ];
    for request in requests {
        let outcome = sim.request(request.clone());
        assert!(outcome.error.is_none(), "{request:?}: {:?}", outcome.error);
    }
}

/// The response phase: the upstream's response reaches the client; with `debug_rule_header` the
/// filter names the rule.
#[test]
fn responses_pass_and_name_the_rule_when_asked() {
    let mut sim = filter(
        json!({ "version": 1, "debug_rule_header": true, "rules": [ rule("I/a/x#0", prefix("/"), "a/x:80", json!({})) ] }),
    );
    let outcome = sim.request(Request::get("http://x/").response(Response::new(201).header("x-up", "1").body("hello")));
    assert_eq!(outcome.response_header(":status"), Some("201"));
    assert_eq!(outcome.response_header("x-up"), Some("1"));
    assert_eq!(outcome.response_header("x-switchyard-rule"), Some("I/a/x#0"));
    let mut quiet = filter(table(json!([rule("I/a/x#0", prefix("/"), "a/x:80", json!({}))])));
    assert_eq!(get(&mut quiet, "http://x/").response_header("x-switchyard-rule"), None);
}

/// Simulators of the filter in many threads at once, each with its own table, never see each
/// other's tables, metrics or random draws (host-sim keeps no process-global state).
#[test]
fn simulators_in_parallel_threads_stay_apart() {
    let handles: Vec<_> = (0..8)
        .map(|i| {
            std::thread::spawn(move || {
                let cluster_name = format!("ns{i}/svc:80");
                let mut sim = filter(table(json!([rule("I/a/x#0", prefix("/"), &cluster_name, json!({}))])));
                for _ in 0..=i {
                    assert_eq!(cluster(&get(&mut sim, "http://x/")), Some(cluster_name.as_str()));
                }
                sim.metric("switchyard_requests_routed").map(|m| m.value())
            })
        })
        .collect();
    let routed: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().expect("no thread panicked"))
        .collect();
    assert_eq!(routed, (1..=8).map(Some).collect::<Vec<_>>());
}
