//! A request's trip through Switchyard's router, independent of any host: the wasm filter
//! (`filter/`, proxy-wasm), the native Envoy module (`module/`) and the fuzz targets are thin shells
//! over it, each with its own [`host::Host`].
//!
//! - [`config`]: the plugin configuration (a `StringValue` or Istio's `Struct` JSON, wrappers
//!   included, or a `Struct` in protobuf bytes, [`protobuf`]) decoded into a validated, indexed
//!   [`switchyard_table::RouteTable`].
//! - [`loaded`]: the table a root serves, whole or in shards kept from push to push.
//! - [`headers`]: the request's header map, read in one host call into one buffer.
//! - [`request`]: one request's trip (strip the client's cluster header, match, set the cluster
//!   header and the rule's actions, or answer locally), over the [`host::Host`] trait, so it is
//!   tested natively.
//! - [`meter`]: the per-resource request metrics: a request's series, kept from its winner to its
//!   end.
//! - [`auth`]: external authentication's subrequest and what its answer does.
//! - [`random`]: SplitMix64 for weighted backends.
//! - [`uncompress`]: the compact form's zlib stream inflated by the proxy's foreign function
//!   `uncompress`, so the `.wasm` links no inflater.
//!
//! Semantics: ROUTING.md §5.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod auth;
pub mod config;
pub mod headers;
pub mod host;
pub mod loaded;
pub mod meter;
pub mod protobuf;
pub mod random;
pub mod request;
pub mod uncompress;
