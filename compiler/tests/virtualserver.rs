//! ROUTING.md §6: NGINX's VirtualServer and VirtualServerRoute, sentence by sentence, compiled and
//! then routed by the matcher the filter runs.

mod common;

use common::{cluster_for, compile_default, compile_yaml, direct_status, get, has_reason, message, status, status_of};
use switchyard_compiler::explain::explain;
use switchyard_compiler::status::{NginxReason, NginxState, Reason, Status};
use switchyard_compiler::Options;
use switchyard_table::{ActionSpec, SimpleRequest};

/// A VirtualServer in `default` with `created` as its creationTimestamp and `uid`; `spec` is the
/// YAML under `spec:` (indented by two spaces).
fn vs(name: &str, created: &str, uid: &str, spec: &str) -> String {
    format!(
        "apiVersion: k8s.nginx.org/v1
kind: VirtualServer
metadata:
  name: {name}
  namespace: default
  creationTimestamp: \"{created}\"
  uid: {uid}
spec:
{spec}
---
"
    )
}

/// A VirtualServerRoute in `namespace`.
fn vsr(name: &str, namespace: &str, spec: &str) -> String {
    format!(
        "apiVersion: k8s.nginx.org/v1
kind: VirtualServerRoute
metadata:
  name: {name}
  namespace: {namespace}
spec:
{spec}
---
"
    )
}

const UPSTREAMS: &str = "  upstreams:
  - name: tea
    service: tea-svc
    port: 80
  - name: coffee
    service: coffee-svc
    port: 80
";

/// The cafe VirtualServer with the given routes (YAML under `routes:`).
fn cafe(routes: &str) -> String {
    vs(
        "cafe",
        "2024-01-01T00:00:00Z",
        "a",
        &format!("  host: cafe.example.com\n{UPSTREAMS}  routes:\n{routes}"),
    )
}

fn cluster(compiled: &switchyard_compiler::Compiled, url: &str) -> Option<String> {
    cluster_for(compiled, &get(url))
}

fn nginx(
    compiled: &switchyard_compiler::Compiled,
    kind: &str,
    ns: &str,
    name: &str,
) -> (NginxState, NginxReason, String) {
    let s = status_of(compiled, kind, ns, name)
        .nginx
        .clone()
        .expect("an NGINX status");
    (s.state, s.reason, s.message)
}

const PASS_TEA: &str = "    action:\n      pass: tea\n";

// ---- class, host, upstreams -----------------------------------------------------------------

/// A VirtualServer is ours by `spec.ingressClassName` (§1); one of another class is ignored, has no
/// NGINX status written, and routes nothing.
#[test]
fn virtualserver_class_eligibility_reads_ingress_class_name() {
    let class = common::ingress_class("nginx", "switchyard.io/ingress-controller", false, "");
    let other = common::ingress_class("other", "example.com/other", false, "");
    let ours = vs(
        "ours",
        "2024-01-01T00:00:00Z",
        "a",
        &format!("  host: a.example.com\n  ingressClassName: nginx\n{UPSTREAMS}  routes:\n  - path: /\n{PASS_TEA}"),
    );
    let theirs = vs(
        "theirs",
        "2024-01-01T00:00:00Z",
        "b",
        &format!("  host: b.example.com\n  ingressClassName: other\n{UPSTREAMS}  routes:\n  - path: /\n{PASS_TEA}"),
    );
    let compiled = compile_default(&format!("{class}{other}{ours}{theirs}"));
    assert_eq!(
        cluster(&compiled, "http://a.example.com/"),
        Some("default/tea-svc:80".into())
    );
    assert_eq!(cluster(&compiled, "http://b.example.com/"), None);
    assert_eq!(status(&compiled, "VirtualServer", "default", "theirs"), Status::Ignored);
    assert!(status_of(&compiled, "VirtualServer", "default", "theirs")
        .nginx
        .is_none());
    assert_eq!(
        nginx(&compiled, "VirtualServer", "default", "ours"),
        (
            NginxState::Valid,
            NginxReason::AddedOrUpdated,
            "Configuration for default/ours was added or updated".into()
        )
    );
}

fn cafe_ingress(created: &str, uid: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: cafe-ingress
  namespace: default
  creationTimestamp: \"{created}\"
  uid: {uid}
spec:
  rules:
  - host: cafe.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: coffee-ingress
            port:
              number: 80
---
"
    )
}

fn cafe_virtual_server(created: &str, uid: &str) -> String {
    vs(
        "cafe-virtual-server",
        created,
        uid,
        &format!("  host: cafe.example.com\n{UPSTREAMS}  routes:\n  - path: /\n{PASS_TEA}"),
    )
}

/// Seed 003: cafe-virtual-server created first wins cafe.example.com and cafe-ingress is rejected
/// ("All hosts are taken by other resources").
#[test]
fn seed_003_older_virtualserver_wins_the_host_and_the_ingress_is_rejected() {
    let compiled = compile_default(&format!(
        "{}{}",
        cafe_ingress("2024-02-01T00:00:00Z", "b"),
        cafe_virtual_server("2024-01-01T00:00:00Z", "a")
    ));
    assert_eq!(
        cluster(&compiled, "http://cafe.example.com/"),
        Some("default/tea-svc:80".into())
    );
    let ingress = status_of(&compiled, "Ingress", "default", "cafe-ingress");
    assert_eq!(ingress.status, Status::Rejected);
    assert_eq!(
        message(ingress, Reason::Rejected),
        "All hosts are taken by other resources"
    );
    let (state, reason, text) = nginx(&compiled, "VirtualServer", "default", "cafe-virtual-server");
    assert_eq!((state, reason), (NginxState::Valid, NginxReason::AddedOrUpdated));
    assert_eq!(
        text,
        "Configuration for default/cafe-virtual-server was added or updated"
    );
}

