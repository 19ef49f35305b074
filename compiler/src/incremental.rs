//! The incremental compiler: [`Incremental`] keeps what the last compilation made of each Ingress
//! and of each host, so that a change of a few Ingresses in a big cluster compiles only what it
//! touches, with a result byte-identical to [`crate::pipeline::compile`] of the same objects (the
//! test oracle, `compiler/tests/incremental.rs`).
//!
//! An update takes one of three paths ([`Path`]):
//! - **unchanged**: nothing the compiler reads changed; the last result stands.
//! - **incremental**: only Ingresses were added, changed or deleted, and every host they had or
//!   have rules on (and the group of rules without a host) is claimed by Ingresses only. Each
//!   changed Ingress goes through the class check and the Ingress processor alone
//!   ([`crate::processor::admit`], [`IngressProcessor`], as the pipeline runs them); each host it touches has its contest and its `PathTaken`
//!   decided again ([`collisions::contest`], [`collisions::identical`]); the table's rules of
//!   those hosts are taken out and the new ones merged in where the full sort puts them
//!   ([`SortKey`]: the same comparator as [`order::sort`]); and the status of every Ingress with
//!   rules on those hosts is recorded again from its processor's entry and the hosts' outcomes,
//!   in the order the full pipeline records them. The generation hash is folded again from the
//!   kept per-rule hashes ([`order::generation_of`]).
//!
//!   With ingress-nginx's Ingresses served (ROUTING.md §7, `--ingress-nginx-class`), a change of
//!   only ingress-nginx Ingresses is incremental too, by *server*: the hosts their servers had or
//!   have, and (for a change of `spec.tls`) the hosts their certificates cover, are closed over
//!   the Ingresses of those hosts and the Ingresses whose certificates cover them (a server spans
//!   Ingresses of every namespace, one annotation turns the whole host's regex mode on or off, and
//!   a TLS section elsewhere turns its HTTPS redirects on); the ingress-nginx processor runs again
//!   over exactly those Ingresses ([`IngressNginxServers`], as the pipeline runs it, so each of
//!   those servers is whole), and the servers' rules are spliced in in the server's own order
//!   (the places the general order gives its host, [`order::placement`]). It stays sound only
//!   where a server is its host's one contender: the hosts must be claimed by nothing else, and
//!   none of those Ingresses may have a `server-alias` or `from-to-www-redirect` (hosts claimed
//!   only if unclaimed) or be on the catch-all server.
//! - **full**: anything whose reach is global or hard to bound: IngressClasses (class
//!   eligibility), Services (backend ports), HTTPProxies (inclusion), the NGINX kinds, an Ingress
//!   change on a host another kind also claims, an ingress-nginx change outside what the paragraph
//!   above allows ([`Why`]). Then the pipeline's stages run over everything, and what the
//!   incremental path needs is kept from their intermediate results.
//!
//! The options are fixed for an [`Incremental`]'s life: new options, a new compiler.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::networking::v1::Ingress;
use switchyard_table::format::MetricsFold;
use switchyard_table::{RuleSpec, TableSpec};

use crate::class::Classes;
use crate::collisions::{self, Claim, Contest, PathTaken};
use crate::ingress::IngressProcessor;
use crate::ingress_nginx::processor::IngressNginxServers;
use crate::insert::insert_at;
use crate::l4::L4Routes;
use crate::model::{normalize_host, Claiming, CompileError, Draft, HostOrder, Options};
use crate::objects::secret::Secret;
use crate::objects::{key_of, EachKind, Kind, Object, Objects, ResourceKey};
use crate::order::{self, Ages, SortKey};
use crate::pipeline;
use crate::processor::{admit, ingress_nginx_split, Ignored, Inputs, Processor};
use crate::services::ServicePorts;
use crate::status::{key_order, report_order, Entry, ResourceStatus, StatusBook};

/// The rules of one host (`Some(host)`), or the rules without a host (`None`).
type Group = Option<String>;

/// Which path an update took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// Nothing the compiler reads changed: the last result stands.
    Unchanged,
    /// Only Ingresses on hosts of Ingresses only changed (or only ingress-nginx Ingresses on hosts
    /// of their servers only): those were compiled again.
    Incremental,
    /// Everything was compiled again, for this reason.
    Full(Why),
}

impl Path {
    /// `unchanged`, `incremental` or `full`: the log's word and the metric's label.
    pub fn as_str(self) -> &'static str {
        match self {
            Path::Unchanged => "unchanged",
            Path::Incremental => "incremental",
            Path::Full(_) => "full",
        }
    }
}

/// Why an update compiled everything again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The first compilation.
    First,
    /// IngressClasses changed: class eligibility of every resource.
    IngressClasses,
    /// Services changed: the backend ports of every resource.
    Services,
    /// Secrets holding basic authentication's users changed (a certificate's change reaches the
    /// HTTPS listener without compiling the rules).
    Secrets,
    /// EndpointSlices changed: the clusters' endpoints, never a rule.
    Endpoints,
    /// HTTPProxies, VirtualServers, VirtualServerRoutes, TransportServers or GlobalConfigurations
    /// changed: inclusion and NGINX's rules reach across resources.
    OtherKinds,
    /// A changed Ingress has or had rules on a host (or among the rules without a host) that
    /// another kind also claims, or that Switchyard's Ingresses and an ingress-nginx server both
    /// claim.
    SharedHost,
    /// An ingress-nginx Ingress (ROUTING.md §7) changed in a way the incremental path does not
    /// bound: it moved between ingress-nginx's class and Switchyard's (or changed with one of
    /// Switchyard's in the same update), or one of the servers it touches has a `server-alias`
    /// or `from-to-www-redirect` (hosts claimed only if unclaimed), or is the catch-all server.
    IngressNginx,
}

impl Why {
    /// The reason in a few words, for the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Why::First => "first compilation",
            Why::IngressClasses => "IngressClasses changed",
            Why::Services => "Services changed",
            Why::Secrets => "Secrets changed",
            Why::Endpoints => "EndpointSlices changed",
            Why::OtherKinds => "HTTPProxy or NGINX objects changed",
            Why::SharedHost => "an Ingress changed on a host another kind claims",
            Why::IngressNginx => "an ingress-nginx Ingress changed beyond its own servers",
        }
    }
}

