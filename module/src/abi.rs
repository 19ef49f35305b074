//! The few pieces of Envoy's dynamic-module ABI that Switchyard uses, declared by hand.
//!
//! The ABI is the C header `source/extensions/dynamic_modules/abi/abi.h` of the Envoy repository
//! (Envoy 1.40: event hooks `envoy_dynamic_module_on_*` that the module exports, callbacks
//! `envoy_dynamic_module_callback_*` that Envoy's binary exports and the module calls). Two of its
//! extensions are used: the HTTP filter (`http_filter_*`, `http_*`) and the cluster specifier
//! (`cluster_specifier_*`, Envoy's `envoy.router.cluster_specifier_plugin.dynamic_modules`). Only the
//! types and callbacks below are declared; their layouts follow the header: a buffer is a pointer
//! and a length passed by value, a header is two such pairs, C enums are `int`s.
//!
//! The callbacks are resolved against the Envoy process when Envoy `dlopen`s the module. A native
//! test binary has no Envoy to resolve them against, so under `cfg(test)` they are stand-ins that
//! answer "nothing" (the logic above them is tested through [`crate::host::Host`]).

use std::ffi::c_void;

/// The ABI version this module was built against: `ENVOY_DYNAMIC_MODULES_ABI_VERSION` of Envoy 1.40's
/// `abi/abi.h` (the string the 1.40 binary holds and logs as matched). Envoy compares it with its own and logs `Dynamic module ABI version … matched.` (a
/// mismatch is logged as a warning; a module whose hooks or callbacks Envoy lacks is refused at load).
pub const ABI_VERSION: &std::ffi::CStr = c"v0.2.0";

/// `envoy_dynamic_module_type_envoy_buffer`: bytes owned by Envoy.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct EnvoyBuffer {
    /// The first byte (may be null when `length` is 0).
    pub ptr: *const u8,
    /// The number of bytes.
    pub length: usize,
}

impl EnvoyBuffer {
    /// The bytes, valid as long as Envoy keeps them (the hook's duration at least).
    ///
    /// # Safety
    /// `ptr` must point at `length` readable bytes for the lifetime chosen by the caller.
    pub unsafe fn bytes<'a>(self) -> &'a [u8] {
        if self.ptr.is_null() || self.length == 0 {
            return &[];
        }
        // SAFETY: the caller vouches for `ptr` and `length` (Envoy's contract for the buffer).
        unsafe { std::slice::from_raw_parts(self.ptr, self.length) }
    }
}

/// `envoy_dynamic_module_type_module_buffer`: bytes owned by the module, lent for one call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ModuleBuffer {
    /// The first byte; null stands for "no value" where the ABI allows it (a header's removal).
    pub ptr: *const u8,
    /// The number of bytes.
    pub length: usize,
}

impl ModuleBuffer {
    /// A loan of `text`.
    pub fn of(text: &str) -> ModuleBuffer {
        ModuleBuffer {
            ptr: text.as_ptr(),
            length: text.len(),
        }
    }

    /// The null buffer.
    pub const NULL: ModuleBuffer = ModuleBuffer {
        ptr: std::ptr::null(),
        length: 0,
    };
}

/// `envoy_dynamic_module_type_module_http_header` (module-owned) and
/// `envoy_dynamic_module_type_envoy_http_header` (Envoy-owned) share this layout.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HttpHeader {
    /// The name's first byte.
    pub key_ptr: *const u8,
    /// The name's length.
    pub key_length: usize,
    /// The value's first byte.
    pub value_ptr: *const u8,
    /// The value's length.
    pub value_length: usize,
}

impl HttpHeader {
    /// An empty header, to size an array Envoy fills.
    pub const EMPTY: HttpHeader = HttpHeader {
        key_ptr: std::ptr::null(),
        key_length: 0,
        value_ptr: std::ptr::null(),
        value_length: 0,
    };

    /// A module-owned header lending `name` and `value`.
    pub fn of(name: &str, value: &str) -> HttpHeader {
        HttpHeader {
            key_ptr: name.as_ptr(),
            key_length: name.len(),
            value_ptr: value.as_ptr(),
            value_length: value.len(),
        }
    }
}

/// `envoy_dynamic_module_type_http_header_type`: which header map a callback reads or writes.
pub type HeaderType = u32;
/// The request headers.
pub const REQUEST_HEADER: HeaderType = 0;
/// The response headers.
pub const RESPONSE_HEADER: HeaderType = 2;

