//! ROUTING.md §7.2–7.4: ingress-nginx's Ingresses gathered into *servers*, one per host (and the
//! catch-all server of the rules without a host): each server's Ingresses in ingress-nginx's
//! order, its locations after normalisation and `PathTaken`, its root (own or implicit), whether
//! it is in regex mode and which Ingress turned that on, its `server-alias` hosts, and whether its
//! host has a certificate in ingress-nginx's sense (§7.7.6). What the locations do is
//! [`super::layout`]'s.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::networking::v1::{Ingress, IngressBackend};
use switchyard_table::basic_auth::BasicAuth;
use switchyard_table::external_auth::ExternalAuth;
use switchyard_table::Policy;

use super::access::Unenforceable;
use super::annotations::IngressNginxAnnotations;
use super::paths::{self, PathType};
use crate::model::normalize_host;
use crate::objects::{Age, ResourceKey};
use crate::status::{ConditionKind, Reason, Status, StatusBook};

/// One ingress-nginx Ingress (not a canary), its annotations read.
#[derive(Debug)]
pub struct Member<'o> {
    /// Its identity.
    pub key: ResourceKey,
    /// Its age (§2's contest, for the server it comes first in), shared by its drafts.
    pub age: Arc<Age>,
    /// The Ingress.
    pub ingress: &'o Ingress,
    /// Its annotations (§7.5, §7.7).
    pub annotations: IngressNginxAnnotations,
    /// Why its backends cannot be reached as its `proxy-ssl-verify: on` asks, when they cannot (its
    /// locations answer 503).
    pub unverifiable: Option<String>,
    /// What its locations ask of a request (the body limit), shared by its rules.
    pub policy: Option<Arc<Policy>>,
    /// Its source-range fields whose value is not a list of ranges: not enforced by `policy`, they
    /// deny ([`super::access::source_ranges`]).
    pub unusable_ranges: Vec<String>,
    /// Its basic authentication (`auth-type: basic`): the users and realm its rules' policy
    /// checks, or why it cannot be enforced (its rules then deny, ROUTING.md §9).
    pub basic_auth: Option<Result<Arc<BasicAuth>, Unenforceable>>,
    /// Its external authentication (`auth-url`): the service its rules' policy asks, or why it
    /// cannot be enforced (its rules then deny).
    pub external_auth: Option<Result<Arc<ExternalAuth>, Unenforceable>>,
}

/// Where a location sends a request.
#[derive(Debug, Clone, Copy)]
pub enum Target<'o> {
    /// A backend of the Ingress.
    Backend(&'o IngressBackend),
    /// ingress-nginx's default backend: the no-route 404.
    NotFound,
}

/// Where a location comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A path of its Ingress: the path's position among the Ingress's paths (the `#n` of its
    /// rule's name) and where the manifest writes it.
    Path {
        /// The position.
        position: usize,
        /// `spec.rules[i].http.paths[j]`.
        at: String,
    },
    /// The implicit root of a server whose Ingresses have no `/` of their own: the first
    /// Ingress's `spec.defaultBackend` (or the 404), with the first Ingress's annotations.
    ImplicitRoot,
    /// The catch-all server's root: an Ingress's `spec.defaultBackend`, that Ingress without rules.
    DefaultBackend,
}

/// One location of a server.
#[derive(Debug, Clone)]
pub struct Location<'o> {
    /// The Ingress it belongs to (an index into the members), whose annotations apply.
    pub member: usize,
    /// Its path, normalised (§7.2).
    pub path: String,
    /// Its pathType, normalised.
    pub kind: PathType,
    /// Where it sends a request.
    pub target: Target<'o>,
    /// Where it comes from.
    pub origin: Origin,
    /// Its canary (§7.6): the canary Ingress (an index into the canaries) and its backend.
    pub canary: Option<(usize, &'o IngressBackend)>,
}

/// What turned a server's regex mode on (§7.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegexModeBy {
    /// The Ingress (an index into the members).
    pub member: usize,
    /// `use-regex`, or `rewrite-target`.
    pub annotation: &'static str,
}

