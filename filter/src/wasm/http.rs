//! A request's HTTP context: routes it at its headers (`switchyard_request` decides), counts its
//! body against its rule's limit, holds it for an auth service's answer, adds what its rule asks
//! to the response, and counts it in its series when it ends.

use std::any::Any;
use std::cell::Cell;
use std::rc::{Rc, Weak};

use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext};
use proxy_wasm::types::{Action, LogLevel, MapType};
use switchyard_table::format::{DEFAULT_CLUSTER_HEADER, HSTS_HEADER, RULE_NAME_HEADER};
use switchyard_table::policy::TOO_LARGE;
use switchyard_table::ratelimit::{self, Held};

use switchyard_request::auth::{self, AuthCall};
use switchyard_request::headers::HeaderBlock;
use switchyard_request::host::Host;
use switchyard_request::loaded::Loaded;
use switchyard_request::meter::{Ended, SeriesId, Winner};
use switchyard_request::random::Random;
use switchyard_request::request::{Followup, Outcome, RuleRef};
use switchyard_request::uncompress::HostUncompress;

use super::abi::{host_bytes, host_uncompress, log, now_ns, proxy_continue_stream, proxy_get_header_map_pairs};
use super::host::{HostSharedData, ProxyHost};
use super::meter::{self, Metrics, Total};

/// `proxy_continue_stream`'s stream type of the request.
const STREAM_HTTP_REQUEST: u32 = 0;

/// What every HTTP context of a VM shares with its root.
pub(super) struct Shared {
    pub(super) metrics: Metrics,
    random: Cell<Random>,
    /// Whether a refused cluster header was logged: once per VM, not per request.
    route_failure_logged: Cell<bool>,
    /// Whether an auth service's cluster the host refused was logged: once per VM.
    auth_failure_logged: Cell<bool>,
}

impl Shared {
    /// The filter's metrics defined, a random source seeded, nothing logged yet.
    pub(super) fn new() -> Self {
        Shared {
            metrics: Metrics::define(),
            random: Cell::new(Random::from_entropy()),
            route_failure_logged: Cell::new(false),
            auth_failure_logged: Cell::new(false),
        }
    }

    fn next_random(&self) -> u64 {
        let mut random = self.random.get();
        let value = random.next_u64();
        self.random.set(random);
        value
    }
}

pub(super) struct Http {
    table: Option<Rc<Loaded>>,
    shared: Rc<Shared>,
    /// The winning rule, kept only when the table asks for the debug response header.
    rule: Option<RuleRef>,
    /// What comes later in the request's life: what the upstream's response gets
    /// (`Strict-Transport-Security`, ROUTING.md §8.4; an affinity's `Set-Cookie`), and the body
    /// limit the request's body is counted against.
    followup: Followup,
    /// The request's place among its address's requests in flight (a rate limit's
    /// `limit-connections`), let go when the context goes, however the stream ended.
    held: Option<Held>,
    /// The subrequest to the rule's auth service while its answer is awaited, with its token:
    /// the request is held until then.
    auth: Option<(u32, AuthCall)>,
    /// The series the request is counted in when it ends (its winner's).
    series: Option<SeriesId>,
    /// When its headers reached the filter, in nanoseconds of the host's clock.
    started: Option<u64>,
    /// The response's status, read as its headers pass the filter (the upstream's, Envoy's own
    /// local reply's or the filter's: a local reply goes through the filter chain too); none when
    /// the client went away first.
    status: Option<u16>,
}

