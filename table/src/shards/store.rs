//! [`ShardStore`]: a proxy's shards by content, kept from one table to the next, so a new table
//! reads, decodes and validates only the shards the proxy has not seen.
//!
//! A shard is known by its text's [`Fingerprint`], 128 bits of two independent hashes: the one the
//! form-2 index gives (form 1's are computed from the texts). The store takes a shard it holds by
//! its fingerprint alone, without reading its text again: that is what lets a VM read only the new
//! shards of a configuration. The text of a shard it lacks is read and must have the fingerprint the
//! index gives, so a VM that reads every text (in Envoy, the canary, a fresh VM that checks each
//! configuration before any worker takes it) refuses a document whose index lies. A new one
//! is decoded and validated as a table of its own rules ([`super::decode_shard`]); what the store
//! keeps of it is its text (compressed), its number of rules, its hosts and the hashes of its
//! rules' names (so that a name used in two shards is still refused). The store holds the shards of
//! the last table it loaded, and others weakly: a shard lives while a table holds it, and goes with
//! the last one (so whether a proxy drops its old table before or after it loads the new one, the
//! new one finds the old one's shards).
//!
//! A store made [`ShardStore::sharing`] a process's shared bytes takes the shards another store
//! validated from the [`catalogue`](super::catalogue) when it lacks many, and publishes the table's
//! records when it validated shards itself.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use rustc_hash::{FxHashMap, FxHashSet};

use super::catalogue::{self, Catalogue, Published, Record, SharedBytes};
use super::decoded::Decoded;
use super::fingerprint::Fingerprint;
use super::routes::{Before, ShardedTable};
use super::shard::{host_hash, Shard};
use super::{assemble, decode_shard, Parts, ShardText};
use crate::compact::{self, Inflater};
use crate::error::TableError;
use crate::host::HostPattern;
use crate::RouteTable;

/// A proxy's shards, and the shards it keeps decoded for requests.
#[derive(Debug, Default)]
pub struct ShardStore {
    /// Every shard a table holds, by its text's fingerprint.
    by_fingerprint: FxHashMap<Fingerprint, Weak<Shard>>,
    /// The last table loaded (its shards, and its host index once built).
    last: Option<Before>,
    /// How many rules of `last` have a name of each hash; `None` when the store did not count them
    /// (the last table was published as validated whole: the next count starts afresh).
    names: Option<FxHashMap<u64, u32>>,
    next_id: u64,
    decoded: Arc<Mutex<Decoded>>,
    /// Whether every shard keeps its rules decoded ([`Shard::kept`]) instead.
    keep_every_shard: bool,
    /// Where the catalogue is shared, if it is.
    shared: Option<Box<dyn SharedBytes>>,
}

/// What one [`ShardStore::load`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// The table's shards.
    pub shards: usize,
    /// How many of them were new, and so decoded and validated.
    pub decoded: usize,
    /// How many were new and taken from the catalogue, validated by another store.
    pub from_catalogue: usize,
}

impl ShardStore {
    /// An empty store.
    pub fn new() -> ShardStore {
        ShardStore::default()
    }

    /// An empty store keeping at most `rules` rules decoded (instead of [`super::DECODED_RULES`]).
    pub fn with_decoded_rules(rules: usize) -> ShardStore {
        ShardStore {
            decoded: Arc::new(Mutex::new(Decoded::with_bound(rules))),
            ..ShardStore::default()
        }
    }

    /// An empty store whose shards keep their rules decoded for as long as they live, instead of a
    /// bounded number of them being decoded at a time: for a process that keeps one table for all
    /// its threads (the native module), where a table's memory is paid once and a request never
    /// decodes. A push still decodes only the shards the store lacks. Its tables are `Send` and
    /// `Sync`, and their requests take no lock.
    pub fn keeping_every_shard_decoded() -> ShardStore {
        ShardStore {
            keep_every_shard: true,
            ..ShardStore::default()
        }
    }

