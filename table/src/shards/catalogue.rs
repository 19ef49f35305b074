//! The catalogue: what the proxies of one process know of the shards one of them validated, so
//! that the others take those shards without decoding them.
//!
//! Envoy runs a plugin in one wasm VM per worker thread, and first checks each new configuration in
//! a *canary*: a VM cloned for it on the main thread, with nothing kept from before, dropped once
//! the configuration is accepted (proxy-wasm-cpp-host, `WasmHandleBase::canary`). Alone, the
//! canary would decode every shard of every push, and each worker every shard of a push that
//! changes many. The VMs of one VM id share proxy-wasm's *shared data* (kept while one of them
//! lives); through it a VM that validated shards publishes what a store keeps of each of the
//! table's shards (its rules' count, the hashes of its hosts and of its rules' names) under the
//! shard's [`Fingerprint`]. A store reads the records of the shards it lacks and takes the shards
//! they describe as they are; such a shard is decoded on the first request for one of its hosts
//! (in Envoy a worker's load after a push of one changed Ingress then decodes nothing: the request
//! for that Ingress pays the decode, not every request the worker holds up while it loads). A
//! shard the catalogue lacks is decoded and validated as before.
//!
//! The records of the last table published are spread over [`BUCKETS`] keys by fingerprint
//! ([`records_key`]), beside the table's key ([`TABLE_KEY`]: the table's fingerprint, of its
//! shards' fingerprints in order, then each bucket's digest, of the fingerprints filed in it). The
//! crate's version is in every key, so a filter of another release, loaded beside this one under
//! the same VM id, never reads these records. The first store to load a table publishes it once it
//! validated the table whole: it rewrites only the buckets whose digest changed (a push that
//! changes one Ingress rewrites one or two of them, not the whole table's records: the canary
//! writes each byte into a fresh VM's memory, about 0.75 ms a megabyte), then the table's key. A
//! store reads only the buckets of the shards it lacks. A store that loads the table published
//! (in Envoy, every worker, after the canary) needs no count of the names of its rules across
//! shards, which at 100,000 rules is most of a load's time and a map of some megabytes per VM; and
//! the shards a store takes from the records have distinct names, so a store without a count (the
//! canary) counts only its other shards' names. The table key is small, so a store reads it at
//! every load without copying the records. One table's records at a time: the shared data stays
//! the size of one table's records (about 16 bytes a rule) however many pushes come.
//!
//! A bucket's records, little-endian: `SYSC`, the layout's version (u32, [`LAYOUT`]), the number of
//! records (u32); then per record, by fingerprint ascending, the fingerprint (two u64) and the
//! record's offset in what follows (u32); then each record: its rules (u32), whether a rule has no
//! host (u8), its number of host hashes (u32), the host hashes (u64 each) and one name hash (u64)
//! per rule. A bucket that does not read so is ignored, as if it were empty. Every record is filed
//! under its shard's fingerprint, so buckets of two tables (two stores publishing at once) only
//! leave a store to decode a shard it finds no record of.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use super::fingerprint::{fingerprint_bytes, Fingerprint};
use super::hashes::Hashes;
use super::shard::Shard;

/// Where the proxies of one process share bytes by key: proxy-wasm's shared data in the filter.
pub trait SharedBytes: fmt::Debug + Send {
    /// The bytes last set under `key`, if any.
    fn get(&self, key: &str) -> Option<Vec<u8>>;
    /// Sets `value` under `key`; whether it was set. A failure only leaves another proxy to decode
    /// what it lacks.
    fn set(&self, key: &str, value: &[u8]) -> bool;
}

/// Bytes shared by the stores of one process in its own memory (tests, and hosts that run several
/// stores in one).
#[derive(Debug, Default, Clone)]
pub struct InMemory(Arc<Mutex<BTreeMap<String, Vec<u8>>>>);

impl InMemory {
    /// Every key and its bytes.
    #[cfg(test)]
    pub fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl SharedBytes for InMemory {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get(key).cloned()
    }

    fn set(&self, key: &str, value: &[u8]) -> bool {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.insert(key.to_owned(), value.to_owned());
        true
    }
}

/// The key of the last published table's bucket `bucket` of records.
pub fn records_key(bucket: usize) -> String {
    format!("{RECORDS_KEY_PREFIX}{bucket}")
}

