//! A sharded table's directory: every shard's host hashes, each with the shard's index, in one
//! ascending list (a request's shards are a binary search away).
//!
//! Built from the directory of the table before when it can be: a push of one changed shard keeps
//! the others in the same order, so their entries keep their order once renumbered, and only the
//! new shards' entries are sorted and merged in (no sort of every host per push; BENCHMARKS.md,
//! "Table pushes"). When the shards that stay also keep their indices (shards replaced one for
//! one), nothing is renumbered: the old entries are copied in runs around the edits. Shards that
//! moved relative to one another, or a table holding one shard twice, take the plain way: every
//! entry, sorted.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::shard::Shard;

/// One entry: a host hash and the index of a shard holding it.
pub(crate) type Entry = (u64, u32);

/// The directory of `shards`, from `previous` (the shards of the table before and its directory)
/// when that table's shards that stay keep their order.
pub(crate) fn build(shards: &[Arc<Shard>], previous: Option<(&[Arc<Shard>], &[Entry])>) -> Arc<[Entry]> {
    previous
        .and_then(|(old_shards, old)| renumbered(shards, old_shards, old))
        .unwrap_or_else(|| sorted(shards, |_| true))
        .into()
}

/// Every entry of the shards `keep` picks, sorted. Host hashes are uniform, so a counting pass
/// over the shards' hosts files each entry by its hash's top bits into a bucket of a few (about
/// four entries a bucket), the entries are written straight into their buckets, and each bucket is
/// sorted alone: linear in the entries, where a comparison sort of the 80,000 entries of a
/// 100,000-rule table took half of a load from the catalogue, and no second list of the entries.
fn sorted(shards: &[Arc<Shard>], keep: impl Fn(&Shard) -> bool) -> Vec<Entry> {
    let kept = || {
        shards
            .iter()
            .enumerate()
            .filter(|(_, shard)| keep(shard))
            .flat_map(|(i, shard)| shard.hosts.iter().map(move |hash| (hash, i as u32)))
    };
    let len = kept().count();
    let bits = (usize::BITS - (len / 4).leading_zeros()).clamp(1, 24);
    let bucket = |hash: u64| (hash >> (64 - bits)) as usize;
    let mut ends = vec![0usize; 1 << bits];
    for (hash, _) in kept() {
        ends[bucket(hash)] += 1;
    }
    let mut next = Vec::with_capacity(ends.len());
    let mut total = 0;
    for count in &mut ends {
        next.push(total);
        total += *count;
        *count = total;
    }
    let mut out = vec![(0, 0); len];
    for entry in kept() {
        let slot = &mut next[bucket(entry.0)];
        out[*slot] = entry;
        *slot += 1;
    }
    let mut start = 0;
    for &end in &ends {
        out[start..end].sort_unstable();
        start = end;
    }
    out
}

/// The old entries renumbered and the new shards' merged in, or `None` when the shards that stay
/// changed their order (or a shard is there twice).
fn renumbered(shards: &[Arc<Shard>], old_shards: &[Arc<Shard>], old: &[Entry]) -> Option<Vec<Entry>> {
    let mut index: FxHashMap<u64, u32> = FxHashMap::default();
    index.reserve(shards.len());
    for (i, shard) in shards.iter().enumerate() {
        if index.insert(shard.id, i as u32).is_some() {
            return None;
        }
    }
    let mut renumber = Vec::with_capacity(old_shards.len());
    let mut last = None;
    for shard in old_shards {
        let new = index.remove(&shard.id);
        if new.is_some() {
            if new <= last {
                return None;
            }
            last = new;
        }
        renumber.push(new);
    }
    // What is left in `index` are the new shards.
    let fresh = sorted(shards, |shard| index.contains_key(&shard.id));
    let in_place = renumber
        .iter()
        .enumerate()
        .all(|(i, new)| new.is_none_or(|new| new as usize == i));
    if in_place {
        return Some(spliced(old_shards, old, &renumber, fresh));
    }
    let kept = old
        .iter()
        .filter_map(|&(hash, i)| Some((hash, renumber.get(i as usize).copied().flatten()?)));
    let mut merged = Vec::with_capacity(old.len() + fresh.len());
    let mut fresh = fresh.into_iter().peekable();
    for entry in kept {
        while let Some(next) = fresh.next_if(|next| *next < entry) {
            merged.push(next);
        }
        merged.push(entry);
    }
    merged.extend(fresh);
    Some(merged)
}

