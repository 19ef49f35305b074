//! [`Encoder`]: the compact form of one table after another, reusing what did not change.
//!
//! The binary document is cut into *pieces* (its head, each element of a root-level list such as
//! `rules`, what follows that list), and the pieces into *chunks* by content: a chunk of elements
//! ends after an element whose hash is ≡ 0 mod [`CHUNK_PIECES`] (or past [`MAX_CHUNK_BYTES`]), so
//! inserting, removing or changing a rule changes its own chunk and leaves the others' bounds alone.
//! Each chunk is deflated on its own, after the [`PRIME_BYTES`] of its list just before it (their
//! output dropped: the chunk may refer back to them, as one stream would, since the reader has
//! inflated them just before), and ends with a sync flush (byte-aligned), so the raw deflate
//! streams of the chunks concatenate into one stream; the zlib header, a final empty block and the
//! Adler-32 of the whole document (combined from the chunks') make it an ordinary zlib stream.
//!
//! The output depends on the document alone: a fresh encoder ([`super::to_text`]) and one that
//! encoded other tables before write the same bytes. The cache holds the compressed chunks of the
//! last document only, with that document's binary form: a chunk is reused only when its bytes and
//! the bytes before it that primed it are the same (compared, so a hash collision cannot pick a
//! wrong chunk).

use base64::Engine as _;
use miniz_oxide::deflate::core::{
    compress_to_output, create_comp_flags_from_zip_params, CompressorOxide, TDEFLFlush, TDEFLStatus,
};
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::{write, EncodeError, WRAPPER_KEY};

/// The zlib level of every chunk (measured in BENCHMARKS.md, "Compact table").
pub const ZLIB_LEVEL: u8 = 6;

/// One element in this many ends a chunk, on average (measured in BENCHMARKS.md, "Compact table").
pub const CHUNK_PIECES: u64 = 256;

/// Each chunk is deflated after the bytes of the document just before it (up to this many), so
/// that it can refer to them as a single stream would (measured in BENCHMARKS.md, "Compact table").
pub const PRIME_BYTES: usize = 16 << 10;

/// A chunk ends after the element that takes it past this many bytes, whatever the hashes say
/// (a long run of identical elements would otherwise be one chunk).
pub const MAX_CHUNK_BYTES: usize = 256 << 10;

/// The zlib header: deflate with a 32 KiB window, no dictionary, and the level's class (FLEVEL,
/// informative only); the second byte makes the pair a multiple of 31.
fn zlib_header(level: u8) -> [u8; 2] {
    match level {
        0..=1 => [0x78, 0x01],
        2..=5 => [0x78, 0x5e],
        6 => [0x78, 0x9c],
        _ => [0x78, 0xda],
    }
}

/// A final, empty block (fixed Huffman codes, just the end-of-block code): ends the deflate stream.
const FINAL_EMPTY_BLOCK: [u8; 2] = [0x03, 0x00];

/// Encodes documents into the compact form, keeping the compressed chunks of the last one.
pub struct Encoder {
    compressor: Box<CompressorOxide>,
    level: u8,
    /// One element in this many ends a chunk, on average.
    chunk_pieces: u64,
    /// How many bytes before a chunk prime its compressor.
    prime_bytes: usize,
    cache: FxHashMap<u64, Chunk>,
    /// Reused between documents: the binary document and its piece marks.
    binary: Vec<u8>,
    marks: Vec<write::Mark>,
    /// The last document's binary form, which the cached chunks point into.
    previous: Vec<u8>,
    stats: EncodeStats,
}

/// What the last [`Encoder::encode`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EncodeStats {
    /// The chunks of the document.
    pub chunks: usize,
    /// How many of them were not in the cache, and were deflated.
    pub deflated: usize,
    /// The binary document's size, in bytes.
    pub binary_bytes: usize,
    /// The chunks the cache holds after it: those of this document only.
    pub cached: usize,
}

/// One chunk of the last document, deflated after the bytes before it (its prime).
struct Chunk {
    /// Where its prime starts in the last document (in the document being encoded once `used`).
    at: usize,
    prime: usize,
    len: usize,
    deflated: Box<[u8]>,
    adler: u32,
    /// Whether the document being encoded uses it (the others are dropped at its end).
    used: bool,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder::new()
    }
}

impl Encoder {
    /// An encoder with an empty cache.
    pub fn new() -> Encoder {
        Encoder::with_params(ZLIB_LEVEL, CHUNK_PIECES, PRIME_BYTES)
    }

