//! The compact form of the table: the same document as the JSON, in a binary syntax, compressed and
//! wrapped so that it still travels as JSON (a `StringValue`, a WasmPlugin's `pluginConfig`):
//!
//! ```json
//! {"table_z": "<base64 of zlib of the binary document>"}
//! ```
//!
//! The binary document is the JSON value tree written with a one-byte tag per value, so a table of
//! 100,000 rules is some 14 MB before zlib and about 0.8 MB after (`table/README.md`, "The compact
//! form"; BENCHMARKS.md, "Compact table"). It says nothing of the table's types:
//! [`crate::TableSpec::from_value`] reads the decoded document exactly as it reads parsed JSON, so a
//! new field or action needs no change here.
//!
//! Layout (numbers are LEB128 varints): the magic `SYT`, the version byte [`BINARY_VERSION`], one
//! value. A value is a tag byte and its payload: `0` null, `1` false, `2` true, `3` n (a number
//! n >= 0), `4` n (the number -1-n), `5` eight bytes (an f64, little-endian), `6` length and UTF-8
//! bytes (a string), `7` count and values (a list), `8` count and pairs of key and value (an
//! object). In version 2 a key is a number n > 0, the key [`KEYS`]`[n - 1]` of a fixed dictionary
//! (the table format's field names), or `0`, length and bytes for any other key, so every value's
//! bytes depend on that value alone ([`Encoder`] reuses the compressed bytes of unchanged rules).
//! Version 1, which the reader still accepts, numbered keys as they appeared: `0`, length and bytes
//! (a new key, numbered from 1 in order of appearance) or the number of a key seen before.
//!
//! Writing: [`to_text`] (a fresh [`Encoder`]; `write` is the serde serializer of the binary
//! syntax, `encoder` the chunked zlib stream and its cache). The zlib stream is made of
//! independently deflated chunks, but it is an ordinary zlib stream: any inflater reads it.
//!
//! Reading: [`inflate`] (base64, then zlib through an [`Inflater`]: [`Miniz`] natively, the proxy's
//! `uncompress` in the filter, which so links no inflater), then [`from_binary`].
//!
//! Decoding never trusts the input: counts are bounded by the bytes left, nesting by [`MAX_DEPTH`],
//! the inflated size by [`MAX_INFLATED`]. A key written twice in one object is refused by the
//! table's reader (`crate::read`), for this form and JSON alike.

mod encoder;
mod write;

pub(crate) use encoder::{piece_hash, seeded_hashes, seeded_hashes_of_two};
pub(crate) use write::{push_varint, write as write_binary, Mark};

pub use encoder::{EncodeStats, Encoder, CHUNK_PIECES, MAX_CHUNK_BYTES, ZLIB_LEVEL};

use base64::Engine as _;
use serde_json::Value;

use crate::doc::{Doc, Item, Node, Text};

/// The key of the one-key object that carries the compact form.
pub const WRAPPER_KEY: &str = "table_z";

/// The version of the binary syntax the writer writes (not of the table format, which the document
/// itself carries). The reader reads it and version 1.
pub const BINARY_VERSION: u8 = 2;

/// The deepest nesting of lists and objects the decoder follows (a table needs 6), as for JSON.
pub const MAX_DEPTH: usize = crate::doc::MAX_DEPTH;

/// The largest binary document the decoder inflates (a 100,000-rule table is about 11 MiB).
pub const MAX_INFLATED: usize = 256 << 20;

pub(crate) const MAGIC: &[u8; 3] = b"SYT";

/// Version 2's key dictionary: key `n` (from 1) is `KEYS[n - 1]`; any other key is written inline
/// (`0`, length, bytes). The table format's field names, the most frequent first; frozen for
/// version 2 (a new field is written inline until a new version extends the list).
pub const KEYS: [&str; 31] = [
    "name",
    "host",
    "path",
    "type",
    "value",
    "action",
    "route",
    "backends",
    "cluster",
    "weight",
    "conditions",
    "on",
    "match",
    "invert",
    "ignore_case",
    "rewrite_prefix",
    "set_headers",
    "remove_headers",
    "direct_response",
    "status",
    "body",
    "content_type",
    "headers",
    "redirect",
    "url",
    "version",
    "generation",
    "cluster_header",
    "no_route",
    "debug_rule_header",
    "rules",
];