/// What one update did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Update {
    /// The path taken.
    pub path: Path,
    /// Ingresses compiled again or removed (every Ingress on the full path).
    pub objects: usize,
    /// Hosts (counting the rules without a host as one) decided again (every host on the full path).
    pub hosts: usize,
}

/// The compiler that keeps its last result and compiles only what changed since.
pub struct Incremental {
    options: Options,
    state: Option<State>,
}

/// The last result of an [`Incremental`]: what [`pipeline::compile`] gives for the same objects,
/// its table shared ([`pipeline::Compiled`]'s fields, borrowed).
#[derive(Debug, Clone, Copy)]
pub struct Latest<'a> {
    /// The table, in priority order, with its generation hash. Shared with whoever keeps it (the
    /// sidecar pushes this `Arc`): the next update that changes it works on a copy only while
    /// someone else still holds this one.
    pub table: &'a Arc<TableSpec>,
    /// What the TransportServers route at L4.
    pub l4: &'a L4Routes,
    /// The status report.
    pub statuses: &'a [ResourceStatus],
}

/// What the last compilation made, kept for the next.
struct State {
    table: Arc<TableSpec>,
    l4: L4Routes,
    statuses: Vec<ResourceStatus>,
    /// Every object but the Ingresses, as the cache stage left them (sorted, deduplicated).
    others: Objects,
    classes: Classes,
    services: ServicePorts,
    ingresses: BTreeMap<ResourceKey, Memo>,
    groups: BTreeMap<Group, GroupState>,
    /// The groups another kind than Ingress claims or has rules in.
    foreign: BTreeSet<Group>,
    /// One per rule of the table, in table order.
    slots: Vec<Slot>,
    /// A number for each group, so that a slot says its group without a string.
    group_ids: BTreeMap<Group, usize>,
    /// [`order::header_hash`] of the table.
    header: u64,
    /// `--metrics-max-resources`: the table's fold follows its rules.
    metrics_limit: usize,
    /// ingress-nginx's Ingresses and servers (empty while §7 is off).
    nginx: NginxState,
}

/// What the last compilation made of ingress-nginx's Ingresses (ROUTING.md §7), kept for the
/// next: each Ingress's servers and certificates, and the index from a host to the Ingresses of
/// its server and to the Ingresses whose certificates cover it.
#[derive(Default)]
struct NginxState {
    ingresses: BTreeMap<ResourceKey, NginxMemo>,
    /// Each server's host (`None`: the catch-all server): its Ingresses and its `PathTaken`.
    servers: BTreeMap<Group, NginxServer>,
    /// A certificate's host (as [`NginxMemo::certified`] holds it) → the Ingresses listing it.
    certifiers: BTreeMap<String, BTreeSet<ResourceKey>>,
    /// The hosts some server claims only if unclaimed (`server-alias`, `from-to-www-redirect`).
    if_unclaimed: BTreeSet<Group>,
}

/// One ingress-nginx Ingress.
struct NginxMemo {
    /// The Ingress as given.
    object: Arc<Ingress>,
    /// The servers it is in (its rules' hosts; `None`: the catch-all server, for a default backend
    /// without rules). A canary's too: which servers it reaches is the processor's to say.
    hosts: BTreeSet<Group>,
    /// The hosts its `spec.tls` certifies (ingress-nginx's sense, §7.7.6; `*.x` for a wildcard).
    certified: BTreeSet<String>,
    /// Whether it has an annotation that claims hosts beyond its own (`server-alias`,
    /// `from-to-www-redirect`), or reaches the L4 routes (`ssl-passthrough`, ROUTING.md §8.4: the
    /// incremental path updates the table only).
    reaches_out: bool,
    /// Its status as the class split and the processor left it (before host ownership).
    entry: Option<Entry>,
}

impl NginxMemo {
    fn new(object: Arc<Ingress>, options: &Options, entry: Option<Entry>) -> NginxMemo {
        let spec = object.spec.as_ref();
        let rules = spec.and_then(|s| s.rules.as_deref()).unwrap_or_default();
        let mut hosts: BTreeSet<Group> = rules
            .iter()
            .map(|r| r.host.as_deref().filter(|h| !h.is_empty()).map(normalize_host))
            .collect();
        if rules.is_empty() && spec.and_then(|s| s.default_backend.as_ref()).is_some() {
            hosts.insert(None);
        }
        // As the processor reads certificates: every rule host of an Ingress with a TLS section,
        // and every host the section lists.
        let mut certified = BTreeSet::new();
        let tls = spec.and_then(|s| s.tls.as_deref()).unwrap_or_default();
        if !tls.is_empty() {
            let rule_hosts = rules.iter().filter_map(|r| r.host.as_deref());
            let tls_hosts = tls.iter().flat_map(|t| t.hosts.iter().flatten()).map(String::as_str);
            certified.extend(
                rule_hosts
                    .chain(tls_hosts)
                    .filter(|h| !h.is_empty())
                    .map(normalize_host),
            );
        }
        let prefix = &options.ingress_nginx.annotations_prefix;
        let reaches_out = object.metadata.annotations.as_ref().is_some_and(|a| {
            ["server-alias", "from-to-www-redirect", "ssl-passthrough"]
                .iter()
                .any(|name| a.contains_key(&format!("{prefix}/{name}")))
        });
        NginxMemo {
            object,
            hosts,
            certified,
            reaches_out,
            entry,
        }
    }
}

/// One ingress-nginx server.
#[derive(Default)]
struct NginxServer {
    members: BTreeSet<ResourceKey>,
    /// Its rules dropped as identical to others of it, in the order met.
    path_taken: Vec<PathTaken>,
}

/// Whether a certificate's host (`certified`, maybe `*.x`) covers `host`, as the processor reads
/// it: the same host, or a wildcard over `host`'s parent.
fn covers(certified: &str, host: &str) -> bool {
    certified == host
        || host
            .split_once('.')
            .is_some_and(|(_, parent)| certified.strip_prefix("*.") == Some(parent))
}

/// Whether an Ingress is ingress-nginx's (ROUTING.md §7.1), as [`ingress_nginx_split`] decides.
fn is_ingress_nginx(classes: &Classes, ingress: &Ingress) -> bool {
    let class_name = ingress.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref());
    classes.ingress_nginx(&ingress.metadata, class_name).is_some()
}

