//! The sharded compact form: the table as a small head and a list of independently compressed
//! *shards*, each a contiguous run of rules in table order, so that a proxy that already holds most
//! of a table decodes only the shards it has not seen (`table/README.md`, "The sharded form"):
//!
//! ```json
//! {"table_shards": {"form": 1,
//!   "head": {"version": 1, "generation": "…", "cluster_header": "…", "no_route": "404", "rules": []},
//!   "shards": ["<base64 of zlib of a binary document>", …]}}
//! ```
//!
//! - `form`: [`FORM`], the version of this wrapper (a reader refuses any other).
//! - `head`: the table document without its rules (read and validated as a table of no rules).
//! - `shards`: in table order; each the base64 (standard, padded) of an ordinary zlib stream of a
//!   binary document ([`crate::compact`]'s syntax) `{"version": 1, "rules": [...]}`: the shard's
//!   rules, the first of them at position *base* in the table, base being the number of rules in
//!   the shards before it. Each is deflated alone (no priming from another), so it is read alone.
//!
//! Shards carry no list of their hosts: a reader validates every shard it has not seen anyway, and
//! takes the hosts from the validated rules (a list written beside the rules could disagree with
//! them; this way nothing needs trusting).
//!
//! - [`encode`]: [`ShardEncoder`], which cuts the rules into shards by content and keeps the last
//!   table's shards, so a table changed in one rule deflates one shard.
//! - [`store`]: [`ShardStore`], a proxy's shards by content, kept from table to table: a new table
//!   decodes and validates only its new shards.
//! - [`catalogue`]: what the stores of one process share, so that a shard one of them validated
//!   is not decoded by the others.
//! - [`routes`]: [`ShardedTable`], a table made of stored shards: host → shards, and routing that
//!   decodes a shard's rules on the first request that needs them ([`decoded`] bounds how many stay
//!   decoded).
//!
//! - [`edits`]: the oracle over random pushes (tests and fuzzing).
//!
//! [`read`] takes the form apart; [`RouteTable::from_shards`](crate::RouteTable) decodes it whole (the
//! oracle, and what a reader that keeps one table per process uses).

pub mod catalogue;
mod decoded;
mod directory;
pub mod edits;
mod encode;
mod routes;
mod store;

pub use catalogue::{InMemory, SharedBytes};
pub use decoded::DECODED_RULES;
pub use encode::{ShardEncoder, ShardStats, MAX_SHARD_BYTES, SHARD_RULES};
pub use routes::{ShardedTable, Winner};
pub use store::{LoadStats, ShardStore};

use crate::compact::{self, Inflater};
use crate::doc::{Doc, Node};
use crate::error::TableError;
use crate::format::TableSpec;
use crate::RouteTable;

/// The key of the one-key object that carries the sharded form.
pub const WRAPPER_KEY: &str = "table_shards";

/// The version of the sharded wrapper this crate writes and reads.
pub const FORM: u64 = 1;

/// The sharded form taken apart: the head (a table of no rules) and each shard's text.
#[derive(Debug)]
pub struct Parts<'s> {
    /// The table's settings; its `rules` are empty.
    pub head: TableSpec,
    /// Each shard's base64 text, in table order.
    pub shards: Vec<&'s str>,
}

/// `node`'s sharded form taken apart, or `None` when `node` is not the sharded form (an object
/// whose one key is [`WRAPPER_KEY`]).
pub fn read<'s, 'd: 's>(doc: &'s Doc<'d>, node: Node<'d>) -> Option<Result<Parts<'s>, TableError>> {
    let inner = doc.only_field(node, WRAPPER_KEY)?;
    Some(read_inner(doc, inner))
}

fn shape(at: &str, problem: impl Into<String>) -> TableError {
    TableError::Shape {
        at: format!("{WRAPPER_KEY}.{at}"),
        problem: problem.into(),
    }
}

fn read_inner<'s, 'd: 's>(doc: &'s Doc<'d>, node: Node<'d>) -> Result<Parts<'s>, TableError> {
    let Node::Object(span) = node else {
        return Err(TableError::Shape {
            at: WRAPPER_KEY.into(),
            problem: "expected an object with `form`, `head` and `shards`".into(),
        });
    };
    let (mut form, mut head, mut shards) = (None, None, None);
    for item in doc.items(span) {
        let key = doc.text(item.key);
        let slot = match key {
            "form" => &mut form,
            "head" => &mut head,
            "shards" => &mut shards,
            other => return Err(shape(other, "unknown field")),
        };
        if slot.replace(item.node).is_some() {
            return Err(shape(key, "written twice"));
        }
    }
    match form {
        Some(Node::UInt(FORM)) => {}
        Some(_) => return Err(shape("form", format!("unsupported form; this build reads form {FORM}"))),
        None => return Err(shape("form", "missing")),
    }
    let head = TableSpec::from_node(doc, head.ok_or_else(|| shape("head", "missing"))?)?;
    if !head.rules.is_empty() {
        return Err(shape("head.rules", "the head holds no rules; they are in `shards`"));
    }
    let Some(Node::List(list)) = shards else {
        return Err(shape("shards", "expected a list of strings"));
    };
    let shards = doc
        .items(list)
        .iter()
        .enumerate()
        .map(|(i, item)| match item.node {
            Node::Str(text) => Ok(doc.text(text)),
            _ => Err(shape(&format!("shards[{i}]"), "expected a string")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Parts { head, shards })
}

/// The table document of one shard's text (its rules; its head is the defaults).
pub fn shard_spec(text: &str, inflater: &dyn Inflater) -> Result<TableSpec, TableError> {
    let binary = compact::inflate_with(text, inflater)?;
    let spec = TableSpec::from_tree(&compact::from_binary(&binary)?)?;
    if spec.version != crate::format::VERSION {
        return Err(TableError::UnsupportedVersion { found: spec.version });
    }
    Ok(spec)
}

/// Shard `index`'s rules, validated and indexed as a table of their own.
pub fn decode_shard(index: usize, text: &str, inflater: &dyn Inflater) -> Result<RouteTable, TableError> {
    let in_shard = |error| TableError::Shard {
        index,
        error: Box::new(error),
    };
    RouteTable::try_from(shard_spec(text, inflater).map_err(in_shard)?).map_err(in_shard)
}

/// The whole table of the sharded form: every shard decoded, the rules put together under the
/// head and validated as one table (duplicate names across shards included).
pub fn assemble(parts: Parts<'_>, inflater: &dyn Inflater) -> Result<TableSpec, TableError> {
    let mut table = parts.head;
    for (index, text) in parts.shards.iter().enumerate() {
        let spec = shard_spec(text, inflater).map_err(|error| TableError::Shard {
            index,
            error: Box::new(error),
        })?;
        table.rules.extend(spec.rules);
    }
    Ok(table)
}

#[cfg(test)]
mod tests;
