//! What changed between two tables, for the log line of every push: rules added, removed and
//! changed (by name), hosts gained and lost. Pure and deterministic (everything sorted).

use rustc_hash::{FxHashMap, FxHashSet};
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

/// A table to compare and, when the compiler gave them, the content hashes of its rules in table
/// order (`Incremental::rule_hashes`, over each whole rule, its name included): when both sides
/// have them, a rule whose hash the other side also has is the same rule there and is set aside at
/// once, and only the few others are compared by name (a hash collision could only hide a change
/// from the log line, never from a sink).
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

/// A rule's host, `*` for none.
fn host_of(rule: &RuleSpec) -> &str {
    rule.host.as_deref().unwrap_or("*")
}

/// The positions of `table`'s rules that may differ from the other table's: with hashes on both
/// sides, those whose hash the other side lacks; else all.
fn candidates(table: &TableSpec, hashes: Option<(&[u64], &[u64])>) -> Vec<usize> {
    match hashes {
        Some((own, other)) => {
            let other: FxHashSet<u64> = other.iter().copied().collect();
            (0..own.len()).filter(|&i| !other.contains(&own[i])).collect()
        }
        None => (0..table.rules.len()).collect(),
    }
}

/// The rules at `positions` of `table`, by name.
fn by_name<'a>(table: &'a TableSpec, positions: &[usize]) -> FxHashMap<&'a str, usize> {
    positions.iter().map(|&i| (table.rules[i].name.as_str(), i)).collect()
}

/// The hosts of the rules `named` (positions in `table`).
fn hosts<'a>(table: &'a TableSpec, named: &FxHashMap<&str, usize>) -> FxHashSet<&'a str> {
    named.values().map(|&i| host_of(&table.rules[i])).collect()
}

/// Which of `hosts` no rule of `table` has.
fn absent<'a>(mut hosts: FxHashSet<&'a str>, table: &TableSpec) -> FxHashSet<&'a str> {
    for rule in &table.rules {
        if hosts.is_empty() {
            break;
        }
        hosts.remove(host_of(rule));
    }
    hosts
}

/// Compares `old` (`None`: nothing pushed yet) with `new`. Called on every push, so it copies no
/// rule and, with rule hashes on both sides, hashes numbers rather than 100,000 names: only the
/// rules that differ are looked up by name, and only their hosts are looked for in the other
/// table; only the differences are sorted.
pub fn diff(old: Option<Compared<'_>>, new: Compared<'_>) -> TableDiff {
    let empty = TableSpec::default();
    let old = old.unwrap_or(Compared::rules(&empty));
    fn sorted<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
        let mut names: Vec<String> = names.map(str::to_owned).collect();
        names.sort_unstable();
        names
    }
    let hashes = old.hashes().zip(new.hashes());
    let same: &dyn Fn(usize, usize) -> bool = match hashes {
        Some((before, after)) => &move |i, j| before[i] == after[j],
        None => &|i, j| old.table.rules[i] == new.table.rules[j],
    };
    let before = by_name(old.table, &candidates(old.table, hashes));
    let after = by_name(new.table, &candidates(new.table, hashes.map(|(b, a)| (a, b))));
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
    // A host gained has a rule that differs in the new table (and none in the old); a host lost, one
    // in the old table (and none in the new).
    out.hosts_gained = sorted(absent(hosts(new.table, &after), old.table).into_iter());
    out.hosts_lost = sorted(absent(hosts(old.table, &before), new.table).into_iter());
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
    fn with_the_compilers_rule_hashes_the_diff_is_the_field_by_field_diff() {
        let hashed = |table: &TableSpec| -> Vec<u64> {
            let hashes = table.rules.iter().map(switchyard_compiler::order::rule_hash);
            hashes.collect::<Result<_, _>>().unwrap()
        };
        let old = table(&[
            ("r/x", Some("a.example"), "c1"),
            ("r/y", Some("b.example"), "c1"),
            ("r/w", Some("c.example"), "c1"),
            ("r/v", Some("c.example"), "c1"),
            ("r/u", None, "c1"),
        ]);
        let pairs = [
            // Changed, added on a new host, removed the last rule of a host, one of two of a host.
            table(&[
                ("r/x", Some("a.example"), "c2"),
                ("r/z", Some("d.example"), "c1"),
                ("r/w", Some("c.example"), "c1"),
                ("r/u", None, "c1"),
            ]),
            // A rule moved to another host, the rules without a host gone.
            table(&[
                ("r/x", Some("a.example"), "c1"),
                ("r/y", Some("e.example"), "c1"),
                ("r/w", Some("c.example"), "c1"),
                ("r/v", Some("c.example"), "c1"),
            ]),
            // Only the order.
            table(&[
                ("r/u", None, "c1"),
                ("r/v", Some("c.example"), "c1"),
                ("r/w", Some("c.example"), "c1"),
                ("r/y", Some("b.example"), "c1"),
                ("r/x", Some("a.example"), "c1"),
            ]),
        ];
        for new in &pairs {
            let (old_hashes, new_hashes) = (hashed(&old), hashed(new));
            let fast = diff(
                Some(Compared {
                    table: &old,
                    rule_hashes: Some(&old_hashes),
                }),
                Compared {
                    table: new,
                    rule_hashes: Some(&new_hashes),
                },
            );
            assert_eq!(fast, diff(Some(Compared::rules(&old)), Compared::rules(new)));
        }
    }

    #[test]
    fn long_lists_are_abbreviated() {
        let names: Vec<String> = (0..12).map(|i| format!("r{i:02}")).collect();
        assert!(abbreviate(&names).ends_with("r09 and 2 more"));
    }
}