/// Value tags.
pub(crate) mod tag {
    pub const NULL: u8 = 0;
    pub const FALSE: u8 = 1;
    pub const TRUE: u8 = 2;
    pub const UINT: u8 = 3;
    pub const NEG: u8 = 4;
    pub const FLOAT: u8 = 5;
    pub const STRING: u8 = 6;
    pub const LIST: u8 = 7;
    pub const OBJECT: u8 = 8;
}

/// Why a compact table could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompactError {
    /// The text is not base64.
    #[error("`{WRAPPER_KEY}` is not base64: {0}")]
    Base64(String),
    /// The bytes are not a zlib stream (or inflate to more than [`MAX_INFLATED`]).
    #[error("`{WRAPPER_KEY}` is not a zlib stream of at most {MAX_INFLATED} bytes: {0}")]
    Zlib(String),
    /// Nothing here can inflate the compact form (the filter in a host without `uncompress`).
    #[error(
        "`{WRAPPER_KEY}` cannot be inflated here: {0}; send the table in its JSON form, which needs no inflating \
         (`switchyard watch --table-encoding json`, `switchyard compile --encoding json`, or \
         `switchyard convert TABLE --encoding json`)"
    )]
    NoInflater(String),
    /// The inflated bytes are not a binary document.
    #[error("`{WRAPPER_KEY}` holds a malformed binary document at byte {at}: {why}")]
    Binary {
        /// The offset in the inflated document.
        at: usize,
        /// What is wrong there.
        why: &'static str,
    },
}

/// Why a document could not be written in the compact form: only a value JSON cannot hold (a map
/// key that is not a string, a number or a boolean; an integer beyond 64 bits).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot write the compact form: {0}")]
pub struct EncodeError(pub String);

/// The compact form of a table document (a [`crate::TableSpec`], a `serde_json::Value`), as the
/// text of a one-key JSON object: what a fresh [`Encoder`] writes.
pub fn to_text<T: serde::Serialize + ?Sized>(document: &T) -> Result<String, EncodeError> {
    Encoder::new().encode(document)
}

/// The document inside the compact form's string (the value of [`WRAPPER_KEY`]), as JSON.
pub fn from_text(text: &str) -> Result<Value, CompactError> {
    Ok(from_binary(&inflate(text)?)?.to_value())
}

/// The binary document inside the compact form's string (the value of [`WRAPPER_KEY`]), inflated
/// by [`Miniz`]; read it with [`from_binary`].
pub fn inflate(text: &str) -> Result<Vec<u8>, CompactError> {
    inflate_with(text, &Miniz)
}

/// [`inflate`] with the zlib stream inflated by `inflater`.
pub fn inflate_with(text: &str, inflater: &dyn Inflater) -> Result<Vec<u8>, CompactError> {
    let deflated = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| CompactError::Base64(e.to_string()))?;
    inflater.inflate_zlib(&deflated, MAX_INFLATED)
}

/// What inflates the compact form's zlib stream. A trait so that the filter can hand the work to
/// its host (Envoy's foreign function `uncompress`) and link no inflater; everything else uses
/// [`Miniz`].
pub trait Inflater {
    /// The bytes the zlib stream `deflated` inflates to; a stream that is not zlib, or inflates to
    /// more than `limit` bytes, is [`CompactError::Zlib`].
    fn inflate_zlib(&self, deflated: &[u8], limit: usize) -> Result<Vec<u8>, CompactError>;
}

/// The inflater of `miniz_oxide`, in the module: what [`inflate`] and [`crate::RouteTable::from_tree`] use.
#[derive(Debug, Clone, Copy, Default)]
pub struct Miniz;

impl Inflater for Miniz {
    fn inflate_zlib(&self, deflated: &[u8], limit: usize) -> Result<Vec<u8>, CompactError> {
        miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(deflated, limit)
            .map_err(|e| CompactError::Zlib(e.to_string()))
    }
}