impl Context for Http {
    fn on_http_call_response(&mut self, token: u32, _num_headers: usize, _body_size: usize, _num_trailers: usize) {
        let Some((awaited, call)) = self.auth.take() else {
            return;
        };
        if awaited != token {
            self.auth = Some((awaited, call));
            return;
        }
        // No answer (a reset: no headers) is a status of none: the service did not decide.
        // SAFETY: the two pointers are `host_bytes`'s locals.
        let bytes = host_bytes(|data, size| unsafe {
            proxy_get_header_map_pairs(MapType::HttpCallResponseHeaders as u32, data, size)
        });
        let block = bytes.ok().and_then(HeaderBlock::decode).unwrap_or_default();
        let headers: Vec<(String, String)> = block.iter().map(|(n, v)| (n.to_owned(), v.to_owned())).collect();
        let status = block
            .iter()
            .find(|(n, _)| *n == ":status")
            .and_then(|(_, v)| v.parse().ok());
        let verdict = call.verdict(status, &headers);
        let (goes_on, cookies) = auth::act(&mut ProxyHost::default(), &call, verdict);
        if goes_on {
            self.followup.auth_cookies = cookies;
            // SAFETY: a plain host call without pointers.
            unsafe { proxy_continue_stream(STREAM_HTTP_REQUEST) };
        } else {
            Total::Direct.count();
        }
    }
}

impl Drop for Http {
    /// The stream's end (`proxy_on_delete`, after Envoy's access log): the request is counted,
    /// and its place among its address's requests let go.
    fn drop(&mut self) {
        self.count_ended();
        if let Some(place) = self.held.take() {
            ratelimit::leave(&HostSharedData, &place);
        }
    }
}

impl HttpContext for Http {
    fn on_http_request_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        self.started = now_ns();
        let mut host = ProxyHost {
            arrived_ns: self.started,
            ..ProxyHost::default()
        };
        let Some(served) = &self.table else {
            host.note_winner(Winner::NONE);
            self.series = host.series;
            host.remove_request_header(DEFAULT_CLUSTER_HEADER);
            host.send_response(503, &[("content-type", "text/plain")], "503 no route table loaded\n");
            Total::NotRouted.count();
            return Action::Pause;
        };
        host.table = Rc::downgrade(served) as Weak<dyn Any>;
        let loaded: &Loaded = served;
        let table = loaded.head();
        let handled = loaded.handle(&mut host, self.shared.next_random(), &HostUncompress(host_uncompress));
        self.series = host.series;
        if let Some(error) = handled.error {
            log(LogLevel::Error, &format!("a request could not be routed: {error}"));
        }
        let (outcome, winner) = (handled.outcome, handled.rule);
        match outcome {
            Outcome::Routed { .. } => {
                Total::Routed.count();
                if table.debug_rule_header() {
                    self.rule = winner;
                }
                self.followup = handled.response;
                self.held = self.followup.held.take();
                match self.followup.auth.take() {
                    None => Action::Continue,
                    Some(call) => self.ask(call),
                }
            }
            Outcome::ClusterNotSet { error, .. } => {
                Total::RouteFailed.count();
                if !self.shared.route_failure_logged.replace(true) {
                    let rule = winner.as_ref().and_then(|w| w.name(loaded.head())).unwrap_or("?");
                    log(
                        LogLevel::Error,
                        &format!(
                            "setting {} failed (proxy-wasm status {}) for rule {rule:?}: the request goes on \
                             without a cluster; counted in switchyard_requests_route_failed, logged once",
                            table.cluster_header(),
                            error.0
                        ),
                    );
                }
                Action::Continue
            }
            Outcome::Passed => {
                Total::NotRouted.count();
                Action::Continue
            }
            Outcome::NotFound => {
                Total::NotRouted.count();
                Action::Pause
            }
            Outcome::Direct { .. } => {
                Total::Direct.count();
                Action::Pause
            }
        }
    }

    fn on_http_request_body(&mut self, body_size: usize, _end_of_stream: bool) -> Action {
        // Envoy hands each chunk as it comes (the filter never buffers): its size is counted.
        if self.followup.body_chunk(body_size as u64) {
            // While the auth service decides, the body waits in Envoy's buffer: continuing here
            // would send the request on. (Envoy stops a paused request's body before it reaches
            // the filter anyway; a host that hands it over must not carry the request on.)
            return match self.auth {
                Some(_) => Action::Pause,
                None => Action::Continue,
            };
        }
        self.auth = None;
        self.followup.body = None;
        // A local reply, counted as one (the request was counted routed when its headers were).
        Total::Direct.count();
        let _ = hostcalls::send_http_response(
            u32::from(TOO_LARGE),
            vec![("content-type", "text/plain")],
            Some(b"413 request body too large\n"),
        );
        Action::Pause
    }

    fn on_http_response_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        let Followup {
            hsts,
            set_cookie,
            cors,
            auth_cookies,
            ..
        } = std::mem::take(&mut self.followup);
        if self.series.is_some() || auth_cookies.is_some() {
            self.status = hostcalls::get_map_value_bytes(MapType::HttpResponseHeaders, ":status")
                .ok()
                .flatten()
                .and_then(|status| std::str::from_utf8(&status).ok()?.parse().ok());
        }
        if let Some(auth_cookies) = auth_cookies {
            for cookie in auth_cookies.for_status(self.status.unwrap_or(0)) {
                let _ = hostcalls::add_map_value(MapType::HttpResponseHeaders, "set-cookie", cookie);
            }
        }
        // Unless the gateway's route adds them (docs/routing.md, "CORS").
        if let Some(cors) = cors.filter(|cors| !cors.added_by_route()) {
            cors.each(|name, value| {
                let _ = hostcalls::set_map_value(MapType::HttpResponseHeaders, name, Some(value));
            });
        }
        if let Some(value) = hsts {
            let _ = hostcalls::set_map_value(MapType::HttpResponseHeaders, HSTS_HEADER, Some(value.as_str()));
        }
        if let Some(cookie) = set_cookie {
            // Added beside the upstream's own cookies, never in their place.
            let _ = hostcalls::add_map_value(MapType::HttpResponseHeaders, "set-cookie", &cookie);
        }
        if let (Some(rule), Some(table)) = (&self.rule, self.table.as_deref()) {
            if let Some(name) = rule.name(table.head()) {
                let _ = hostcalls::set_map_value(MapType::HttpResponseHeaders, RULE_NAME_HEADER, Some(name));
            }
        }
        Action::Continue
    }
}