/// When every shard that stays keeps its index (a push that replaced shards one for one, the usual
/// push of a changed rule): the old entries as they are, but the gone shards' (each found by a
/// binary search of its hosts), with the new shards' `fresh` entries put in, copied in runs between
/// those edits rather than entry by entry.
fn spliced(old_shards: &[Arc<Shard>], old: &[Entry], renumber: &[Option<u32>], fresh: Vec<Entry>) -> Vec<Entry> {
    let mut gone: Vec<usize> = renumber
        .iter()
        .zip(old_shards)
        .enumerate()
        .filter(|(_, (new, _))| new.is_none())
        .flat_map(|(i, (_, shard))| shard.hosts.iter().map(move |hash| (hash, i as u32)))
        .filter_map(|entry| old.binary_search(&entry).ok())
        .collect();
    gone.sort_unstable();
    let mut out = Vec::with_capacity(old.len() - gone.len() + fresh.len());
    let mut gone = gone.into_iter().peekable();
    let mut at = 0;
    // Copies the old entries from `at` up to `to`, but the gone ones.
    let mut copy_to = |out: &mut Vec<Entry>, at: &mut usize, to: usize| {
        while let Some(skip) = gone.next_if(|&skip| skip < to) {
            out.extend_from_slice(&old[*at..skip]);
            *at = skip + 1;
        }
        out.extend_from_slice(&old[*at..to]);
        *at = to;
    };
    for entry in fresh {
        let to = old.partition_point(|e| *e < entry).max(at);
        copy_to(&mut out, &mut at, to);
        out.push(entry);
    }
    copy_to(&mut out, &mut at, old.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(id: u64, hosts: Vec<u64>) -> Arc<Shard> {
        Arc::new(Shard {
            id,
            fingerprint: [id, id],
            text: crate::shards::ShardText::Borrowed(""),
            rules: hosts.len(),
            hosts: hosts.into(),
            any_host: false,
            names: Vec::new().into(),
            kept: None,
        })
    }

    #[test]
    fn the_bucket_sort_sorts_as_a_comparison_sort_does() {
        let mut state = 7u64;
        for (shards, per_shard) in [(0, 0), (1, 1), (1, 2), (5, 1), (10, 10), (97, 43), (800, 100)] {
            let shards: Vec<Arc<Shard>> = (0..shards)
                .map(|s| {
                    let hosts = (0..per_shard)
                        .map(|i| {
                            state = crate::compact::piece_hash(&state.to_le_bytes());
                            // Some hashes twice, and some small ones (the top bits all zero).
                            match i % 7 {
                                0 => state >> 40,
                                3 => 42,
                                _ => state,
                            }
                        })
                        .collect();
                    shard(s, hosts)
                })
                .collect();
            let mut expected: Vec<Entry> = shards
                .iter()
                .enumerate()
                .flat_map(|(i, s)| s.hosts.iter().map(move |h| (h, i as u32)))
                .collect();
            expected.sort_unstable();
            assert_eq!(sorted(&shards, |_| true), expected, "{} shards", shards.len());
            let odd: Vec<Entry> = expected.iter().copied().filter(|e| e.1 % 2 == 1).collect();
            assert_eq!(sorted(&shards, |s| s.id % 2 == 1), odd);
        }
    }

    /// A shard of up to 40 random hosts, sorted and each once (as a store keeps them).
    fn random_shard(state: &mut u64, id: u64) -> Arc<Shard> {
        let mut hosts: Vec<u64> = (0..*state % 41)
            .map(|_| {
                *state = crate::compact::piece_hash(&state.to_le_bytes());
                // A few hosts shared by many shards, the others nearly never.
                if *state % 5 == 0 {
                    *state % 8
                } else {
                    *state
                }
            })
            .collect();
        hosts.sort_unstable();
        hosts.dedup();
        shard(id, hosts)
    }

    #[test]
    fn a_directory_built_from_the_one_before_is_the_one_sorted_afresh() {
        let mut state = 11u64;
        let old: Vec<Arc<Shard>> = (0..300).map(|id| random_shard(&mut state, id)).collect();
        let before = sorted(&old, |_| true);
        let mut id = 1_000;
        let mut fresh = |state: &mut u64| {
            id += 1;
            random_shard(state, id)
        };
        let same_hosts = shard(999, old[150].hosts.iter().collect());
        let mut cases: Vec<Vec<Arc<Shard>>> = Vec::new();
        // Replaced in place: one shard, several (the first and the last), one by a shard of the
        // same hosts (its entries equal to the gone one's).
        for at in [vec![150], vec![0, 7, 8, 299]] {
            let mut shards = old.clone();
            for i in at {
                shards[i] = fresh(&mut state);
            }
            cases.push(shards);
        }
        let mut shards = old.clone();
        shards[150] = same_hosts;
        cases.push(shards);
        // Inserted, removed, appended (the shards after an insertion or removal move).
        let mut shards = old.clone();
        shards.insert(10, fresh(&mut state));
        cases.push(shards);
        let mut shards = old.clone();
        shards.remove(10);
        cases.push(shards);
        let mut shards = old.clone();
        shards.push(fresh(&mut state));
        cases.push(shards);
        for (case, shards) in cases.iter().enumerate() {
            let built = build(shards, Some((&old, &before)));
            assert_eq!(&built[..], &sorted(shards, |_| true)[..], "case {case}");
        }
    }
}