/// What the Ingress processor made of one Ingress. Not its drafts: those are a second copy of
/// its rules (most of them in the table already), about 1 KB each; a group decided again takes
/// them from the processor again, for the Ingresses with rules there ([`State::drafts_of`]).
struct Memo {
    /// The Ingress as given: the same `Arc` as the caller's, no copy.
    object: Arc<Ingress>,
    /// The hosts its rules without paths claim.
    claims: Vec<Claim>,
    /// Its status as the processor left it (before host ownership).
    entry: Option<Entry>,
    /// The groups its drafts and claims are in.
    groups: BTreeSet<Group>,
}

impl Memo {
    fn new<'d>(
        object: Arc<Ingress>,
        drafts: impl IntoIterator<Item = &'d Draft>,
        claims: Vec<Claim>,
        entry: Option<Entry>,
    ) -> Memo {
        let hosts = claims.iter().map(|c| Some(c.host.clone()));
        let groups = drafts.into_iter().map(|d| d.rule.host.clone()).chain(hosts).collect();
        Memo {
            object,
            claims,
            entry,
            groups,
        }
    }
}

/// The drafts of the Ingresses with rules in the groups decided again, by Ingress.
type Drafts = BTreeMap<ResourceKey, Vec<Draft>>;

/// One host's outcome.
#[derive(Debug, Default)]
struct GroupState {
    /// The Ingresses with rules here.
    claimants: BTreeSet<ResourceKey>,
    /// Who won (none for the rules without a host).
    contest: Option<Contest>,
    /// The rules dropped as identical to older ones.
    path_taken: Vec<PathTaken>,
}

/// A table slot: the key of the rule the general order puts there (NGINX's reordering may place
/// another rule of the same host in it), the hash of the rule it holds, and its group's number.
#[derive(Debug)]
struct Slot {
    key: SortKey,
    hash: u64,
    group: usize,
}

/// The number of `group`, given on first sight.
fn group_id(ids: &mut BTreeMap<Group, usize>, group: &Group) -> usize {
    let next = ids.len();
    *ids.entry(group.clone()).or_insert(next)
}

/// What an update would change, before it is applied.
enum Plan {
    Nothing,
    Apply {
        /// The new memo of each changed Ingress; `None` for a deleted one.
        memos: BTreeMap<ResourceKey, Option<Memo>>,
        /// The drafts of the changed Ingresses.
        drafts: Drafts,
        affected: BTreeSet<Group>,
    },
    ApplyNginx(NginxPlan),
    Full(Why),
}

/// A change of ingress-nginx Ingresses only, compiled: what [`State::apply_nginx`] applies.
struct NginxPlan {
    /// The new memo of each changed Ingress (its entry filled in); `None` for a deleted one.
    memos: BTreeMap<ResourceKey, Option<NginxMemo>>,
    /// The servers decided again.
    hosts: BTreeSet<Group>,
    /// Their rules, each with the key of the table slot it takes.
    fresh: Vec<(SortKey, RuleSpec)>,
    /// Their `PathTaken`.
    path_taken: BTreeMap<Group, Vec<PathTaken>>,
    /// The status entry of every Ingress the processor ran over.
    entries: BTreeMap<ResourceKey, Option<Entry>>,
}

impl Incremental {
    /// A compiler with `options` that has compiled nothing yet.
    pub fn new(options: Options) -> Incremental {
        Incremental { options, state: None }
    }

    /// Its options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The last result (`None` before the first successful update).
    pub fn compiled(&self) -> Option<Latest<'_>> {
        self.state.as_ref().map(|s| Latest {
            table: &s.table,
            l4: &s.l4,
            statuses: &s.statuses,
        })
    }

    /// The content hash of each rule of the last result's table, in table order
    /// ([`order::rule_hash`], what its generation folds): two rules with the same name and hash are
    /// the same rule, which lets a caller compare tables without comparing 100,000 rules.
    pub fn rule_hashes(&self) -> Vec<u64> {
        self.state
            .as_ref()
            .map(|s| s.slots.iter().map(|slot| slot.hash).collect())
            .unwrap_or_default()
    }

    /// Compiles `objects`, incrementally where that is sound; afterwards [`Incremental::compiled`]
    /// is what [`pipeline::compile`] gives for `objects`. On an error the next update compiles
    /// everything.
    pub fn update(&mut self, objects: &Objects) -> Result<Update, CompileError> {
        let ingresses = pipeline::identities(&objects.ingresses)?;
        let why = match &mut self.state {
            None => Why::First,
            Some(state) => match state.other_change(objects)? {
                Some(why) => why,
                None => match state.plan(&ingresses, &self.options) {
                    Plan::Nothing => {
                        return Ok(Update {
                            path: Path::Unchanged,
                            objects: 0,
                            hosts: 0,
                        })
                    }
                    Plan::Full(why) => why,
                    Plan::Apply {
                        memos,
                        drafts,
                        affected,
                    } => {
                        let update = state.apply(memos, drafts, affected, &self.options);
                        if update.is_err() {
                            self.state = None;
                        }
                        return update;
                    }
                    Plan::ApplyNginx(plan) => {
                        let update = state.apply_nginx(plan);
                        if update.is_err() {
                            self.state = None;
                        }
                        return update;
                    }
                },
            },
        };
        self.state = None;
        let state = State::full(objects, &self.options)?;
        let update = Update {
            path: Path::Full(why),
            objects: state.ingresses.len() + state.nginx.ingresses.len(),
            hosts: state.groups.len() + state.nginx.servers.len(),
        };
        self.state = Some(state);
        Ok(update)
    }
}

/// Whether the compiler reads the same from two versions of an object. The same object (one `Arc`,
/// which a source hands again while the object did not change) settles it at once, and so does the
/// same `resourceVersion`: the API server changes it with every change, and the folder source
/// gives each object one made of its file's content hash. Else the spec and the metadata the
/// compiler reads (identity, uid, creation time, annotations) are compared, so that a status
/// written back or a label changed is no change.
fn unchanged<T: Object>(now: &Arc<T>, was: &Arc<T>) -> bool {
    if Arc::ptr_eq(now, was) {
        return true;
    }
    let (a, b) = (now.meta(), was.meta());
    if a.name != b.name || a.namespace != b.namespace {
        return false;
    }
    let same_version = a.resource_version.is_some() && a.resource_version == b.resource_version;
    same_version
        || (a.uid == b.uid
            && a.creation_timestamp == b.creation_timestamp
            && a.annotations == b.annotations
            && now.same_spec(was))
}