impl Http {
    /// A request's context, routed by `table` (none: no table was accepted yet).
    pub(super) fn new(table: Option<Rc<Loaded>>, shared: Rc<Shared>) -> Self {
        Http {
            table,
            shared,
            rule: None,
            followup: Followup::default(),
            held: None,
            auth: None,
            series: None,
            started: None,
            status: None,
        }
    }

    /// Counts the ended request in its series: its response's status and its duration.
    fn count_ended(&self) {
        let Some(series) = self.series else {
            return;
        };
        let code = self.status.map(u64::from);
        let elapsed_ns = (self.started.zip(now_ns())).map(|(started, now)| now.saturating_sub(started));
        let duration_ms = elapsed_ns.map_or(0, |ns| ns / 1_000_000);
        meter::count(series, Ended::new(code, duration_ms));
    }

    /// Sends `call` to the auth service and holds the request for its answer; a call the host
    /// refuses (no such cluster) is answered 500 at once: the service decides, or nobody passes.
    fn ask(&mut self, call: AuthCall) -> Action {
        let headers: Vec<(&str, &str)> = call.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let timeout = std::time::Duration::from_millis(call.auth.timeout_ms);
        match hostcalls::dispatch_http_call(&call.auth.cluster, headers, None, Vec::new(), timeout) {
            Ok(token) => {
                self.auth = Some((token, call));
                Action::Pause
            }
            Err(status) => {
                if !self.shared.auth_failure_logged.replace(true) {
                    log(
                        LogLevel::Error,
                        &format!(
                            "the auth service's cluster {:?} cannot be called (proxy-wasm status {}): its \
                             requests are answered 500; logged once",
                            call.auth.cluster, status as u32
                        ),
                    );
                }
                let verdict = call.verdict(None, &[]);
                let _ = auth::act(&mut ProxyHost::default(), &call, verdict);
                Total::Direct.count();
                Action::Pause
            }
        }
    }
}
