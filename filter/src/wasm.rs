//! The proxy-wasm shell: one root context per plugin holds the compiled table and hands every HTTP
//! context an `Rc` of it (nothing per request copies the table); `Host` is implemented over the
//! host calls, which are used directly (their `Result`s are handled) rather than through the SDK's
//! trait methods, which unwrap.
//!
//! The SDK exports every proxy-wasm callback; `make build-wasm` keeps only those
//! `filter/exports.json` lists (a callback overridden here needs its export added there, or the
//! host never calls it). A host calls no callback a module lacks and goes on as if it had answered
//! "continue" / `true` (proxy-wasm-cpp-host, which Envoy and Istio's proxy run: `WasmBase::getFunctions`
//! in `src/wasm.cc` looks each export up and leaves a missing one null; every `ContextBase::on…` in
//! `src/context.cc` checks it first: `onRequestBody` returns `FilterDataStatus::Continue`, `onDone`
//! `true`, `onStart` `true`, `onLog` and `onDelete` nothing). Only the allocator is required.

use std::any::Any;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::rc::{Rc, Weak};

use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, BufferType, ContextType, LogLevel, MapType, MetricType};
use switchyard_table::format::{DEFAULT_CLUSTER_HEADER, HSTS_HEADER, RULE_NAME_HEADER};
use switchyard_table::metrics::{self, wasm_stat_name, DURATION_BUCKETS, STATUS_CLASSES};
use switchyard_table::policy::TOO_LARGE;
use switchyard_table::ratelimit::{self, Counters, Held};
use switchyard_table::shards::{ShardStore, SharedBytes, Source};

use switchyard_request::auth::{self, AuthCall};
use switchyard_request::headers::HeaderBlock;
use switchyard_request::host::{parse_client_address, Host, HostCallFailed};
use switchyard_request::loaded::{load, Loaded};
use switchyard_request::meter::{Ended, SeriesBook, SeriesId, Stat, Tallies, Winner};
use switchyard_request::random::Random;
use switchyard_request::request::{Followup, Outcome, RuleRef};
use switchyard_request::uncompress::{HostUncompress, FOREIGN_FUNCTION};

proxy_wasm::main! {{
    std::panic::set_hook(Box::new(|info| log(LogLevel::Critical, &format!("switchyard: panic: {info}"))));
    proxy_wasm::set_root_context(|_| Box::new(Root::new()));
}}

thread_local! {
    /// The VM's shards, kept across every root context's tables: Envoy configures each ECDS update
    /// in a new root context of the same VM, so a push decodes only the shards this VM lacks; and
    /// those another VM of the process validated, it takes from the shared catalogue.
    static SHARDS: RefCell<ShardStore> = RefCell::new(ShardStore::sharing(HostSharedData));

    /// The VM's per-resource request metrics, kept across root contexts as the shards are: a
    /// request counts into the series its winner noted.
    static METER: RefCell<Meter> = RefCell::new(Meter::default());
}

/// The per-resource request metrics of a VM ([`switchyard_table::metrics`]). A request is counted
/// in the VM ([`Tallies`]); every [`FLUSH_EVERY`] the root hands Envoy what moved, one host call per
/// stat, each stat defined the first time it moves. The labels go in the stat's name, which the
/// bootstrap's `stats_tags` turn back into tags. The durations are counters shaped as a
/// Prometheus histogram (`_bucket{le}`, `_sum`, `_count`), the buckets Envoy's own.
#[derive(Default)]
struct Meter {
    book: SeriesBook,
    /// What was counted since the last flush.
    tallies: Tallies,
    /// By series id: the ids of its stats in Envoy (0: not defined yet).
    stats: Vec<SeriesStats>,
    /// The filter's request totals counted since the last flush, by [`Total`].
    totals: [u64; Total::ALL.len()],
}

