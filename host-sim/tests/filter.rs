//! Switchyard's filter (`filter/`, the real `switchyard_filter.wasm`) through host-sim: one test
//! per sentence of ROUTING.md §5 (what the filter does with the winner) that the filter implements;
//! which rule wins (§4) is the shared corpus, run here by `corpus.rs`. Rules come from the shared
//! builder (`switchyard_cases::rule`), in priority order, as the compiler writes them. Every test has its own simulator: they run in
//! parallel. The wasm comes from `SWITCHYARD_WASM` (set by `make test-host-sim`) or
//! `target/wasm32-wasip1/release/switchyard_filter.wasm`; a missing file fails the tests.

mod common;

use serde_json::json;
use switchyard_cases::rule;
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

/// The cluster the filter chose (the `x-route-cluster` request header), if it routed.
fn cluster(outcome: &Outcome) -> Option<&str> {
    assert!(outcome.error.is_none(), "the filter failed: {:?}", outcome.error);
    outcome.request_header("x-route-cluster")
}

fn get(sim: &mut Sim, url: &str) -> Outcome {
    sim.request(Request::get(url))
}

// ---- §5: what the filter does with the winner ------------------------------------------------

/// The winner's cluster goes into `x-route-cluster`, after which Envoy must re-route: the request
/// header mutation clears the route cache.
#[test]
fn the_cluster_header_is_set_and_the_route_cache_cleared() {
    let mut sim = filter(table(json!([rule("I/a/x#0").to("prod/web:8080")])));
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
        "rules": [ rule("I/a/x#0").to("outbound|80||web.prod.svc.cluster.local") ] }));
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
        "rules": [ rule("I/a/x#0").segment_prefix("/app").to("prod/web:80") ] }));
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
    let mut sim = filter(table(json!([rule("H/d/shop#0").action(
        json!({ "route": { "backends": [ { "cluster": "d/v1:80", "weight": 90 }, { "cluster": "d/v2:80", "weight": 10 } ] } }))])));
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
    let mut sim = filter(table(json!([rule("H/d/app#0").prefix("/app").action(
        json!({ "route": { "backends": [ { "cluster": "d/app:80" } ], "rewrite_prefix": "/" } })
    )])));
    let outcome = get(&mut sim, "http://x/app/x?q=1");
    assert_eq!(cluster(&outcome), Some("d/app:80"));
    let path = outcome.request_header(":path").unwrap();
    assert!(path == "/x?q=1" || path == "/x", "{path}");
    assert!(path.starts_with("/x"), "{path}");
}

