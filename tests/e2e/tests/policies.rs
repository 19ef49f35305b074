//! Policies beyond the route through a real Envoy (issue "Policies beyond the route"): a rule's body
//! limit (ingress-nginx's `proxy-body-size`, 1 MiB by default) answers 413 for a body over it,
//! declared by its `content-length` or counted as it streams, and lets one within it reach the
//! backend whole; a rule without a policy takes any body. A rule's address ranges are checked
//! against the client's address as Envoy knows it (`source.address`: here the test's own
//! connection, 127.0.0.1). A rule's CORS answers preflights and marks responses, and its basic
//! authentication challenges a request without a listed user's password, in both filter forms.
//!
//! Needs `ENVOY_BIN`, the filter and the module (`make test-envoy` sets them).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::json;
use switchyard_cases::rule;
use switchyard_e2e::table::table;
use switchyard_e2e::{get, ConfigForm, Envoy, FilterForm};

const SERVICE: &str = "shop/api:80";

/// Envoy with `limited.example` limited to 1 MiB and `open.example` without a policy.
fn envoy() -> Envoy {
    let mut limited = rule("Ingress/shop/limited#0")
        .host("limited.example")
        .prefix("/")
        .to(SERVICE);
    limited["policy"] = json!({ "max_body_bytes": 1_048_576 });
    let open = rule("Ingress/shop/open#0").host("open.example").prefix("/").to(SERVICE);
    Envoy::start(&table("policies", vec![limited, open]), &[SERVICE])
}

/// A POST of `size` bytes to `host` with its `content-length`.
fn upload(envoy: &Envoy, host: &str, size: usize) -> (u16, Option<String>, usize) {
    let response = envoy.send(&get(host, "/upload").method("POST").body(&"x".repeat(size)));
    let echoed = response
        .body
        .lines()
        .find_map(|l| l.strip_prefix("body: "))
        .map_or(0, str::len);
    (response.status, response.backend().map(str::to_owned), echoed)
}

#[test]
fn a_body_over_the_limit_is_refused_413_and_one_within_it_reaches_the_backend_whole() {
    let envoy = envoy();
    let (status, backend, _) = upload(&envoy, "limited.example", 2 << 20);
    assert_eq!((status, backend), (413, None), "2 MiB over a 1 MiB limit");
    let (status, backend, echoed) = upload(&envoy, "limited.example", 512 << 10);
    assert_eq!(
        (status, backend.as_deref(), echoed),
        (200, Some("api"), 512 << 10),
        "512 KiB within it"
    );
    let (status, backend, echoed) = upload(&envoy, "open.example", 2 << 20);
    assert_eq!(
        (status, backend.as_deref(), echoed),
        (200, Some("api"), 2 << 20),
        "no policy, no limit"
    );
}

