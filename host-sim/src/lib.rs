//! host-sim: a proxy-wasm host (ABI 0.2.1) on wasmtime, to run a filter's `.wasm` without Envoy,
//! in tests and benchmarks.
//!
//! ```no_run
//! use switchyard_host_sim::{Request, Sim};
//!
//! let mut sim = Sim::load("target/wasm32-wasip1/release/switchyard_filter.wasm")?;
//! assert!(sim.configure(r#"{"version": 1, "rules": []}"#));
//! let outcome = sim.request(Request::get("http://example.net/bar").header("key", "value").cookie("a", "1"));
//! println!("{} {:?} {:?}", outcome.action, outcome.request_header("x-route-cluster"), outcome.local_status());
//! # Ok::<(), switchyard_host_sim::SimError>(())
//! ```
//!
//! Unlike proxy-wasm's own test framework, every piece of state (header maps, shared data,
//! queues, metrics, clock, logs) lives in the simulator's wasmtime `Store`, so tests run in
//! parallel; there is no script of expected host calls, the host simply answers them as Envoy
//! would; shared data, queues and metrics work, and [`Sim::sibling`] gives a second VM sharing
//! shared data and queues as Envoy's workers do. The engine and each compiled module are cached for
//! the process (and compiled code on disk across processes); a new [`Sim`] only instantiates.
//!
//! Modules: [`abi`] (status codes, map serialization), `memory` (guest memory access), `host`
//! (the host functions, by group), `state` (the store's data), `engine` (engine and module
//! cache), [`sim`] (the lifecycle), [`request`] and [`outcome`] (the API's types), [`bench`] (timing
//! requests, one module or two side by side), [`cli`] (the
//! `host-sim` command).

pub mod abi;
pub mod bench;
pub mod cli;
mod engine;
mod error;
mod host;
mod memory;
pub mod outcome;
pub mod request;
pub mod sim;
mod state;

pub use error::SimError;
pub use host::ProcExit;
pub use outcome::{
    Action, LocalResponse, LogEntry, LogLevel, MetricKind, MetricValue, Metrics, Outcome, Phase, PhaseAction,
    RouteCacheClears,
};
pub use request::{HttpCallResponse, Request, Response};
pub use sim::Sim;
pub use state::{GrpcCall, HttpCall};
