//! [`Encoder`]: the compact form of one table after another, reusing what did not change.
//!
//! The binary document is cut into *pieces* (its head, each element of a root-level list such as
//! `rules`, what follows that list), and the pieces into *chunks* by content: a chunk of elements
//! ends after an element whose hash is ≡ 0 mod [`CHUNK_PIECES`] (or past [`MAX_CHUNK_BYTES`]), so
//! inserting, removing or changing a rule changes its own chunk and leaves the others' bounds alone.
//! Each chunk is deflated on its own and ends with a sync flush (byte-aligned, no reference to an
//! earlier chunk), so the raw deflate streams of the chunks concatenate into one stream; the zlib
//! header, a final empty block and the Adler-32 of the whole document (combined from the chunks')
//! make it the zlib stream the reader inflates.
//!
//! The output depends on the document alone: a fresh encoder ([`super::to_text`]) and one that
//! encoded other tables before write the same bytes. The cache holds the chunks of the last
//! document only (compressed and raw, the raw bytes to compare with, so a hash collision cannot
//! pick a wrong chunk).

use base64::Engine as _;
use miniz_oxide::deflate::core::{
    compress_to_output, create_comp_flags_from_zip_params, CompressorOxide, TDEFLFlush, TDEFLStatus,
};
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::{write, EncodeError, WRAPPER_KEY};

/// The zlib level of every chunk (measured in BENCHMARKS.md, "Compact table").
pub const ZLIB_LEVEL: u8 = 9;

/// One element in this many ends a chunk, on average (measured in BENCHMARKS.md, "Compact table").
pub const CHUNK_PIECES: u64 = 64;

/// A chunk ends after the element that takes it past this many bytes, whatever the hashes say
/// (a long run of identical elements would otherwise be one chunk).
pub const MAX_CHUNK_BYTES: usize = 256 << 10;

/// The zlib header: deflate with a 32 KiB window, no dictionary, "maximum compression".
const ZLIB_HEADER: [u8; 2] = [0x78, 0xda];

/// A final, empty block (fixed Huffman codes, just the end-of-block code): ends the deflate stream.
const FINAL_EMPTY_BLOCK: [u8; 2] = [0x03, 0x00];

/// Encodes documents into the compact form, keeping the compressed chunks of the last one.
pub struct Encoder {
    compressor: Box<CompressorOxide>,
    cache: FxHashMap<u64, Chunk>,
    /// Reused between documents: the binary document and its piece marks.
    binary: Vec<u8>,
    marks: Vec<write::Mark>,
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
}

/// One chunk of the last document.
struct Chunk {
    raw: Box<[u8]>,
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
        let flags = create_comp_flags_from_zip_params(i32::from(ZLIB_LEVEL), -15, 0);
        Encoder {
            compressor: Box::new(CompressorOxide::new(flags)),
            cache: FxHashMap::default(),
            binary: Vec::new(),
            marks: Vec::new(),
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
        out.extend_from_slice(&ZLIB_HEADER);
        let mut adler = 1;
        for span in chunks(&self.binary, &self.marks) {
            let raw = &self.binary[span.range];
            let key = span.hash;
            self.stats.chunks += 1;
            let chunk = match self.cache.get_mut(&key) {
                Some(chunk) if *chunk.raw == *raw => chunk,
                _ => {
                    self.stats.deflated += 1;
                    let chunk = Chunk {
                        raw: raw.into(),
                        deflated: deflate(&mut self.compressor, raw)?.into(),
                        adler: miniz_oxide::mz_adler32_oxide(1, raw),
                        used: false,
                    };
                    // A collision (another chunk under this hash) replaces it: still correct.
                    self.cache.insert(key, chunk);
                    self.cache
                        .get_mut(&key)
                        .ok_or_else(|| EncodeError("the chunk cache lost a chunk".into()))?
                }
            };
            chunk.used = true;
            out.extend_from_slice(&chunk.deflated);
            adler = adler32_combine(adler, chunk.adler, raw.len());
        }
        out.extend_from_slice(&FINAL_EMPTY_BLOCK);
        out.extend_from_slice(&adler.to_be_bytes());
        self.cache.retain(|_, chunk| std::mem::take(&mut chunk.used));
        Ok(out)
    }
}

/// A chunk: its byte range in the binary document and its content hash.
struct Span {
    range: std::ops::Range<usize>,
    hash: u64,
}

/// The chunks of a binary document with these marks (see [`write::Mark`]).
fn chunks(binary: &[u8], marks: &[write::Mark]) -> Vec<Span> {
    let head = write::Mark { at: 0, element: false };
    let tail = write::Mark {
        at: binary.len(),
        element: false,
    };
    let bounds: Vec<write::Mark> = std::iter::once(head)
        .chain(marks.iter().copied())
        .chain(std::iter::once(tail))
        .collect();
    let mut spans = Vec::with_capacity(marks.len() / CHUNK_PIECES as usize + 4);
    let (mut start, mut hash) = (0, SEED);
    for (i, pair) in bounds.windows(2).enumerate() {
        let (piece, next) = (pair[0], pair[1]);
        if piece.at == next.at {
            continue;
        }
        let piece_hash = piece_hash(&binary[piece.at..next.at]);
        hash = mix(hash ^ piece_hash);
        // The next non-empty piece's kind (none after the last).
        let next_element = bounds[i + 1..]
            .windows(2)
            .find(|w| w[0].at != w[1].at)
            .is_some_and(|w| w[0].element);
        let ends =
            !piece.element || !next_element || piece_hash % CHUNK_PIECES == 0 || next.at - start >= MAX_CHUNK_BYTES;
        if ends {
            spans.push(Span {
                range: start..next.at,
                hash,
            });
            (start, hash) = (next.at, SEED);
        }
    }
    spans
}

const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// A piece's content hash, mixed so that its low bits choose chunk ends well.
fn piece_hash(bytes: &[u8]) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    std::hash::Hasher::write(&mut hasher, bytes);
    mix(std::hash::Hasher::finish(&hasher))
}

/// SplitMix64's finaliser.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// `raw` as raw deflate ending in a sync flush: byte-aligned, referring to nothing before it.
fn deflate(compressor: &mut CompressorOxide, raw: &[u8]) -> Result<Vec<u8>, EncodeError> {
    compressor.reset();
    let mut out = Vec::with_capacity(raw.len() / 6 + 16);
    let (status, consumed) = compress_to_output(compressor, raw, TDEFLFlush::Sync, |bytes| {
        out.extend_from_slice(bytes);
        true
    });
    match (status, consumed == raw.len()) {
        (TDEFLStatus::Okay, true) => Ok(out),
        _ => Err(EncodeError(format!(
            "deflate stopped: {status:?} after {consumed} of {} bytes",
            raw.len()
        ))),
    }
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
