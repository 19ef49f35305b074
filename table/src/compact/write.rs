//! The writer of the binary document: a serde [`Serializer`] that writes any `Serialize` value
//! (a [`crate::TableSpec`] directly, or a `serde_json::Value`) in the binary syntax of
//! [`super::BINARY_VERSION`], with no intermediate tree.
//!
//! It maps serde's data model as `serde_json` does (a unit variant is its name, a newtype variant a
//! one-key object, `None` is null, map keys are strings or integers written as text), so that the
//! binary document decodes to exactly the JSON `serde_json` would write. A key is its number in the
//! fixed dictionary [`KEYS`] or written inline (never a reference to an earlier one), so each
//! value's bytes depend on that value alone: what lets [`super::Encoder`] reuse the bytes of
//! unchanged rules.
//!
//! While writing, it notes where each element of a list that is a field of the root object (the
//! table's `rules`) begins and where that list ends: the *pieces* the encoder chunks.

use serde::ser::{self, Serialize};

use super::{tag, EncodeError, BINARY_VERSION, KEYS, MAGIC};

/// Where a piece of the binary document starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark {
    /// The offset in the binary document.
    pub at: usize,
    /// Whether the piece is an element of a root-level list (else what follows that list).
    pub element: bool,
}

/// Writes `document` as a binary document into `out` (cleared first), and into `marks` (cleared
/// first) where each element of a root-level list starts and where each such list ends.
pub(crate) fn write<T: Serialize + ?Sized>(
    document: &T,
    out: &mut Vec<u8>,
    marks: &mut Vec<Mark>,
) -> Result<(), EncodeError> {
    out.clear();
    marks.clear();
    out.extend_from_slice(MAGIC);
    out.push(BINARY_VERSION);
    let mut writer = Writer {
        out,
        marks,
        depth: 0,
        entries: Vec::new(),
        order: Vec::new(),
        scratch: Vec::new(),
    };
    document.serialize(&mut writer)
}

struct Writer<'o> {
    out: &'o mut Vec<u8>,
    marks: &'o mut Vec<Mark>,
    /// How many lists and objects enclose the value being written.
    depth: usize,
    /// Where each entry of the open objects starts, innermost last.
    entries: Vec<usize>,
    /// Reused by [`Writer::sort_entries`].
    order: Vec<(usize, usize)>,
    scratch: Vec<u8>,
}

impl<'x> Writer<'x> {
    fn varint(&mut self, n: u64) {
        push_varint(self.out, n);
    }

    fn text(&mut self, text: &str) {
        self.varint(text.len() as u64);
        self.out.extend_from_slice(text.as_bytes());
    }

    fn uint(&mut self, n: u64) {
        self.out.push(tag::UINT);
        self.varint(n);
    }

    fn int(&mut self, i: i64) {
        match u64::try_from(i) {
            Ok(n) => self.uint(n),
            Err(_) => {
                self.out.push(tag::NEG);
                self.varint(!(i as u64));
            }
        }
    }

