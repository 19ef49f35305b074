//! Host ownership and collisions (ROUTING.md §2, seed 003).
//!
//! Every rule with a host is claimed by a resource: an Ingress claims its own rules, an HTTPProxy
//! root claims the rules of its whole tree. Per host, the oldest contender wins (then the smallest
//! uid; then namespace/name, so it is total). Ingresses naming the same host merge into one
//! contender that competes as its oldest member, unless `--host-collision=winner`. Then, among the
//! surviving rules, two that are identical in host, path and conditions keep only the older one
//! (`PathTaken`); only that rule is dropped, never its whole resource.

use std::collections::{BTreeMap, BTreeSet};

use switchyard_table::{ConditionSpec, PathSpec};

use crate::model::{Draft, HostCollision};
use crate::objects::{Age, Kind, ResourceKey};
use crate::status::{ConditionKind, Reason, Status, StatusBook};

/// One side in a host's contest: the resources that win or lose together.
struct Contender {
    members: BTreeSet<ResourceKey>,
    /// The oldest member: the contender's age and the name shown to losers.
    oldest: Age,
}

/// A claim on a host by a resource with no rules in the table (a TLS passthrough TransportServer,
/// whose host is passed through at L4): it competes like the others, and when it wins, the host
/// gets no HTTP rules.
pub type HostClaim<'a> = (&'a str, &'a ResourceKey, &'a Age);

/// Who won each host: the winning resources (several for merged Ingresses).
pub type HostWinners = BTreeMap<String, BTreeSet<ResourceKey>>;

/// Applies host ownership and `PathTaken`; returns the rules that stay and who won each host.
/// `claims` are the hosts claimed by resources without rules.
pub fn resolve(
    drafts: Vec<Draft>,
    claims_without_rules: &[HostClaim<'_>],
    mode: HostCollision,
    book: &mut StatusBook,
) -> (Vec<Draft>, HostWinners) {
    // host → claimant → age
    let mut claims: BTreeMap<&str, BTreeMap<&ResourceKey, &Age>> = BTreeMap::new();
    for (host, key, age) in claims_without_rules {
        claims.entry(host).or_default().insert(key, age);
    }
    let mut hostless: BTreeSet<&ResourceKey> = BTreeSet::new();
    for draft in &drafts {
        match draft.rule.host.as_deref() {
            Some(host) => {
                claims
                    .entry(host)
                    .or_default()
                    .insert(&draft.claimant, &draft.claimant_age);
            }
            None => {
                hostless.insert(&draft.claimant);
            }
        }
    }
    let mut winners: HostWinners = BTreeMap::new();
    let mut hosts_won: BTreeMap<ResourceKey, usize> = BTreeMap::new();
    let mut losses: Vec<(ResourceKey, String, String)> = Vec::new();
    for (host, claimants) in &claims {
        let mut contenders: Vec<Contender> = Vec::new();
        let mut merged: Option<Contender> = None;
        for (key, age) in claimants {
            let single = Contender {
                members: BTreeSet::from([(*key).clone()]),
                oldest: (*age).clone(),
            };
            if mode == HostCollision::Merge && key.kind == Kind::Ingress {
                match merged.as_mut() {
                    None => merged = Some(single),
                    Some(group) => {
                        group.members.insert((*key).clone());
                        if **age < group.oldest {
                            group.oldest = (*age).clone();
                        }
                    }
                }
            } else {
                contenders.push(single);
            }
        }
        contenders.extend(merged);
        contenders.sort_by(|a, b| a.oldest.cmp(&b.oldest));
        let mut iter = contenders.into_iter();
        let Some(winner) = iter.next() else { continue };
        for member in &winner.members {
            *hosts_won.entry(member.clone()).or_default() += 1;
        }
        for loser in iter {
            for member in loser.members {
                hosts_won.entry(member.clone()).or_default();
                losses.push((member, (*host).to_owned(), winner.oldest.key.display()));
            }
        }
        winners.insert((*host).to_owned(), winner.members);
    }
    for (loser, host, by) in &losses {
        let default = if loser.kind == Kind::HTTPProxy {
            Status::Invalid
        } else {
            Status::Accepted
        };
        book.error(
            loser,
            default,
            Reason::HostTaken,
            format!("host {host} is taken by {by}"),
        );
    }
    for (key, won) in &hosts_won {
        if *won == 0 && !hostless.contains(key) {
            let status = if key.kind == Kind::HTTPProxy {
                Status::Invalid
            } else {
                Status::Rejected
            };
            book.error(key, status, Reason::Rejected, "All hosts are taken by other resources");
            book.set(key, status);
        }
    }
    let kept: Vec<Draft> = drafts
        .into_iter()
        .filter(|d| match d.rule.host.as_deref() {
            None => true,
            Some(host) => winners.get(host).is_some_and(|w| w.contains(&d.claimant)),
        })
        .collect();
    (drop_identical(kept, book), winners)
}

/// Keeps, of rules identical in host, path and conditions, the one of the older resource (then the
/// earlier position); the others are dropped with `PathTaken`.
fn drop_identical(drafts: Vec<Draft>, book: &mut StatusBook) -> Vec<Draft> {
    let mut keeper: BTreeMap<Identity<'_>, usize> = BTreeMap::new();
    let mut dropped = vec![false; drafts.len()];
    for (i, draft) in drafts.iter().enumerate() {
        let identity = identity(draft);
        match keeper.get(&identity).copied() {
            None => {
                keeper.insert(identity, i);
            }
            Some(k) => {
                let other = &drafts[k];
                let (older, newer) = if (&draft.age, draft.position) < (&other.age, other.position) {
                    (i, k)
                } else {
                    (k, i)
                };
                dropped[newer] = true;
                keeper.insert(identity, older);
                let (o, n) = (&drafts[older], &drafts[newer]);
                let default = if n.owner.kind == Kind::HTTPProxy {
                    Status::Valid
                } else {
                    Status::Accepted
                };
                book.add(
                    &n.owner,
                    default,
                    ConditionKind::Warning,
                    Reason::PathTaken,
                    format!(
                        "rule {} is dropped: host {}, path {} and its conditions are already routed by the older rule {}",
                        n.rule.name,
                        n.rule.host.as_deref().unwrap_or("(any)"),
                        describe_path(&n.rule.path),
                        o.rule.name
                    ),
                );
            }
        }
    }
    drafts
        .into_iter()
        .zip(dropped)
        .filter(|(_, d)| !d)
        .map(|(draft, _)| draft)
        .collect()
}

/// What makes two rules the same route: host, path, and conditions in any order (compared through
/// the table types' own order, not their JSON text).
type Identity<'a> = (Option<&'a str>, &'a PathSpec, Vec<&'a ConditionSpec>);

fn identity(draft: &Draft) -> Identity<'_> {
    let mut conditions: Vec<&ConditionSpec> = draft.rule.conditions.iter().collect();
    conditions.sort();
    (draft.rule.host.as_deref(), &draft.rule.path, conditions)
}

/// `prefix /api`, `exact /x`, ...
pub fn describe_path(path: &PathSpec) -> String {
    match path {
        PathSpec::Exact(p) => format!("exact {p}"),
        PathSpec::SegmentPrefix(p) => format!("segment prefix {p}"),
        PathSpec::Prefix(p) => format!("prefix {p}"),
        PathSpec::Regex(p) => format!("regex {p}"),
    }
}
