//! What a simulated request produced: the action each phase returned, the request headers as the
//! upstream would see them, the local response if the module sent one, the response the client
//! got, logs, metric values and route-cache clears. Serializes to the JSON the `host-sim` command
//! prints.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A filter's answer to a phase (`FilterHeadersStatus` and friends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// 0: go on to the next filter.
    Continue,
    /// 1: stop iteration until the module calls `proxy_continue_stream` (or sends a local response).
    Pause,
    /// 2: Envoy's ContinueAndEndStream.
    ContinueAndEndStream,
    /// 3: Envoy's StopAllIterationAndBuffer.
    StopAllAndBuffer,
    /// 4: Envoy's StopAllIterationAndWatermark.
    StopAllAndWatermark,
    /// Anything else the module returned.
    Unknown(i32),
}

impl Action {
    pub(crate) fn from_code(code: i32) -> Action {
        match code {
            0 => Action::Continue,
            1 => Action::Pause,
            2 => Action::ContinueAndEndStream,
            3 => Action::StopAllAndBuffer,
            4 => Action::StopAllAndWatermark,
            other => Action::Unknown(other),
        }
    }

    /// Whether Envoy would go on to the next filter without being resumed.
    pub fn continues(self) -> bool {
        matches!(self, Action::Continue | Action::ContinueAndEndStream)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Continue => f.write_str("continue"),
            Action::Pause => f.write_str("pause"),
            Action::ContinueAndEndStream => f.write_str("continue_and_end_stream"),
            Action::StopAllAndBuffer => f.write_str("stop_all_and_buffer"),
            Action::StopAllAndWatermark => f.write_str("stop_all_and_watermark"),
            Action::Unknown(code) => write!(f, "unknown({code})"),
        }
    }
}

impl Serialize for Action {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The phases of a request, in the order Envoy calls them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    RequestHeaders,
    RequestBody,
    RequestTrailers,
    ResponseHeaders,
    ResponseBody,
    ResponseTrailers,
}

/// One phase the module ran and what it answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhaseAction {
    pub phase: Phase,
    pub action: Action,
}

/// proxy-wasm log levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
    Critical,
}

impl LogLevel {
    pub(crate) fn from_code(code: i32) -> LogLevel {
        match code {
            i32::MIN..=0 => LogLevel::Trace,
            1 => LogLevel::Debug,
            2 => LogLevel::Info,
            3 => LogLevel::Warn,
            4 => LogLevel::Error,
            _ => LogLevel::Critical,
        }
    }
    pub(crate) fn code(self) -> u32 {
        self as u32
    }
}

/// A line the module logged (`proxy_log`, or WASI stdout / stderr at info / error).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    pub level: LogLevel,
    pub message: String,
}

impl fmt::Display for LogEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{:?}] {}", self.level, self.message)
    }
}

/// A response the module sent itself (`proxy_send_local_response`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalResponse {
    pub status: u32,
    pub details: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// -1 when not a gRPC response.
    pub grpc_status: i32,
}

impl LocalResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl Serialize for LocalResponse {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("status", &self.status)?;
        m.serialize_entry("headers", &self.headers)?;
        m.serialize_entry("body", &self.body_text())?;
        m.end()
    }
}

/// Counter, gauge or histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    Counter,
    Gauge,
    Histogram,
}

/// A metric's value: the count or level, or how many values a histogram recorded and the last
/// [`HISTOGRAM_TAIL`] of them (a request's outcome carries every metric: a histogram's every
/// value would make each request cost as many copies as requests came before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricValue {
    Counter(u64),
    Gauge(u64),
    Histogram { count: u64, last: Vec<u64> },
}

/// How many of a histogram's last values a [`MetricValue`] carries.
pub const HISTOGRAM_TAIL: usize = 16;

impl MetricValue {
    /// A counter's or gauge's value; a histogram's number of records.
    pub fn value(&self) -> u64 {
        match self {
            MetricValue::Counter(v) | MetricValue::Gauge(v) => *v,
            MetricValue::Histogram { count, .. } => *count,
        }
    }
}