const RECORDS_KEY_PREFIX: &str = concat!("switchyard.shards.", env!("CARGO_PKG_VERSION"), ".records.");
/// The key of the last published table's fingerprint and its buckets' digests.
pub const TABLE_KEY: &str = concat!("switchyard.shards.", env!("CARGO_PKG_VERSION"), ".table");
/// The records' layout version: raised whenever what a record says changes (or what validating a
/// shard checks, which a record vouches for), since two builds of one release may share the keys.
pub const LAYOUT: u32 = 3;
/// How many keys the records are spread over: at 100,000 rules (some 780 shards) a bucket holds a
/// dozen shards' records, about 25 KB.
pub const BUCKETS: usize = 1 << BUCKET_BITS;
const BUCKET_BITS: u32 = 6;

const MAGIC: &[u8; 4] = b"SYSC";
const HEADER: usize = 12;
const INDEX_ENTRY: usize = 20;

/// What the catalogue says of one shard.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub rules: usize,
    pub any_host: bool,
    pub hosts: Hashes,
    pub names: Hashes,
}

impl Record {
    /// The record with hashes of its own ([`Hashes::detached`]).
    pub fn detached(self) -> Record {
        Record {
            hosts: self.hosts.detached(),
            names: self.names.detached(),
            ..self
        }
    }
}

/// The bucket a shard's record is filed in.
fn bucket_of(fingerprint: &Fingerprint) -> usize {
    (fingerprint[0] >> (u64::BITS - BUCKET_BITS)) as usize
}

/// The fingerprint of a table made of `shards`, as [`TABLE_KEY`] holds it.
pub(crate) fn table_fingerprint(shards: &[Arc<Shard>]) -> [u8; 16] {
    let [a, b] = fingerprint_of_shards(&[], shards.iter());
    let mut out = [0; 16];
    out[..8].copy_from_slice(&a.to_le_bytes());
    out[8..].copy_from_slice(&b.to_le_bytes());
    out
}

/// What [`TABLE_KEY`] says: the table last published, and the digest of each of its buckets.
#[derive(Debug)]
pub(crate) struct Published(Vec<u8>);

impl Published {
    /// What the table key holds, when it reads as this layout's.
    pub fn read(shared: &dyn SharedBytes) -> Option<Published> {
        let bytes = shared.get(TABLE_KEY)?;
        (bytes.len() == 16 + 8 * BUCKETS).then_some(Published(bytes))
    }

    /// Whether the table of fingerprint `table` is the one published: validated whole, its names
    /// across shards included, by the store that published it.
    pub fn is(&self, table: &[u8; 16]) -> bool {
        self.0.get(..16) == Some(&table[..])
    }

    fn digest(&self, bucket: usize) -> Option<u64> {
        u64_at(&self.0, 16 + 8 * bucket)
    }
}

/// Publishes the records of `shards`, a table validated whole, of fingerprint `table`: the buckets
/// whose shards are not those of `before`'s, then the table's key.
pub(crate) fn publish(shared: &dyn SharedBytes, shards: &[Arc<Shard>], table: &[u8; 16], before: Option<&Published>) {
    let mut buckets: Vec<Vec<&Arc<Shard>>> = vec![Vec::new(); BUCKETS];
    for shard in shards {
        if let Some(bucket) = buckets.get_mut(bucket_of(&shard.fingerprint)) {
            bucket.push(shard);
        }
    }
    let mut key = Vec::with_capacity(16 + 8 * BUCKETS);
    key.extend(table);
    for (bucket, mut shards) in buckets.into_iter().enumerate() {
        shards.sort_unstable_by_key(|s| s.fingerprint);
        shards.dedup_by_key(|s| s.fingerprint);
        let mut digest = digest(&shards);
        if before.and_then(|b| b.digest(bucket)) != Some(digest) && !shared.set(&records_key(bucket), &encode(&shards))
        {
            // Not what the bucket holds: the next store to publish writes it again.
            digest = !digest;
        }
        key.extend(digest.to_le_bytes());
    }
    shared.set(TABLE_KEY, &key);
}

/// The digest of a bucket's shards (sorted, each once), of their fingerprints and the layout.
fn digest(shards: &[&Arc<Shard>]) -> u64 {
    fingerprint_of_shards(&LAYOUT.to_le_bytes(), shards.iter().copied())[0]
}

/// The fingerprint of `prefix` and then `shards`' fingerprints in order.
fn fingerprint_of_shards<'s>(prefix: &[u8], shards: impl ExactSizeIterator<Item = &'s Arc<Shard>>) -> Fingerprint {
    let mut words = Vec::with_capacity(prefix.len() + shards.len() * 16);
    words.extend_from_slice(prefix);
    for shard in shards {
        words.extend(shard.fingerprint[0].to_le_bytes());
        words.extend(shard.fingerprint[1].to_le_bytes());
    }
    fingerprint_bytes(&words)
}

