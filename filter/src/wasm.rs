//! The proxy-wasm shell: one root context per plugin holds the compiled table and hands every HTTP
//! context an `Rc` of it (nothing per request copies the table); `Host` is implemented over the
//! host calls, which are used directly (their `Result`s are handled) rather than through the SDK's
//! trait methods, which unwrap.
//!
//! The SDK exports every proxy-wasm callback; `make build-wasm` keeps only those
//! `filter/exports.json` lists (a callback overridden here needs its export added there, or the
//! host never calls it). A host calls no callback a module lacks and goes on as if it had answered
//! "continue" / `true` (proxy-wasm-cpp-host, which Envoy and Istio's proxy run: `WasmBase::getFunctions`
//! in `src/wasm.cc` looks each export up and leaves a missing one null; every `ContextBase::on…` in
//! `src/context.cc` checks it first: `onRequestBody` returns `FilterDataStatus::Continue`, `onDone`
//! `true`, `onStart` `true`, `onLog` and `onDelete` nothing). Only the allocator is required.
//!
//! Its parts, each in its own module: `root` (the table), `http` (a request), `host` (the request
//! path's host calls, the shared data), `meter` (the counts) and `abi` (the raw host calls).

mod abi;
mod host;
mod http;
mod meter;
mod root;

use proxy_wasm::types::LogLevel;

use abi::log;
use root::Root;

proxy_wasm::main! {{
    std::panic::set_hook(Box::new(|info| log(LogLevel::Critical, &format!("switchyard: panic: {info}"))));
    proxy_wasm::set_root_context(|_| Box::new(Root::new()));
}}
