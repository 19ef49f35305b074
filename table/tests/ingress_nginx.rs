//! ROUTING.md §7.3–7.5 and §7.7 (ingress-nginx's Ingresses) as far as the table decides them: the
//! regex-mode location `(?i)(?:P).*`, `rewrite-target` through `rewrite_regex` (with its
//! `x-forwarded-prefix` header), `upstream-vhost` as `:authority` in `set_headers`, the redirects'
//! `Location` forms from the redirect variables, and the HTTPS redirect's `:scheme` condition. The
//! compiler writes these rules in ingress-nginx's order; here they are written by hand, in order.

mod common;

use common::{get, rule, table, winner};
use serde_json::{json, Value};
use switchyard_table::{RouteTable, SimpleRequest};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// ingress-nginx's regex-mode location for `path`: `~* "^path"`, as the compiler writes it.
fn regex_mode(path: &str) -> String {
    format!("regex:(?i)(?:{path}).*")
}

/// A rule answering a redirect to `url` with `status`.
fn redirect(name: &str, host: &str, path: &str, url: &str, status: u16) -> Value {
    let mut r = rule(name, host, path, "unused");
    r["action"] = json!({ "redirect": { "url": url, "status": status } });
    r
}

/// The redirect `request` gets: status and `Location`.
fn location(table: &RouteTable, request: &SimpleRequest) -> Option<(u16, String)> {
    table.route(request, 0)?.rule.redirect_for(request)
}

/// The `:path` and headers a rewrite sends upstream for `request`.
fn rewritten(table: &RouteTable, request: &SimpleRequest) -> Option<(String, Vec<(String, String)>)> {
    let decision = table.route(request, 0)?;
    let done = decision.rule.rewrite(&request.path)?;
    let headers = done.headers.iter().map(|(n, v)| ((*n).to_owned(), v.clone())).collect();
    Some((done.path, headers))
}

/// A location with `rewrite-target: target` (and `x-forwarded-prefix` when given) on a regex path.
fn rewrite_rule(name: &str, path: &str, target: &str, prefix: Option<&str>) -> Value {
    let mut r = rule(name, "h.example", &regex_mode(path), "ns/svc:80");
    let mut rewrite = json!({ "pattern": format!("(?i)^{path}"), "path": target });
    if let Some(prefix) = prefix {
        rewrite["headers"] = json!([{ "name": "X-Forwarded-Prefix", "value": prefix }]);
    }
    r["action"]["route"]["rewrite_regex"] = rewrite;
    r
}

// ---- §7.4 regex mode ------------------------------------------------------------------------

/// "So `Exact /a` matches `/ABC/d`": case-insensitive, anchored at the start only.
#[test]
fn regex_mode_exact_path_matches_case_insensitive_prefix() {
    let t = table(vec![rule("a", "h.example", &regex_mode("/a"), "c")]);
    assert_eq!(winner(&t, &get("http://h.example/ABC/d")).as_deref(), Some("a"));
    assert_eq!(winner(&t, &get("http://h.example/a")).as_deref(), Some("a"));
}

/// "`Prefix /api` matches `/apix`": no segment boundary in regex mode.
#[test]
fn regex_mode_prefix_path_matches_apix() {
    let t = table(vec![rule("api", "h.example", &regex_mode("/api"), "c")]);
    assert_eq!(winner(&t, &get("http://h.example/apix")).as_deref(), Some("api"));
    assert_eq!(winner(&t, &get("http://h.example/API/v1")).as_deref(), Some("api"));
}

/// "and `/v1.0` matches `/v1x0`": the path is a regex.
#[test]
fn regex_mode_dot_matches_any_character() {
    let t = table(vec![rule("v", "h.example", &regex_mode("/v1.0"), "c")]);
    assert_eq!(winner(&t, &get("http://h.example/v1x0/x")).as_deref(), Some("v"));
    assert_eq!(winner(&t, &get("http://h.example/V1.0")).as_deref(), Some("v"));
    assert_eq!(winner(&t, &get("http://h.example/v10")), None);
}