/// Seed 003, the other order: cafe-ingress created first wins, and the VirtualServer is rejected
/// (NGINX's state Warning, reason Rejected) and routes nothing.
#[test]
fn seed_003_older_ingress_wins_the_host_and_the_virtualserver_is_rejected() {
    let compiled = compile_default(&format!(
        "{}{}",
        cafe_ingress("2024-01-01T00:00:00Z", "b"),
        cafe_virtual_server("2024-02-01T00:00:00Z", "a")
    ));
    assert_eq!(
        cluster(&compiled, "http://cafe.example.com/"),
        Some("default/coffee-ingress:80".into())
    );
    assert_eq!(
        status(&compiled, "VirtualServer", "default", "cafe-virtual-server"),
        Status::Rejected
    );
    let (state, reason, text) = nginx(&compiled, "VirtualServer", "default", "cafe-virtual-server");
    assert_eq!((state, reason), (NginxState::Warning, NginxReason::Rejected));
    assert!(
        text.contains("host cafe.example.com is taken by Ingress/default/cafe-ingress"),
        "{text}"
    );
}

/// On equal timestamps the smallest uid wins, between two VirtualServers and against an HTTPProxy
/// root.
#[test]
fn virtualserver_contest_on_equal_timestamps_smallest_uid_wins() {
    let same = "2024-01-01T00:00:00Z";
    let one = |name: &str, uid: &str, svc: &str| {
        vs(
            name,
            same,
            uid,
            &format!(
                "  host: cafe.example.com\n  upstreams:\n  - name: u\n    service: {svc}\n    port: 80\n  routes:\n  - path: /\n    action:\n      pass: u\n"
            ),
        )
    };
    let proxy = format!(
        "apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata:
  name: root
  namespace: default
  creationTimestamp: \"{same}\"
  uid: b
spec:
  virtualhost:
    fqdn: cafe.example.com
  routes:
  - services:
    - name: proxy-svc
      port: 80
---
"
    );
    let compiled = compile_default(&format!("{}{}{proxy}", one("z", "c", "z-svc"), one("y", "a", "y-svc")));
    assert_eq!(
        cluster(&compiled, "http://cafe.example.com/"),
        Some("default/y-svc:80".into())
    );
    assert_eq!(status(&compiled, "VirtualServer", "default", "z"), Status::Rejected);
    assert_eq!(status(&compiled, "HTTPProxy", "default", "root"), Status::Invalid);
}

/// A wildcard host `*.example.com` matches exactly one more label (§4).
#[test]
fn virtualserver_wildcard_host_matches_one_label() {
    let compiled = compile_default(&vs(
        "w",
        "2024-01-01T00:00:00Z",
        "a",
        &format!("  host: \"*.example.com\"\n{UPSTREAMS}  routes:\n  - path: /\n{PASS_TEA}"),
    ));
    assert_eq!(
        cluster(&compiled, "http://a.example.com/"),
        Some("default/tea-svc:80".into())
    );
    assert_eq!(cluster(&compiled, "http://a.b.example.com/"), None);
    assert_eq!(cluster(&compiled, "http://example.com/"), None);
}

/// An upstream's `service` is `svc` (the resource's namespace) or `ns/svc`; the cluster comes from
/// the cluster template.
#[test]
fn upstream_service_is_svc_or_namespace_slash_svc_through_the_cluster_template() {
    let yaml = vs(
        "v",
        "2024-01-01T00:00:00Z",
        "a",
        "  host: cafe.example.com
  upstreams:
  - name: local
    service: tea-svc
    port: 8080
  - name: remote
    service: kitchen/coffee-svc
    port: 80
  routes:
  - path: /tea
    action:
      pass: local
  - path: /coffee
    action:
      pass: remote
",
    );
    let options = Options {
        cluster_template: "outbound|{port}||{service}.{namespace}.svc.cluster.local".into(),
        ..Options::default()
    };
    let compiled = compile_yaml(&yaml, &options);
    assert_eq!(
        cluster(&compiled, "http://cafe.example.com/tea"),
        Some("outbound|8080||tea-svc.default.svc.cluster.local".into())
    );
    assert_eq!(
        cluster(&compiled, "http://cafe.example.com/coffee"),
        Some("outbound|80||coffee-svc.kitchen.svc.cluster.local".into())
    );
}

/// An upstream with a `subselector` cannot be a cluster name: the route using it is refused with a
/// warning, the others route.
#[test]
fn subselector_refuses_the_route_with_a_warning() {
    let yaml = vs(
        "v",
        "2024-01-01T00:00:00Z",
        "a",
        "  host: cafe.example.com
  upstreams:
  - name: tea
    service: tea-svc
    port: 80
  - name: canary
    service: tea-svc
    port: 80
    subselector:
      version: canary
  routes:
  - path: /canary
    action:
      pass: canary
  - path: /
    action:
      pass: tea
",
    );
    let compiled = compile_default(&yaml);
    let s = status_of(&compiled, "VirtualServer", "default", "v");
    assert_eq!(s.status, Status::Warning);
    assert!(message(s, Reason::RouteRefused).contains("subselector"), "{s:?}");
    // The refused /canary route is gone; `/` serves it.
    assert_eq!(
        cluster(&compiled, "http://cafe.example.com/canary"),
        Some("default/tea-svc:80".into())
    );
    let (state, reason, _) = nginx(&compiled, "VirtualServer", "default", "v");
    assert_eq!(
        (state, reason),
        (NginxState::Warning, NginxReason::AddedOrUpdatedWithWarning)
    );
}

// ---- paths ------------------------------------------------------------------------------------

fn paths(routes: &[(&str, &str)]) -> switchyard_compiler::Compiled {
    let mut yaml = String::new();
    for (path, upstream) in routes {
        yaml.push_str(&format!("  - path: '{path}'\n    action:\n      pass: {upstream}\n"));
    }
    let upstreams: Vec<String> = routes
        .iter()
        .map(|(_, u)| format!("  - name: {u}\n    service: {u}\n    port: 80\n"))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    compile_default(&vs(
        "p",
        "2024-01-01T00:00:00Z",
        "a",
        &format!(
            "  host: cafe.example.com\n  upstreams:\n{}  routes:\n{yaml}",
            upstreams.join("")
        ),
    ))
}

fn to(compiled: &switchyard_compiler::Compiled, path: &str) -> Option<String> {
    cluster(compiled, &format!("http://cafe.example.com{path}"))
        .map(|c| c.trim_start_matches("default/").trim_end_matches(":80").to_owned())
}

/// `/x` is a string prefix: `/tea` matches `/tea`, `/teapot` and `/tea/green`.
#[test]
fn plain_path_is_a_string_prefix() {
    let c = paths(&[("/tea", "tea")]);
    for path in ["/tea", "/teapot", "/tea/green"] {
        assert_eq!(to(&c, path), Some("tea".into()), "{path}");
    }
    assert_eq!(to(&c, "/te"), None);
}