/// One server: a host's ingress-nginx Ingresses, as one resource.
#[derive(Debug)]
pub struct Server<'o> {
    /// Its host (`None`: the catch-all server).
    pub host: Option<String>,
    /// Its Ingresses (indices into the members), in ingress-nginx's order: the first is the one
    /// it competes as (§2) and whose annotations the implicit root takes.
    pub members: Vec<usize>,
    /// Its locations, the root included, in the order they were met (Ingress order, then path
    /// order); refused and taken ones left out.
    pub locations: Vec<Location<'o>>,
    /// What turned regex mode on, if it is on.
    pub regex_mode: Option<RegexModeBy>,
    /// Its `server-alias` hosts, and the Ingress that set them.
    pub aliases: Option<(usize, Vec<String>)>,
    /// Whether its host has a certificate in ingress-nginx's sense (§7.7.6).
    pub has_certificate: bool,
}

impl Server<'_> {
    /// The server's first Ingress (the one it competes as).
    pub fn first(&self) -> usize {
        self.members.first().copied().unwrap_or_default()
    }
}

/// Gathers `members` (in ingress-nginx's order, §7.2) into servers, in host order (the catch-all
/// server first), then attaches the `canaries` (§7.6, in that order too) to their locations,
/// recording `PathTaken`, unknown pathTypes, `PathRegexUnsupported`, `AliasWildcardDepth` and the
/// canaries' reasons in `book`.
pub fn gather<'o>(members: &[Member<'o>], canaries: &[Member<'o>], book: &mut StatusBook) -> Vec<Server<'o>> {
    let certified = certified_hosts(members);
    let mut servers: BTreeMap<Option<String>, Server<'o>> = BTreeMap::new();
    let mut catch_all_root: Option<usize> = None;
    for (m, member) in members.iter().enumerate() {
        let spec = member.ingress.spec.as_ref();
        let rules = spec.and_then(|s| s.rules.as_deref()).unwrap_or_default();
        if rules.is_empty() && spec.and_then(|s| s.default_backend.as_ref()).is_some() {
            catch_all_root.get_or_insert(m);
            server(&mut servers, None, m);
        }
        let mut position = 0usize;
        for (i, rule) in rules.iter().enumerate() {
            let host = rule.host.as_deref().filter(|h| !h.is_empty()).map(normalize_host);
            let server = server(&mut servers, host, m);
            for (j, path) in rule.http.iter().flat_map(|h| &h.paths).enumerate() {
                let at = format!("spec.rules[{i}].http.paths[{j}]");
                let origin = Origin::Path { position, at };
                position += 1;
                let known = matches!(
                    path.path_type.as_str(),
                    "Exact" | "Prefix" | "ImplementationSpecific" | ""
                );
                if !known {
                    book.error(
                        &member.key,
                        Status::Accepted,
                        Reason::UnknownPathType,
                        format!(
                            "{}: pathType {:?} is not Exact, Prefix or ImplementationSpecific; this path is not routed",
                            at_of(&origin),
                            path.path_type
                        ),
                    );
                    continue;
                }
                let (path_value, kind) = paths::normalize(path.path.as_deref(), Some(path.path_type.as_str()));
                server.locations.push(Location {
                    member: m,
                    path: path_value,
                    kind,
                    target: Target::Backend(&path.backend),
                    origin,
                    canary: None,
                });
            }
        }
    }
    let mut out: Vec<Server<'o>> = servers.into_values().collect();
    for server in &mut out {
        drop_taken(server, members, book, |l| (l.path.clone(), Some(l.kind)));
        add_root(server, members, catch_all_root);
        server.regex_mode = regex_mode(server, members);
        if server.regex_mode.is_some() {
            // One regex per path string: an Exact and a Prefix of one path are the same location.
            drop_taken(server, members, book, |l| (l.path.clone(), None::<PathType>));
            drop_unsupported(server, members, book);
        }
        server.aliases = aliases(server, members, book);
        server.has_certificate = server.host.as_deref().is_some_and(|h| certified.covers(h));
    }
    attach_canaries(&mut out, members, canaries, book);
    out
}

/// §7.6: each path of a canary Ingress attaches its backend to the location with the same host,
/// path and pathType of a non-canary Ingress: `CanaryWithoutMain` when there is none, `CanaryTaken`
/// when an earlier canary has it, `CanaryIsMain` when its backend is the location's own.
fn attach_canaries<'o>(
    servers: &mut [Server<'o>],
    members: &[Member<'o>],
    canaries: &[Member<'o>],
    book: &mut StatusBook,
) {
    for (c, canary) in canaries.iter().enumerate() {
        let spec = canary.ingress.spec.as_ref();
        for (i, rule) in spec
            .and_then(|s| s.rules.as_deref())
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let host = rule.host.as_deref().filter(|h| !h.is_empty()).map(normalize_host);
            for (j, path) in rule.http.iter().flat_map(|h| &h.paths).enumerate() {
                let at = format!("spec.rules[{i}].http.paths[{j}]");
                let (path_value, kind) = paths::normalize(path.path.as_deref(), Some(path.path_type.as_str()));
                let host_name = host.as_deref().unwrap_or("(any host)");
                let mut warn = |reason, message: String| {
                    book.add(&canary.key, Status::Accepted, ConditionKind::Warning, reason, message)
                };
                let location = servers.iter_mut().find(|s| s.host == host).and_then(|s| {
                    s.locations
                        .iter_mut()
                        .find(|l| l.path == path_value && l.kind == kind && matches!(l.origin, Origin::Path { .. }))
                });
                let Some(location) = location else {
                    warn(
                        Reason::CanaryWithoutMain,
                        format!(
                            "{at}: no Ingress of ingress-nginx's class serves host {host_name} path {path_value} ({kind:?}): this canary path does nothing"
                        ),
                    );
                    continue;
                };
                let main = &members[location.member].key;
                if let Some((earlier, _)) = location.canary {
                    let earlier = &canaries[earlier].key;
                    warn(
                        Reason::CanaryTaken,
                        format!(
                            "{at}: the location {path_value} of host {host_name} already has the canary of Ingress {}/{}; this one is ignored",
                            earlier.namespace, earlier.name
                        ),
                    );
                    continue;
                }
                let same = match location.target {
                    Target::Backend(backend) => main.namespace == canary.key.namespace && backend == &path.backend,
                    Target::NotFound => false,
                };
                if same {
                    warn(
                        Reason::CanaryIsMain,
                        format!(
                            "{at}: the canary's backend is the location's own (Ingress {}/{}): it does nothing",
                            main.namespace, main.name
                        ),
                    );
                    continue;
                }
                location.canary = Some((c, &path.backend));
            }
        }
    }
}

/// The server of `host`, made when first met, with `member` in it.
fn server<'s, 'o>(
    servers: &'s mut BTreeMap<Option<String>, Server<'o>>,
    host: Option<String>,
    member: usize,
) -> &'s mut Server<'o> {
    let server = servers.entry(host.clone()).or_insert_with(|| Server {
        host,
        members: Vec::new(),
        locations: Vec::new(),
        regex_mode: None,
        aliases: None,
        has_certificate: false,
    });
    if !server.members.contains(&member) {
        server.members.push(member);
    }
    server
}

fn at_of(origin: &Origin) -> &str {
    match origin {
        Origin::Path { at, .. } => at,
        Origin::ImplicitRoot => "the implicit root",
        Origin::DefaultBackend => "spec.defaultBackend",
    }
}

/// §7.2 (and §7.4's one regex per path): of locations with the same identity, the first stays;
/// each later one gets `PathTaken`.
fn drop_taken<K: Ord>(
    server: &mut Server<'_>,
    members: &[Member<'_>],
    book: &mut StatusBook,
    identity: impl Fn(&Location<'_>) -> K,
) {
    let mut first: BTreeMap<K, usize> = BTreeMap::new();
    let mut kept = Vec::with_capacity(server.locations.len());
    for location in std::mem::take(&mut server.locations) {
        match first.get(&identity(&location)) {
            Some(&by) => {
                let by = &members[by].key;
                let host = server.host.as_deref().unwrap_or("(any host)");
                book.add(
                    &members[location.member].key,
                    Status::Accepted,
                    ConditionKind::Warning,
                    Reason::PathTaken,
                    format!(
                        "{}: path {} ({:?}) on host {host} is already served by Ingress {}/{}, first in \
                         ingress-nginx's order; this path is not routed",
                        at_of(&location.origin),
                        location.path,
                        location.kind,
                        by.namespace,
                        by.name
                    ),
                );
            }
            None => {
                first.insert(identity(&location), location.member);
                kept.push(location);
            }
        }
    }
    server.locations = kept;
}

/// §7.2: every server has a root `Prefix /`: its own, else the implicit one (the first Ingress's
/// default backend or the 404, with the first Ingress's annotations). The catch-all server's root
/// is the first Ingress with a default backend and no rules, if there is one.
fn add_root<'o>(server: &mut Server<'o>, members: &[Member<'o>], catch_all_root: Option<usize>) {
    let has_root = server
        .locations
        .iter()
        .any(|l| l.path == "/" && l.kind == PathType::Prefix);
    if has_root {
        return;
    }
    let (member, origin) = match (&server.host, catch_all_root) {
        (Some(_), _) => (server.first(), Origin::ImplicitRoot),
        (None, Some(member)) => (member, Origin::DefaultBackend),
        (None, None) => return,
    };
    let default = members[member]
        .ingress
        .spec
        .as_ref()
        .and_then(|s| s.default_backend.as_ref());
    server.locations.push(Location {
        member,
        path: "/".to_owned(),
        kind: PathType::Prefix,
        target: default.map_or(Target::NotFound, Target::Backend),
        origin,
        canary: None,
    });
}

/// §7.4: the first location (the implicit root included) whose Ingress turns regex mode on.
fn regex_mode(server: &Server<'_>, members: &[Member<'_>]) -> Option<RegexModeBy> {
    server.locations.iter().find_map(|l| {
        let annotations = &members[l.member].annotations;
        annotations.turns_regex_mode_on(&l.path).then_some(RegexModeBy {
            member: l.member,
            annotation: match annotations.use_regex {
                Some(true) => "use-regex",
                _ => "rewrite-target",
            },
        })
    })
}

/// §7.4: a path regex-lite cannot compile is refused alone (`PathRegexUnsupported`).
fn drop_unsupported(server: &mut Server<'_>, members: &[Member<'_>], book: &mut StatusBook) {
    server
        .locations
        .retain(|l| match paths::table_path(&l.path, l.kind, true) {
            Ok(_) => true,
            Err((reason, why)) => {
                book.error(
                    &members[l.member].key,
                    Status::Accepted,
                    reason,
                    format!("{}: {why}; this path is not routed", at_of(&l.origin)),
                );
                false
            }
        });
}

/// §7.2: the `server-alias` of the server's first Ingress that sets one (a wildcard alias warned
/// about: it matches one label here).
fn aliases(server: &Server<'_>, members: &[Member<'_>], book: &mut StatusBook) -> Option<(usize, Vec<String>)> {
    let host = server.host.as_deref()?;
    let &by = server
        .members
        .iter()
        .find(|&&m| !members[m].annotations.server_alias.is_empty())?;
    let mut aliases: Vec<String> = Vec::new();
    for alias in &members[by].annotations.server_alias {
        let alias = normalize_host(alias);
        if alias == host || aliases.contains(&alias) {
            continue;
        }
        if alias.starts_with("*.") {
            book.add(
                &members[by].key,
                Status::Accepted,
                ConditionKind::Warning,
                Reason::AliasWildcardDepth,
                format!("server-alias {alias} matches exactly one label here (nginx matched any depth)"),
            );
        }
        aliases.push(alias);
    }
    Some((by, aliases))
}

/// The hosts with a certificate in ingress-nginx's sense (§7.7.6): every rule host of an Ingress
/// with a `spec.tls` section, and every host a `spec.tls` entry lists (`*.x` covering one label).
struct Certified {
    hosts: BTreeSet<String>,
}

impl Certified {
    fn covers(&self, host: &str) -> bool {
        let wildcard = host.split_once('.').map(|(_, parent)| format!("*.{parent}"));
        self.hosts.contains(host) || wildcard.is_some_and(|w| self.hosts.contains(&w))
    }
}

fn certified_hosts(members: &[Member<'_>]) -> Certified {
    let mut hosts = BTreeSet::new();
    for member in members {
        let Some(spec) = member.ingress.spec.as_ref() else {
            continue;
        };
        let tls = spec.tls.as_deref().unwrap_or_default();
        if tls.is_empty() {
            continue;
        }
        let rule_hosts = spec.rules.iter().flatten().filter_map(|r| r.host.as_deref());
        let tls_hosts = tls.iter().flat_map(|t| t.hosts.iter().flatten()).map(String::as_str);
        hosts.extend(
            rule_hosts
                .chain(tls_hosts)
                .filter(|h| !h.is_empty())
                .map(normalize_host),
        );
    }
    Certified { hosts }
}
