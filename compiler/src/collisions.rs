//! Host ownership and collisions (ROUTING.md §2, seed 003).
//!
//! Every rule with a host is claimed by a resource: an Ingress claims its own rules, an HTTPProxy
//! root claims the rules of its whole tree. Per host, the oldest contender wins (then the smallest
//! uid; then namespace/name, so it is total). Ingresses naming the same host merge into one
//! contender that competes as its oldest member, unless `--host-collision=winner`. Then, among the
//! surviving rules, two that are identical in host, path and conditions keep only the older one
//! (`PathTaken`); only that rule is dropped, never its whole resource.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use switchyard_table::{ConditionSpec, PathSpec};

use crate::model::{Claiming, Draft, HostCollision};
use crate::objects::{Age, Kind, ResourceKey};
use crate::status::{ConditionKind, Reason, StatusBook};

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

/// A claim held by value: an Ingress rule that names a host and has no paths (NGINX's mergeable
/// "master" Ingress has one) names it all the same (ROUTING.md §2): its Ingress is a member of the
/// host's group, its age counts, and it has no rule there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The host, normalised.
    pub host: String,
    /// The claimant.
    pub key: ResourceKey,
    /// Its age.
    pub age: Age,
}

impl Claim {
    /// The claim as [`resolve`] takes it.
    pub fn borrowed(&self) -> HostClaim<'_> {
        (&self.host, &self.key, &self.age)
    }
}

/// Who won each host: the winning resources (several for merged Ingresses).
pub type HostWinners = BTreeMap<String, BTreeSet<ResourceKey>>;

/// The outcome of one host's contest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contest {
    /// The resources that own the host (several for merged Ingresses).
    pub winners: BTreeSet<ResourceKey>,
    /// The others, each with the name of the winner shown to it (`HostTaken`), in contest order.
    pub losers: Vec<(ResourceKey, String)>,
}

/// A rule dropped as identical to an older one (`PathTaken`), reported on its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathTaken {
    /// The dropped rule's host (`None`: a rule for every host).
    pub host: Option<String>,
    /// The owner of the dropped rule.
    pub owner: ResourceKey,
    /// The (owner, position) of the rule whose arrival dropped it: the order in which one owner's
    /// `PathTaken` conditions are recorded, for rules of Ingresses (whose drafts come in that order;
    /// an Ingress's rule is only ever dropped for another Ingress's: the rules kept on a host are
    /// one contender's, and only Ingresses write rules without a host).
    pub turn: (ResourceKey, usize),
    /// The condition's message.
    pub message: String,
}

/// What host ownership and `PathTaken` decided.
#[derive(Debug)]
pub struct Resolution {
    /// The rules that stay, in the order given.
    pub kept: Vec<Draft>,
    /// Who won each host.
    pub winners: HostWinners,
    /// Each host's contest.
    pub contests: BTreeMap<String, Contest>,
    /// The rules dropped as identical to older ones, in the order they were met.
    pub path_taken: Vec<PathTaken>,
}

