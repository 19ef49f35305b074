//! Switchyard's proxy-wasm filter: a thin shell over `switchyard-table`.
//!
//! - [`config`]: the plugin configuration (a `StringValue` or Istio's `Struct` JSON, wrappers
//!   included, or a `Struct` in protobuf bytes) decoded into a validated, indexed [`switchyard_table::RouteTable`].
//! - [`loaded`]: the table a root serves, whole or in shards kept by the VM from push to push.
//! - [`headers`]: the request's header map, read in one host call into one buffer.
//! - [`request`]: one request's trip (strip the client's cluster header, match, set the cluster
//!   header and the rule's actions, or answer locally), written against the [`host::Host`] trait so
//!   it is tested natively.
//! - [`uncompress`]: the compact form's zlib stream inflated by the proxy's foreign function
//!   `uncompress`, so the `.wasm` links no inflater.
//! - `wasm` (wasm32 only): the proxy-wasm root and HTTP contexts, metrics, and the panic hook.
//!
//! Semantics: ROUTING.md §5. Build: `make build-wasm`.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod config;
pub mod headers;
pub mod host;
pub mod loaded;
pub mod protobuf;
pub mod random;
pub mod request;
pub mod uncompress;
#[cfg(target_arch = "wasm32")]
mod wasm;
