//! The event hooks Envoy calls (`envoy_dynamic_module_on_*`), each a thin shell: catch any unwind
//! (a panic never crosses into Envoy: the hook answers a safe default instead), turn pointers into
//! the module's state, call the shared request logic.
//!
//! The HTTP filter's hooks (`on_http_filter_*`) and the cluster specifier's
//! (`on_cluster_specifier_*`, [`crate::cluster_specifier`]) are both here: one `.so` serves either
//! extension, or both together.
//!
//! Envoy 1.40 refuses a module that lacks any of the HTTP filter's required hooks, so the ones
//! Switchyard has no use for (bodies, trailers, callouts, scheduling, watermarks) are exported too,
//! answering "continue" or doing nothing.

use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use switchyard_table::compact::Miniz;
use switchyard_table::format::{HSTS_HEADER, RULE_NAME_HEADER};

use crate::abi::{
    self, ClusterSpecifierConfigEnvoyPtr, ConfigEnvoyPtr, EnvoyBuffer, FilterEnvoyPtr, FilterStatus, HttpHeader,
    ModuleBuffer, SelectionEnvoyPtr, ABI_VERSION, CONTINUE, RESPONSE_HEADER, STOP_AND_BUFFER, STOP_ITERATION,
};
use crate::auth_callout;
use crate::cluster_specifier::ClusterSpecifier;
use crate::envoy_host::{read_headers, ActionsHost, EnvoyHost};
use crate::request::{Followup, Outcome};
use crate::resource_metrics;
use crate::state::{next_random, Counted, ModuleConfig, Stream};
use switchyard_request::meter::Ended;

/// Runs `hook`, answering `default` if it panics (the panic hook has logged it).
fn guarded<T>(default: T, hook: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(hook)).unwrap_or(default)
}

/// Runs `hook` on `object`, one of the module's objects that Envoy hands back to a hook (a
/// configuration, a stream, a cluster specifier), answering `default` for none (a null pointer) or
/// if the hook panics.
fn guarded_on<T, R: Copy>(object: Option<&T>, default: R, hook: impl FnOnce(&T) -> R) -> R {
    guarded(default, || object.map_or(default, hook))
}

/// Called once when Envoy loads the module: refuses an Envoy that lacks a callback the module
/// calls (null: Envoy refuses the module, rather than fail at that callback's first call), installs
/// the panic hook (a panic is logged through Envoy at critical level; the hook that panicked answers
/// its safe default) and answers the ABI version.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_program_init() -> *const c_char {
    guarded(std::ptr::null(), || {
        if let Some(missing) = abi::missing_callback() {
            // Envoy's log may be among what is missing: stderr, where Envoy logs by default.
            eprintln!(
                "switchyard: this Envoy has no {}: libswitchyard_module.so is built for Envoy 1.40's dynamic-module \
                 ABI ({}) and loads in Envoy 1.40 and 1.41",
                missing.to_string_lossy(),
                ABI_VERSION.to_string_lossy()
            );
            return std::ptr::null();
        }
        // Not in native tests, whose panics must reach the test harness's output.
        #[cfg(not(test))]
        std::panic::set_hook(Box::new(|info| {
            abi::log(abi::LOG_CRITICAL, &format!("switchyard: panic: {info}"))
        }));
        ABI_VERSION.as_ptr()
    })
}

/// A filter configuration: decodes and indexes the table (`filter_config`); null refuses it.
///
/// # Safety
/// Envoy's contract: the buffers are valid for the call.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_config_new(
    config_envoy: ConfigEnvoyPtr,
    name: EnvoyBuffer,
    config: EnvoyBuffer,
) -> *const c_void {
    guarded(std::ptr::null(), || {
        // SAFETY: Envoy's buffers, valid during this call, which is all `load` needs them for.
        let (name, bytes) = unsafe { (name.bytes(), config.bytes()) };
        let name = String::from_utf8_lossy(name);
        // SAFETY: `config_envoy` is the configuration Envoy is creating in this very call.
        match unsafe { ModuleConfig::load(config_envoy, &name, bytes) } {
            Some(state) => Box::into_raw(Box::new(state)) as *const c_void,
            None => std::ptr::null(),
        }
    })
}

