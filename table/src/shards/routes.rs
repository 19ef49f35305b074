//! [`ShardedTable`]: a table made of stored shards. It keeps no rule decoded of its own (its shards
//! may: [`super::ShardStore::keeping_every_shard_decoded`]): a directory
//! from host (by hash: one sorted list of host hash and shard) to the shards holding rules of that
//! host, and each shard's first position. A request's
//! candidate shards are those of its exact host, of its wildcard suffix and of the catch-all; the
//! shards are runs of rules in table order, so the first of them (in table order) whose own table
//! routes the request holds the winner, at the shard's first position plus its position there.
//! Each shard's own [`RouteTable::route`] does the matching, unchanged.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::decoded::Decoded;
use super::directory;
use super::shard::{host_hash, is_wildcard, Shard};
use crate::compact::Inflater;
use crate::error::TableError;
use crate::format::NoRoute;
use crate::host::{normalize_authority, wildcard_suffix};
use crate::request::RequestView;
use crate::table::{Decision, RouteTable};

/// A validated table held as shards, decoded per shard on demand.
#[derive(Debug)]
pub struct ShardedTable {
    /// The table's settings, as a table of no rules.
    head: RouteTable,
    shards: Arc<[Arc<Shard>]>,
    /// Each shard's first position in the table.
    bases: Vec<usize>,
    /// The host directory, built once: at the table's first request, or when asked
    /// ([`ShardedTable::index_hosts`]).
    index: Arc<OnceLock<HostIndex>>,
    /// What the first build of `index` starts from: the table before (its shards and index).
    before: Mutex<Option<Before>>,
    /// The shards holding rules without a host, ascending.
    any: Vec<u32>,
    rules: usize,
    decoded: Arc<Mutex<Decoded>>,
}

/// A table's host directory, and what is counted from it.
///
/// A VM that never routes with a table never builds it: in Envoy the canary (a fresh VM that
/// checks each configuration, then is dropped) skipped a fifth of its load so (BENCHMARKS.md,
/// "The canary's load"), and a worker's first request after a push builds it from the table
/// before's, as its load did.
#[derive(Debug)]
pub(crate) struct HostIndex {
    /// Every shard's host hashes, each with the shard's index, ascending ([`directory`]).
    pub entries: Arc<[directory::Entry]>,
    /// How many distinct host hashes `entries` holds.
    hosts: usize,
    /// At most how many rules one request may need decoded ([`ShardedTable::widest_request`]).
    widest_request: usize,
}

/// The table a [`ShardedTable`] was loaded after, which its index is built from when that table's
/// index was built: a push keeps most shards, whose entries are then renumbered, not sorted again.
#[derive(Debug)]
pub(crate) struct Before {
    pub shards: Arc<[Arc<Shard>]>,
    pub index: Arc<OnceLock<HostIndex>>,
}

/// The winner of a request in a [`ShardedTable`].
#[derive(Debug, Clone, Copy)]
pub struct Winner<'t> {
    /// The rule's position in the whole table.
    pub position: usize,
    /// The decision of the shard's own table (its `position` is the rule's there).
    pub decision: Decision<'t>,
    /// The shard's own table, which the caller may keep (the rule's name, for a response header).
    pub shard: &'t Arc<RouteTable>,
}

impl ShardedTable {
    pub(crate) fn new(
        head: RouteTable,
        shards: Vec<Arc<Shard>>,
        before: Option<Before>,
        decoded: Arc<Mutex<Decoded>>,
    ) -> ShardedTable {
        let mut bases = Vec::with_capacity(shards.len());
        let (mut rules, mut any) = (0, Vec::new());
        for (i, shard) in shards.iter().enumerate() {
            bases.push(rules);
            rules += shard.rules;
            if shard.any_host {
                any.push(i as u32);
            }
        }
        ShardedTable {
            head,
            shards: shards.into(),
            bases,
            index: Arc::default(),
            before: Mutex::new(before),
            any,
            rules,
            decoded,
        }
    }

    /// Shard `i`'s number of rules, from the bases (one array, where the shards are pointers).
    fn rules_of(&self, i: usize) -> usize {
        let end = self.bases.get(i + 1).copied().unwrap_or(self.rules);
        end - self.bases.get(i).copied().unwrap_or(end)
    }

    /// The host index, built now if it was not: from the table before's when that one was built,
    /// else sorted afresh. Raises the decoded shards' floor to the table's widest request.
    fn index(&self) -> &HostIndex {
        self.index.get_or_init(|| {
            let before = self.before.lock().unwrap_or_else(PoisonError::into_inner).take();
            let before = before
                .as_ref()
                .and_then(|before| Some((&before.shards[..], &before.index.get()?.entries[..])));
            let entries = directory::build(&self.shards, before);
            let index = self.count_hosts(entries);
            self.decoded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .set_floor(index.widest_request);
            index
        })
    }

    /// Builds the host index now, if no request did yet: for a process that loads a table off the
    /// threads that serve it (the native module).
    pub fn index_hosts(&self) {
        self.index();
    }

    /// Whether the host index is built.
    pub fn hosts_indexed(&self) -> bool {
        self.index.get().is_some()
    }

