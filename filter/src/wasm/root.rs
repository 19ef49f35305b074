//! The root context of a plugin: takes the route table (the plugin configuration, read range by
//! range) and hands every HTTP context an `Rc` of it; its tick hands the VM's counts to Envoy.

use std::borrow::Cow;
use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;

use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{BufferType, ContextType, LogLevel};
use switchyard_table::metrics::FLUSH_EVERY;
use switchyard_table::shards::{ShardStore, Source};

use switchyard_request::loaded::{load, Loaded};
use switchyard_request::uncompress::HostUncompress;

use super::abi::{host_uncompress, log, now_ns, proxy_set_tick_period_milliseconds};
use super::host::HostSharedData;
use super::http::{Http, Shared};
use super::meter::{self, Metrics};

thread_local! {
    /// The VM's shards, kept across every root context's tables: Envoy configures each ECDS update
    /// in a new root context of the same VM, so a push decodes only the shards this VM lacks; and
    /// those another VM of the process validated, it takes from the shared catalogue.
    static SHARDS: RefCell<ShardStore> = RefCell::new(ShardStore::sharing(HostSharedData));
}

/// The plugin configuration, which the host copies into the VM range by range: a push in the
/// sharded form's layout costs a VM the front and the texts of the shards it lacks, not the whole
/// configuration (`switchyard_table::shards::read_ranged`). A host that gives no size may still
/// hand the buffer over whole: it is then copied whole, once.
enum PluginConfiguration {
    /// Read range by range; its size, as the host gave it.
    Ranged(usize),
    /// Copied whole.
    Whole(Vec<u8>),
}

impl PluginConfiguration {
    /// The configuration `on_configure` was told is `size` bytes.
    fn of(size: usize) -> PluginConfiguration {
        match size {
            0 => PluginConfiguration::Whole(
                hostcalls::get_buffer(BufferType::PluginConfiguration, 0, usize::MAX)
                    .ok()
                    .flatten()
                    .unwrap_or_default(),
            ),
            size => PluginConfiguration::Ranged(size),
        }
    }
}

impl Source for PluginConfiguration {
    fn size(&self) -> usize {
        match self {
            PluginConfiguration::Ranged(size) => *size,
            PluginConfiguration::Whole(bytes) => bytes.len(),
        }
    }

    fn read(&self, range: Range<usize>) -> Option<Cow<'_, [u8]>> {
        if let PluginConfiguration::Whole(bytes) = self {
            return bytes.get(range).map(Cow::Borrowed);
        }
        if range.is_empty() {
            return Some(Cow::Borrowed(&[]));
        }
        let wanted = range.len();
        let bytes = hostcalls::get_buffer(BufferType::PluginConfiguration, range.start, wanted)
            .ok()
            .flatten()?;
        (bytes.len() == wanted).then_some(Cow::Owned(bytes))
    }
}

pub(super) struct Root {
    table: Option<Rc<Loaded>>,
    shared: Rc<Shared>,
}

impl Root {
    pub(super) fn new() -> Self {
        Root {
            table: None,
            shared: Rc::new(Shared::new()),
        }
    }
}

impl Context for Root {}

impl RootContext for Root {
    fn on_configure(&mut self, plugin_configuration_size: usize) -> bool {
        let started = now_ns();
        // The counts go out on every tick, a table accepted or not (the requests a root without
        // one answers 503 are counted too). SAFETY: a plain host call without pointers. Refused:
        // the counts stay in the VM.
        unsafe { proxy_set_tick_period_milliseconds(FLUSH_EVERY.as_millis() as u32) };
        let config = PluginConfiguration::of(plugin_configuration_size);
        let loaded = SHARDS.with(|store| match store.try_borrow_mut() {
            Ok(mut store) => load(&config, &HostUncompress(host_uncompress), &mut store),
            // Never: nothing else borrows the store while a root configures.
            Err(_) => Err(switchyard_request::config::ConfigError::Unreadable),
        });
        match loaded {
            Ok((table, stats)) => {
                // Whole microseconds: float formatting would add ~15 KB to the module.
                let micros = (started.zip(now_ns())).map_or(0, |(started, now)| now.saturating_sub(started) / 1_000);
                let shards = stats.map_or(String::new(), |s| {
                    format!(
                        " ({} shards, {} new decoded, {} new from the catalogue)",
                        s.shards, s.decoded, s.from_catalogue
                    )
                });
                log(
                    LogLevel::Info,
                    &format!(
                        "table accepted: generation {:?}, {}, loaded in {} us{shards}",
                        table.generation(),
                        table.summary(),
                        micros
                    ),
                );
                let _ = hostcalls::record_metric(self.shared.metrics.rules, table.rule_count() as u64);
                let folded = table.head().metrics_fold().map_or(0, |fold| fold.folded);
                let _ = hostcalls::record_metric(self.shared.metrics.folded, u64::from(folded));
                Metrics::increment(self.shared.metrics.accepted);
                self.table = Some(Rc::new(table));
                true
            }
            Err(error) => {
                // True in every host: Envoy configures a fresh root for each ECDS update and keeps
                // serving through the previous filter configuration, while host-sim (and a host
                // that reconfigures in place) keeps this root's table; this root cannot tell which.
                log(
                    LogLevel::Error,
                    &format!("table refused (the table serving before, if any, keeps serving): {error}"),
                );
                Metrics::increment(self.shared.metrics.refused);
                false
            }
        }
    }

    fn on_tick(&mut self) {
        meter::flush(&self.shared.metrics.totals);
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Http::new(self.table.clone(), Rc::clone(&self.shared))))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}