/// The configuration is gone: its table goes with it (once no stream uses it; Envoy guarantees so).
///
/// # Safety
/// `config` is a pointer `on_http_filter_config_new` returned, destroyed once.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_config_destroy(config: *const c_void) {
    guarded((), || {
        // SAFETY: the pointer came from `Box::into_raw` in `config_new` and is destroyed once.
        unsafe { drop_boxed::<ModuleConfig>(config) }
    })
}

/// A new HTTP stream of `config`.
///
/// # Safety
/// `config` is a live pointer `on_http_filter_config_new` returned.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_new(
    config: *const c_void,
    _filter_envoy: FilterEnvoyPtr,
) -> *const c_void {
    guarded(std::ptr::null(), || {
        if config.is_null() {
            return std::ptr::null();
        }
        let stream = Stream {
            config: config as *const ModuleConfig,
            rule: std::cell::Cell::new(None),
            followup: std::cell::Cell::new(Followup::default()),
            auth: std::cell::Cell::new(None),
            series: std::cell::Cell::new(None),
            held: std::cell::Cell::new(None),
        };
        Box::into_raw(Box::new(stream)) as *const c_void
    })
}

/// The stream is gone.
///
/// # Safety
/// `stream` is a pointer `on_http_filter_new` returned, destroyed once.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_destroy(stream: *const c_void) {
    guarded((), || {
        // SAFETY: the pointer came from `Box::into_raw` in `filter_new` and is destroyed once.
        unsafe { drop_boxed::<Stream>(stream) }
    })
}

/// The request's headers: route it (ROUTING.md §5), as the wasm filter does.
///
/// # Safety
/// Envoy's contract: `filter_envoy` is this stream's, `stream` what `on_http_filter_new` returned.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_headers(
    filter_envoy: FilterEnvoyPtr,
    stream: *const c_void,
    _end_of_stream: bool,
) -> FilterStatus {
    // SAFETY: `stream` came from `filter_new` and lives until `filter_destroy`; its
    // configuration outlives every stream it created (Envoy holds it for them).
    let stream = unsafe { stream.cast::<Stream>().as_ref() };
    guarded_on(stream, CONTINUE, |stream| {
        let Some(config) = (unsafe { stream.config.as_ref() }) else {
            return CONTINUE;
        };
        // SAFETY: `filter_envoy` is this hook's; the host lives only during the hook.
        let envoy = unsafe { EnvoyHost::new(filter_envoy) };
        let table = &config.table;
        // Beside the cluster specifier the route match picked the cluster: no cluster header, and
        // the route is not picked again (that would match the rewritten request).
        let started = std::time::Instant::now();
        let (handled, repick) = if config.published.is_some() {
            let mut host = ActionsHost::new(envoy, table.head().cluster_header());
            let handled = table.handle(&mut host, next_random(), &Miniz);
            stream.series.set(host.envoy.series.map(|series| (series, started)));
            (handled, None)
        } else {
            let mut host = envoy;
            let handled = table.handle(&mut host, next_random(), &Miniz);
            stream.series.set(host.series.map(|series| (series, started)));
            (handled, host.changed.then_some(host))
        };
        if let Some(error) = &handled.error {
            abi::log(abi::LOG_ERROR, &format!("a request could not be routed: {error}"));
        }
        let (outcome, rule) = (handled.outcome, handled.rule);
        let mut response = handled.response;
        stream.held.set(response.held.take());
        let auth = response.auth.take();
        stream.followup.set(response);
        let metrics = &config.metrics;
        // SAFETY (every `count` below): `filter_envoy` is this hook's stream, of `config`.
        let status = match outcome {
            Outcome::Routed { .. } => {
                unsafe { metrics.count(filter_envoy, Counted::Routed) };
                if table.head().debug_rule_header() {
                    stream.rule.set(rule);
                }
                CONTINUE
            }
            Outcome::ClusterNotSet { .. } => {
                unsafe { metrics.count(filter_envoy, Counted::RouteFailed) };
                config.log_route_failure(rule.as_ref());
                CONTINUE
            }
            Outcome::Passed => {
                unsafe { metrics.count(filter_envoy, Counted::NotRouted) };
                CONTINUE
            }
            Outcome::NotFound => {
                unsafe { metrics.count(filter_envoy, Counted::NotRouted) };
                STOP_ITERATION
            }
            Outcome::Direct { .. } => {
                unsafe { metrics.count(filter_envoy, Counted::Direct) };
                STOP_ITERATION
            }
        };
        if let (CONTINUE, Some(call)) = (status, auth) {
            // The route is picked again once the auth service lets the request on.
            // SAFETY: this hook's filter and stream, of `config`.
            return unsafe { auth_callout::ask(filter_envoy, (stream, config), call, repick.is_some()) };
        }
        if let (CONTINUE, Some(host)) = (status, repick) {
            host.clear_route_cache();
        }
        status
    })
}