/// `=/x` matches the path exactly, and beats every other location.
#[test]
fn exact_path_matches_exactly_and_beats_every_other_location() {
    let c = paths(&[
        ("/tea", "prefix"),
        ("~tea", "regex"),
        ("=/tea", "exact"),
        ("^~/te", "caret"),
    ]);
    assert_eq!(to(&c, "/tea"), Some("exact".into()));
    assert_eq!(to(&c, "/tea/"), Some("caret".into()));
}

/// `~re` searches anywhere in the path, case-sensitively; `~*re` ignores case.
#[test]
fn regex_locations_search_anywhere_and_tilde_star_ignores_case() {
    let c = paths(&[("~\\.jpg$", "images"), ("~*/ADMIN", "admin"), ("/", "root")]);
    assert_eq!(to(&c, "/a/b/photo.jpg"), Some("images".into()));
    assert_eq!(to(&c, "/a/b/photo.JPG"), Some("root".into()));
    assert_eq!(to(&c, "/x/admin/panel"), Some("admin".into()));
    assert_eq!(to(&c, "/x/Admin"), Some("admin".into()));
}

/// `^~/x` is a string prefix that outranks the VirtualServer's regexes.
#[test]
fn caret_prefix_outranks_regexes() {
    let c = paths(&[("~\\.png$", "images"), ("^~/static", "static"), ("/", "root")]);
    assert_eq!(to(&c, "/static/logo.png"), Some("static".into()));
    assert_eq!(to(&c, "/other/logo.png"), Some("images".into()));
}

/// Regexes beat plain prefixes; among prefixes the longest wins.
#[test]
fn regex_beats_plain_prefix_and_the_longest_prefix_wins() {
    let c = paths(&[
        ("/", "root"),
        ("/tea/green/long", "longest"),
        ("~green", "regex"),
        ("/tea", "tea"),
    ]);
    assert_eq!(to(&c, "/tea/green/long/x"), Some("regex".into()));
    assert_eq!(to(&c, "/tea/black"), Some("tea".into()));
    let c = paths(&[("/", "root"), ("/tea/green", "longer"), ("/tea", "tea")]);
    assert_eq!(to(&c, "/tea/green/x"), Some("longer".into()));
    assert_eq!(to(&c, "/coffee"), Some("root".into()));
}

/// Regexes rank by their position in the VirtualServer, as NGINX tries them, not by length (§4's
/// "longer pattern wins" does not apply).
#[test]
fn regexes_rank_by_position_not_length() {
    let c = paths(&[("~/t", "first"), ("~/tea/green/leaf", "second")]);
    assert_eq!(to(&c, "/tea/green/leaf"), Some("first".into()));
    let c = paths(&[("~/tea/green/leaf", "first"), ("~/t", "second")]);
    assert_eq!(to(&c, "/tea/green/leaf"), Some("first".into()));
}

// ---- matches ----------------------------------------------------------------------------------

fn with_matches(matches: &str) -> switchyard_compiler::Compiled {
    compile_default(&cafe(&format!(
        "  - path: /tea\n    matches:\n{matches}    action:\n      pass: tea\n"
    )))
}

fn tea(compiled: &switchyard_compiler::Compiled, request: SimpleRequest) -> Option<String> {
    cluster_for(compiled, &request).map(|c| {
        c.trim_start_matches("default/")
            .trim_end_matches(":80")
            .trim_end_matches("-svc")
            .to_owned()
    })
}

fn tea_get() -> SimpleRequest {
    get("http://cafe.example.com/tea")
}

/// The first match in list order wins, even over a later match with more conditions (match position
/// ranks ahead of §4 keys 3–4); the route's own action serves when none holds.
#[test]
fn first_match_in_list_order_wins_and_the_route_action_serves_when_none_holds() {
    let c = with_matches(
        "    - conditions:
      - header: x-version
        value: v2
      action:
        pass: coffee
    - conditions:
      - header: x-version
        value: v2
      - cookie: user
        value: admin
      action:
        return:
          code: 200
          body: admin
",
    );
    let both = tea_get().header("x-version", "v2").cookie("user", "admin");
    assert_eq!(tea(&c, both), Some("coffee".into()));
    assert_eq!(tea(&c, tea_get()), Some("tea".into()));
}

/// Every condition of a match must hold.
#[test]
fn all_conditions_of_a_match_must_hold() {
    let c = with_matches(
        "    - conditions:
      - header: x-version
        value: v2
      - argument: lang
        value: en
      action:
        pass: coffee
",
    );
    assert_eq!(tea(&c, tea_get().header("x-version", "v2")), Some("tea".into()));
    let url = get("http://cafe.example.com/tea?lang=en").header("x-version", "v2");
    assert_eq!(tea(&c, url), Some("coffee".into()));
}

/// A plain value compares case-insensitively (NGINX's `map`), for headers, cookies and arguments.
#[test]
fn plain_match_values_compare_case_insensitively() {
    let c = with_matches(
        "    - conditions:
      - cookie: flavour
        value: Green
      action:
        pass: coffee
",
    );
    assert_eq!(tea(&c, tea_get().cookie("flavour", "GREEN")), Some("coffee".into()));
    assert_eq!(tea(&c, tea_get().cookie("flavour", "black")), Some("tea".into()));
}

/// `~re` and `~*re` values are regexes searching the value; a leading `!` negates.
#[test]
fn regex_values_search_and_a_leading_bang_negates() {
    let c = with_matches(
        "    - conditions:
      - header: user-agent
        value: \"~*android\"
      action:
        pass: coffee
    - conditions:
      - header: x-team
        value: \"!blue\"
      action:
        return:
          code: 403
          body: blue only
",
    );
    assert_eq!(
        tea(
            &c,
            tea_get()
                .header("user-agent", "Mozilla (Linux; Android 14)")
                .header("x-team", "blue")
        ),
        Some("coffee".into())
    );
    assert_eq!(tea(&c, tea_get().header("x-team", "BLUE")), Some("tea".into()));
    assert_eq!(direct_status(&c, &tea_get().header("x-team", "red")), Some(403));
    assert_eq!(direct_status(&c, &tea_get()), Some(403), "absent is not blue");
}