/// Whether `items`, through the cache stage, are `cached` ([`unchanged`] one by one).
fn same<T: Object>(items: &[Arc<T>], cached: &[Arc<T>]) -> Result<bool, CompileError> {
    let now = pipeline::identities(items)?;
    Ok(now.len() == cached.len() && now.values().zip(cached).all(|(a, b)| unchanged(*a, b)))
}

impl State {
    /// Everything compiled by the pipeline's stages, keeping what the incremental path needs.
    fn full(objects: &Objects, options: &Options) -> Result<State, CompileError> {
        let mut cached = pipeline::cache(objects)?;
        let mut book = StatusBook::default();
        let classes = Classes::new(&cached.ingress_classes, options, &mut book);
        let services = ServicePorts::new(&cached.services);
        let processed = pipeline::process(&cached, &classes, &services, options, book);
        let mut drafts: BTreeMap<ResourceKey, Vec<&Draft>> = BTreeMap::new();
        let mut foreign: BTreeSet<Group> = BTreeSet::new();
        let mut nginx = NginxState::default();
        for draft in &processed.drafts {
            if let HostOrder::IngressNginx(_) = draft.order {
                // ingress-nginx's: kept by server, below.
                if draft.claiming == Claiming::IfUnclaimed {
                    nginx.if_unclaimed.insert(draft.rule.host.clone());
                }
            } else if draft.claimant.kind == Kind::Ingress {
                drafts.entry(draft.owner.clone()).or_default().push(draft);
            } else {
                foreign.insert(draft.rule.host.clone());
            }
        }
        // Hosts claimed without rules: an Ingress's are its memo's, any other kind's are foreign.
        let mut claims: BTreeMap<ResourceKey, Vec<Claim>> = BTreeMap::new();
        for claim in &processed.claims {
            if claim.key.kind == Kind::Ingress {
                claims.entry(claim.key.clone()).or_default().push(claim.clone());
            } else {
                foreign.insert(Some(claim.host.clone()));
            }
        }
        let mut ingresses = BTreeMap::new();
        for object in std::mem::take(&mut cached.ingresses) {
            let key = key_of(Kind::Ingress, &object.metadata);
            let entry = processed.book.recorded(&key).cloned();
            if !classes.ingress_nginx_off() && is_ingress_nginx(&classes, &object) {
                nginx.insert(key, NginxMemo::new(object, options, entry));
                continue;
            }
            let (drafts, claims) = (
                drafts.remove(&key).unwrap_or_default(),
                claims.remove(&key).unwrap_or_default(),
            );
            let memo = Memo::new(object, drafts, claims, entry);
            ingresses.insert(key, memo);
        }
        drop(drafts);
        let settled = processed.settle(options);
        let mut groups: BTreeMap<Group, GroupState> = BTreeMap::new();
        for (key, memo) in &ingresses {
            for group in &memo.groups {
                groups.entry(group.clone()).or_default().claimants.insert(key.clone());
            }
        }
        let resolution = settled.resolution;
        for (host, contest) in resolution.contests {
            let host = Some(host);
            // A server's own host is the ingress-nginx state's, unless Ingresses of ours claim it too.
            if nginx.servers.contains_key(&host) && !groups.contains_key(&host) {
                continue;
            }
            groups.entry(host).or_default().contest = Some(contest);
        }
        for taken in resolution.path_taken {
            match nginx.ingresses.contains_key(&taken.owner) {
                true => nginx
                    .servers
                    .entry(taken.host.clone())
                    .or_default()
                    .path_taken
                    .push(taken),
                false => groups.entry(taken.host.clone()).or_default().path_taken.push(taken),
            }
        }
        let kept = resolution.kept;
        let placement = order::placement(&kept);
        let mut ages = Ages::default();
        let keys: Vec<SortKey> = placement.general.iter().map(|&i| ages.key(&kept[i])).collect();
        let mut kept: Vec<Option<Draft>> = kept.into_iter().map(Some).collect();
        // Its length known up front: collecting through `filter_map` would grow it step by step,
        // to a third more than it holds.
        let mut rules: Vec<RuleSpec> = Vec::with_capacity(placement.placed.len());
        rules.extend(placement.placed.iter().filter_map(|&i| kept[i].take()).map(|d| d.rule));
        let mut slots = Vec::with_capacity(rules.len());
        let mut group_ids = BTreeMap::new();
        for (key, rule) in keys.into_iter().zip(&rules) {
            slots.push(Slot {
                key,
                hash: order::rule_hash(rule)?,
                group: group_id(&mut group_ids, &rule.host),
            });
        }
        let mut table = pipeline::header(options);
        table.metrics_fold = MetricsFold::of(&rules, options.metrics_max_resources);
        let header = order::header_hash(&table)?;
        table.generation = order::generation_of(header, slots.iter().map(|s| s.hash));
        table.rules = rules;
        Ok(State {
            table: Arc::new(table),
            l4: settled.l4,
            statuses: settled.statuses,
            others: cached,
            classes,
            services,
            ingresses,
            groups,
            foreign,
            slots,
            group_ids,
            header,
            metrics_limit: options.metrics_max_resources,
            nginx,
        })
    }