/// The response's headers: the winning rule's name when the table asks for it.
///
/// # Safety
/// As `on_http_filter_request_headers`.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_response_headers(
    filter_envoy: FilterEnvoyPtr,
    stream: *const c_void,
    _end_of_stream: bool,
) -> FilterStatus {
    // SAFETY: as in `request_headers`.
    let stream = unsafe { stream.cast::<Stream>().as_ref() };
    guarded_on(stream, CONTINUE, |stream| {
        let Followup {
            hsts,
            set_cookie,
            cors,
            auth_cookies,
            ..
        } = stream.followup.take();
        if let Some(auth_cookies) = auth_cookies {
            // SAFETY: this hook's stream; `fill` gets an array of the length Envoy reported.
            let response = unsafe {
                read_headers(
                    abi::envoy_dynamic_module_callback_http_get_headers_size(filter_envoy, RESPONSE_HEADER),
                    |array| abi::envoy_dynamic_module_callback_http_get_headers(filter_envoy, RESPONSE_HEADER, array),
                )
            };
            let status = response
                .iter()
                .find(|(n, _)| *n == ":status")
                .and_then(|(_, v)| v.parse().ok());
            for cookie in auth_cookies.for_status(status.unwrap_or(0)) {
                // SAFETY: this hook's stream; both buffers lend live `&str`s for the call.
                unsafe {
                    abi::envoy_dynamic_module_callback_http_add_header(
                        filter_envoy,
                        RESPONSE_HEADER,
                        ModuleBuffer::of("set-cookie"),
                        ModuleBuffer::of(cookie),
                    );
                }
            }
        }
        // Unless the gateway's route adds them (docs/routing.md, "CORS"): beside the cluster
        // specifier the route was matched before the table's, so its route adds none.
        // SAFETY: the stream's configuration outlives it (as in `request_headers`).
        let beside_specifier = (unsafe { stream.config.as_ref() }).is_some_and(|config| config.published.is_some());
        if let Some(cors) = cors.filter(|cors| !cors.added_by_route() || beside_specifier) {
            cors.each(|name, value| {
                // SAFETY: this hook's stream; both buffers lend live `&str`s for the call.
                unsafe {
                    abi::envoy_dynamic_module_callback_http_set_header(
                        filter_envoy,
                        RESPONSE_HEADER,
                        ModuleBuffer::of(name),
                        ModuleBuffer::of(value),
                    );
                }
            });
        }
        if let Some(value) = hsts {
            // SAFETY: this hook's stream; both buffers lend live `&str`s for the call.
            unsafe {
                abi::envoy_dynamic_module_callback_http_set_header(
                    filter_envoy,
                    RESPONSE_HEADER,
                    ModuleBuffer::of(HSTS_HEADER),
                    ModuleBuffer::of(value.as_str()),
                );
            }
        }
        if let Some(cookie) = set_cookie {
            // Added beside the upstream's own cookies, never in their place.
            // SAFETY: as above.
            unsafe {
                abi::envoy_dynamic_module_callback_http_add_header(
                    filter_envoy,
                    RESPONSE_HEADER,
                    ModuleBuffer::of("set-cookie"),
                    ModuleBuffer::of(cookie.as_str()),
                );
            }
        }
        let (Some(rule), Some(config)) = (stream.rule.take(), unsafe { stream.config.as_ref() }) else {
            return CONTINUE;
        };
        if let Some(name) = rule.name(config.table.head()) {
            // SAFETY: this hook's stream; both buffers lend live `&str`s for the call.
            unsafe {
                abi::envoy_dynamic_module_callback_http_set_header(
                    filter_envoy,
                    RESPONSE_HEADER,
                    ModuleBuffer::of(RULE_NAME_HEADER),
                    ModuleBuffer::of(name),
                );
            }
        }
        CONTINUE
    })
}

