//! [`Host`] over Envoy's dynamic-module callbacks, for one stream's request-headers hook: the same
//! trait the wasm filter implements over proxy-wasm host calls, so `handle_request` runs unchanged.
//!
//! Unlike proxy-wasm in Envoy, the dynamic-module callbacks do not clear the route cache when a
//! request header changes; [`EnvoyHost`] records whether one did, and the hook clears the cache
//! then (Envoy picks its route before the filter runs, and `cluster_header` routing needs it picked
//! again once the cluster header is set; the wasm filter gets the same from Envoy's Wasm host).
//!
//! Beside the cluster specifier ([`crate::cluster_specifier`]) the filter runs through
//! [`ActionsHost`]: Envoy's route match already picked the cluster, so the cluster header is not
//! written and the route is not picked again.

use std::cell::Cell;

use crate::abi::{self, EnvoyBuffer, FilterEnvoyPtr, HttpHeader, ModuleBuffer, REQUEST_HEADER};
use crate::headers::HeaderBlock;
use switchyard_table::ratelimit::Counters;

use crate::counters::ProcessCounters;
use crate::host::{parse_client_address, Host, HostCallFailed, WINNER_RULE};
use switchyard_request::meter::{SeriesId, Winner};

/// What a refused header change is reported as: proxy-wasm's `InternalFailure`, the status the
/// wasm filter's logs and tests use for a host that refused a call.
pub(crate) const REFUSED: HostCallFailed = HostCallFailed(10);

/// One stream's request, seen through Envoy's callbacks during a hook.
pub struct EnvoyHost {
    filter: FilterEnvoyPtr,
    /// Whether a request header was set or removed (the route must then be picked again).
    pub changed: bool,
    /// The series the request's winner is counted in, once noted.
    pub series: Option<SeriesId>,
}

impl EnvoyHost {
    /// The host of the stream whose Envoy-side filter is `filter`.
    ///
    /// # Safety
    /// `filter` must be the `filter_envoy_ptr` Envoy passed to the running hook, and the value must
    /// be used only during that hook.
    pub unsafe fn new(filter: FilterEnvoyPtr) -> EnvoyHost {
        EnvoyHost {
            filter,
            changed: false,
            series: None,
        }
    }

    /// Makes Envoy pick the route again.
    pub fn clear_route_cache(&self) {
        // SAFETY: `filter` is the running hook's (see `new`).
        unsafe { abi::envoy_dynamic_module_callback_http_clear_route_cache(self.filter) }
    }
}

