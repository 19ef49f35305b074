//! What the module keeps: one [`ModuleConfig`] per Envoy filter configuration (the decoded, indexed
//! table behind an `Arc`, shared by every worker thread; its metrics), and one small [`Stream`]
//! per HTTP stream (only the winning rule, for the debug response header).
//!
//! The table is decoded and indexed once, when Envoy creates the filter configuration (on its main
//! thread, or for a large one on a thread of the module's while the main thread waits): an ECDS
//! push creates a new one; the old one serves until Envoy swaps them and destroys it. In the
//! sharded form only the shards new to the process are decoded (the process's [`ShardStore`]
//! keeps the others, decoded). Workers only read it: nothing per request or per worker copies it.

use std::cell::Cell;

use crate::auth_callout::PendingAuth;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Instant;

use switchyard_table::compact::Miniz;
use switchyard_table::shards::ShardStore;

use crate::abi::{self, ConfigEnvoyPtr, FilterEnvoyPtr, ModuleBuffer, LOG_ERROR, LOG_INFO, LOG_WARN, METRICS_SUCCESS};
use crate::cluster_specifier::{is_actions_filter, TableSlot};
use crate::loaded::load;
use crate::random::Random;
use switchyard_table::ratelimit::{self, Held};

use crate::counters::ProcessCounters;
use crate::request::{Followup, RuleRef};
use crate::resource_metrics::{Flusher, ResourceMetrics};
use crate::shared_table::{SharedTable, Table};
use switchyard_request::meter::SeriesId;

/// The metrics, named as the wasm filter's (Envoy prefixes them with the filter's metrics
/// namespace, `dynamicmodulescustom` by default, where the wasm filter's get `wasmcustom`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Metrics {
    routed: Option<usize>,
    route_failed: Option<usize>,
    not_routed: Option<usize>,
    direct: Option<usize>,
    accepted: Option<usize>,
    refused: Option<usize>,
    rules: Option<usize>,
}

/// Which counter a request counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// `switchyard_requests_routed`.
    Routed,
    /// `switchyard_requests_route_failed`.
    RouteFailed,
    /// `switchyard_requests_not_routed`.
    NotRouted,
    /// `switchyard_requests_direct_response`.
    Direct,
}

impl Metrics {
    /// Defines the metrics in `config`'s stats scope (only possible while Envoy creates it); a
    /// metric Envoy refuses is left out, never an error.
    ///
    /// # Safety
    /// `config` is the configuration Envoy is creating (the running `config_new` hook's).
    pub unsafe fn define(config: ConfigEnvoyPtr) -> Metrics {
        let define = |name: &str, gauge: bool| {
            let mut id = 0usize;
            // SAFETY: `config` is the configuration Envoy is creating; the name is lent for the call.
            let result = unsafe {
                if gauge {
                    abi::envoy_dynamic_module_callback_http_filter_config_define_gauge(
                        config,
                        ModuleBuffer::of(name),
                        std::ptr::null_mut(),
                        0,
                        &mut id,
                    )
                } else {
                    abi::envoy_dynamic_module_callback_http_filter_config_define_counter(
                        config,
                        ModuleBuffer::of(name),
                        std::ptr::null_mut(),
                        0,
                        &mut id,
                    )
                }
            };
            (result == METRICS_SUCCESS).then_some(id)
        };
        Metrics {
            routed: define("switchyard_requests_routed", false),
            route_failed: define("switchyard_requests_route_failed", false),
            not_routed: define("switchyard_requests_not_routed", false),
            direct: define("switchyard_requests_direct_response", false),
            accepted: define("switchyard_tables_accepted", false),
            refused: define("switchyard_tables_refused", false),
            rules: define("switchyard_rules", true),
        }
    }

    /// Counts one request on the stream whose Envoy-side filter is `filter`.
    ///
    /// # Safety
    /// `filter` is the running hook's stream, created from the configuration that defined these metrics.
    pub unsafe fn count(&self, filter: FilterEnvoyPtr, counted: Counted) {
        let id = match counted {
            Counted::Routed => self.routed,
            Counted::RouteFailed => self.route_failed,
            Counted::NotRouted => self.not_routed,
            Counted::Direct => self.direct,
        };
        if let Some(id) = id {
            // SAFETY: `filter` is the running hook's stream, created from the configuration that
            // defined `id`.
            unsafe {
                abi::envoy_dynamic_module_callback_http_filter_increment_counter(
                    filter,
                    id,
                    std::ptr::null_mut(),
                    0,
                    1,
                );
            }
        }
    }