/// A `~re` value is case-sensitive and searches anywhere in the value.
#[test]
fn tilde_value_is_a_case_sensitive_search() {
    let c = with_matches(
        "    - conditions:
      - argument: flavour
        value: \"~gre+n\"
      action:
        pass: coffee
",
    );
    assert_eq!(
        tea(&c, get("http://cafe.example.com/tea?flavour=evergreen-tea")),
        Some("coffee".into())
    );
    assert_eq!(
        tea(&c, get("http://cafe.example.com/tea?flavour=GREEN")),
        Some("tea".into())
    );
}

/// `""` matches an empty or absent value.
#[test]
fn empty_value_matches_an_empty_or_absent_value() {
    let c = with_matches(
        "    - conditions:
      - argument: token
        value: \"\"
      action:
        return:
          code: 401
          body: token needed
",
    );
    assert_eq!(direct_status(&c, &tea_get()), Some(401));
    assert_eq!(direct_status(&c, &get("http://cafe.example.com/tea?token=")), Some(401));
    assert_eq!(
        tea(&c, get("http://cafe.example.com/tea?token=abc")),
        Some("tea".into())
    );
}

/// `variable: $request_method` is the method; any other variable refuses the route with a warning.
#[test]
fn request_method_variable_is_the_method_and_other_variables_refuse_the_route() {
    let c = with_matches(
        "    - conditions:
      - variable: $request_method
        value: POST
      action:
        pass: coffee
",
    );
    assert_eq!(tea(&c, tea_get().method("POST")), Some("coffee".into()));
    assert_eq!(tea(&c, tea_get()), Some("tea".into()));
    let c = with_matches(
        "    - conditions:
      - variable: $remote_addr
        value: 10.0.0.1
      action:
        pass: coffee
",
    );
    let s = status_of(&c, "VirtualServer", "default", "cafe");
    assert_eq!(s.status, Status::Warning);
    assert!(message(s, Reason::RouteRefused).contains("$remote_addr"));
    // The refused route leaves its path to the VirtualServer's 404.
    assert_eq!(direct_status(&c, &tea_get()), Some(404));
}

// ---- actions ----------------------------------------------------------------------------------

/// `splits` are weighted backends (weights 0–100 summing to 100).
#[test]
fn splits_are_weighted_backends() {
    let c = compile_default(&cafe(
        "  - path: /
    splits:
    - weight: 90
      action:
        pass: tea
    - weight: 10
      action:
        pass: coffee
",
    ));
    let table = common::table(&c);
    let request = get("http://cafe.example.com/");
    let to_tea = (0..100u64)
        .filter(|&r| table.route(&request, r).unwrap().backend.unwrap().cluster == "default/tea-svc:80")
        .count();
    assert_eq!(to_tea, 90);
}

/// `proxy` routes to its upstream with `rewritePath` as a prefix rewrite and `requestHeaders.set`.
#[test]
fn proxy_rewrites_the_path_prefix_and_sets_request_headers() {
    let c = compile_default(&cafe(
        "  - path: /tea
    action:
      proxy:
        upstream: tea
        rewritePath: /menu
        requestHeaders:
          set:
          - name: x-flavour
            value: green
",
    ));
    let table = common::table(&c);
    let decision = table.route(&get("http://cafe.example.com/tea/green?x=1"), 0).unwrap();
    assert_eq!(decision.backend.unwrap().cluster, "default/tea-svc:80");
    assert_eq!(
        decision.rule.rewrite("/tea/green?x=1").map(|r| r.path).as_deref(),
        Some("/menu/green?x=1")
    );
    let ActionSpec::Route(route) = decision.rule.action() else {
        panic!()
    };
    assert_eq!(
        (route.set_headers[0].name.as_str(), route.set_headers[0].value.as_str()),
        ("x-flavour", "green")
    );
}

/// `return` is a direct response with its code, `type` as content type, and body.
#[test]
fn return_is_a_direct_response_with_content_type_and_body() {
    let c = compile_default(&cafe(
        "  - path: =/health
    action:
      return:
        code: 200
        type: application/json
        body: '{\"ok\": true}'
",
    ));
    let table = common::table(&c);
    let decision = table.route(&get("http://cafe.example.com/health"), 0).unwrap();
    let ActionSpec::DirectResponse(d) = decision.rule.action() else {
        panic!()
    };
    assert_eq!(
        (d.status, d.content_type.as_deref(), d.body.as_deref()),
        (200, Some("application/json"), Some("{\"ok\": true}"))
    );
}

/// `redirect` defaults to 301, and `${scheme}`, `${host}`, `${request_uri}` are substituted per
/// request.
#[test]
fn redirect_defaults_to_301_and_substitutes_variables_per_request() {
    let c = compile_default(&cafe(
        "  - path: /old
    action:
      redirect:
        url: ${scheme}://${host}/new${request_uri}
",
    ));
    let table = common::table(&c);
    // Plain HTTP: a VirtualServer without `tls` is not served on HTTPS (ROUTING.md §8.6).
    let request = get("http://cafe.example.com/old/x?y=1");
    let decision = table.route(&request, 0).unwrap();
    assert_eq!(
        decision.rule.redirect_for(&request),
        Some((301, "http://cafe.example.com/new/old/x?y=1".into()))
    );
}

/// `explain` fills a redirect's variables as the filter does (`Rule::redirect_for`): the scheme,
/// `X-Forwarded-Proto` and the host from the request explained.
#[test]
fn explain_fills_redirect_variables_as_the_filter_does() {
    let c = compile_default(&cafe(
        "  - path: /old
    action:
      redirect:
        url: ${http_x_forwarded_proto}|${scheme}://${host}/new${request_uri}
",
    ));
    let table = common::table(&c);
    let request = switchyard_compiler::explain::request(
        "http://Cafe.Example.com:8443/old/x?y=1",
        "GET",
        &["X-Forwarded-Proto: https".to_owned()],
        &[],
    )
    .unwrap();
    let explained = explain(&table, &request);
    assert_eq!(
        explained.decision.location.as_deref(),
        Some("https|http://cafe.example.com/new/old/x?y=1")
    );
    let filter = table.route(&request, 0).unwrap().rule.redirect_for(&request);
    assert_eq!(filter.map(|(_, l)| l), explained.decision.location);
}

// ---- validation -------------------------------------------------------------------------------