/// `^` anchors at the start: a location is never found further in the path.
#[test]
fn regex_mode_is_anchored_at_the_start_only() {
    let t = table(vec![rule("api", "h.example", &regex_mode("/api"), "c")]);
    assert_eq!(winner(&t, &get("http://h.example/x/api")), None);
    assert_eq!(winner(&t, &get("http://h.example/ap")), None);
}

/// "Locations are tried longest path string first …; the first that matches wins": the compiler
/// writes them in that order and the table keeps it, whatever the path kinds around them.
#[test]
fn regex_mode_locations_are_tried_in_table_order() {
    let t = table(vec![
        rule("long", "h.example", &regex_mode("/api/v1"), "long"),
        rule("mid", "h.example", &regex_mode("/api"), "mid"),
        rule("root", "h.example", &regex_mode("/"), "root"),
    ]);
    assert_eq!(
        winner(&t, &get("http://h.example/API/V1/users")).as_deref(),
        Some("long")
    );
    assert_eq!(winner(&t, &get("http://h.example/apiv2")).as_deref(), Some("mid"));
    assert_eq!(winner(&t, &get("http://h.example/other")).as_deref(), Some("root"));
}

/// A location of plain text is matched without its regex; the answer is the regex's, line feeds
/// (which `.` does not match) and non-ASCII letters (regex-lite folds ASCII only) included.
#[test]
fn regex_mode_plain_text_location_answers_as_its_regex() {
    let t = table(vec![rule("p", "h.example", &regex_mode("/Caf\u{e9}/menu"), "c")]);
    let plain_regex = regex_lite::Regex::new("^(?:(?i)(?:/Caf\u{e9}/menu).*)$").unwrap();
    for path in [
        "/caf\u{e9}/MENU",
        "/CAF\u{e9}/menu/x",
        "/CAF\u{c9}/menu",
        "/caf\u{e9}/menu\nx",
        "/caf\u{e9}/men",
        "/cafe/menu",
    ] {
        let request = SimpleRequest::get("h.example", path);
        assert_eq!(winner(&t, &request).is_some(), plain_regex.is_match(path), "{path:?}");
    }
}

/// A location whose start is optional (`(?:/a)?/b`) is not required to start with `/a`.
#[test]
fn regex_mode_optional_start_is_not_required() {
    let t = table(vec![
        rule("opt", "h.example", &regex_mode("(?:/a)?/b"), "c"),
        rule("alt", "h.example", &regex_mode("/x|/y"), "c"),
    ]);
    assert_eq!(winner(&t, &get("http://h.example/b")).as_deref(), Some("opt"));
    assert_eq!(winner(&t, &get("http://h.example/A/B")).as_deref(), Some("opt"));
    assert_eq!(winner(&t, &get("http://h.example/Y/z")).as_deref(), Some("alt"));
}

// ---- §7.5 what the backend receives --------------------------------------------------------

/// "the whole path is replaced by T, with `$1`…`$9` taken from the groups of the location's path
/// regex …, and the original query string appended" (ingress-nginx's own example).
#[test]
fn rewrite_target_replaces_the_whole_path_and_appends_the_query() {
    let t = table(vec![rewrite_rule("r", "/something(/|$)(.*)", "/$2", None)]);
    let to = |url: &str| rewritten(&t, &get(url)).map(|(path, _)| path);
    assert_eq!(to("http://h.example/something/new?x=1").as_deref(), Some("/new?x=1"));
    assert_eq!(to("http://h.example/something").as_deref(), Some("/"));
    assert_eq!(to("http://h.example/something/").as_deref(), Some("/"));
    assert_eq!(to("http://h.example/something/a/b").as_deref(), Some("/a/b"));
}

