//! [`ShardEncoder`]: the sharded form of one table after another, deflating only new shards.
//!
//! Rules are cut into shards by content: a rule whose bytes hash to 0 modulo [`SHARD_RULES`] asks
//! for a cut, which is made after the first rule from there on whose next rule names another host
//! (so a host's run of rules stays in one shard, and a request for it decodes one shard), or after
//! the rule that takes the shard past [`MAX_SHARD_BYTES`] whatever the hosts. Inserting, removing
//! or changing a rule so changes its own shard (at most its neighbour too; in a run of shards cut
//! by size, those up to the next cut by content) and leaves the others' bounds, bytes and text
//! alone.
//!
//! The output depends on the table alone: a fresh encoder and one that encoded other tables before
//! write the same text. The cache holds the last table's shards, by the hash of their binary
//! document, and reuses one only when its bytes are equal (compared, so a collision cannot pick a
//! wrong shard).

use std::sync::Arc;

use base64::Engine as _;
use rustc_hash::FxHashMap;

use super::fingerprint::{self, Fingerprint};
use super::layout;
use crate::compact::{self, tag, EncodeError, BINARY_VERSION, KEYS, MAGIC, ZLIB_LEVEL};
use crate::format::{TableSpec, VERSION};

/// One rule in this many, on average, asks for a shard to end (at the next change of host):
/// measured in BENCHMARKS.md, "Table pushes" (smaller shards cost more bytes on the wire, larger
/// ones more work per changed rule and per first request of a host).
pub const SHARD_RULES: u64 = 128;

/// A shard ends after the rule that takes its binary document past this many bytes, whatever the
/// hashes and hosts say (one host of thousands of rules would otherwise be one shard): about twice
/// an average shard's (128 rules of some 130 bytes), so that no shard costs a VM that decodes it
/// (the canary, for each shard new to the process; a first request for one of its hosts) much more
/// than an average one. At 64 KiB, shards of up to 563 rules took the canary's load at 100,000
/// rules past 5 ms (BENCHMARKS.md, "The canary's load").
pub const MAX_SHARD_BYTES: usize = 32 << 10;

/// Encodes tables into the sharded form, keeping the deflated shards of the last one.
pub struct ShardEncoder {
    /// One rule in this many asks for a cut; a shard's binary document ends past this many bytes.
    shard_rules: u64,
    max_bytes: usize,
    cache: FxHashMap<u64, Cached>,
    /// Reused: one rule's binary document, its marks, and the shard being cut.
    rule: Vec<u8>,
    marks: Vec<compact::Mark>,
    body: Vec<u8>,
    stats: ShardStats,
}

/// What the last [`ShardEncoder::encode`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardStats {
    /// The table's shards.
    pub shards: usize,
    /// How many of them were not in the cache, and were deflated.
    pub deflated: usize,
    /// The binary documents of all shards, in bytes.
    pub binary_bytes: usize,
}

/// One shard of the last table: its binary document, its text and its text's fingerprint.
struct Cached {
    binary: Box<[u8]>,
    text: Arc<str>,
    fingerprint: Fingerprint,
    /// Whether the table being encoded uses it (the others are dropped at its end).
    used: bool,
}

impl Default for ShardEncoder {
    fn default() -> Self {
        ShardEncoder::new()
    }
}

impl ShardEncoder {
    /// An encoder with an empty cache.
    pub fn new() -> ShardEncoder {
        ShardEncoder::with_params(SHARD_RULES, MAX_SHARD_BYTES)
    }

    /// An encoder cutting shards by other bounds than [`SHARD_RULES`] and [`MAX_SHARD_BYTES`]
    /// (measurements, and tests of many small shards); its output differs from [`ShardEncoder::new`]'s.
    pub fn with_params(shard_rules: u64, max_bytes: usize) -> ShardEncoder {
        ShardEncoder {
            shard_rules: shard_rules.max(1),
            max_bytes,
            cache: FxHashMap::default(),
            rule: Vec::new(),
            marks: Vec::new(),
            body: Vec::new(),
            stats: ShardStats::default(),
        }
    }

