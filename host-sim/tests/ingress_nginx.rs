//! Issue 25 (ROUTING.md §7.3–7.5, §7.7: ingress-nginx's Ingresses) through the real filter
//! (`switchyard_filter.wasm`) in host-sim, with JSON tables written as the compiler will write them
//! (the compiler's §7 is not wired yet): a regex-mode host, `rewrite-target` with groups and the
//! query, `x-forwarded-prefix`, `upstream-vhost`, and every redirect's `Location`.

mod common;

use serde_json::{json, Value};
use switchyard_host_sim::{Outcome, Request, Sim};

/// A simulator running the filter with `rules` accepted.
fn filter(rules: Value) -> Sim {
    let mut sim = Sim::load(common::filter_wasm()).expect("the filter loads");
    let table = json!({ "version": 1, "generation": "ingress-nginx", "rules": rules });
    assert!(
        sim.configure(table.to_string()),
        "the filter refused the table: {:?}",
        sim.take_logs()
    );
    sim
}

/// ingress-nginx's regex-mode location `~* "^path"` as the compiler writes it.
fn regex_mode(path: &str) -> Value {
    json!({ "type": "regex", "value": format!("(?i)(?:{path}).*") })
}

fn route(name: &str, host: &str, path: Value, cluster: &str) -> Value {
    json!({ "name": name, "host": host, "path": path,
            "action": { "route": { "backends": [ { "cluster": cluster } ] } } })
}

fn redirect(name: &str, host: &str, path: Value, url: &str, status: u16) -> Value {
    json!({ "name": name, "host": host, "path": path,
            "action": { "redirect": { "url": url, "status": status } } })
}

fn cluster(outcome: &Outcome) -> Option<&str> {
    assert!(outcome.error.is_none(), "the filter failed: {:?}", outcome.error);
    outcome.request_header("x-route-cluster")
}

/// The status and `Location` of the filter's local reply.
fn location(outcome: &Outcome) -> (u32, String) {
    assert!(outcome.error.is_none(), "the filter failed: {:?}", outcome.error);
    let reply = outcome.local_response.as_ref().expect("a local reply");
    (reply.status, reply.header("location").unwrap_or_default().to_owned())
}

/// §7.4: every location of a regex-mode host matches `(?i)^path`, longest path first.
#[test]
fn regex_mode_locations_match_case_insensitive_prefixes_longest_first() {
    let mut sim = filter(json!([
        route("I/a/x#0", "rx.example", regex_mode("/api/v1.0"), "ns/v1:80"),
        route("I/a/x#1", "rx.example", regex_mode("/api"), "ns/api:80"),
        route("I/a/x#2", "rx.example", regex_mode("/"), "ns/root:80"),
    ]));
    let mut to = |url: &str| cluster(&sim.request(Request::get(url))).map(str::to_owned);
    assert_eq!(to("http://rx.example/API/V1x0/users").as_deref(), Some("ns/v1:80"));
    assert_eq!(to("http://rx.example/apix").as_deref(), Some("ns/api:80"));
    assert_eq!(to("http://rx.example/x/api").as_deref(), Some("ns/root:80"));
}

/// §7.5: `rewrite-target: /$2` on `/something(/|$)(.*)` (ingress-nginx's documented example): the
/// whole path replaced with the groups, the query appended; `x-forwarded-prefix` set with the
/// groups; `upstream-vhost` as `:authority`.
#[test]
fn rewrite_target_sends_the_groups_and_the_query_with_prefix_and_vhost() {
    let mut sim = filter(json!([{
        "name": "I/a/rewrite#0", "host": "rx.example", "path": regex_mode("/something(/|$)(.*)"),
        "action": { "route": {
            "backends": [ { "cluster": "ns/svc:80" } ],
            "rewrite_regex": { "pattern": "(?i)^/something(/|$)(.*)", "path": "/$2",
                               "headers": [ { "name": "X-Forwarded-Prefix", "value": "/something$1" } ] },
            "set_headers": [ { "name": ":authority", "value": "backend.internal" } ] } }
    }]));
    for (url, path, prefix) in [
        ("http://rx.example/something/new?x=1", "/new?x=1", "/something/"),
        ("http://rx.example/SOMETHING", "/", "/something"),
        ("http://rx.example/something/a/b", "/a/b", "/something/"),
    ] {
        let outcome = sim.request(Request::get(url));
        assert_eq!(cluster(&outcome), Some("ns/svc:80"), "{url}");
        assert_eq!(outcome.request_header(":path"), Some(path), "{url}");
        assert_eq!(outcome.request_header("x-forwarded-prefix"), Some(prefix), "{url}");
        assert_eq!(outcome.request_header(":authority"), Some("backend.internal"), "{url}");
    }
}

