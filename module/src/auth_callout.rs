//! External authentication over Envoy's HTTP callout: a request whose rule asks an auth service
//! ([`switchyard_request::auth`]) is stopped, the subrequest sent to the service's cluster, and
//! the answer (on the stream's own worker) lets the request on — the answer's headers set, the
//! route picked again when the filter sets the cluster header — or answers it. A callout Envoy
//! refuses (no such cluster) or that fails (a reset, an answer too large) is the service not
//! answering: `500`, as in the wasm filter.

use switchyard_request::auth::{self, AuthCall};

use crate::abi::{self, FilterEnvoyPtr, FilterStatus, HttpHeader, ModuleBuffer, CALLOUT_SENT, STOP_ITERATION};
use crate::envoy_host::{read_headers, EnvoyHost};
use crate::state::{Counted, ModuleConfig, Stream};

/// A subrequest awaiting its answer.
pub struct PendingAuth {
    /// The callout's id.
    pub id: u64,
    /// The subrequest.
    pub call: AuthCall,
    /// Whether the route is to be picked again once the request goes on (the filter set the
    /// cluster header; not beside the cluster specifier).
    pub repick: bool,
}

/// Sends `call` for the request of `stream` and stops it until the answer.
///
/// # Safety
/// `filter` is the running request-headers hook's, `stream` and `config` its stream's.
pub unsafe fn ask(
    filter: FilterEnvoyPtr,
    (stream, config): (&Stream, &ModuleConfig),
    call: AuthCall,
    repick: bool,
) -> FilterStatus {
    let mut headers: Vec<HttpHeader> = (call.headers.iter())
        .map(|(name, value)| HttpHeader::of(name, value))
        .collect();
    let mut id = 0u64;
    // SAFETY: the hook's filter; the buffers and the header array lend live strings for the call.
    let sent = unsafe {
        abi::envoy_dynamic_module_callback_http_filter_http_callout(
            filter,
            &mut id,
            ModuleBuffer::of(&call.auth.cluster),
            headers.as_mut_ptr(),
            headers.len(),
            ModuleBuffer::NULL,
            call.auth.timeout_ms,
        )
    };
    if sent == CALLOUT_SENT {
        stream.auth.set(Some(PendingAuth { id, call, repick }));
        return STOP_ITERATION;
    }
    config.log_auth_failure(&call.auth.cluster, sent);
    // SAFETY: the hook's filter, used during the hook only.
    let mut host = unsafe { EnvoyHost::new(filter) };
    let _ = auth::act(&mut host, &call, call.verdict(None, &[]));
    // SAFETY: the hook's stream, of `config`.
    unsafe { config.metrics.count(filter, Counted::Direct) };
    STOP_ITERATION
}

/// The answer to callout `id` of `stream` (`succeeded`: a response came; its `count` headers at
/// `headers`): the request goes on or is answered.
///
/// # Safety
/// `filter` is the running callout-done hook's, `stream` its stream's; `headers` points at
/// `count` live headers of Envoy's (or is null with `count` 0).
pub unsafe fn answered(
    filter: FilterEnvoyPtr,
    stream: &Stream,
    (id, succeeded): (u64, bool),
    (headers, count): (*const HttpHeader, usize),
) {
    let Some(pending) = stream.auth.take() else {
        return;
    };
    if pending.id != id {
        stream.auth.set(Some(pending));
        return;
    }
    let count = if headers.is_null() || !succeeded { 0 } else { count };
    // SAFETY: Envoy's `count` headers at `headers`, live during the hook (the caller's contract).
    let block = unsafe {
        read_headers(count, |array| {
            std::ptr::copy_nonoverlapping(headers, array, count);
            true
        })
    };
    let answer: Vec<(String, String)> = block.iter().map(|(n, v)| (n.to_owned(), v.to_owned())).collect();
    let status = block
        .iter()
        .find(|(n, _)| *n == ":status")
        .and_then(|(_, v)| v.parse().ok());
    let verdict = pending.call.verdict(status, &answer);
    // SAFETY: the hook's filter, used during the hook only.
    let mut host = unsafe { EnvoyHost::new(filter) };
    let (goes_on, cookies) = auth::act(&mut host, &pending.call, verdict);
    if !goes_on {
        if let Some(config) = unsafe { stream.config.as_ref() } {
            // SAFETY: the hook's stream, of its configuration.
            unsafe { config.metrics.count(filter, Counted::Direct) };
        }
        return;
    }
    let mut followup = stream.followup.take();
    followup.auth_cookies = cookies;
    stream.followup.set(followup);
    if pending.repick {
        host.clear_route_cache();
    }
    // SAFETY: the hook's filter.
    unsafe { abi::envoy_dynamic_module_callback_http_filter_continue_decoding(filter) };
}
