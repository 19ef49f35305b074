//! The table document as the reader ([`crate::TableSpec::from_tree`]) walks it: a flat tree that
//! borrows its strings from the text or bytes it was read from: JSON text ([`crate::json`]), the
//! inflated bytes of the compact form ([`crate::compact`]), a protobuf `Struct` (the filter), or a
//! parsed `serde_json::Value` (tools). Every value sits in one `Vec` ([`Doc`]); a list's or an
//! object's children are a contiguous run of it ([`Span`]), so building a table's tree costs one
//! growing allocation, not one per object (the load time of BENCHMARKS.md, "Compact table", depends
//! on it). A JSON string with escapes cannot be borrowed as written: its unescaped text is kept in
//! the [`Doc`] ([`Text::Owned`]).
//!
//! A tree is built bottom-up with a [`Builder`]: a container's children are pushed as they are read,
//! then moved into the document as one run when the container closes, so a reader that does not know
//! a container's length up front (JSON, protobuf) still lays its children out contiguously.

use serde_json::{Map, Number, Value};

/// The deepest nesting of lists and objects a reader builds (a table needs 6): JSON
/// ([`crate::json`]) and the compact form ([`crate::compact`]) refuse deeper documents.
pub const MAX_DEPTH: usize = 32;

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
    /// A string (read it with [`Doc::text`]).
    Str(Text<'a>),
    /// A list: its items.
    List(Span),
    /// An object: its keys and values, in the order written.
    Object(Span),
}

/// A string of the document: borrowed from the source, or unescaped into the [`Doc`]'s own store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Text<'a> {
    /// The string as the source holds it.
    Borrowed(&'a str),
    /// The `n`th string the document owns (a JSON string that had escapes).
    Owned(usize),
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
    /// The field's name; empty in a list (read it with [`Doc::text`]).
    pub key: Text<'a>,
    /// Its value.
    pub node: Node<'a>,
}

impl<'a> Item<'a> {
    /// A list item.
    pub fn unnamed(node: Node<'a>) -> Item<'a> {
        Item {
            key: Text::Borrowed(""),
            node,
        }
    }
}

/// A whole document: its root, every list's and object's items, and the strings it owns.
#[derive(Debug, Clone, Default)]
pub struct Doc<'a> {
    items: Vec<Item<'a>>,
    owned: Vec<String>,
    root: Option<Node<'a>>,
}

impl<'a> Doc<'a> {
    /// An empty document, to be built with [`Doc::reserve`], [`Doc::set`] and [`Doc::set_root`]
    /// (a reader that knows each container's length), or with a [`Builder`].
    pub fn with_capacity(items: usize) -> Doc<'a> {
        Doc {
            items: Vec::with_capacity(items),
            owned: Vec::new(),
            root: None,
        }
    }

    /// Room for the `len` items of a list or object, filled later with [`Doc::set`].
    pub fn reserve(&mut self, len: usize) -> Span {
        let start = self.items.len();
        self.items.resize(start + len, Item::unnamed(Node::Null));
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

    /// A string of the document.
    pub fn text<'s>(&'s self, text: Text<'a>) -> &'s str
    where
        'a: 's,
    {
        match text {
            Text::Borrowed(s) => s,
            Text::Owned(n) => self.owned.get(n).map_or("", String::as_str),
        }
    }

    /// Keeps `s` (an unescaped string) in the document.
    pub fn own(&mut self, s: String) -> Text<'a> {
        self.owned.push(s);
        Text::Owned(self.owned.len() - 1)
    }

    /// The value of `node`'s field `key`, when `node` is an object that has exactly that one field.
    pub fn only_field(&self, node: Node<'a>, key: &str) -> Option<Node<'a>> {
        match node {
            Node::Object(span) => match self.items(span) {
                [item] if self.text(item.key) == key => Some(item.node),
                _ => None,
            },
            _ => None,
        }
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
            Value::String(s) => Node::Str(Text::Borrowed(s)),
            Value::Array(values) => {
                let span = self.reserve(values.len());
                for (i, v) in values.iter().enumerate() {
                    let node = self.add(v);
                    self.set(span, i, Item::unnamed(node));
                }
                Node::List(span)
            }
            Value::Object(map) => {
                let span = self.reserve(map.len());
                for (i, (key, v)) in map.iter().enumerate() {
                    let node = self.add(v);
                    self.set(
                        span,
                        i,
                        Item {
                            key: Text::Borrowed(key),
                            node,
                        },
                    );
                }
                Node::Object(span)
            }
        }
    }

    /// The document as a JSON value (tools and tests; the filter never needs it). A key written
    /// twice keeps its last value, as `serde_json` does.
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
            Node::Str(s) => Value::String(self.text(s).to_owned()),
            Node::List(span) => Value::Array(self.items(span).iter().map(|item| self.value_of(item.node)).collect()),
            Node::Object(span) => Value::Object(
                self.items(span)
                    .iter()
                    .map(|item| (self.text(item.key).to_owned(), self.value_of(item.node)))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }
}

/// Builds a [`Doc`] bottom-up: [`Builder::push`] each value once it is read (its key with it, in an
/// object), [`Builder::open`] before a container's children and [`Builder::close_list`] or
/// [`Builder::close_object`] after them.
#[derive(Debug, Default)]
pub struct Builder<'a> {
    doc: Doc<'a>,
    /// The items of the containers still open, innermost last.
    open: Vec<Item<'a>>,
}

/// Where an open container's children start in the [`Builder`]'s stack.
#[derive(Debug, Clone, Copy)]
pub struct Mark(usize);

impl<'a> Builder<'a> {
    /// A builder expecting about `items` values in all.
    pub fn with_capacity(items: usize) -> Builder<'a> {
        Builder {
            doc: Doc::with_capacity(items),
            open: Vec::with_capacity(64),
        }
    }

    /// Keeps an unescaped string in the document.
    pub fn own(&mut self, s: String) -> Text<'a> {
        self.doc.own(s)
    }

    /// A string of the document being built.
    pub fn text<'s>(&'s self, text: Text<'a>) -> &'s str
    where
        'a: 's,
    {
        self.doc.text(text)
    }

    /// Opens a container: its children are the items pushed from now until it is closed.
    pub fn open(&self) -> Mark {
        Mark(self.open.len())
    }

    /// Adds a value to the innermost open container (`key` is empty in a list).
    pub fn push(&mut self, key: Text<'a>, node: Node<'a>) {
        self.open.push(Item { key, node });
    }

    fn close(&mut self, mark: Mark) -> Span {
        let start = self.doc.items.len();
        let from = mark.0.min(self.open.len());
        self.doc.items.extend(self.open.drain(from..));
        Span {
            start,
            len: self.doc.items.len() - start,
        }
    }

    /// Closes the list opened at `mark`: its value.
    pub fn close_list(&mut self, mark: Mark) -> Node<'a> {
        Node::List(self.close(mark))
    }

    /// Closes the object opened at `mark`: its value.
    pub fn close_object(&mut self, mark: Mark) -> Node<'a> {
        Node::Object(self.close(mark))
    }

    /// The document whose root is `root`.
    pub fn finish(mut self, root: Node<'a>) -> Doc<'a> {
        self.doc.set_root(root);
        self.doc
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
