//! The sharded form's document byte for byte (form 2): how the [`ShardEncoder`](super::ShardEncoder)
//! writes it, and how a reader that reads its configuration by ranges ([`Source`]: in Envoy, the
//! plugin configuration buffer, which the host copies into the VM range by range) takes it apart
//! without reading the texts of the shards it already holds.
//!
//! The writer's bytes: the *front*, `{"table_shards":{"form":2,"front":"NNNNNNNNNN","head":…,"index":[…]`
//! (`NNNNNNNNNN` its own length in bytes), then `,"shards":[`, each text in quotes with `,` between
//! them, and `]}}`. There is no space anywhere, and a text is base64, which needs no escaping. So a
//! reader by ranges reads the front (about 45 bytes a shard), places each text by the index's
//! lengths, and checks the document's size against them; it reads a text only when its store lacks
//! the shard, checking the bytes around it ([`super::Texts::get`]) and its fingerprint (the store).
//! A document that is not exactly so (another writer's spacing, a `Struct` rendered again by a
//! control plane) is read whole as JSON: [`read_ranged`] answers `None` for it.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::Range;

use super::fingerprint::Fingerprint;
use super::{read_index, Fields, Parts, Texts, FORM, WRAPPER_KEY};

/// A configuration read by ranges.
pub trait Source {
    /// Its size in bytes.
    fn size(&self) -> usize;
    /// Its bytes in `range`; `None` when the host hands over fewer.
    fn read(&self, range: Range<usize>) -> Option<Cow<'_, [u8]>>;
}

/// Bytes in memory (a configuration already copied whole, and tests).
impl Source for &[u8] {
    fn size(&self) -> usize {
        self.len()
    }

    fn read(&self, range: Range<usize>) -> Option<Cow<'_, [u8]>> {
        self.get(range).map(Cow::Borrowed)
    }
}

/// How many decimal digits `front` has.
const FRONT_DIGITS: usize = 10;
/// What follows the front: the list of texts opens.
const SHARDS_OPEN: &str = ",\"shards\":[";
/// What ends the document: the list, the wrapper and the document close.
const CLOSING: &str = "]}}";

/// What the document starts with, up to `front`'s digits.
fn opening() -> String {
    format!("{{\"{WRAPPER_KEY}\":{{\"form\":{FORM},\"front\":\"")
}

/// The document of the table whose head is the JSON `head` and whose shards are `shards` (each
/// its text's fingerprint and its text), in the layout above.
pub(crate) fn write(head: &str, shards: &[(Fingerprint, &str)]) -> String {
    let mut index = String::with_capacity(shards.len() * 48);
    for (i, (fingerprint, text)) in shards.iter().enumerate() {
        let comma = if i == 0 { "" } else { "," };
        let _ = write!(index, "{comma}[\"{}\",{}]", fingerprint_hex(*fingerprint), text.len());
    }
    let opening = opening();
    let after_digits = format!("\",\"head\":{head},\"index\":[{index}]");
    let front = opening.len() + FRONT_DIGITS + after_digits.len();
    let texts: usize = shards.iter().map(|(_, text)| text.len() + 3).sum();
    let mut document = String::with_capacity(front + SHARDS_OPEN.len() + texts + CLOSING.len());
    document.push_str(&opening);
    let _ = write!(document, "{front:0FRONT_DIGITS$}");
    document.push_str(&after_digits);
    document.push_str(SHARDS_OPEN);
    for (i, (_, text)) in shards.iter().enumerate() {
        if i > 0 {
            document.push(',');
        }
        document.push('"');
        document.push_str(text);
        document.push('"');
    }
    document.push_str(CLOSING);
    document
}

/// A fingerprint as the index writes it: 32 lowercase hexadecimal digits, its first word first.
pub(super) fn fingerprint_hex([high, low]: Fingerprint) -> String {
    format!("{high:016x}{low:016x}")
}

/// A fingerprint written as [`fingerprint_hex`] writes it.
pub(super) fn parse_fingerprint(text: &str) -> Option<Fingerprint> {
    let digits = text.as_bytes();
    if digits.len() != 32 || !digits.iter().all(|d| matches!(d, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let word = |range: Range<usize>| u64::from_str_radix(text.get(range)?, 16).ok();
    Some([word(0..16)?, word(16..32)?])
}

/// The sharded form in `source` taken apart from its front alone, each text left where it is; or
/// `None` when `source` is not the writer's exact bytes of form 2 (read it whole then: its errors
/// are reported there).
pub fn read_ranged(source: &dyn Source) -> Option<Parts<'_>> {
    let opening = opening();
    let size = source.size();
    let start = source.read(0..opening.len() + FRONT_DIGITS)?;
    let digits = start.strip_prefix(opening.as_bytes())?;
    if digits.len() != FRONT_DIGITS || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let front: usize = std::str::from_utf8(digits).ok()?.parse().ok()?;
    if front > size {
        return None;
    }
    // The front closed as a document of its own: the wrapper without `shards`.
    let mut bytes = source.read(0..front)?.into_owned();
    bytes.extend_from_slice(b"}}");
    let doc = crate::json::parse(&bytes).ok()?;
    let fields = Fields::read(&doc, doc.only_field(doc.root(), WRAPPER_KEY)?).ok()?;
    if fields.shards.is_some() {
        return None;
    }
    let index = read_index(&doc, fields.index?).ok()?;
    // Each text follows its opening quote, and is followed by its closing quote and `,` or `]`.
    let mut at = front + SHARDS_OPEN.len();
    let mut ranges = Vec::with_capacity(index.len());
    for (_, length) in &index {
        let start = at.checked_add(1)?;
        let end = start.checked_add(*length)?;
        ranges.push(start..end);
        at = end.checked_add(2)?;
    }
    let end = if index.is_empty() { at + 1 } else { at };
    if end.checked_add(CLOSING.len() - 1)? != size
        || *source.read(front..front + SHARDS_OPEN.len())? != *SHARDS_OPEN.as_bytes()
        || *source.read(size - CLOSING.len()..size)? != *CLOSING.as_bytes()
    {
        return None;
    }
    Some(Parts {
        head: fields.head,
        fingerprints: index.into_iter().map(|(fingerprint, _)| fingerprint).collect(),
        texts: Texts::Ranged { source, ranges },
    })
}
