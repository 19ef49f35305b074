//! Test support every layer shares: the corpus of ROUTING.md §4 routing cases and the one builder
//! of table rules.
//!
//! The corpus is data (`routing.json`, read by [`routing_cases`]): each case is a table, requests,
//! and the rule each request must reach (or none). Three runners play it: the native matcher
//! (`table/tests/corpus.rs`), the real filter under host-sim (`host-sim/tests/corpus.rs`) and the
//! real filter in Envoy (`tests/e2e/tests/corpus.rs`), so a behaviour is written once and proven at
//! every layer. Cases are named after the behaviour they pin (`exact_host_beats_wildcard`).
//!
//! Rules in `routing.json` are table rules (table/README.md) with one shorthand: `"cluster": C`
//! stands for `"action": {"route": {"backends": [{"cluster": C}]}}`. Within a case every rule has its
//! own cluster, whose service part (`ns/service:port`) names the backend that answers in Envoy.
//!
//! ROUTING.md §7 (ingress-nginx's Ingresses) has its own corpus, `ingress_nginx.json` over the
//! manifests of `ingress-nginx/` (read by [`ingress_nginx_cases`]): each case is compiled from
//! manifests with `switchyard compile`'s flags, natively and through the filter under host-sim.

mod builder;
mod corpus;
mod ingress_nginx;

pub use builder::{rule, RuleBuilder};
pub use corpus::{routing_cases, Case, Order, Probe};
pub use ingress_nginx::{
    access_control_cases, ingress_nginx_cases, manifest_cases, NginxCase, NginxProbe, Want, WantCondition,
};
