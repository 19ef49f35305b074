//! host-sim's probe: a proxy-wasm module that uses the parts of the host our route filter does not
//! (shared data with compare-and-swap, shared queues, the three metric kinds, properties, an HTTP
//! call with a paused request, ticks, a foreign function, WASI stdout, environment and randomness),
//! and reports what it saw in request headers and logs so that host-sim's tests can assert on it.
//!
//! Plugin configuration: the text `refuse` makes `on_configure` return false; anything else is
//! accepted and logged.

use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, ContextType, LogLevel, MetricType, Status};
use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

proxy_wasm::main! {{
    proxy_wasm::set_log_level(LogLevel::Trace);
    proxy_wasm::set_root_context(|_| -> Box<dyn RootContext> { Box::new(Root::default()) });
}}

#[derive(Default, Clone, Copy)]
struct Metrics {
    requests: u32,
    gauge: u32,
    histogram: u32,
    ticks: u32,
}

#[derive(Default)]
struct Root {
    metrics: Metrics,
    queue: u32,
    ticks: u64,
}

impl Context for Root {
    fn on_http_call_response(&mut self, token: u32, _headers: usize, body_size: usize, _trailers: usize) {
        let body = self.get_http_call_response_body(0, body_size).unwrap_or_default();
        let status = self.get_http_call_response_header(":status").unwrap_or_default();
        log::info(&format!(
            "probe: root call {token} answered {status} {}",
            String::from_utf8_lossy(&body)
        ));
    }

    fn on_grpc_call_response(&mut self, token: u32, status_code: u32, response_size: usize) {
        let body = self.get_grpc_call_response_body(0, response_size).unwrap_or_default();
        let (_, message) = self.get_grpc_status();
        log::info(&format!(
            "probe: grpc {token} status {status_code} body {} message {}",
            String::from_utf8_lossy(&body),
            message.unwrap_or_default()
        ));
    }
}

impl RootContext for Root {
    fn on_vm_start(&mut self, _size: usize) -> bool {
        let config = self.get_vm_configuration().unwrap_or_default();
        // WASI: stdout, the environment and randomness (HashMap's RandomState asks random_get).
        println!("probe: vm start with {}", String::from_utf8_lossy(&config));
        let env = std::env::var("PROBE_ENV").unwrap_or_else(|_| "unset".to_string());
        let mut seen: HashMap<&str, usize> = HashMap::new();
        seen.insert("env", env.len());
        log::info(&format!("probe: env PROBE_ENV={env} ({} keys)", seen.len()));
        true
    }

    fn on_configure(&mut self, _size: usize) -> bool {
        let config = self.get_plugin_configuration().unwrap_or_default();
        if config == b"refuse" {
            log::warn("probe: configuration refused");
            return false;
        }
        self.metrics = Metrics {
            requests: hostcalls::define_metric(MetricType::Counter, "probe.requests").unwrap(),
            gauge: hostcalls::define_metric(MetricType::Gauge, "probe.gauge").unwrap(),
            histogram: hostcalls::define_metric(MetricType::Histogram, "probe.histogram").unwrap(),
            ticks: hostcalls::define_metric(MetricType::Counter, "probe.ticks").unwrap(),
        };
        self.queue = self.register_shared_queue("probe-queue");
        self.set_tick_period(Duration::from_millis(500));
        log::info(&format!("probe: configured with {}", String::from_utf8_lossy(&config)));
        true
    }

    fn on_tick(&mut self) {
        self.ticks += 1;
        if self.ticks == 1 {
            // Callouts from the root context, answered later by the test.
            let http = self.dispatch_http_call(
                "config-cluster",
                vec![(":method", "GET"), (":path", "/config"), (":authority", "config.local")],
                None,
                vec![],
                Duration::from_secs(5),
            );
            let grpc = self.dispatch_grpc_call(
                "grpc-cluster",
                "probe.Service",
                "Get",
                vec![],
                Some(b"question"),
                Duration::from_secs(5),
            );
            log::info(&format!(
                "probe: dispatched http {} grpc {}",
                http.is_ok(),
                grpc.is_ok()
            ));
        }
        hostcalls::increment_metric(self.metrics.ticks, 1).unwrap();
        let now = self.get_current_time().duration_since(UNIX_EPOCH).unwrap_or_default();
        self.set_shared_data("probe.last_tick_ms", Some(now.as_millis().to_string().as_bytes()), None)
            .unwrap();
        self.enqueue_shared_queue(self.queue, Some(format!("tick {}", self.ticks).as_bytes()))
            .unwrap();
    }

