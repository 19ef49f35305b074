//! Everything a simulated proxy holds for one module instance, kept in the wasmtime `Store`'s data:
//! the current stream's header maps and bodies, the configurations, properties, shared data and
//! queues, metrics, pending HTTP and gRPC calls, the clock, the random generator and the logs.
//! Nothing here is process-global, so any number of simulators run side by side.

use crate::outcome::{LocalResponse, LogEntry, LogLevel, MetricKind};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use wasmtime::{Memory, TypedFunc};

/// An ordered header map with lower-case names, as Envoy keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HeaderMap(pub Vec<(String, String)>);

impl HeaderMap {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    /// Envoy's `setCopy`: the first entry takes the value, later ones go; absent, it is appended.
    pub fn replace(&mut self, name: &str, value: &str) {
        let Some(first) = self.0.iter().position(|(k, _)| k.eq_ignore_ascii_case(name)) else {
            return self.add(name, value);
        };
        let kept = &mut self.0[first].1;
        kept.clear();
        kept.push_str(value);
        if self.0[first + 1..].iter().any(|(k, _)| k.eq_ignore_ascii_case(name)) {
            let mut i = 0;
            self.0.retain(|(k, _)| {
                i += 1;
                i - 1 <= first || !k.eq_ignore_ascii_case(name)
            });
        }
    }
    pub fn add(&mut self, name: &str, value: &str) {
        let name = match name.bytes().any(|b| b.is_ascii_uppercase()) {
            true => name.to_ascii_lowercase(),
            false => name.to_owned(),
        };
        self.0.push((name, value.to_owned()));
    }
    pub fn remove(&mut self, name: &str) {
        self.0.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    }
    pub fn set_all(&mut self, pairs: Vec<(String, String)>) {
        self.0 = pairs.into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
    }
}

/// The request in flight: what the filter reads and changes between context create and delete.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    pub context_id: u32,
    pub request_headers: HeaderMap,
    pub request_body: Option<Vec<u8>>,
    pub request_trailers: HeaderMap,
    pub response_headers: HeaderMap,
    pub response_body: Option<Vec<u8>>,
    pub response_trailers: HeaderMap,
    pub local_response: Option<LocalResponse>,
    /// `proxy_continue_stream(HttpRequest)` was called since the last check.
    pub resumed_request: bool,
    pub resumed_response: bool,
    /// `proxy_close_stream` (reset).
    pub reset: bool,
    /// Properties the test gave this request (`Request::property`).
    pub properties: HashMap<String, Vec<u8>>,
    /// Mutations of the request header map, each of which makes Envoy clear the route cache.
    pub header_mutation_clears: u32,
    /// `proxy_call_foreign_function("clear_route_cache")` calls.
    pub foreign_clears: u32,
    /// The request phases are over: the headers went upstream (or nowhere).
    pub request_sent: bool,
    /// The request headers as they were when `request_sent` was set, kept only if a later phase
    /// edits them.
    pub sent_request_headers: Option<HeaderMap>,
}

/// An HTTP call the module dispatched and that awaits its response from the test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCall {
    /// The token the module got back and will see again in `on_http_call_response`.
    pub token: u32,
    /// The context that dispatched it (the stream or the root context).
    pub context_id: u32,
    /// The cluster named as `upstream`.
    pub upstream: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub trailers: Vec<(String, String)>,
    pub timeout_ms: u32,
}

/// A gRPC call or stream the module opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcCall {
    pub token: u32,
    pub context_id: u32,
    pub upstream: String,
    pub service: String,
    pub method: String,
    /// The unary call's message, or the messages sent on a stream.
    pub messages: Vec<Vec<u8>>,
    pub streaming: bool,
}

/// The response the module is reading in `on_http_call_response` / `on_grpc_*`.
#[derive(Debug, Default)]
pub(crate) struct Callout {
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    pub trailers: HeaderMap,
}

/// Shared data and queues: one store per simulated VM id, shared by a simulator and its siblings
/// (`Sim::sibling`), as Envoy shares them between the workers' VMs.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub data: HashMap<String, (Vec<u8>, u32)>,
    pub next_cas: u32,
    pub queues: Vec<Queue>,
    /// Queue notifications for another simulator than the one that enqueued: (instance, queue id).
    pub ready: Vec<(u64, u32)>,
}

#[derive(Debug)]
pub(crate) struct Queue {
    pub name: String,
    /// The simulator and the context that registered the queue last: they get `on_queue_ready`.
    pub owner_instance: u64,
    pub owner_context: u32,
    pub items: VecDeque<Vec<u8>>,
}

#[derive(Debug, Clone)]
pub(crate) struct Metric {
    pub name: Arc<str>,
    pub kind: MetricKind,
    /// A counter's or gauge's value; a histogram's number of records.
    pub value: u64,
    /// A histogram's last records (at most [`crate::outcome::HISTOGRAM_TAIL`]): what a test reads
    /// back, while a long benchmark holds no more than that.
    pub records: VecDeque<u64>,
}

