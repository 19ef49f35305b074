//! host-sim beyond our filter: the probe module (tests/probe-module) uses shared data with CAS,
//! queues, the three metric kinds, properties, an HTTP call that pauses the request, ticks, a
//! foreign function and WASI, and each test checks what host-sim made of it. Every test has its
//! own simulator, so they run in parallel.

mod common;

use switchyard_host_sim::{Action, HttpCallResponse, LogLevel, MetricValue, Phase, Request, Sim, SimError};

fn probe() -> Sim {
    let mut sim = Sim::load(common::probe_wasm()).expect("the probe loads");
    sim.vm_config("vm-config-bytes").env("PROBE_ENV", "hello");
    assert!(sim.configure("probe-config"), "the probe accepts its configuration");
    sim
}

#[test]
fn vm_start_and_configure_see_their_configurations_and_wasi() {
    let mut sim = probe();
    let logs = sim.take_logs();
    let text: Vec<String> = logs.iter().map(|l| l.message.clone()).collect();
    assert!(
        text.contains(&"probe: vm start with vm-config-bytes".to_string()),
        "stdout becomes a log line: {text:?}"
    );
    assert!(
        logs.iter()
            .any(|l| l.level == LogLevel::Info && l.message == "probe: env PROBE_ENV=hello (1 keys)"),
        "{text:?}"
    );
    assert!(
        text.contains(&"probe: configured with probe-config".to_string()),
        "{text:?}"
    );
}

#[test]
fn a_refused_configuration_is_reported() {
    let mut sim = Sim::load(common::probe_wasm()).unwrap();
    assert!(!sim.configure("refuse"));
    assert!(!sim.configured());
    assert!(sim
        .take_logs()
        .iter()
        .any(|l| l.level == LogLevel::Warn && l.message.contains("refused")));
    let outcome = sim.request(Request::get("http://example.net/"));
    assert!(!outcome.configured);
}

#[test]
fn metrics_of_each_kind_are_counted() {
    let mut sim = probe();
    sim.request(Request::get("http://example.net/a"));
    let outcome = sim.request(Request::get("http://example.net/b"));
    assert_eq!(outcome.metrics.get("probe.requests"), Some(&MetricValue::Counter(2)));
    assert_eq!(
        outcome.metrics.get("probe.gauge"),
        Some(&MetricValue::Gauge(6)),
        "+5 -2 per request"
    );
    assert_eq!(
        outcome.metrics.get("probe.histogram"),
        Some(&MetricValue::Histogram {
            count: 2,
            last: vec![42, 42]
        })
    );
    assert_eq!(sim.metric("probe.requests").map(|m| m.value()), Some(2));
}

#[test]
fn shared_data_compare_and_swap() {
    let mut sim = probe();
    let first = sim.request(Request::get("http://example.net/"));
    assert_eq!(first.request_header("x-probe-hits"), Some("1"));
    assert_eq!(
        first.request_header("x-probe-stale-cas"),
        None,
        "no CAS to go stale on the first write"
    );
    let second = sim.request(Request::get("http://example.net/"));
    assert_eq!(second.request_header("x-probe-hits"), Some("2"));
    assert_eq!(
        second.request_header("x-probe-stale-cas"),
        Some("mismatch"),
        "a write with a used CAS token is refused"
    );
    let (value, cas) = sim.shared_data("probe.hits").unwrap();
    assert_eq!(value, b"2");
    assert!(cas > 0);
    // Another VM's write changes the token: the module's next read sees the new value.
    sim.set_shared_data("probe.hits", "10");
    assert_eq!(
        sim.request(Request::get("http://example.net/"))
            .request_header("x-probe-hits"),
        Some("11")
    );
}

#[test]
fn properties_come_from_the_request_the_test_and_the_module() {
    let mut sim = probe();
    sim.property("probe.answer", "42");
    let outcome = sim.request(Request::get("http://example.net/some/path?q=1"));
    assert_eq!(outcome.request_header("x-probe-path"), Some("/some/path?q=1"));
    assert_eq!(outcome.request_header("x-probe-answer"), Some("42"));
    assert_eq!(outcome.request_header("x-probe-mine"), Some("kept"));
    let per_request = sim.request(Request::get("http://example.net/").property("probe.answer", "7"));
    assert_eq!(
        per_request.request_header("x-probe-answer"),
        Some("7"),
        "a request's property wins"
    );
}

#[test]
fn queues_deliver_to_the_root_context() {
    let mut sim = probe();
    sim.take_logs();
    let outcome = sim.request(Request::get("http://example.net/q"));
    assert!(outcome.logged("probe: dequeued request /q"), "{:?}", outcome.logs);
    assert_eq!(
        sim.queue_items("probe-queue"),
        Some(vec![]),
        "the root context drained the queue"
    );
    assert!(sim.enqueue("probe-queue", "from the test"));
    assert!(sim
        .take_logs()
        .iter()
        .any(|l| l.message == "probe: dequeued from the test"));
    assert!(!sim.enqueue("no-such-queue", "x"));
}