/// How the filter ended a request, each a total of the VM's (`switchyard_requests_*`): counted in
/// the [`Meter`] and handed over with its flush, one host call a total a flush rather than one a
/// request (each cost Envoy's V8 about 1,000 instructions, 0.5 % of a request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Total {
    Routed,
    RouteFailed,
    NotRouted,
    Direct,
}

impl Total {
    const ALL: [Total; 4] = [Total::Routed, Total::RouteFailed, Total::NotRouted, Total::Direct];

    /// Counts a request that ended as `self` in the VM's meter.
    fn count(self) {
        METER.with(|meter| {
            if let Ok(mut meter) = meter.try_borrow_mut() {
                if let Some(n) = meter.totals.get_mut(self as usize) {
                    *n += 1;
                }
            }
        });
    }
}

/// The ids of a series' stats in Envoy (0: not defined yet).
#[derive(Clone, Copy, Default)]
struct SeriesStats {
    requests: [u32; STATUS_CLASSES.len()],
    buckets: [u32; DURATION_BUCKETS.len()],
    sum: u32,
    count: u32,
}

/// How often the counts are handed to Envoy: what a scrape sees lags the requests by at most this
/// (Envoy's own histograms lag by its stats flush, 5 s by default).
const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

impl Meter {
    /// Counts a request of `series` that ended as `ended`.
    fn count(&mut self, series: SeriesId, ended: Ended) {
        self.tallies.count(series, ended);
    }

    /// Hands Envoy what was counted since the last flush, the totals to the counters `totals` names.
    /// A refused call loses that count, nothing else.
    fn flush(&mut self, totals: &[u32; Total::ALL.len()]) {
        let Meter {
            book,
            tallies,
            stats,
            totals: counted,
        } = self;
        for (&id, n) in totals.iter().zip(counted.iter_mut()) {
            if *n > 0 {
                let _ = hostcalls::increment_metric(id, i64::try_from(std::mem::take(n)).unwrap_or(i64::MAX));
            }
        }
        for (series, tally) in tallies.drain() {
            let index = series.0 as usize;
            if stats.len() <= index {
                stats.resize(index + 1, SeriesStats::default());
            }
            let Some(ids) = stats.get_mut(index) else {
                continue;
            };
            let labels = book.labels(series);
            for (stat, n) in tally.moved() {
                if let Some(id) = ids.id(stat) {
                    add(id, n, || wasm_stat_name(&stat.name(), &stat.labels(labels)));
                }
            }
        }
    }
}

impl SeriesStats {
    /// The id of `stat` in Envoy (0: not defined yet).
    fn id(&mut self, stat: Stat) -> Option<&mut u32> {
        match stat {
            Stat::Requests(class) => self.requests.get_mut(class),
            Stat::Bucket(bucket) => self.buckets.get_mut(bucket),
            Stat::Sum => Some(&mut self.sum),
            Stat::Count => Some(&mut self.count),
        }
    }
}

/// Adds `n` to the counter `*id` names, defined (named `name()`) when it is 0; left 0 when the
/// host refuses it (then asked again at the next flush). Adding 0 defines it (a sum of zeros).
fn add(id: &mut u32, n: u64, name: impl FnOnce() -> String) {
    if *id == 0 {
        *id = hostcalls::define_metric(MetricType::Counter, &name()).unwrap_or(0);
    }
    if *id != 0 && n > 0 {
        let _ = hostcalls::increment_metric(*id, i64::try_from(n).unwrap_or(i64::MAX));
    }
}

/// The host's shared data (one map per VM id, shared by the VMs of every thread): where the
/// VMs of a plugin publish the shards they validated (`switchyard_table::shards::catalogue`).
#[derive(Debug)]
struct HostSharedData;

impl SharedBytes for HostSharedData {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        hostcalls::get_shared_data(key).ok()?.0
    }

    fn set(&self, key: &str, value: &[u8]) -> bool {
        // A failed write only leaves the other VMs to decode the shards themselves.
        hostcalls::set_shared_data(key, Some(value), None).is_ok()
    }
}

