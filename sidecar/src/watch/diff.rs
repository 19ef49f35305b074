//! What changed between two tables, for the log line of every push: rules added, removed and
//! changed (by name), hosts gained and lost. Pure and deterministic (everything sorted).

use std::collections::{BTreeMap, BTreeSet};

use switchyard_table::{RuleSpec, TableSpec};

/// The difference between two tables.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TableDiff {
    /// Rules only in the new table.
    pub added: Vec<String>,
    /// Rules only in the old table.
    pub removed: Vec<String>,
    /// Rules in both whose content differs.
    pub changed: Vec<String>,
    /// Hosts the new table routes and the old one did not (`*` for rules without a host).
    pub hosts_gained: Vec<String>,
    /// Hosts the old table routed and the new one does not.
    pub hosts_lost: Vec<String>,
    /// Whether only the order of rules (or a table-wide setting) changed.
    pub reordered_or_settings: bool,
}

/// Compares `old` (`None`: nothing pushed yet) with `new`.
pub fn diff(old: Option<&TableSpec>, new: &TableSpec) -> TableDiff {
    let empty = TableSpec::default();
    let old = old.unwrap_or(&empty);
    // Borrowed: a table of 100,000 rules is compared without copying one.
    fn by_name(t: &TableSpec) -> BTreeMap<&str, &RuleSpec> {
        t.rules.iter().map(|r| (r.name.as_str(), r)).collect()
    }
    fn hosts(t: &TableSpec) -> BTreeSet<&str> {
        t.rules.iter().map(|r| r.host.as_deref().unwrap_or("*")).collect()
    }
    let (before, after) = (by_name(old), by_name(new));
    let mut out = TableDiff::default();
    for (&name, &rule) in &after {
        match before.get(name) {
            None => out.added.push(name.to_owned()),
            Some(&previous) if previous != rule => out.changed.push(name.to_owned()),
            Some(_) => {}
        }
    }
    out.removed = before
        .keys()
        .filter(|n| !after.contains_key(*n))
        .map(|n| n.to_string())
        .collect();
    let (hosts_before, hosts_after) = (hosts(old), hosts(new));
    out.hosts_gained = hosts_after.difference(&hosts_before).map(|h| h.to_string()).collect();
    out.hosts_lost = hosts_before.difference(&hosts_after).map(|h| h.to_string()).collect();
    out.reordered_or_settings = out.added.is_empty() && out.removed.is_empty() && out.changed.is_empty();
    out
}

impl TableDiff {
    /// One line for the log: `+2 -1 ~1 rules (added: a, b; removed: c; changed: d); hosts gained: x; lost: y`.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "+{} -{} ~{} rules",
            self.added.len(),
            self.removed.len(),
            self.changed.len()
        );
        let mut parts = Vec::new();
        for (label, names) in [
            ("added", &self.added),
            ("removed", &self.removed),
            ("changed", &self.changed),
        ] {
            if !names.is_empty() {
                parts.push(format!("{label}: {}", abbreviate(names)));
            }
        }
        if !parts.is_empty() {
            out.push_str(&format!(" ({})", parts.join("; ")));
        }
        if self.reordered_or_settings {
            out.push_str(" (order or table settings changed)");
        }
        if !self.hosts_gained.is_empty() {
            out.push_str(&format!("; hosts gained: {}", abbreviate(&self.hosts_gained)));
        }
        if !self.hosts_lost.is_empty() {
            out.push_str(&format!("; hosts lost: {}", abbreviate(&self.hosts_lost)));
        }
        out
    }
}

/// At most 10 names, then `and N more`, so that one log line stays readable for a big change.
fn abbreviate(names: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut text = names.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rules: &[(&str, Option<&str>, &str)]) -> TableSpec {
        let rules: Vec<serde_json::Value> = rules
            .iter()
            .map(|(name, host, cluster)| {
                let mut rule = serde_json::json!({
                    "name": name,
                    "path": {"type": "prefix", "value": "/"},
                    "action": {"route": {"backends": [{"cluster": cluster}]}}
                });
                if let Some(host) = host {
                    rule["host"] = serde_json::json!(host);
                }
                rule
            })
            .collect();
        TableSpec::from_value(serde_json::json!({"version": 1, "rules": rules})).unwrap()
    }

    #[test]
    fn rules_added_removed_and_changed_are_named() {
        let old = table(&[
            ("Ingress/a/x#0", Some("a.example"), "c1"),
            ("Ingress/a/y#0", Some("b.example"), "c1"),
        ]);
        let new = table(&[
            ("Ingress/a/x#0", Some("a.example"), "c2"),
            ("Ingress/a/z#0", None, "c1"),
        ]);
        let d = diff(Some(&old), &new);
        assert_eq!(d.added, ["Ingress/a/z#0"]);
        assert_eq!(d.removed, ["Ingress/a/y#0"]);
        assert_eq!(d.changed, ["Ingress/a/x#0"]);
        assert_eq!(d.hosts_gained, ["*"]);
        assert_eq!(d.hosts_lost, ["b.example"]);
        assert_eq!(
            d.summary(),
            "+1 -1 ~1 rules (added: Ingress/a/z#0; removed: Ingress/a/y#0; changed: Ingress/a/x#0); hosts gained: *; hosts lost: b.example"
        );
    }

    #[test]
    fn the_first_table_adds_everything() {
        let new = table(&[("Ingress/a/x#0", Some("a.example"), "c1")]);
        let d = diff(None, &new);
        assert_eq!((d.added.len(), d.hosts_gained.len()), (1, 1));
    }

    #[test]
    fn a_pure_reorder_says_so() {
        let old = table(&[("r1", None, "c"), ("r2", None, "c")]);
        let new = table(&[("r2", None, "c"), ("r1", None, "c")]);
        assert!(diff(Some(&old), &new)
            .summary()
            .contains("order or table settings changed"));
    }

    #[test]
    fn long_lists_are_abbreviated() {
        let names: Vec<String> = (0..12).map(|i| format!("r{i:02}")).collect();
        assert!(abbreviate(&names).ends_with("r09 and 2 more"));
    }
}
