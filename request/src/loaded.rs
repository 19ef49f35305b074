//! The table a root context serves: whole ([`RouteTable`], from JSON or the `table_z` compact form)
//! or in shards ([`ShardedTable`], from the sharded form `table_shards`), loaded through the VM's
//! [`ShardStore`] so that a push decodes only the shards the VM has not seen.
//!
//! Envoy keeps a plugin's VM across ECDS updates of its configuration (the same code and VM
//! configuration) and configures a new root context in it, so a store kept by the VM (the filter's
//! `wasm/root.rs` thread local) outlives every table; a new VM starts with an empty store and
//! decodes every shard. The native module keeps one store for the process, whose shards stay
//! decoded (its tables serve every worker).
//!
//! [`Loaded::handle`] takes one request through either kind, as both the wasm filter and the
//! native module serve it.

use switchyard_table::compact::Inflater;
use switchyard_table::shards::{self, LoadStats, Parts, ShardStore, ShardedTable, Source};
use switchyard_table::{Decision, RequestView, RouteTable, TableError};

use crate::config::{read_config, ConfigError};
use crate::host::Host;
use crate::request::{handle_sharded, handle_whole, Handled, RuleRef};

/// A table ready to serve.
pub enum Loaded {
    /// Decoded whole.
    Whole(RouteTable),
    /// Held in shards.
    Sharded(ShardedTable),
}

impl Loaded {
    /// The table's generation label.
    pub fn generation(&self) -> &str {
        match self {
            Loaded::Whole(table) => table.generation(),
            Loaded::Sharded(table) => table.generation(),
        }
    }

    /// The number of rules.
    pub fn rule_count(&self) -> usize {
        match self {
            Loaded::Whole(table) => table.rules().len(),
            Loaded::Sharded(table) => table.rule_count(),
        }
    }

    /// `N rules, H hosts` for the line that logs a table accepted; the hosts only when known (a
    /// sharded table counts them when it builds its host index, at its first request; the native
    /// module's store builds it at load).
    pub fn summary(&self) -> String {
        let hosts = match self {
            Loaded::Whole(table) => Some(table.host_count()),
            Loaded::Sharded(table) => table.hosts_indexed().then(|| table.host_count()),
        };
        match hosts {
            Some(hosts) => format!("{} rules, {hosts} hosts", self.rule_count()),
            None => format!("{} rules", self.rule_count()),
        }
    }

    /// The table's settings (cluster header, no-route policy, debug header); for a whole table, the
    /// table itself.
    pub fn head(&self) -> &RouteTable {
        match self {
            Loaded::Whole(table) => table,
            Loaded::Sharded(table) => table.head(),
        }
    }
}

impl Loaded {
    /// Routes the request `host` holds and acts on it ([`handle_request`] or [`handle_sharded`],
    /// whose shards `inflater` inflates when a request needs one decoded).
    pub fn handle(&self, host: &mut impl Host, random: u64, inflater: &dyn Inflater) -> Handled {
        match self {
            Loaded::Whole(table) => {
                let (outcome, response) = handle_whole(host, table, random);
                Handled {
                    outcome,
                    rule: outcome.position().map(RuleRef::Whole),
                    error: None,
                    response,
                }
            }
            Loaded::Sharded(table) => handle_sharded(host, table, random, inflater),
        }
    }