/// `envoy_dynamic_module_type_attribute_id`: which of Envoy's attributes a callback reads.
pub type AttributeId = u32;
/// `source.address`: the client's address as Envoy derives it (the connection's peer, or from a
/// trusted `x-forwarded-for`), `ip:port`.
pub const SOURCE_ADDRESS: AttributeId = 24;
/// `response.code`: the status the client was answered (none before a response).
pub const RESPONSE_CODE: AttributeId = 15;

/// `envoy_dynamic_module_type_log_level`.
pub type LogLevel = u32;
/// `Info`.
pub const LOG_INFO: LogLevel = 2;
/// `Warn`.
pub const LOG_WARN: LogLevel = 3;
/// `Error`.
pub const LOG_ERROR: LogLevel = 4;
/// `Critical`.
pub const LOG_CRITICAL: LogLevel = 5;

/// `envoy_dynamic_module_type_metrics_result`: 0 is `Success`.
pub type MetricsResult = u32;
/// `Success`.
pub const METRICS_SUCCESS: MetricsResult = 0;

/// The status every `on_http_filter_*` hook returns: 0 is `Continue` for headers, body and trailers.
pub type FilterStatus = u32;
/// `Continue`.
pub const CONTINUE: FilterStatus = 0;
/// `StopIteration` (headers): after a local reply, nothing goes further.
pub const STOP_ITERATION: FilterStatus = 1;
/// `envoy_dynamic_module_type_on_http_filter_request_body_status_StopIterationAndBuffer`: the body
/// waits in Envoy's buffer until the module continues the stream.
pub const STOP_AND_BUFFER: FilterStatus = 1;

/// `envoy_dynamic_module_type_http_callout_init_result`: 0 is `Success` (the others: missing
/// headers, no such cluster, a duplicate id, a request that cannot be made).
pub type CalloutInit = u32;
/// The callout was sent.
pub const CALLOUT_SENT: CalloutInit = 0;

/// `envoy_dynamic_module_type_http_filter_config_envoy_ptr`.
pub type ConfigEnvoyPtr = *mut c_void;
/// `envoy_dynamic_module_type_http_filter_envoy_ptr`.
pub type FilterEnvoyPtr = *mut c_void;

/// `envoy_dynamic_module_type_cluster_specifier_config_envoy_ptr`: the cluster specifier's
/// configuration on Envoy's side (the module defines no metrics with it).
pub type ClusterSpecifierConfigEnvoyPtr = *mut c_void;
/// `envoy_dynamic_module_type_cluster_specifier_context_envoy_ptr`: one selection (one request's
/// route match), valid during `on_cluster_specifier_select` only.
pub type SelectionEnvoyPtr = *mut c_void;

/// Every callback the module calls. Envoy binds a module's symbols lazily (`RTLD_LAZY`): a
/// callback an Envoy of another version lacks would only fail at its first call, and take the
/// process down; [`missing_callback`] lets `on_program_init` refuse the module instead.
pub const CALLBACKS: [&std::ffi::CStr; 24] = [
    c"envoy_dynamic_module_callback_log",
    c"envoy_dynamic_module_callback_http_filter_config_define_counter",
    c"envoy_dynamic_module_callback_http_filter_config_define_gauge",
    c"envoy_dynamic_module_callback_http_filter_config_increment_counter",
    c"envoy_dynamic_module_callback_http_filter_config_set_gauge",
    c"envoy_dynamic_module_callback_http_filter_increment_counter",
    c"envoy_dynamic_module_callback_http_get_headers_size",
    c"envoy_dynamic_module_callback_http_get_headers",
    c"envoy_dynamic_module_callback_http_set_header",
    c"envoy_dynamic_module_callback_http_send_response",
    c"envoy_dynamic_module_callback_http_clear_route_cache",
    c"envoy_dynamic_module_callback_http_add_header",
    c"envoy_dynamic_module_callback_http_filter_get_attribute_string",
    c"envoy_dynamic_module_callback_cluster_specifier_get_request_headers_size",
    c"envoy_dynamic_module_callback_cluster_specifier_get_request_headers",
    c"envoy_dynamic_module_callback_cluster_specifier_get_random_value",
    c"envoy_dynamic_module_callback_cluster_specifier_set_cluster_name",
    c"envoy_dynamic_module_callback_http_filter_http_callout",
    c"envoy_dynamic_module_callback_http_filter_continue_decoding",
    c"envoy_dynamic_module_callback_http_set_filter_state_bytes",
    c"envoy_dynamic_module_callback_http_filter_get_attribute_int",
    c"envoy_dynamic_module_callback_http_filter_config_scheduler_new",
    c"envoy_dynamic_module_callback_http_filter_config_scheduler_commit",
    c"envoy_dynamic_module_callback_http_filter_config_scheduler_delete",
];

