//! The priority order (ROUTING.md §4) and the table's generation label.
//!
//! Keys 1 to 4 come from the table crate ([`Precedence`]); key 5 is added here: the older resource
//! (creationTimestamp, then uid, then namespace/name), then the rule's position in its resource.
//! The order is total, so the table never depends on input order.
//!
//! A host whose rules carry an ordering policy other than the general one ([`crate::model::HostOrder`]) holds one
//! resource's rules alone (a VirtualServer owns its host, ROUTING.md §6); among them that policy
//! decides instead (NGINX's location order, [`crate::nginx::NginxRank`]): they keep the places the
//! general order gave their host, and are reordered within those places.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use switchyard_table::precedence::Precedence;
use switchyard_table::{RuleSpec, TableSpec};

use crate::model::{CompileError, Draft};
use crate::objects::Age;

/// A rule's place in the general order (keys 1 to 5), owned: what the incremental compiler keeps
/// per table slot to merge new rules in exactly where [`sort`] would put them. Its age is shared
/// with the keys of the other rules of the same age ([`Ages`]).
#[derive(Debug, Clone)]
pub struct SortKey {
    precedence: Precedence,
    age: Arc<Age>,
    position: usize,
    name: String,
}

/// The ages of keyed rules, each held once: a resource's hundred rules share one (with a
/// uid, a namespace and a name, an age is some hundred bytes and three allocations).
#[derive(Debug, Default)]
pub struct Ages(BTreeSet<Arc<Age>>);

impl Ages {
    /// The key of a draft, its age shared with the keys made here before.
    pub fn key(&mut self, draft: &Draft) -> SortKey {
        let age = match self.0.get(&draft.age) {
            Some(age) => age.clone(),
            None => {
                self.0.insert(draft.age.clone());
                draft.age.clone()
            }
        };
        SortKey {
            precedence: Precedence::of(&draft.rule),
            age,
            position: draft.position,
            name: draft.rule.name.clone(),
        }
    }
}

impl Ord for SortKey {
    fn cmp(&self, other: &Self) -> Ordering {
        general(
            (&self.precedence, &self.age, self.position, &self.name),
            (&other.precedence, &other.age, other.position, &other.name),
        )
    }
}

impl PartialOrd for SortKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for SortKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for SortKey {}

/// The general order: keys 1 to 4 (greatest first), then age, position and name.
fn general(a: (&Precedence, &Age, usize, &str), b: (&Precedence, &Age, usize, &str)) -> Ordering {
    b.0.cmp(a.0)
        .then_with(|| a.1.cmp(b.1))
        .then_with(|| a.2.cmp(&b.2))
        .then_with(|| a.3.cmp(b.3))
}

/// Where each draft goes: `general[slot]` is the draft the general order puts at `slot`, and
/// `placed[slot]` the one the table holds there, after each host's ordering policy ([`crate::model::HostOrder`]).
#[derive(Debug)]
pub struct Placement {
    /// Draft indices in the general order.
    pub general: Vec<usize>,
    /// Draft indices in table order.
    pub placed: Vec<usize>,
}

/// Places drafts in table order, highest priority first. Positions are sorted, not the drafts
/// themselves (a draft is hundreds of bytes; moving them dominated the sort).
pub fn placement(drafts: &[Draft]) -> Placement {
    let keys: Vec<Precedence> = drafts.iter().map(|d| Precedence::of(&d.rule)).collect();
    let mut general_order: Vec<usize> = (0..drafts.len()).collect();
    general_order.sort_by(|&x, &y| {
        let (a, b) = (&drafts[x], &drafts[y]);
        general(
            (&keys[x], &a.age, a.position, &a.rule.name),
            (&keys[y], &b.age, b.position, &b.rule.name),
        )
    });
    // The places of the rules of each host with its own policy, in table order, reordered among
    // themselves.
    let mut places: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (slot, &i) in general_order.iter().enumerate() {
        let draft = &drafts[i];
        if draft.order.reorders() {
            places
                .entry(draft.rule.host.as_deref().unwrap_or_default())
                .or_default()
                .push(slot);
        }
    }
    let mut placed = general_order.clone();
    for slots in places.values() {
        let mut group: Vec<usize> = slots.iter().map(|&slot| general_order[slot]).collect();
        group.sort_by(|&x, &y| (&drafts[x].order, &drafts[x].rule.name).cmp(&(&drafts[y].order, &drafts[y].rule.name)));
        for (&slot, i) in slots.iter().zip(group) {
            placed[slot] = i;
        }
    }
    Placement {
        general: general_order,
        placed,
    }
}

/// Sorts drafts into table order ([`placement`]) and returns the rules.
pub fn sort(drafts: Vec<Draft>) -> Vec<RuleSpec> {
    let placed = placement(&drafts).placed;
    let mut drafts: Vec<Option<Draft>> = drafts.into_iter().map(Some).collect();
    // Its length known up front: collecting through `filter_map` would grow it step by step.
    let mut rules = Vec::with_capacity(placed.len());
    rules.extend(placed.into_iter().filter_map(|i| drafts[i].take()).map(|d| d.rule));
    rules
}

/// The table's content hash, as 16 hex digits: 64-bit FNV-1a over the little-endian bytes of
/// [`header_hash`] then of each rule's [`rule_hash`], in table order. Any change to what the filter
/// would do changes it; a table that changes in a few rules is hashed again from the hashes of the
/// others (the incremental compiler keeps one per rule).
pub fn generation(table: &TableSpec) -> Result<String, CompileError> {
    let rules = table.rules.iter().map(rule_hash).collect::<Result<Vec<u64>, _>>()?;
    Ok(generation_of(header_hash(table)?, rules))
}

/// [`generation`] from the header's hash and the rules' hashes, in table order.
pub fn generation_of(header: u64, rules: impl IntoIterator<Item = u64>) -> String {
    let mut hash = Fnv1a::default();
    hash.feed(&header.to_le_bytes());
    for rule in rules {
        hash.feed(&rule.to_le_bytes());
    }
    format!("{:016x}", hash.0)
}

/// FNV-1a of the table's JSON without its rules and with an empty generation: its settings (the
/// metrics' fold included, which its rules decide).
pub fn header_hash(table: &TableSpec) -> Result<u64, CompileError> {
    let header = TableSpec {
        version: table.version,
        generation: String::new(),
        cluster_header: table.cluster_header.clone(),
        no_route: table.no_route,
        debug_rule_header: table.debug_rule_header,
        metrics_fold: table.metrics_fold.clone(),
        rules: Vec::new(),
    };
    json_hash(&header, "the table's settings (for its generation hash)")
}

/// FNV-1a of one rule's JSON.
pub fn rule_hash(rule: &RuleSpec) -> Result<u64, CompileError> {
    json_hash(rule, "a rule (for the table's generation hash)")
}

fn json_hash(value: &impl serde::Serialize, what: &'static str) -> Result<u64, CompileError> {
    let mut hash = Fnv1a::default();
    serde_json::to_writer(&mut hash, value).map_err(|source| CompileError::Serialize { what, source })?;
    Ok(hash.0)
}

/// 64-bit FNV-1a, fed as an [`std::io::Write`] (so JSON is hashed as it is written, never held).
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

impl std::io::Write for Fnv1a {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.feed(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// 64-bit FNV-1a.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash = Fnv1a::default();
    hash.feed(bytes);
    hash.0
}