    /// Opens a list or an object of `len` entries (written now when known, else at its end).
    fn open<'w>(&'w mut self, tag: u8, len: Option<usize>) -> Compound<'w, 'x> {
        self.out.push(tag);
        let count_at = self.out.len();
        if let Some(len) = len {
            self.varint(len as u64);
        }
        self.depth += 1;
        Compound {
            split: tag == tag::LIST && self.depth == 2,
            entries_from: (tag == tag::OBJECT).then_some(self.entries.len()),
            writer: self,
            count_at,
            declared: len,
            written: 0,
            levels: 1,
        }
    }

    /// Puts the entries of the object whose first entry is `self.entries[from]` (and whose last
    /// ends here) in the order of their keys, as `serde_json::Value`'s map keeps them (and the
    /// document compresses better so: BENCHMARKS.md, "Compact table"), moving the marks inside.
    fn sort_entries(&mut self, from: usize) {
        let end = self.out.len();
        let starts = self.entries.get(from..).unwrap_or_default();
        let sorted = starts
            .windows(2)
            .all(|w| key_at(self.out, w[0]) <= key_at(self.out, w[1]));
        if !sorted {
            self.order.clear();
            let ends = starts.iter().skip(1).copied().chain(std::iter::once(end));
            self.order.extend(starts.iter().copied().zip(ends));
            let out = &*self.out;
            self.order.sort_by(|a, b| key_at(out, a.0).cmp(key_at(out, b.0)));
            let region = self.order.iter().map(|r| r.0).min().unwrap_or(end);
            self.scratch.clear();
            self.scratch.extend_from_slice(&self.out[region..]);
            let mut to = region;
            let moves_marks = self.marks.last().is_some_and(|m| m.at > region);
            for &(start, stop) in &self.order {
                let bytes = &self.scratch[start - region..stop - region];
                self.out[to..to + bytes.len()].copy_from_slice(bytes);
                if moves_marks {
                    for mark in self.marks.iter_mut().filter(|m| m.at > start && m.at <= stop) {
                        // Marked once: a mark moved to a place another entry then covers would move again.
                        mark.at = mark.at - start + to + end;
                    }
                }
                to += bytes.len();
            }
            if moves_marks {
                for mark in self.marks.iter_mut().filter(|m| m.at > end) {
                    mark.at -= end;
                }
                self.marks.sort_by_key(|m| m.at);
            }
        }
        self.entries.truncate(from);
    }

    /// A one-key object `{variant: …}` (the value follows), as serde_json writes an enum's
    /// newtype, tuple and struct variants.
    fn variant_key(&mut self, variant: &str) {
        self.out.push(tag::OBJECT);
        self.varint(1);
        push_key(self.out, variant);
    }
}

/// A key: its number in [`KEYS`], else `0` and the key inline.
fn push_key(out: &mut Vec<u8>, key: &str) {
    match KEYS.iter().position(|known| *known == key) {
        Some(i) => push_varint(out, i as u64 + 1),
        None => {
            out.push(0);
            push_varint(out, key.len() as u64);
            out.extend_from_slice(key.as_bytes());
        }
    }
}

/// The text of the key written at `at` (empty if none is: never, as this module wrote it).
fn key_at(out: &[u8], at: usize) -> &[u8] {
    let (n, at) = varint_at(out, at);
    match n {
        0 => {
            let (len, at) = varint_at(out, at);
            usize::try_from(len)
                .ok()
                .and_then(|len| out.get(at..at.saturating_add(len)))
                .unwrap_or_default()
        }
        n => usize::try_from(n - 1)
            .ok()
            .and_then(|i| KEYS.get(i))
            .map_or(&[], |key| key.as_bytes()),
    }
}

/// The varint at `at` and the offset after it.
fn varint_at(out: &[u8], mut at: usize) -> (u64, usize) {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&byte) = out.get(at) else { break };
        at += 1;
        n |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            break;
        }
    }
    (n, at)
}

pub(crate) fn push_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// An open list or object (one type for every kind of serde compound).
struct Compound<'w, 'x> {
    writer: &'w mut Writer<'x>,
    /// Where its count is (or goes, when not known when it was opened).
    count_at: usize,
    declared: Option<usize>,
    written: usize,
    /// Whether its elements are pieces (a list that is a field of the root object).
    split: bool,
    /// The levels of nesting it opened: 2 for an enum variant's one-key object around it.
    levels: usize,
    /// An object's: where its entries start in `writer.entries`.
    entries_from: Option<usize>,
}

impl Compound<'_, '_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), EncodeError> {
        if self.split {
            let at = self.writer.out.len();
            self.writer.marks.push(Mark { at, element: true });
        }
        self.written += 1;
        value.serialize(&mut *self.writer)
    }

    fn entry<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), EncodeError> {
        self.writer.entries.push(self.writer.out.len());
        push_key(self.writer.out, key);
        self.written += 1;
        value.serialize(&mut *self.writer)
    }

    /// Closes it: when the count written at its start is not the number of entries (or none was
    /// written), the right one replaces it, moving the marks after it.
    fn close(self) -> Result<(), EncodeError> {
        let writer = self.writer;
        writer.depth -= self.levels;
        if let Some(from) = self.entries_from {
            writer.sort_entries(from);
        }
        if self.split {
            let at = writer.out.len();
            writer.marks.push(Mark { at, element: false });
        }
        if self.declared != Some(self.written) {
            let mut count = Vec::with_capacity(10);
            push_varint(&mut count, self.written as u64);
            let old_len = match self.declared {
                Some(n) => {
                    let mut old = Vec::with_capacity(10);
                    push_varint(&mut old, n as u64);
                    old.len()
                }
                None => 0,
            };
            let at = self.count_at;
            writer.out.splice(at..at + old_len, count.iter().copied());
            for mark in writer.marks.iter_mut().filter(|m| m.at > at) {
                mark.at = mark.at + count.len() - old_len;
            }
        }
        Ok(())
    }
}