    /// The winner of `request` (without acting on it), handed to `found`; an error when a shard it
    /// needed could not be decoded.
    pub fn route<R>(
        &self,
        request: &impl RequestView,
        random: u64,
        inflater: &dyn Inflater,
        found: impl FnOnce(Option<Decision<'_>>) -> R,
    ) -> Result<R, TableError> {
        match self {
            Loaded::Whole(table) => Ok(found(table.route(request, random))),
            Loaded::Sharded(table) => table.route(request, random, inflater, |w| found(w.map(|w| w.decision))),
        }
    }
}

/// Decodes the plugin configuration: the sharded form through `store` (the shards it lacks are
/// read, decoded and validated; the others are its own), any other form whole. The sharded form
/// as its encoder writes it is read by ranges, the rest of the configuration left unread
/// ([`shards::read_ranged`]); anything else is read whole first. `LoadStats` says what the sharded
/// form cost.
pub fn load(
    config: &dyn Source,
    inflater: &dyn Inflater,
    store: &mut ShardStore,
) -> Result<(Loaded, Option<LoadStats>), ConfigError> {
    if let Some(parts) = shards::read_ranged(config) {
        return load_sharded(parts, inflater, store);
    }
    // A host that hands over nothing has given no configuration.
    let whole = config.read(0..config.size()).unwrap_or_default();
    read_config(&whole, &mut |doc, node| match shards::read(doc, node) {
        Some(parts) => load_sharded(parts.map_err(ConfigError::Table)?, inflater, store),
        None => RouteTable::from_tree_with(doc, node, inflater)
            .map(|table| (Loaded::Whole(table), None))
            .map_err(ConfigError::Table),
    })
}

fn load_sharded(
    parts: Parts<'_>,
    inflater: &dyn Inflater,
    store: &mut ShardStore,
) -> Result<(Loaded, Option<LoadStats>), ConfigError> {
    let (table, stats) = store.load(parts, inflater).map_err(ConfigError::Table)?;
    Ok((Loaded::Sharded(table), Some(stats)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostCallFailed;
    use crate::request::{handle_request, handle_sharded, Outcome, RuleRef};
    use crate::uncompress::HostUncompress;
    use switchyard_table::compact::Miniz;
    use switchyard_table::shards::ShardEncoder;
    use switchyard_table::{synthetic, TableSpec};

    fn host_inflater() -> HostUncompress<impl Fn(&[u8]) -> Result<Vec<u8>, HostCallFailed>> {
        HostUncompress(|deflated: &[u8]| Miniz.inflate_zlib(deflated, usize::MAX).map_err(|_| HostCallFailed(3)))
    }

    #[test]
    fn a_wrapped_sharded_table_loads_in_shards_and_a_json_one_whole() {
        let table = synthetic::table(1_000);
        let text = ShardEncoder::new().encode(&table).unwrap();
        let wrapped = format!(r#"{{"value": {}}}"#, serde_json::to_string(&text).unwrap());
        let mut store = ShardStore::new();
        let (loaded, stats) = load(&wrapped.as_bytes(), &host_inflater(), &mut store).unwrap();
        assert!(matches!(loaded, Loaded::Sharded(_)));
        assert_eq!(loaded.rule_count(), 1_000);
        assert_eq!(stats.map(|s| s.decoded), stats.map(|s| s.shards));
        let json = serde_json::to_string(&table).unwrap();
        let (loaded, stats) = load(&json.as_bytes(), &host_inflater(), &mut store).unwrap();
        assert!(matches!(loaded, Loaded::Whole(_)) && stats.is_none());
    }

    #[test]
    fn the_filter_answers_as_the_whole_table_does() {
        use crate::request::tests::FakeHost;
        // The debug header asked for: the winner's shard is kept for it.
        let table = TableSpec {
            debug_rule_header: true,
            ..synthetic::table(2_000)
        };
        let text = ShardEncoder::new().encode(&table).unwrap();
        let (Loaded::Sharded(sharded), _) = load(&text.as_bytes(), &host_inflater(), &mut ShardStore::new()).unwrap()
        else {
            panic!("not sharded")
        };
        let whole = RouteTable::try_from(table.clone()).unwrap();
        for (i, rule) in table.rules.iter().enumerate().step_by(13) {
            let authority = rule
                .host
                .clone()
                .unwrap_or_else(|| "other.example".into())
                .replace('*', "w");
            let path = format!("/{i}/a");
            let mut a = FakeHost::new(&authority, &path, &[("x-route-cluster", "client")]);
            let mut b = FakeHost::new(&authority, &path, &[("x-route-cluster", "client")]);
            let expected = handle_request(&mut a, &whole, i as u64);
            let got = handle_sharded(&mut b, &sharded, i as u64, &host_inflater());
            assert_eq!(got.outcome, expected, "{authority}{path}");
            assert!(got.error.is_none());
            assert_eq!(format!("{:?}", b), format!("{:?}", a), "{authority}{path}");
            if let Outcome::Routed { position } = expected {
                let Some(RuleRef::Shard(shard, local)) = got.rule else {
                    panic!("no shard kept for the debug header")
                };
                assert_eq!(shard.rules()[local].name(), whole.rules()[position].name());
            }
        }
    }

    #[test]
    fn a_shard_that_no_longer_inflates_answers_503_not_a_later_rule() {
        use crate::request::tests::FakeHost;
        let table = synthetic::table(1_000);
        let text = ShardEncoder::new().encode(&table).unwrap();
        let mut store = ShardStore::with_decoded_rules(0);
        let (Loaded::Sharded(sharded), _) = load(&text.as_bytes(), &host_inflater(), &mut store).unwrap() else {
            panic!("not sharded")
        };
        let failing = HostUncompress(|_: &[u8]| Err(HostCallFailed(3)));
        let request = synthetic::typical_request(1_000);
        let mut host = FakeHost::new(&request.authority, &request.path, &[]);
        let got = handle_sharded(&mut host, &sharded, 0, &failing);
        assert_eq!(
            got.outcome,
            Outcome::Direct {
                position: usize::MAX,
                status: 503
            }
        );
        assert!(got.error.is_some());
    }
}