/// A VirtualServer that fails validation is Invalid and routes nothing (not even its host's 404):
/// a duplicate path, a duplicate upstream name, an unknown upstream, splits not summing to 100, a
/// regex that does not compile.
#[test]
fn invalid_virtualserver_routes_nothing() {
    let cases = [
        ("also the path", format!("{UPSTREAMS}  routes:\n  - path: /a\n{PASS_TEA}  - path: /a\n{PASS_TEA}")),
        (
            "defined twice",
            "  upstreams:\n  - name: tea\n    service: a\n    port: 80\n  - name: tea\n    service: b\n    port: 80\n  routes:\n  - path: /\n    action:\n      pass: tea\n".to_owned(),
        ),
        ("is not defined", format!("{UPSTREAMS}  routes:\n  - path: /\n    action:\n      pass: milk\n")),
        (
            "sum to 90, not 100",
            format!("{UPSTREAMS}  routes:\n  - path: /\n    splits:\n    - weight: 80\n      action:\n        pass: tea\n    - weight: 10\n      action:\n        pass: coffee\n"),
        ),
        ("does not compile", format!("{UPSTREAMS}  routes:\n  - path: \"~/(tea\"\n{PASS_TEA}")),
        (
            "not 301, 302, 307 or 308",
            format!("{UPSTREAMS}  routes:\n  - path: /\n    action:\n      redirect:\n        url: http://x/\n        code: 303\n"),
        ),
    ];
    for (why, spec) in cases {
        let c = compile_default(&vs(
            "bad",
            "2024-01-01T00:00:00Z",
            "a",
            &format!("  host: cafe.example.com\n{spec}"),
        ));
        let s = status_of(&c, "VirtualServer", "default", "bad");
        assert_eq!(s.status, Status::Invalid, "{why}");
        assert!(message(s, Reason::VirtualServerInvalid).contains(why), "{why}: {s:?}");
        assert!(c.table.rules.is_empty(), "{why}");
        let (state, reason, _) = nginx(&c, "VirtualServer", "default", "bad");
        assert_eq!((state, reason), (NginxState::Invalid, NginxReason::Rejected));
    }
}

/// A request to the VirtualServer's host that no route matches gets 404, never another resource's
/// rule (here a catch-all Ingress).
#[test]
fn unmatched_path_on_the_host_gets_404_never_another_resource() {
    let catch_all = "apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: everything
  namespace: default
spec:
  defaultBackend:
    service:
      name: fallback
      port:
        number: 80
---
";
    let c = compile_default(&format!("{catch_all}{}", cafe(&format!("  - path: /tea\n{PASS_TEA}"))));
    assert_eq!(direct_status(&c, &get("http://cafe.example.com/coffee")), Some(404));
    assert_eq!(
        cluster(&c, "http://other.example.com/coffee"),
        Some("default/fallback:80".into())
    );
}

// ---- VirtualServerRoute -----------------------------------------------------------------------

/// NGINX's cross-namespace example: the VirtualServer in `cafe` delegates `/tea` and `/coffee` to
/// VirtualServerRoutes in `tea` and `coffee`; their upstreams resolve in their own namespaces.
fn cross_namespace(tea_host: &str, extra: &str) -> switchyard_compiler::Compiled {
    let server = "apiVersion: k8s.nginx.org/v1
kind: VirtualServer
metadata:
  name: cafe
  namespace: cafe
  creationTimestamp: \"2024-01-01T00:00:00Z\"
spec:
  host: cafe.example.com
  routes:
  - path: /tea
    route: tea/tea
  - path: /coffee
    route: coffee/coffee
---
";
    let tea = vsr(
        "tea",
        "tea",
        &format!(
            "  host: {tea_host}
  upstreams:
  - name: tea
    service: tea-svc
    port: 80
  subroutes:
  - path: /tea
    action:
      pass: tea
"
        ),
    );
    let coffee = vsr(
        "coffee",
        "coffee",
        "  host: cafe.example.com
  upstreams:
  - name: latte
    service: latte-svc
    port: 80
  - name: espresso
    service: espresso-svc
    port: 80
  subroutes:
  - path: /coffee/latte
    action:
      pass: latte
  - path: /coffee/espresso
    action:
      pass: espresso
",
    );
    compile_default(&format!("{server}{tea}{coffee}{extra}"))
}

/// Subroutes of a VirtualServerRoute route under the VirtualServer's host, their upstreams in the
/// VirtualServerRoute's namespace; both report Valid.
#[test]
fn virtualserverroute_subroutes_route_under_the_virtualserver_host() {
    let c = cross_namespace("cafe.example.com", "");
    assert_eq!(
        cluster(&c, "http://cafe.example.com/tea"),
        Some("tea/tea-svc:80".into())
    );
    assert_eq!(
        cluster(&c, "http://cafe.example.com/coffee/latte"),
        Some("coffee/latte-svc:80".into())
    );
    assert_eq!(
        cluster(&c, "http://cafe.example.com/coffee/espresso/x"),
        Some("coffee/espresso-svc:80".into())
    );
    assert_eq!(
        direct_status(&c, &get("http://cafe.example.com/coffee/mocha")),
        Some(404)
    );
    assert_eq!(status(&c, "VirtualServerRoute", "tea", "tea"), Status::Valid);
    assert_eq!(status(&c, "VirtualServer", "cafe", "cafe"), Status::Valid);
}

/// A reference to a VirtualServerRoute on another host answers 502 for the route's path, and the
/// VirtualServer's status says so (Warning); the VirtualServerRoute is orphaned.
#[test]
fn reference_to_a_virtualserverroute_on_another_host_answers_502() {
    let c = cross_namespace("tea.example.com", "");
    assert_eq!(direct_status(&c, &get("http://cafe.example.com/tea/green")), Some(502));
    let s = status_of(&c, "VirtualServer", "cafe", "cafe");
    assert_eq!(s.status, Status::Warning);
    assert!(message(s, Reason::VirtualServerRouteNotUsable).contains("is for host \"tea.example.com\""));
    assert_eq!(status(&c, "VirtualServerRoute", "tea", "tea"), Status::Orphaned);
    assert_eq!(
        nginx(&c, "VirtualServerRoute", "tea", "tea").1,
        NginxReason::NoVirtualServerFound
    );
}

