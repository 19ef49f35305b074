//! Switchyard's sidecar: the command line over the compiler crate, `switchyard_compiler`
//! (`switchyard compile`: manifests → route table; `switchyard explain`: the table's decision for one
//! request), and `switchyard watch`, which keeps proxies up to date as the manifests change. Modules:
//!
//! - [`watch`]: `switchyard watch`, the live half: sources (a folder, a cluster) → the compiler's
//!   pipeline → sinks (Envoy's ECDS file, Istio, a table file), status back to Kubernetes.
//! - [`cli`]: the command line; [`flags`]: the compiler's flags that `compile` and `watch` share.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod cli;
pub mod flags;
pub mod watch;