#[test]
fn ticks_advance_the_clock_and_run_on_tick() {
    let mut sim = probe();
    assert_eq!(sim.tick_period(), Some(std::time::Duration::from_millis(500)));
    let before = sim.now();
    sim.tick();
    sim.tick();
    assert_eq!(
        sim.now().duration_since(before).unwrap(),
        std::time::Duration::from_secs(1)
    );
    assert_eq!(sim.metric("probe.ticks"), Some(MetricValue::Counter(2)));
    let expected = sim
        .now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        .to_string();
    assert_eq!(sim.shared_data("probe.last_tick_ms").unwrap().0, expected.as_bytes());
    assert!(sim.take_logs().iter().any(|l| l.message == "probe: dequeued tick 2"));
    let outcome = sim.request(Request::get("http://example.net/"));
    assert_eq!(
        outcome.request_header("x-probe-now-ms"),
        Some(expected.as_str()),
        "the module reads the simulated clock"
    );
}

#[test]
fn an_http_call_pauses_the_request_until_answered() {
    let mut sim = probe();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    sim.on_http_call(move |call| {
        log.lock().unwrap().push(call.clone());
        Some(HttpCallResponse::new(200).body("pong"))
    });
    let outcome = sim.request(Request::get("http://example.net/").header("x-probe-call", "1"));
    assert_eq!(outcome.action, Action::Pause);
    assert!(
        outcome.forwarded,
        "the module resumed the request from its call response"
    );
    assert_eq!(outcome.request_header("x-probe-call-status"), Some("200"));
    assert_eq!(outcome.request_header("x-probe-call-body"), Some("pong"));
    let calls = seen.lock().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].upstream, "auth-cluster");
    assert_eq!(calls[0].body, b"ping");
    assert!(calls[0].headers.contains(&(":path".to_string(), "/check".to_string())));
    assert_eq!(calls[0].timeout_ms, 1000);
}

#[test]
fn a_failed_http_call_ends_in_the_modules_local_response() {
    let mut sim = probe();
    sim.on_http_call(|_| Some(HttpCallResponse::new(500)));
    let outcome = sim.request(Request::get("http://example.net/").header("x-probe-call", "1"));
    assert!(!outcome.forwarded);
    let local = outcome.local_response.as_ref().expect("a local response");
    assert_eq!(local.status, 403);
    assert_eq!(local.header("x-probe-denied"), Some("1"));
    assert_eq!(local.body_text(), "denied by probe\n");
    assert_eq!(outcome.response_header(":status"), Some("403"));
    assert_eq!(
        outcome.response_header("x-probe-response"),
        Some("seen"),
        "local responses go through the response phase"
    );
}

#[test]
fn an_unanswered_http_call_leaves_the_request_paused() {
    let mut sim = probe();
    let outcome = sim.request(Request::get("http://example.net/").header("x-probe-call", "1"));
    assert_eq!(outcome.action, Action::Pause);
    assert!(!outcome.forwarded);
    assert_eq!(outcome.pending_http_calls, 1);
    assert_eq!(
        outcome.phases.iter().map(|p| p.phase).collect::<Vec<_>>(),
        vec![Phase::RequestHeaders]
    );
}

#[test]
fn route_cache_clears_are_counted_both_ways() {
    let mut sim = probe();
    let plain = sim.request(Request::get("http://example.net/"));
    assert_eq!(plain.route_cache_clears.foreign_function, 0);
    // x-probe-hits, x-probe-path, x-probe-mine, x-probe-now-ms: four request-header writes.
    assert_eq!(plain.route_cache_clears.header_mutations, 4);
    let cleared = sim.request(Request::get("http://example.net/").header("x-probe-clear", "1"));
    assert_eq!(cleared.route_cache_clears.foreign_function, 1);
}

#[test]
fn the_response_phase_sees_the_upstream_response() {
    let mut sim = probe();
    let outcome = sim.request(
        Request::get("http://example.net/")
            .response(switchyard_host_sim::Response::new(201).header("x-up", "1").body("hi")),
    );
    assert!(outcome.forwarded);
    assert_eq!(outcome.response_header(":status"), Some("201"));
    assert_eq!(outcome.response_header("x-up"), Some("1"));
    assert_eq!(outcome.response_header("x-probe-response"), Some("seen"));
    let phases: Vec<Phase> = outcome.phases.iter().map(|p| p.phase).collect();
    assert_eq!(
        phases,
        vec![Phase::RequestHeaders, Phase::ResponseHeaders, Phase::ResponseBody]
    );
    assert!(outcome.logged("probe: on_log"));
}

#[test]
fn simulators_do_not_share_state() {
    let mut a = probe();
    let mut b = probe();
    a.request(Request::get("http://example.net/"));
    a.request(Request::get("http://example.net/"));
    let outcome = b.request(Request::get("http://example.net/"));
    assert_eq!(outcome.request_header("x-probe-hits"), Some("1"));
    assert_eq!(outcome.metric("probe.requests"), Some(1));
}

