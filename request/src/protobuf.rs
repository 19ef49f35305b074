//! A `google.protobuf.Struct` in protobuf binary, read into the table's document tree.
//!
//! Envoy hands a plugin its configuration as the `Any`'s payload: the text for a `StringValue`, but
//! the serialized message for anything else, so a table written as a `Struct` in Envoy's YAML
//! arrives as protobuf bytes. (Istio turns `WasmPlugin.pluginConfig` into JSON in a `StringValue`
//! before Envoy sees it.) Only the wire format of `Struct`, `Value` and `ListValue` is read, into a
//! [`Doc`] borrowing the bytes' strings (what JSON text gives too); numbers are doubles there, and
//! whole ones become whole numbers so `version`, `weight` and `status` read as the table expects.

use switchyard_table::doc::{Builder, Doc, Node, Text, MAX_DEPTH};

/// Reads `bytes` as a serialized `google.protobuf.Struct`; `None` when they are not one.
pub fn struct_to_doc(bytes: &[u8]) -> Option<Doc<'_>> {
    let mut builder = Builder::with_capacity(bytes.len() / 16);
    let root = read_struct(&mut builder, bytes, 0)?;
    Some(builder.finish(root))
}

struct Reader<'b> {
    bytes: &'b [u8],
}

enum Field<'b> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'b [u8]),
}

impl<'b> Reader<'b> {
    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.bytes.split_first()?;
            self.bytes = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(value);
            }
        }
        None
    }

    /// The next field number and value, or `None` at the end (or on malformed input, which
    /// `done` tells apart).
    fn field(&mut self) -> Option<(u64, Field<'b>)> {
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Field::Varint(self.varint()?),
            1 => {
                let (head, rest) = self.bytes.split_at_checked(8)?;
                self.bytes = rest;
                Field::Fixed64(u64::from_le_bytes(head.try_into().ok()?))
            }
            2 => {
                let len = usize::try_from(self.varint()?).ok()?;
                let (head, rest) = self.bytes.split_at_checked(len)?;
                self.bytes = rest;
                Field::Bytes(head)
            }
            _ => return None,
        };
        Some((key >> 3, value))
    }

    /// Every field, or `None` if the bytes do not parse to the end.
    fn fields(bytes: &'b [u8]) -> Option<Vec<(u64, Field<'b>)>> {
        let mut reader = Reader { bytes };
        let mut fields = Vec::new();
        while !reader.bytes.is_empty() {
            fields.push(reader.field()?);
        }
        Some(fields)
    }
}

fn text(bytes: &[u8]) -> Option<Text<'_>> {
    std::str::from_utf8(bytes).ok().map(Text::Borrowed)
}

fn read_struct<'b>(builder: &mut Builder<'b>, bytes: &'b [u8], depth: usize) -> Option<Node<'b>> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mark = builder.open();
    for (number, field) in Reader::fields(bytes)? {
        let (1, Field::Bytes(entry)) = (number, field) else {
            return None;
        };
        let mut key = None;
        let mut value = Node::Null;
        for (number, field) in Reader::fields(entry)? {
            match (number, field) {
                (1, Field::Bytes(k)) => key = Some(text(k)?),
                (2, Field::Bytes(v)) => value = read_value(builder, v, depth + 1)?,
                _ => return None,
            }
        }
        builder.push(key?, value);
    }
    Some(builder.close_object(mark))
}

fn read_value<'b>(builder: &mut Builder<'b>, bytes: &'b [u8], depth: usize) -> Option<Node<'b>> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut value = Node::Null;
    for (number, field) in Reader::fields(bytes)? {
        value = match (number, field) {
            (1, Field::Varint(_)) => Node::Null,
            (2, Field::Fixed64(bits)) => number_value(f64::from_bits(bits))?,
            (3, Field::Bytes(s)) => Node::Str(text(s)?),
            (4, Field::Varint(b)) => Node::Bool(b != 0),
            (5, Field::Bytes(s)) => read_struct(builder, s, depth + 1)?,
            (6, Field::Bytes(list)) => {
                let mark = builder.open();
                for (number, field) in Reader::fields(list)? {
                    let (1, Field::Bytes(item)) = (number, field) else {
                        return None;
                    };
                    let node = read_value(builder, item, depth + 1)?;
                    builder.push(Text::Borrowed(""), node);
                }
                builder.close_list(mark)
            }
            _ => return None,
        };
    }
    Some(value)
}

fn number_value(x: f64) -> Option<Node<'static>> {
    // Whole numbers within ±2^53 are exact whole numbers (`1.0` → `1`), as JSON would write them.
    if !x.is_finite() {
        return None;
    }
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        return Some(if x >= 0.0 {
            Node::UInt(x as u64)
        } else {
            Node::Int(x as i64)
        });
    }
    Some(Node::Float(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_field(number: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![(number << 3) | 2];
        let mut len = payload.len();
        loop {
            let byte = (len & 0x7f) as u8;
            len >>= 7;
            if len == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
        out.extend_from_slice(payload);
        out
    }

    fn entry(key: &str, value: Vec<u8>) -> Vec<u8> {
        let mut e = bytes_field(1, key.as_bytes());
        e.extend(bytes_field(2, &value));
        bytes_field(1, &e)
    }

    fn number(x: f64) -> Vec<u8> {
        let mut v = vec![(2 << 3) | 1];
        v.extend_from_slice(&x.to_bits().to_le_bytes());
        v
    }

    #[test]
    fn a_struct_reads_as_json_with_whole_numbers_as_integers() {
        let list = bytes_field(
            6,
            &[bytes_field(1, &bytes_field(3, b"a")), bytes_field(1, &[4 << 3, 1])].concat(),
        );
        let inner = bytes_field(5, &entry("weight", number(2.5)));
        let message = [
            entry("version", number(1.0)),
            entry("tags", list),
            entry("nested", inner),
            entry("none", vec![1 << 3, 0]),
        ]
        .concat();
        let json = struct_to_doc(&message).unwrap().to_value();
        assert_eq!(
            json,
            serde_json::json!({"version": 1, "tags": ["a", true], "nested": {"weight": 2.5}, "none": null})
        );
    }

    #[test]
    fn json_text_is_not_a_struct() {
        assert!(struct_to_doc(b"{\"version\": 1}").is_none());
        assert!(struct_to_doc(b"\n{\"version\": 1}").is_none());
        assert!(struct_to_doc(&[0x0a, 0x05, 0x0a]).is_none());
    }
}