    /// Why the objects other than Ingresses call for a full compilation, if they changed: every
    /// kind is compared ([`Objects::each_kind`]), so a kind added to [`Objects`] is never left
    /// stale here.
    fn other_change(&self, objects: &Objects) -> Result<Option<Why>, CompileError> {
        struct Compare<'o> {
            now: &'o Objects,
            was: &'o Objects,
            changed: Vec<Why>,
            failed: Option<CompileError>,
        }
        impl EachKind for Compare<'_> {
            fn kind<T: Object>(&mut self) {
                let why = match T::KIND {
                    // Compared one by one by `plan`.
                    Kind::Ingress => return,
                    Kind::IngressClass => Why::IngressClasses,
                    Kind::Service => Why::Services,
                    Kind::Secret => Why::Secrets,
                    Kind::EndpointSlice => Why::Endpoints,
                    Kind::HTTPProxy
                    | Kind::VirtualServer
                    | Kind::VirtualServerRoute
                    | Kind::TransportServer
                    | Kind::GlobalConfiguration
                    | Kind::Policy => Why::OtherKinds,
                };
                if self.failed.is_some() || self.changed.contains(&why) {
                    return;
                }
                match same(T::of(self.now), T::of(self.was)) {
                    Ok(true) => {}
                    Ok(false) => self.changed.push(why),
                    Err(error) => self.failed = Some(error),
                }
            }
        }
        let mut compare = Compare {
            now: objects,
            was: &self.others,
            changed: Vec::new(),
            failed: None,
        };
        Objects::each_kind(&mut compare);
        if let Some(error) = compare.failed {
            return Err(error);
        }
        // The first by precedence: class eligibility, then backend ports, then the rest.
        let first = [Why::IngressClasses, Why::Services, Why::OtherKinds]
            .into_iter()
            .find(|why| compare.changed.contains(why));
        if first.is_some() || !compare.changed.contains(&Why::Secrets) {
            return Ok(first);
        }
        // A certificate's change reaches the listener without the rules; a basic
        // authentication's users are in the rules.
        let credentials = |objects: &Objects| -> Vec<Arc<Secret>> {
            objects
                .secrets
                .iter()
                .filter(|s| s.holds_credentials())
                .cloned()
                .collect()
        };
        Ok((!same(&credentials(objects), &credentials(&self.others))?).then_some(Why::Secrets))
    }

    /// Which Ingresses changed, what the processor makes of them now, and which hosts that touches.
    fn plan(&self, ingresses: &BTreeMap<ResourceKey, &Arc<Ingress>>, options: &Options) -> Plan {
        // Each changed Ingress, with its version now (`None`: deleted).
        let mut changed: BTreeMap<&ResourceKey, Option<&Arc<Ingress>>> = BTreeMap::new();
        for (key, &object) in ingresses {
            let was = match self.ingresses.get(key) {
                Some(memo) => Some(&memo.object),
                None => self.nginx.ingresses.get(key).map(|memo| &memo.object),
            };
            if was.is_none_or(|was| !unchanged(object, was)) {
                changed.insert(key, Some(object));
            }
        }
        let known = self.ingresses.keys().chain(self.nginx.ingresses.keys());
        for key in known.filter(|key| !ingresses.contains_key(*key)) {
            changed.insert(key, None);
        }
        if changed.is_empty() {
            return Plan::Nothing;
        }
        // Whether ingress-nginx's Ingresses, Switchyard's (ours or ignored), or both changed.
        let nginx_on = !self.classes.ingress_nginx_off();
        let (mut nginx, mut ours) = (false, false);
        for (key, now) in &changed {
            nginx |= self.nginx.ingresses.contains_key(*key);
            ours |= self.ingresses.contains_key(*key);
            if let Some(now) = now {
                match nginx_on && is_ingress_nginx(&self.classes, now) {
                    true => nginx = true,
                    false => ours = true,
                }
            }
        }
        match (nginx, ours) {
            (true, true) => Plan::Full(Why::IngressNginx),
            (true, false) => self.plan_nginx(&changed, options),
            (false, _) => self.plan_ours(&changed, options),
        }
    }

    /// [`State::plan`] for a change of Switchyard's Ingresses only.
    fn plan_ours(&self, changed: &BTreeMap<&ResourceKey, Option<&Arc<Ingress>>>, options: &Options) -> Plan {
        let mut drafts = Drafts::new();
        let mut memos: BTreeMap<ResourceKey, Option<Memo>> = BTreeMap::new();
        for (&key, now) in changed {
            let memo = now.map(|object| {
                let (memo, its) = self.process(key, object, options);
                drafts.insert(key.clone(), its);
                memo
            });
            memos.insert(key.clone(), memo);
        }
        let mut affected = BTreeSet::new();
        for (key, memo) in &memos {
            let before = self.ingresses.get(key).map(|m| &m.groups);
            affected.extend(
                before
                    .into_iter()
                    .chain(memo.as_ref().map(|m| &m.groups))
                    .flatten()
                    .cloned(),
            );
        }
        // A host of another kind, or of an ingress-nginx server (its own, or one it claims if
        // unclaimed): the contest there is not ours alone.
        let shared = |group: &Group| {
            self.foreign.contains(group)
                || self.nginx.servers.contains_key(group)
                || self.nginx.if_unclaimed.contains(group)
        };
        if affected.iter().any(shared) {
            return Plan::Full(Why::SharedHost);
        }
        Plan::Apply {
            memos,
            drafts,
            affected,
        }
    }

    /// [`State::plan`] for a change of ingress-nginx's Ingresses only: the servers it touches,
    /// closed over the Ingresses they hold and the certificates that cover them, compiled again by
    /// the ingress-nginx processor over exactly those Ingresses.
    fn plan_nginx(&self, changed: &BTreeMap<&ResourceKey, Option<&Arc<Ingress>>>, options: &Options) -> Plan {
        let memos: BTreeMap<ResourceKey, Option<NginxMemo>> = changed
            .iter()
            .map(|(&key, now)| (key.clone(), now.map(|o| NginxMemo::new(o.clone(), options, None))))
            .collect();
        // The memo of an Ingress now.
        let memo_now = |key: &ResourceKey| match memos.get(key) {
            Some(memo) => memo.as_ref(),
            None => self.nginx.ingresses.get(key),
        };
        let olds = memos.keys().filter_map(|key| self.nginx.ingresses.get(key));
        let news = memos.values().flatten();
        let mut hosts: BTreeSet<Group> = BTreeSet::new();
        let mut certified: BTreeSet<&String> = BTreeSet::new();
        for memo in olds.chain(news) {
            if memo.reaches_out {
                return Plan::Full(Why::IngressNginx);
            }
            hosts.extend(memo.hosts.iter().cloned());
            certified.extend(&memo.certified);
        }
        // The servers whose certificate the change may turn on or off (the changed Ingresses' own
        // servers are in already).
        for certified in certified {
            match certified.starts_with("*.") {
                false => {
                    let host = Some(certified.clone());
                    if self.nginx.servers.contains_key(&host) {
                        hosts.insert(host);
                    }
                }
                true => {
                    let servers = self.nginx.servers.keys();
                    let covered = servers.filter(|h| h.as_deref().is_some_and(|h| covers(certified, h)));
                    hosts.extend(covered.cloned().collect::<Vec<_>>());
                }
            }
        }
        // The Ingresses of those servers and those whose certificates cover them, then their own
        // servers, until nothing is added: each server then holds all of its Ingresses, and each
        // certificate that covers it.
        let mut run: BTreeSet<ResourceKey> = memos
            .iter()
            .filter(|(_, memo)| memo.is_some())
            .map(|(key, _)| key.clone())
            .collect();
        let mut todo: Vec<Group> = std::mem::take(&mut hosts).into_iter().collect();
        while let Some(host) = todo.pop() {
            let Some(name) = host.as_deref() else {
                // The catch-all server shares the rules without a host with Switchyard's Ingresses.
                return Plan::Full(Why::IngressNginx);
            };
            if !hosts.insert(host.clone()) {
                continue;
            }
            let members = self.nginx.servers.get(&host).into_iter().flat_map(|s| &s.members);
            let mut wildcard = name.split_once('.').map(|(_, parent)| format!("*.{parent}"));
            let certifiers = [Some(name.to_owned()), wildcard.take()]
                .into_iter()
                .flatten()
                .filter_map(|c| self.nginx.certifiers.get(&c))
                .flatten();
            let mut found: Vec<&ResourceKey> = members.chain(certifiers).collect();
            // The changed Ingresses' own servers and certificates, as they are now.
            for (key, memo) in &memos {
                if memo
                    .as_ref()
                    .is_some_and(|m| m.hosts.contains(&host) || m.certified.iter().any(|c| covers(c, name)))
                {
                    found.push(key);
                }
            }
            for key in found {
                let Some(memo) = memo_now(key) else { continue };
                if run.insert(key.clone()) {
                    if memo.reaches_out {
                        return Plan::Full(Why::IngressNginx);
                    }
                    todo.extend(memo.hosts.iter().filter(|h| !hosts.contains(*h)).cloned());
                }
            }
        }
        // Each of those hosts must be its server's alone.
        let shared = |group: &Group| {
            self.foreign.contains(group)
                || self.nginx.if_unclaimed.contains(group)
                || self.groups.get(group).is_some_and(|g| !g.claimants.is_empty())
        };
        if hosts.iter().any(shared) {
            return Plan::Full(Why::SharedHost);
        }
        let objects: Vec<Arc<Ingress>> = run
            .iter()
            .filter_map(|key| memo_now(key).map(|m| m.object.clone()))
            .collect();
        match self.compile_servers(&objects, &hosts, options) {
            Some((fresh, path_taken, mut book)) => {
                let entries = run.iter().map(|key| (key.clone(), book.take(key))).collect();
                Plan::ApplyNginx(NginxPlan {
                    memos,
                    hosts,
                    fresh,
                    path_taken,
                    entries,
                })
            }
            None => Plan::Full(Why::IngressNginx),
        }
    }

    /// The ingress-nginx processor over `objects` (whole servers: every Ingress of each), as the
    /// pipeline runs it; then each server of `hosts` decided as the host contest and `PathTaken`
    /// decide it, when it is its host's one contender: its rules with the table slots they take
    /// (the places the general order gives the host, in the server's order), its `PathTaken`, and
    /// the status book. `None` when a rule lands outside `hosts` or a host has another contender.
    #[allow(clippy::type_complexity)]
    fn compile_servers(
        &self,
        objects: &[Arc<Ingress>],
        hosts: &BTreeSet<Group>,
        options: &Options,
    ) -> Option<(Vec<(SortKey, RuleSpec)>, BTreeMap<Group, Vec<PathTaken>>, StatusBook)> {
        let mut book = StatusBook::default();
        let (ingress_nginx, others) = ingress_nginx_split(objects, &self.classes, &mut book);
        if !others.is_empty() {
            return None;
        }
        // The other objects as last compiled: the processor reads their Secrets (basic
        // authentication's users; a change of them compiles everything).
        let output = IngressNginxServers.run(
            &self.others,
            Inputs {
                classes: &self.classes,
                services: &self.services,
                options,
                ignored: &Ignored::new(),
                book: &mut book,
                ingress_nginx: &ingress_nginx,
            },
        );
        if !output.claims.is_empty() {
            return None;
        }
        let mut by_host: BTreeMap<Group, Vec<Draft>> = hosts.iter().map(|h| (h.clone(), Vec::new())).collect();
        for draft in output.drafts {
            if draft.claiming != Claiming::ContendsAlone {
                return None;
            }
            by_host.get_mut(&draft.rule.host)?.push(draft);
        }
        let mut fresh = Vec::new();
        let mut path_taken = BTreeMap::new();
        let mut ages = Ages::default();
        for (host, drafts) in by_host {
            if drafts.iter().any(|d| d.claimant != drafts[0].claimant) {
                return None;
            }
            let (dropped, taken) = collisions::identical(&drafts.iter().collect::<Vec<_>>());
            path_taken.insert(host, taken);
            let mut kept: Vec<(SortKey, Draft)> = drafts
                .into_iter()
                .zip(dropped)
                .filter(|(_, dropped)| !dropped)
                .map(|(d, _)| (ages.key(&d), d))
                .collect();
            // As [`order::placement`] places a host with its own order: the host's places in the
            // general order, filled in the server's order.
            kept.sort_by(|a, b| a.0.cmp(&b.0));
            let keys: Vec<SortKey> = kept.iter().map(|(key, _)| key.clone()).collect();
            let mut placed: Vec<Draft> = kept.into_iter().map(|(_, d)| d).collect();
            placed.sort_by(|a, b| (&a.order, &a.rule.name).cmp(&(&b.order, &b.rule.name)));
            fresh.extend(keys.into_iter().zip(placed.into_iter().map(|d| d.rule)));
        }
        Some((fresh, path_taken, book))
    }

    /// One Ingress through the pipeline's class check and the Ingress processor, alone: its memo
    /// and its drafts.
    fn process(&self, key: &ResourceKey, object: &Arc<Ingress>, options: &Options) -> (Memo, Vec<Draft>) {
        let mut book = StatusBook::default();
        let mut ignored = Ignored::new();
        let ours = admit(std::slice::from_ref(object), &self.classes, &mut book, &mut ignored);
        let processed = IngressProcessor::new(Inputs {
            classes: &self.classes,
            services: &self.services,
            options,
            ignored: &ignored,
            book: &mut book,
            ingress_nginx: &[],
        })
        .run(&ours);
        let memo = Memo::new(object.clone(), &processed.drafts, processed.claims, book.take(key));
        (memo, processed.drafts)
    }

    /// `drafts` completed with the drafts of every other Ingress with rules in `groups`, from the
    /// processor again (the classes, Services and options are those it ran with before: any change
    /// of them compiles everything).
    fn drafts_of(&self, groups: &BTreeSet<Group>, mut drafts: Drafts, options: &Options) -> Drafts {
        let mut claimants = BTreeSet::new();
        self.claimants_of(groups, &mut claimants);
        for key in claimants {
            if drafts.contains_key(&key) {
                continue;
            }
            if let Some(memo) = self.ingresses.get(&key) {
                let (_, its) = self.process(&key, &memo.object, options);
                drafts.insert(key, its);
            }
        }
        drafts
    }

    /// Applies the new memos: the affected hosts decided again, their rules spliced into the
    /// table, the statuses of the Ingresses on them recorded again.
    fn apply(
        &mut self,
        memos: BTreeMap<ResourceKey, Option<Memo>>,
        drafts: Drafts,
        affected: BTreeSet<Group>,
        options: &Options,
    ) -> Result<Update, CompileError> {
        let changed = memos.len();
        let mut touched: BTreeSet<ResourceKey> = memos.keys().cloned().collect();
        self.claimants_of(&affected, &mut touched);
        for (key, memo) in memos {
            if let Some(old) = self.ingresses.remove(&key) {
                for group in &old.groups {
                    if let Some(state) = self.groups.get_mut(group) {
                        state.claimants.remove(&key);
                    }
                }
            }
            if let Some(memo) = memo {
                for group in &memo.groups {
                    self.groups
                        .entry(group.clone())
                        .or_default()
                        .claimants
                        .insert(key.clone());
                }
                self.ingresses.insert(key, memo);
            }
        }
        self.claimants_of(&affected, &mut touched);
        let drafts = self.drafts_of(&affected, drafts, options);
        let mut fresh = Vec::new();
        let mut ages = Ages::default();
        for group in &affected {
            fresh.extend(self.decide(group, &drafts, &mut ages, options));
        }
        self.splice(&affected, fresh)?;
        for key in &touched {
            self.restate(key);
        }
        Ok(Update {
            path: Path::Incremental,
            objects: changed,
            hosts: affected.len(),
        })
    }

    /// Applies a change of ingress-nginx Ingresses: their memos and the server index, the servers'
    /// rules spliced into the table, the statuses of every Ingress of those servers.
    fn apply_nginx(&mut self, plan: NginxPlan) -> Result<Update, CompileError> {
        let NginxPlan {
            memos,
            hosts,
            fresh,
            path_taken,
            entries,
        } = plan;
        let changed = memos.len();
        let deleted: Vec<ResourceKey> = (memos.iter())
            .filter(|(_, memo)| memo.is_none())
            .map(|(key, _)| key.clone())
            .collect();
        for (key, memo) in memos {
            self.nginx.remove(&key);
            if let Some(memo) = memo {
                self.nginx.insert(key, memo);
            }
        }
        for (host, taken) in path_taken {
            if let Some(server) = self.nginx.servers.get_mut(&host) {
                server.path_taken = taken;
            }
        }
        self.splice(&hosts, fresh)?;
        for (key, entry) in entries {
            if let Some(memo) = self.nginx.ingresses.get_mut(&key) {
                memo.entry = entry;
            }
            self.restate(&key);
        }
        for key in &deleted {
            self.restate(key);
        }
        Ok(Update {
            path: Path::Incremental,
            objects: changed,
            hosts: hosts.len(),
        })
    }

    /// Adds the Ingresses with rules in `groups` to `into`.
    fn claimants_of(&self, groups: &BTreeSet<Group>, into: &mut BTreeSet<ResourceKey>) {
        for state in groups.iter().filter_map(|g| self.groups.get(g)) {
            into.extend(state.claimants.iter().cloned());
        }
    }

    /// Decides one group again from its Ingresses' drafts (`drafts` holds those of every Ingress
    /// with rules there): its contest and its `PathTaken`; returns the rules that stay, with their
    /// keys (their ages shared through `ages`).
    fn decide(
        &mut self,
        group: &Group,
        drafts: &Drafts,
        ages: &mut Ages,
        options: &Options,
    ) -> Vec<(SortKey, RuleSpec)> {
        let Some(state) = self.groups.get_mut(group) else {
            return Vec::new();
        };
        if state.claimants.is_empty() {
            self.groups.remove(group);
            return Vec::new();
        }
        // In pipeline order: by Ingress, then by position.
        let memos: Vec<&Memo> = state
            .claimants
            .iter()
            .filter_map(|key| self.ingresses.get(key))
            .collect();
        let drafts: Vec<&Draft> = (state.claimants.iter())
            .filter(|key| self.ingresses.contains_key(*key))
            .filter_map(|key| drafts.get(key))
            .flat_map(|its| its.iter().filter(|d| d.rule.host == *group))
            .collect();
        state.contest = match group {
            None => None,
            Some(host) => {
                let mut claims: BTreeMap<&ResourceKey, &crate::objects::Age> = BTreeMap::new();
                for draft in &drafts {
                    claims.insert(&draft.claimant, &draft.claimant_age);
                }
                // Rules without paths name the host too (ROUTING.md §2).
                for claim in memos.iter().flat_map(|memo| &memo.claims).filter(|c| c.host == *host) {
                    claims.insert(&claim.key, &claim.age);
                }
                // Switchyard's own Ingresses only: none contends alone.
                collisions::contest(claims.into_iter().map(|(k, a)| (k, a, false)), options.host_collision)
            }
        };
        let kept: Vec<&Draft> = drafts
            .into_iter()
            .filter(|d| state.contest.as_ref().is_none_or(|c| c.winners.contains(&d.claimant)))
            .collect();
        let (dropped, taken) = collisions::identical(&kept);
        state.path_taken = taken;
        kept.into_iter()
            .zip(dropped)
            .filter(|(_, dropped)| !dropped)
            .map(|(d, _)| (ages.key(d), d.rule.clone()))
            .collect()
    }

    /// Takes the rules of the `affected` groups out of the table and merges `fresh` in, in the
    /// general order; hashes the new rules and the table again. In place: the table's rules and
    /// their slots are never copied ([`insert_at`]).
    fn splice(&mut self, affected: &BTreeSet<Group>, mut fresh: Vec<(SortKey, RuleSpec)>) -> Result<(), CompileError> {
        fresh.sort_by(|a, b| a.0.cmp(&b.0));
        let (mut slots, mut rules) = (Vec::with_capacity(fresh.len()), Vec::with_capacity(fresh.len()));
        for (key, rule) in fresh {
            let hash = order::rule_hash(&rule)?;
            let group = group_id(&mut self.group_ids, &rule.host);
            slots.push(Slot { key, hash, group });
            rules.push(rule);
        }
        let mut gone = vec![false; self.group_ids.len()];
        for group in affected.iter().filter_map(|g| self.group_ids.get(g)) {
            gone[*group] = true;
        }
        // A copy only while the last table is still held elsewhere (the sidecar's pushed table).
        let table = &mut Arc::make_mut(&mut self.table).rules;
        let mut kept = self.slots.iter().map(|slot| !gone[slot.group]);
        table.retain(|_| kept.next().unwrap_or(true));
        self.slots.retain(|slot| !gone[slot.group]);
        // A new rule goes after every kept rule whose key is not greater (the slots are in the
        // general order).
        let at: Vec<usize> = (slots.iter())
            .map(|new| self.slots.partition_point(|slot| slot.key <= new.key))
            .collect();
        insert_at(table, rules, &at);
        insert_at(&mut self.slots, slots, &at);
        let table = Arc::make_mut(&mut self.table);
        let fold = MetricsFold::of(&table.rules, self.metrics_limit);
        if fold != table.metrics_fold {
            table.metrics_fold = fold;
            self.header = order::header_hash(table)?;
        }
        table.generation = order::generation_of(self.header, self.slots.iter().map(|s| s.hash));
        Ok(())
    }

    /// Records the status of the Ingress `key` again (or removes it, once deleted).
    fn restate(&mut self, key: &ResourceKey) {
        let status = match self.ingresses.get(key) {
            Some(memo) => self.status_of(key, memo),
            None => (self.nginx.ingresses.get(key)).and_then(|memo| self.nginx.status_of(key, memo)),
        };
        let statuses = &mut self.statuses;
        match (
            statuses.binary_search_by(|s| report_order(s).cmp(&key_order(key))),
            status,
        ) {
            (Ok(i), Some(status)) => statuses[i] = status,
            (Ok(i), None) => drop(statuses.remove(i)),
            (Err(i), Some(status)) => statuses.insert(i, status),
            (Err(_), None) => {}
        }
    }

    /// An Ingress's status: its processor's entry, then what host ownership and `PathTaken` add,
    /// in the order [`collisions::resolve`] records them (hosts in order, then `Rejected`, then
    /// `PathTaken` in the order the rules were met).
    fn status_of(&self, key: &ResourceKey, memo: &Memo) -> Option<ResourceStatus> {
        let mut book = StatusBook::with(key.clone(), memo.entry.clone()?);
        let (mut claimed, mut won) = (false, 0);
        for (host, state) in memo
            .groups
            .iter()
            .filter_map(|g| Some((g.as_deref()?, self.groups.get(g)?)))
        {
            let Some(contest) = &state.contest else { continue };
            claimed = true;
            won += usize::from(contest.winners.contains(key));
            for (_, by) in contest.losers.iter().filter(|(loser, _)| loser == key) {
                collisions::record_host_taken(&mut book, key, host, by);
            }
        }
        if claimed && collisions::loses_everything(won, memo.groups.contains(&None)) {
            collisions::record_all_hosts_taken(&mut book, key);
        }
        let mut taken: Vec<&PathTaken> = memo
            .groups
            .iter()
            .filter_map(|g| self.groups.get(g))
            .flat_map(|state| &state.path_taken)
            .filter(|taken| taken.owner == *key)
            .collect();
        taken.sort_by(|a, b| a.turn.cmp(&b.turn));
        for taken in taken {
            collisions::record_path_taken(&mut book, taken);
        }
        book.finish().pop()
    }
}