impl ser::Error for EncodeError {
    fn custom<M: std::fmt::Display>(message: M) -> Self {
        EncodeError(message.to_string())
    }
}

/// `serialize_*` methods writing a narrow number as the wide one it converts to.
macro_rules! widen {
    ($($method:ident: $ty:ty => $wide:ident),*) => {$(
        fn $method(self, v: $ty) -> Result<(), EncodeError> {
            self.$wide(v.into())
        }
    )*};
}

impl<'a, 'x> ser::Serializer for &'a mut Writer<'x> {
    type Ok = ();
    type Error = EncodeError;
    type SerializeSeq = Compound<'a, 'x>;
    type SerializeTuple = Compound<'a, 'x>;
    type SerializeTupleStruct = Compound<'a, 'x>;
    type SerializeTupleVariant = Compound<'a, 'x>;
    type SerializeMap = Compound<'a, 'x>;
    type SerializeStruct = Compound<'a, 'x>;
    type SerializeStructVariant = Compound<'a, 'x>;

    fn serialize_bool(self, v: bool) -> Result<(), EncodeError> {
        self.out.push(if v { tag::TRUE } else { tag::FALSE });
        Ok(())
    }
    widen!(
        serialize_i8: i8 => serialize_i64, serialize_i16: i16 => serialize_i64, serialize_i32: i32 => serialize_i64,
        serialize_u8: u8 => serialize_u64, serialize_u16: u16 => serialize_u64, serialize_u32: u32 => serialize_u64,
        serialize_f32: f32 => serialize_f64
    );
    fn serialize_i64(self, v: i64) -> Result<(), EncodeError> {
        self.int(v);
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<(), EncodeError> {
        let v = i64::try_from(v).map_err(|_| EncodeError(format!("{v} is beyond 64 bits")))?;
        self.serialize_i64(v)
    }
    fn serialize_u64(self, v: u64) -> Result<(), EncodeError> {
        self.uint(v);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<(), EncodeError> {
        let v = u64::try_from(v).map_err(|_| EncodeError(format!("{v} is beyond 64 bits")))?;
        self.serialize_u64(v)
    }
    fn serialize_f64(self, v: f64) -> Result<(), EncodeError> {
        // As serde_json: a number that is not finite is null.
        if v.is_finite() {
            self.out.push(tag::FLOAT);
            self.out.extend_from_slice(&v.to_le_bytes());
        } else {
            self.out.push(tag::NULL);
        }
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), EncodeError> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), EncodeError> {
        self.out.push(tag::STRING);
        self.text(v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), EncodeError> {
        // As serde_json: a list of numbers.
        let mut list = self.open(tag::LIST, Some(v.len()));
        for byte in v {
            list.element(byte)?;
        }
        list.close()
    }
    fn serialize_none(self) -> Result<(), EncodeError> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), EncodeError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), EncodeError> {
        self.out.push(tag::NULL);
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), EncodeError> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), EncodeError> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), EncodeError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), EncodeError> {
        self.variant_key(variant);
        self.depth += 1;
        let result = value.serialize(&mut *self);
        self.depth -= 1;
        result
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, EncodeError> {
        Ok(self.open(tag::LIST, len))
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, EncodeError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, EncodeError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, EncodeError> {
        self.variant_key(variant);
        // The one-key object around the list is a level of its own.
        self.depth += 1;
        Ok(Compound {
            levels: 2,
            ..self.open(tag::LIST, Some(len))
        })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, EncodeError> {
        Ok(self.open(tag::OBJECT, len))
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Self::SerializeStruct, EncodeError> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, EncodeError> {
        self.variant_key(variant);
        self.depth += 1;
        Ok(Compound {
            levels: 2,
            ..self.open(tag::OBJECT, Some(len))
        })
    }
}

/// serde's compound traits but the map's, each forwarding to one of [`Compound`]'s methods.
macro_rules! compound {
    ($($trait:ident :: $method:ident ($($key:ident: $key_ty:ty)?) => $call:ident;)*) => {$(
        impl ser::$trait for Compound<'_, '_> {
            type Ok = ();
            type Error = EncodeError;
            fn $method<T: Serialize + ?Sized>(&mut self, $($key: $key_ty,)? value: &T) -> Result<(), EncodeError> {
                self.$call($($key,)? value)
            }
            fn end(self) -> Result<(), EncodeError> {
                self.close()
            }
        }
    )*};
}

compound! {
    SerializeSeq::serialize_element() => element;
    SerializeTuple::serialize_element() => element;
    SerializeTupleStruct::serialize_field() => element;
    SerializeTupleVariant::serialize_field() => element;
    SerializeStruct::serialize_field(key: &'static str) => entry;
    SerializeStructVariant::serialize_field(key: &'static str) => entry;
}

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), EncodeError> {
        self.written += 1;
        self.writer.entries.push(self.writer.out.len());
        key.serialize(KeyWriter(&mut *self.writer.out))
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), EncodeError> {
        value.serialize(&mut *self.writer)
    }
    fn end(self) -> Result<(), EncodeError> {
        self.close()
    }
}

/// `serialize_*` methods writing a number key as its decimal text.
macro_rules! key_as_text {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method(self, v: $ty) -> Result<(), EncodeError> {
            self.text(&v.to_string())
        }
    )*};
}

/// Writes a map key: a string as it is, a number or a boolean as its text (as serde_json does);
/// anything else is an error.
struct KeyWriter<'o>(&'o mut Vec<u8>);

