//! The simulator: one module instance driven through the lifecycle Envoy gives it. Loading
//! instantiates the module and runs `_initialize` (or `_start`); the first configuration (or
//! request) creates the root context and calls `proxy_on_vm_start` with the VM configuration;
//! [`Sim::configure`] calls `proxy_on_configure` with the plugin configuration. Each
//! [`Sim::request`] then creates a stream context on the same instance and runs request headers,
//! body and trailers (when given), response headers and body, then `proxy_on_log`,
//! `proxy_on_done` and `proxy_on_delete`, honouring pauses: a paused phase goes on only when the
//! module calls `proxy_continue_stream`, typically from `proxy_on_http_call_response` once the
//! test's responder answered its call. Queue notifications are delivered after each call returns;
//! ticks happen when the test asks.

use crate::engine::{self, Loaded};
use crate::error::SimError;
use crate::host::ProcExit;
use crate::outcome::{
    Action, LogEntry, LogLevel, MetricKind, MetricValue, Metrics, Outcome, Phase, PhaseAction, RouteCacheClears,
};
use crate::request::{HttpCallResponse, Request};
use crate::state::{Callout, GrpcCall, HeaderMap, Host, HttpCall, Shared, Stream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wasmtime::{Instance, Store, TypedFunc, WasmParams, WasmResults};

/// Which export a call goes to.
type Pick<P, R> = fn(&Exports) -> Option<&TypedFunc<P, R>>;

/// `proxy_on_http_call_response`'s parameters.
type CallResponseArgs = (i32, i32, i32, i32, i32);

type Responder = Box<dyn FnMut(&HttpCall) -> Option<HttpCallResponse> + Send>;

/// The module's entry points host-sim calls (those it does not export are skipped).
struct Exports {
    context_create: Option<TypedFunc<(i32, i32), ()>>,
    vm_start: Option<TypedFunc<(i32, i32), i32>>,
    configure: Option<TypedFunc<(i32, i32), i32>>,
    tick: Option<TypedFunc<i32, ()>>,
    queue_ready: Option<TypedFunc<(i32, i32), ()>>,
    request_headers: Option<TypedFunc<(i32, i32, i32), i32>>,
    request_body: Option<TypedFunc<(i32, i32, i32), i32>>,
    request_trailers: Option<TypedFunc<(i32, i32), i32>>,
    response_headers: Option<TypedFunc<(i32, i32, i32), i32>>,
    response_body: Option<TypedFunc<(i32, i32, i32), i32>>,
    log: Option<TypedFunc<i32, ()>>,
    done: Option<TypedFunc<i32, i32>>,
    delete: Option<TypedFunc<i32, ()>>,
    /// (context, token, headers, body size, trailers)
    http_call_response: Option<TypedFunc<CallResponseArgs, ()>>,
    grpc_receive: Option<TypedFunc<(i32, i32, i32), ()>>,
    grpc_close: Option<TypedFunc<(i32, i32, i32), ()>>,
}

/// A proxy-wasm module running in a simulated Envoy. See the crate documentation.
pub struct Sim {
    loaded: Arc<Loaded>,
    store: Store<Host>,
    exports: Arc<Exports>,
    root_id: u32,
    next_context: u32,
    started: bool,
    vm_started: bool,
    configured: bool,
    crashed: Option<String>,
    delivering: bool,
    /// Logs from outside requests (start, configure, ticks), kept until taken.
    logs: Vec<LogEntry>,
    responder: Option<Responder>,
    /// Whether each request's [`Outcome`] carries every metric ([`Sim::without_metrics_in_outcomes`]).
    metrics_in_outcomes: bool,
}

impl Sim {
    /// Loads (compiling once per process) and instantiates the module at `path`, and runs its
    /// initialization. Fails with a clear [`SimError`] when the file is not a proxy-wasm 0.2.x
    /// module, imports something host-sim lacks (every such import is listed), or traps.
    pub fn load(path: impl AsRef<Path>) -> Result<Sim, SimError> {
        Sim::instantiate(engine::load(path.as_ref())?, Arc::new(Mutex::new(Shared::default())))
    }

    /// Another instance of the same module sharing this one's shared data and queues, as the VMs
    /// of Envoy's worker threads do; it has its own contexts, metrics, clock and logs, the same VM
    /// configuration, environment and properties, and is started and configured on its own.
    pub fn sibling(&self) -> Result<Sim, SimError> {
        let host = self.store.data();
        let mut sim = Sim::instantiate(self.loaded.clone(), host.shared.clone())?;
        let vm_config = host.vm_config.clone();
        let env = host.env.clone();
        let properties = host.properties.clone();
        let (log_level, now_ns, monotonic_ns) = (host.log_level, host.now_ns, host.monotonic_ns);
        let sibling = sim.store.data_mut();
        sibling.vm_config = vm_config;
        sibling.env = env;
        sibling.properties = properties;
        sibling.log_level = log_level;
        sibling.now_ns = now_ns;
        sibling.monotonic_ns = monotonic_ns;
        Ok(sim)
    }

    fn instantiate(loaded: Arc<Loaded>, shared: Arc<Mutex<Shared>>) -> Result<Sim, SimError> {
        let mut store = Store::new(engine::engine(), Host::new(shared));
        let path = loaded.path.clone();
        let instance = loaded
            .pre
            .instantiate(&mut store)
            .map_err(|e| trap(&path, "instantiation", &e))?;
        let exports = Exports::find(&instance, &mut store, &path)?;
        let memory = instance
            .get_memory(&mut store, "memory")
            .ok_or_else(|| bad_export(&path, "memory", "is missing: a proxy-wasm module exports its memory"))?;
        let allocate = ["proxy_on_memory_allocate", "malloc"]
            .iter()
            .find_map(|name| typed::<i32, i32>(&instance, &mut store, &path, name).transpose())
            .transpose()?
            .ok_or_else(|| bad_export(&path, "proxy_on_memory_allocate", "is missing (nor is there a malloc)"))?;
        store.data_mut().memory = Some(memory);
        store.data_mut().allocate = Some(Arc::new(allocate));
        for name in ["_initialize", "_start"] {
            if let Some(init) = typed::<(), ()>(&instance, &mut store, &path, name)? {
                match init.call(&mut store, ()) {
                    Ok(()) => {}
                    Err(e) if e.downcast_ref::<ProcExit>() == Some(&ProcExit(0)) => {}
                    Err(e) => return Err(trap(&path, name, &e)),
                }
                break;
            }
        }
        Ok(Sim {
            loaded,
            store,
            exports: Arc::new(exports),
            root_id: 1,
            next_context: 2,
            started: false,
            vm_started: false,
            configured: false,
            metrics_in_outcomes: true,
            crashed: None,
            delivering: false,
            logs: Vec::new(),
            responder: None,
        })
    }

    /// The names the module exports, in the module's order (what a host can find in it).
    pub fn exports(&self) -> Vec<String> {
        self.loaded
            .pre
            .module()
            .exports()
            .map(|e| e.name().to_string())
            .collect()
    }

    /// The module's file.
    pub fn path(&self) -> &Path {
        &self.loaded.path
    }

    /// Sets the VM configuration `proxy_on_vm_start` will read; effective before the VM starts
    /// (the first `configure`, `request` or `tick`).
    pub fn vm_config(&mut self, bytes: impl Into<Vec<u8>>) -> &mut Self {
        self.store.data_mut().vm_config = bytes.into();
        self
    }

    /// Adds a WASI environment variable.
    pub fn env(&mut self, key: &str, value: &str) -> &mut Self {
        self.store.data_mut().env.push((key.to_string(), value.to_string()));
        self
    }

    /// Seeds `random_get` (the default seed is fixed, so runs are reproducible anyway).
    pub fn seed(&mut self, seed: u64) -> &mut Self {
        self.store.data_mut().rng = seed;
        self
    }

    /// Leaves the metrics out of each request's [`Outcome`] ([`Sim::metrics`] still has them): a
    /// request then costs no copy of every metric, which matters when a test sends many requests
    /// and the module defines many metrics (a series per resource).
    pub fn without_metrics_in_outcomes(&mut self) -> &mut Self {
        self.metrics_in_outcomes = false;
        self
    }

    /// The lowest level logged (and reported by `proxy_get_log_level`); `Trace` by default.
    pub fn log_level(&mut self, level: LogLevel) -> &mut Self {
        self.store.data_mut().log_level = level;
        self
    }

    /// Answers `NotFound` for the foreign function `name` (`uncompress`, `clear_route_cache`), as a
    /// proxy that does not register it would: host-sim otherwise provides Envoy's.
    pub fn without_foreign_function(&mut self, name: &str) -> &mut Self {
        self.store.data_mut().withheld_foreign.push(name.to_string());
        self
    }

    /// Sets a property for every request (dotted path, e.g. `node.id`).
    pub fn property(&mut self, path: &str, value: impl Into<Vec<u8>>) -> &mut Self {
        self.store.data_mut().properties.insert(path.to_string(), value.into());
        self
    }

    /// Installs the answer to HTTP calls: called for each call the module dispatches while a
    /// request runs; `None` leaves the call unanswered (the request stays paused).
    pub fn on_http_call(
        &mut self,
        responder: impl FnMut(&HttpCall) -> Option<HttpCallResponse> + Send + 'static,
    ) -> &mut Self {
        self.responder = Some(Box::new(responder));
        self
    }

    /// Starts the VM if it has not started: the root context and `proxy_on_vm_start`. Returns
    /// what `proxy_on_vm_start` answered.
    pub fn start(&mut self) -> bool {
        if !self.started {
            self.started = true;
            let root = self.root_id;
            self.call(
                "proxy_on_context_create",
                root,
                |e| e.context_create.as_ref(),
                (root as i32, 0),
            );
            let size = self.store.data().vm_config.len() as i32;
            self.vm_started = self
                .call("proxy_on_vm_start", root, |e| e.vm_start.as_ref(), (root as i32, size))
                .map_or(self.exports.vm_start.is_none() && self.crashed.is_none(), |ok| ok != 0);
            self.keep_logs();
        }
        self.vm_started
    }

    /// Gives the module a plugin configuration (`proxy_on_configure`), starting the VM first if
    /// needed. Returns whether the module accepted it; a module that traps refuses.
    pub fn configure(&mut self, bytes: impl Into<Vec<u8>>) -> bool {
        let bytes = bytes.into();
        let size = bytes.len() as i32;
        self.configure_saying_size(bytes, size)
    }

    /// [`Sim::configure`], telling the module the configuration's size is `size` (a host may say 0
    /// and still hand the buffer over whole).
    pub fn configure_saying_size(&mut self, bytes: impl Into<Vec<u8>>, size: i32) -> bool {
        if !self.start() {
            self.configured = false;
            return false;
        }
        self.store.data_mut().plugin_config = bytes.into();
        self.store.data_mut().plugin_config_read = 0;
        let root = self.root_id;
        let accepted = match self.call(
            "proxy_on_configure",
            root,
            |e| e.configure.as_ref(),
            (root as i32, size),
        ) {
            Some(ok) => ok != 0,
            None => self.exports.configure.is_none() && self.crashed.is_none(),
        };
        self.keep_logs();
        self.configured = accepted;
        accepted
    }

    /// The size of the module's linear memory in bytes (it never shrinks: the peak so far, as the
    /// resident memory a proxy's VM keeps for it).
    pub fn memory_bytes(&self) -> usize {
        let host = self.store.data();
        host.memory.map_or(0, |memory| memory.data_size(&self.store))
    }

    /// How many bytes of the last plugin configuration the module read (`proxy_get_buffer_bytes`,
    /// summed over its reads): a module may read its configuration by ranges.
    pub fn plugin_config_read(&self) -> usize {
        self.store.data().plugin_config_read
    }

    /// Whether the last configuration was accepted.
    pub fn configured(&self) -> bool {
        self.configured
    }

    /// Runs one request through the whole lifecycle on this instance.
    pub fn request(&mut self, request: Request) -> Outcome {
        self.request_ref(&request)
    }

    /// [`Sim::request`] for a request the caller keeps (to send it again).
    pub fn request_ref(&mut self, request: &Request) -> Outcome {
        self.start();
        self.run_pending();
        self.keep_logs();
        let context = self.next_context;
        self.next_context = self.next_context.checked_add(1).unwrap_or(2);
        let mut stream = Stream {
            context_id: context,
            ..Stream::default()
        };
        stream.request_headers = HeaderMap(request.headers());
        stream.request_body = request.body.clone();
        stream.request_trailers = HeaderMap(request.trailers.clone());
        stream.properties = request.properties.iter().cloned().collect();
        self.store.data_mut().stream = Some(stream);
        let crashed_before = self.crashed.is_some();
        let ctx = context as i32;

        self.call(
            "proxy_on_context_create",
            context,
            |e| e.context_create.as_ref(),
            (ctx, self.root_id as i32),
        );
        let mut phases = Vec::new();
        let has_body = request.body.is_some();
        let has_trailers = !request.trailers.is_empty();

        // Request headers, body, trailers.
        let n = self.stream().request_headers.0.len() as i32;
        let eos = !has_body && !has_trailers;
        let first = self.phase(
            &mut phases,
            Phase::RequestHeaders,
            context,
            |e| e.request_headers.as_ref(),
            (ctx, n, eos as i32),
        );
        let mut going = self.settle(first, true);
        if going && has_body {
            let size = request.body.as_ref().map_or(0, Vec::len) as i32;
            let a = self.phase(
                &mut phases,
                Phase::RequestBody,
                context,
                |e| e.request_body.as_ref(),
                (ctx, size, !has_trailers as i32),
            );
            going = self.settle(a, true);
        }
        if going && has_trailers {
            let n = request.trailers.len() as i32;
            let a = self.phase(
                &mut phases,
                Phase::RequestTrailers,
                context,
                |e| e.request_trailers.as_ref(),
                (ctx, n),
            );
            going = self.settle(a, true);
        }
        let forwarded = going && self.crashed.is_none();
        self.stream_mut().request_sent = true;

        // The response: the upstream's when forwarded, else the local one.
        let response = if forwarded {
            Some((request.response.headers(), request.response.body.clone()))
        } else {
            self.stream().local_response.as_ref().map(|local| {
                let mut headers = vec![(":status".to_string(), local.status.to_string())];
                headers.extend(local.headers.iter().cloned());
                (headers, Some(local.body.clone()).filter(|b| !b.is_empty()))
            })
        };
        if let Some((headers, body)) = response.filter(|_| self.crashed.is_none()) {
            let n = headers.len() as i32;
            let stream = self.stream_mut();
            stream.response_headers = HeaderMap(headers);
            stream.response_body = body.clone();
            let a = self.phase(
                &mut phases,
                Phase::ResponseHeaders,
                context,
                |e| e.response_headers.as_ref(),
                (ctx, n, body.is_none() as i32),
            );
            if self.settle(a, false) {
                if let Some(body) = body {
                    let size = body.len() as i32;
                    let a = self.phase(
                        &mut phases,
                        Phase::ResponseBody,
                        context,
                        |e| e.response_body.as_ref(),
                        (ctx, size, 1),
                    );
                    self.settle(a, false);
                }
            }
        }

        self.call("proxy_on_log", context, |e| e.log.as_ref(), ctx);
        self.call("proxy_on_done", context, |e| e.done.as_ref(), ctx);
        self.call("proxy_on_delete", context, |e| e.delete.as_ref(), ctx);

        let host = self.store.data_mut();
        let stream = host.stream.take().unwrap_or_default();
        // Envoy cancels a stream's callouts when the stream ends.
        let before = host.http_calls.len();
        host.http_calls.retain(|c| c.context_id != context);
        let pending_http_calls = before - host.http_calls.len();
        let logs = std::mem::take(&mut host.logs);
        let error = match (&self.crashed, crashed_before) {
            (Some(e), true) => Some(format!("the module had already failed: {e}")),
            (Some(e), false) => Some(e.clone()),
            (None, _) => None,
        };
        let request_headers = stream.sent_request_headers.unwrap_or(stream.request_headers).0;
        Outcome {
            configured: self.configured,
            action: phases.first().map_or(Action::Continue, |p: &PhaseAction| p.action),
            phases,
            request_headers,
            forwarded,
            local_response: stream.local_response,
            response_headers: stream.response_headers.0,
            logs,
            metrics: match self.metrics_in_outcomes {
                true => self.metrics(),
                false => Metrics::default(),
            },
            route_cache_clears: RouteCacheClears {
                foreign_function: stream.foreign_clears,
                header_mutations: stream.header_mutation_clears,
            },
            pending_http_calls,
            error,
        }
    }

    /// Fires the tick timer once: advances the clock by the tick period the module set, then
    /// calls `proxy_on_tick` on the root context.
    pub fn tick(&mut self) {
        self.start();
        let period = self.store.data().tick_period_ms;
        self.advance(Duration::from_millis(period as u64));
        let root = self.root_id;
        self.call("proxy_on_tick", root, |e| e.tick.as_ref(), root as i32);
        self.keep_logs();
    }

    /// The tick period the module asked for, if any.
    pub fn tick_period(&self) -> Option<Duration> {
        Some(self.store.data().tick_period_ms)
            .filter(|&p| p > 0)
            .map(|p| Duration::from_millis(p as u64))
    }

    /// Moves the simulated clock (wall and monotonic) forward.
    pub fn advance(&mut self, by: Duration) {
        let host = self.store.data_mut();
        let ns = by.as_nanos().min(u64::MAX as u128) as u64;
        host.now_ns = host.now_ns.saturating_add(ns);
        host.monotonic_ns = host.monotonic_ns.saturating_add(ns);
    }

    /// Sets the simulated wall clock.
    pub fn set_time(&mut self, at: SystemTime) -> &mut Self {
        let ns = at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
            .min(u64::MAX as u128) as u64;
        self.store.data_mut().now_ns = ns;
        self
    }

    /// The simulated wall clock.
    pub fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_nanos(self.store.data().now_ns)
    }

    /// HTTP calls dispatched outside requests (from the root context) and not yet answered.
    pub fn http_calls(&self) -> &[HttpCall] {
        &self.store.data().http_calls
    }

    /// Answers a pending HTTP call (`proxy_on_http_call_response`). False if no such call.
    pub fn respond_http_call(&mut self, token: u32, response: HttpCallResponse) -> bool {
        let host = self.store.data_mut();
        let Some(i) = host.http_calls.iter().position(|c| c.token == token) else {
            return false;
        };
        let call = host.http_calls.remove(i);
        let (nh, size, nt) = (
            response.headers.len() as i32,
            response.body.len() as i32,
            response.trailers.len() as i32,
        );
        host.callout = Some(Callout {
            headers: HeaderMap(response.headers),
            body: response.body,
            trailers: HeaderMap(response.trailers),
        });
        let ctx = call.context_id;
        self.call(
            "proxy_on_http_call_response",
            ctx,
            |e| e.http_call_response.as_ref(),
            (ctx as i32, token as i32, nh, size, nt),
        );
        self.store.data_mut().callout = None;
        if self.store.data().stream.is_none() {
            self.keep_logs();
        }
        true
    }

    /// gRPC calls and streams the module opened and that are still open.
    pub fn grpc_calls(&self) -> &[GrpcCall] {
        &self.store.data().grpc_calls
    }

    /// Ends a gRPC call: status 0 delivers `message` (`proxy_on_grpc_receive`), any other status
    /// closes the call with it (`proxy_on_grpc_close`). False if no such call.
    pub fn respond_grpc_call(&mut self, token: u32, status: u32, message: &[u8]) -> bool {
        let host = self.store.data_mut();
        let Some(i) = host.grpc_calls.iter().position(|c| c.token == token) else {
            return false;
        };
        let call = host.grpc_calls.remove(i);
        let ctx = call.context_id as i32;
        if status == 0 {
            host.callout = Some(Callout {
                body: message.to_vec(),
                ..Callout::default()
            });
            self.call(
                "proxy_on_grpc_receive",
                call.context_id,
                |e| e.grpc_receive.as_ref(),
                (ctx, token as i32, message.len() as i32),
            );
        } else {
            host.grpc_status = (status, String::from_utf8_lossy(message).into_owned());
            self.call(
                "proxy_on_grpc_close",
                call.context_id,
                |e| e.grpc_close.as_ref(),
                (ctx, token as i32, status as i32),
            );
        }
        self.store.data_mut().callout = None;
        self.keep_logs();
        true
    }

    /// A shared-data entry and its CAS token.
    pub fn shared_data(&self, key: &str) -> Option<(Vec<u8>, u32)> {
        self.store.data().shared().data.get(key).cloned()
    }

    /// Writes a shared-data entry as another VM would.
    pub fn set_shared_data(&mut self, key: &str, value: impl Into<Vec<u8>>) {
        let host = self.store.data();
        let mut shared = host.shared();
        shared.next_cas = shared.next_cas.wrapping_add(1).max(1);
        let cas = shared.next_cas;
        shared.data.insert(key.to_string(), (value.into(), cas));
    }

    /// Enqueues an item on a registered queue, as another VM would, and delivers
    /// `proxy_on_queue_ready`. False if no queue has that name.
    pub fn enqueue(&mut self, queue: &str, item: impl Into<Vec<u8>>) -> bool {
        let instance = self.store.data().instance;
        let (id, mine) = {
            let host = self.store.data();
            let mut shared = host.shared();
            let Some(i) = shared.queues.iter().position(|q| q.name == queue) else {
                return false;
            };
            shared.queues[i].items.push_back(item.into());
            let owner = shared.queues[i].owner_instance;
            if owner != instance {
                shared.ready.push((owner, i as u32 + 1));
            }
            (i as u32 + 1, owner == instance)
        };
        if mine {
            self.store.data_mut().ready_queues.push(id);
        }
        self.deliver_queues();
        self.keep_logs();
        true
    }

    /// The items waiting in a queue.
    pub fn queue_items(&self, queue: &str) -> Option<Vec<Vec<u8>>> {
        let host = self.store.data();
        let shared = host.shared();
        shared
            .queues
            .iter()
            .find(|q| q.name == queue)
            .map(|q| q.items.iter().cloned().collect())
    }

    /// One metric's value.
    pub fn metric(&self, name: &str) -> Option<MetricValue> {
        let host = self.store.data();
        let index = *host.metric_ids.get(name)?;
        host.metrics.get(index).map(value_of)
    }

    /// Every metric the module defined, sorted by name.
    pub fn metrics(&self) -> Metrics {
        let host = self.store.data();
        Metrics(
            host.metric_ids
                .values()
                .map(|&i| (host.metrics[i].name.clone(), value_of(&host.metrics[i])))
                .collect(),
        )
    }

    /// Takes the logs written outside requests (VM start, configuration, ticks, queues).
    pub fn take_logs(&mut self) -> Vec<LogEntry> {
        self.keep_logs();
        std::mem::take(&mut self.logs)
    }

    /// Why the module stopped working (it trapped or exited), if it did.
    pub fn error(&self) -> Option<&str> {
        self.crashed.as_deref()
    }

    // ---- calling into the module ----

    fn stream(&self) -> &Stream {
        self.store.data().stream.as_ref().expect("a request is in flight")
    }

    fn stream_mut(&mut self) -> &mut Stream {
        self.store.data_mut().stream.as_mut().expect("a request is in flight")
    }

    fn keep_logs(&mut self) {
        let logs = std::mem::take(&mut self.store.data_mut().logs);
        self.logs.extend(logs);
    }

    fn phase<P: WasmParams>(
        &mut self,
        phases: &mut Vec<PhaseAction>,
        phase: Phase,
        context: u32,
        pick: Pick<P, i32>,
        args: P,
    ) -> Action {
        let exported = pick(&self.exports).is_some();
        let action = self
            .call(phase_export(phase), context, pick, args)
            .map_or(Action::Continue, Action::from_code);
        if exported {
            phases.push(PhaseAction { phase, action });
        }
        action
    }

    /// After a phase: answers the HTTP calls it dispatched (if a responder is installed), then
    /// tells whether the stream goes on: the phase continued or the module resumed it, and it
    /// neither sent a local response nor reset the stream.
    fn settle(&mut self, action: Action, request: bool) -> bool {
        let mut answered = 0;
        while answered < 1000 {
            let Some(responder) = self.responder.as_mut() else {
                break;
            };
            let host = self.store.data();
            let Some(call) = host
                .http_calls
                .iter()
                .find(|c| Some(c.context_id) == host.stream.as_ref().map(|s| s.context_id))
            else {
                break;
            };
            let call = call.clone();
            match responder(&call) {
                Some(response) => {
                    self.respond_http_call(call.token, response);
                    answered += 1;
                }
                None => break,
            }
        }
        if self.crashed.is_some() {
            return false;
        }
        let stream = self.stream_mut();
        if stream.local_response.is_some() || stream.reset {
            return false;
        }
        let resumed = if request {
            &mut stream.resumed_request
        } else {
            &mut stream.resumed_response
        };
        let go = action.continues() || *resumed;
        *resumed = false;
        go
    }

    /// Calls an export (if the module has it) with `context` as the effective context; a trap or
    /// exit marks the simulator failed and is logged.
    fn call<P: WasmParams, R: WasmResults>(
        &mut self,
        name: &str,
        context: u32,
        pick: Pick<P, R>,
        args: P,
    ) -> Option<R> {
        // An Arc, not a clone of the TypedFunc: cloning one clones its registered type (atomics, a lock).
        let exports = Arc::clone(&self.exports);
        let f = pick(&exports)?;
        if self.crashed.is_some() {
            return None;
        }
        self.store.data_mut().effective_context = context;
        match f.call(&mut self.store, args) {
            Ok(r) => {
                self.deliver_queues();
                Some(r)
            }
            Err(e) => {
                let message = describe(&e);
                self.store.data_mut().log(
                    LogLevel::Critical,
                    format!("host-sim: the module failed in {name}: {message}"),
                );
                self.crashed = Some(format!("{name}: {message}"));
                None
            }
        }
    }

    /// Delivers the `proxy_on_queue_ready` notifications sibling simulators posted for this one
    /// (it also happens before each request).
    pub fn run_pending(&mut self) {
        let taken = {
            let host = self.store.data();
            let instance = host.instance;
            let mut shared = host.shared();
            if shared.ready.iter().all(|&(owner, _)| owner != instance) {
                return;
            }
            let (mine, others): (Vec<_>, Vec<_>) = shared.ready.drain(..).partition(|&(owner, _)| owner == instance);
            shared.ready = others;
            mine
        };
        let host = self.store.data_mut();
        for (_, id) in taken {
            if !host.ready_queues.contains(&id) {
                host.ready_queues.push(id);
            }
        }
        self.deliver_queues();
        if self.store.data().stream.is_none() {
            self.keep_logs();
        }
    }

    fn deliver_queues(&mut self) {
        if self.delivering || self.store.data().ready_queues.is_empty() {
            return;
        }
        self.delivering = true;
        for _ in 0..100 {
            let ready = std::mem::take(&mut self.store.data_mut().ready_queues);
            if ready.is_empty() {
                break;
            }
            for id in ready {
                let owner = {
                    let host = self.store.data();
                    let shared = host.shared();
                    (id as usize)
                        .checked_sub(1)
                        .and_then(|i| shared.queues.get(i))
                        .map(|q| q.owner_context)
                };
                if let Some(owner) = owner {
                    self.call(
                        "proxy_on_queue_ready",
                        owner,
                        |e| e.queue_ready.as_ref(),
                        (owner as i32, id as i32),
                    );
                }
            }
        }
        self.delivering = false;
    }
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("path", &self.loaded.path)
            .field("configured", &self.configured)
            .finish_non_exhaustive()
    }
}