    /// An empty store that shares its shards' records through `shared` (the catalogue).
    pub fn sharing(shared: impl SharedBytes + 'static) -> ShardStore {
        ShardStore {
            shared: Some(Box::new(shared)),
            ..ShardStore::default()
        }
    }

    /// The table of the sharded form `parts`: its shards found in the store or, when new, decoded
    /// (inflated by `inflater`) and validated. A bad shard refuses the whole table (the error names
    /// the shard, the rule and the field); the store then holds nothing more than before.
    pub fn load(&mut self, parts: Parts<'_>, inflater: &dyn Inflater) -> Result<(ShardedTable, LoadStats), TableError> {
        let head = RouteTable::try_from(crate::format::TableSpec {
            rules: Vec::new(),
            ..parts.head.clone()
        })?;
        let mut stats = LoadStats {
            shards: parts.fingerprints.len(),
            ..LoadStats::default()
        };
        let lacking: Vec<usize> = (parts.fingerprints.iter().enumerate())
            .filter(|(_, fingerprint)| self.find(fingerprint).is_none())
            .map(|(index, _)| index)
            .collect();
        let records = self.shared.as_deref().map(|shared| {
            let lacking = lacking
                .iter()
                .filter_map(|&index| parts.fingerprints.get(index).copied());
            Catalogue::read(shared, lacking)
        });
        let mut shards: Vec<Arc<Shard>> = Vec::with_capacity(parts.fingerprints.len());
        // Which of `shards` were taken from the records, each once: their names are distinct.
        let mut vouched = Vec::with_capacity(parts.fingerprints.len());
        let mut texts = parts.texts.reader(lacking);
        // A first table keeps its shards' texts and hashes in the buffers they were read in, shared;
        // a later one copies its few new shards' (`texts.rs`, `hashes.rs`).
        let first = self.last.is_none();
        // Shards new to this load are kept strongly by `shards` until the table holds them.
        for (index, &fingerprint) in parts.fingerprints.iter().enumerate() {
            // A shard twice in the table is new only the first time.
            if let Some(shard) = self.find(&fingerprint) {
                shards.push(shard);
                vouched.push(false);
                continue;
            }
            let (text, read) = texts.take(index).map_err(|error| TableError::Shard {
                index,
                error: Box::new(error),
            })?;
            if read != fingerprint {
                return Err(TableError::Shard {
                    index,
                    error: Box::new(TableError::Shape {
                        at: format!("{}.index[{index}]", super::WRAPPER_KEY),
                        problem: "the fingerprint is not the shard text's".into(),
                    }),
                });
            }
            let record = records.as_ref().and_then(|r| r.get(fingerprint));
            vouched.push(record.is_some());
            let shard = match record {
                Some(record) => {
                    stats.from_catalogue += 1;
                    let shard = if first {
                        self.shard_of_record(text.into_owned(), fingerprint, record)
                    } else {
                        self.shard_of_record(text.detached(), fingerprint, record.detached())
                    };
                    Arc::new(shard)
                }
                None => {
                    let table = Arc::new(decode_shard(index, &text, inflater)?);
                    let text = if first { text.into_owned() } else { text.detached() };
                    let mut shard = self.shard(text, fingerprint, &table);
                    stats.decoded += 1;
                    if self.keep_every_shard {
                        shard.kept = Some(table);
                        Arc::new(shard)
                    } else {
                        let shard = Arc::new(shard);
                        self.decoded_shards().insert(&shard, table, false);
                        shard
                    }
                }
            };
            self.by_fingerprint.insert(fingerprint, Arc::downgrade(&shard));
            shards.push(shard);
        }
        // The records' bytes live on in the shards taken from them (their hashes); the rest goes.
        drop(records);
        // A table the catalogue says was validated whole (its names included) by a store of the
        // process needs no count of its names: in Envoy, every table the workers load, since the
        // canary loaded it first.
        let fingerprint = catalogue::table_fingerprint(&shards);
        let before = self.shared.as_deref().and_then(Published::read);
        let published = before.as_ref().is_some_and(|before| before.is(&fingerprint));
        if published {
            self.names = None;
        } else if self.names_repeat(&shards, &vouched) {
            // A hash twice is a name twice, or (about never) two names of one hash: the whole table
            // then says which, exactly as a table in one piece would.
            if let Err(error) = assemble(parts, inflater).and_then(RouteTable::try_from) {
                self.names = None;
                return Err(error);
            }
        }
        self.by_fingerprint.retain(|_, shard| shard.strong_count() > 0);
        let table = ShardedTable::new(head, shards, self.last.take(), Arc::clone(&self.decoded));
        if self.keep_every_shard {
            // Its requests then take no lock, and the load (off the serving threads) builds it.
            table.index_hosts();
        }
        if let Some(shared) = self.shared.as_deref().filter(|_| !published) {
            catalogue::publish(shared, table.shards(), &fingerprint, before.as_ref());
        }
        self.last = Some(table.as_before());
        Ok((table, stats))
    }