    /// An encoder with another zlib level (0 – 10), chunk size and prime than [`ZLIB_LEVEL`],
    /// [`CHUNK_PIECES`] and [`PRIME_BYTES`] (at most 32 KiB): what measured the choice of those (its
    /// output differs from [`Encoder::new`]'s).
    pub fn with_params(level: u8, chunk_pieces: u64, prime_bytes: usize) -> Encoder {
        let flags = create_comp_flags_from_zip_params(i32::from(level.min(10)), -15, 0);
        Encoder {
            compressor: Box::new(CompressorOxide::new(flags)),
            level,
            chunk_pieces: chunk_pieces.max(1),
            prime_bytes: prime_bytes.min(32 << 10),
            cache: FxHashMap::default(),
            binary: Vec::new(),
            marks: Vec::new(),
            previous: Vec::new(),
            stats: EncodeStats::default(),
        }
    }

    /// The compact form of `document`, as the text of a one-key JSON object: the same text whatever
    /// the encoder encoded before.
    pub fn encode<T: Serialize + ?Sized>(&mut self, document: &T) -> Result<String, EncodeError> {
        let deflated = self.zlib(document)?;
        let mut text = String::with_capacity(deflated.len() * 4 / 3 + WRAPPER_KEY.len() + 12);
        text.push_str("{\"");
        text.push_str(WRAPPER_KEY);
        text.push_str("\":\"");
        // A base64 string needs no JSON escaping.
        base64::engine::general_purpose::STANDARD.encode_string(&deflated, &mut text);
        text.push_str("\"}");
        Ok(text)
    }

    /// What the last encoding did (chunks reused, chunks deflated).
    pub fn stats(&self) -> EncodeStats {
        self.stats
    }

    /// The zlib stream of `document`'s binary form.
    pub fn zlib<T: Serialize + ?Sized>(&mut self, document: &T) -> Result<Vec<u8>, EncodeError> {
        write::write(document, &mut self.binary, &mut self.marks)?;
        self.stats = EncodeStats {
            binary_bytes: self.binary.len(),
            ..EncodeStats::default()
        };
        let mut out = Vec::with_capacity(self.binary.len() / 12 + 64);
        out.extend_from_slice(&zlib_header(self.level));
        let mut adler = 1;
        let mut previous_hash = SEED;
        for span in chunks(&self.binary, &self.marks, self.chunk_pieces) {
            let at = span.range.start.saturating_sub(self.prime_bytes).max(span.run_start);
            let (prime, len) = (span.range.start - at, span.range.len());
            let bytes = &self.binary[at..span.range.end];
            // The bytes before it change its compressed form: they are part of its key.
            let key = mix(span.hash ^ previous_hash.rotate_left(17));
            previous_hash = span.hash;
            self.stats.chunks += 1;
            let cached = self.cache.get_mut(&key).filter(|chunk| {
                let holder = if chunk.used { &self.binary } else { &self.previous };
                (chunk.prime, chunk.len) == (prime, len) && holder.get(chunk.at..chunk.at + prime + len) == Some(bytes)
            });
            let chunk = match cached {
                Some(chunk) => {
                    chunk.at = at;
                    chunk
                }
                None => {
                    self.stats.deflated += 1;
                    let raw = &bytes[prime..];
                    let chunk = Chunk {
                        at,
                        prime,
                        len,
                        deflated: deflate(&mut self.compressor, &bytes[..prime], raw)?.into(),
                        adler: miniz_oxide::mz_adler32_oxide(1, raw),
                        used: false,
                    };
                    // A collision (another chunk under this key) replaces it: still correct.
                    self.cache.insert(key, chunk);
                    self.cache
                        .get_mut(&key)
                        .ok_or_else(|| EncodeError("the chunk cache lost a chunk".into()))?
                }
            };
            chunk.used = true;
            out.extend_from_slice(&chunk.deflated);
            adler = adler32_combine(adler, chunk.adler, len);
        }
        out.extend_from_slice(&FINAL_EMPTY_BLOCK);
        out.extend_from_slice(&adler.to_be_bytes());
        self.cache.retain(|_, chunk| std::mem::take(&mut chunk.used));
        self.stats.cached = self.cache.len();
        std::mem::swap(&mut self.previous, &mut self.binary);
        Ok(out)
    }
}

/// A chunk: its byte range in the binary document, its content hash, and where the run of list
/// elements it belongs to starts (its prime never reaches before: the head, which changes with
/// every table, would change the first chunk's too).
struct Span {
    range: std::ops::Range<usize>,
    hash: u64,
    run_start: usize,
}