impl Host for EnvoyHost {
    fn request_headers(&self) -> HeaderBlock {
        // SAFETY: `filter` is the running hook's; `fill` gets an array of the length Envoy reported.
        unsafe {
            read_headers(
                abi::envoy_dynamic_module_callback_http_get_headers_size(self.filter, REQUEST_HEADER),
                |array| abi::envoy_dynamic_module_callback_http_get_headers(self.filter, REQUEST_HEADER, array),
            )
        }
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

    fn note_winner(&mut self, winner: Winner<'_>) {
        // SAFETY: `filter` is the running hook's; both buffers lend live `&str`s for the call.
        unsafe {
            abi::envoy_dynamic_module_callback_http_set_filter_state_bytes(
                self.filter,
                ModuleBuffer::of(WINNER_RULE),
                ModuleBuffer::of(winner.rule),
            );
        }
        self.series = crate::resource_metrics::note(winner);
    }

    fn rate_counters(&self) -> Option<&dyn Counters> {
        Some(ProcessCounters::get())
    }

    fn now_ms(&self) -> u64 {
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        since.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    fn client_address(&self) -> Option<std::net::IpAddr> {
        let mut result = EnvoyBuffer {
            ptr: std::ptr::null(),
            length: 0,
        };
        // SAFETY: `filter` is the running hook's; Envoy fills `result` with bytes it keeps for the
        // hook, read before it returns.
        let found = unsafe {
            abi::envoy_dynamic_module_callback_http_filter_get_attribute_string(
                self.filter,
                abi::SOURCE_ADDRESS,
                &mut result,
            )
        };
        // SAFETY: as above.
        let bytes = unsafe { result.bytes() };
        found
            .then(|| parse_client_address(std::str::from_utf8(bytes).ok()?))
            .flatten()
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

/// A header map read through a pair of Envoy's callbacks: `count` headers, which `fill` writes into
/// an array of that length (`false`: Envoy failed, read as no headers). The block copies names and
/// values (Envoy's until the hook returns or a header changes); bytes that are not UTF-8 are read
/// lossily, as the wasm filter reads them.
///
/// # Safety
/// `fill` must write at most `count` live headers of Envoy's map into the array it is given.
pub unsafe fn read_headers(count: usize, fill: impl FnOnce(*mut HttpHeader) -> bool) -> HeaderBlock {
    let mut raw = vec![HttpHeader::EMPTY; count];
    if count > 0 && !fill(raw.as_mut_ptr()) {
        raw.clear();
    }
    let bytes = |ptr: *const u8, length: usize| -> &[u8] {
        // SAFETY: Envoy filled `ptr`/`length` with a live name or value of the map (the caller's
        // contract).
        unsafe { abi::EnvoyBuffer { ptr, length }.bytes() }
    };
    HeaderBlock::from_byte_pairs(
        raw.iter()
            .map(|h| (bytes(h.key_ptr, h.key_length), bytes(h.value_ptr, h.value_length))),
    )
}

/// [`Host`] for the filter beside the cluster specifier, which answers only what a route match
/// cannot: local replies (direct responses, redirects, the 404), rewrites and header actions, and
/// the debug response header. The cluster header is never written: the specifier set the cluster
/// during Envoy's route match, so writing it (and picking the route again) would only cost. A value
/// the client sent is removed, so that no backend sees a forged one.
pub struct ActionsHost<'t> {
    /// The stream's host.
    pub envoy: EnvoyHost,
    cluster_header: &'t str,
    client_sent: Cell<bool>,
}

impl<'t> ActionsHost<'t> {
    /// The host of `envoy`'s request, for a table whose cluster header is `cluster_header`.
    pub fn new(envoy: EnvoyHost, cluster_header: &'t str) -> ActionsHost<'t> {
        ActionsHost {
            envoy,
            cluster_header,
            client_sent: Cell::new(false),
        }
    }

    /// The cluster header's write: a removal of the client's value when there is one.
    fn drop_client_value(&mut self) {
        if self.client_sent.replace(false) {
            self.envoy.remove_request_header(self.cluster_header);
        }
    }
}

impl Host for ActionsHost<'_> {
    fn request_headers(&self) -> HeaderBlock {
        let headers = self.envoy.request_headers();
        self.client_sent.set(headers.first(self.cluster_header).is_some());
        headers
    }

    fn set_request_header(&mut self, name: &str, value: &str) -> Result<(), HostCallFailed> {
        if name == self.cluster_header {
            self.drop_client_value();
            return Ok(());
        }
        self.envoy.set_request_header(name, value)
    }

    fn remove_request_header(&mut self, name: &str) {
        if name == self.cluster_header {
            self.drop_client_value();
        } else {
            self.envoy.remove_request_header(name);
        }
    }

    fn send_response(&mut self, status: u16, headers: &[(&str, &str)], body: &str) {
        self.envoy.send_response(status, headers, body);
    }

    fn client_address(&self) -> Option<std::net::IpAddr> {
        self.envoy.client_address()
    }

    fn rate_counters(&self) -> Option<&dyn Counters> {
        self.envoy.rate_counters()
    }

    fn now_ms(&self) -> u64 {
        self.envoy.now_ms()
    }

    fn note_winner(&mut self, winner: Winner<'_>) {
        self.envoy.note_winner(winner);
    }
}