    /// How many shards the store holds (those some table still holds).
    pub fn len(&self) -> usize {
        self.by_fingerprint.values().filter(|s| s.strong_count() > 0).count()
    }

    /// Whether the store holds no shard.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many shards are decoded, and how many rules they hold together.
    pub fn decoded(&self) -> (usize, usize) {
        self.decoded_shards().held()
    }

    /// How many shards requests had to decode, since the store was made.
    pub fn decoded_on_demand(&self) -> u64 {
        self.decoded_shards().decoded_on_demand()
    }

    /// The stored shard of this fingerprint, when there is one.
    fn find(&self, fingerprint: &Fingerprint) -> Option<Arc<Shard>> {
        self.by_fingerprint.get(fingerprint)?.upgrade()
    }

    /// What the store keeps of the shard `text`, whose rules are `table`'s.
    fn shard(&mut self, text: ShardText<'static>, fingerprint: Fingerprint, table: &RouteTable) -> Shard {
        let (mut hosts, mut any_host) = (Vec::new(), false);
        for rule in table.rules() {
            let hash = match rule.host() {
                HostPattern::Exact(name) => host_hash(b'=', name),
                HostPattern::Wildcard(suffix) => host_hash(b'*', suffix),
                HostPattern::Any => {
                    any_host = true;
                    continue;
                }
            };
            hosts.push(hash);
        }
        hosts.sort_unstable();
        hosts.dedup();
        let names: Vec<u64> = table
            .rules()
            .iter()
            .map(|r| compact::piece_hash(r.name().as_bytes()))
            .collect();
        self.shard_of_record(
            text,
            fingerprint,
            Record {
                rules: table.rules().len(),
                any_host,
                hosts: hosts.into(),
                names: names.into(),
            },
        )
    }

    /// What the store keeps of the shard `text`, from what is known of its rules. The text is
    /// moved in: a text read by ranges is a range of the host's copy of its run, not copied again.
    fn shard_of_record(&mut self, text: ShardText<'static>, fingerprint: Fingerprint, record: Record) -> Shard {
        self.next_id += 1;
        Shard {
            id: self.next_id,
            fingerprint,
            text,
            rules: record.rules,
            hosts: record.hosts,
            any_host: record.any_host,
            names: record.names,
            kept: None,
        }
    }