// ---- the cluster specifier (crate::cluster_specifier) ----------------------------------------

/// A route's cluster specifier configuration: it follows the table of the filter its
/// `specifier_name` names (`name`); its `specifier_config` must be empty (the table is the filter's).
/// Null refuses it.
///
/// # Safety
/// Envoy's contract: the buffers are valid for the call.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_cluster_specifier_config_new(
    _config_envoy: ClusterSpecifierConfigEnvoyPtr,
    name: EnvoyBuffer,
    config: EnvoyBuffer,
) -> *const c_void {
    guarded(std::ptr::null(), || {
        // SAFETY: Envoy's buffers, valid during this call.
        let (name, config) = unsafe { (name.bytes(), config.bytes()) };
        let name = String::from_utf8_lossy(name);
        if !config.is_empty() {
            abi::log(
                abi::LOG_ERROR,
                &format!(
                    "cluster specifier {name:?} refused: it takes no specifier_config; it routes by the table of the \
                     module's filter whose filter_name is its specifier_name"
                ),
            );
            return std::ptr::null();
        }
        Box::into_raw(Box::new(ClusterSpecifier::new(&name))) as *const c_void
    })
}

/// The specifier's configuration is gone.
///
/// # Safety
/// `config` is a pointer `on_cluster_specifier_config_new` returned, destroyed once.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_cluster_specifier_config_destroy(config: *const c_void) {
    guarded((), || {
        // SAFETY: the pointer came from `Box::into_raw` in `cluster_specifier_config_new`.
        unsafe { drop_boxed::<ClusterSpecifier>(config) }
    })
}

/// One request's route match reached a route of this specifier: pick its cluster. `false` leaves
/// the route without a decision (the filter beside answers the request, or Envoy finds no cluster).
///
/// # Safety
/// `config` is a live pointer `on_cluster_specifier_config_new` returned; `selection` is Envoy's
/// for this call.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_cluster_specifier_select(
    config: *const c_void,
    selection: SelectionEnvoyPtr,
) -> bool {
    // SAFETY: Envoy keeps the configuration alive while its routes are in use.
    let specifier = unsafe { config.cast::<ClusterSpecifier>().as_ref() };
    guarded_on(specifier, false, |specifier| {
        // SAFETY: this hook's selection.
        unsafe { specifier.select(selection) }
    })
}

// ---- hooks Envoy requires and Switchyard has no use for -------------------------------------

