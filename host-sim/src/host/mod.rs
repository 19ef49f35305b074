//! The host functions a proxy-wasm module imports from `env` (ABI 0.2.1, plus the 0.2.0 names
//! still in use) and the WASI preview1 functions Rust and TinyGo modules pull in, one module per
//! group. [`add_to_linker`] defines them all.

mod buffers;
mod foreign;
mod headers;
mod http_call;
mod log;
mod metrics;
mod properties;
mod queues;
mod shared_data;
mod stream;
mod wasi;

use crate::state::Host;
use wasmtime::Linker;

pub use wasi::ProcExit;

/// Defines every host function host-sim provides.
pub(crate) fn add_to_linker(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    log::add(linker)?;
    headers::add(linker)?;
    buffers::add(linker)?;
    properties::add(linker)?;
    stream::add(linker)?;
    foreign::add(linker)?;
    http_call::add(linker)?;
    shared_data::add(linker)?;
    queues::add(linker)?;
    metrics::add(linker)?;
    wasi::add(linker)?;
    Ok(())
}