/// The first of [`CALLBACKS`] the process does not export (`None`: Envoy has them all).
#[cfg(not(test))]
pub fn missing_callback() -> Option<&'static std::ffi::CStr> {
    extern "C" {
        fn dlsym(handle: *mut c_void, symbol: *const std::ffi::c_char) -> *mut c_void;
    }
    // glibc's RTLD_DEFAULT: the global scope, where the Envoy binary's exported symbols are.
    let default_scope = std::ptr::null_mut();
    // SAFETY: `dlsym` only reads the NUL-terminated name.
    CALLBACKS
        .into_iter()
        .find(|name| unsafe { dlsym(default_scope, name.as_ptr()) }.is_null())
}

/// No Envoy in native tests: nothing is missing.
#[cfg(test)]
pub fn missing_callback() -> Option<&'static std::ffi::CStr> {
    None
}

#[cfg(not(test))]
extern "C" {
    /// Logs `message` under Envoy's `dynamic_modules` logger.
    pub fn envoy_dynamic_module_callback_log(level: LogLevel, message: ModuleBuffer);

    /// Defines a counter without labels in the filter configuration's stats scope.
    pub fn envoy_dynamic_module_callback_http_filter_config_define_counter(
        config: ConfigEnvoyPtr,
        name: ModuleBuffer,
        label_names: *mut ModuleBuffer,
        label_names_length: usize,
        counter_id: *mut usize,
    ) -> MetricsResult;

    /// Defines a gauge without labels in the filter configuration's stats scope.
    pub fn envoy_dynamic_module_callback_http_filter_config_define_gauge(
        config: ConfigEnvoyPtr,
        name: ModuleBuffer,
        label_names: *mut ModuleBuffer,
        label_names_length: usize,
        gauge_id: *mut usize,
    ) -> MetricsResult;

    /// Increments a counter from the configuration (no stream needed).
    pub fn envoy_dynamic_module_callback_http_filter_config_increment_counter(
        config: ConfigEnvoyPtr,
        id: usize,
        label_values: *mut ModuleBuffer,
        label_values_length: usize,
        value: u64,
    ) -> MetricsResult;

    /// Sets a gauge from the configuration.
    pub fn envoy_dynamic_module_callback_http_filter_config_set_gauge(
        config: ConfigEnvoyPtr,
        id: usize,
        label_values: *mut ModuleBuffer,
        label_values_length: usize,
        value: u64,
    ) -> MetricsResult;

    /// Increments a counter from a stream's filter.
    pub fn envoy_dynamic_module_callback_http_filter_increment_counter(
        filter: FilterEnvoyPtr,
        id: usize,
        label_values: *mut ModuleBuffer,
        label_values_length: usize,
        value: u64,
    ) -> MetricsResult;

    /// The number of headers in a map.
    pub fn envoy_dynamic_module_callback_http_get_headers_size(
        filter: FilterEnvoyPtr,
        header_type: HeaderType,
    ) -> usize;

    /// Fills `result` (sized by `get_headers_size`) with every header of a map, in order.
    pub fn envoy_dynamic_module_callback_http_get_headers(
        filter: FilterEnvoyPtr,
        header_type: HeaderType,
        result: *mut HttpHeader,
    ) -> bool;

    /// Replaces every value of a header by `value`, or removes the header when `value` is null.
    pub fn envoy_dynamic_module_callback_http_set_header(
        filter: FilterEnvoyPtr,
        header_type: HeaderType,
        key: ModuleBuffer,
        value: ModuleBuffer,
    ) -> bool;

    /// Adds a value of a header, beside any the map holds.
    pub fn envoy_dynamic_module_callback_http_add_header(
        filter: FilterEnvoyPtr,
        header_type: HeaderType,
        key: ModuleBuffer,
        value: ModuleBuffer,
    ) -> bool;

    /// Answers locally with `status`, `headers` and `body`.
    pub fn envoy_dynamic_module_callback_http_send_response(
        filter: FilterEnvoyPtr,
        status: u32,
        headers: *mut HttpHeader,
        headers_length: usize,
        body: ModuleBuffer,
        details: ModuleBuffer,
    );

    /// Makes Envoy pick the route again (after the cluster header or the path changed).
    pub fn envoy_dynamic_module_callback_http_clear_route_cache(filter: FilterEnvoyPtr);

    /// Sends a request (`headers` with `:method`, `:path` and `host`, `body`) to cluster
    /// `cluster`; its answer comes to `on_http_filter_http_callout_done` with `callout_id`, on
    /// this stream's worker.
    pub fn envoy_dynamic_module_callback_http_filter_http_callout(
        filter: FilterEnvoyPtr,
        callout_id: *mut u64,
        cluster: ModuleBuffer,
        headers: *mut HttpHeader,
        headers_length: usize,
        body: ModuleBuffer,
        timeout_ms: u64,
    ) -> CalloutInit;

    /// Resumes a request the module stopped.
    pub fn envoy_dynamic_module_callback_http_filter_continue_decoding(filter: FilterEnvoyPtr);

    /// Sets the stream's filter state `key` to the bytes `value` (what the access log's
    /// `%FILTER_STATE(key:PLAIN)%` prints).
    pub fn envoy_dynamic_module_callback_http_set_filter_state_bytes(
        filter: FilterEnvoyPtr,
        key: ModuleBuffer,
        value: ModuleBuffer,
    ) -> bool;

    /// One of Envoy's attributes as text (`false` when it has none, or it is no text).
    pub fn envoy_dynamic_module_callback_http_filter_get_attribute_string(
        filter: FilterEnvoyPtr,
        attribute: AttributeId,
        result: *mut EnvoyBuffer,
    ) -> bool;

    /// One of Envoy's attributes as a number (`false` when it has none, or it is no number).
    pub fn envoy_dynamic_module_callback_http_filter_get_attribute_int(
        filter: FilterEnvoyPtr,
        attribute: AttributeId,
        result: *mut u64,
    ) -> bool;

    /// A scheduler of the configuration's events on Envoy's main thread (null: none); the module
    /// deletes it.
    pub fn envoy_dynamic_module_callback_http_filter_config_scheduler_new(config: ConfigEnvoyPtr) -> *mut c_void;

    /// Has Envoy's main thread call `on_http_filter_config_scheduled` with `event_id` (from any
    /// thread).
    pub fn envoy_dynamic_module_callback_http_filter_config_scheduler_commit(scheduler: *mut c_void, event_id: u64);

    /// Deletes a scheduler `scheduler_new` made.
    pub fn envoy_dynamic_module_callback_http_filter_config_scheduler_delete(scheduler: *mut c_void);

    /// The number of request headers a cluster selection sees.
    pub fn envoy_dynamic_module_callback_cluster_specifier_get_request_headers_size(
        selection: SelectionEnvoyPtr,
    ) -> usize;

    /// Fills `result` (sized by `get_request_headers_size`) with every request header, in order.
    pub fn envoy_dynamic_module_callback_cluster_specifier_get_request_headers(
        selection: SelectionEnvoyPtr,
        result: *mut HttpHeader,
    ) -> bool;

    /// The random value Envoy drew for this request (the same on every selection of the request).
    pub fn envoy_dynamic_module_callback_cluster_specifier_get_random_value(selection: SelectionEnvoyPtr) -> u64;

    /// The cluster the request goes to (Envoy copies the name).
    pub fn envoy_dynamic_module_callback_cluster_specifier_set_cluster_name(
        selection: SelectionEnvoyPtr,
        cluster: ModuleBuffer,
    );
}

