//! The status report: one entry per resource, saying what became of it and why, in words a platform
//! engineer understands. Gathered while the processors run, the way Contour's `internal/dag` does
//! (`add_error(type, reason, message)`), and written by `switchyard compile --status FILE`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::objects::{Kind, ResourceKey};

/// What became of a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// An Ingress that routes (perhaps with some of its rules dropped: see the conditions).
    Accepted,
    /// A resource of another class (ROUTING.md §1), or an IngressClass of another controller.
    Ignored,
    /// An Ingress that routes nothing: all its hosts are taken, or none of its rules is usable.
    Rejected,
    /// An HTTPProxy (or an IngressClass of ours) that is in use.
    Valid,
    /// An HTTPProxy with an error (ROUTING.md §3).
    Invalid,
    /// An HTTPProxy that no valid root includes.
    Orphaned,
}

impl Status {
    /// The lowercase word used in the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Accepted => "accepted",
            Status::Ignored => "ignored",
            Status::Rejected => "rejected",
            Status::Valid => "valid",
            Status::Invalid => "invalid",
            Status::Orphaned => "orphaned",
        }
    }
}

/// One condition of a resource's status.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Condition {
    /// `Info`, `Valid`, `Ignored`, `Orphaned`, `Error` or `Warning`.
    #[serde(rename = "type")]
    pub kind: String,
    /// A CamelCase reason (`HostTaken`, `IncludeNotFound`, ...).
    pub reason: String,
    /// A sentence for a human.
    pub message: String,
}

/// The status of one resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceStatus {
    /// `Ingress`, `HTTPProxy` or `IngressClass`.
    pub kind: &'static str,
    /// Namespace (empty for IngressClass).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The outcome.
    pub status: Status,
    /// Why.
    pub conditions: Vec<Condition>,
}

/// Status gathered during one compilation, keyed by resource.
#[derive(Debug, Default)]
pub struct StatusBook {
    entries: BTreeMap<ResourceKey, Entry>,
}

#[derive(Debug)]
struct Entry {
    status: Status,
    conditions: Vec<Condition>,
}

impl StatusBook {
    /// Records the resource's outcome (replacing an earlier one).
    pub fn set(&mut self, key: &ResourceKey, status: Status) {
        self.entry(key, status).status = status;
    }

    /// The recorded outcome, if any.
    pub fn get(&self, key: &ResourceKey) -> Option<Status> {
        self.entries.get(key).map(|e| e.status)
    }

    /// Records that a resource is not ours (ROUTING.md §1), with the class rule that failed.
    pub fn ignored_by_class(&mut self, key: &ResourceKey, why: impl std::fmt::Display) {
        self.add(
            key,
            Status::Ignored,
            "Ignored",
            "IgnoredByClass",
            format!("not ours: {why}"),
        );
    }

    /// Adds a condition; the resource gets `default` as its status if it has none yet.
    pub fn add(&mut self, key: &ResourceKey, default: Status, kind: &str, reason: &str, message: impl Into<String>) {
        let condition = Condition {
            kind: kind.to_owned(),
            reason: reason.to_owned(),
            message: message.into(),
        };
        let entry = self.entry(key, default);
        if !entry.conditions.contains(&condition) {
            entry.conditions.push(condition);
        }
    }

    /// Adds an `Error` condition.
    pub fn error(&mut self, key: &ResourceKey, default: Status, reason: &str, message: impl Into<String>) {
        self.add(key, default, "Error", reason, message);
    }

    /// Whether the resource has a condition with this reason.
    pub fn has_reason(&self, key: &ResourceKey, reason: &str) -> bool {
        self.entries
            .get(key)
            .is_some_and(|e| e.conditions.iter().any(|c| c.reason == reason))
    }

    fn entry(&mut self, key: &ResourceKey, status: Status) -> &mut Entry {
        self.entries.entry(key.clone()).or_insert_with(|| Entry {
            status,
            conditions: Vec::new(),
        })
    }

    /// The report, sorted by kind, namespace and name.
    pub fn finish(self) -> Vec<ResourceStatus> {
        let mut out: Vec<ResourceStatus> = self
            .entries
            .into_iter()
            .map(|(key, entry)| ResourceStatus {
                kind: key.kind.as_str(),
                namespace: key.namespace,
                name: key.name,
                status: entry.status,
                conditions: entry.conditions,
            })
            .collect();
        out.sort_by(|a, b| (kind_rank(a.kind), &a.namespace, &a.name).cmp(&(kind_rank(b.kind), &b.namespace, &b.name)));
        out
    }
}

fn kind_rank(kind: &str) -> u8 {
    match kind {
        "IngressClass" => 0,
        "Ingress" => 1,
        _ => 2,
    }
}

/// Counts of statuses per kind, for the human summary: `Ingress: 3 accepted, 1 ignored`.
pub fn summarize(statuses: &[ResourceStatus]) -> Vec<String> {
    let mut counts: BTreeMap<(u8, &str), BTreeMap<Status, usize>> = BTreeMap::new();
    for s in statuses {
        *counts
            .entry((kind_rank(s.kind), s.kind))
            .or_default()
            .entry(s.status)
            .or_default() += 1;
    }
    counts
        .into_iter()
        .map(|((_, kind), by_status)| {
            let parts: Vec<String> = by_status
                .into_iter()
                .map(|(st, n)| format!("{n} {}", st.as_str()))
                .collect();
            format!("{kind}: {}", parts.join(", "))
        })
        .collect()
}

impl Kind {
    /// Whether statuses of this kind use the HTTPProxy words (valid/invalid/orphaned).
    pub fn is_proxy(self) -> bool {
        matches!(self, Kind::HTTPProxy)
    }
}
