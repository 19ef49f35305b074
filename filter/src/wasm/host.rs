//! What the filter reads from and leaves in its host for a request: [`ProxyHost`], the request
//! path's [`Host`] over proxy-wasm host calls, and [`HostSharedData`], the host's shared data
//! (the shards' catalogue, a rate limit's counts).

use std::any::Any;
use std::rc::Weak;

use proxy_wasm::hostcalls;
use proxy_wasm::types::MapType;
use switchyard_table::ratelimit::Counters;
use switchyard_table::shards::SharedBytes;

use switchyard_request::headers::HeaderBlock;
use switchyard_request::host::{parse_client_address, Host, HostCallFailed};
use switchyard_request::meter::{SeriesId, Winner};

use super::abi::{host_bytes, now_ns, proxy_get_header_map_pairs, proxy_get_property, proxy_set_property};
use super::meter;

/// The property path of Envoy's `source.address`, the client's address (a path's segments end
/// with a NUL, but the last).
const SOURCE_ADDRESS: &str = "source\0address";

/// The property the winning rule is left in: Envoy keeps it under `wasm.`, as WINNER_RULE.
const WINNER_PROPERTY: &str = "switchyard.rule";

/// The host's shared data (one map per VM id, shared by the VMs of every thread): where the
/// VMs of a plugin publish the shards they validated (`switchyard_table::shards::catalogue`).
#[derive(Debug)]
pub(super) struct HostSharedData;

impl SharedBytes for HostSharedData {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        hostcalls::get_shared_data(key).ok()?.0
    }

    fn set(&self, key: &str, value: &[u8]) -> bool {
        // A failed write only leaves the other VMs to decode the shards themselves.
        hostcalls::set_shared_data(key, Some(value), None).is_ok()
    }
}

/// [`Host`] over proxy-wasm host calls. Header values that are not UTF-8 are read lossily.
pub(super) struct ProxyHost {
    /// The series the request's winner is counted in, once noted.
    pub(super) series: Option<SeriesId>,
    /// The table the request is routed by: the series book finds a rule's series by its place in it.
    pub(super) table: Weak<dyn Any>,
    /// The host's clock when the request's headers came, read once for the request: its rate
    /// limits count at that moment (none: read when asked).
    pub(super) arrived_ns: Option<u64>,
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
        self.series = meter::series_of(winner, &self.table);
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
