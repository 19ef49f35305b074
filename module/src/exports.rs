//! The event hooks Envoy calls (`envoy_dynamic_module_on_*`), each a thin shell: catch any unwind
//! (a panic never crosses into Envoy: the hook answers a safe default instead), turn pointers into
//! the module's state, call the shared request logic.
//!
//! Envoy 1.40 refuses a module that lacks any of the HTTP filter's required hooks, so the ones
//! Switchyard has no use for (bodies, trailers, callouts, scheduling, watermarks) are exported too,
//! answering "continue" or doing nothing.

use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use switchyard_table::format::RULE_NAME_HEADER;

use crate::abi::{
    self, ConfigEnvoyPtr, EnvoyBuffer, FilterEnvoyPtr, FilterStatus, HttpHeader, ModuleBuffer, ABI_VERSION, CONTINUE,
    RESPONSE_HEADER, STOP_ITERATION,
};
use crate::envoy_host::EnvoyHost;
use crate::request::{handle_request, Outcome};
use crate::state::{next_random, Counted, ModuleConfig, Stream};

/// Runs `hook`, answering `default` if it panics (the panic hook has logged it).
fn guarded<T>(default: T, hook: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(hook)).unwrap_or(default)
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
    _name: EnvoyBuffer,
    config: EnvoyBuffer,
) -> *const c_void {
    guarded(std::ptr::null(), || {
        // SAFETY: Envoy's buffer, valid during this call, which is all `load` needs it for.
        let bytes = unsafe { config.bytes() };
        // SAFETY: `config_envoy` is the configuration Envoy is creating in this very call.
        match unsafe { ModuleConfig::load(config_envoy, bytes) } {
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
    guarded(CONTINUE, || {
        // SAFETY: `stream` came from `filter_new` and lives until `filter_destroy`; its
        // configuration outlives every stream it created (Envoy holds it for them).
        let Some(stream) = (unsafe { (stream as *const Stream).as_ref() }) else {
            return CONTINUE;
        };
        let Some(config) = (unsafe { stream.config.as_ref() }) else {
            return CONTINUE;
        };
        // SAFETY: `filter_envoy` is this hook's; the host lives only during the hook.
        let mut host = unsafe { EnvoyHost::new(filter_envoy) };
        let table = &config.table;
        let outcome = handle_request(&mut host, table, next_random());
        let metrics = &config.metrics;
        // SAFETY (every `count` below): `filter_envoy` is this hook's stream, of `config`.
        let status = match outcome {
            Outcome::Routed { position } => {
                unsafe { metrics.count(filter_envoy, Counted::Routed) };
                if table.debug_rule_header() {
                    stream.rule.set(Some(position));
                }
                CONTINUE
            }
            Outcome::ClusterNotSet { position, .. } => {
                unsafe { metrics.count(filter_envoy, Counted::RouteFailed) };
                config.log_route_failure(position);
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
        if status == CONTINUE && host.changed {
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
    guarded(CONTINUE, || {
        // SAFETY: as in `request_headers`.
        let Some(stream) = (unsafe { (stream as *const Stream).as_ref() }) else {
            return CONTINUE;
        };
        let (Some(position), Some(config)) = (stream.rule.get(), unsafe { stream.config.as_ref() }) else {
            return CONTINUE;
        };
        if let Some(rule) = config.table.rules().get(position) {
            // SAFETY: this hook's stream; both buffers lend live `&str`s for the call.
            unsafe {
                abi::envoy_dynamic_module_callback_http_set_header(
                    filter_envoy,
                    RESPONSE_HEADER,
                    ModuleBuffer::of(RULE_NAME_HEADER),
                    ModuleBuffer::of(rule.name()),
                );
            }
        }
        CONTINUE
    })
}

// ---- hooks Envoy requires and Switchyard has no use for -------------------------------------

/// Request body: continue.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_request_body(
    _filter_envoy: FilterEnvoyPtr,
    _stream: *const c_void,
    _end_of_stream: bool,
) -> FilterStatus {
    CONTINUE
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

/// The stream is complete: nothing to do (the stream's state goes in `filter_destroy`).
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_stream_complete(
    _filter_envoy: FilterEnvoyPtr,
    _stream: *const c_void,
) {
}

/// An HTTP callout finished: the module starts none.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_callout_done(
    _filter_envoy: FilterEnvoyPtr,
    _stream: *const c_void,
    _callout_id: u64,
    _result: u32,
    _headers: *const HttpHeader,
    _headers_size: usize,
    _body_chunks: *const EnvoyBuffer,
    _body_chunks_size: usize,
) {
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

/// A scheduled event: the module schedules none.
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