/// A POST to `host` of `chunks` chunks of 64 KiB without `content-length` (chunked); the raw answer.
fn streamed(envoy: &Envoy, host: &str, chunks: usize) -> String {
    let mut stream = TcpStream::connect(envoy.addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head =
        format!("POST /upload HTTP/1.1\r\nhost: {host}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 64 << 10, "x".repeat(64 << 10));
    for _ in 0..chunks {
        // Once Envoy answered (over the limit), writing may fail: the answer is read below.
        if stream.write_all(chunk.as_bytes()).is_err() {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn a_streamed_body_without_content_length_is_counted_and_refused_once_over_the_limit() {
    let envoy = envoy();
    let answer = streamed(&envoy, "limited.example", 32);
    assert!(answer.starts_with("HTTP/1.1 413"), "2 MiB streamed: {answer}");
    assert!(answer.contains("request body too large"), "{answer}");
    // 768 KiB in twelve chunks: each chunk counted once, so within the limit, and whole upstream.
    let answer = streamed(&envoy, "limited.example", 12);
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "768 KiB streamed: {}",
        &answer[..answer.len().min(300)]
    );
    let echoed = answer
        .lines()
        .find_map(|l| l.strip_prefix("body: "))
        .map_or(0, str::len);
    assert_eq!(echoed, 768 << 10);
}

#[test]
fn address_ranges_are_checked_against_the_address_envoy_gives_the_filter() {
    let ranged = |name: &str, policy: serde_json::Value| {
        let mut rule = rule(&format!("Ingress/shop/{name}#0"))
            .host(&format!("{name}.example"))
            .prefix("/")
            .to(SERVICE);
        rule["policy"] = policy;
        rule
    };
    let rules = vec![
        ranged("loopback", json!({ "allow": ["127.0.0.0/8"] })),
        ranged("private", json!({ "allow": ["10.0.0.0/8"] })),
        ranged("denied", json!({ "allow": ["127.0.0.0/8"], "deny": ["127.0.0.1"] })),
    ];
    let envoy = Envoy::start(&table("ranges", rules), &[SERVICE]);
    let answer = |host: &str| {
        let response = envoy.send(&get(host, "/"));
        (response.status, response.backend().map(str::to_owned))
    };
    assert_eq!(
        answer("loopback.example"),
        (200, Some("api".to_owned())),
        "127.0.0.1 is in 127.0.0.0/8"
    );
    assert_eq!(
        answer("private.example"),
        (403, None),
        "127.0.0.1 is outside 10.0.0.0/8"
    );
    assert_eq!(answer("denied.example"), (403, None), "denied before allowed");
}

/// A source range behind a trusted proxy (docs/deploy-envoy.md, "Paths"): with one trusted hop the
/// client's address is the one `X-Forwarded-For` names, so an allowed client behind the proxy gets
/// in and one without the header (the proxy's own address) does not; without trusted hops a
/// client's `X-Forwarded-For` opens nothing. In both filter forms.
#[test]
fn a_source_range_reads_the_address_a_trusted_x_forwarded_for_names_and_no_other() {
    let mut office = rule("Ingress/shop/office#0")
        .host("office.example")
        .prefix("/")
        .to(SERVICE);
    office["policy"] = json!({ "allow": ["10.0.0.0/8"] });
    let table = table("xff", vec![office]);
    for form in [FilterForm::Wasm, FilterForm::Module] {
        let trusting = Envoy::start_trusting(&table, &[SERVICE], form, 1);
        let from = |envoy: &Envoy, forwarded: Option<&str>| {
            let request = get("office.example", "/");
            let request = match forwarded {
                Some(address) => request.header("x-forwarded-for", address),
                None => request,
            };
            let response = envoy.send(&request);
            (response.status, response.backend().map(str::to_owned))
        };
        let api = Some("api".to_owned());
        assert_eq!(
            from(&trusting, Some("10.1.2.3")),
            (200, api),
            "{form:?}: behind the trusted hop"
        );
        assert_eq!(
            from(&trusting, Some("192.0.2.9")),
            (403, None),
            "{form:?}: outside the range"
        );
        assert_eq!(
            from(&trusting, None),
            (403, None),
            "{form:?}: the proxy's own 127.0.0.1"
        );
        drop(trusting);
        let direct = Envoy::start_filter(&table, &[SERVICE], ConfigForm::StringValue, 1, form);
        assert_eq!(from(&direct, Some("10.1.2.3")), (403, None), "{form:?}: no trusted hop");
    }
}

/// CORS (ingress-nginx's `enable-cors`, issue "Policies beyond the route"), in both filter forms:
/// a preflight from an allowed origin is answered 204 with the CORS headers and never reaches the
/// backend; another request from it reaches the backend and its response carries them; a request
/// from an origin not allowed is left as it is (its preflight reaches the backend).
#[test]
fn a_preflight_from_an_allowed_origin_is_answered_and_the_responses_carry_the_cors_headers() {
    let mut shared = rule("Ingress/shop/cors#0").host("cors.example").prefix("/").to(SERVICE);
    shared["policy"] = json!({ "cors": {
        "allow_origin": ["https://*.example.com"], "allow_methods": "GET, POST", "allow_headers": "X-Token",
        "allow_credentials": true, "max_age": 600
    } });
    let table = table("cors", vec![shared]);
    for form in [FilterForm::Wasm, FilterForm::Module] {
        let envoy = Envoy::start_filter(&table, &[SERVICE], ConfigForm::StringValue, 1, form);
        let from =
            |origin: &str, method: &str| envoy.send(&get("cors.example", "/x").method(method).header("origin", origin));
        let preflight = from("https://app.example.com", "OPTIONS");
        assert_eq!(
            (preflight.status, preflight.backend()),
            (204, None),
            "{form:?}: {preflight:?}"
        );
        let cors_headers = |response: &switchyard_e2e::Response| {
            [
                "access-control-allow-origin",
                "access-control-allow-credentials",
                "access-control-allow-methods",
                "access-control-allow-headers",
                "access-control-max-age",
            ]
            .map(|name| response.header(name).map(str::to_owned))
        };
        let wanted = ["https://app.example.com", "true", "GET, POST", "X-Token", "600"].map(|v| Some(v.to_owned()));
        assert_eq!(cors_headers(&preflight), wanted, "{form:?}");
        let get = from("https://app.example.com", "GET");
        assert_eq!((get.status, get.backend()), (200, Some("api")), "{form:?}");
        assert_eq!(cors_headers(&get), wanted, "{form:?}");
        let foreign = from("https://evil.net", "OPTIONS");
        assert_eq!((foreign.status, foreign.backend()), (200, Some("api")), "{form:?}");
        assert_eq!(cors_headers(&foreign), [None, None, None, None, None], "{form:?}");
    }
}

/// CORS the gateway's route adds (`by_route`: every origin allowed, a gateway whose routes are
/// Switchyard's; docs/routing.md, "CORS") with the module beside the cluster specifier: there
/// Envoy matched its route before the table's, so no route of the table adds them, and the module
/// adds them itself, to the backend's response as the filter would.
#[test]
fn beside_the_cluster_specifier_the_module_adds_the_cors_headers_a_route_would_have_added() {
    let mut shared = rule("Ingress/shop/cors#0").host("cors.example").prefix("/").to(SERVICE);
    shared["policy"] = json!({ "route": "headers=00000000000000aa", "cors": {
        "allow_origin": ["*"], "allow_methods": "GET, POST", "allow_headers": "X-Token", "by_route": true
    } });
    let table = table("cors-by-route", vec![shared]);
    let form = FilterForm::ModuleClusterSpecifier;
    let envoy = Envoy::start_filter(&table, &[SERVICE], ConfigForm::StringValue, 1, form);
    let answer = envoy.send(&get("cors.example", "/x"));
    assert_eq!((answer.status, answer.backend()), (200, Some("api")), "{answer:?}");
    let headers = [
        "access-control-allow-origin",
        "access-control-allow-methods",
        "access-control-allow-headers",
    ];
    assert_eq!(
        headers.map(|name| answer.header(name)),
        [Some("*"), Some("GET, POST"), Some("X-Token")],
        "{answer:?}"
    );
}

/// CORS with Envoy's semantics (an HTTPProxy's `virtualhost.corsPolicy`, as Contour programs
/// Envoy's CORS filter), in both filter forms: a preflight (`OPTIONS` with
/// `Access-Control-Request-Method`) from an allowed origin, exact or matching a regex, is answered
/// 200 with the preflight's headers and never reaches the backend; another request from it reaches
/// the backend and its response carries `-Allow-Origin`, `-Allow-Credentials` and
/// `-Expose-Headers`; a preflight from an origin not allowed reaches the backend untouched.
#[test]
fn an_httpproxy_preflight_from_an_allowed_origin_is_answered_200_and_the_responses_carry_envoys_cors_headers() {
    let mut shared = rule("HTTPProxy/shop/p#0").host("p.example").prefix("/").to(SERVICE);
    shared["policy"] = json!({ "cors": {
        "allow_origin": ["https://app.example.com"], "allow_origin_regex": ["https://[a-z]+\\.example\\.org"],
        "allow_methods": "GET,PUT", "allow_headers": "x-token", "expose_headers": "x-trace",
        "allow_credentials": true, "max_age": 600, "semantics": "envoy", "allow_private_network": true
    } });
    let table = table("cors-envoy", vec![shared]);
    let names = [
        "access-control-allow-origin",
        "access-control-allow-credentials",
        "access-control-allow-methods",
        "access-control-allow-headers",
        "access-control-max-age",
        "access-control-allow-private-network",
        "access-control-expose-headers",
    ];
    let cors_headers = |response: &switchyard_e2e::Response| names.map(|name| response.header(name).map(str::to_owned));
    let some = |values: [&str; 7]| values.map(|v| (!v.is_empty()).then(|| v.to_owned()));
    for form in [FilterForm::Wasm, FilterForm::Module] {
        let envoy = Envoy::start_filter(&table, &[SERVICE], ConfigForm::StringValue, 1, form);
        let preflight = |origin: &str| {
            let request = get("p.example", "/x").method("OPTIONS").header("origin", origin);
            let request = request.header("access-control-request-method", "PUT");
            envoy.send(&request.header("access-control-request-private-network", "true"))
        };
        for origin in ["https://app.example.com", "https://shop.example.org"] {
            let answer = preflight(origin);
            assert_eq!((answer.status, answer.backend()), (200, None), "{form:?}: {answer:?}");
            let wanted = some([origin, "true", "GET,PUT", "x-token", "600", "true", ""]);
            assert_eq!(cors_headers(&answer), wanted, "{form:?}");
        }
        let get = envoy.send(&get("p.example", "/x").header("origin", "https://app.example.com"));
        assert_eq!((get.status, get.backend()), (200, Some("api")), "{form:?}");
        let wanted = some(["https://app.example.com", "true", "", "", "", "", "x-trace"]);
        assert_eq!(cors_headers(&get), wanted, "{form:?}");
        let foreign = preflight("https://evil.net");
        assert_eq!((foreign.status, foreign.backend()), (200, Some("api")), "{form:?}");
        assert_eq!(cors_headers(&foreign), [const { None }; 7], "{form:?}");
    }
}

/// A rate limit (ingress-nginx's `limit-rps: 2` with its burst of 10) counted per client address
/// across Envoy's two workers, as one ingress-nginx pod counted across its workers: of 30 quick
/// requests from 127.0.0.1, each on its own connection (spread over both workers), the first and
/// the burst pass (a request or two more as the rate drains meanwhile) and the others are
/// answered 503; workers counting apart would let twice the burst through. In both filter forms
/// (the wasm filter's VMs share Envoy's shared data; the module's workers, its process).
#[test]
fn a_rate_limit_is_counted_per_client_address_across_the_workers() {
    let mut limited = rule("Ingress/shop/limited#0")
        .host("limited.example")
        .prefix("/")
        .to(SERVICE);
    limited["policy"] = json!({ "rate_limit": {
        "zone": "shop/limited", "per_second": { "requests": 2, "burst": 10 }, "status": 503
    } });
    let table = table("rate", vec![limited]);
    for form in [FilterForm::Wasm, FilterForm::Module] {
        let envoy = Envoy::start_filter(&table, &[SERVICE], ConfigForm::StringValue, 2, form);
        let statuses: Vec<u16> = (0..30)
            .map(|_| envoy.send(&get("limited.example", "/")).status)
            .collect();
        let passed = statuses.iter().filter(|s| **s == 200).count();
        assert!((11..=14).contains(&passed), "{form:?}: {passed} passed: {statuses:?}");
        assert!(
            statuses.iter().all(|s| matches!(s, 200 | 503)),
            "{form:?}: {statuses:?}"
        );
        assert_eq!(statuses[0], 200, "{form:?}");
        assert_eq!(*statuses.last().unwrap(), 503, "{form:?}: {statuses:?}");
    }
}

/// Basic authentication (ingress-nginx's `auth-type: basic`), in both filter forms: a request
/// without a credential, or with a wrong one, is answered 401 with the realm's challenge and
/// never reaches the backend; one with a listed user's password (an `htpasswd` bcrypt hash and
/// Apache's MD5) reaches it, without its `Authorization` header, as ingress-nginx's template
/// strips it.
#[test]
fn basic_auth_answers_401_with_the_realm_and_lets_a_listed_user_through_without_the_credential() {
    let mut guarded = rule("Ingress/shop/basic#0")
        .host("basic.example")
        .prefix("/")
        .to(SERVICE);
    // A bcrypt hash of cost 5 (`htpasswd -B`'s) and `openssl passwd -apr1 -salt kw3V9Mq. s3cret`.
    let bcrypt = bcrypt::hash("s3cret", 5).unwrap();
    let apr1 = "$apr1$kw3V9Mq.$KxEn69LI7peZ2wh1MU6Ce/";
    guarded["policy"] = json!({ "basic_auth": {
        "realm": "Shop staff", "source": "Secret shop/basic-auth",
        "users": [{ "user": "alice", "hash": bcrypt }, { "user": "bob", "hash": apr1 }]
    } });
    let table = table("basic", vec![guarded]);
    let credential = |pair: &str| format!("Basic {}", STANDARD.encode(pair));
    for form in [FilterForm::Wasm, FilterForm::Module] {
        let envoy = Envoy::start_filter(&table, &[SERVICE], ConfigForm::StringValue, 1, form);
        let with = |value: Option<&str>| {
            let request = get("basic.example", "/x");
            envoy.send(&match value {
                Some(value) => request.header("authorization", value),
                None => request,
            })
        };
        for refused in [
            with(None),
            with(Some(&credential("alice:wrong"))),
            with(Some("Bearer x")),
        ] {
            assert_eq!(
                (refused.status, refused.backend()),
                (401, None),
                "{form:?}: {refused:?}"
            );
            assert_eq!(
                refused.header("www-authenticate"),
                Some("Basic realm=\"Shop staff\""),
                "{form:?}"
            );
        }
        for user in ["alice", "bob"] {
            for _ in 0..2 {
                let passed = with(Some(&credential(&format!("{user}:s3cret"))));
                assert_eq!((passed.status, passed.backend()), (200, Some("api")), "{form:?} {user}");
                assert!(
                    !passed.body.contains("header: authorization"),
                    "{form:?}: {}",
                    passed.body
                );
            }
        }
    }
}
