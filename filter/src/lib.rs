//! Switchyard's proxy-wasm filter: a thin shell over `switchyard-request` (a request's trip over
//! the `Host` trait, tested natively there) and `switchyard-table`.
//!
//! - `wasm` (wasm32 only): the proxy-wasm root and HTTP contexts (`wasm::root`, `wasm::http`), the
//!   `Host` over proxy-wasm's host calls (`wasm::host`), the counts (`wasm::meter`), the raw ABI
//!   calls (`wasm::abi`), and the panic hook.
//!
//! Semantics: ROUTING.md §5. Build: `make build-wasm`.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

#[cfg(target_arch = "wasm32")]
mod wasm;
