//! What changed between two tables, for the log line of every push: rules added, removed and
//! changed (by name), hosts gained and lost. Pure and deterministic (everything sorted).

use rustc_hash::{FxHashMap, FxHashSet};
use switchyard_table::TableSpec;

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

/// A table to compare and, when the compiler gave them, the content hashes of its rules in table
/// order (`Incremental::rule_hashes`): rules of one name are then compared by hash, not field by
/// field (a hash collision could only hide a change from the log line, never from a sink).
#[derive(Debug, Clone, Copy)]
pub struct Compared<'a> {
    /// The table.
    pub table: &'a TableSpec,
    /// One hash per rule of `table`, or `None`.
    pub rule_hashes: Option<&'a [u64]>,
}

impl<'a> Compared<'a> {
    /// `table`, compared rule by rule.
    pub fn rules(table: &'a TableSpec) -> Compared<'a> {
        Compared {
            table,
            rule_hashes: None,
        }
    }

    /// The hashes, when there is one per rule.
    fn hashes(&self) -> Option<&'a [u64]> {
        self.rule_hashes.filter(|h| h.len() == self.table.rules.len())
    }
}

/// Compares `old` (`None`: nothing pushed yet) with `new`. Called on every push, so it is linear
/// in the tables and copies no rule: a 100,000-rule table is compared through hash maps of borrowed
/// names (and, when both sides have them, rule hashes), and only the differences are sorted.
pub fn diff(old: Option<Compared<'_>>, new: Compared<'_>) -> TableDiff {
    let empty = TableSpec::default();
    let old = old.unwrap_or(Compared::rules(&empty));
    fn by_name(t: &TableSpec) -> FxHashMap<&str, usize> {
        t.rules.iter().enumerate().map(|(i, r)| (r.name.as_str(), i)).collect()
    }
    fn hosts(t: &TableSpec) -> FxHashSet<&str> {
        t.rules.iter().map(|r| r.host.as_deref().unwrap_or("*")).collect()
    }
    fn sorted<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
        let mut names: Vec<String> = names.map(str::to_owned).collect();
        names.sort_unstable();
        names
    }
    let same: &dyn Fn(usize, usize) -> bool = match (old.hashes(), new.hashes()) {
        (Some(before), Some(after)) => &move |i, j| before[i] == after[j],
        _ => &|i, j| old.table.rules[i] == new.table.rules[j],
    };
    let (before, after) = (by_name(old.table), by_name(new.table));
    let mut out = TableDiff {
        added: sorted(after.keys().copied().filter(|name| !before.contains_key(name))),
        removed: sorted(before.keys().copied().filter(|name| !after.contains_key(name))),
        changed: sorted(
            after
                .iter()
                .filter(|(name, &j)| before.get(*name).is_some_and(|&i| !same(i, j)))
                .map(|(&name, _)| name),
        ),
        ..TableDiff::default()
    };
    let (hosts_before, hosts_after) = (hosts(old.table), hosts(new.table));
    out.hosts_gained = sorted(hosts_after.difference(&hosts_before).copied());
    out.hosts_lost = sorted(hosts_before.difference(&hosts_after).copied());
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
        let d = diff(Some(Compared::rules(&old)), Compared::rules(&new));
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
        let d = diff(None, Compared::rules(&new));
        assert_eq!((d.added.len(), d.hosts_gained.len()), (1, 1));
    }

    #[test]
    fn a_pure_reorder_says_so() {
        let old = table(&[("r1", None, "c"), ("r2", None, "c")]);
        let new = table(&[("r2", None, "c"), ("r1", None, "c")]);
        assert!(diff(Some(Compared::rules(&old)), Compared::rules(&new))
            .summary()
            .contains("order or table settings changed"));
    }

    #[test]
    fn names_and_hosts_are_listed_sorted_whatever_the_tables_order() {
        let old = table(&[("r/c", Some("c.example"), "x"), ("r/a", Some("a.example"), "x")]);
        let new = table(&[
            ("r/z", Some("z.example"), "x"),
            ("r/c", Some("c.example"), "y"),
            ("r/m", Some("m.example"), "x"),
            ("r/b", Some("b.example"), "x"),
        ]);
        let d = diff(Some(Compared::rules(&old)), Compared::rules(&new));
        assert_eq!(d.added, ["r/b", "r/m", "r/z"]);
        assert_eq!(d.hosts_gained, ["b.example", "m.example", "z.example"]);
        assert_eq!(
            (d.removed.as_slice(), d.changed.as_slice()),
            (&["r/a".to_owned()][..], &["r/c".to_owned()][..])
        );
        assert_eq!(d.hosts_lost, ["a.example"]);
    }

    #[test]
    fn rules_of_one_name_are_compared_by_hash_when_both_sides_have_one_per_rule() {
        let old = table(&[("r/a", Some("a.example"), "x"), ("r/b", Some("b.example"), "x")]);
        let new = table(&[("r/b", Some("b.example"), "y"), ("r/a", Some("a.example"), "y")]);
        let hashed = |table, hashes| Compared {
            table,
            rule_hashes: Some(hashes),
        };
        // Positions differ between the tables: each rule's hash is found by its name.
        let d = diff(Some(hashed(&old, &[1, 2])), hashed(&new, &[2, 9]));
        assert_eq!(d.changed, ["r/a"], "r/b kept its hash, r/a did not");
        // Without a hash per rule on both sides, rules are compared field by field.
        let d = diff(Some(hashed(&old, &[1])), hashed(&new, &[2, 9]));
        assert_eq!(d.changed, ["r/a", "r/b"]);
        let d = diff(Some(Compared::rules(&old)), hashed(&new, &[2, 9]));
        assert_eq!(d.changed, ["r/a", "r/b"]);
    }

    #[test]
    fn long_lists_are_abbreviated() {
        let names: Vec<String> = (0..12).map(|i| format!("r{i:02}")).collect();
        assert!(abbreviate(&names).ends_with("r09 and 2 more"));
    }
}