    /// # Safety
    /// `config` is the configuration that defined `id`, during its `config_new` hook.
    unsafe fn config_count(config: ConfigEnvoyPtr, id: Option<usize>) {
        if let Some(id) = id {
            // SAFETY: `config` is the configuration that defined `id`, still being created.
            unsafe {
                abi::envoy_dynamic_module_callback_http_filter_config_increment_counter(
                    config,
                    id,
                    std::ptr::null_mut(),
                    0,
                    1,
                );
            }
        }
    }
}

/// One filter configuration's state: the table every worker reads.
pub struct ModuleConfig {
    /// The decoded, validated, indexed table.
    pub table: SharedTable,
    /// The configuration's metrics.
    pub metrics: Metrics,
    /// Its per-resource request metrics.
    pub resource_metrics: ResourceMetrics,
    /// What has them handed to Envoy once a second (stopped when the configuration goes).
    pub flusher: Option<Flusher>,
    /// Whether a refused cluster header was logged (once per configuration, not per request).
    pub route_failure_logged: AtomicBool,
    /// Whether a refused auth-service callout was logged (once per configuration).
    pub auth_failure_logged: AtomicBool,
    /// Beside the cluster specifier (the filter's name says so: [`is_actions_filter`]): the slot the
    /// table is published in; the filter then answers actions only. `None`: the filter routes by
    /// the cluster header.
    pub published: Option<Arc<TableSlot>>,
}

impl Drop for ModuleConfig {
    fn drop(&mut self) {
        if let Some(slot) = &self.published {
            slot.retract(&self.table);
        }
    }
}

// Workers share one `ModuleConfig` through a raw pointer Envoy hands them; this is what makes that
// sound.
const _: () = {
    const fn shared_across_threads<T: Send + Sync>() {}
    shared_across_threads::<ModuleConfig>();
};

/// The process's shards, kept from one filter configuration to the next, each decoded once: a push
/// in the sharded form (what `switchyard watch` writes) decodes and indexes only the shards new to
/// the process, and the next table shares the others with the one serving (by `Arc`), so a push of
/// one changed rule neither decodes nor frees the rest of the table.
static SHARDS: LazyLock<Mutex<ShardStore>> = LazyLock::new(|| Mutex::new(ShardStore::keeping_every_shard_decoded()));

/// Configurations of at least this many bytes are decoded on a thread of the module's, at a lower
/// priority than Envoy's ([`crate::background`]); smaller ones (a 10,000-rule compact table is
/// about 80 KB, decoded in some 20 ms) on Envoy's main thread, which calls the hook.
pub const DECODED_OFF_THREAD_FROM: usize = 256 * 1024;