    fn on_queue_ready(&mut self, queue_id: u32) {
        while let Ok(Some(item)) = self.dequeue_shared_queue(queue_id) {
            log::info(&format!("probe: dequeued {}", String::from_utf8_lossy(&item)));
        }
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Stream {
            metrics: self.metrics,
            queue: self.queue,
        }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

struct Stream {
    metrics: Metrics,
    queue: u32,
}

impl Context for Stream {
    fn on_http_call_response(&mut self, _token: u32, _headers: usize, body_size: usize, _trailers: usize) {
        let status = self.get_http_call_response_header(":status").unwrap_or_default();
        let body = self.get_http_call_response_body(0, body_size).unwrap_or_default();
        self.set_http_request_header("x-probe-call-status", Some(&status));
        self.set_http_request_header("x-probe-call-body", Some(&String::from_utf8_lossy(&body)));
        if status == "200" {
            self.resume_http_request();
        } else {
            self.send_http_response(403, vec![("x-probe-denied", "1")], Some(b"denied by probe\n"));
        }
    }
}

impl HttpContext for Stream {
    fn on_http_request_headers(&mut self, _n: usize, _end_of_stream: bool) -> Action {
        // Metrics: a counter, a gauge moved up and down, a histogram record.
        hostcalls::increment_metric(self.metrics.requests, 1).unwrap();
        hostcalls::increment_metric(self.metrics.gauge, 5).unwrap();
        hostcalls::increment_metric(self.metrics.gauge, -2).unwrap();
        hostcalls::record_metric(self.metrics.histogram, 42).unwrap();

        // Shared data: read-modify-write with CAS, then a write with a stale CAS that must fail.
        let (value, cas) = self.get_shared_data("probe.hits");
        let hits: u64 = value
            .and_then(|v| String::from_utf8(v).ok())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        self.set_shared_data("probe.hits", Some((hits + 1).to_string().as_bytes()), cas)
            .unwrap();
        let stale = match cas {
            Some(cas) => self.set_shared_data("probe.hits", Some(b"stale"), Some(cas)),
            None => Ok(()),
        };
        self.set_http_request_header("x-probe-hits", Some(&(hits + 1).to_string()));
        if stale == Err(Status::CasMismatch) {
            self.set_http_request_header("x-probe-stale-cas", Some("mismatch"));
        }

        // Properties: Envoy's request attributes, one set by the test, one set here and read back.
        let path = self.get_property(vec!["request", "path"]).unwrap_or_default();
        self.set_http_request_header("x-probe-path", Some(&String::from_utf8_lossy(&path)));
        if let Some(answer) = self.get_property(vec!["probe", "answer"]) {
            self.set_http_request_header("x-probe-answer", Some(&String::from_utf8_lossy(&answer)));
        }
        self.set_property(vec!["probe", "mine"], Some(b"kept"));
        if let Some(mine) = self.get_property(vec!["probe", "mine"]) {
            self.set_http_request_header("x-probe-mine", Some(&String::from_utf8_lossy(&mine)));
        }

        // The clock host-sim supplies.
        let now = self.get_current_time().duration_since(UNIX_EPOCH).unwrap_or_default();
        self.set_http_request_header("x-probe-now-ms", Some(&now.as_millis().to_string()));

        // A queue item per request, delivered to the root context by the host.
        self.enqueue_shared_queue(
            self.queue,
            Some(format!("request {}", String::from_utf8_lossy(&path)).as_bytes()),
        )
        .unwrap();

        if self.get_http_request_header("x-probe-panic").is_some() {
            panic!("probe: asked to panic");
        }
        if self.get_http_request_header("x-probe-exit").is_some() {
            std::process::exit(3);
        }

        if self.get_http_request_header("x-probe-clear").is_some() {
            let _ = hostcalls::call_foreign_function("clear_route_cache", None);
        }

        if self.get_http_request_header("x-probe-call").is_some() {
            let token = self.dispatch_http_call(
                "auth-cluster",
                vec![(":method", "GET"), (":path", "/check"), (":authority", "auth.local")],
                Some(b"ping"),
                vec![],
                Duration::from_secs(1),
            );
            return match token {
                Ok(_) => Action::Pause,
                Err(_) => {
                    self.send_http_response(500, vec![], Some(b"call failed\n"));
                    Action::Pause
                }
            };
        }
        Action::Continue
    }

    fn on_http_response_headers(&mut self, _n: usize, _end_of_stream: bool) -> Action {
        self.set_http_response_header("x-probe-response", Some("seen"));
        Action::Continue
    }

    fn on_log(&mut self) {
        log::debug("probe: on_log");
    }
}

/// Logging through the host, without the `log` crate.
mod log {
    use proxy_wasm::hostcalls;
    use proxy_wasm::types::LogLevel;

    pub fn info(message: &str) {
        let _ = hostcalls::log(LogLevel::Info, message);
    }
    pub fn warn(message: &str) {
        let _ = hostcalls::log(LogLevel::Warn, message);
    }
    pub fn debug(message: &str) {
        let _ = hostcalls::log(LogLevel::Debug, message);
    }
}
