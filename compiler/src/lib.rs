//! Switchyard's compiler: Ingress, IngressClass, Service, HTTPProxy, VirtualServer,
//! VirtualServerRoute, TransportServer and GlobalConfiguration objects in, the route table, the L4
//! routes and a status report out. Pure: no I/O runtime, no Kubernetes client; the `switchyard`
//! crate (the CLI and `switchyard watch`) drives it.
//!
//! The data path is [`load`] (manifests → [`objects::Objects`]) then [`pipeline::compile`]:
//! (objects, options) → (table, L4 routes, status), implementing ROUTING.md sections 1 to 4, 6 and
//! the compiler's part of 5 (backend ports, 502 and 503 rules). Modules, one per job:
//!
//! - [`access`]: ROUTING.md §9, access controls: every field that protects something is named by its
//!   processor, and the rules it protects answer 403 unless its owner waived it.
//! - [`objects`]: the kinds. [`objects::Kind`] is the one vocabulary of kinds (its apiVersion,
//!   plural, report rank); [`objects::Objects`] holds one vector per kind, and
//!   [`objects::Objects::each_kind`] is how code does the same to every kind
//!   (docs/contributing/adding-a-kind.md).
//! - [`load`]: files, multi-document YAML, `kind: List`, old Ingress API versions → [`objects::Objects`].
//! - [`model`]: what every stage shares (options, the draft rule, rule validation, host
//!   normalisation); a leaf that imports no stage. [`pipeline`] orders the stages.
//! - [`class`]: class eligibility (§1), which the pipeline applies once to every kind with a class
//!   ([`processor::admit`]). [`processor`]: the processor contract ([`processor::Processor`]: the
//!   objects that are ours and [`processor::Inputs`] in; rules, host claims and what is settled
//!   after the host contest out; statuses into the shared book), as Contour's builder runs a list
//!   of processors ([`pipeline::processors_of`]). [`ingress`] and [`httpproxy`]: the processors of
//!   Ingress and HTTPProxy, each a struct with one small method per decision (§3 for inclusion);
//!   [`annotations`]: an Ingress's annotations read once into a typed value (the router
//!   annotations of §4; ingress-nginx's in [`ingress_nginx`]).
//!   [`collisions`]: host ownership (§2). [`order`]: the priority order (§4), each host by its
//!   ordering policy ([`model::HostOrder`]), and the generation hash. [`services`]: backend ports
//!   through Services (§5). [`status`]: the status report.
//! - [`virtualserver`]: NGINX's VirtualServer and VirtualServerRoute (§6), over [`nginx`] (their
//!   locations, match values and NGINX's order, [`model::HostOrder::Nginx`]).
//! - [`transportserver`]: NGINX's TransportServer and GlobalConfiguration (§6): the L4 routes of
//!   [`l4`], which the HTTP table cannot carry, and their outputs: [`lds`] (Envoy listeners: TLS
//!   passthrough by SNI, TCP and UDP proxies) and [`l4_istio`] (an Istio Gateway and
//!   VirtualService).
//! - [`incremental`]: the same result as [`pipeline::compile`] after a change of a few Ingresses,
//!   compiling only the hosts they touch (the sidecar's `watch` keeps one); it splices its table in
//!   place (`insert`).
//! - [`explain`]: the decision for one request, from the same matcher the filter runs.
//! - [`upstream`] and [`route_config`]: what the gateway needs beside the table: a cluster per
//!   backend, and a route per rule's timeouts and retries.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod access;
pub mod annotations;
pub mod class;
pub mod collisions;
pub mod explain;
pub mod httpproxy;
pub mod https;
pub mod incremental;
pub mod ingress;
pub mod ingress_nginx;
mod insert;
pub mod l4;
pub mod l4_istio;
pub mod lds;
pub mod load;
pub mod model;
pub mod nginx;
pub mod objects;
pub mod order;
pub mod pipeline;
pub mod processor;
pub mod route_config;
pub mod services;
pub mod status;
pub mod transportserver;
pub mod upstream;
pub mod virtualserver;

pub use model::{CompileError, HostCollision, Options};
pub use objects::{HTTPProxy, HTTPProxySpec, Objects};
pub use pipeline::{compile, Compiled};