/// The chunks of a binary document with these marks (see [`write::Mark`]).
fn chunks(binary: &[u8], marks: &[write::Mark], chunk_pieces: u64) -> Vec<Span> {
    let head = write::Mark { at: 0, element: false };
    let tail = write::Mark {
        at: binary.len(),
        element: false,
    };
    // Non-empty pieces: (start, end, is an element).
    let bounds: Vec<write::Mark> = std::iter::once(head)
        .chain(marks.iter().copied())
        .chain(std::iter::once(tail))
        .collect();
    let pieces: Vec<(usize, usize, bool)> = bounds
        .windows(2)
        .filter(|w| w[0].at != w[1].at)
        .map(|w| (w[0].at, w[1].at, w[0].element))
        .collect();
    let mut spans = Vec::with_capacity(marks.len() / chunk_pieces as usize + 4);
    let (mut start, mut hash, mut run_start) = (0, SEED, 0);
    for (i, &(from, to, element)) in pieces.iter().enumerate() {
        if !element || i == 0 || !pieces[i - 1].2 {
            run_start = from;
        }
        let piece_hash = piece_hash(&binary[from..to]);
        hash = mix(hash ^ piece_hash);
        let next_element = pieces.get(i + 1).is_some_and(|next| next.2);
        let ends = !element || !next_element || piece_hash % chunk_pieces == 0 || to - start >= MAX_CHUNK_BYTES;
        if ends {
            spans.push(Span {
                range: start..to,
                hash,
                run_start,
            });
            (start, hash) = (to, SEED);
        }
    }
    spans
}

const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// A piece's content hash, mixed so that its low bits choose chunk ends well: 64 bits on every
/// target. (Not `rustc_hash::FxHasher`, whose state is a `usize`: on wasm32 its 32 bits made the
/// names of a 100,000-rule table collide in the filter's shard store, BENCHMARKS.md "Table pushes",
/// and would make the encoder cut elsewhere there than natively.)
pub(crate) fn piece_hash(bytes: &[u8]) -> u64 {
    let [hash] = seeded_hashes([SEED], bytes);
    hash
}

/// [`piece_hash`] from each of `seeds`, in one pass over `bytes`: independent hashes of the same
/// bytes (the lanes' finalisers interleave, so two cost little more than one).
pub(crate) fn seeded_hashes<const N: usize>(seeds: [u64; N], bytes: &[u8]) -> [u64; N] {
    let mut hashes = seeds.map(|seed| seed ^ bytes.len() as u64);
    hash_words(&mut hashes, bytes);
    hashes
}

/// [`seeded_hashes`] of `first` and of `second`, side by side: each word of one and the same word
/// of the other go through their own chains in one step, which a CPU runs at once (a chain is
/// bound by its multiplies' latency, not by the work), so the two cost little more than one.
pub(crate) fn seeded_hashes_of_two<const N: usize>(seeds: [u64; N], first: &[u8], second: &[u8]) -> [[u64; N]; 2] {
    let mut hashes = [first, second].map(|text| seeds.map(|seed| seed ^ text.len() as u64));
    let [a, b] = &mut hashes;
    for (first_word, second_word) in first.chunks_exact(8).zip(second.chunks_exact(8)) {
        hash_word(a, first_word);
        hash_word(b, second_word);
    }
    // Then each alone: the longer one's other whole words, and each one's last.
    let both = first.len().min(second.len()) / 8 * 8;
    hash_words(a, first.get(both..).unwrap_or_default());
    hash_words(b, second.get(both..).unwrap_or_default());
    hashes
}

/// `bytes`' whole words through each of `hashes`' chains, then its last (padded, maybe empty).
fn hash_words<const N: usize>(hashes: &mut [u64; N], bytes: &[u8]) {
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        hash_word(hashes, word);
    }
    hash_word(hashes, words.remainder());
}

/// One word (8 bytes, or fewer zero-padded) through each of `hashes`' chains: through the whole
/// finaliser, since a multiply alone carries a difference only upwards, and names that differ in
/// a word's last bytes then collided.
fn hash_word<const N: usize>(hashes: &mut [u64; N], word: &[u8]) {
    let mut padded = [0; 8];
    if let Some(head) = padded.get_mut(..word.len()) {
        head.copy_from_slice(word);
    }
    let word = u64::from_le_bytes(padded);
    for hash in hashes {
        *hash = mix(*hash ^ word);
    }
}