/// The records of `sorted` (by fingerprint, each once), written into one buffer of their exact
/// size.
fn encode(sorted: &[&Arc<Shard>]) -> Vec<u8> {
    let record_bytes = |shard: &Shard| 9 + 8 * (shard.hosts.len() + shard.names.len());
    let records_at = HEADER + sorted.len() * INDEX_ENTRY;
    let mut out = Vec::with_capacity(records_at + sorted.iter().map(|s| record_bytes(s)).sum::<usize>());
    out.extend(MAGIC);
    out.extend(LAYOUT.to_le_bytes());
    out.extend((sorted.len() as u32).to_le_bytes());
    let mut offset = 0;
    for shard in sorted {
        out.extend(shard.fingerprint[0].to_le_bytes());
        out.extend(shard.fingerprint[1].to_le_bytes());
        out.extend((offset as u32).to_le_bytes());
        offset += record_bytes(shard);
    }
    for shard in sorted {
        out.extend((shard.rules as u32).to_le_bytes());
        out.push(u8::from(shard.any_host));
        out.extend((shard.hosts.len() as u32).to_le_bytes());
        out.extend_from_slice(shard.hosts.as_bytes());
        out.extend_from_slice(shard.names.as_bytes());
    }
    out
}

/// The published records of the buckets a store read: those of the shards it lacked.
#[derive(Debug)]
pub(crate) struct Catalogue(Vec<Option<Records>>);

impl Catalogue {
    /// The buckets of the shards `lacking`, each read once.
    pub fn read(shared: &dyn SharedBytes, lacking: impl IntoIterator<Item = Fingerprint>) -> Catalogue {
        let mut buckets: Vec<Option<Records>> = (0..BUCKETS).map(|_| None).collect();
        let mut asked = [false; BUCKETS];
        for fingerprint in lacking {
            let bucket = bucket_of(&fingerprint);
            if let (Some(asked @ false), Some(records)) = (asked.get_mut(bucket), buckets.get_mut(bucket)) {
                *asked = true;
                *records = shared.get(&records_key(bucket)).and_then(Records::read);
            }
        }
        Catalogue(buckets)
    }

    /// The record of the shard of fingerprint `wanted`, if its bucket was read and holds it.
    pub fn get(&self, wanted: Fingerprint) -> Option<Record> {
        self.0.get(bucket_of(&wanted))?.as_ref()?.get(wanted)
    }
}

/// One bucket's published records, read in place. The shards taken from them share their bytes.
#[derive(Debug)]
pub(crate) struct Records {
    bytes: Arc<Vec<u8>>,
    count: usize,
}

impl Records {
    /// The records in `bytes`, or `None` when they are not of this layout.
    fn read(bytes: Vec<u8>) -> Option<Records> {
        if bytes.get(..4)? != MAGIC || u32_at(&bytes, 4)? != LAYOUT {
            return None;
        }
        let count = u32_at(&bytes, 8)? as usize;
        bytes.get(HEADER..HEADER.checked_add(count.checked_mul(INDEX_ENTRY)?)?)?;
        Some(Records {
            bytes: Arc::new(bytes),
            count,
        })
    }

    /// The record of the shard of fingerprint `wanted`, if there is one (and it reads whole).
    fn get(&self, wanted: Fingerprint) -> Option<Record> {
        let entry = |i: usize| -> Option<(Fingerprint, usize)> {
            let at = HEADER + i * INDEX_ENTRY;
            Some((
                [u64_at(&self.bytes, at)?, u64_at(&self.bytes, at + 8)?],
                u32_at(&self.bytes, at + 16)? as usize,
            ))
        };
        let (mut low, mut high) = (0, self.count);
        while low < high {
            let middle = low + (high - low) / 2;
            let (found, offset) = entry(middle)?;
            match found.cmp(&wanted) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return self.record(HEADER + self.count * INDEX_ENTRY + offset),
            }
        }
        None
    }

    fn record(&self, at: usize) -> Option<Record> {
        let rules = u32_at(&self.bytes, at)? as usize;
        let any_host = *self.bytes.get(at + 4)? != 0;
        let hosts = u32_at(&self.bytes, at + 5)? as usize;
        let start = at + 9;
        Some(Record {
            rules,
            any_host,
            hosts: Hashes::shared(&self.bytes, start, hosts)?,
            names: Hashes::shared(&self.bytes, start.checked_add(hosts.checked_mul(8)?)?, rules)?,
        })
    }
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at.checked_add(8)?)?.try_into().ok()?))
}