/// A reference to a VirtualServerRoute that does not exist answers 502.
#[test]
fn reference_to_a_missing_virtualserverroute_answers_502() {
    let c = compile_default(&cafe("  - path: /tea\n    route: nowhere\n"));
    assert_eq!(direct_status(&c, &get("http://cafe.example.com/tea")), Some(502));
    let s = status_of(&c, "VirtualServer", "default", "cafe");
    assert!(message(s, Reason::VirtualServerRouteNotUsable).contains("default/nowhere does not exist"));
    assert_eq!(nginx(&c, "VirtualServer", "default", "cafe").0, NginxState::Warning);
}

/// Issue 23, item 4: a VirtualServerRoute valid on its own whose subroute is outside the
/// referencing route's prefix is not Invalid: NGINX marks it Warning / Ignored, naming the
/// VirtualServer; the route answers 502 and the VirtualServer says why (Warning).
#[test]
fn subroute_outside_the_route_prefix_is_ignored_not_invalid_and_the_route_answers_502() {
    let c = compile_default(&common::nginx_case("subroute-outside-prefix"));
    assert_eq!(direct_status(&c, &get("http://cafe.example.com/tea")), Some(502));
    assert_eq!(direct_status(&c, &get("http://cafe.example.com/coffee")), Some(404));
    let s = status_of(&c, "VirtualServerRoute", "default", "tea");
    assert_ne!(s.status, Status::Invalid, "{s:?}");
    assert!(!has_reason(s, Reason::VirtualServerInvalid), "{s:?}");
    let (state, reason, text) = nginx(&c, "VirtualServerRoute", "default", "tea");
    assert_eq!((state, reason), (NginxState::Warning, NginxReason::Ignored), "{text}");
    assert!(text.contains("VirtualServer default/cafe"), "{text}");
    assert!(text.contains("not under the referencing route's path"), "{text}");
    let (state, _, text) = nginx(&c, "VirtualServer", "default", "cafe");
    assert_eq!(state, NginxState::Warning);
    assert!(text.contains("does not fit this route"), "{text}");
}

/// A VirtualServerRoute that is invalid on its own stays Invalid whatever route references it
/// (NGINX validates it alone first): here one subroute of it is outside the route's prefix and
/// another names an upstream it does not define.
#[test]
fn a_virtualserverroute_invalid_on_its_own_is_invalid_before_it_is_a_misfit() {
    let bad = vsr(
        "stray",
        "default",
        "  host: cafe.example.com
  upstreams:
  - name: u
    service: u
    port: 80
  subroutes:
  - path: /coffee
    action:
      pass: u
  - path: /tea
    action:
      pass: nowhere
",
    );
    let c = compile_default(&format!("{}{bad}", cafe("  - path: /tea\n    route: stray\n")));
    assert_eq!(direct_status(&c, &get("http://cafe.example.com/tea")), Some(502));
    let s = status_of(&c, "VirtualServerRoute", "default", "stray");
    assert_eq!(s.status, Status::Invalid);
    assert!(
        message(s, Reason::VirtualServerInvalid).contains("is not defined"),
        "{s:?}"
    );
    let mixed = vsr(
        "mixed",
        "default",
        "  host: cafe.example.com\n  upstreams:\n  - name: u\n    service: u\n    port: 80\n  subroutes:\n  - path: /tea\n    action:\n      pass: u\n  - path: =/tea/x\n    action:\n      pass: u\n",
    );
    let c = compile_default(&format!("{}{mixed}", cafe("  - path: /tea\n    route: mixed\n")));
    let s = status_of(&c, "VirtualServerRoute", "default", "mixed");
    assert_eq!(s.status, Status::Invalid);
    assert!(
        message(s, Reason::VirtualServerInvalid).contains("location kind"),
        "{s:?}"
    );
}

/// Under an exact (or regex) route the subroute path must equal the route's, in the same kind; a
/// VirtualServerRoute that does not is ignored for that route (it answers 502).
#[test]
fn subroute_under_an_exact_route_must_equal_it() {
    let sub = |path: &str| {
        vsr(
            "r",
            "default",
            &format!("  host: cafe.example.com\n  upstreams:\n  - name: u\n    service: u\n    port: 80\n  subroutes:\n  - path: \"{path}\"\n    action:\n      pass: u\n"),
        )
    };
    let route = cafe("  - path: =/tea\n    route: r\n");
    let c = compile_default(&format!("{route}{}", sub("=/tea")));
    assert_eq!(cluster(&c, "http://cafe.example.com/tea"), Some("default/u:80".into()));
    for other in ["=/tea/x", "/tea"] {
        let c = compile_default(&format!("{route}{}", sub(other)));
        assert_eq!(
            direct_status(&c, &get("http://cafe.example.com/tea")),
            Some(502),
            "{other}"
        );
        assert_eq!(
            nginx(&c, "VirtualServerRoute", "default", "r").1,
            NginxReason::Ignored,
            "{other}"
        );
    }
}

/// A VirtualServerRoute no VirtualServer references is orphaned (`NoVirtualServerFound`); one whose
/// host's VirtualServer does not reference it is `Ignored`.
#[test]
fn unreferenced_virtualserverroutes_are_orphaned_or_ignored() {
    let lonely = vsr(
        "lonely",
        "default",
        "  host: nowhere.example.com\n  upstreams:\n  - name: u\n    service: u\n    port: 80\n  subroutes:\n  - path: /\n    action:\n      pass: u\n",
    );
    let ignored = vsr(
        "ignored",
        "default",
        "  host: cafe.example.com\n  upstreams:\n  - name: u\n    service: u\n    port: 80\n  subroutes:\n  - path: /x\n    action:\n      pass: u\n",
    );
    let c = compile_default(&format!(
        "{}{lonely}{ignored}",
        cafe(&format!("  - path: /\n{PASS_TEA}"))
    ));
    let (state, reason, _) = nginx(&c, "VirtualServerRoute", "default", "lonely");
    assert_eq!(
        (state, reason),
        (NginxState::Warning, NginxReason::NoVirtualServerFound)
    );
    let (state, reason, text) = nginx(&c, "VirtualServerRoute", "default", "ignored");
    assert_eq!((state, reason), (NginxState::Warning, NginxReason::Ignored));
    assert!(text.contains("VirtualServer default/cafe"), "{text}");
    assert_eq!(
        cluster(&c, "http://cafe.example.com/x"),
        Some("default/tea-svc:80".into())
    );
}