    /// The index of `entries`: [`ShardedTable::host_count`] and [`ShardedTable::widest_request`]
    /// counted in one pass over them (at 100,000 rules some 80,000 entries).
    fn count_hosts(&self, entries: Arc<[directory::Entry]>) -> HostIndex {
        let (mut hosts, mut exact, mut wildcard) = (0, 0, 0);
        let mut run: Option<(u64, usize)> = None;
        let mut close = |run: Option<(u64, usize)>| {
            if let Some((hash, rules)) = run {
                let widest = if is_wildcard(hash) { &mut wildcard } else { &mut exact };
                *widest = (*widest).max(rules);
                hosts += 1;
            }
        };
        for &(hash, shard) in entries.iter() {
            let rules = self.rules_of(shard as usize);
            match &mut run {
                Some((current, sum)) if *current == hash => *sum += rules,
                _ => close(run.replace((hash, rules))),
            }
        }
        close(run);
        let hostless: usize = self.any.iter().map(|&shard| self.rules_of(shard as usize)).sum();
        HostIndex {
            entries,
            hosts,
            widest_request: (exact + wildcard + hostless).min(self.rules),
        }
    }

    /// What the next table of the store is loaded after.
    pub(crate) fn as_before(&self) -> Before {
        Before {
            shards: Arc::clone(&self.shards),
            index: Arc::clone(&self.index),
        }
    }

    /// The shards, in table order.
    pub(crate) fn shards(&self) -> &Arc<[Arc<Shard>]> {
        &self.shards
    }

    /// The shards filed under host hash `hash`, ascending.
    fn shards_of(&self, hash: u64) -> &[(u64, u32)] {
        let hosts = &self.index().entries;
        let start = hosts.partition_point(|&(h, _)| h < hash);
        let end = start
            + hosts
                .get(start..)
                .unwrap_or_default()
                .partition_point(|&(h, _)| h == hash);
        hosts.get(start..end).unwrap_or_default()
    }

    /// The table's generation label.
    pub fn generation(&self) -> &str {
        self.head.generation()
    }

    /// The request header that carries the cluster name (lowercase).
    pub fn cluster_header(&self) -> &str {
        self.head.cluster_header()
    }

    /// What to do when no rule matches.
    pub fn no_route(&self) -> NoRoute {
        self.head.no_route()
    }

    /// Whether responses should name the winning rule.
    pub fn debug_rule_header(&self) -> bool {
        self.head.debug_rule_header()
    }

    /// The table's settings, as a table of no rules (what a request needs of the table besides its
    /// winner).
    pub fn head(&self) -> &RouteTable {
        &self.head
    }

    /// The number of rules.
    pub fn rule_count(&self) -> usize {
        self.rules
    }

    /// The number of shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// At most how many rules one request may need decoded: the rules of the shards of its exact
    /// host, of its wildcard and without a host, all of which a request for that host's last rule
    /// tries in turn (bounded by the widest exact host's, the widest wildcard's and the hostless
    /// ones'). Builds the host index if no request did yet.
    pub fn widest_request(&self) -> usize {
        self.index().widest_request
    }

    /// The number of distinct hosts (exact and wildcard) the rules name. Builds the host index if
    /// no request did yet.
    pub fn host_count(&self) -> usize {
        self.index().hosts
    }

    /// Routes `request` as [`RouteTable::route`] routes it in the whole table, and hands the winner
    /// (if any) to `found`. A shard not decoded yet is decoded (inflated by `inflater`) and kept
    /// among the decoded shards; one that no longer decodes (a host's `uncompress` failing) is an
    /// error, not a miss: a later rule must not win in its place.
    pub fn route<R>(
        &self,
        request: &impl RequestView,
        random: u64,
        inflater: &dyn Inflater,
        found: impl FnOnce(Option<Winner<'_>>) -> R,
    ) -> Result<R, TableError> {
        let host = normalize_authority(request.authority());
        let exact = self.shards_of(host_hash(b'=', &host));
        let wildcard = wildcard_suffix(&host).map_or(&[][..], |suffix| self.shards_of(host_hash(b'*', suffix)));
        let (mut next_exact, mut next_wildcard, mut next_any) = (0, 0, 0);
        loop {
            // The smallest shard index of the three ascending lists not yet tried.
            let candidates = [
                exact.get(next_exact).map(|e| e.1),
                wildcard.get(next_wildcard).map(|e| e.1),
                self.any.get(next_any).copied(),
            ];
            let Some(index) = candidates.into_iter().flatten().min() else {
                return Ok(found(None));
            };
            next_exact += usize::from(candidates[0] == Some(index));
            next_wildcard += usize::from(candidates[1] == Some(index));
            next_any += usize::from(candidates[2] == Some(index));
            let i = index as usize;
            let (Some(shard), Some(&base)) = (self.shards.get(i), self.bases.get(i)) else {
                continue;
            };
            let table = self.decoded_shard(i, shard, inflater)?;
            if let Some(decision) = table.route(request, random) {
                return Ok(found(Some(Winner {
                    position: base + decision.position,
                    decision,
                    shard: &table,
                })));
            }
        }
    }

    /// Shard `i`'s own table: the one it keeps, or the decoded shards', or decoded now (outside the
    /// lock, which other threads may be waiting for) and put among them.
    fn decoded_shard<'s>(
        &self,
        i: usize,
        shard: &'s Arc<Shard>,
        inflater: &dyn Inflater,
    ) -> Result<Cow<'s, Arc<RouteTable>>, TableError> {
        if let Some(table) = &shard.kept {
            return Ok(Cow::Borrowed(table));
        }
        let decoded = || self.decoded.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(table) = decoded().get(shard.id) {
            return Ok(Cow::Owned(table));
        }
        let table = Arc::new(super::decode_shard(i, &shard.text, inflater)?);
        decoded().insert(shard, Arc::clone(&table), true);
        Ok(Cow::Owned(table))
    }
}
