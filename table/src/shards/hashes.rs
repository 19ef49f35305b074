//! [`Hashes`]: a shard's host or name hashes, as the catalogue's records write them (64 bits each,
//! little-endian), in a buffer shared with the other shards taken from the same records.
//!
//! A VM that takes a table's shards from the catalogue (in Envoy, the canary at every push, and a
//! fresh worker) would otherwise copy every record out of the records it copied from the host: at
//! 100,000 rules 1.6 MB more of a fresh VM's memory, whose every page costs a fault when first
//! touched (BENCHMARKS.md, "The canary's load"). Publishing copies a shard's hashes as bytes.
//!
//! Only a store's first table shares the records so ([`Hashes::detached`] otherwise): all of its
//! shards come from them, and the buffer goes with the last of them, whereas a later push's few
//! shards taken from a whole table's records would keep those records alive for their sake.

use std::ops::Range;
use std::sync::Arc;

/// A list of 64-bit hashes: a range of a shared buffer of little-endian words.
#[derive(Debug, Clone)]
pub(crate) struct Hashes {
    bytes: Arc<Vec<u8>>,
    range: Range<usize>,
}

impl Hashes {
    /// The `count` hashes at `at` in `bytes`, or `None` when `bytes` holds fewer.
    pub fn shared(bytes: &Arc<Vec<u8>>, at: usize, count: usize) -> Option<Hashes> {
        let range = at..at.checked_add(count.checked_mul(8)?)?;
        bytes.get(range.clone())?;
        Some(Hashes {
            bytes: Arc::clone(bytes),
            range,
        })
    }

    /// How many hashes there are.
    pub fn len(&self) -> usize {
        self.range.len() / 8
    }

    /// The hashes, in order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.as_bytes()
            .chunks_exact(8)
            .map(|word| u64::from_le_bytes(word.try_into().unwrap_or_default()))
    }

    /// The same hashes in a buffer of their own, which keeps no other alive.
    pub fn detached(&self) -> Hashes {
        let bytes = self.as_bytes().to_vec();
        Hashes {
            range: 0..bytes.len(),
            bytes: Arc::new(bytes),
        }
    }

    /// Whether the buffer holds more than these hashes.
    #[cfg(test)]
    pub fn shares_a_buffer(&self) -> bool {
        self.bytes.len() > self.range.len()
    }

    /// The hashes as the records write them.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(self.range.clone()).unwrap_or_default()
    }
}

/// Equal when they hold the same hashes, wherever they are.
impl PartialEq for Hashes {
    fn eq(&self, other: &Hashes) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Hashes {}

/// Hashes of their own.
impl From<Vec<u64>> for Hashes {
    fn from(hashes: Vec<u64>) -> Hashes {
        let bytes: Vec<u8> = hashes.iter().flat_map(|hash| hash.to_le_bytes()).collect();
        Hashes {
            range: 0..bytes.len(),
            bytes: Arc::new(bytes),
        }
    }
}