/// The compact form's string when `document` is the compact form (an object whose one key is
/// [`WRAPPER_KEY`], with a string value).
pub fn wrapped_text(document: &Value) -> Option<&str> {
    match document {
        Value::Object(map) if map.len() == 1 => map.get(WRAPPER_KEY)?.as_str(),
        _ => None,
    }
}

/// `document` itself, or, when it is the compact form (an object whose one key is [`WRAPPER_KEY`]
/// with a string value), the document that form holds.
pub fn unwrap(document: Value) -> Result<Value, CompactError> {
    match wrapped_text(&document) {
        Some(text) => from_text(text),
        None => Ok(document),
    }
}

/// The binary document (before zlib).
pub fn to_binary<T: serde::Serialize + ?Sized>(document: &T) -> Result<Vec<u8>, EncodeError> {
    let mut binary = Vec::with_capacity(1 << 16);
    write::write(document, &mut binary, &mut Vec::new())?;
    Ok(binary)
}

/// Reads a binary document (after zlib) into a tree borrowing its strings.
pub fn from_binary(bytes: &[u8]) -> Result<Doc<'_>, CompactError> {
    let mut reader = Reader {
        bytes,
        at: 0,
        version: 0,
        keys: Vec::new(),
        // About one value per 8 bytes in a table's document.
        doc: Doc::with_capacity(bytes.len() / 8),
    };
    if bytes.get(..3) != Some(MAGIC.as_slice()) {
        return Err(reader.fail("not a Switchyard binary document (no `SYT` magic)"));
    }
    reader.at = 3;
    reader.version = reader.byte()?;
    if !(1..=BINARY_VERSION).contains(&reader.version) {
        return Err(reader.fail("unsupported binary version"));
    }
    let root = reader.value(0)?;
    if reader.at != bytes.len() {
        return Err(reader.fail("trailing bytes after the document"));
    }
    reader.doc.set_root(root);
    Ok(reader.doc)
}

struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
    version: u8,
    /// Version 1's keys, by number.
    keys: Vec<&'b str>,
    doc: Doc<'b>,
}

impl<'b> Reader<'b> {
    fn fail(&self, why: &'static str) -> CompactError {
        CompactError::Binary { at: self.at, why }
    }

    fn byte(&mut self) -> Result<u8, CompactError> {
        let byte = self.bytes.get(self.at).copied().ok_or_else(|| self.fail("truncated"))?;
        self.at += 1;
        Ok(byte)
    }