impl Serialize for MetricValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MetricValue::Counter(v) | MetricValue::Gauge(v) => s.serialize_u64(*v),
            MetricValue::Histogram { count, last } => {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("count", count)?;
                map.serialize_entry("last", last)?;
                map.end()
            }
        }
    }
}

/// Route-cache clears during a request, counted two ways.
///
/// `foreign_function`: calls of `proxy_call_foreign_function("clear_route_cache")`.
/// `header_mutations`: mutations of the request header map (`proxy_add_header_map_value`,
/// `proxy_replace_header_map_value`, `proxy_remove_header_map_value`,
/// `proxy_set_header_map_pairs` on `HttpRequestHeaders`);
/// Envoy's wasm context under ABI 0.2.1 clears the route cache after each of them, which is what
/// makes a `cluster_header` set by a filter take effect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RouteCacheClears {
    pub foreign_function: u32,
    pub header_mutations: u32,
}

impl RouteCacheClears {
    pub fn total(&self) -> u32 {
        self.foreign_function + self.header_mutations
    }
}

/// Everything one request produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// Whether the last `configure` was accepted (`on_configure` returned true).
    pub configured: bool,
    /// What `on_request_headers` returned, the action that decides routing.
    pub action: Action,
    /// Every phase that ran, in order.
    pub phases: Vec<PhaseAction>,
    /// The request headers after the request phases: what the upstream sees when `forwarded`.
    pub request_headers: Vec<(String, String)>,
    /// Whether the request went on to the upstream (not paused, not answered locally, not reset).
    pub forwarded: bool,
    pub local_response: Option<LocalResponse>,
    /// The response headers the client would get (upstream or local), after the response phases.
    pub response_headers: Vec<(String, String)>,
    pub logs: Vec<LogEntry>,
    /// Every metric the module defined, by name, after the request.
    pub metrics: Metrics,
    pub route_cache_clears: RouteCacheClears,
    /// HTTP calls dispatched during the request and left unanswered.
    pub pending_http_calls: usize,
    /// The module trapped (panicked) or exited: the request failed as Envoy would fail it.
    pub error: Option<String>,
}

impl Outcome {
    /// The first value of a request header as the upstream sees it.
    pub fn request_header(&self, name: &str) -> Option<&str> {
        header(&self.request_headers, name)
    }
    /// Every value of a request header.
    pub fn request_header_all(&self, name: &str) -> Vec<&str> {
        self.request_headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }
    pub fn response_header(&self, name: &str) -> Option<&str> {
        header(&self.response_headers, name)
    }
    /// The status of the local response, if any.
    pub fn local_status(&self) -> Option<u32> {
        self.local_response.as_ref().map(|r| r.status)
    }
    pub fn metric(&self, name: &str) -> Option<u64> {
        self.metrics.get(name).map(MetricValue::value)
    }
    /// Whether some log line contains `needle`.
    pub fn logged(&self, needle: &str) -> bool {
        self.logs.iter().any(|l| l.message.contains(needle))
    }
}

/// Every metric a module defined, sorted by name (a JSON object when serialized).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metrics(pub Vec<(Arc<str>, MetricValue)>);

impl Metrics {
    /// A metric's value by name.
    pub fn get(&self, name: &str) -> Option<&MetricValue> {
        self.0
            .binary_search_by(|(n, _)| (**n).cmp(name))
            .ok()
            .map(|i| &self.0[i].1)
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, &MetricValue)> {
        self.0.iter().map(|(n, v)| (&**n, v))
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// As an ordinary map.
    pub fn to_map(&self) -> BTreeMap<String, MetricValue> {
        self.iter().map(|(n, v)| (n.to_string(), v.clone())).collect()
    }
}

impl Serialize for Metrics {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(&**name, value)?;
        }
        map.end()
    }
}

pub(crate) fn header<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}