/// "(matched case-insensitively …)": the groups come from a case-insensitive match.
#[test]
fn rewrite_target_groups_are_matched_case_insensitively() {
    let t = table(vec![rewrite_rule("r", "/something(/|$)(.*)", "/x/$2", None)]);
    assert_eq!(
        rewritten(&t, &get("http://h.example/SomeThing/Keep?Q=1")).map(|(p, _)| p),
        Some("/x/Keep?Q=1".to_owned())
    );
}

/// "a `$n` beyond its groups is empty".
#[test]
fn rewrite_target_group_beyond_the_regex_is_empty() {
    let t = table(vec![rewrite_rule("r", "/a/(.*)", "/$1$2$9/z", None)]);
    assert_eq!(
        rewritten(&t, &get("http://h.example/a/b")).map(|(p, _)| p),
        Some("/b/z".to_owned())
    );
}

/// "`x-forwarded-prefix: V` adds the request header … (captures substituted), only where a rewrite
/// applies".
#[test]
fn x_forwarded_prefix_is_set_with_groups_where_the_rewrite_applies() {
    let t = table(vec![rewrite_rule("r", "/(app)(/|$)(.*)", "/$3", Some("/$1"))]);
    assert_eq!(
        rewritten(&t, &get("http://h.example/APP/x")),
        Some((
            "/x".to_owned(),
            vec![("x-forwarded-prefix".to_owned(), "/APP".to_owned())]
        ))
    );
}

/// A header whose value comes out empty is not set (nginx sends no header with an empty value).
#[test]
fn rewrite_header_that_comes_out_empty_is_not_set() {
    let t = table(vec![rewrite_rule("r", "/a(/b)?", "/", Some("$1"))]);
    assert_eq!(
        rewritten(&t, &get("http://h.example/a")),
        Some(("/".to_owned(), vec![]))
    );
}

/// Rewrite headers are checked like `set_headers`: a token name, a field value, `$` before a digit.
#[test]
fn rewrite_headers_are_validated() {
    let refused = |header: Value| {
        let mut r = rule("r", "h", "regex:/a", "c");
        r["action"]["route"]["rewrite_regex"] = json!({ "pattern": "/a", "path": "/", "headers": [header] });
        let json = json!({ "version": 1, "rules": [r] });
        RouteTable::from_json(json.to_string().as_bytes())
            .unwrap_err()
            .to_string()
    };
    assert!(refused(json!({ "name": "x y", "value": "v" })).contains("rewrite_regex.headers[0].name"));
    assert!(refused(json!({ "name": "x", "value": "$x" })).contains("rewrite_regex.headers[0].value"));
    assert!(refused(json!({ "name": "x", "value": "a\nb" })).contains("rewrite_regex.headers[0].value"));
}

/// "`upstream-vhost: H` is the Host the backend receives": `:authority` may be set, no other
/// pseudo-header, and it is never removed.
#[test]
fn upstream_vhost_sets_authority_and_no_other_pseudo_header() {
    let with_header = |list: &str, name: &str| {
        let mut r = rule("r", "h", "prefix:/", "c");
        r["action"]["route"][list] = match list {
            "set_headers" => json!([{ "name": name, "value": "backend.internal" }]),
            _ => json!([name]),
        };
        let json = json!({ "version": 1, "rules": [r] });
        RouteTable::from_json(json.to_string().as_bytes()).map(|_| ())
    };
    assert!(with_header("set_headers", ":authority").is_ok());
    assert!(with_header("set_headers", ":path").is_err());
    assert!(with_header("remove_headers", ":authority").is_err());
}

// ---- §7.3 and §7.7 redirects ---------------------------------------------------------------