    fn varint(&mut self) -> Result<u64, CompactError> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            n |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(n);
            }
        }
        Err(self.fail("a number longer than 64 bits"))
    }

    /// A count of things each at least one byte long: never more than the bytes left.
    fn count(&mut self) -> Result<usize, CompactError> {
        let n = self.varint()?;
        let left = self.bytes.len() - self.at;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= left)
            .ok_or_else(|| self.fail("a length beyond the end of the document"))
    }

    fn text(&mut self) -> Result<&'b str, CompactError> {
        let len = self.count()?;
        let bytes = self
            .bytes
            .get(self.at..self.at + len)
            .ok_or_else(|| self.fail("truncated"))?;
        let text = std::str::from_utf8(bytes).map_err(|_| self.fail("a string that is not UTF-8"))?;
        self.at += len;
        Ok(text)
    }

    fn key(&mut self) -> Result<&'b str, CompactError> {
        match (self.version, self.varint()?) {
            (2, 0) => self.text(),
            (2, n) => usize::try_from(n - 1)
                .ok()
                .and_then(|i| KEYS.get(i).copied())
                .ok_or_else(|| self.fail("a key number beyond the dictionary")),
            (_, n) => self.key_v1(n),
        }
    }

    /// Version 1's keys: `0` and a new key, numbered in order of appearance, or a number.
    fn key_v1(&mut self, n: u64) -> Result<&'b str, CompactError> {
        match n {
            0 => {
                let key = self.text()?;
                self.keys.push(key);
                Ok(key)
            }
            n => usize::try_from(n - 1)
                .ok()
                .and_then(|i| self.keys.get(i).copied())
                .ok_or_else(|| self.fail("a key number not yet defined")),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node<'b>, CompactError> {
        Ok(match self.byte()? {
            tag::NULL => Node::Null,
            tag::FALSE => Node::Bool(false),
            tag::TRUE => Node::Bool(true),
            tag::UINT => Node::UInt(self.varint()?),
            tag::NEG => {
                let n = self.varint()?;
                let i = i64::try_from(n).map_err(|_| self.fail("a negative number below i64"))?;
                Node::Int(!i)
            }
            tag::FLOAT => {
                let bytes = self
                    .bytes
                    .get(self.at..self.at + 8)
                    .ok_or_else(|| self.fail("truncated"))?;
                let mut array = [0u8; 8];
                array.copy_from_slice(bytes);
                self.at += 8;
                let f = f64::from_le_bytes(array);
                if !f.is_finite() {
                    return Err(self.fail("a number that is not finite"));
                }
                Node::Float(f)
            }
            tag::STRING => Node::Str(Text::Borrowed(self.text()?)),
            tag::LIST if depth < MAX_DEPTH => {
                let count = self.count()?;
                let span = self.doc.reserve(count);
                for i in 0..count {
                    let node = self.value(depth + 1)?;
                    self.doc.set(span, i, Item::unnamed(node));
                }
                Node::List(span)
            }
            tag::OBJECT if depth < MAX_DEPTH => {
                let count = self.count()?;
                let span = self.doc.reserve(count);
                for i in 0..count {
                    // A key written twice is refused by the reader (`crate::read`), as in JSON.
                    let key = Text::Borrowed(self.key()?);
                    let node = self.value(depth + 1)?;
                    self.doc.set(span, i, Item { key, node });
                }
                Node::Object(span)
            }
            tag::LIST | tag::OBJECT => return Err(self.fail("nested too deep")),
            _ => return Err(self.fail("an unknown value tag")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_of_value_round_trips() {
        let document = json!({
            "a": null, "b": [true, false, 0, 1, 127, 128, u64::MAX, -1, i64::MIN, 1.5, -0.25],
            "c": {"a": "", "d": "é ☃ \u{0}", "b": [{"a": 1}, {"a": 2, "e": []}]}
        });
        let binary = to_binary(&document).unwrap();
        assert_eq!(from_binary(&binary).map(|doc| doc.to_value()), Ok(document.clone()));
        let text = to_text(&document).unwrap();
        let wrapper: Value = serde_json::from_str(&text).unwrap();
        let inner = wrapper[WRAPPER_KEY].as_str().unwrap();
        assert_eq!(from_text(inner), Ok(document));
    }

    #[test]
    fn a_value_is_written_alike_wherever_it_stands() {
        let one = to_binary(&json!({"name": "a", "x-extra": 1})).unwrap();
        let two = to_binary(&json!([{"name": "b", "x-extra": 0}, {"name": "a", "x-extra": 1}])).unwrap();
        assert!(two.ends_with(&one[4..]), "{one:?} {two:?}");
        assert_eq!(
            two.windows(7).filter(|w| w == b"x-extra").count(),
            2,
            "a key of no dictionary is inline each time"
        );
        assert!(
            !two.windows(4).any(|w| w == b"name"),
            "a key of the dictionary is its number"
        );
    }

    #[test]
    fn every_key_of_the_dictionary_round_trips_and_the_dictionary_has_no_duplicate() {
        let document: Value = KEYS
            .iter()
            .map(|k| (k.to_string(), json!(k)))
            .collect::<serde_json::Map<_, _>>()
            .into();
        let binary = to_binary(&document).unwrap();
        assert_eq!(from_binary(&binary).map(|doc| doc.to_value()), Ok(document));
        let unique: std::collections::BTreeSet<&str> = KEYS.iter().copied().collect();
        assert_eq!(unique.len(), KEYS.len());
        assert!(
            from_binary(b"SYT\x02\x08\x01\x20\x00").is_err(),
            "key 32 is beyond the dictionary"
        );
    }

    #[test]
    fn version_1_with_numbered_keys_is_still_read() {
        // [{"version": 1}, {"version": 2}] as the version 1 writer wrote it: the key once, then its number.
        let v1 = b"SYT\x01\x07\x02\x08\x01\x00\x07version\x03\x01\x08\x01\x01\x03\x02";
        assert_eq!(
            from_binary(v1).map(|doc| doc.to_value()),
            Ok(json!([{"version": 1}, {"version": 2}]))
        );
        let undefined = b"SYT\x01\x08\x01\x02\x03\x02";
        assert!(from_binary(undefined).is_err());
    }

    #[test]
    fn serde_s_data_model_is_written_as_serde_json_writes_it() {
        #[derive(serde::Serialize)]
        enum E {
            Unit,
            New(u8),
            Tuple(u8, i8),
            Struct { a: Option<u8>, b: char },
        }
        #[derive(serde::Serialize)]
        struct S {
            e: Vec<E>,
            #[serde(skip_serializing_if = "Option::is_none")]
            skipped: Option<u8>,
            #[serde(flatten)]
            flat: std::collections::BTreeMap<u32, f32>,
            bytes: serde_bytes_like::Bytes,
            nan: f64,
        }
        mod serde_bytes_like {
            pub struct Bytes(pub Vec<u8>);
            impl serde::Serialize for Bytes {
                fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    s.serialize_bytes(&self.0)
                }
            }
        }
        let value = S {
            e: vec![E::Unit, E::New(1), E::Tuple(2, -3), E::Struct { a: None, b: 'x' }],
            skipped: None,
            flat: [(7, 0.5)].into(),
            bytes: serde_bytes_like::Bytes(vec![1, 255]),
            nan: f64::NAN,
        };
        let binary = to_binary(&value).unwrap();
        let expected = serde_json::to_value(&value).unwrap();
        assert_eq!(from_binary(&binary).map(|doc| doc.to_value()), Ok(expected));
        let bad_key: std::collections::BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into();
        assert!(to_binary(&bad_key).is_err());
    }

    #[test]
    fn every_truncation_and_corruption_is_an_error_not_a_panic() {
        let binary = to_binary(&json!({"rules": [{"name": "a", "n": [1, 2, {"x": "y"}]}], "v": -3})).unwrap();
        for len in 0..binary.len() {
            assert!(from_binary(&binary[..len]).is_err(), "truncated at {len}");
        }
        for i in 0..binary.len() {
            for byte in [0u8, 1, 7, 8, 0x7f, 0x80, 0xff] {
                let mut bad = binary.clone();
                bad[i] = byte;
                let _ = from_binary(&bad);
            }
        }
        let mut trailing = binary.clone();
        trailing.push(0);
        assert!(from_binary(&trailing).is_err());
    }

    #[test]
    fn deep_nesting_and_huge_counts_are_refused() {
        let mut deep = b"SYT\x01".to_vec();
        deep.extend(std::iter::repeat_n(tag::LIST, 10_000).flat_map(|t| [t, 1]));
        assert!(matches!(
            from_binary(&deep),
            Err(CompactError::Binary {
                why: "nested too deep",
                ..
            })
        ));
        let huge = b"SYT\x01\x07\xff\xff\xff\xff\x0f";
        assert!(from_binary(huge).is_err());
    }

    #[test]
    fn a_key_twice_decodes_and_the_reader_refuses_it() {
        // {"version": 1, "version": 1}: the second key is a reference to the first.
        let binary = b"SYT\x01\x08\x02\x00\x07version\x03\x01\x01\x03\x01";
        let doc = from_binary(binary).unwrap();
        let error = crate::TableSpec::from_tree(&doc).unwrap_err().to_string();
        assert!(error.contains("field `version` written twice"), "{error}");
    }

    #[test]
    fn bad_base64_and_bad_zlib_are_named() {
        assert!(matches!(from_text("not base64!"), Err(CompactError::Base64(_))));
        assert!(matches!(from_text("AAAA"), Err(CompactError::Zlib(_))));
    }
}