    fn decoded_shards(&self) -> std::sync::MutexGuard<'_, Decoded> {
        self.decoded.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a name hash is used twice in `shards`, of which those `vouched` were taken from the
    /// catalogue's records. Those records are of one table validated whole, so the vouched shards'
    /// names are distinct: a store that kept no count (in Envoy, the canary: a fresh VM that takes
    /// all but the new shards from the records) counts only the others' names and looks the vouched
    /// names up among them, instead of counting every name of the table. The store is then left
    /// without a count, as after a published table.
    fn names_repeat(&mut self, shards: &[Arc<Shard>], vouched: &[bool]) -> bool {
        if self.names.is_some() || !vouched.contains(&true) {
            return self.count_names(shards);
        }
        let of = |wanted: bool| {
            shards
                .iter()
                .zip(vouched)
                .filter(move |(_, &v)| v == wanted)
                .flat_map(|(shard, _)| shard.names.iter())
        };
        let mut others = FxHashSet::with_capacity_and_hasher(of(false).count(), Default::default());
        let mut seen = NameFilter::default();
        for hash in of(false) {
            if !others.insert(hash) {
                return true;
            }
            seen.insert(hash);
        }
        !others.is_empty() && of(true).any(|hash| seen.may_hold(hash) && others.contains(&hash))
    }

    /// Counts the names of `shards`' rules by hash: over the last table's count, only the shards
    /// that came and went (or all of them when there is no count); whether a name hash is then
    /// counted more than once.
    fn count_names(&mut self, shards: &[Arc<Shard>]) -> bool {
        let (added, removed, mut names) = match self.names.take() {
            Some(names) => {
                let last = self.last.as_ref().map_or(&[][..], |last| &last.shards[..]);
                let (added, removed) = difference(shards, last);
                (added, removed, names)
            }
            None => {
                // Sized once: growing by doubling would hold the old map and the new at once.
                let rules = shards.iter().map(|s| s.names.len()).sum();
                (
                    shards.to_vec(),
                    Vec::new(),
                    FxHashMap::with_capacity_and_hasher(rules, Default::default()),
                )
            }
        };
        for hash in removed.iter().flat_map(|s| s.names.iter()) {
            if let Some(count) = names.get_mut(&hash) {
                *count -= 1;
                if *count == 0 {
                    names.remove(&hash);
                }
            }
        }
        let mut twice = false;
        for hash in added.iter().flat_map(|s| s.names.iter()) {
            let count = names.entry(hash).or_insert(0);
            *count += 1;
            twice |= *count > 1;
        }
        self.names = Some(names);
        twice
    }
}

/// The shards `new` holds more often than `old` (each as often as the difference), and those it
/// holds less often.
fn difference(new: &[Arc<Shard>], old: &[Arc<Shard>]) -> (Vec<Arc<Shard>>, Vec<Arc<Shard>>) {
    let mut counts: FxHashMap<u64, (isize, &Arc<Shard>)> = FxHashMap::default();
    for shard in new {
        counts.entry(shard.id).or_insert((0, shard)).0 += 1;
    }
    for shard in old {
        counts.entry(shard.id).or_insert((0, shard)).0 -= 1;
    }
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    // In id order, so that the counting is the same from run to run.
    let mut changed: Vec<_> = counts.into_iter().filter(|(_, (n, _))| *n != 0).collect();
    changed.sort_unstable_by_key(|(id, _)| *id);
    for (_, (n, shard)) in changed {
        let list = if n > 0 { &mut added } else { &mut removed };
        list.extend(std::iter::repeat_n(Arc::clone(shard), n.unsigned_abs()));
    }
    (added, removed)
}

/// Which name hashes a set may hold, by one bit of each: most hashes outside the set are told so
/// by one word, not a hash-table probe (the canary looks 100,000 vouched names up among a few
/// hundred new ones).
struct NameFilter([u64; 64]);

impl Default for NameFilter {
    fn default() -> Self {
        NameFilter([0; 64])
    }
}

impl NameFilter {
    fn insert(&mut self, hash: u64) {
        let (word, bit) = NameFilter::place(hash);
        self.0[word] |= bit;
    }

    fn may_hold(&self, hash: u64) -> bool {
        let (word, bit) = NameFilter::place(hash);
        self.0[word] & bit != 0
    }

    /// The word and bit of `hash`: its top 12 bits (a name hash is uniform).
    fn place(hash: u64) -> (usize, u64) {
        let top = (hash >> 52) as usize;
        (top >> 6 & 63, 1 << (top & 63))
    }
}
