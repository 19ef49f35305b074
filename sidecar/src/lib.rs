//! Switchyard's sidecar: compiles Ingress, IngressClass and HTTPProxy manifests into the route table
//! (`switchyard compile`), explains the table's decision for one request (`switchyard explain`), and
//! keeps proxies up to date as the manifests change (`switchyard watch`).
//!
//! The compiler is a pure pipeline, [`pipeline::compile`]: (objects, options) → (table, status),
//! implementing ROUTING.md sections 1 to 4 and the compiler's part of 5 (backend ports, 502 and 503
//! rules). Modules, one per job:
//!
//! - [`load`]: files, multi-document YAML, `kind: List`, old Ingress API versions → [`objects::Objects`].
//! - [`model`]: what every stage shares (options, the draft rule, rule validation, host
//!   normalisation); a leaf that imports no stage. [`pipeline`] orders the stages.
//! - [`class`]: class eligibility (§1). [`ingress`] and [`httpproxy`]: the processors, each a struct
//!   with one small method per decision (§3 for inclusion), both given [`processor::Inputs`].
//!   [`collisions`]: host ownership (§2). [`order`]: the priority order (§4) and the generation
//!   hash. [`services`]: backend ports through Services (§5). [`status`]: the status report.
//! - [`explain`]: the decision for one request, from the same matcher the filter runs.
//! - [`watch`]: `switchyard watch`, the live half: sources (a folder, a cluster) → the same
//!   pipeline → sinks (Envoy's ECDS file, Istio, a table file), status back to Kubernetes.
//! - [`cli`]: the command line; [`flags`]: the compiler's flags that `compile` and `watch` share.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod class;
pub mod cli;
pub mod collisions;
pub mod explain;
pub mod flags;
pub mod httpproxy;
pub mod ingress;
pub mod load;
pub mod model;
pub mod objects;
pub mod order;
pub mod pipeline;
pub mod processor;
pub mod services;
pub mod status;
pub mod watch;

pub use model::{CompileError, HostCollision, Options};
pub use objects::{HTTPProxy, HTTPProxySpec, Objects};
pub use pipeline::{compile, Compiled};
