//! A proxy-wasm HTTP filter that does nothing: `make bench-envoy` measures Envoy with it as the floor
//! that any wasm filter pays (VM entry per callback), to compare the switchyard filter against.
#![cfg(target_arch = "wasm32")]

use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::ContextType;

proxy_wasm::main! {{
    proxy_wasm::set_root_context(|_| Box::new(Noop));
}}

struct Noop;

impl Context for Noop {}

impl RootContext for Noop {
    fn on_configure(&mut self, _plugin_configuration_size: usize) -> bool {
        true
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Noop))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

impl HttpContext for Noop {}