impl ModuleConfig {
    /// Decodes `config` (the table, in any form the wasm filter accepts) for the configuration
    /// Envoy is creating for the filter named `name`; logs one line either way, as the wasm filter
    /// does. `None` refuses it. A filter beside the cluster specifier publishes the table for it.
    ///
    /// # Safety
    /// `config_envoy` is the configuration Envoy is creating (the running `config_new` hook's).
    pub unsafe fn load(config_envoy: ConfigEnvoyPtr, name: &str, config: &[u8]) -> Option<ModuleConfig> {
        // SAFETY: the caller's contract.
        let metrics = unsafe { Metrics::define(config_envoy) };
        // SAFETY: as above.
        let resource_metrics = unsafe { ResourceMetrics::define(config_envoy) };
        let started = Instant::now();
        let decode = || {
            let mut store = SHARDS.lock().unwrap_or_else(PoisonError::into_inner);
            load(&config, &Miniz, &mut store)
        };
        let decoded = if config.len() >= DECODED_OFF_THREAD_FROM {
            // Inline when no thread could be made (or the decode panicked: it panics again here,
            // and the hook's guard refuses the configuration).
            crate::background::run("switchyard-load", decode).unwrap_or_else(decode)
        } else {
            decode()
        };
        match decoded {
            Ok((table, stats)) => {
                let shards = stats.map_or(String::new(), |s| {
                    format!(" ({} shards, {} new decoded)", s.shards, s.decoded)
                });
                abi::log(
                    LOG_INFO,
                    &format!(
                        "table accepted: generation {:?}, {}, loaded in {} us{shards}",
                        table.generation(),
                        table.summary(),
                        started.elapsed().as_micros()
                    ),
                );
                // SAFETY: the caller's contract.
                unsafe { Metrics::config_count(config_envoy, metrics.accepted) };
                if let Some(id) = metrics.rules {
                    // SAFETY: as `config_count`.
                    unsafe {
                        abi::envoy_dynamic_module_callback_http_filter_config_set_gauge(
                            config_envoy,
                            id,
                            std::ptr::null_mut(),
                            0,
                            table.rule_count() as u64,
                        );
                    }
                }
                let folded = table.head().metrics_fold().map_or(0, |fold| fold.folded);
                // SAFETY: as `config_count`.
                unsafe { resource_metrics.set_folded(config_envoy, folded) };
                let table = Table::shared(table);
                let published = is_actions_filter(name).then(|| {
                    let slot = TableSlot::named(name);
                    slot.publish(&table);
                    slot
                });
                // SAFETY: as `config_count`.
                let flusher = unsafe { Flusher::start(config_envoy) };
                if flusher.is_none() {
                    abi::log(
                        LOG_WARN,
                        "no thread to hand Envoy the per-resource request metrics: this configuration's counts wait for the next one's",
                    );
                }
                Some(ModuleConfig {
                    table,
                    metrics,
                    resource_metrics,
                    flusher,
                    route_failure_logged: AtomicBool::new(false),
                    auth_failure_logged: AtomicBool::new(false),
                    published,
                })
            }
            Err(error) => {
                // Envoy refuses the configuration: at start-up it does not start, after an ECDS push
                // the filter configuration serving before keeps serving.
                abi::log(
                    LOG_ERROR,
                    &format!("table refused (the table serving before, if any, keeps serving): {error}"),
                );
                // SAFETY: the caller's contract.
                unsafe { Metrics::config_count(config_envoy, metrics.refused) };
                None
            }
        }
    }

    /// Logs a refused cluster header, the first time only.
    pub fn log_route_failure(&self, rule: Option<&RuleRef>) {
        if self.route_failure_logged.swap(true, Ordering::Relaxed) {
            return;
        }
        let rule = rule.and_then(|r| r.name(self.table.head())).unwrap_or("?");
        abi::log(
            LOG_ERROR,
            &format!(
                "setting {} failed (Envoy refused the header) for rule {rule:?}: the request goes on without a \
                 cluster; counted in switchyard_requests_route_failed, logged once",
                self.table.head().cluster_header()
            ),
        );
    }
}

impl ModuleConfig {
    /// Logs a callout to an auth service's cluster that Envoy refused, the first time only.
    pub fn log_auth_failure(&self, cluster: &str, code: u32) {
        if self.auth_failure_logged.swap(true, Ordering::Relaxed) {
            return;
        }
        abi::log(
            LOG_ERROR,
            &format!(
                "the auth service's cluster {cluster:?} cannot be called (callout result {code}): its requests are \
                 answered 500; logged once"
            ),
        );
    }
}

/// One HTTP stream's state.
pub struct Stream {
    /// The configuration that created the stream; Envoy keeps it alive while the stream lives.
    pub config: *const ModuleConfig,
    /// The winning rule, kept only when the table asks for the debug response header.
    pub rule: Cell<Option<RuleRef>>,
    /// What the upstream's response gets: `Strict-Transport-Security` (ROUTING.md §8.4), an
    /// affinity's `Set-Cookie`. (A body limit the request's headers did not settle is not counted
    /// by the module: docs/deploy-envoy.md, "The wasm filter or the native module".)
    pub followup: Cell<Followup>,
    /// The request's place among its address's requests in flight (a rate limit's
    /// `limit-connections`), let go when the stream goes, however it ended.
    pub held: Cell<Option<Held>>,
    /// The subrequest to the rule's auth service while the request waits for its answer.
    pub auth: Cell<Option<PendingAuth>>,
    /// The series the request is counted in when the stream completes (its winner's), and when
    /// its headers reached the module.
    pub series: Cell<Option<(SeriesId, Instant)>>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Some(place) = self.held.take() {
            ratelimit::leave(ProcessCounters::get(), &place);
        }
    }
}

thread_local! {
    /// Each worker's generator for weighted backends, seeded once per thread.
    static RANDOM: Cell<Random> = Cell::new(Random::from_entropy());
}

/// The next random draw of this thread.
pub fn next_random() -> u64 {
    RANDOM.with(|cell| {
        let mut random = cell.get();
        let value = random.next_u64();
        cell.set(random);
        value
    })
}
