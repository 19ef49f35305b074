//! What the filter asks of its proxy, as a trait: the proxy-wasm implementation lives in the
//! filter's `wasm/host.rs`, a test double in the tests of `request.rs`. Every call is a host call
//! in Envoy, so the filter makes as few as it can.

use switchyard_table::ratelimit::Counters;

use crate::headers::HeaderBlock;
use crate::meter::Winner;
pub use switchyard_table::format::{NO_RULE, WINNER_RULE};

/// A host call the proxy answered with a status other than `Ok`: the proxy-wasm ABI's status code
/// (1 `NotFound`, 2 `BadArgument`, ... 10 `InternalFailure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCallFailed(pub u32);

/// The host calls one request needs. Header names are lowercase, as Envoy keeps them.
pub trait Host {
    /// Every request header, in order (names lowercase; `:authority`, `:path`, `:method` included).
    fn request_headers(&self) -> HeaderBlock;
    /// Replaces a request header (adds it when absent); `Err` when the proxy refuses the call.
    fn set_request_header(&mut self, name: &str, value: &str) -> Result<(), HostCallFailed>;
    /// Removes every value of a request header.
    fn remove_request_header(&mut self, name: &str);
    /// Answers locally; the request goes no further.
    fn send_response(&mut self, status: u16, headers: &[(&str, &str)], body: &str);
    /// The client's address as the proxy derives it (Envoy's `source.address`: the connection's
    /// peer, or the address `x-forwarded-for` gives under `use_remote_address` and
    /// `xff_num_trusted_hops`); `None` when the host cannot tell, which a rule's address ranges
    /// refuse. Asked only by a rule with address ranges.
    fn client_address(&self) -> Option<std::net::IpAddr> {
        None
    }
    /// The counts a rule's rate limit keeps, shared by the proxy's workers
    /// ([`switchyard_table::ratelimit`]); `None` when the host keeps none (the rate limit is not
    /// applied).
    fn rate_counters(&self) -> Option<&dyn Counters> {
        None
    }
    /// The proxy's clock, in milliseconds (asked only by a rule with a rate limit).
    fn now_ms(&self) -> u64 {
        0
    }
    /// Leaves the request's winner where the proxy's access log and tracing read it (the rule's
    /// name, which names its resource: [`WINNER_RULE`]; [`NO_RULE`] when no rule took the
    /// request), and notes the series its metrics count it in. A host with nowhere to leave them
    /// does nothing.
    fn note_winner(&mut self, _winner: Winner<'_>) {}
}

/// The address of Envoy's `source.address` (`ip:port`, `[ip6]:port`, or an address alone).
pub fn parse_client_address(text: &str) -> Option<std::net::IpAddr> {
    let text = text.trim();
    text.parse::<std::net::SocketAddr>()
        .map(|socket| socket.ip())
        .or_else(|_| text.parse::<std::net::IpAddr>())
        .ok()
}