/// The store's data.
pub(crate) struct Host {
    /// Tells simulators sharing a [`Shared`] apart.
    pub instance: u64,
    pub memory: Option<Memory>,
    /// `proxy_on_memory_allocate` (or `malloc`): how host data reaches the module's memory.
    pub allocate: Option<Arc<TypedFunc<i32, i32>>>,
    pub logs: Vec<LogEntry>,
    pub log_level: LogLevel,
    pub now_ns: u64,
    pub monotonic_ns: u64,
    pub rng: u64,
    pub env: Vec<(String, String)>,
    pub args: Vec<String>,
    pub vm_config: Vec<u8>,
    pub plugin_config: Vec<u8>,
    /// How many bytes of `plugin_config` the module was handed since it was set.
    pub plugin_config_read: usize,
    pub properties: HashMap<String, Vec<u8>>,
    pub stream: Option<Stream>,
    pub callout: Option<Callout>,
    pub grpc_status: (u32, String),
    pub call_data: Vec<u8>,
    pub shared: Arc<Mutex<Shared>>,
    /// This simulator's queues written since it last delivered `on_queue_ready`.
    pub ready_queues: Vec<u32>,
    pub metrics: Vec<Metric>,
    /// Indexes into `metrics`, by name (so sorted by name).
    pub metric_ids: std::collections::BTreeMap<Arc<str>, usize>,
    pub tick_period_ms: u32,
    pub http_calls: Vec<HttpCall>,
    pub grpc_calls: Vec<GrpcCall>,
    pub next_token: u32,
    pub effective_context: u32,
    /// Contexts that called `proxy_done`.
    pub done_contexts: Vec<u32>,
    /// Route-cache clears outside a request (foreign function from a root context).
    pub root_foreign_clears: u32,
    /// Foreign functions this host answers `NotFound` for, as a proxy without them does.
    pub withheld_foreign: Vec<String>,
    pub exit_code: Option<i32>,
    /// WASI stdout and stderr, held until a newline makes a log line.
    pub stdio: [Vec<u8>; 2],
}

impl Host {
    pub fn new(shared: Arc<Mutex<Shared>>) -> Host {
        static INSTANCES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Host {
            instance: INSTANCES.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            memory: None,
            allocate: None,
            logs: Vec::new(),
            log_level: LogLevel::Trace,
            // 2026-01-01T00:00:00Z: a fixed clock makes every run the same.
            now_ns: 1_767_225_600_000_000_000,
            monotonic_ns: 1_000_000_000,
            rng: 0x5eed,
            env: Vec::new(),
            args: vec!["host-sim".to_string()],
            vm_config: Vec::new(),
            plugin_config: Vec::new(),
            plugin_config_read: 0,
            properties: HashMap::new(),
            stream: None,
            callout: None,
            grpc_status: (0, String::new()),
            call_data: Vec::new(),
            shared,
            ready_queues: Vec::new(),
            metrics: Vec::new(),
            metric_ids: std::collections::BTreeMap::new(),
            tick_period_ms: 0,
            http_calls: Vec::new(),
            grpc_calls: Vec::new(),
            next_token: 1,
            effective_context: 0,
            done_contexts: Vec::new(),
            root_foreign_clears: 0,
            withheld_foreign: Vec::new(),
            exit_code: None,
            stdio: [Vec::new(), Vec::new()],
        }
    }

    /// splitmix64: deterministic from the seed, good enough for weighted picks in tests.
    pub fn next_random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn log(&mut self, level: LogLevel, message: String) {
        if level >= self.log_level {
            self.logs.push(LogEntry { level, message });
        }
    }

    pub fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        // A poisoned lock only means another simulator panicked mid-update; the data is still usable.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::HeaderMap;

    fn map(pairs: &[(&str, &str)]) -> HeaderMap {
        HeaderMap(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn replace_gives_the_first_entry_the_value_and_drops_the_later_ones_as_envoys_set_copy() {
        let mut headers = map(&[("a", "1"), ("set-cookie", "x"), ("b", "2"), ("set-cookie", "y")]);
        headers.replace("Set-Cookie", "z");
        assert_eq!(headers, map(&[("a", "1"), ("set-cookie", "z"), ("b", "2")]));
        headers.replace("X-New", "v");
        assert_eq!(headers.0.last(), Some(&("x-new".to_string(), "v".to_string())));
    }

    #[test]
    fn add_keeps_what_is_there_and_stores_the_name_lower_case() {
        let mut headers = map(&[("set-cookie", "x")]);
        headers.add("Set-Cookie", "y");
        assert_eq!(headers, map(&[("set-cookie", "x"), ("set-cookie", "y")]));
    }
}
