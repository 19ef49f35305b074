//! The priority keys 1 to 4 of ROUTING.md §4, as one `Ord` value per rule.
//!
//! The compiler sorts rules by [`Precedence`] (greatest first), then by age; the matcher never looks
//! at it, it only honours table order. `switchyard explain` uses [`Precedence::deciding_key`] to say
//! why a candidate ranked lower.

use std::cmp::Ordering;

use crate::format::{ConditionSource, PathSpec, RuleSpec};

/// How specific a rule is; the greater value wins.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Precedence {
    host: HostPrecision,
    path: PathPrecision,
    condition_count: usize,
    /// Condition kind strengths, strongest first (cookie 3, header 2, query 1, method 0).
    condition_kinds: Vec<u8>,
}

/// Key 1: exact host > wildcard > no host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum HostPrecision {
    Any,
    Wildcard,
    Exact,
}

/// Key 2: exact > regex (longer pattern first) > prefix (longer first; segment before string).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum PathPrecision {
    Prefix { len: usize, segment: bool },
    Regex { len: usize },
    Exact,
}

/// The priority key that decided between two rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecidingKey {
    /// Key 1.
    HostPrecision,
    /// Key 2.
    PathPrecision,
    /// Key 3.
    ConditionCount,
    /// Key 4.
    ConditionKind,
    /// Key 5: keys 1 to 4 are equal, so age, uid, name and position decided.
    Age,
}

impl DecidingKey {
    /// How ROUTING.md names this key.
    pub fn describe(self) -> &'static str {
        match self {
            DecidingKey::HostPrecision => "host precision (exact > wildcard > any host)",
            DecidingKey::PathPrecision => "path precision (exact > regex > longer prefix > segment before string)",
            DecidingKey::ConditionCount => "number of conditions",
            DecidingKey::ConditionKind => "condition kind (cookie > header > query > method)",
            DecidingKey::Age => "age (older resource, then smaller uid, then namespace/name, then position)",
        }
    }
}

/// The strength of a condition kind in key 4.
pub fn kind_strength(source: ConditionSource) -> u8 {
    match source {
        ConditionSource::Cookie => 3,
        ConditionSource::Header => 2,
        ConditionSource::Query => 1,
        ConditionSource::Method => 0,
    }
}

impl Precedence {
    /// Keys 1 to 4 of a rule.
    pub fn of(rule: &RuleSpec) -> Precedence {
        let host = match rule.host.as_deref() {
            None => HostPrecision::Any,
            Some(host) if host.starts_with("*.") => HostPrecision::Wildcard,
            Some(_) => HostPrecision::Exact,
        };
        let path = match &rule.path {
            PathSpec::Exact(_) => PathPrecision::Exact,
            PathSpec::Regex(pattern) => PathPrecision::Regex { len: pattern.len() },
            PathSpec::SegmentPrefix(prefix) => PathPrecision::Prefix {
                len: prefix.len(),
                segment: true,
            },
            PathSpec::Prefix(prefix) => PathPrecision::Prefix {
                len: prefix.len(),
                segment: false,
            },
        };
        let mut condition_kinds: Vec<u8> = rule.conditions.iter().map(|c| kind_strength(c.on)).collect();
        condition_kinds.sort_unstable_by(|a, b| b.cmp(a));
        Precedence {
            host,
            path,
            condition_count: rule.conditions.len(),
            condition_kinds,
        }
    }

    /// The first key on which two rules differ (`Age` when keys 1 to 4 are all equal).
    pub fn deciding_key(&self, other: &Precedence) -> DecidingKey {
        if self.host != other.host {
            DecidingKey::HostPrecision
        } else if self.path != other.path {
            DecidingKey::PathPrecision
        } else if self.condition_count != other.condition_count {
            DecidingKey::ConditionCount
        } else if self.condition_kinds != other.condition_kinds {
            DecidingKey::ConditionKind
        } else {
            DecidingKey::Age
        }
    }
}

/// Orders two rules by keys 1 to 4, the winner first: `sort_by(by_precedence)` puts the strongest
/// rule at the front (ties keep their order, so a stable sort after an age sort gives the total order).
pub fn by_precedence(a: &RuleSpec, b: &RuleSpec) -> Ordering {
    Precedence::of(b).cmp(&Precedence::of(a))
}
