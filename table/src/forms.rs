//! The forms of a table document read into a [`RouteTable`]: the table object itself, its compact
//! form (`{"table_z": "…"}`, [`crate::compact`]) and its sharded form (`{"table_shards": …}`,
//! [`crate::shards`]). The one place that knows every form, on a floor above both the matcher
//! ([`crate::table`]) and the shard store, which builds its tables with the matcher's
//! `TryFrom<TableSpec>`.

use crate::compact;
use crate::doc::{Doc, Node};
use crate::error::TableError;
use crate::format::TableSpec;
use crate::table::RouteTable;

impl RouteTable {
    /// Parses and validates a table from its JSON text: the table document itself, or its compact
    /// form (`{"table_z": "…"}`, [`crate::compact`]). The text is read straight into a tree
    /// ([`crate::json`]), with no `serde_json::Value` on the way.
    pub fn from_json(json: &[u8]) -> Result<RouteTable, TableError> {
        let doc = crate::json::parse(json)?;
        RouteTable::from_tree(&doc, doc.root())
    }

    /// Validates a table document already parsed: the table object, or the compact form's one-key
    /// object, which is decoded first.
    pub fn from_document(document: serde_json::Value) -> Result<RouteTable, TableError> {
        let doc = Doc::from_value(&document);
        RouteTable::from_tree(&doc, doc.root())
    }

    /// Validates the table document that is `node` of `doc`: the table object, or the compact form's
    /// or the sharded form's one-key object, which is decoded first (inflated by [`compact::Miniz`];
    /// every shard of the sharded form, into one table).
    pub fn from_tree<'d>(doc: &Doc<'d>, node: Node<'d>) -> Result<RouteTable, TableError> {
        RouteTable::from_tree_with(doc, node, &compact::Miniz)
    }

    /// [`RouteTable::from_tree`] with the compact form's zlib stream inflated by `inflater` (the
    /// filter's is its host's `uncompress`).
    ///
    /// Never inlined: the filter's size profile (Cargo.toml, `[profile.filter]`) builds the filter
    /// crate for speed and this crate for size, and the loader must keep this crate's size settings
    /// rather than be inlined into the filter's code.
    #[inline(never)]
    pub fn from_tree_with<'d>(
        doc: &Doc<'d>,
        node: Node<'d>,
        inflater: &dyn compact::Inflater,
    ) -> Result<RouteTable, TableError> {
        if let Some(parts) = crate::shards::read(doc, node) {
            return RouteTable::try_from(crate::shards::assemble(parts?, inflater)?);
        }
        let spec = match doc.only_field(node, compact::WRAPPER_KEY) {
            Some(Node::Str(text)) => TableSpec::from_tree(&compact::from_binary(&compact::inflate_with(
                doc.text(text),
                inflater,
            )?)?)?,
            _ => TableSpec::from_node(doc, node)?,
        };
        RouteTable::try_from(spec)
    }
}