/// The VirtualServerRoutes of a VirtualServer that lost its host are orphaned with it.
#[test]
fn virtualserverroutes_of_a_losing_virtualserver_are_orphaned() {
    let c = cross_namespace("cafe.example.com", &cafe_ingress("2000-01-01T00:00:00Z", "z"));
    assert_eq!(status(&c, "VirtualServer", "cafe", "cafe"), Status::Rejected);
    assert_eq!(status(&c, "VirtualServerRoute", "tea", "tea"), Status::Orphaned);
    assert_eq!(
        cluster(&c, "http://cafe.example.com/tea"),
        Some("default/coffee-ingress:80".into())
    );
}

/// A VirtualServerRoute's regex subroutes take the place of the route that references it in the
/// regex order.
#[test]
fn virtualserverroute_regexes_rank_in_place_of_their_route() {
    let sub = vsr(
        "r",
        "default",
        "  host: cafe.example.com\n  upstreams:\n  - name: u\n    service: sub\n    port: 80\n  subroutes:\n  - path: \"~/t\"\n    action:\n      pass: u\n",
    );
    let server = cafe("  - path: \"~/tea/green\"\n    action:\n      pass: coffee\n  - path: \"~/t\"\n    route: r\n  - path: \"~/tea\"\n    action:\n      pass: tea\n");
    let c = compile_default(&format!("{server}{sub}"));
    assert_eq!(
        cluster(&c, "http://cafe.example.com/tea/green"),
        Some("default/coffee-svc:80".into())
    );
    assert_eq!(
        cluster(&c, "http://cafe.example.com/tea/black"),
        Some("default/sub:80".into())
    );
}

// ---- explain ----------------------------------------------------------------------------------

/// A /tea route with two header matches and its own action.
const TEA_MATCHES: &str = "  - path: /tea
    matches:
    - conditions:
      - header: x-a
        value: \"1\"
      action:
        pass: coffee
    - conditions:
      - header: x-b
        value: \"1\"
      action:
        pass: tea
    action:
      pass: tea
";

/// `explain` names why each losing candidate lost: an earlier match in the same route, the route's
/// own action after its matches, an earlier regex location, and the VirtualServer's 404.
#[test]
fn explain_names_earlier_match_in_the_same_route() {
    let c = compile_default(&cafe(&format!(
        "{TEA_MATCHES}  - path: \"~/t\"
    action:
      pass: tea
  - path: \"~/te\"
    action:
      pass: coffee
"
    )));
    let table = common::table(&c);
    let request = get("http://cafe.example.com/tea").header("x-a", "1").header("x-b", "1");
    let e = explain(&table, &request);
    // The regexes outrank the /tea prefix: the first regex wins.
    assert_eq!(e.decision.rule.as_deref(), Some("VirtualServer/default/cafe#1"));
    let why = |rule: &str| e.losers.iter().find(|l| l.rule == rule).map(|l| l.why.clone()).unwrap();
    assert!(why("VirtualServer/default/cafe#2").contains("earlier regex location"));
    assert!(why("VirtualServer/default/cafe#0/match0").contains("a regex location outranks plain prefix"));
    let c2 = compile_default(&cafe(TEA_MATCHES));
    let e = explain(&common::table(&c2), &request);
    assert_eq!(e.decision.rule.as_deref(), Some("VirtualServer/default/cafe#0/match0"));
    let why = |rule: &str| e.losers.iter().find(|l| l.rule == rule).map(|l| l.why.clone()).unwrap();
    assert!(why("VirtualServer/default/cafe#0/match1").contains("earlier match in the same route"));
    assert!(why("VirtualServer/default/cafe#0").contains("earlier match in the same route"));
    assert!(why("VirtualServer/default/cafe#unmatched").contains("404"));
}

/// A VirtualServer competes with a TLS passthrough TransportServer for its host (oldest wins): the
/// older passthrough leaves the host no HTTP rules and the VirtualServer is rejected; an older
/// VirtualServer keeps its host.
#[test]
fn virtualserver_and_tls_passthrough_transportserver_contest_the_host() {
    let passthrough = |created: &str| {
        format!(
            "apiVersion: k8s.nginx.org/v1\nkind: TransportServer\nmetadata:\n  name: secure\n  namespace: default\n  creationTimestamp: \"{created}\"\n  uid: t\nspec:\n  listener:\n    name: tls-passthrough\n    protocol: TLS_PASSTHROUGH\n  host: cafe.example.com\n  upstreams:\n  - name: s\n    service: secure\n    port: 8443\n  action:\n    pass: s\n---\n"
        )
    };
    let older_ts = compile_default(&format!(
        "{}{}",
        passthrough("2023-01-01T00:00:00Z"),
        cafe(&format!("  - path: /\n{PASS_TEA}"))
    ));
    assert_eq!(status(&older_ts, "VirtualServer", "default", "cafe"), Status::Rejected);
    assert_eq!(cluster(&older_ts, "http://cafe.example.com/"), None);
    let newer_ts = compile_default(&format!(
        "{}{}",
        passthrough("2025-01-01T00:00:00Z"),
        cafe(&format!("  - path: /\n{PASS_TEA}"))
    ));
    assert_eq!(status(&newer_ts, "VirtualServer", "default", "cafe"), Status::Valid);
    assert_eq!(
        cluster(&newer_ts, "http://cafe.example.com/"),
        Some("default/tea-svc:80".into())
    );
}

// ---- issue 23 ---------------------------------------------------------------------------------

/// Item 1: NGINX writes regex paths with a space after the modifier (`~ ^/coffee/.*\.jpg$`); the
/// white space is not part of the path, for `~`, `~*`, `=` and `^~`, in a VirtualServerRoute too
/// (`~  ^/juice/` is the route's `~^/juice/`). The VirtualServer is Valid.
#[test]
fn regex_path_with_space_after_modifier_matches() {
    let c = compile_default(&common::nginx_case("regex-path-space"));
    let to = |path: &str| cluster(&c, &format!("http://cafe.example.com{path}"));
    assert_eq!(to("/coffee/beans.jpg"), Some("default/images-svc:80".into()));
    assert_eq!(to("/coffee/beans.png"), Some("default/root-svc:80".into()));
    assert_eq!(to("/TEA/cup.PNG"), Some("default/icons-svc:80".into()));
    assert_eq!(to("/menu"), Some("default/menu-svc:80".into()));
    assert_eq!(to("/menu/x"), Some("default/root-svc:80".into()));
    assert_eq!(to("/static/a.jpg"), Some("default/static-svc:80".into()));
    assert_eq!(to("/juice/orange"), Some("default/juice-svc:80".into()));
    assert_eq!(status(&c, "VirtualServer", "default", "cafe"), Status::Valid);
    assert_eq!(status(&c, "VirtualServerRoute", "default", "juice"), Status::Valid);
    let paths: Vec<String> = c.table.rules.iter().map(|r| format!("{:?}", r.path)).collect();
    assert!(
        paths.iter().all(|p| !p.contains("(?: ") && !p.contains("\"\\t")),
        "{paths:?}"
    );
}

