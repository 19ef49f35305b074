//! The shards a proxy keeps decoded (validated, indexed [`RouteTable`]s of their own rules), least
//! recently used first out, bounded by their rules: [`DECODED_RULES`], or more when one request
//! may need more (a host of more rules than that: [`Decoded::set_floor`]).
//!
//! Shared by every table of a proxy made of the same [`super::ShardStore`]: a shard is the same
//! shard in the old table and the new one, so a push does not throw away what requests decoded.

use std::sync::{Arc, Weak};

use super::shard::Shard;
use crate::RouteTable;

/// How many rules the decoded shards may hold together (the least recently used shard goes first;
/// the shard just decoded always stays). About 770 bytes a rule decoded (BENCHMARKS.md, "Filter
/// memory"): some 3 MiB per proxy, whatever the table's size.
pub const DECODED_RULES: usize = 4096;

/// The decoded shards.
#[derive(Debug)]
pub(crate) struct Decoded {
    /// The bound on the rules held ([`DECODED_RULES`] unless a test asks for another).
    bound: usize,
    /// How many rules one request of the table being served may need decoded at once: the bound
    /// is never below it, or such a request would evict its own shards and decode them all again
    /// at every request.
    floor: usize,
    entries: Vec<Entry>,
    rules: usize,
    tick: u64,
    /// How many shards were decoded for a request (not at load).
    decoded_on_demand: u64,
}

#[derive(Debug)]
struct Entry {
    /// The shard's id in its store.
    id: u64,
    /// Gone once no table holds the shard: the entry is then dropped.
    shard: Weak<Shard>,
    table: Arc<RouteTable>,
    last_used: u64,
}

impl Default for Decoded {
    fn default() -> Self {
        Decoded::with_bound(DECODED_RULES)
    }
}

impl Decoded {
    /// An empty set of decoded shards holding at most `bound` rules (but always the last decoded).
    pub fn with_bound(bound: usize) -> Decoded {
        Decoded {
            bound,
            floor: 0,
            entries: Vec::new(),
            rules: 0,
            tick: 0,
            decoded_on_demand: 0,
        }
    }

    /// The decoded shard `id`, marked as just used.
    pub fn get(&mut self, id: u64) -> Option<Arc<RouteTable>> {
        self.tick += 1;
        let entry = self.entries.iter_mut().find(|e| e.id == id)?;
        entry.last_used = self.tick;
        Some(Arc::clone(&entry.table))
    }

    /// Keeps `table`, the decoded `shard`, dropping the shards no table holds any more and then the
    /// least recently used while the bound is passed. `on_demand`: decoded for a request.
    pub fn insert(&mut self, shard: &Arc<Shard>, table: Arc<RouteTable>, on_demand: bool) {
        self.tick += 1;
        self.decoded_on_demand += u64::from(on_demand);
        self.entries.retain(|e| e.shard.strong_count() > 0 && e.id != shard.id);
        self.rules = table.rules().len() + self.entries.iter().map(|e| e.table.rules().len()).sum::<usize>();
        while self.rules > self.bound.max(self.floor) {
            let Some(oldest) = (0..self.entries.len()).min_by_key(|&i| self.entries[i].last_used) else {
                break;
            };
            let gone = self.entries.swap_remove(oldest);
            self.rules -= gone.table.rules().len();
        }
        self.entries.push(Entry {
            id: shard.id,
            shard: Arc::downgrade(shard),
            table,
            last_used: self.tick,
        });
    }

    /// Keeps at least `rules` rules decoded from now on (the most one request of the table served
    /// may need: [`super::ShardedTable::widest_request`]).
    pub fn set_floor(&mut self, rules: usize) {
        self.floor = rules;
    }

    /// How many shards are decoded, and how many rules they hold.
    pub fn held(&self) -> (usize, usize) {
        (self.entries.len(), self.rules)
    }

    /// How many shards requests had to decode so far.
    pub fn decoded_on_demand(&self) -> u64 {
        self.decoded_on_demand
    }
}
