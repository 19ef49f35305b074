//! ingress-nginx's Ingresses (ROUTING.md §7) end to end: manifests compiled by `switchyard compile
//! --ingress-nginx-class nginx` (`SWITCHYARD_BIN`), the table loaded into a real Envoy with the
//! filter (`SWITCHYARD_WASM`, `ENVOY_BIN`), real requests over HTTP to backends on 127.0.0.1 that
//! echo the path and headers they received. Four tests:
//!
//! - the `examples/001-ingress-nginx-*` folders (ingress-nginx's documented examples and the canary
//!   example) and the corpus's `paths.yaml`, in one Envoy: the redirects' `Location` headers (app-root 302,
//!   trailing-slash 301, HTTPS 308 on plain http) and the path and headers the backend received
//!   (the rewrite `/something/new?x=1` → `/new?x=1`);
//! - the whole ingress-nginx corpus (`tests/cases/ingress_nginx.json`, also run natively and under
//!   host-sim by host-sim/tests/ingress_nginx_cases.rs), each case compiled with its own flags and
//!   loaded through ECDS in turn; its plain-http requests must get the case's decision in Envoy;
//! - the canary's weights (ROUTING.md §7.6): thousands of requests per location, the canary's share
//!   within 3 points of the weight, and the header and cookie deciding before it;
//! - ingress-nginx's own canary tests of a modified main or canary Ingress, the table pushed again.
//!
//! `make test-envoy` sets the three variables; the tests fail without them.

use std::path::{Path, PathBuf};

use serde_json::Value;
use switchyard_cases::{manifest_cases, NginxProbe, Want};
use switchyard_e2e::{backend_name, get, switchyard_compile, ConfigForm, Envoy, Request, Response};