/// §7.3: a path ending in `/` answers 301 for the bare path, to the host without port, query kept.
#[test]
fn trailing_slash_redirect_in_the_filter() {
    let mut sim = filter(json!([
        redirect(
            "I/a/x#slash",
            "h.example",
            json!({ "type": "exact", "value": "/p" }),
            "${scheme}://${host}/p/${is_args}${args}",
            301
        ),
        route(
            "I/a/x#0",
            "h.example",
            json!({ "type": "segment_prefix", "value": "/p/" }),
            "ns/p:80"
        ),
    ]));
    let outcome = sim.request(Request::get("http://H.example:8080/p?x=1"));
    assert_eq!(location(&outcome), (301, "http://h.example/p/?x=1".to_owned()));
    assert_eq!(
        cluster(&sim.request(Request::get("http://h.example/p/"))),
        Some("ns/p:80")
    );
}

/// §7.7.1 from-to-www, §7.7.2 app-root, §7.7.4 a relative permanent redirect and §7.7.5 a
/// `rewrite-target` URL, each as its `Location` form.
#[test]
fn redirect_location_forms_in_the_filter() {
    let mut sim = filter(json!([
        redirect(
            "www",
            "www.example.com",
            json!({ "type": "segment_prefix", "value": "/" }),
            "${scheme}://example.com:${port}${uri%/}${is_args}${args}",
            308
        ),
        redirect(
            "app-root",
            "app.example",
            json!({ "type": "exact", "value": "/" }),
            "${scheme}://${http_host}/app",
            302
        ),
        redirect(
            "moved",
            "app.example",
            json!({ "type": "segment_prefix", "value": "/old" }),
            "${scheme}://${host}/new",
            301
        ),
        redirect(
            "away",
            "app.example",
            regex_mode("/away/(.*)"),
            "https://elsewhere.example/${1}${is_args}${args}",
            302
        ),
    ]));
    let mut to = |url: &str| location(&sim.request(Request::get(url)));
    assert_eq!(
        to("http://www.example.com/a/?q=1"),
        (308, "http://example.com:80/a?q=1".to_owned())
    );
    assert_eq!(
        to("https://www.example.com:8443/"),
        (308, "https://example.com:8443".to_owned())
    );
    assert_eq!(
        to("http://App.example:8080/?drop=1"),
        (302, "http://App.example:8080/app".to_owned())
    );
    assert_eq!(
        to("https://app.example/old/x?q=1"),
        (301, "https://app.example/new".to_owned())
    );
    assert_eq!(
        to("http://app.example/AWAY/b/c?q=1"),
        (302, "https://elsewhere.example/b/c?q=1".to_owned())
    );
}

/// §7.7.6: the HTTPS redirect answers `http` requests only (`:scheme`), drops one trailing `/` of
/// the request URI, and spares `no-tls-redirect-locations` (a location ordered before it).
#[test]
fn https_redirect_for_http_only_with_exempt_locations() {
    let https = |name: &str, url: &str| {
        let mut rule = redirect(
            name,
            "tls.example",
            json!({ "type": "segment_prefix", "value": "/" }),
            url,
            308,
        );
        rule["conditions"] = json!([{ "on": "header", "name": ":scheme", "match": "exact", "value": "http" }]);
        rule
    };
    let mut sim = filter(json!([
        route(
            "acme",
            "tls.example",
            json!({ "type": "segment_prefix", "value": "/.well-known/acme-challenge" }),
            "ns/acme:80"
        ),
        https("tls", "https://${host}${request_uri%/}"),
        route(
            "loc",
            "tls.example",
            json!({ "type": "segment_prefix", "value": "/" }),
            "ns/web:80"
        ),
    ]));
    let outcome = sim.request(Request::get("http://tls.example:8080/a/?x=1"));
    assert_eq!(location(&outcome), (308, "https://tls.example/a/?x=1".to_owned()));
    let outcome = sim.request(Request::get("http://tls.example/a/"));
    assert_eq!(location(&outcome), (308, "https://tls.example/a".to_owned()));
    assert_eq!(
        cluster(&sim.request(Request::get("https://tls.example/a/"))),
        Some("ns/web:80")
    );
    let acme = sim.request(Request::get("http://tls.example/.well-known/acme-challenge/t"));
    assert_eq!(cluster(&acme), Some("ns/acme:80"));
}