/// Request body: continue, but while the auth service decides: then it waits in Envoy's buffer
/// (continuing would send the request on).
///
/// # Safety
/// As `on_http_filter_request_headers`.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_body(
    _filter_envoy: FilterEnvoyPtr,
    stream: *const c_void,
    _end_of_stream: bool,
) -> FilterStatus {
    // SAFETY: as in `request_headers`.
    let stream = unsafe { stream.cast::<Stream>().as_ref() };
    guarded_on(stream, CONTINUE, |stream| {
        let pending = stream.auth.take();
        let status = if pending.is_some() { STOP_AND_BUFFER } else { CONTINUE };
        stream.auth.set(pending);
        status
    })
}

/// Request trailers: continue.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_request_trailers(
    _filter_envoy: FilterEnvoyPtr,
    _stream: *const c_void,
) -> FilterStatus {
    CONTINUE
}

/// Response body: continue.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_response_body(
    _filter_envoy: FilterEnvoyPtr,
    _stream: *const c_void,
    _end_of_stream: bool,
) -> FilterStatus {
    CONTINUE
}

/// Response trailers: continue.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_response_trailers(
    _filter_envoy: FilterEnvoyPtr,
    _stream: *const c_void,
) -> FilterStatus {
    CONTINUE
}

/// The stream is complete: its request is counted in its resource's metrics (the stream's state
/// goes in `filter_destroy`).
///
/// # Safety
/// As `on_http_filter_request_headers`.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_stream_complete(
    filter_envoy: FilterEnvoyPtr,
    stream: *const c_void,
) {
    // SAFETY: as in `on_http_filter_request_headers`.
    let stream = unsafe { stream.cast::<Stream>().as_ref() };
    guarded_on(stream, (), |stream| {
        let Some((series, started)) = stream.series.take() else {
            return;
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        // SAFETY: `filter_envoy` is this hook's stream.
        let code = unsafe { resource_metrics::response_code(filter_envoy) };
        resource_metrics::count(series, Ended::new(code, duration_ms));
    })
}

/// An HTTP callout finished: the auth service's answer ([`auth_callout::answered`]); `result` 0
/// is a response, another a failure (a reset, an answer too large).
///
/// # Safety
/// Envoy's contract: `filter_envoy` and `stream` are the stream's, `headers` its `headers_size`
/// live headers.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_http_callout_done(
    filter_envoy: FilterEnvoyPtr,
    stream: *const c_void,
    callout_id: u64,
    result: u32,
    headers: *const HttpHeader,
    headers_size: usize,
    _body_chunks: *const EnvoyBuffer,
    _body_chunks_size: usize,
) {
    // SAFETY: as in `request_headers`.
    let stream = unsafe { stream.cast::<Stream>().as_ref() };
    guarded_on(stream, (), |stream| {
        // SAFETY: Envoy's, for this hook.
        unsafe { auth_callout::answered(filter_envoy, stream, (callout_id, result == 0), (headers, headers_size)) }
    })
}

/// A callout stream's headers: the module starts none.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_headers(
    _filter_envoy: FilterEnvoyPtr,
    _stream: *const c_void,
    _stream_id: u64,
    _headers: *const HttpHeader,
    _headers_size: usize,
    _end_stream: bool,
) {
}

/// A callout stream's data: the module starts none.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_data(
    _filter_envoy: FilterEnvoyPtr,
    _stream: *const c_void,
    _stream_id: u64,
    _data: *const EnvoyBuffer,
    _data_count: usize,
    _end_stream: bool,
) {
}

/// A callout stream's trailers: the module starts none.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_trailers(
    _filter_envoy: FilterEnvoyPtr,
    _stream: *const c_void,
    _stream_id: u64,
    _trailers: *const HttpHeader,
    _trailers_size: usize,
) {
}

/// A callout stream completed: the module starts none.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_complete(
    _filter_envoy: FilterEnvoyPtr,
    _stream: *const c_void,
    _stream_id: u64,
) {
}

/// A callout stream was reset: the module starts none.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_reset(
    _filter_envoy: FilterEnvoyPtr,
    _stream: *const c_void,
    _stream_id: u64,
    _reason: u32,
) {
}

