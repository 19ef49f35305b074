//! A `google.protobuf.Struct` in protobuf binary, read into JSON.
//!
//! Envoy hands a plugin its configuration as the `Any`'s payload: the text for a `StringValue`, but
//! the serialized message for anything else, so a table written as a `Struct` in Envoy's YAML
//! arrives as protobuf bytes. (Istio turns `WasmPlugin.pluginConfig` into JSON in a `StringValue`
//! before Envoy sees it.) Only the wire format of `Struct`, `Value` and `ListValue` is read;
//! numbers are doubles there, and whole ones become JSON integers so `version`, `weight` and
//! `status` read as the table expects.

use serde_json::{Map, Number, Value};

/// Nesting deeper than this is refused (a table is about 6 levels deep).
const MAX_DEPTH: usize = 64;

/// Reads `bytes` as a serialized `google.protobuf.Struct`; `None` when they are not one.
pub fn struct_to_json(bytes: &[u8]) -> Option<Value> {
    read_struct(bytes, 0)
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

fn read_struct(bytes: &[u8], depth: usize) -> Option<Value> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut object = Map::new();
    for (number, field) in Reader::fields(bytes)? {
        let (1, Field::Bytes(entry)) = (number, field) else {
            return None;
        };
        let mut key = None;
        let mut value = Value::Null;
        for (number, field) in Reader::fields(entry)? {
            match (number, field) {
                (1, Field::Bytes(k)) => key = Some(std::str::from_utf8(k).ok()?.to_owned()),
                (2, Field::Bytes(v)) => value = read_value(v, depth + 1)?,
                _ => return None,
            }
        }
        object.insert(key?, value);
    }
    Some(Value::Object(object))
}

fn read_value(bytes: &[u8], depth: usize) -> Option<Value> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut value = Value::Null;
    for (number, field) in Reader::fields(bytes)? {
        value = match (number, field) {
            (1, Field::Varint(_)) => Value::Null,
            (2, Field::Fixed64(bits)) => number_value(f64::from_bits(bits))?,
            (3, Field::Bytes(s)) => Value::String(std::str::from_utf8(s).ok()?.to_owned()),
            (4, Field::Varint(b)) => Value::Bool(b != 0),
            (5, Field::Bytes(s)) => read_struct(s, depth + 1)?,
            (6, Field::Bytes(list)) => {
                let mut items = Vec::new();
                for (number, field) in Reader::fields(list)? {
                    let (1, Field::Bytes(item)) = (number, field) else {
                        return None;
                    };
                    items.push(read_value(item, depth + 1)?);
                }
                Value::Array(items)
            }
            _ => return None,
        };
    }
    Some(value)
}

fn number_value(x: f64) -> Option<Value> {
    // Whole numbers within i64 range are exact integers in JSON (`1.0` → `1`).
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        return Some(Value::Number(Number::from(x as i64)));
    }
    Number::from_f64(x).map(Value::Number)
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
        let json = struct_to_json(&message).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"version": 1, "tags": ["a", true], "nested": {"weight": 2.5}, "none": null})
        );
    }

    #[test]
    fn json_text_is_not_a_struct() {
        assert_eq!(struct_to_json(b"{\"version\": 1}"), None);
        assert_eq!(struct_to_json(b"\n{\"version\": 1}"), None);
        assert_eq!(struct_to_json(&[0x0a, 0x05, 0x0a]), None);
    }
}
