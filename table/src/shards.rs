//! The sharded compact form: the table as a small head and a list of independently compressed
//! *shards*, each a contiguous run of rules in table order, so that a proxy that already holds most
//! of a table decodes only the shards it has not seen, and reads only those (`table/README.md`, "The
//! sharded form"):
//!
//! ```json
//! {"table_shards":{"form":2,"front":"0000000187",
//!   "head":{"version":1,"generation":"…","cluster_header":"…","no_route":"404","rules":[]},
//!   "index":[["<32 hex digits>",1320],…],
//!   "shards":["<base64 of zlib of a binary document>",…]}}
//! ```
//!
//! - `form`: [`FORM`], the version of this wrapper. A reader reads [`FORMS_READ`] and refuses any
//!   other; form 1 is form 2 without `front` and `index`.
//! - `head`: the table document without its rules (read and validated as a table of no rules).
//! - `shards`: in table order; each the base64 (standard, padded) of an ordinary zlib stream of a
//!   binary document ([`crate::compact`]'s syntax) `{"version": 1, "rules": [...]}`: the shard's
//!   rules, the first of them at position *base* in the table, base being the number of rules in
//!   the shards before it. Each is deflated alone (no priming from another), so it is read alone.
//! - `index`: per shard, its text's [`Fingerprint`](fingerprint::Fingerprint) (the two words in
//!   hexadecimal, 16 digits each) and its length in bytes. A store knows the shards it holds by
//!   fingerprint, so a reader needs no shard's text but those it lacks, and checks each text it
//!   reads against its fingerprint.
//! - `front`: the length in bytes, ten decimal digits, of the document up to the end of `index`:
//!   with it and the lengths, a reader of the writer's exact bytes finds every text without reading
//!   the rest ([`layout`]).
//!
//! Shards carry no list of their hosts: a reader validates every shard it has not seen anyway, and
//! takes the hosts from the validated rules (a list written beside the rules could disagree with
//! them; this way nothing needs trusting).
//!
//! - [`encode`]: [`ShardEncoder`], which cuts the rules into shards by content and keeps the last
//!   table's shards, so a table changed in one rule deflates one shard.
//! - [`layout`]: the document byte for byte, and the reader by ranges ([`read_ranged`]).
//! - [`texts`]: where each shard's text is, and reading the texts a store lacks.
//! - [`store`]: [`ShardStore`], a proxy's shards by fingerprint, kept from table to table: a new
//!   table decodes and validates only its new shards.
//! - [`catalogue`]: what the stores of one process share, so that a shard one of them validated
//!   is not decoded by the others.
//! - [`routes`]: [`ShardedTable`], a table made of stored shards: host → shards, and routing that
//!   decodes a shard's rules on the first request that needs them ([`decoded`] bounds how many stay
//!   decoded).
//!
//! - [`edits`]: the oracle over random pushes (tests and fuzzing).
//!
//! [`read`] takes a parsed document apart; [`RouteTable::from_shards`](crate::RouteTable) decodes
//! it whole (the oracle, and what a reader that keeps one table per process uses).

pub mod catalogue;
mod decoded;
mod directory;
pub mod edits;
mod encode;
pub mod fingerprint;
mod hashes;
mod layout;
mod routes;
mod shard;
mod store;
mod texts;

pub use catalogue::{InMemory, SharedBytes};
pub use decoded::DECODED_RULES;
pub use encode::{ShardEncoder, ShardStats, MAX_SHARD_BYTES, SHARD_RULES};
pub use fingerprint::Fingerprint;
pub use layout::{read_ranged, Source};
pub use routes::{ShardedTable, Winner};
pub use store::{LoadStats, ShardStore};
pub use texts::{ShardText, Texts};

use crate::compact::{self, Inflater};
use crate::doc::{Doc, Node};
use crate::error::TableError;
use crate::format::TableSpec;
use crate::RouteTable;

/// The key of the one-key object that carries the sharded form.
pub use crate::format::SHARDS_KEY as WRAPPER_KEY;

/// The version of the sharded wrapper this crate writes.
pub const FORM: u64 = 2;

/// The versions of the sharded wrapper this crate reads.
pub const FORMS_READ: [u64; 2] = [1, 2];

/// The sharded form taken apart: the head (a table of no rules), each shard's fingerprint, and
/// where each shard's text is.
#[derive(Debug)]
pub struct Parts<'s> {
    /// The table's settings; its `rules` are empty.
    pub head: TableSpec,
    /// Each shard's fingerprint, in table order: what a store knows the shards it holds by.
    pub fingerprints: Vec<Fingerprint>,
    /// Where each shard's text is read, when a store lacks the shard.
    pub texts: Texts<'s>,
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

