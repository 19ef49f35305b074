//! The proxy-wasm ABI calls the filter makes itself, with their plain status codes, where the
//! SDK's wrappers panic on a status other than `Ok` or copy more than needed; and the helpers over
//! them (the clock, a call that returns bytes, the host's `uncompress`, a log line).

use proxy_wasm::hostcalls;
use proxy_wasm::types::LogLevel;

use switchyard_request::host::HostCallFailed;
use switchyard_request::uncompress::FOREIGN_FUNCTION;

pub(super) fn log(level: LogLevel, message: &str) {
    // Nowhere to report a failing log call; the message is lost, the request is not.
    let _ = hostcalls::log(level, message);
}

#[link(wasm_import_module = "env")]
extern "C" {
    /// The ABI's `proxy_continue_stream`, declared here with a plain status code: the SDK's
    /// `hostcalls::resume_http_request` panics on a status other than `Ok` (a stream already
    /// gone), and the filter never traps.
    pub(super) fn proxy_continue_stream(stream_type: u32) -> u32;

    /// The ABI's `proxy_set_tick_period_milliseconds`, declared here with a plain status code: the
    /// SDK's `hostcalls::set_tick_period` panics on a status other than `Ok`.
    pub(super) fn proxy_set_tick_period_milliseconds(period: u32) -> u32;

    /// The ABI's `proxy_set_property`, declared here with a plain status code: the SDK's
    /// `hostcalls::set_property` panics on a status other than `Ok`.
    pub(super) fn proxy_set_property(path: *const u8, path_size: usize, value: *const u8, value_size: usize) -> u32;

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
    pub(super) fn proxy_get_property(
        path: *const u8,
        path_size: usize,
        results: *mut *mut u8,
        results_size: *mut usize,
    ) -> u32;

    /// The ABI's `proxy_get_current_time_nanoseconds`, declared here with a plain status code.
    fn proxy_get_current_time_nanoseconds(return_time: *mut u64) -> u32;

    /// The ABI's `proxy_get_header_map_pairs`, declared here to keep the serialised map whole (the
    /// SDK's `hostcalls::get_map_bytes` splits it into two allocations per header).
    pub(super) fn proxy_get_header_map_pairs(map_type: u32, results: *mut *mut u8, results_size: *mut usize) -> u32;
}

/// The host's clock, in nanoseconds since the epoch (none if the host refuses): the ABI's value as
/// it comes, where the SDK's `get_current_time` builds a `SystemTime` (and panics on a refusal).
pub(super) fn now_ns() -> Option<u64> {
    let mut now = 0u64;
    // SAFETY: `now` is a live local the host writes eight bytes to.
    (unsafe { proxy_get_current_time_nanoseconds(&mut now) } == 0).then_some(now)
}

/// What a host call that returns bytes answered: the bytes (none for a null answer) or its status.
pub(super) fn host_bytes(call: impl FnOnce(*mut *mut u8, *mut usize) -> u32) -> Result<Vec<u8>, HostCallFailed> {
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
pub(super) fn host_uncompress(argument: &[u8]) -> Result<Vec<u8>, HostCallFailed> {
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
