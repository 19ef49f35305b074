//! Switchyard's router as a native Envoy dynamic module: `libswitchyard_module.so`, loaded by
//! Envoy's `envoy.extensions.filters.http.dynamic_modules` HTTP filter, with the same table, rules,
//! actions, local replies, client-header hiding and metrics names as the proxy-wasm filter.
//!
//! The request logic is the wasm filter's own, from the host-independent crate both are thin shells
//! over (`switchyard-request`), so one source serves both forms:
//! - [`config`] (with [`protobuf`]) and [`loaded`]: the filter configuration, in any form the wasm
//!   filter accepts, decoded into a validated, indexed table: whole, or in shards
//!   ([`switchyard_table::shards`]) of which a push decodes only those new to the process;
//! - [`headers`], [`host`], [`request`]: one request's trip over the [`host::Host`] trait;
//! - [`random`]: SplitMix64 for weighted backends (one generator per worker thread here).
//!
//! The module's own files:
//! - [`abi`]: the hand-written bindings to Envoy 1.40's ABI (`abi/abi.h`) that Switchyard needs;
//! - [`envoy_host`]: [`host::Host`] over Envoy's callbacks;
//! - [`state`]: the table per filter configuration (an `Arc`, decoded once on the main thread,
//!   shared by every worker), the metrics, a stream's state;
//! - [`shared_table`]: that `Arc`'s table, freed off the request path when it is large;
//! - [`background`]: the module's own threads, at a lower priority than Envoy's, which decode a
//!   large pushed table and free an old one;
//! - [`counters`]: the rate limits' counts, one store for the process;
//! - [`resource_metrics`]: the per-resource request metrics, with Envoy's labels, counted per
//!   worker and handed to Envoy once a second;
//! - [`auth_callout`]: external authentication's subrequest over Envoy's HTTP callout;
//! - [`cluster_specifier`]: the module as Envoy's cluster specifier, picking the cluster during the
//!   route match by the table of the filter beside it;
//! - [`exports`]: the event hooks Envoy calls, each catching any unwind.
//!
//! Build: `make build-module` (`target/module/libswitchyard_module.so`); use: `module/README.md`.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub use switchyard_request::{config, headers, host, loaded, protobuf, random, request};

pub mod abi;
pub mod auth_callout;
pub mod background;
pub mod cluster_specifier;
pub mod counters;
pub mod envoy_host;
pub mod exports;
pub mod resource_metrics;
pub mod shared_table;
pub mod state;