/// SplitMix64's finaliser.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// `raw` as raw deflate ending in a sync flush (byte-aligned), deflated after `prime` (the bytes
/// just before it in the document, whose own output is dropped) so that it refers to nothing
/// before them.
fn deflate(compressor: &mut CompressorOxide, prime: &[u8], raw: &[u8]) -> Result<Vec<u8>, EncodeError> {
    compressor.reset();
    let mut out = Vec::with_capacity(raw.len() / 6 + 16);
    for (input, keep) in [(prime, false), (raw, true)] {
        if input.is_empty() {
            continue;
        }
        let (status, consumed) = compress_to_output(compressor, input, TDEFLFlush::Sync, |bytes| {
            if keep {
                out.extend_from_slice(bytes);
            }
            true
        });
        if status != TDEFLStatus::Okay || consumed != input.len() {
            return Err(EncodeError(format!(
                "deflate stopped: {status:?} after {consumed} of {} bytes",
                input.len()
            )));
        }
    }
    Ok(out)
}

/// The Adler-32 of `a ++ b` from that of `a`, that of `b` and `b`'s length (zlib's `adler32_combine`).
fn adler32_combine(a: u32, b: u32, b_len: usize) -> u32 {
    const BASE: u64 = 65521;
    let rem = b_len as u64 % BASE;
    let (a1, a2, b1, b2) = (
        u64::from(a & 0xffff),
        u64::from(a >> 16),
        u64::from(b & 0xffff),
        u64::from(b >> 16),
    );
    let sum1 = (a1 + b1 + BASE - 1) % BASE;
    let sum2 = (rem * a1 % BASE + a2 + b2 + BASE - rem) % BASE;
    (sum1 | (sum2 << 16)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    /// The same value natively and on wasm32 (`make test-wasm32` runs this under Node): the
    /// filter's shard store and the sidecar's encoders hash alike.
    #[test]
    fn piece_hash_is_the_same_64_bits_on_every_target() {
        assert_eq!(piece_hash(b""), 16_294_208_416_658_607_535);
        assert_eq!(piece_hash(b"Ingress/default/web#0"), 18_276_133_010_905_729_864);
    }

    /// The names of 400,000 rules hash apart (a 32-bit hash would collide about 19 times; a
    /// multiply-and-rotate step per word collided on names that differ in their last bytes).
    #[test]
    fn piece_hashes_of_400000_names_do_not_collide() {
        let mut hashes: Vec<u64> = (0..200_000)
            .flat_map(|i| {
                [
                    format!("Ingress/bench/r{i}#0"),
                    format!("Ingress/ns{}/svc{i}#{}", i % 97, i % 7),
                ]
            })
            .map(|name| piece_hash(name.as_bytes()))
            .collect();
        hashes.sort_unstable();
        hashes.dedup();
        assert_eq!(hashes.len(), 400_000);
    }

    #[test]
    fn two_texts_hashed_side_by_side_hash_as_each_alone() {
        let bytes: Vec<u8> = (0..200u32).map(|i| (i * 37 % 251) as u8).collect();
        for a in 0..40 {
            for b in [0, 1, 7, 8, 9, 16, 23, 39, 120] {
                let (first, second) = (&bytes[..a], &bytes[3..3 + b]);
                let seeds = [1, 0x9e37_79b9_7f4a_7c15];
                assert_eq!(
                    seeded_hashes_of_two(seeds, first, second),
                    [seeded_hashes(seeds, first), seeded_hashes(seeds, second)],
                    "{a} and {b} bytes"
                );
            }
        }
    }

    #[test]
    fn adler32_combine_is_the_adler32_of_the_concatenation() {
        let data: Vec<u8> = (0..200_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for cut in [0, 1, 5_552, 65_521, 100_000, 200_000] {
            let (a, b) = data.split_at(cut);
            let (adler_a, adler_b) = (miniz_oxide::mz_adler32_oxide(1, a), miniz_oxide::mz_adler32_oxide(1, b));
            assert_eq!(
                adler32_combine(adler_a, adler_b, b.len()),
                miniz_oxide::mz_adler32_oxide(1, &data),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn the_zlib_stream_inflates_with_a_plain_inflater() {
        let document = serde_json::json!({"rules": (0..3000).map(|i| serde_json::json!({"name": format!("r{i}")})).collect::<Vec<_>>()});
        let zlib = Encoder::new().zlib(&document).unwrap();
        let inflated = miniz_oxide::inflate::decompress_to_vec_zlib(&zlib).unwrap();
        assert_eq!(inflated, super::super::to_binary(&document).unwrap());
    }
}