    /// What the last encoding did.
    pub fn stats(&self) -> ShardStats {
        self.stats
    }

    /// The sharded form of `table`, as the text of a one-key JSON object: the same text whatever
    /// the encoder encoded before.
    pub fn encode(&mut self, table: &TableSpec) -> Result<String, EncodeError> {
        self.stats = ShardStats::default();
        let head = TableSpec {
            version: table.version,
            generation: table.generation.clone(),
            cluster_header: table.cluster_header.clone(),
            no_route: table.no_route,
            debug_rule_header: table.debug_rule_header,
            metrics_fold: table.metrics_fold.clone(),
            rules: Vec::new(),
        };
        let head = serde_json::to_string(&head).map_err(|e| EncodeError(e.to_string()))?;
        // Each shard's fingerprint and text, in table order.
        let mut shards = Vec::new();
        self.body.clear();
        let (mut count, mut wants_cut) = (0usize, false);
        for (i, rule) in table.rules.iter().enumerate() {
            compact::write_binary(rule, &mut self.rule, &mut self.marks)?;
            let bytes = self.rule.get(MAGIC.len() + 1..).unwrap_or_default();
            wants_cut |= compact::piece_hash(bytes) % self.shard_rules == 0;
            self.body.extend_from_slice(bytes);
            count += 1;
            let host_changes = table.rules.get(i + 1).is_none_or(|next| next.host != rule.host);
            if (wants_cut && host_changes) || self.body.len() >= self.max_bytes || i + 1 == table.rules.len() {
                shards.push(self.push_shard(count)?);
                self.body.clear();
                (count, wants_cut) = (0, false);
            }
        }
        let listed: Vec<_> = shards
            .iter()
            .map(|(fingerprint, text)| (*fingerprint, &**text))
            .collect();
        let text = layout::write(&head, &listed);
        self.cache.retain(|_, shard| std::mem::take(&mut shard.used));
        Ok(text)
    }

    /// The fingerprint and text of the shard of the `count` rules in `self.body`, deflated unless
    /// the cache has it.
    fn push_shard(&mut self, count: usize) -> Result<(Fingerprint, Arc<str>), EncodeError> {
        let binary = shard_binary(count, &self.body);
        let key = compact::piece_hash(&binary);
        self.stats.shards += 1;
        self.stats.binary_bytes += binary.len();
        let cached = self.cache.get_mut(&key).filter(|shard| *shard.binary == *binary);
        let shard = match cached {
            Some(shard) => shard,
            None => {
                self.stats.deflated += 1;
                let deflated = miniz_oxide::deflate::compress_to_vec_zlib(&binary, ZLIB_LEVEL);
                let text = base64::engine::general_purpose::STANDARD.encode(deflated);
                let shard = Cached {
                    fingerprint: fingerprint::fingerprint(&text),
                    text: text.into(),
                    binary: binary.into(),
                    used: false,
                };
                // A collision (another shard under this key) replaces it: still correct.
                self.cache.insert(key, shard);
                self.cache
                    .get_mut(&key)
                    .ok_or_else(|| EncodeError("the shard cache lost a shard".into()))?
            }
        };
        shard.used = true;
        Ok((shard.fingerprint, Arc::clone(&shard.text)))
    }
}

/// The binary document `{"version": 1, "rules": [...]}` of `count` rules whose binary values are
/// `rules`, one after another.
fn shard_binary(count: usize, rules: &[u8]) -> Vec<u8> {
    let key = |name: &str| KEYS.iter().position(|k| *k == name).map_or(0, |i| i as u64 + 1);
    let mut binary = Vec::with_capacity(rules.len() + 16);
    binary.extend_from_slice(MAGIC);
    binary.push(BINARY_VERSION);
    binary.push(tag::OBJECT);
    compact::push_varint(&mut binary, 2);
    compact::push_varint(&mut binary, key("version"));
    binary.push(tag::UINT);
    compact::push_varint(&mut binary, u64::from(VERSION));
    compact::push_varint(&mut binary, key("rules"));
    binary.push(tag::LIST);
    compact::push_varint(&mut binary, count as u64);
    binary.extend_from_slice(rules);
    binary
}