#[test]
fn many_simulators_run_in_parallel_threads() {
    let handles: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                let mut sim = probe();
                for _ in 0..=i {
                    sim.request(Request::get("http://example.net/"));
                }
                sim.metric("probe.requests").map(|m| m.value())
            })
        })
        .collect();
    let counts: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(counts, vec![Some(1), Some(2), Some(3), Some(4)]);
}

#[test]
fn a_file_that_is_not_wasm_fails_to_load_with_a_message() {
    let dir = std::env::temp_dir().join(format!("host-sim-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("not.wasm");
    std::fs::write(&path, b"hello").unwrap();
    let err = Sim::load(&path).unwrap_err();
    assert!(matches!(err, SimError::Compile { .. }), "{err}");
    assert!(err.to_string().contains("not a valid WebAssembly module"), "{err}");
    let err = Sim::load(dir.join("absent.wasm")).unwrap_err();
    assert!(err.to_string().starts_with("cannot read"), "{err}");
}

#[test]
fn root_context_http_and_grpc_calls_are_answered_by_the_test() {
    let mut sim = probe();
    sim.tick();
    assert!(sim
        .take_logs()
        .iter()
        .any(|l| l.message == "probe: dispatched http true grpc true"));
    let http = sim.http_calls().to_vec();
    assert_eq!(http.len(), 1);
    assert_eq!(http[0].upstream, "config-cluster");
    assert_eq!(http[0].context_id, 1, "dispatched by the root context");
    let grpc = sim.grpc_calls().to_vec();
    assert_eq!(grpc.len(), 1);
    assert_eq!(
        (grpc[0].service.as_str(), grpc[0].method.as_str()),
        ("probe.Service", "Get")
    );
    assert_eq!(grpc[0].messages, vec![b"question".to_vec()]);

    assert!(sim.respond_http_call(http[0].token, HttpCallResponse::new(200).body("cfg")));
    let expected = format!("probe: root call {} answered 200 cfg", http[0].token);
    assert!(sim.take_logs().iter().any(|l| l.message == expected), "{expected}");
    assert!(sim.http_calls().is_empty());
    assert!(
        !sim.respond_http_call(http[0].token, HttpCallResponse::new(200)),
        "answered once"
    );

    assert!(sim.respond_grpc_call(grpc[0].token, 0, b"answer"));
    let expected = format!("probe: grpc {} status 0 body answer message ", grpc[0].token);
    assert!(sim.take_logs().iter().any(|l| l.message == expected), "{expected}");
    assert!(sim.grpc_calls().is_empty());
}

#[test]
fn a_panic_fails_the_request_and_the_vm_as_in_envoy() {
    let mut sim = probe();
    let outcome = sim.request(Request::get("http://example.net/").header("x-probe-panic", "1"));
    let error = outcome.error.clone().expect("the request failed");
    assert!(
        error.contains("proxy_on_request_headers") && error.contains("wasm trap"),
        "{error}"
    );
    assert!(!outcome.forwarded);
    // The SDK's panic hook logs the message (critical) before the abort.
    assert!(
        outcome
            .logs
            .iter()
            .any(|l| l.level >= LogLevel::Error && l.message.contains("probe: asked to panic")),
        "{:?}",
        outcome.logs
    );
    assert!(sim.error().is_some());
    let after = sim.request(Request::get("http://example.net/"));
    assert!(after.error.unwrap().starts_with("the module had already failed"));
    assert!(!after.forwarded);
}

#[test]
fn proc_exit_is_reported_with_its_code() {
    let mut sim = probe();
    let outcome = sim.request(Request::get("http://example.net/").header("x-probe-exit", "1"));
    assert!(outcome.error.unwrap().contains("proc_exit(3)"));
}

#[test]
fn siblings_share_data_and_queues_like_envoy_workers() {
    let mut a = probe();
    let mut b = a.sibling().expect("a second instance");
    assert!(b.configure("probe-config"), "a sibling is configured on its own");
    assert!(
        b.take_logs()
            .iter()
            .any(|l| l.message == "probe: env PROBE_ENV=hello (1 keys)"),
        "same environment"
    );
    // Shared data is common: each worker's CAS update builds on the other's.
    assert_eq!(
        a.request(Request::get("http://example.net/"))
            .request_header("x-probe-hits"),
        Some("1")
    );
    assert_eq!(
        b.request(Request::get("http://example.net/"))
            .request_header("x-probe-hits"),
        Some("2")
    );
    assert_eq!(
        a.request(Request::get("http://example.net/"))
            .request_header("x-probe-hits"),
        Some("3")
    );
    // Metrics are each VM's own.
    assert_eq!(a.metric("probe.requests").map(|m| m.value()), Some(2));
    assert_eq!(b.metric("probe.requests").map(|m| m.value()), Some(1));
    // The queue is b's since b registered it last: a's items reach b's root context, when b runs.
    a.take_logs();
    let outcome = a.request(Request::get("http://example.net/from-a"));
    assert!(!outcome.logged("dequeued"), "{:?}", outcome.logs);
    b.take_logs();
    b.run_pending();
    assert!(b
        .take_logs()
        .iter()
        .any(|l| l.message == "probe: dequeued request /from-a"));
}