/// Item 1: `~ re` and `~re` are one location, so both in one VirtualServer are a duplicate path
/// (Invalid), as are `= /x` and `=/x`.
#[test]
fn regex_path_with_space_after_modifier_is_a_duplicate_of_the_same_path_without() {
    for (a, b) in [
        ("~ ^/tea", "~^/tea"),
        ("~*  /TEA", "~*/TEA"),
        ("= /tea", "=/tea"),
        ("^~ /tea", "/tea"),
    ] {
        let c = compile_default(&cafe(&format!(
            "  - path: '{a}'\n{PASS_TEA}  - path: '{b}'\n{PASS_TEA}"
        )));
        let s = status_of(&c, "VirtualServer", "default", "cafe");
        assert_eq!(s.status, Status::Invalid, "{a} {b}");
        assert!(
            message(s, Reason::VirtualServerInvalid).contains("also the path"),
            "{a} {b}"
        );
    }
}

/// Item 5: a cookie or argument name NGINX cannot read as a variable (`x-version`, `beer.kind`)
/// makes the VirtualServer (or VirtualServerRoute) Invalid, as NGINX's validation does; names of
/// `[_A-Za-z0-9]+` stay valid.
#[test]
fn cookie_or_argument_name_nginx_cannot_read_makes_the_resource_invalid() {
    let c = compile_default(&common::nginx_case("condition-names"));
    let s = status_of(&c, "VirtualServer", "default", "cafe");
    assert_eq!(s.status, Status::Invalid);
    let why = message(s, Reason::VirtualServerInvalid);
    assert!(
        why.contains("cookie name \"x-version\"") && why.contains("[_A-Za-z0-9]+"),
        "{why}"
    );
    assert_eq!(nginx(&c, "VirtualServer", "default", "cafe").0, NginxState::Invalid);
    assert_eq!(rule_names_on(&c, "cafe.example.com"), Vec::<String>::new());
    let s = status_of(&c, "VirtualServerRoute", "default", "beer");
    assert_eq!(s.status, Status::Invalid);
    assert!(message(s, Reason::VirtualServerInvalid).contains("argument name \"beer.kind\""));
    assert_eq!(
        direct_status(&c, &get("http://bar.example.com/beer?beer.kind=ale")),
        Some(502)
    );
    let fine = with_matches("    - conditions:\n      - cookie: my_cookie_123\n        value: v\n      - argument: Arg_1\n        value: v\n      action:\n        pass: coffee\n");
    assert_eq!(status(&fine, "VirtualServer", "default", "cafe"), Status::Valid);
}

fn rule_names_on(compiled: &switchyard_compiler::Compiled, host: &str) -> Vec<String> {
    compiled
        .table
        .rules
        .iter()
        .filter(|r| r.host.as_deref() == Some(host))
        .map(|r| r.name.clone())
        .collect()
}

/// Item 2: `${http_x_forwarded_proto}` is one of NGINX's four redirect variables: the VirtualServer
/// is Valid, and the variable is the request's `X-Forwarded-Proto` (empty when absent, as NGINX's
/// `$http_x_forwarded_proto` is).
#[test]
fn redirect_with_http_x_forwarded_proto_is_valid_and_filled_per_request() {
    let c = compile_default(&common::nginx_case("redirect-variables"));
    assert_eq!(status(&c, "VirtualServer", "default", "cafe"), Status::Valid);
    let request = get("http://cafe.example.com/old/x?y=1").header("x-forwarded-proto", "https");
    let table = common::table(&c);
    let explained = explain(&table, &request);
    assert_eq!(explained.decision.status, 302);
    assert_eq!(
        explained.decision.location.as_deref(),
        Some("https://cafe.example.com/new/old/x?y=1")
    );
    let bare = explain(&table, &get("http://cafe.example.com/old"));
    assert_eq!(bare.decision.location.as_deref(), Some("://cafe.example.com/new/old"));
}

/// Item 3: `rewritePath` on a regex location is NGINX's `rewrite`: the whole path is replaced, `$1`…
/// `$9` being the groups of the regex as written (searched as NGINX matches the location, `~*` in
/// any case), and the query string is kept. In a VirtualServerRoute and a match too.
#[test]
fn rewrite_path_on_a_regex_location_substitutes_the_regex_groups() {
    let c = compile_default(&common::nginx_case("regex-rewrite"));
    assert_eq!(status(&c, "VirtualServer", "default", "rewrite"), Status::Valid);
    assert_eq!(status(&c, "VirtualServerRoute", "default", "regex-2"), Status::Valid);
    let table = common::table(&c);
    let upstream = |request: SimpleRequest| {
        let decision = table.route(&request, 0).unwrap();
        assert_eq!(decision.backend.unwrap().cluster, "default/hello-svc:80");
        decision.rule.rewrite(&request.path).map(|r| r.path)
    };
    // NGINX Ingress Controller's tests/suite/test_rewrites.py expectations.
    for (path, want) in [
        ("/regex1/?arg=value", "/?arg=value"),
        ("/regex1/abc?arg=value", "/abc?arg=value"),
        ("/x/regex1/abc", "/abc"),
        ("/COFFEE/latte/hot?x=1", "/beans/hot/latte?x=1"),
        ("/regex2/abc?arg=value", "/?arg=value"),
    ] {
        let got = upstream(get(&format!("http://vs.example.com{path}")));
        assert_eq!(got.as_deref(), Some(want), "{path}");
    }
    let john = get("http://vs.example.com/regex2/abc?arg=value").cookie("user", "john");
    assert_eq!(upstream(john).as_deref(), Some("/user/john/?arg=value"));
}
