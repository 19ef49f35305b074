//! A proxy-wasm HTTP filter that does (almost) nothing, for `make bench-envoy`:
//!
//! - with any plugin configuration but `headers`: nothing at all; Envoy with it is the floor that any
//!   wasm filter pays (a VM entry per callback);
//! - with the configuration `headers`: the host calls the switchyard filter makes on a routed request
//!   and nothing else (read `:authority` and `:path`, set `x-route-cluster: backend`, which makes
//!   Envoy re-pick the route). The difference to the switchyard filter is the cost of matching;
//! - with the configuration `header-map`: the same, but reading the whole header map in one host
//!   call (`proxy_get_header_map_pairs`) instead of two `get_header` calls, as the filter does.
#![cfg(target_arch = "wasm32")]

use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, BufferType, ContextType, MapType};

proxy_wasm::main! {{
    proxy_wasm::set_root_context(|_| Box::new(Root { mode: Mode::Nothing }));
}}

/// What the HTTP contexts do (the plugin configuration says).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Nothing,
    /// Two `get_header` calls and one `set_header`.
    Headers,
    /// One `get_header_map_pairs` call and one `set_header`.
    HeaderMap,
}

struct Root {
    mode: Mode,
}

impl Context for Root {}

impl RootContext for Root {
    fn on_configure(&mut self, _plugin_configuration_size: usize) -> bool {
        let config = hostcalls::get_buffer(BufferType::PluginConfiguration, 0, usize::MAX)
            .ok()
            .flatten();
        self.mode = match config.as_deref() {
            Some(b"headers") => Mode::Headers,
            Some(b"header-map") => Mode::HeaderMap,
            _ => Mode::Nothing,
        };
        true
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Http { mode: self.mode }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

struct Http {
    mode: Mode,
}

impl Context for Http {}

impl HttpContext for Http {
    fn on_http_request_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        let read = match self.mode {
            Mode::Nothing => false,
            Mode::Headers => {
                let authority = hostcalls::get_map_value_bytes(MapType::HttpRequestHeaders, ":authority");
                let path = hostcalls::get_map_value_bytes(MapType::HttpRequestHeaders, ":path");
                authority.is_ok() && path.is_ok()
            }
            Mode::HeaderMap => hostcalls::get_map_bytes(MapType::HttpRequestHeaders)
                .is_ok_and(|map| map.iter().any(|(k, _)| k == ":authority") && map.iter().any(|(k, _)| k == ":path")),
        };
        if read {
            let _ = hostcalls::set_map_value(MapType::HttpRequestHeaders, "x-route-cluster", Some("backend"));
        }
        Action::Continue
    }
}