impl NginxState {
    /// Adds an Ingress to the index.
    fn insert(&mut self, key: ResourceKey, memo: NginxMemo) {
        for host in &memo.hosts {
            self.servers
                .entry(host.clone())
                .or_default()
                .members
                .insert(key.clone());
        }
        for certified in &memo.certified {
            self.certifiers
                .entry(certified.clone())
                .or_default()
                .insert(key.clone());
        }
        self.ingresses.insert(key, memo);
    }

    /// Takes an Ingress out of the index (a server left without Ingresses goes).
    fn remove(&mut self, key: &ResourceKey) {
        let Some(memo) = self.ingresses.remove(key) else { return };
        for host in &memo.hosts {
            if let Some(server) = self.servers.get_mut(host) {
                server.members.remove(key);
                if server.members.is_empty() {
                    self.servers.remove(host);
                }
            }
        }
        for certified in &memo.certified {
            if let Some(keys) = self.certifiers.get_mut(certified) {
                keys.remove(key);
                if keys.is_empty() {
                    self.certifiers.remove(certified);
                }
            }
        }
    }

    /// An ingress-nginx Ingress's status, its servers each its host's one contender: what the class
    /// split and the processor recorded, then its `PathTaken` in the order the pipeline meets
    /// them (server by server, in host order).
    fn status_of(&self, key: &ResourceKey, memo: &NginxMemo) -> Option<ResourceStatus> {
        let mut book = StatusBook::with(key.clone(), memo.entry.clone()?);
        let servers = memo.hosts.iter().filter_map(|h| self.servers.get(h));
        for taken in servers.flat_map(|s| &s.path_taken).filter(|t| t.owner == *key) {
            collisions::record_path_taken(&mut book, taken);
        }
        book.finish().pop()
    }
}