fn phase_export(phase: Phase) -> &'static str {
    match phase {
        Phase::RequestHeaders => "proxy_on_request_headers",
        Phase::RequestBody => "proxy_on_request_body",
        Phase::RequestTrailers => "proxy_on_request_trailers",
        Phase::ResponseHeaders => "proxy_on_response_headers",
        Phase::ResponseBody => "proxy_on_response_body",
        Phase::ResponseTrailers => "proxy_on_response_trailers",
    }
}

fn value_of(m: &crate::state::Metric) -> MetricValue {
    match m.kind {
        MetricKind::Counter => MetricValue::Counter(m.value),
        MetricKind::Gauge => MetricValue::Gauge(m.value),
        MetricKind::Histogram => MetricValue::Histogram {
            count: m.value,
            last: m.records.iter().copied().collect(),
        },
    }
}

fn describe(e: &wasmtime::Error) -> String {
    if let Some(exit) = e.downcast_ref::<ProcExit>() {
        return exit.to_string();
    }
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(trap @ wasmtime::Trap::UnreachableCodeReached) => format!("{trap} (a Rust module panicked or aborted)"),
        Some(trap) => trap.to_string(),
        None => format!("{e:#}"),
    }
}

fn trap(path: &Path, call: &str, e: &wasmtime::Error) -> SimError {
    SimError::Trap {
        path: path.to_path_buf(),
        call: call.to_string(),
        message: describe(e),
    }
}