/// The plugin configuration, which the host copies into the VM range by range: a push in the
/// sharded form's layout costs a VM the front and the texts of the shards it lacks, not the whole
/// configuration (`switchyard_table::shards::read_ranged`). A host that gives no size may still
/// hand the buffer over whole: it is then copied whole, once.
enum PluginConfiguration {
    /// Read range by range; its size, as the host gave it.
    Ranged(usize),
    /// Copied whole.
    Whole(Vec<u8>),
}

impl PluginConfiguration {
    /// The configuration `on_configure` was told is `size` bytes.
    fn of(size: usize) -> PluginConfiguration {
        match size {
            0 => PluginConfiguration::Whole(
                hostcalls::get_buffer(BufferType::PluginConfiguration, 0, usize::MAX)
                    .ok()
                    .flatten()
                    .unwrap_or_default(),
            ),
            size => PluginConfiguration::Ranged(size),
        }
    }
}

impl Source for PluginConfiguration {
    fn size(&self) -> usize {
        match self {
            PluginConfiguration::Ranged(size) => *size,
            PluginConfiguration::Whole(bytes) => bytes.len(),
        }
    }

    fn read(&self, range: Range<usize>) -> Option<Cow<'_, [u8]>> {
        if let PluginConfiguration::Whole(bytes) = self {
            return bytes.get(range).map(Cow::Borrowed);
        }
        if range.is_empty() {
            return Some(Cow::Borrowed(&[]));
        }
        let wanted = range.len();
        let bytes = hostcalls::get_buffer(BufferType::PluginConfiguration, range.start, wanted)
            .ok()
            .flatten()?;
        (bytes.len() == wanted).then_some(Cow::Owned(bytes))
    }
}

fn log(level: LogLevel, message: &str) {
    // Nowhere to report a failing log call; the message is lost, the request is not.
    let _ = hostcalls::log(level, message);
}

/// The filter's counters and gauges; Envoy shows them as `wasmcustom.<name>`.
struct Metrics {
    /// By [`Total`].
    totals: [u32; Total::ALL.len()],
    accepted: u32,
    refused: u32,
    rules: u32,
    folded: u32,
}

impl Metrics {
    fn define() -> Self {
        let counter = |name| hostcalls::define_metric(MetricType::Counter, name).unwrap_or(u32::MAX);
        Metrics {
            totals: Total::ALL.map(|total| {
                counter(match total {
                    Total::Routed => "switchyard_requests_routed",
                    Total::RouteFailed => "switchyard_requests_route_failed",
                    Total::NotRouted => "switchyard_requests_not_routed",
                    Total::Direct => "switchyard_requests_direct_response",
                })
            }),
            accepted: counter("switchyard_tables_accepted"),
            refused: counter("switchyard_tables_refused"),
            rules: hostcalls::define_metric(MetricType::Gauge, "switchyard_rules").unwrap_or(u32::MAX),
            folded: hostcalls::define_metric(MetricType::Gauge, metrics::FOLDED_RESOURCES).unwrap_or(u32::MAX),
        }
    }

    fn increment(id: u32) {
        let _ = hostcalls::increment_metric(id, 1);
    }
}

/// What every HTTP context of a VM shares with its root.
struct Shared {
    metrics: Metrics,
    random: Cell<Random>,
    /// Whether a refused cluster header was logged: once per VM, not per request.
    route_failure_logged: Cell<bool>,
    /// Whether an auth service's cluster the host refused was logged: once per VM.
    auth_failure_logged: Cell<bool>,
}

impl Shared {
    fn next_random(&self) -> u64 {
        let mut random = self.random.get();
        let value = random.next_u64();
        self.random.set(random);
        value
    }
}

struct Root {
    table: Option<Rc<Loaded>>,
    shared: Rc<Shared>,
}