/// Logs one line through Envoy (nowhere to report a failure to log).
pub fn log(level: LogLevel, message: &str) {
    // SAFETY: the buffer lends a live `&str` for the call's duration.
    unsafe { envoy_dynamic_module_callback_log(level, ModuleBuffer::of(message)) }
}

#[cfg(test)]
pub use stand_ins::*;

/// Stand-ins for Envoy's callbacks in native test binaries, which no Envoy loads.
#[cfg(test)]
#[allow(clippy::missing_safety_doc, missing_docs)]
mod stand_ins {
    use super::*;

    pub unsafe fn envoy_dynamic_module_callback_log(_: LogLevel, _: ModuleBuffer) {}
    pub unsafe fn envoy_dynamic_module_callback_http_filter_config_define_counter(
        _: ConfigEnvoyPtr,
        _: ModuleBuffer,
        _: *mut ModuleBuffer,
        _: usize,
        _: *mut usize,
    ) -> MetricsResult {
        1
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_config_define_gauge(
        _: ConfigEnvoyPtr,
        _: ModuleBuffer,
        _: *mut ModuleBuffer,
        _: usize,
        _: *mut usize,
    ) -> MetricsResult {
        1
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_config_increment_counter(
        _: ConfigEnvoyPtr,
        _: usize,
        _: *mut ModuleBuffer,
        _: usize,
        _: u64,
    ) -> MetricsResult {
        1
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_config_set_gauge(
        _: ConfigEnvoyPtr,
        _: usize,
        _: *mut ModuleBuffer,
        _: usize,
        _: u64,
    ) -> MetricsResult {
        1
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_increment_counter(
        _: FilterEnvoyPtr,
        _: usize,
        _: *mut ModuleBuffer,
        _: usize,
        _: u64,
    ) -> MetricsResult {
        1
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_get_attribute_int(
        _: FilterEnvoyPtr,
        _: AttributeId,
        _: *mut u64,
    ) -> bool {
        false
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_config_scheduler_new(_: ConfigEnvoyPtr) -> *mut c_void {
        std::ptr::null_mut()
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_config_scheduler_commit(_: *mut c_void, _: u64) {}
    pub unsafe fn envoy_dynamic_module_callback_http_filter_config_scheduler_delete(_: *mut c_void) {}
    pub unsafe fn envoy_dynamic_module_callback_http_get_headers_size(_: FilterEnvoyPtr, _: HeaderType) -> usize {
        0
    }
    pub unsafe fn envoy_dynamic_module_callback_http_get_headers(
        _: FilterEnvoyPtr,
        _: HeaderType,
        _: *mut HttpHeader,
    ) -> bool {
        false
    }
    pub unsafe fn envoy_dynamic_module_callback_http_set_header(
        _: FilterEnvoyPtr,
        _: HeaderType,
        _: ModuleBuffer,
        _: ModuleBuffer,
    ) -> bool {
        false
    }
    pub unsafe fn envoy_dynamic_module_callback_http_add_header(
        _: FilterEnvoyPtr,
        _: HeaderType,
        _: ModuleBuffer,
        _: ModuleBuffer,
    ) -> bool {
        false
    }
    pub unsafe fn envoy_dynamic_module_callback_http_send_response(
        _: FilterEnvoyPtr,
        _: u32,
        _: *mut HttpHeader,
        _: usize,
        _: ModuleBuffer,
        _: ModuleBuffer,
    ) {
    }
    pub unsafe fn envoy_dynamic_module_callback_http_clear_route_cache(_: FilterEnvoyPtr) {}
    pub unsafe fn envoy_dynamic_module_callback_http_filter_http_callout(
        _: FilterEnvoyPtr,
        _: *mut u64,
        _: ModuleBuffer,
        _: *mut HttpHeader,
        _: usize,
        _: ModuleBuffer,
        _: u64,
    ) -> CalloutInit {
        4
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_continue_decoding(_: FilterEnvoyPtr) {}
    pub unsafe fn envoy_dynamic_module_callback_http_set_filter_state_bytes(
        _: FilterEnvoyPtr,
        _: ModuleBuffer,
        _: ModuleBuffer,
    ) -> bool {
        false
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_get_attribute_string(
        _: FilterEnvoyPtr,
        _: AttributeId,
        _: *mut EnvoyBuffer,
    ) -> bool {
        false
    }
    pub unsafe fn envoy_dynamic_module_callback_cluster_specifier_get_request_headers_size(
        _: SelectionEnvoyPtr,
    ) -> usize {
        0
    }
    pub unsafe fn envoy_dynamic_module_callback_cluster_specifier_get_request_headers(
        _: SelectionEnvoyPtr,
        _: *mut HttpHeader,
    ) -> bool {
        false
    }
    pub unsafe fn envoy_dynamic_module_callback_cluster_specifier_get_random_value(_: SelectionEnvoyPtr) -> u64 {
        0
    }
    pub unsafe fn envoy_dynamic_module_callback_cluster_specifier_set_cluster_name(
        _: SelectionEnvoyPtr,
        _: ModuleBuffer,
    ) {
    }
}
