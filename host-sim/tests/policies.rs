//! The filter's authentication policies (docs/routing.md, "Policies beyond the route") through
//! the real `switchyard_filter.wasm` under host-sim: basic authentication's challenge and a
//! remembered credential, and external authentication's subrequest (proxy-wasm's HTTP call to the
//! service's cluster) with each answer the service may give. The same policies run natively in
//! `request/src/request.rs`'s tests and through a real Envoy in `tests/e2e`.

mod common;

use serde_json::json;
use switchyard_cases::rule;
use switchyard_host_sim::{HttpCall, HttpCallResponse, Outcome, Request, Sim};

const AUTH_CLUSTER: &str = "external-auth|http|auth.example|80";

/// The filter with one rule on `a.example` carrying `policy`.
fn filter_with(policy: serde_json::Value) -> Sim {
    let mut guarded = rule("Ingress/shop/guarded#0")
        .host("a.example")
        .prefix("/")
        .to("shop/web:80");
    guarded["policy"] = policy;
    let table = json!({ "version": 1, "generation": "test", "rules": [guarded] });
    let mut sim = Sim::load(common::filter_wasm()).expect("the filter loads");
    assert!(sim.configure(table.to_string()), "refused: {:?}", sim.take_logs());
    sim
}

fn external_auth() -> serde_json::Value {
    json!({ "external_auth": {
        "cluster": AUTH_CLUSTER, "url": "http://auth.example/check", "authority": "auth.example",
        "path": "/check", "response_headers": ["x-user"], "timeout_ms": 5000,
        "signin": "https://login.example/start?rd=${scheme}://${http_host}${escaped_request_uri}"
    } })
}

/// The filter answering every call of the auth service with `answer`, keeping what it sent.
fn answering(answer: HttpCallResponse) -> (Sim, std::sync::Arc<std::sync::Mutex<Vec<HttpCall>>>) {
    let mut sim = filter_with(external_auth());
    let calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = calls.clone();
    sim.on_http_call(move |call| {
        kept.lock().unwrap().push(call.clone());
        Some(answer.clone())
    });
    (sim, calls)
}

fn status(outcome: &Outcome) -> Option<u32> {
    assert!(outcome.error.is_none(), "the filter failed: {:?}", outcome.error);
    outcome.local_response.as_ref().map(|r| r.status)
}

fn local_header<'o>(outcome: &'o Outcome, name: &str) -> Option<&'o str> {
    let response = outcome.local_response.as_ref()?;
    response
        .headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn basic_auth_challenges_a_request_without_the_users_password_and_lets_one_with_it_through() {
    let mut sim = filter_with(json!({ "basic_auth": {
        "realm": "Staff", "users": [{ "user": "alice", "hash": "$apr1$kw3V9Mq.$KxEn69LI7peZ2wh1MU6Ce/" }]
    } }));
    let anonymous = sim.request(Request::get("http://a.example/"));
    assert_eq!(status(&anonymous), Some(401));
    assert_eq!(
        local_header(&anonymous, "www-authenticate"),
        Some("Basic realm=\"Staff\"")
    );
    // "alice:s3cret", twice: the second is the remembered credential.
    for _ in 0..2 {
        let alice = sim.request(Request::get("http://a.example/").header("authorization", "Basic YWxpY2U6czNjcmV0"));
        assert_eq!(status(&alice), None);
        assert_eq!(alice.request_header("x-route-cluster"), Some("shop/web:80"));
        assert_eq!(
            alice.request_header("authorization"),
            None,
            "the credential stops at the gateway"
        );
    }
}

#[test]
fn an_external_auth_subrequest_goes_to_the_services_cluster_with_the_requests_headers() {
    let (mut sim, calls) = answering(HttpCallResponse::new(200).header("x-user", "alice"));
    let request = Request::get("http://a.example/cart?id=2")
        .header("cookie", "s=1")
        .header("x-user", "mallory");
    let outcome = sim.request(request);
    assert_eq!(status(&outcome), None, "let through");
    assert_eq!(outcome.request_header("x-route-cluster"), Some("shop/web:80"));
    assert_eq!(
        outcome.request_header("x-user"),
        Some("alice"),
        "the service's, not the client's"
    );
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 1);
    let call = &calls[0];
    assert_eq!(call.upstream, AUTH_CLUSTER);
    assert_eq!(call.timeout_ms, 5000);
    assert!(call.body.is_empty());
    let sent = |name: &str| call.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    assert_eq!(sent(":authority"), Some("auth.example"));
    assert_eq!(sent(":path"), Some("/check"));
    assert_eq!(sent("cookie"), Some("s=1"));
    assert_eq!(sent("x-original-url"), Some("http://a.example/cart?id=2"));
    assert_eq!(sent("x-route-cluster"), None, "Switchyard's own headers stay home");
}

#[test]
fn the_services_401_is_passed_on_or_redirected_403_is_403_and_anything_else_is_500() {
    let (mut sim, _) = answering(HttpCallResponse::new(401).header("www-authenticate", "Bearer"));
    let refused = sim.request(Request::get("http://a.example/cart?id=2"));
    assert_eq!(status(&refused), Some(302), "a sign-in page: redirected");
    assert_eq!(
        local_header(&refused, "location"),
        Some("https://login.example/start?rd=http://a.example%2Fcart%3Fid%3D2")
    );
    let (mut sim, _) = answering(HttpCallResponse::new(403));
    assert_eq!(status(&sim.request(Request::get("http://a.example/"))), Some(403));
    for odd in [302, 404, 503, 504] {
        let (mut sim, _) = answering(HttpCallResponse::new(odd));
        let outcome = sim.request(Request::get("http://a.example/"));
        assert_eq!(status(&outcome), Some(500), "the service answered {odd}");
        assert!(!outcome.forwarded, "the service answered {odd}: nothing goes upstream");
    }
}

#[test]
fn a_request_is_held_while_the_service_decides() {
    let mut sim = filter_with(external_auth());
    sim.on_http_call(|_| None);
    let waiting = sim.request(Request::get("http://a.example/"));
    assert!(!waiting.forwarded, "held while the service decides");
    assert_eq!(waiting.pending_http_calls, 1);
}
