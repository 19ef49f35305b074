//! A shard's text's identity, its [`Fingerprint`]: two independent 64-bit hashes of the text, what
//! the form-2 index lists, the store knows a shard by and the catalogue files records under.

use crate::compact;

/// A shard's text's identity: two independent 64-bit hashes of it.
pub type Fingerprint = [u64; 2];

/// The fingerprint of a shard's text.
pub fn fingerprint(text: &str) -> Fingerprint {
    fingerprint_bytes(text.as_bytes())
}

/// The fingerprints of `texts`, in order, two at a time (side by side: about the cost of one;
/// a fresh VM checks every text of a table).
pub fn fingerprints<'t>(texts: impl IntoIterator<Item = &'t str>) -> Vec<Fingerprint> {
    let texts: Vec<&str> = texts.into_iter().collect();
    let mut out = Vec::with_capacity(texts.len());
    for pair in texts.chunks(2) {
        match pair {
            [first, second] => out.extend(compact::seeded_hashes_of_two(
                SEEDS,
                first.as_bytes(),
                second.as_bytes(),
            )),
            _ => out.extend(pair.iter().map(|text| fingerprint(text))),
        }
    }
    out
}

/// The fingerprint's two seeds.
const SEEDS: [u64; 2] = [0x9e37_79b9_7f4a_7c15, 0x6a09_e667_f3bc_c909];

pub(crate) fn fingerprint_bytes(bytes: &[u8]) -> Fingerprint {
    compact::seeded_hashes(SEEDS, bytes)
}
