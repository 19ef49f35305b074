//! The priority order (ROUTING.md §4) and the table's generation label.
//!
//! Keys 1 to 4 come from the table crate ([`Precedence`]); key 5 is added here: the older resource
//! (creationTimestamp, then uid, then namespace/name), then the rule's position in its resource.
//! The order is total, so the table never depends on input order.
//!
//! A VirtualServer owns its host alone (ROUTING.md §6), so the rules of its host all come from it;
//! among them NGINX's order ([`crate::nginx::NginxRank`]) decides instead: they keep the places
//! the general order gave their host, and are reordered within those places.

use std::collections::BTreeMap;

use switchyard_table::precedence::Precedence;
use switchyard_table::{RuleSpec, TableSpec};

use crate::model::{CompileError, Draft};

/// Sorts drafts into table order, highest priority first, and returns the rules. Positions are
/// sorted, not the drafts themselves (a draft is hundreds of bytes; moving them dominated the sort).
pub fn sort(drafts: Vec<Draft>) -> Vec<RuleSpec> {
    let keys: Vec<Precedence> = drafts.iter().map(|d| Precedence::of(&d.rule)).collect();
    let mut order: Vec<usize> = (0..drafts.len()).collect();
    order.sort_by(|&x, &y| {
        let (a, b) = (&drafts[x], &drafts[y]);
        keys[y]
            .cmp(&keys[x])
            .then_with(|| a.age.cmp(&b.age))
            .then_with(|| a.position.cmp(&b.position))
            .then_with(|| a.rule.name.cmp(&b.rule.name))
    });
    // The places of each VirtualServer host's rules, in table order, reordered among themselves.
    let mut places: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (slot, &i) in order.iter().enumerate() {
        if let Draft {
            nginx: Some(_), rule, ..
        } = &drafts[i]
        {
            places
                .entry(rule.host.as_deref().unwrap_or_default())
                .or_default()
                .push(slot);
        }
    }
    let mut reordered = order.clone();
    for slots in places.values() {
        let mut group: Vec<usize> = slots.iter().map(|&slot| order[slot]).collect();
        group.sort_by(|&x, &y| {
            (drafts[x].nginx.as_ref(), &drafts[x].rule.name).cmp(&(drafts[y].nginx.as_ref(), &drafts[y].rule.name))
        });
        for (&slot, i) in slots.iter().zip(group) {
            reordered[slot] = i;
        }
    }
    let mut drafts: Vec<Option<Draft>> = drafts.into_iter().map(Some).collect();
    reordered
        .into_iter()
        .filter_map(|i| drafts[i].take())
        .map(|d| d.rule)
        .collect()
}

/// A content hash of the rules and table-wide settings: 64-bit FNV-1a over the table's JSON with an
/// empty generation, as 16 hex digits. Any change to what the filter would do changes it.
pub fn generation(table: &TableSpec) -> Result<String, CompileError> {
    let mut unlabelled = table.clone();
    unlabelled.generation = String::new();
    let bytes = serde_json::to_vec(&unlabelled).map_err(|source| CompileError::Serialize {
        what: "the table (for its generation hash)",
        source,
    })?;
    Ok(format!("{:016x}", fnv1a(&bytes)))
}

/// 64-bit FNV-1a.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}