impl Root {
    fn new() -> Self {
        let shared = Shared {
            metrics: Metrics::define(),
            random: Cell::new(Random::from_entropy()),
            route_failure_logged: Cell::new(false),
            auth_failure_logged: Cell::new(false),
        };
        Root {
            table: None,
            shared: Rc::new(shared),
        }
    }
}

impl Context for Root {}

impl RootContext for Root {
    fn on_configure(&mut self, plugin_configuration_size: usize) -> bool {
        let started = now_ns();
        // The counts go out on every tick, a table accepted or not (the requests a root without
        // one answers 503 are counted too). SAFETY: a plain host call without pointers. Refused:
        // the counts stay in the VM.
        unsafe { proxy_set_tick_period_milliseconds(FLUSH_EVERY.as_millis() as u32) };
        let config = PluginConfiguration::of(plugin_configuration_size);
        let loaded = SHARDS.with(|store| match store.try_borrow_mut() {
            Ok(mut store) => load(&config, &HostUncompress(host_uncompress), &mut store),
            // Never: nothing else borrows the store while a root configures.
            Err(_) => Err(switchyard_request::config::ConfigError::Unreadable),
        });
        match loaded {
            Ok((table, stats)) => {
                // Whole microseconds: float formatting would add ~15 KB to the module.
                let micros = (started.zip(now_ns())).map_or(0, |(started, now)| now.saturating_sub(started) / 1_000);
                let shards = stats.map_or(String::new(), |s| {
                    format!(
                        " ({} shards, {} new decoded, {} new from the catalogue)",
                        s.shards, s.decoded, s.from_catalogue
                    )
                });
                log(
                    LogLevel::Info,
                    &format!(
                        "table accepted: generation {:?}, {}, loaded in {} us{shards}",
                        table.generation(),
                        table.summary(),
                        micros
                    ),
                );
                let _ = hostcalls::record_metric(self.shared.metrics.rules, table.rule_count() as u64);
                let folded = table.head().metrics_fold().map_or(0, |fold| fold.folded);
                let _ = hostcalls::record_metric(self.shared.metrics.folded, u64::from(folded));
                Metrics::increment(self.shared.metrics.accepted);
                self.table = Some(Rc::new(table));
                true
            }
            Err(error) => {
                // True in every host: Envoy configures a fresh root for each ECDS update and keeps
                // serving through the previous filter configuration, while host-sim (and a host
                // that reconfigures in place) keeps this root's table; this root cannot tell which.
                log(
                    LogLevel::Error,
                    &format!("table refused (the table serving before, if any, keeps serving): {error}"),
                );
                Metrics::increment(self.shared.metrics.refused);
                false
            }
        }
    }