impl KeyWriter<'_> {
    fn text(self, text: &str) -> Result<(), EncodeError> {
        push_key(self.0, text);
        Ok(())
    }
}

fn not_a_key<T>() -> Result<T, EncodeError> {
    Err(EncodeError(
        "a map key that is not a string, a number or a boolean".to_owned(),
    ))
}

impl ser::Serializer for KeyWriter<'_> {
    type Ok = ();
    type Error = EncodeError;
    type SerializeSeq = ser::Impossible<(), EncodeError>;
    type SerializeTuple = ser::Impossible<(), EncodeError>;
    type SerializeTupleStruct = ser::Impossible<(), EncodeError>;
    type SerializeTupleVariant = ser::Impossible<(), EncodeError>;
    type SerializeMap = ser::Impossible<(), EncodeError>;
    type SerializeStruct = ser::Impossible<(), EncodeError>;
    type SerializeStructVariant = ser::Impossible<(), EncodeError>;

    fn serialize_bool(self, v: bool) -> Result<(), EncodeError> {
        self.text(if v { "true" } else { "false" })
    }
    key_as_text!(
        serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64, serialize_i128: i128,
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64, serialize_u128: u128
    );
    fn serialize_f32(self, _v: f32) -> Result<(), EncodeError> {
        not_a_key()
    }
    fn serialize_f64(self, _v: f64) -> Result<(), EncodeError> {
        not_a_key()
    }
    fn serialize_char(self, v: char) -> Result<(), EncodeError> {
        self.text(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), EncodeError> {
        self.text(v)
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result<(), EncodeError> {
        not_a_key()
    }
    fn serialize_none(self) -> Result<(), EncodeError> {
        not_a_key()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), EncodeError> {
        not_a_key()
    }
    fn serialize_unit(self) -> Result<(), EncodeError> {
        not_a_key()
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), EncodeError> {
        not_a_key()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), EncodeError> {
        self.text(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), EncodeError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), EncodeError> {
        not_a_key()
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, EncodeError> {
        not_a_key()
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, EncodeError> {
        not_a_key()
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, EncodeError> {
        not_a_key()
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, EncodeError> {
        not_a_key()
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, EncodeError> {
        not_a_key()
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct, EncodeError> {
        not_a_key()
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, EncodeError> {
        not_a_key()
    }
}
