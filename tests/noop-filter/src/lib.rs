//! A proxy-wasm HTTP filter that does (almost) nothing, for `make bench-envoy`:
//!
//! - with any plugin configuration but `headers`: nothing at all; Envoy with it is the floor that any
//!   wasm filter pays (a VM entry per callback);
//! - with the configuration `headers`: the host calls the switchyard filter makes on a routed request
//!   and nothing else (read `:authority` and `:path`, set `x-route-cluster: backend`, which makes
//!   Envoy re-pick the route). The difference to the switchyard filter is the cost of matching.
#![cfg(target_arch = "wasm32")]

use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, BufferType, ContextType, MapType};

proxy_wasm::main! {{
    proxy_wasm::set_root_context(|_| Box::new(Root { headers: false }));
}}

struct Root {
    headers: bool,
}

impl Context for Root {}

impl RootContext for Root {
    fn on_configure(&mut self, _plugin_configuration_size: usize) -> bool {
        let config = hostcalls::get_buffer(BufferType::PluginConfiguration, 0, usize::MAX)
            .ok()
            .flatten();
        self.headers = config.as_deref() == Some(b"headers".as_slice());
        true
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Http { headers: self.headers }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

struct Http {
    headers: bool,
}

impl Context for Http {}

impl HttpContext for Http {
    fn on_http_request_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        if self.headers {
            let authority = hostcalls::get_map_value_bytes(MapType::HttpRequestHeaders, ":authority");
            let path = hostcalls::get_map_value_bytes(MapType::HttpRequestHeaders, ":path");
            if authority.is_ok() && path.is_ok() {
                let _ = hostcalls::set_map_value(MapType::HttpRequestHeaders, "x-route-cluster", Some("backend"));
            }
        }
        Action::Continue
    }
}