/// §7.3: "a request for `/p` … gets a 301 to `<scheme>://<host without port>/p/` with the query kept".
#[test]
fn trailing_slash_redirect_goes_to_host_without_port_with_the_query() {
    let url = "${scheme}://${host}/p/${is_args}${args}";
    let t = table(vec![redirect("slash", "h.example", "exact:/p", url, 301)]);
    assert_eq!(
        location(&t, &get("http://H.example:8080/p?x=1&y")),
        Some((301, "http://h.example/p/?x=1&y".to_owned()))
    );
    assert_eq!(
        location(&t, &get("https://h.example/p")),
        Some((301, "https://h.example/p/".to_owned()))
    );
    assert_eq!(
        location(&t, &get("https://h.example/p?")).unwrap().1,
        "https://h.example/p/"
    );
}

/// §7.7.1: "a 308 to `<scheme>://H:<port><path minus one trailing "/">?<query>`, the port always
/// written".
#[test]
fn from_to_www_redirect_writes_the_port_and_drops_one_trailing_slash() {
    let url = "${scheme}://example.com:${port}${uri%/}${is_args}${args}";
    let t = table(vec![redirect("www", "www.example.com", "prefix:/", url, 308)]);
    let to = |u: &str| location(&t, &get(u)).unwrap();
    assert_eq!(
        to("http://www.example.com/a/?q=1"),
        (308, "http://example.com:80/a?q=1".to_owned())
    );
    assert_eq!(
        to("https://www.example.com/"),
        (308, "https://example.com:443".to_owned())
    );
    assert_eq!(
        to("https://www.example.com:8443/a//"),
        (308, "https://example.com:8443/a/".to_owned())
    );
}

/// §7.7.2: "a request for exactly `/` gets a 302 to `<scheme>://<Host as sent>/p`, query dropped".
#[test]
fn app_root_redirects_exactly_root_to_the_host_as_sent_without_query() {
    let t = table(vec![
        redirect("app-root", "h.example", "exact:/", "${scheme}://${http_host}/app", 302),
        rule("rest", "h.example", "segment:/", "c"),
    ]);
    assert_eq!(
        location(&t, &get("http://H.example:8080/?x=1")),
        Some((302, "http://H.example:8080/app".to_owned()))
    );
    assert_eq!(winner(&t, &get("http://h.example/other")).as_deref(), Some("rest"));
}

/// §7.7.4: "`URL` verbatim, the request's path and query not appended; a relative `URL` (`/x`) is
/// made absolute with the request's scheme and Host".
#[test]
fn temporal_and_permanent_redirects_are_verbatim_and_relative_made_absolute() {
    let t = table(vec![
        redirect("abs", "h.example", "segment:/abs", "https://other.example/new", 307),
        redirect("rel", "h.example", "segment:/rel", "${scheme}://${host}/x", 301),
    ]);
    assert_eq!(
        location(&t, &get("http://h.example/abs/deep?q=1")),
        Some((307, "https://other.example/new".to_owned()))
    );
    assert_eq!(
        location(&t, &get("https://H.example:8443/rel?q=1")),
        Some((301, "https://h.example/x".to_owned()))
    );
}

/// §7.5/§7.7.5: "A `T` that starts with `http://` or `https://` answers 302 to it, the query
/// appended there too", with the location regex's groups.
#[test]
fn rewrite_target_absolute_url_redirects_302_with_groups_and_query() {
    let url = "https://new.example/${2}${is_args}${args}";
    let t = table(vec![redirect("r", "h.example", &regex_mode("/old(/|$)(.*)"), url, 302)]);
    assert_eq!(
        location(&t, &get("http://h.example/OLD/a/b?x=1")),
        Some((302, "https://new.example/a/b?x=1".to_owned()))
    );
    assert_eq!(
        location(&t, &get("http://h.example/old")),
        Some((302, "https://new.example/".to_owned()))
    );
}

/// A group of a path that is not a regex, or beyond the regex's, is empty.
#[test]
fn redirect_group_of_no_regex_is_empty() {
    let t = table(vec![redirect("r", "h", "prefix:/", "/x${1}${9}", 302)]);
    assert_eq!(location(&t, &get("http://h/a")).unwrap().1, "/x");
}

