//! JSON text read straight into a [`Doc`]: `serde_json`'s parser drives a [`DeserializeSeed`] that
//! pushes every value into a [`Builder`], so no `serde_json::Value` (a `BTreeMap` and a `String` per
//! object and string) is built, copied and freed on the way to the table (BENCHMARKS.md, "Compact
//! table": that was two thirds of the JSON form's load time in the filter).
//!
//! Strings without escapes are borrowed from the text; a string with escapes is unescaped into the
//! document ([`crate::doc::Text::Owned`]). Nesting deeper than [`MAX_DEPTH`] is refused here, as in
//! the compact form; a key written twice in one object is refused by the reader (`crate::read`).

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::doc::{Builder, Doc, Node, Text, MAX_DEPTH};

/// The most items [`parse`] reserves before it has read any.
const PRESIZED_ITEMS: usize = 1 << 12;

/// Parses JSON text (UTF-8 bytes) into a tree borrowing its strings. Never inlined, for the reason
/// [`crate::RouteTable::from_tree`] gives.
#[inline(never)]
pub fn parse(text: &[u8]) -> Result<Doc<'_>, serde_json::Error> {
    // A table's JSON has about one value per 12 bytes; a wrapper of long strings (the sharded form:
    // a megabyte of base64 in some 800 values) far fewer, so past `PRESIZED_ITEMS` the list grows
    // as it fills rather than being reserved from the text's length (4 MB of items at 100,000 rules
    // of the sharded form, in a VM whose memory never shrinks).
    let mut builder = Builder::with_capacity((text.len() / 12).min(PRESIZED_ITEMS));
    let mut parser = serde_json::Deserializer::from_slice(text);
    let root = Value {
        builder: &mut builder,
        depth: 0,
    }
    .deserialize(&mut parser)?;
    parser.end()?;
    Ok(builder.finish(root))
}

/// One value, pushed into `builder` (its children first), `depth` lists and objects down.
struct Value<'b, 'de> {
    builder: &'b mut Builder<'de>,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Value<'_, 'de> {
    type Value = Node<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, parser: D) -> Result<Node<'de>, D::Error> {
        parser.deserialize_any(self)
    }
}

impl<'de> Value<'_, 'de> {
    fn child(&mut self) -> Result<Value<'_, 'de>, &'static str> {
        if self.depth >= MAX_DEPTH {
            return Err("lists and objects nested too deep");
        }
        Ok(Value {
            builder: self.builder,
            depth: self.depth + 1,
        })
    }
}

impl<'de> Visitor<'de> for Value<'_, 'de> {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Node<'de>, E> {
        Ok(Node::Bool(b))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Node<'de>, E> {
        Ok(Node::UInt(n))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Node<'de>, E> {
        Ok(if n < 0 { Node::Int(n) } else { Node::UInt(n as u64) })
    }

    fn visit_f64<E>(self, n: f64) -> Result<Node<'de>, E> {
        Ok(Node::Float(n))
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Node<'de>, E> {
        Ok(Node::Str(Text::Borrowed(s)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Node<'de>, E> {
        Ok(Node::Str(self.builder.own(s.to_owned())))
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut list: A) -> Result<Node<'de>, A::Error> {
        let mark = self.builder.open();
        loop {
            let item = self.child().map_err(de::Error::custom)?;
            let Some(node) = list.next_element_seed(item)? else {
                break;
            };
            self.builder.push(Text::Borrowed(""), node);
        }
        Ok(self.builder.close_list(mark))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut object: A) -> Result<Node<'de>, A::Error> {
        let mark = self.builder.open();
        let child = self.child().map_err(de::Error::custom)?;
        while let Some(key) = object.next_key_seed(Key {
            builder: &mut *child.builder,
        })? {
            let node = object.next_value_seed(Value {
                builder: &mut *child.builder,
                depth: child.depth,
            })?;
            child.builder.push(key, node);
        }
        Ok(self.builder.close_object(mark))
    }
}

/// An object's key.
struct Key<'b, 'de> {
    builder: &'b mut Builder<'de>,
}

impl<'de> DeserializeSeed<'de> for Key<'_, 'de> {
    type Value = Text<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, parser: D) -> Result<Text<'de>, D::Error> {
        parser.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_, 'de> {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Text<'de>, E> {
        Ok(Text::Borrowed(s))
    }

    fn visit_str<E>(self, s: &str) -> Result<Text<'de>, E> {
        Ok(self.builder.own(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_of_value_reads_as_serde_json_reads_it() {
        let text = r#"{"a": null, "b": [true, false, 0, 1, 18446744073709551615, -1, -9223372036854775808, 1.5, -0.25, 1e300],
            "c": {"a": "", "d": "\u00e9 \u2603 \u0000 \"q\" \\ \/ \n", "b": [{"a": 1}, {"a": 2, "e": []}]},
            "k\u0065y": "plain"}"#;
        let expected: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(parse(text.as_bytes()).unwrap().to_value(), expected);
        assert_eq!(expected["key"], json!("plain"));
    }

    #[test]
    fn strings_without_escapes_are_borrowed_and_escaped_ones_owned() {
        let doc = parse(br#"["plain", "t\tab"]"#).unwrap();
        let Node::List(span) = doc.root() else { panic!() };
        let nodes: Vec<Node> = doc.items(span).iter().map(|item| item.node).collect();
        assert_eq!(nodes[0], Node::Str(Text::Borrowed("plain")));
        let Node::Str(owned @ Text::Owned(_)) = nodes[1] else {
            panic!("{:?}", nodes[1])
        };
        assert_eq!(doc.text(owned), "t\tab");
    }

    #[test]
    fn malformed_text_is_an_error_not_a_panic() {
        let cases: &[&[u8]] = &[
            b"",
            b"{",
            b"[1,",
            b"{\"a\" 1}",
            b"{\"a\": 1,}",
            b"\"\\u12\"",
            b"\"\\ud800\"",
            b"1e999",
            b"01",
            b"{} {}",
            b"nul",
            b"\"\xff\"",
            b"[1] x",
        ];
        for case in cases {
            assert!(parse(case).is_err(), "{:?}", String::from_utf8_lossy(case));
        }
    }

    #[test]
    fn nesting_deeper_than_the_bound_is_refused() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse(deep(MAX_DEPTH).as_bytes()).is_ok());
        let error = parse(deep(MAX_DEPTH + 1).as_bytes()).unwrap_err();
        assert!(error.to_string().contains("nested too deep"), "{error}");
        let objects = format!("{}1{}", r#"{"a":"#.repeat(MAX_DEPTH + 1), "}".repeat(MAX_DEPTH + 1));
        assert!(parse(objects.as_bytes()).is_err());
        // Far past serde_json's own limit: still an error, not a stack overflow.
        assert!(parse(deep(100_000).as_bytes()).is_err());
    }
}
