//! [`Host`] over Envoy's dynamic-module callbacks, for one stream's request-headers hook: the same
//! trait the wasm filter implements over proxy-wasm host calls, so `handle_request` runs unchanged.
//!
//! Unlike proxy-wasm in Envoy, the dynamic-module callbacks do not clear the route cache when a
//! request header changes; [`EnvoyHost`] records whether one did, and the hook clears the cache
//! then (Envoy picks its route before the filter runs, and `cluster_header` routing needs it picked
//! again once the cluster header is set; the wasm filter gets the same from Envoy's Wasm host).

use crate::abi::{self, FilterEnvoyPtr, HttpHeader, ModuleBuffer, REQUEST_HEADER};
use crate::headers::HeaderBlock;
use crate::host::{Host, HostCallFailed};

/// What a refused header change is reported as: proxy-wasm's `InternalFailure`, the status the
/// wasm filter's logs and tests use for a host that refused a call.
const REFUSED: HostCallFailed = HostCallFailed(10);

/// One stream's request, seen through Envoy's callbacks during a hook.
pub struct EnvoyHost {
    filter: FilterEnvoyPtr,
    /// Whether a request header was set or removed (the route must then be picked again).
    pub changed: bool,
}

impl EnvoyHost {
    /// The host of the stream whose Envoy-side filter is `filter`.
    ///
    /// # Safety
    /// `filter` must be the `filter_envoy_ptr` Envoy passed to the running hook, and the value must
    /// be used only during that hook.
    pub unsafe fn new(filter: FilterEnvoyPtr) -> EnvoyHost {
        EnvoyHost { filter, changed: false }
    }

    /// Makes Envoy pick the route again.
    pub fn clear_route_cache(&self) {
        // SAFETY: `filter` is the running hook's (see `new`).
        unsafe { abi::envoy_dynamic_module_callback_http_clear_route_cache(self.filter) }
    }
}

impl Host for EnvoyHost {
    fn request_headers(&self) -> HeaderBlock {
        // SAFETY: `filter` is the running hook's; the array has the length Envoy reported, and Envoy
        // writes at most that many headers into it.
        let raw = unsafe {
            let count = abi::envoy_dynamic_module_callback_http_get_headers_size(self.filter, REQUEST_HEADER);
            let mut raw = vec![HttpHeader::EMPTY; count];
            if count > 0
                && !abi::envoy_dynamic_module_callback_http_get_headers(self.filter, REQUEST_HEADER, raw.as_mut_ptr())
            {
                raw.clear();
            }
            raw
        };
        // Names and values are Envoy's until the hook returns or a header changes; the block copies
        // them first. Bytes that are not UTF-8 are read lossily, as the wasm filter reads them.
        let bytes = |ptr: *const u8, length: usize| -> &[u8] {
            // SAFETY: Envoy filled `ptr`/`length` with a live name or value of the map.
            unsafe { abi::EnvoyBuffer { ptr, length }.bytes() }
        };
        HeaderBlock::from_byte_pairs(
            raw.iter()
                .map(|h| (bytes(h.key_ptr, h.key_length), bytes(h.value_ptr, h.value_length))),
        )
    }

    fn set_request_header(&mut self, name: &str, value: &str) -> Result<(), HostCallFailed> {
        self.changed = true;
        // SAFETY: `filter` is the running hook's; both buffers lend live `&str`s for the call.
        let done = unsafe {
            abi::envoy_dynamic_module_callback_http_set_header(
                self.filter,
                REQUEST_HEADER,
                ModuleBuffer::of(name),
                ModuleBuffer::of(value),
            )
        };
        if done {
            Ok(())
        } else {
            Err(REFUSED)
        }
    }

    fn remove_request_header(&mut self, name: &str) {
        self.changed = true;
        // SAFETY: as above; a null value removes the header.
        unsafe {
            abi::envoy_dynamic_module_callback_http_set_header(
                self.filter,
                REQUEST_HEADER,
                ModuleBuffer::of(name),
                ModuleBuffer::NULL,
            );
        }
    }

    fn send_response(&mut self, status: u16, headers: &[(&str, &str)], body: &str) {
        let mut headers: Vec<HttpHeader> = headers
            .iter()
            .map(|(name, value)| HttpHeader::of(name, value))
            .collect();
        // SAFETY: `filter` is the running hook's; the headers and body are lent for the call.
        unsafe {
            abi::envoy_dynamic_module_callback_http_send_response(
                self.filter,
                u32::from(status),
                headers.as_mut_ptr(),
                headers.len(),
                ModuleBuffer::of(body),
                ModuleBuffer::NULL,
            );
        }
    }
}