/// The example folders of ingress-nginx's documents.
const EXAMPLES: [&str; 6] = [
    "001-ingress-nginx-canary",
    "001-ingress-nginx-rewrite",
    "001-ingress-nginx-app-root",
    "001-ingress-nginx-use-regex",
    "001-ingress-nginx-ssl-redirect",
    "001-ingress-nginx-server-alias",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every cluster a table routes to, once each.
fn clusters_of(table: &str) -> Vec<String> {
    fn walk(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value.as_str()) {
                        ("cluster", Some(cluster)) => found.push(cluster.to_owned()),
                        _ => walk(value, found),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(&serde_json::from_str(table).expect("a JSON table"), &mut found);
    found.sort();
    found.dedup();
    found
}

fn send(envoy: &Envoy, request: Request) -> Response {
    let response = envoy.send(&request);
    eprintln!(
        "{} {}{} -> {} {:?} {:?} {:?} {:?}",
        request.method,
        request.host,
        request.path,
        response.status,
        response.backend(),
        response.upstream_path(),
        response.header("location"),
        response.header("x-switchyard-rule")
    );
    response
}

/// The status and `Location` of a redirect answered by the filter (no backend involved).
fn redirect(response: &Response) -> (u16, Option<&str>) {
    assert_eq!(response.backend(), None, "a redirect, not a backend's answer");
    (response.status, response.header("location"))
}

/// ingress-nginx's documented examples, with the corpus's trailing-slash manifest, in one Envoy.
#[test]
fn ingress_nginx_examples_redirect_and_rewrite_in_envoy() {
    let mut paths: Vec<PathBuf> = EXAMPLES.iter().map(|e| repo().join("examples").join(e)).collect();
    paths.push(repo().join("tests/cases/ingress-nginx/paths.yaml"));
    let paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let table = switchyard_compile(&paths, &["--ingress-nginx-class", "nginx", "--debug-rule-header"]);
    let clusters = clusters_of(&table);
    let clusters: Vec<&str> = clusters.iter().map(String::as_str).collect();
    let envoy = Envoy::start(&table, &clusters);

    // docs/examples/rewrite: `/something(/|$)(.*)` → `/$2`, the query appended.
    for (path, upstream) in [
        ("/something", "/"),
        ("/something/", "/"),
        ("/something/new", "/new"),
        ("/something/new?x=1", "/new?x=1"),
        ("/SOMETHING/New/a?x=1&y=2", "/New/a?x=1&y=2"),
    ] {
        let response = send(&envoy, get("rewrite.bar.com", path));
        assert_eq!(response.status, 200, "{path}");
        assert_eq!(response.backend(), Some("http-svc"), "{path}");
        assert_eq!(response.upstream_path(), Some(upstream), "{path}");
    }

    // docs/examples/rewrite, App Root: `curl -I http://approot.bar.com/` → 302 to /app1.
    let root = send(&envoy, get("approot.bar.com", "/?from=docs"));
    assert_eq!(redirect(&root), (302, Some("http://approot.bar.com/app1")));
    assert_eq!(
        root.header("x-switchyard-rule"),
        Some("Ingress/default/approot#app-root@approot.bar.com")
    );
    let app = send(&envoy, get("approot.bar.com", "/app1"));
    assert_eq!((app.backend(), app.upstream_path()), (Some("http-svc"), Some("/app1")));

    // docs/user-guide/ingress-path-matching.md: regex mode on test.com, longest path first.
    for (path, backend, upstream) in [
        ("/foo/bar/1", "service3", "/1"),
        ("/foo/bar/", "service2", "/foo/bar/"),
        ("/foo/bar", "service1", "/foo/bar"),
        ("/foo/bar/bar", "test", "/foo/bar/bar"),
        ("/FOO/BAR", "service1", "/FOO/BAR"),
    ] {
        let response = send(&envoy, get("test.com", path));
        assert_eq!(
            (response.backend(), response.upstream_path()),
            (Some(backend), Some(upstream)),
            "{path}"
        );
    }

    // docs/examples/tls-termination: a host with spec.tls answers plain http with 308 to https,
    // the request URI's last `/` removed, the query kept.
    let tls = send(&envoy, get("foo.bar.com", "/a/"));
    assert_eq!(redirect(&tls), (308, Some("https://foo.bar.com/a")));
    let tls = send(&envoy, get("foo.bar.com:10000", "/a/b?x=1"));
    assert_eq!(redirect(&tls), (308, Some("https://foo.bar.com/a/b?x=1")));
    let tls = send(&envoy, get("foo.bar.com", "/"));
    assert_eq!(redirect(&tls), (308, Some("https://foo.bar.com")));

    // server-alias: the server of `foo` answers `bar`, every Ingress's paths included.
    for (host, path, backend) in [
        ("foo", "/app-a", "echo"),
        ("bar", "/app-a", "echo"),
        ("bar", "/app-b/x", "echo-b"),
    ] {
        assert_eq!(send(&envoy, get(host, path)).backend(), Some(backend), "{host}{path}");
    }
    let nobody = send(&envoy, get("baz", "/app-a"));
    assert_eq!((nobody.status, nobody.backend()), (404, None));

    // examples/001-ingress-nginx-canary: the header, the cookie (its name in any case), the weight's
    // header value.
    for (host, path, header, backend) in [
        ("shop.example.com", "/p", ("X-Canary", "always"), "shop-canary"),
        ("shop.example.com", "/p", ("X-Canary", "never"), "shop"),
        ("shop.example.com", "/p", ("X-Other", "always"), "shop"),
        (
            "shop.example.com",
            "/cart/1",
            ("Cookie", "CANARY=always"),
            "cart-canary",
        ),
        ("shop.example.com", "/cart/1", ("Cookie", "canary=never"), "cart"),
        ("shop.example.com", "/cart/1", ("X-Canary", "always"), "cart"),
        ("api.example.com", "/v", ("X-Api-Version", "v2"), "api-canary"),
    ] {
        let response = send(&envoy, get(host, path).header(header.0, header.1));
        assert_eq!(
            (response.backend(), response.upstream_path()),
            (Some(backend), Some(path)),
            "{host}{path} {header:?}"
        );
    }

    // ROUTING.md §7.3: a path ending in `/` answers the bare path with a 301, the query kept, the
    // port left out.
    let slash = send(&envoy, get("paths.example:8080", "/dir?x=1"));
    assert_eq!(redirect(&slash), (301, Some("http://paths.example/dir/?x=1")));
    let dir = send(&envoy, get("paths.example", "/dir/"));
    assert_eq!(dir.backend(), Some("dir"));
}

/// How Envoy's answer to `probe` differs from the case's decision, if it does.
fn differs(want: &Want, response: &Response) -> Option<String> {
    let mut wrong = Vec::new();
    let rule = response.header("x-switchyard-rule");
    if response.status != want.status {
        wrong.push(format!("status {} (want {})", response.status, want.status));
    }
    if want.rule_none && rule.is_some() {
        wrong.push(format!("rule {rule:?} (want none)"));
    }
    if want.rule.is_some() && want.rule.as_deref() != rule {
        wrong.push(format!("rule {rule:?} (want {:?})", want.rule));
    }
    let backend = want.cluster.as_deref().map(backend_name);
    if response.backend() != backend.as_deref() {
        wrong.push(format!("backend {:?} (want {backend:?})", response.backend()));
    }
    if let Some(body) = &want.body {
        if !response.body.contains(body.as_str()) {
            wrong.push(format!("body {:?} (want it to contain {body:?})", response.body));
        }
    }
    if want.location.is_some() && response.header("location") != want.location.as_deref() {
        wrong.push(format!(
            "Location {:?} (want {:?})",
            response.header("location"),
            want.location
        ));
    }
    if let Some(path) = &want.path {
        if response.upstream_path() != Some(path.as_str()) {
            wrong.push(format!("upstream path {:?} (want {path:?})", response.upstream_path()));
        }
    }
    for (name, value) in &want.headers {
        // The backend sees `:authority` as its Host header.
        let name = if name == ":authority" { "host" } else { name.as_str() };
        let got = response.upstream_header(name);
        if got != [value.as_str()] {
            wrong.push(format!("upstream header {name}: {got:?} (want {value:?})"));
        }
    }
    for name in &want.absent_headers {
        let got = response.upstream_header(name);
        if !got.is_empty() {
            wrong.push(format!("upstream header {name}: {got:?} (want it absent)"));
        }
    }
    (!wrong.is_empty()).then(|| wrong.join(", "))
}

fn request(probe: &NginxProbe) -> Request {
    probe.headers.iter().fold(
        get(probe.authority(), probe.path()).method(&probe.method),
        |r, (name, value)| r.header(name, value),
    )
}

/// Every case of the corpora of manifests (ingress-nginx's, ROUTING.md §7, and the access
/// controls', §9), its plain-http requests through Envoy (Envoy's listener here is plain HTTP, so
/// `:scheme` is `http`; the `https://` requests run natively and under host-sim only).
#[test]
fn every_manifest_case_decides_in_envoy() {
    let cases = manifest_cases();
    let tables: Vec<String> = cases
        .iter()
        .map(|case| {
            let mut args: Vec<&str> = case.flags.iter().map(String::as_str).collect();
            args.push("--debug-rule-header");
            switchyard_compile(&[&case.manifest_path()], &args)
        })
        .collect();
    let mut clusters: Vec<String> = tables.iter().flat_map(|t| clusters_of(t)).collect();
    clusters.sort();
    clusters.dedup();
    let clusters: Vec<&str> = clusters.iter().map(String::as_str).collect();
    let envoy = Envoy::start(&tables[0], &clusters);
    let mut failures = Vec::new();
    let mut sent = 0;
    for (i, (case, table)) in cases.iter().zip(&tables).enumerate() {
        if i > 0 && !envoy.update_table(table, ConfigForm::StringValue) {
            failures.push(format!("{}: Envoy refused the table", case.name));
            continue;
        }
        for probe in case.requests.iter().filter(|p| p.url.starts_with("http://")) {
            sent += 1;
            let response = envoy.send(&request(probe));
            if let Some(why) = differs(&probe.want, &response) {
                failures.push(format!("{}: {probe}: {why}", case.name));
            }
        }
    }
    assert!(sent >= 100, "only {sent} plain-http requests in the corpus");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A main Ingress (Service `NAME`) and its canary (Service `NAME-canary`) on host `NAME.weights`,
/// path `/`, the canary's annotations given as `name: value` lines.
fn canary_pair(name: &str, annotations: &[(&str, &str)]) -> String {
    let canary: String = annotations
        .iter()
        .map(|(k, v)| format!("    nginx.ingress.kubernetes.io/{k}: \"{v}\"\n"))
        .collect();
    format!(
        "---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: {name}, namespace: w, creationTimestamp: \"2024-01-01T00:00:00Z\"}}
spec:
  ingressClassName: nginx
  rules:
  - host: {name}.weights
    http:
      paths:
      - {{path: /, pathType: Prefix, backend: {{service: {{name: {name}, port: {{number: 80}}}}}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {name}-canary
  namespace: w
  creationTimestamp: \"2024-01-02T00:00:00Z\"
  annotations:
    nginx.ingress.kubernetes.io/canary: \"true\"
{canary}spec:
  ingressClassName: nginx
  rules:
  - host: {name}.weights
    http:
      paths:
      - {{path: /, pathType: Prefix, backend: {{service: {{name: {name}-canary, port: {{number: 80}}}}}}}}
"
    )
}

/// How many of `count` requests (`request`, sent from 8 threads at once) the backend `canary`
/// answered; every answer must be 200 from `main` or `canary`.
fn canary_count(envoy: &Envoy, request: &Request, count: usize, main: &str, canary: &str) -> usize {
    const THREADS: usize = 8;
    let addr = envoy.addr;
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                scope.spawn(move || {
                    let mut hits = 0;
                    for _ in (t..count).step_by(THREADS) {
                        let response = switchyard_e2e::send(addr, request)
                            .unwrap_or_else(|e| panic!("{} {}: {e}", request.host, request.path));
                        assert_eq!(response.status, 200, "{}", request.host);
                        match response.backend() {
                            Some(b) if b == canary => hits += 1,
                            Some(b) if b == main => {}
                            other => panic!("{}: answered by {other:?}", request.host),
                        }
                    }
                    hits
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("a sender thread")).sum()
    })
}

/// A host of the weight test: its name, its canary's annotations, the canary's share in percent.
type Weighted = (&'static str, &'static [(&'static str, &'static str)], f64);

/// ROUTING.md §7.6 step 3 in a real Envoy: the canary's share of many requests is `canary-weight`
/// out of `canary-weight-total` (counted only above 100) within ±3 percentage points, exactly 0 %
/// for weight 0 and 100 % for a weight equal to the total; the header and the cookie decide before
/// the weight (kubernetes/ingress-nginx test/e2e/annotations/canary.go's "should route requests
/// split between mainline and canary if canary weight is 50" and "... if canary weight is 100 and
/// weight total is 200" are the 50-of-100 and 100-of-200 hosts).
#[test]
fn canary_weights_split_requests_in_envoy() {
    // (host, annotations, the canary's expected share in percent)
    let weighted: [Weighted; 7] = [
        ("ten", &[("canary-weight", "10")], 10.0),
        ("thirty", &[("canary-weight", "30")], 30.0),
        ("half", &[("canary-weight", "50")], 50.0),
        (
            "of-two-hundred",
            &[("canary-weight", "100"), ("canary-weight-total", "200")],
            50.0,
        ),
        // A total of 100 or less counts as 100: 30 of a written 50 is 30 %, not 60 %.
        (
            "small-total",
            &[("canary-weight", "30"), ("canary-weight-total", "50")],
            30.0,
        ),
        ("zero", &[("canary-weight", "0")], 0.0),
        (
            "all",
            &[("canary-weight", "700"), ("canary-weight-total", "700")],
            100.0,
        ),
    ];
    let mut yaml = String::from(
        "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: nginx}\nspec: {controller: k8s.io/ingress-nginx}\n",
    );
    for (name, annotations, _) in &weighted {
        yaml.push_str(&canary_pair(name, annotations));
    }
    yaml.push_str(&canary_pair(
        "decided",
        &[
            ("canary-by-header", "X-Canary"),
            ("canary-by-cookie", "canary"),
            ("canary-weight", "50"),
        ],
    ));
    let table = switchyard_compile_yaml(&yaml);
    let clusters = clusters_of(&table);
    let clusters: Vec<&str> = clusters.iter().map(String::as_str).collect();
    let envoy = Envoy::start(&table, &clusters);

    let started = std::time::Instant::now();
    let mut report = Vec::new();
    for (name, _, want) in &weighted {
        let canary = format!("{name}-canary");
        // 4,000 requests put 3 points at 4 standard deviations or more of a split's share.
        let count = if *want == 0.0 || *want == 100.0 { 2000 } else { 4000 };
        let hits = canary_count(&envoy, &get(&format!("{name}.weights"), "/x"), count, name, &canary);
        let share = 100.0 * hits as f64 / count as f64;
        report.push(format!("{name}: {hits}/{count} = {share:.2} % (want {want} %)"));
        if *want == 0.0 || *want == 100.0 {
            assert_eq!(share, *want, "{name}: {hits} of {count} to the canary");
        } else {
            assert!(
                (share - want).abs() <= 3.0,
                "{name}: the canary's share {share:.2} % is not within 3 points of {want} %"
            );
        }
    }
    eprintln!("{} ({:?})", report.join("\n"), started.elapsed());

    // The header, then the cookie, decide before the weight (50 of 100 here), on every request.
    let host = "decided.weights";
    let decided = [
        (vec![("X-Canary", "always")], "decided-canary"),
        (vec![("X-Canary", "never"), ("Cookie", "canary=always")], "decided"),
        (
            vec![("X-Canary", "other"), ("Cookie", "canary=always")],
            "decided-canary",
        ),
        (vec![("Cookie", "a=b; CANARY=never")], "decided"),
        (vec![("Cookie", "Canary=always")], "decided-canary"),
    ];
    for (headers, backend) in decided {
        let request = headers
            .iter()
            .fold(get(host, "/y?q=1"), |r, (name, value)| r.header(name, value));
        let canary_hits = canary_count(&envoy, &request, 200, "decided", "decided-canary");
        let want = if backend == "decided-canary" { 200 } else { 0 };
        assert_eq!(canary_hits, want, "{headers:?}: {canary_hits} of 200 to the canary");
        let response = send(&envoy, request);
        assert_eq!(
            (response.backend(), response.upstream_path()),
            (Some(backend), Some("/y?q=1")),
            "{headers:?}"
        );
        assert_eq!(response.header("x-switchyard-rule"), Some("Ingress/w/decided#0"));
    }
}

fn switchyard_compile_yaml(yaml: &str) -> String {
    switchyard_e2e::compile_manifests(yaml, &["--ingress-nginx-class", "nginx", "--debug-rule-header"])
}

/// The main Ingress `foo` and its canary `foo-canary` on host `foo`, path /info, as
/// kubernetes/ingress-nginx test/e2e/annotations/canary.go writes them; `main_annotations` and
/// `header` vary.
fn modified_pair(main_annotations: &str, header: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {{name: nginx}}
spec: {{controller: k8s.io/ingress-nginx}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: foo, namespace: e2e, creationTimestamp: \"2024-01-01T00:00:00Z\", annotations: {{{main_annotations}}}}}
spec:
  ingressClassName: nginx
  rules:
  - host: foo
    http:
      paths:
      - {{path: /info, pathType: Prefix, backend: {{service: {{name: httpbun, port: {{number: 80}}}}}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: foo-canary
  namespace: e2e
  creationTimestamp: \"2024-01-02T00:00:00Z\"
  annotations: {{nginx.ingress.kubernetes.io/canary: \"true\", nginx.ingress.kubernetes.io/canary-by-header: {header}}}
spec:
  ingressClassName: nginx
  rules:
  - host: foo
    http:
      paths:
      - {{path: /info, pathType: Prefix, backend: {{service: {{name: httpbun-canary, port: {{number: 80}}}}}}}}
"
    )
}

/// kubernetes/ingress-nginx test/e2e/annotations/canary.go's "should route requests to the correct
/// upstream if the mainline ingress is modified" and "... if the canary ingress is modified"
/// (ROUTING.md §7.6), in one Envoy whose table is pushed again after each change: the main Ingress
/// gains an annotation, then the canary's header becomes `CanaryByHeader2`.
#[test]
fn canary_routes_after_the_main_or_the_canary_ingress_is_modified_in_envoy() {
    let tables = [
        modified_pair("", "CanaryByHeader"),
        modified_pair("foo: bar", "CanaryByHeader"),
        modified_pair("foo: bar", "CanaryByHeader2"),
    ]
    .map(|yaml| switchyard_compile_yaml(&yaml));
    let clusters = clusters_of(&tables[0]);
    let clusters: Vec<&str> = clusters.iter().map(String::as_str).collect();
    let envoy = Envoy::start(&tables[0], &clusters);
    let backend = |header: &str, value: &str| {
        send(&envoy, get("foo", "/info").header(header, value))
            .backend()
            .map(str::to_owned)
    };
    assert_eq!(backend("CanaryByHeader", "always").as_deref(), Some("httpbun-canary"));
    assert!(
        envoy.update_table(&tables[1], ConfigForm::StringValue),
        "the mainline's change"
    );
    assert_eq!(backend("CanaryByHeader", "never").as_deref(), Some("httpbun"));
    assert_eq!(backend("CanaryByHeader", "always").as_deref(), Some("httpbun-canary"));
    assert!(
        envoy.update_table(&tables[2], ConfigForm::StringValue),
        "the canary's change"
    );
    assert_eq!(backend("CanaryByHeader2", "never").as_deref(), Some("httpbun"));
    assert_eq!(backend("CanaryByHeader2", "always").as_deref(), Some("httpbun-canary"));
    assert_eq!(
        backend("CanaryByHeader", "always").as_deref(),
        Some("httpbun"),
        "the old header no longer decides"
    );
}