/// §7.7.6: "a request whose scheme is `http` gets a 308": the redirect rule holds for `http` only
/// (`:scheme` as Envoy sets it) and an `https` request goes on to the location.
#[test]
fn https_redirect_applies_only_to_http_requests() {
    let https = common::with(
        redirect("tls", "h.example", "segment:/", "https://${host}${request_uri%/}", 308),
        "header",
        ":scheme",
        "exact",
        "http",
    );
    let t = table(vec![https, rule("loc", "h.example", "segment:/", "c")]);
    assert_eq!(
        location(&t, &get("http://h.example:8080/a/?x=1")),
        Some((308, "https://h.example/a/?x=1".to_owned()))
    );
    assert_eq!(winner(&t, &get("https://h.example/a")).as_deref(), Some("loc"));
}

/// §7.7.6: "the last character of the request URI removed when it is `/` (unless
/// `preserve-trailing-slash`)".
#[test]
fn https_redirect_drops_the_request_uris_trailing_slash_unless_preserved() {
    let t = table(vec![
        redirect(
            "keep",
            "h.example",
            "segment:/keep",
            "https://${host}${request_uri}",
            308,
        ),
        redirect("drop", "h.example", "segment:/", "https://${host}${request_uri%/}", 308),
    ]);
    let to = |u: &str| location(&t, &get(u)).unwrap().1;
    assert_eq!(to("http://h.example/a/"), "https://h.example/a");
    assert_eq!(to("http://h.example/"), "https://h.example");
    assert_eq!(to("http://h.example/a?x=/"), "https://h.example/a?x=");
    assert_eq!(to("http://h.example/keep/"), "https://h.example/keep/");
}

/// §7.7.6: "Locations whose path starts with an entry of `no-tls-redirect-locations` … are exempt":
/// the compiler writes no redirect for them, and their location comes first.
#[test]
fn no_tls_redirect_location_is_exempt_by_rule_order() {
    let https = common::with(
        redirect("tls", "h.example", "segment:/", "https://${host}${request_uri%/}", 308),
        "header",
        ":scheme",
        "exact",
        "http",
    );
    let t = table(vec![
        rule("acme", "h.example", "segment:/.well-known/acme-challenge", "acme"),
        https,
        rule("loc", "h.example", "segment:/", "c"),
    ]);
    assert_eq!(
        winner(&t, &get("http://h.example/.well-known/acme-challenge/t")).as_deref(),
        Some("acme")
    );
    assert_eq!(winner(&t, &get("http://h.example/x")).as_deref(), Some("tls"));
}

/// `:scheme` is the one pseudo-header a condition may name.
#[test]
fn scheme_is_the_only_pseudo_header_a_condition_reads() {
    let with_name = |name: &str| {
        let r = common::with(rule("r", "h", "prefix:/", "c"), "header", name, "exact", "http");
        let json = json!({ "version": 1, "rules": [r] });
        RouteTable::from_json(json.to_string().as_bytes()).map(|_| ())
    };
    assert!(with_name(":scheme").is_ok());
    assert!(with_name(":Scheme").is_ok());
    assert!(with_name(":path").is_err());
}

/// The redirect variables are checked when the table loads: a name outside the list, a group
/// beyond `${9}` and a suffix other than `%/` are refused.
#[test]
fn redirect_variables_are_checked_when_the_table_loads() {
    let refused = |url: &str| {
        let json = json!({ "version": 1, "rules": [redirect("r", "h", "prefix:/", url, 302)] });
        RouteTable::from_json(json.to_string().as_bytes()).is_err()
    };
    assert!(!refused(
        "${scheme}://${http_host}:${port}${uri%/}${is_args}${args}${0}${9}"
    ));
    assert!(refused("${10}"));
    assert!(refused("${server_port}"));
    assert!(refused("${uri%}"));
    assert!(refused("${uri%%/}"));
}
