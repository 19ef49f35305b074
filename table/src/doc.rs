//! The table document as the reader ([`crate::TableSpec::from_doc`]) walks it: a flat tree that
//! borrows its strings, from the inflated bytes of the compact form ([`crate::compact`]) or from a
//! parsed JSON `serde_json::Value`. Every value sits in one `Vec` ([`Doc`]); a list's or an object's
//! children are a contiguous run of it ([`Span`]), so building a table's tree costs one growing
//! allocation, not one per object (the load time of BENCHMARKS.md, "Compact table", depends on it).

use serde_json::{Map, Number, Value};

/// One value of the document; lists and objects name the run of [`Doc`] holding their children.
#[derive(Debug, Clone, Copy, PartialEq)]
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
    /// A list: its items.
    List(Span),
    /// An object: its keys and values, in the order written.
    Object(Span),
}

/// A run of a [`Doc`]'s items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    start: usize,
    len: usize,
}

/// A list item (its key is empty) or an object's field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Item<'a> {
    /// The field's name; empty in a list.
    pub key: &'a str,
    /// Its value.
    pub node: Node<'a>,
}

/// A whole document: its root and every list's and object's items.
#[derive(Debug, Clone, Default)]
pub struct Doc<'a> {
    items: Vec<Item<'a>>,
    root: Option<Node<'a>>,
}

impl<'a> Doc<'a> {
    /// An empty document, to be built with [`Doc::reserve`], [`Doc::set`] and [`Doc::set_root`].
    pub fn with_capacity(items: usize) -> Doc<'a> {
        Doc {
            items: Vec::with_capacity(items),
            root: None,
        }
    }

    /// Room for the `len` items of a list or object, filled later with [`Doc::set`].
    pub fn reserve(&mut self, len: usize) -> Span {
        let start = self.items.len();
        self.items.resize(
            start + len,
            Item {
                key: "",
                node: Node::Null,
            },
        );
        Span { start, len }
    }

    /// Fills item `i` of `span`.
    pub fn set(&mut self, span: Span, i: usize, item: Item<'a>) {
        if let Some(slot) = self.items.get_mut(span.start + i).filter(|_| i < span.len) {
            *slot = item;
        }
    }

    /// Sets the document's root value.
    pub fn set_root(&mut self, root: Node<'a>) {
        self.root = Some(root);
    }

    /// The root value (`null` for an empty document).
    pub fn root(&self) -> Node<'a> {
        self.root.unwrap_or(Node::Null)
    }

    /// The items of a list or object.
    pub fn items(&self, span: Span) -> &[Item<'a>] {
        self.items.get(span.start..span.start + span.len).unwrap_or_default()
    }

    /// The document of a parsed JSON value, borrowing its strings.
    pub fn from_value(value: &'a Value) -> Doc<'a> {
        let mut doc = Doc::with_capacity(64);
        let root = doc.add(value);
        doc.set_root(root);
        doc
    }

    fn add(&mut self, value: &'a Value) -> Node<'a> {
        match value {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => Node::UInt(u),
                (None, Some(i)) => Node::Int(i),
                (None, None) => Node::Float(n.as_f64().unwrap_or(0.0)),
            },
            Value::String(s) => Node::Str(s),
            Value::Array(values) => {
                let span = self.reserve(values.len());
                for (i, v) in values.iter().enumerate() {
                    let node = self.add(v);
                    self.set(span, i, Item { key: "", node });
                }
                Node::List(span)
            }
            Value::Object(map) => {
                let span = self.reserve(map.len());
                for (i, (key, v)) in map.iter().enumerate() {
                    let node = self.add(v);
                    self.set(span, i, Item { key, node });
                }
                Node::Object(span)
            }
        }
    }

    /// The document as a JSON value (tools and tests; the filter never needs it).
    pub fn to_value(&self) -> Value {
        self.value_of(self.root())
    }

    fn value_of(&self, node: Node<'a>) -> Value {
        match node {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(b),
            Node::UInt(u) => Value::Number(u.into()),
            Node::Int(i) => Value::Number(i.into()),
            Node::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
            Node::Str(s) => Value::String(s.to_owned()),
            Node::List(span) => Value::Array(self.items(span).iter().map(|item| self.value_of(item.node)).collect()),
            Node::Object(span) => Value::Object(
                self.items(span)
                    .iter()
                    .map(|item| (item.key.to_owned(), self.value_of(item.node)))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }
}

impl Node<'_> {
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
