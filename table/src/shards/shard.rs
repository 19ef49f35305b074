//! [`Shard`]: one shard as a proxy keeps it (its text, its hosts' and rules' names' hashes, and its
//! rules when kept decoded), and the hash its hosts are filed under ([`host_hash`]). What the store,
//! the catalogue, the directory and the decoded shards all speak of, below all four.

use std::sync::Arc;

use super::fingerprint::Fingerprint;
use super::hashes::Hashes;
use super::ShardText;
use crate::compact;
use crate::RouteTable;

/// One shard as a proxy keeps it.
#[derive(Debug)]
pub(crate) struct Shard {
    /// Unique in its store.
    pub id: u64,
    /// Its text's fingerprint, what the catalogue files it under.
    pub fingerprint: Fingerprint,
    /// The shard's text (base64 of zlib), decoded again when a request needs its rules.
    pub text: ShardText<'static>,
    /// How many rules it holds.
    pub rules: usize,
    /// The [`host_hash`] of each host pattern its rules name, each once.
    pub hosts: Hashes,
    /// Whether a rule of it has no host (so it is a candidate for every request).
    pub any_host: bool,
    /// The hash of each rule's name.
    pub names: Hashes,
    /// Its rules decoded, kept with it for as long as it lives, by a store that keeps every shard
    /// decoded (`ShardStore::keeping_every_shard_decoded`); else `None`, and requests find it
    /// among the decoded shards, or decode it.
    pub kept: Option<Arc<RouteTable>>,
}

/// What a host pattern is filed under in a [`ShardedTable`]'s directory: a hash of its kind (`=`
/// exact, `*` wildcard, by its suffix) and its name, whose lowest bit says the kind
/// ([`is_wildcard`]). Two patterns of one hash only make a shard a candidate for a request it has
/// no rule for, whose own table then matches nothing there.
pub(crate) fn host_hash(kind: u8, name: &str) -> u64 {
    let hash = compact::piece_hash(name.as_bytes()) ^ u64::from(kind).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (hash & !1) | u64::from(kind == b'*')
}

/// Whether a [`host_hash`] is a wildcard's.
pub(crate) fn is_wildcard(hash: u64) -> bool {
    hash & 1 == 1
}