fn bad_export(path: &Path, name: &str, problem: &str) -> SimError {
    SimError::BadExport {
        path: path.to_path_buf(),
        name: name.to_string(),
        problem: problem.to_string(),
    }
}

/// The export `name` with the given signature; `None` when absent, an error when mistyped.
fn typed<P: WasmParams, R: WasmResults>(
    instance: &Instance,
    store: &mut Store<Host>,
    path: &Path,
    name: &str,
) -> Result<Option<TypedFunc<P, R>>, SimError> {
    let Some(func) = instance.get_func(&mut *store, name) else {
        return Ok(None);
    };
    func.typed::<P, R>(&*store)
        .map(Some)
        .map_err(|e| bad_export(path, name, &format!("has an unexpected signature: {e:#}")))
}

impl Exports {
    fn find(instance: &Instance, store: &mut Store<Host>, path: &Path) -> Result<Exports, SimError> {
        Ok(Exports {
            context_create: typed(instance, store, path, "proxy_on_context_create")?,
            vm_start: typed(instance, store, path, "proxy_on_vm_start")?,
            configure: typed(instance, store, path, "proxy_on_configure")?,
            tick: typed(instance, store, path, "proxy_on_tick")?,
            queue_ready: typed(instance, store, path, "proxy_on_queue_ready")?,
            request_headers: typed(instance, store, path, "proxy_on_request_headers")?,
            request_body: typed(instance, store, path, "proxy_on_request_body")?,
            request_trailers: typed(instance, store, path, "proxy_on_request_trailers")?,
            response_headers: typed(instance, store, path, "proxy_on_response_headers")?,
            response_body: typed(instance, store, path, "proxy_on_response_body")?,
            log: typed(instance, store, path, "proxy_on_log")?,
            done: typed(instance, store, path, "proxy_on_done")?,
            delete: typed(instance, store, path, "proxy_on_delete")?,
            http_call_response: typed(instance, store, path, "proxy_on_http_call_response")?,
            grpc_receive: typed(instance, store, path, "proxy_on_grpc_receive")?,
            grpc_close: typed(instance, store, path, "proxy_on_grpc_close")?,
        })
    }
}
