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

/// Sorts drafts into table order, highest priority first, and returns the rules.
pub fn sort(drafts: Vec<Draft>) -> Vec<RuleSpec> {
    let mut keyed: Vec<(Precedence, Draft)> = drafts.into_iter().map(|d| (Precedence::of(&d.rule), d)).collect();
    keyed.sort_by(|(pa, a), (pb, b)| {
        pb.cmp(pa)
            .then_with(|| a.age.cmp(&b.age))
            .then_with(|| a.position.cmp(&b.position))
            .then_with(|| a.rule.name.cmp(&b.rule.name))
    });
    let mut drafts: Vec<Option<Draft>> = keyed.into_iter().map(|(_, d)| Some(d)).collect();
    // The places of each VirtualServer host's rules, in table order.
    let mut places: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, draft) in drafts.iter().enumerate() {
        if let Some(Draft {
            nginx: Some(_), rule, ..
        }) = draft
        {
            places.entry(rule.host.clone().unwrap_or_default()).or_default().push(i);
        }
    }
    for slots in places.values() {
        let mut group: Vec<Draft> = slots.iter().filter_map(|&i| drafts[i].take()).collect();
        group.sort_by(|a, b| a.nginx.cmp(&b.nginx).then_with(|| a.rule.name.cmp(&b.rule.name)));
        for (&slot, draft) in slots.iter().zip(group) {
            drafts[slot] = Some(draft);
        }
    }
    drafts.into_iter().flatten().map(|d| d.rule).collect()
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
