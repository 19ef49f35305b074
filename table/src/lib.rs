//! Switchyard's route table: the contract between the sidecar, which compiles it, and the filter,
//! which obeys it.
//!
//! - [`format`]: the table document's types, documented in `table/README.md`; written with serde,
//!   read by hand (`read`, [`TableSpec::from_value`]) so the filter links no serde derive.
//! - [`compact`]: the compact form of the document every sink of the sidecar carries.
//! - [`shards`]: the sharded compact form, which a proxy loads a shard at a time and keeps from one
//!   table to the next ([`shards::ShardStore`], [`shards::ShardedTable`]).
//! - [`doc`]: the document as a flat tree borrowing its strings, which the reader walks.
//! - [`json`]: JSON text read straight into that tree (`serde_json`'s parser, no `Value`).
//! - `forms`: a document of any form (plain, compact, sharded) read into a [`RouteTable`].
//! - [`RouteTable`]: validation (`TryFrom<TableSpec>`, errors naming rule and field) and the index.
//! - [`RouteTable::route`]: the matcher. The winner is the first rule in table order whose host,
//!   path and conditions all match (ROUTING.md §4); its cost follows the request, not the table.
//! - [`field`]: HTTP field syntax, which header values, cluster names and rewrites must follow.
//! - [`oracle`]: the matcher's plain definition, which the index must agree with (tests, fuzzing).
//! - [`precedence`]: the priority keys the compiler sorts by.
//! - [`redirect`]: redirect locations, `${scheme}`, `${host}`, `${request_uri}`, `${http_host}`,
//!   `${args}`, the path regex's groups … filled in per request (NGINX's and ingress-nginx's forms).
//! - [`canary`]: ingress-nginx's canary, decided per request by header, cookie and weight.
//! - [`policy`]: a rule's policies (the body limit, address ranges) per request; [`cors`]: its
//!   CORS answers; [`ratelimit`]: its request rates per client address.
//! - [`metrics`]: the per-resource request metrics' names, labels and series, for both filter
//!   forms and the bootstraps that read them.
//! - [`affinity`]: the key a route's request is hashed to one endpoint by (cookie affinity, request
//!   hashes), made per request.
//! - [`rewrite`]: regex rewrites (`rewrite_regex`), the path and headers rebuilt from a regex's groups
//!   per request.
//!
//! No proxy-wasm and no Kubernetes here: the same code runs natively and on wasm32.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]
#![warn(missing_docs)]

pub mod affinity;
pub mod basic_auth;
pub mod canary;
pub mod compact;
mod condition;
pub mod cors;
pub mod doc;
mod error;
pub mod external_auth;
pub mod field;
pub mod format;
mod forms;
mod host;
mod index;
pub mod json;
pub mod metrics;
pub mod oracle;
mod path;
pub mod policy;
pub mod precedence;
pub mod ratelimit;
mod read;
pub mod redirect;
mod request;
pub mod rewrite;
pub mod shards;
mod simple;
pub mod synthetic;
mod table;

pub use condition::Condition;
pub use error::{Problem, TableError};
pub use format::{
    ActionSpec, Affinity, AffinityCookie, Backend, Canary, CanaryHeader, ConditionSource, ConditionSpec, Cors,
    CorsSemantics, DirectResponse, HashPart, HeaderValue, IpRange, MatchOp, NoRoute, OriginRegex, PathSpec, Policy,
    Rate, RateLimit, Redirect, RegexRewrite, RouteAction, RuleSpec, TableSpec,
};
pub use host::{normalize_authority, HostPattern};
pub use path::{query_string, request_path, PathPattern};
pub use redirect::{RedirectTemplate, RequestParts};
pub use request::{cookie_pairs, query_pairs, RequestView, SimpleRequest};
pub use table::{Candidate, Decision, RouteTable, Rule};
