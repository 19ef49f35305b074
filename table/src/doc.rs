//! The table document as the reader ([`crate::TableSpec::from_node`]) walks it: a plain tree that
//! borrows its strings, from the inflated bytes of the compact form ([`crate::compact`]) or from a
//! parsed JSON `serde_json::Value`, so that reading a table allocates only what the table keeps.
//! Objects are small lists of pairs (a table's have at most six keys), searched in order.

use serde_json::{Map, Number, Value};

/// One value of the document.
#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A whole number from 0 up.
    UInt(u64),
    /// A negative whole number.
    Int(i64),
    /// Any other number.
    Float(f64),
    /// A string.
    Str(&'a str),
    /// A list.
    List(Vec<Node<'a>>),
    /// An object: its keys and values, in the order written.
    Object(Vec<(&'a str, Node<'a>)>),
}

impl<'a> Node<'a> {
    /// The tree of a parsed JSON value, borrowing its strings.
    pub fn from_value(value: &'a Value) -> Node<'a> {
        match value {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => Node::UInt(u),
                (None, Some(i)) => Node::Int(i),
                (None, None) => Node::Float(n.as_f64().unwrap_or(0.0)),
            },
            Value::String(s) => Node::Str(s),
            Value::Array(items) => Node::List(items.iter().map(Node::from_value).collect()),
            Value::Object(map) => Node::Object(map.iter().map(|(k, v)| (k.as_str(), Node::from_value(v))).collect()),
        }
    }

    /// The tree as a JSON value (tools and tests; the filter never needs it).
    pub fn to_value(&self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::UInt(u) => Value::Number((*u).into()),
            Node::Int(i) => Value::Number((*i).into()),
            Node::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Node::Str(s) => Value::String((*s).to_owned()),
            Node::List(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Object(pairs) => Value::Object(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.to_value()))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }

    /// The name of the value's JSON type, for errors.
    pub fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::UInt(_) | Node::Int(_) | Node::Float(_) => "a number",
            Node::Str(_) => "a string",
            Node::List(_) => "a list",
            Node::Object(_) => "an object",
        }
    }
}