/// The wrapper's fields, each at most once and none other, the form one this crate reads, and the
/// head read.
struct Fields<'d> {
    head: TableSpec,
    index: Option<Node<'d>>,
    shards: Option<Node<'d>>,
}

impl<'d> Fields<'d> {
    fn read(doc: &Doc<'d>, node: Node<'d>) -> Result<Fields<'d>, TableError> {
        let Node::Object(span) = node else {
            return Err(TableError::Shape {
                at: WRAPPER_KEY.into(),
                problem: "expected an object with `form`, `head` and `shards`".into(),
            });
        };
        let (mut form, mut front, mut head, mut index, mut shards) = (None, None, None, None, None);
        for item in doc.items(span) {
            let key = doc.text(item.key);
            let slot = match key {
                "form" => &mut form,
                "front" => &mut front,
                "head" => &mut head,
                "index" => &mut index,
                "shards" => &mut shards,
                other => return Err(shape(other, "unknown field")),
            };
            if slot.replace(item.node).is_some() {
                return Err(shape(key, "written twice"));
            }
        }
        let form = match form {
            Some(Node::UInt(form)) if FORMS_READ.contains(&form) => form,
            Some(_) => {
                return Err(shape(
                    "form",
                    format!("unsupported form; this build reads forms 1 and {FORM}"),
                ))
            }
            None => return Err(shape("form", "missing")),
        };
        for (name, node) in [("front", front), ("index", index)] {
            match (form, node) {
                (1, Some(_)) => return Err(shape(name, "not a field of form 1")),
                (2, None) => return Err(shape(name, "missing")),
                _ => {}
            }
        }
        if !matches!(front, None | Some(Node::Str(_))) {
            return Err(shape("front", "expected a string of ten digits"));
        }
        let head = TableSpec::from_node(doc, head.ok_or_else(|| shape("head", "missing"))?)?;
        if !head.rules.is_empty() {
            return Err(shape("head.rules", "the head holds no rules; they are in `shards`"));
        }
        Ok(Fields { head, index, shards })
    }
}

/// The index's entries: each shard's fingerprint and text length.
fn read_index(doc: &Doc<'_>, node: Node<'_>) -> Result<Vec<(Fingerprint, usize)>, TableError> {
    let Node::List(list) = node else {
        return Err(shape("index", "expected a list of [fingerprint, length]"));
    };
    let entry = |i: usize, node: Node<'_>| {
        let bad = || shape(&format!("index[{i}]"), "expected [\"<32 hex digits>\", length]");
        let Node::List(pair) = node else { return Err(bad()) };
        match doc.items(pair) {
            [fingerprint, length] => match (fingerprint.node, length.node) {
                (Node::Str(text), Node::UInt(length)) => {
                    let fingerprint = layout::parse_fingerprint(doc.text(text)).ok_or_else(bad)?;
                    Ok((fingerprint, usize::try_from(length).map_err(|_| bad())?))
                }
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    };
    doc.items(list)
        .iter()
        .enumerate()
        .map(|(i, item)| entry(i, item.node))
        .collect()
}

fn read_inner<'s, 'd: 's>(doc: &'s Doc<'d>, node: Node<'d>) -> Result<Parts<'s>, TableError> {
    let fields = Fields::read(doc, node)?;
    let Some(Node::List(list)) = fields.shards else {
        return Err(shape("shards", "expected a list of strings"));
    };
    let texts = doc
        .items(list)
        .iter()
        .enumerate()
        .map(|(i, item)| match item.node {
            Node::Str(text) => Ok(doc.text(text)),
            _ => Err(shape(&format!("shards[{i}]"), "expected a string")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let fingerprints = match fields.index {
        // Form 1: the texts are all here, and their fingerprints are computed.
        None => texts.iter().map(|text| fingerprint::fingerprint(text)).collect(),
        Some(index) => {
            let index = read_index(doc, index)?;
            if index.len() != texts.len() {
                return Err(shape(
                    "index",
                    format!("{} entries for {} shards", index.len(), texts.len()),
                ));
            }
            for (i, ((_, length), text)) in index.iter().zip(&texts).enumerate() {
                if *length != text.len() {
                    return Err(shape(
                        &format!("index[{i}]"),
                        format!("says {length} bytes; the shard's text has {}", text.len()),
                    ));
                }
            }
            index.into_iter().map(|(fingerprint, _)| fingerprint).collect()
        }
    };
    Ok(Parts {
        head: fields.head,
        fingerprints,
        texts: Texts::Inline(texts),
    })
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
    for index in 0..parts.texts.len() {
        let spec = parts.texts.get(index).and_then(|text| shard_spec(&text, inflater));
        let spec = spec.map_err(|error| TableError::Shard {
            index,
            error: Box::new(error),
        })?;
        table.rules.extend(spec.rules);
    }
    Ok(table)
}

#[cfg(test)]
mod tests;
