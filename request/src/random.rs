//! Random numbers for weighted backend choice.
//!
//! The generator is SplitMix64, seeded once per VM from `std`'s `RandomState`, whose keys come from
//! the WASI `random_get` call (the one `std`'s `HashMap` already imports, so the filter asks the host
//! for nothing new and needs no extra crate). After seeding, a draw is two multiplications: no host
//! call per request. Weighted choice needs a fair spread, not secrecy, which SplitMix64 gives.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

/// A SplitMix64 generator.
#[derive(Debug, Clone, Copy)]
pub struct Random {
    state: u64,
}

impl Random {
    /// A generator seeded from the host's randomness (through `std`).
    pub fn from_entropy() -> Self {
        Random::with_seed(RandomState::new().hash_one(0x5377_6974_6368_7961_u64))
    }

    /// A generator with a fixed seed, for tests.
    pub fn with_seed(seed: u64) -> Self {
        Random { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_spread_evenly_modulo_small_weights() {
        let mut random = Random::with_seed(7);
        let mut buckets = [0u32; 4];
        for _ in 0..40_000 {
            buckets[(random.next_u64() % 4) as usize] += 1;
        }
        assert!(buckets.iter().all(|&n| (9_500..10_500).contains(&n)), "{buckets:?}");
    }

    #[test]
    fn entropy_seeds_differ() {
        assert_ne!(Random::from_entropy().next_u64(), Random::from_entropy().next_u64());
    }
}