    fn on_tick(&mut self) {
        METER.with(|meter| {
            if let Ok(mut meter) = meter.try_borrow_mut() {
                meter.flush(&self.shared.metrics.totals);
            }
        });
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Http {
            table: self.table.clone(),
            shared: Rc::clone(&self.shared),
            rule: None,
            followup: Followup::default(),
            held: None,
            auth: None,
            series: None,
            started: None,
            status: None,
        }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

struct Http {
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
    /// Counts the ended request in its series: its response's status and its duration.
    fn count_ended(&self) {
        let Some(series) = self.series else {
            return;
        };
        let code = self.status.map(u64::from);
        let elapsed_ns = (self.started.zip(now_ns())).map(|(started, now)| now.saturating_sub(started));
        let duration_ms = elapsed_ns.map_or(0, |ns| ns / 1_000_000);
        METER.with(|meter| {
            if let Ok(mut meter) = meter.try_borrow_mut() {
                meter.count(series, Ended::new(code, duration_ms));
            }
        });
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

/// `proxy_continue_stream`'s stream type of the request.
const STREAM_HTTP_REQUEST: u32 = 0;

/// The property path of Envoy's `source.address`, the client's address (a path's segments end
/// with a NUL, but the last).
const SOURCE_ADDRESS: &str = "source\0address";

/// The property the winning rule is left in: Envoy keeps it under `wasm.`, as WINNER_RULE.
const WINNER_PROPERTY: &str = "switchyard.rule";

#[link(wasm_import_module = "env")]
extern "C" {
    /// The ABI's `proxy_continue_stream`, declared here with a plain status code: the SDK's
    /// `hostcalls::resume_http_request` panics on a status other than `Ok` (a stream already
    /// gone), and the filter never traps.
    fn proxy_continue_stream(stream_type: u32) -> u32;

    /// The ABI's `proxy_set_tick_period_milliseconds`, declared here with a plain status code: the
    /// SDK's `hostcalls::set_tick_period` panics on a status other than `Ok`.
    fn proxy_set_tick_period_milliseconds(period: u32) -> u32;

    /// The ABI's `proxy_set_property`, declared here with a plain status code: the SDK's
    /// `hostcalls::set_property` panics on a status other than `Ok`.
    fn proxy_set_property(path: *const u8, path_size: usize, value: *const u8, value_size: usize) -> u32;

    /// The ABI's `proxy_call_foreign_function`, declared here with a plain status code: the SDK's
    /// `hostcalls::call_foreign_function` panics on a status its enum lacks, and a host without
    /// foreign functions may answer `Unimplemented` (12); the filter refuses the table instead.
    #[link_name = "proxy_call_foreign_function"]
    fn proxy_call_foreign_function_status(
        name: *const u8,
        name_size: usize,
        arguments: *const u8,
        arguments_size: usize,
        results: *mut *mut u8,
        results_size: *mut usize,
    ) -> u32;

    /// The ABI's `proxy_get_property`, declared here with a plain status code and a constant path:
    /// the SDK's `hostcalls::get_property` builds the path anew on every call.
    fn proxy_get_property(path: *const u8, path_size: usize, results: *mut *mut u8, results_size: *mut usize) -> u32;

    /// The ABI's `proxy_get_current_time_nanoseconds`, declared here with a plain status code.
    fn proxy_get_current_time_nanoseconds(return_time: *mut u64) -> u32;

    /// The ABI's `proxy_get_header_map_pairs`, declared here to keep the serialised map whole (the
    /// SDK's `hostcalls::get_map_bytes` splits it into two allocations per header).
    fn proxy_get_header_map_pairs(map_type: u32, results: *mut *mut u8, results_size: *mut usize) -> u32;
}

/// The host's clock, in nanoseconds since the epoch (none if the host refuses): the ABI's value as
/// it comes, where the SDK's `get_current_time` builds a `SystemTime` (and panics on a refusal).
fn now_ns() -> Option<u64> {
    let mut now = 0u64;
    // SAFETY: `now` is a live local the host writes eight bytes to.
    (unsafe { proxy_get_current_time_nanoseconds(&mut now) } == 0).then_some(now)
}

/// What a host call that returns bytes answered: the bytes (none for a null answer) or its status.
fn host_bytes(call: impl FnOnce(*mut *mut u8, *mut usize) -> u32) -> Result<Vec<u8>, HostCallFailed> {
    let (mut data, mut size) = (std::ptr::null_mut::<u8>(), 0usize);
    match call(&mut data, &mut size) {
        0 if data.is_null() => Ok(Vec::new()),
        // SAFETY: on success the host wrote `size` bytes at `data`, memory it took from this
        // module's `proxy_on_memory_allocate` (the SDK's: a boxed slice of exactly `size` bytes,
        // alignment 1), which is now ours; the SDK's own host calls take results the same way.
        0 => Ok(unsafe { Vec::from_raw_parts(data, size, size) }),
        status => Err(HostCallFailed(status)),
    }
}

/// The host's `uncompress` on `argument` (an empty answer is no bytes).
fn host_uncompress(argument: &[u8]) -> Result<Vec<u8>, HostCallFailed> {
    host_bytes(|data, size| {
        // SAFETY: the pointers and sizes are those of a live `&str`, a live slice and two locals.
        unsafe {
            proxy_call_foreign_function_status(
                FOREIGN_FUNCTION.as_ptr(),
                FOREIGN_FUNCTION.len(),
                argument.as_ptr(),
                argument.len(),
                data,
                size,
            )
        }
    })
}

/// [`Host`] over proxy-wasm host calls. Header values that are not UTF-8 are read lossily.
struct ProxyHost {
    /// The series the request's winner is counted in, once noted.
    series: Option<SeriesId>,
    /// The table the request is routed by: the series book finds a rule's series by its place in it.
    table: Weak<dyn Any>,
    /// The host's clock when the request's headers came, read once for the request: its rate
    /// limits count at that moment (none: read when asked).
    arrived_ns: Option<u64>,
}

impl Default for ProxyHost {
    fn default() -> Self {
        ProxyHost {
            series: None,
            table: Weak::<()>::new(),
            arrived_ns: None,
        }
    }
}

impl Host for ProxyHost {
    fn request_headers(&self) -> HeaderBlock {
        // SAFETY: the two pointers are `host_bytes`'s locals.
        let bytes = host_bytes(|data, size| unsafe {
            proxy_get_header_map_pairs(MapType::HttpRequestHeaders as u32, data, size)
        });
        bytes.ok().and_then(HeaderBlock::decode).unwrap_or_default()
    }

    fn set_request_header(&mut self, name: &str, value: &str) -> Result<(), HostCallFailed> {
        hostcalls::set_map_value(MapType::HttpRequestHeaders, name, Some(value)).map_err(|s| HostCallFailed(s as u32))
    }

    fn remove_request_header(&mut self, name: &str) {
        let _ = hostcalls::remove_map_value(MapType::HttpRequestHeaders, name);
    }

    fn send_response(&mut self, status: u16, headers: &[(&str, &str)], body: &str) {
        let _ = hostcalls::send_http_response(u32::from(status), headers.to_vec(), Some(body.as_bytes()));
    }

    fn client_address(&self) -> Option<std::net::IpAddr> {
        let bytes = host_bytes(|data, size| {
            // SAFETY: the path is a live constant; the two pointers are `host_bytes`'s locals.
            unsafe { proxy_get_property(SOURCE_ADDRESS.as_ptr(), SOURCE_ADDRESS.len(), data, size) }
        });
        parse_client_address(std::str::from_utf8(&bytes.ok()?).ok()?)
    }

    fn rate_counters(&self) -> Option<&dyn Counters> {
        Some(&HostSharedData)
    }

    fn note_winner(&mut self, winner: Winner<'_>) {
        // Envoy keeps a property under `wasm.` in the stream's filter state (WINNER_RULE); a
        // refused call leaves the access log's field empty, nothing else.
        let rule = winner.rule;
        // SAFETY: both pointers and sizes are those of live `&str`s.
        unsafe {
            proxy_set_property(
                WINNER_PROPERTY.as_ptr(),
                WINNER_PROPERTY.len(),
                rule.as_ptr(),
                rule.len(),
            )
        };
        self.series = METER.with(|meter| Some(meter.try_borrow_mut().ok()?.book.winner_id(winner, &self.table)));
    }

    fn now_ms(&self) -> u64 {
        self.arrived_ns.or_else(now_ns).map_or(0, |ns| ns / 1_000_000)
    }
}

/// A rate limit's counts in the host's shared data, written with its version: the worker VMs of
/// one Envoy count together.
impl Counters for HostSharedData {
    fn get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
        match hostcalls::get_shared_data(key).ok()? {
            (Some(value), Some(version)) => Some((value, version)),
            _ => None,
        }
    }

    fn set(&self, key: &str, value: &[u8], version: Option<u32>) -> bool {
        // Envoy's shared data: a version of 0 writes whatever is there; a key not there yet is
        // written with none.
        hostcalls::set_shared_data(key, Some(value), version).is_ok()
    }
}