/// `set_headers` sets and `remove_headers` removes request headers.
#[test]
fn header_actions_set_and_remove() {
    let mut sim = filter(table(json!([
        rule("H/d/h#0").action(json!({ "route": { "backends": [ { "cluster": "d/h:80" } ],
            "set_headers": [ { "name": "x-team", "value": "shop" } ], "remove_headers": [ "x-debug" ] } }))
    ])));
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

/// A redirect (NGINX VirtualServer `redirect`) answers locally with its status and a `Location` whose
/// `${scheme}`, `${host}` and `${request_uri}` are the request's.
#[test]
fn a_redirect_fills_scheme_host_and_request_uri() {
    let mut sim = filter(table(json!([
        { "name": "VirtualServer/d/cafe#0", "host": "cafe.example.com", "path": { "type": "prefix", "value": "/old" },
          "action": { "redirect": { "url": "${scheme}://${host}/new${request_uri}", "status": 308 } } },
    ])));
    let outcome = get(&mut sim, "https://Cafe.Example.com:8443/old/menu?cup=2");
    assert!(!outcome.forwarded);
    let local = outcome.local_response.as_ref().expect("a local response");
    assert_eq!(local.status, 308);
    assert_eq!(
        local.header("location"),
        Some("https://cafe.example.com/new/old/menu?cup=2")
    );
    assert_eq!(outcome.request_header("x-route-cluster"), None);
}

/// A direct response (NGINX VirtualServer `return`) carries its content type and headers.
#[test]
fn a_direct_response_carries_its_content_type_and_headers() {
    let mut sim = filter(table(json!([
        { "name": "VirtualServer/d/cafe#0", "path": { "type": "exact", "value": "/health" },
          "action": { "direct_response": { "status": 200, "body": "{\"ok\":true}", "content_type": "application/json",
            "headers": [ { "name": "x-served-by", "value": "switchyard" } ] } } },
    ])));
    let outcome = get(&mut sim, "http://x/health");
    let local = outcome.local_response.as_ref().expect("a local response");
    assert_eq!(local.status, 200);
    assert_eq!(local.header("content-type"), Some("application/json"));
    assert_eq!(local.header("x-served-by"), Some("switchyard"));
    assert_eq!(local.body_text(), "{\"ok\":true}");
}

/// No rule matches: a 404 local reply.
#[test]
fn no_route_is_a_404() {
    let mut sim = filter(table(json!([rule("I/a/x#0")
        .segment_prefix("/app")
        .host("example.net")
        .to("a/x:80")])));
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
        json!({ "version": 1, "no_route": "pass", "rules": [ rule("I/a/x#0").segment_prefix("/app").to("a/x:80") ] }),
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
    let mut sim = filter(table(json!([rule("I/a/old#0").to("a/old:80")])));
    for bad in [
        "not json".to_string(),
        json!({ "version": 2, "rules": [] }).to_string(),
        table(json!([rule("I/a/bad#0").segment_prefix("shop").to("a/bad:80")])).to_string(),
        table(json!([rule("I/a/re#0").regex("(").to("a/re:80")])).to_string(),
    ] {
        assert!(!sim.configure(bad.clone()), "accepted {bad}");
        assert_eq!(
            cluster(&get(&mut sim, "http://x/")),
            Some("a/old:80"),
            "after refusing {bad}"
        );
    }
    // Not UTF-8: a table with one Latin-1 byte in it.
    let mut latin1 = table(json!([rule("I/a/caf#0").segment_prefix("/caf").to("a/x:80")]))
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
    assert!(sim.configure(table(json!([rule("I/a/new#0").to("a/new:80")])).to_string()));
    assert_eq!(cluster(&get(&mut sim, "http://x/")), Some("a/new:80"));
}

/// The README's example table works as documented, in each of its forms (JSON, compact, sharded),
/// wrapped as Istio and StringValue hand it over too.
#[test]
fn the_readme_table_in_its_wrappers() {
    let readme = include_str!("../../table/README.md");
    let start = readme.find("```json").expect("a JSON example") + "```json".len();
    let end = start + readme[start..].find("```").unwrap();
    let example: serde_json::Value = serde_json::from_str(&readme[start..end]).unwrap();
    // The compact form `switchyard watch` writes, alone and in the same wrappers.
    let compact: serde_json::Value =
        serde_json::from_str(&switchyard_table::compact::to_text(&example).unwrap()).unwrap();
    assert!(compact.get("table_z").is_some());
    // And the sharded form, `switchyard watch`'s default.
    let spec = switchyard_table::TableSpec::from_value(example.clone()).unwrap();
    let sharded: serde_json::Value =
        serde_json::from_str(&switchyard_table::shards::ShardEncoder::new().encode(&spec).unwrap()).unwrap();
    assert!(sharded.get("table_shards").is_some());
    for config in [
        example.clone(),
        json!({ "value": example.to_string() }),
        json!(example.to_string()),
        compact.clone(),
        json!({ "value": compact.to_string() }),
        json!(compact.to_string()),
        sharded.clone(),
        json!({ "value": sharded.to_string() }),
        json!(sharded.to_string()),
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

/// A compact table that does not decode (bad base64, a truncated zlib stream, a corrupt binary
/// document) is refused with a message saying so, and the table before it keeps serving.
#[test]
fn a_corrupt_compact_table_is_refused_and_the_previous_one_keeps_serving() {
    let good = table(json!([rule("Ingress/a/web#0").host("a.example").to("a/web:80")]));
    let mut sim = filter(good.clone());
    let text = switchyard_table::compact::to_text(&good).unwrap();
    let wrapper: serde_json::Value = serde_json::from_str(&text).unwrap();
    let z = wrapper["table_z"].as_str().unwrap().to_owned();
    let inflated = switchyard_table::compact::inflate(&z).unwrap();
    let mut corrupt = inflated.clone();
    let last = corrupt.len() - 1;
    corrupt[last] = 0xff;
    let recompressed = miniz_oxide::deflate::compress_to_vec_zlib(&corrupt, 6);
    use base64::Engine as _;
    let corrupt_b64 = base64::engine::general_purpose::STANDARD.encode(recompressed);
    for (bad, says) in [
        ("not base64!".to_owned(), "not base64"),
        // Cut at a multiple of 4 characters: still base64, a truncated zlib stream.
        (z[..z.len() / 8 * 4].to_owned(), "zlib"),
        (corrupt_b64, "malformed binary document"),
    ] {
        assert!(!sim.configure(json!({ "table_z": bad }).to_string()));
        let logs: Vec<String> = sim.take_logs().iter().map(ToString::to_string).collect();
        assert!(logs.iter().any(|l| l.contains(says)), "{says}: {logs:?}");
        assert_eq!(cluster(&get(&mut sim, "http://a.example/")), Some("a/web:80"));
    }
}

/// The filter has no inflater of its own: the compact form is inflated by the host's foreign
/// function `uncompress` (Envoy's). A host without it (here host-sim withholding it) gets the
/// compact table refused, with an error that says why and that the JSON form works; the table
/// before keeps serving, and the same table as JSON is taken.
#[test]
fn a_compact_table_needs_the_hosts_uncompress_and_without_it_is_refused_naming_the_json_form() {
    let first = table(json!([rule("Ingress/a/web#0").host("a.example").to("a/web:80")]));
    let next = table(json!([rule("Ingress/a/web#0").host("a.example").to("a/web-v2:80")]));
    let compact = switchyard_table::compact::to_text(&next).unwrap();
    let mut sim = Sim::load(common::filter_wasm()).unwrap();
    sim.without_foreign_function("uncompress");
    assert!(sim.configure(first.to_string()));
    assert!(!sim.configure(compact.clone()));
    let logs: Vec<String> = sim.take_logs().iter().map(ToString::to_string).collect();
    assert!(
        logs.iter().any(|l| l.contains("table refused")
            && l.contains("no foreign function `uncompress`")
            && l.contains("JSON form")),
        "{logs:?}"
    );
    assert_eq!(cluster(&get(&mut sim, "http://a.example/")), Some("a/web:80"));
    assert!(sim.configure(next.to_string()), "the JSON form needs no uncompress");
    assert_eq!(cluster(&get(&mut sim, "http://a.example/")), Some("a/web-v2:80"));

    let mut with_uncompress = filter(first);
    assert!(with_uncompress.configure(compact));
    assert_eq!(
        cluster(&get(&mut with_uncompress, "http://a.example/")),
        Some("a/web-v2:80")
    );
}

/// Metrics: routed, route failed, not routed, direct responses, tables accepted and refused, the
/// rule count. The request totals go out with the tick's flush, as the per-resource counts do.
#[test]
fn metrics_are_counted_and_the_request_totals_handed_over_on_the_tick() {
    let mut sim = filter(table(json!([
        rule("I/a/x#0").segment_prefix("/app").to("a/x:80"),
        rule("H/d/gone#0")
            .segment_prefix("/gone")
            .action(json!({ "direct_response": { "status": 502 } })),
    ])));
    get(&mut sim, "http://x/app");
    get(&mut sim, "http://x/app/1");
    get(&mut sim, "http://x/nothing");
    get(&mut sim, "http://x/gone");
    sim.configure("{");
    get(&mut sim, "http://x/app");
    let value = |sim: &Sim, name: &str| sim.metric(name).map(|m| m.value());
    assert_eq!(
        value(&sim, "switchyard_requests_routed"),
        Some(0),
        "defined, counted in the VM until the tick"
    );
    sim.tick();
    assert_eq!(value(&sim, "switchyard_requests_routed"), Some(3));
    // host-sim always lets the filter set a request header during the request phase, so the
    // failure path is tested natively (request/src/request.rs); here: defined, and not counted.
    assert_eq!(value(&sim, "switchyard_requests_route_failed"), Some(0));
    assert_eq!(value(&sim, "switchyard_requests_not_routed"), Some(1));
    assert_eq!(value(&sim, "switchyard_requests_direct_response"), Some(1));
    assert_eq!(value(&sim, "switchyard_tables_accepted"), Some(1));
    assert_eq!(value(&sim, "switchyard_tables_refused"), Some(1));
    assert_eq!(value(&sim, "switchyard_rules"), Some(2));
    sim.tick();
    assert_eq!(
        value(&sim, "switchyard_requests_routed"),
        Some(3),
        "each request handed over once"
    );
}

/// A VM without a table answers 503 and counts it: its counts go out on the tick too.
#[test]
fn requests_a_filter_without_a_table_answers_are_counted() {
    let mut sim = Sim::load(common::filter_wasm()).expect("the filter loads");
    assert!(!sim.configure("{"));
    assert_eq!(get(&mut sim, "http://x/").local_status(), Some(503));
    assert!(sim.tick_period().is_some(), "Envoy ticks only a root that asked for it");
    sim.tick();
    assert_eq!(sim.metric("switchyard_requests_not_routed").map(|m| m.value()), Some(1));
}

/// The filter never panics on any request: odd hosts, paths, encodings, methods, huge headers.
#[test]
fn odd_requests_never_crash_the_filter() {
    let mut sim = filter(table(json!([
        rule("I/a/q#0").when("query", "q", "regex", ".*").to("a/q:80"),
        rule("I/a/c#0").when("cookie", "c", "present", "").to("a/c:80"),
        rule("I/a/x#0").host("*.example.net").to("a/x:80"),
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
    let mut sim = filter(json!({ "version": 1, "debug_rule_header": true, "rules": [ rule("I/a/x#0").to("a/x:80") ] }));
    let outcome = sim.request(Request::get("http://x/").response(Response::new(201).header("x-up", "1").body("hello")));
    assert_eq!(outcome.response_header(":status"), Some("201"));
    assert_eq!(outcome.response_header("x-up"), Some("1"));
    assert_eq!(outcome.response_header("x-switchyard-rule"), Some("I/a/x#0"));
    let mut quiet = filter(table(json!([rule("I/a/x#0").to("a/x:80")])));
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
                let mut sim = filter(table(json!([rule("I/a/x#0").to(&cluster_name)])));
                for _ in 0..=i {
                    assert_eq!(cluster(&get(&mut sim, "http://x/")), Some(cluster_name.as_str()));
                }
                sim.tick();
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