/// Decides one host's contest among its claimants (each resource once, with its age, and whether
/// it contends alone: an ingress-nginx server is never merged with Switchyard's Ingresses).
pub fn contest<'k>(
    claimants: impl IntoIterator<Item = (&'k ResourceKey, &'k Age, bool)>,
    mode: HostCollision,
) -> Option<Contest> {
    let mut contenders: Vec<Contender> = Vec::new();
    let mut merged: Option<Contender> = None;
    for (key, age, alone) in claimants {
        let single = Contender {
            members: BTreeSet::from([key.clone()]),
            oldest: age.clone(),
        };
        if mode == HostCollision::Merge && key.kind == Kind::Ingress && !alone {
            match merged.as_mut() {
                None => merged = Some(single),
                Some(group) => {
                    group.members.insert(key.clone());
                    if *age < group.oldest {
                        group.oldest = age.clone();
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
    let winner = iter.next()?;
    let by = winner.oldest.key.display();
    let losers = iter
        .flat_map(|loser| loser.members)
        .map(|member| (member, by.clone()))
        .collect();
    Some(Contest {
        winners: winner.members,
        losers,
    })
}

/// Records that `loser` lost `host` to `by` (`HostTaken`).
pub fn record_host_taken(book: &mut StatusBook, loser: &ResourceKey, host: &str, by: &str) {
    book.error(
        loser,
        loser.kind.host_statuses().host_taken,
        Reason::HostTaken,
        format!("host {host} is taken by {by}"),
    );
}

/// Whether a resource that claimed hosts and won `won` of them routes nothing: it won none and has
/// no rule without a host.
pub fn loses_everything(won: usize, hostless: bool) -> bool {
    won == 0 && !hostless
}

/// Records that every host of `key` is taken (`Rejected`; an HTTPProxy becomes invalid).
pub fn record_all_hosts_taken(book: &mut StatusBook, key: &ResourceKey) {
    let status = key.kind.host_statuses().all_hosts_taken;
    book.error(key, status, Reason::Rejected, "All hosts are taken by other resources");
    book.set(key, status);
}

/// Records one `PathTaken` warning on the dropped rule's owner.
pub fn record_path_taken(book: &mut StatusBook, taken: &PathTaken) {
    book.add(
        &taken.owner,
        taken.owner.kind.host_statuses().path_taken,
        ConditionKind::Warning,
        Reason::PathTaken,
        taken.message.clone(),
    );
}

/// Applies host ownership and `PathTaken`, recording their statuses; returns the rules that stay,
/// who won each host and why. `claims_without_rules` are the hosts claimed by resources without rules.
pub fn resolve(
    drafts: Vec<Draft>,
    claims_without_rules: &[HostClaim<'_>],
    mode: HostCollision,
    book: &mut StatusBook,
) -> Resolution {
    // host → claimant → (age, contends alone)
    let mut claims: BTreeMap<&str, BTreeMap<&ResourceKey, (&Age, bool)>> = BTreeMap::new();
    // The hosts claimed only if nobody contends for them ([`Claiming::IfUnclaimed`]).
    let mut if_unclaimed: BTreeMap<&str, BTreeMap<&ResourceKey, (&Age, bool)>> = BTreeMap::new();
    for (host, key, age) in claims_without_rules {
        claims.entry(host).or_default().insert(key, (age, false));
    }
    let mut hostless: BTreeSet<&ResourceKey> = BTreeSet::new();
    // Claimants of an ingress-nginx server: their processor decides whether they lost everything,
    // as only it knows the other servers they have locations in.
    let mut settled_by_processor: BTreeSet<&ResourceKey> = BTreeSet::new();
    for draft in &drafts {
        if draft.claiming == Claiming::ContendsAlone {
            settled_by_processor.insert(&draft.claimant);
        }
        let Some(host) = draft.rule.host.as_deref() else {
            hostless.insert(&draft.claimant);
            continue;
        };
        let into = match draft.claiming {
            Claiming::IfUnclaimed => &mut if_unclaimed,
            Claiming::Contends | Claiming::ContendsAlone => &mut claims,
        };
        let alone = draft.claiming != Claiming::Contends;
        into.entry(host)
            .or_default()
            .insert(&draft.claimant, (&draft.claimant_age, alone));
    }
    let decide = |claimants: &BTreeMap<&ResourceKey, (&Age, bool)>| {
        contest(claimants.iter().map(|(k, (a, alone))| (*k, *a, *alone)), mode)
    };
    let mut contests: BTreeMap<String, Contest> = claims
        .iter()
        .filter_map(|(host, claimants)| Some(((*host).to_owned(), decide(claimants)?)))
        .collect();
    let mut hosts_won: BTreeMap<&ResourceKey, usize> = BTreeMap::new();
    for (host, contest) in &contests {
        for member in &contest.winners {
            *hosts_won.entry(member).or_default() += 1;
        }
        for (loser, by) in &contest.losers {
            hosts_won.entry(loser).or_default();
            record_host_taken(book, loser, host, by);
        }
    }
    for (key, won) in &hosts_won {
        if !settled_by_processor.contains(key) && loses_everything(*won, hostless.contains(key)) {
            record_all_hosts_taken(book, key);
        }
    }
    // A host nobody contends for goes to the oldest that claims it only then; the others lose it
    // without a word here (their processor says why: `AliasTaken`).
    let mut unclaimed: BTreeSet<String> = BTreeSet::new();
    for (host, claimants) in &if_unclaimed {
        if !contests.contains_key(*host) {
            if let Some(mut won) = decide(claimants) {
                won.losers.clear();
                contests.insert((*host).to_owned(), won);
                unclaimed.insert((*host).to_owned());
            }
        }
    }
    let kept: Vec<Draft> = drafts
        .into_iter()
        .filter(|d| match d.rule.host.as_deref() {
            None => true,
            Some(host) => {
                let won = contests.get(host).is_some_and(|c| c.winners.contains(&d.claimant));
                won && (d.claiming != Claiming::IfUnclaimed || unclaimed.contains(host))
            }
        })
        .collect();
    let (dropped, path_taken) = identical(&kept.iter().collect::<Vec<_>>());
    for taken in &path_taken {
        record_path_taken(book, taken);
    }
    let kept = kept
        .into_iter()
        .zip(dropped)
        .filter(|(_, d)| !d)
        .map(|(draft, _)| draft)
        .collect();
    let winners = contests
        .iter()
        .map(|(host, c)| (host.clone(), c.winners.clone()))
        .collect();
    Resolution {
        kept,
        winners,
        contests,
        path_taken,
    }
}

/// Of rules identical in host, path and conditions, keeps the one of the older resource (then the
/// earlier position): returns which are dropped, and a `PathTaken` for each, in the order met.
pub fn identical(drafts: &[&Draft]) -> (Vec<bool>, Vec<PathTaken>) {
    // Only looked up, never iterated: a hash map's order cannot leak into the table.
    let mut keeper: HashMap<Identity<'_>, usize> = HashMap::with_capacity(drafts.len());
    let mut dropped = vec![false; drafts.len()];
    let mut taken = Vec::new();
    for (i, draft) in drafts.iter().enumerate() {
        let identity = identity(draft);
        match keeper.get(&identity).copied() {
            None => {
                keeper.insert(identity, i);
            }
            Some(k) => {
                let other = drafts[k];
                let (older, newer) = if (&draft.age, draft.position) < (&other.age, other.position) {
                    (i, k)
                } else {
                    (k, i)
                };
                dropped[newer] = true;
                keeper.insert(identity, older);
                let (o, n) = (drafts[older], drafts[newer]);
                taken.push(PathTaken {
                    host: n.rule.host.clone(),
                    owner: n.owner.clone(),
                    turn: (draft.owner.clone(), draft.position),
                    message: format!(
                        "rule {} is dropped: host {}, path {} and its conditions are already routed by the older rule {}",
                        n.rule.name,
                        n.rule.host.as_deref().unwrap_or("(any)"),
                        describe_path(&n.rule.path),
                        o.rule.name
                    ),
                });
            }
        }
    }
    (dropped, taken)
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