/// A configuration's scheduled event, on Envoy's main thread: its [`resource_metrics::Flusher`]'s,
/// which hands Envoy what the workers counted.
///
/// # Safety
/// Envoy's contract: `config_envoy` is the configuration `config` was made for, both live.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_config_scheduled(
    config_envoy: ConfigEnvoyPtr,
    config: *const c_void,
    _event_id: u64,
) {
    // SAFETY: Envoy's contract: `config` came from `config_new` and is live.
    let config = unsafe { config.cast::<ModuleConfig>().as_ref() };
    guarded_on(config, (), |config| {
        // SAFETY: on the main thread, the configuration that defined the metrics.
        unsafe { config.resource_metrics.flush(config_envoy) };
    })
}

/// A stream's scheduled event: the module schedules none.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_scheduled(
    _filter_envoy: FilterEnvoyPtr,
    _stream: *const c_void,
    _event_id: u64,
) {
}

/// Downstream write buffer above its high watermark: the module is not a terminal filter.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_downstream_above_write_buffer_high_watermark(
    _filter_envoy: FilterEnvoyPtr,
    _stream: *const c_void,
) {
}

/// Downstream write buffer below its low watermark: the module is not a terminal filter.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_downstream_below_write_buffer_low_watermark(
    _filter_envoy: FilterEnvoyPtr,
    _stream: *const c_void,
) {
}

/// Drops the `T` a hook handed Envoy as `Box::into_raw` (nothing for null).
///
/// # Safety
/// `pointer` is null or came from `Box::into_raw` of a `Box<T>`, and is dropped once.
unsafe fn drop_boxed<T>(pointer: *const c_void) {
    if !pointer.is_null() {
        // SAFETY: the caller's contract.
        drop(unsafe { Box::from_raw(pointer as *mut T) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(bytes: &[u8]) -> EnvoyBuffer {
        EnvoyBuffer {
            ptr: bytes.as_ptr(),
            length: bytes.len(),
        }
    }

    #[test]
    fn a_panicking_hook_answers_its_default_instead_of_unwinding_into_envoy() {
        assert_eq!(guarded(CONTINUE, || panic!("boom")), CONTINUE);
        assert_eq!(guarded(STOP_ITERATION, || CONTINUE), CONTINUE);
    }

    #[test]
    fn program_init_answers_the_abi_version() {
        let version = envoy_dynamic_module_on_program_init();
        // SAFETY: a pointer to the static, NUL-terminated ABI version.
        assert_eq!(unsafe { std::ffi::CStr::from_ptr(version) }, ABI_VERSION);
    }

    #[test]
    fn a_good_table_gives_a_configuration_and_a_bad_one_none() {
        let good = br#"{"version":1,"rules":[{"name":"a#0","path":{"type":"prefix","value":"/"},
            "action":{"route":{"backends":[{"cluster":"p/a:80"}]}}}]}"#;
        let name = buffer(b"switchyard");
        // SAFETY: the buffers are live for the calls; the configuration is destroyed once.
        unsafe {
            let config = envoy_dynamic_module_on_http_filter_config_new(std::ptr::null_mut(), name, buffer(good));
            assert!(!config.is_null());
            let stream = envoy_dynamic_module_on_http_filter_new(config, std::ptr::null_mut());
            assert!(!stream.is_null());
            envoy_dynamic_module_on_http_filter_destroy(stream);
            envoy_dynamic_module_on_http_filter_config_destroy(config);
            for bad in [
                &b""[..],
                b"{}",
                b"not json",
                br#"{"version":1,"rules":[{"name":"a#0"}]}"#,
            ] {
                let config = envoy_dynamic_module_on_http_filter_config_new(std::ptr::null_mut(), name, buffer(bad));
                assert!(config.is_null(), "{}", String::from_utf8_lossy(bad));
            }
        }
    }
}
