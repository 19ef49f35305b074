//! The Ingress processor: every accepted Ingress becomes rules, one per (host, path), plus a
//! catch-all for `defaultBackend`.
//!
//! `Prefix` and `ImplementationSpecific` paths are segment prefixes, `Exact` is exact, a path left
//! out is the segment prefix `/` (an `ImplementationSpecific` path that looks like a regex gets a
//! `PathLooksLikeRegex` warning: it stays a literal prefix, as ROUTING.md says). `defaultBackend`
//! is a rule with no host and `Prefix("/")`, so it ranks below everything by keys 1 and 2. The router annotations of ROUTING.md §4 add one
//! condition each to every rule of the Ingress. A backend whose port cannot be resolved keeps its
//! rule as a 503 ([`crate::services`]). TLS settings do not affect routing and are not read.
//!
//! [`IngressProcessor::run`] computes one Ingress at a time (`compute_ingress`), of those the
//! pipeline's class check let in ([`crate::processor::admit`]): the conditions its annotations add, then one rule per path
//! (`compute_rules`) and the default backend's catch-all, each through
//! `emit`, which resolves the backend and refuses what the filter would refuse. A rule that names a
//! host and has no paths (NGINX's mergeable "master" Ingress) is a [`Claim`] on that host: no rule,
//! but its Ingress is a member of the host's group and its age counts (ROUTING.md §2). An Ingress
//! that carries an access control (ROUTING.md §9) keeps its rules, which answer 403 unless waived.

use std::sync::Arc;

use k8s_openapi::api::networking::v1::{HTTPIngressPath, Ingress, IngressBackend, IngressSpec};
use switchyard_table::{ActionSpec, ConditionSpec, PathSpec, RouteAction, RuleSpec};

use crate::access::{Field, Guard, Reach, WAIVER};
use crate::annotations::IngressAnnotations;
use crate::collisions::Claim;
use crate::https::routing::{https_redirect, only, Scheme};
use crate::ingress_nginx::access;
use crate::model::{normalize_host, validate_rule, Claiming, Draft, HostOrder, Options};
use crate::objects::Objects;
use crate::objects::{key_of, Age, Kind, ResourceKey};
use crate::processor::{Inputs, Output, Processor};
use crate::services::{service_unavailable, PortRef, ServicePorts};
use crate::status::{ConditionKind, Reason, Status};

/// Whether a path holds characters that only mean something in a regular expression or a glob
/// (ImplementationSpecific paths of other controllers are often regexes; ours are literal).
fn looks_like_regex(path: &str) -> bool {
    path.contains(['[', ']', '(', ')', '{', '}', '*', '+', '?', '^', '$', '|', '\\'])
}

/// The Ingress processor in the pipeline's list: [`IngressProcessor`] over the Ingresses that are
/// ours; their rules keep the general order ([`crate::model::HostOrder::General`]).
pub struct Ingresses;

impl Processor for Ingresses {
    fn run(&self, ours: &Objects, inputs: Inputs<'_>) -> Output {
        let processed = IngressProcessor::new(inputs).run(&ours.ingresses);
        Output {
            drafts: processed.drafts,
            claims: processed.claims,
            settle: None,
        }
    }
}

/// The Ingress processor: turns the accepted Ingresses into drafts and records each one's status.
pub struct IngressProcessor<'a> {
    inputs: Inputs<'a>,
    drafts: Vec<Draft>,
    /// The hosts named by rules without paths ([`Claim`]).
    claims: Vec<Claim>,
}

/// What the Ingress processor made: the drafts, and the hosts claimed by rules without paths.
#[derive(Debug, Default)]
pub struct Processed {
    /// The rules, in the order given.
    pub drafts: Vec<Draft>,
    /// The hosts named by rules without paths, each once per Ingress, in the order given.
    pub claims: Vec<Claim>,
}

/// The most drafts `ingress` can make: one per path, and one for its default backend.
fn most_drafts(ingress: &Ingress) -> usize {
    let Some(spec) = &ingress.spec else { return 0 };
    let paths = spec.rules.iter().flatten().filter_map(|r| r.http.as_ref());
    paths.map(|http| http.paths.len()).sum::<usize>() + usize::from(spec.default_backend.is_some())
}

/// The Ingress being computed: what all of its rules share.
struct Owner {
    key: ResourceKey,
    /// Its age, shared by its drafts.
    age: Arc<Age>,
    /// The conditions its router annotations add to every rule.
    conditions: Vec<ConditionSpec>,
    /// What its rules do with plain HTTP (ROUTING.md §8.3).
    plain_http: PlainHttp,
}

/// What an Ingress's rules do with plain HTTP (ROUTING.md §8.3, Contour's `TLSRequired` and
/// `HTTPAllowed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlainHttp {
    /// Served, as HTTPS is.
    Served,
    /// `force-ssl-redirect: "true"`: answered with a 301 to https.
    Redirected,
    /// `kubernetes.io/ingress.allow-http: "false"`: not served (the rules leave port 80).
    Refused,
}

/// The annotations that redirect an Ingress's plain HTTP to https.
const FORCE_SSL_REDIRECT: [&str; 2] = [
    "ingress.kubernetes.io/force-ssl-redirect",
    "switchyard.io/force-ssl-redirect",
];
/// The annotation that takes an Ingress's rules off port 80.
const ALLOW_HTTP: &str = "kubernetes.io/ingress.allow-http";

impl PlainHttp {
    fn of(ingress: &Ingress) -> PlainHttp {
        let annotation = |name: &str| {
            (ingress.metadata.annotations.as_ref())
                .and_then(|a| a.get(name))
                .map(|v| v.trim().to_ascii_lowercase())
        };
        if annotation(ALLOW_HTTP).as_deref() == Some("false") {
            PlainHttp::Refused
        } else if FORCE_SSL_REDIRECT
            .iter()
            .any(|a| annotation(a).as_deref() == Some("true"))
        {
            PlainHttp::Redirected
        } else {
            PlainHttp::Served
        }
    }
}

/// One rule to emit: its position, host, path and backend, and where the manifest writes it.
struct Emit<'i> {
    position: usize,
    host: Option<String>,
    path: PathSpec,
    backend: &'i IngressBackend,
    at: String,
}

impl<'a> IngressProcessor<'a> {
    /// A processor reading and reporting through `inputs`.
    pub fn new(inputs: Inputs<'a>) -> IngressProcessor<'a> {
        IngressProcessor {
            inputs,
            drafts: Vec::new(),
            claims: Vec::new(),
        }
    }

    /// The drafts of every Ingress, in the order given, and the hosts their rules without paths
    /// claim.
    pub fn run(mut self, ingresses: &[Arc<Ingress>]) -> Processed {
        // One draft at most per path and default backend, reserved at once: grown by doubling, the
        // 100,000 drafts of a full compile would take a third more room than they fill.
        let most: usize = ingresses.iter().map(|i| most_drafts(i)).sum();
        self.drafts.reserve_exact(most);
        for ingress in ingresses {
            self.compute_ingress(ingress);
        }
        Processed {
            drafts: self.drafts,
            claims: self.claims,
        }
    }

    /// One Ingress (ours: the pipeline checked its class): its annotations' conditions, its paths
    /// and default backend; rejected when none of them routes.
    fn compute_ingress(&mut self, ingress: &Ingress) {
        let key = key_of(Kind::Ingress, &ingress.metadata);
        let spec = ingress.spec.as_ref();
        let Some(conditions) = self.annotation_conditions(&key, ingress) else {
            return;
        };
        let owner = Owner {
            age: Arc::new(Age::of(Kind::Ingress, &ingress.metadata)),
            key,
            conditions,
            plain_http: PlainHttp::of(ingress),
        };
        let before = (self.drafts.len(), self.claims.len());
        let positions = self.compute_rules(&owner, spec);
        if let Some(default) = spec.and_then(|s| s.default_backend.as_ref()) {
            self.emit(
                &owner,
                Emit {
                    position: positions,
                    host: None,
                    path: PathSpec::SegmentPrefix("/".to_owned()),
                    backend: default,
                    at: "spec.defaultBackend".to_owned(),
                },
            );
        }
        self.guard(&owner.key, ingress, before.0);
        if (self.drafts.len(), self.claims.len()) == before {
            self.inputs.book.error(
                &owner.key,
                Status::Rejected,
                Reason::NoRules,
                "this Ingress has no usable rule: nothing routes to it",
            );
            self.inputs.book.set(&owner.key, Status::Rejected);
        }
    }

    /// ROUTING.md §9: the access-control annotations an Ingress carries (ingress-nginx's, which a
    /// migrated Ingress keeps, its source ranges included: this processor enforces none), judged
    /// against its waiver; the rules it drafted from `first` on answer
    /// 403 while one is not waived. Each reaches the Ingress's own rules only: Ingresses that share a
    /// host are separate resources here.
    fn guard(&mut self, key: &ResourceKey, ingress: &Ingress, first: usize) {
        let Some(annotations) = &ingress.metadata.annotations else {
            return;
        };
        let prefix = &self.inputs.options.ingress_nginx.annotations_prefix;
        let fields: Vec<Field> = access::fields(annotations, prefix, &[])
            .into_iter()
            .map(|field| Field {
                reach: Reach::OwnRules,
                ..field
            })
            .collect();
        if fields.is_empty() && !annotations.contains_key(WAIVER) {
            return;
        }
        let mut guard = Guard::default();
        guard.judge(key, &ingress.metadata, fields, self.inputs.book, Status::Accepted);
        guard.apply(&mut self.drafts[first..]);
    }

    /// The conditions the router annotations add, or `None` (the Ingress rejected) when one is
    /// malformed: dropping it would widen the rule.
    fn annotation_conditions(&mut self, key: &ResourceKey, ingress: &Ingress) -> Option<Vec<ConditionSpec>> {
        match IngressAnnotations::parse(&ingress.metadata) {
            Ok(annotations) => Some(annotations.router),
            Err(why) => {
                self.inputs
                    .book
                    .error(key, Status::Rejected, Reason::BadRouterAnnotation, why.to_string());
                self.inputs.book.set(key, Status::Rejected);
                None
            }
        }
    }

    /// One rule per path of every `spec.rules[]` entry; returns how many positions the paths took
    /// (a refused path keeps its position, so names do not shift when it is fixed).
    fn compute_rules(&mut self, owner: &Owner, spec: Option<&IngressSpec>) -> usize {
        let mut position = 0usize;
        for (i, rule) in spec.iter().flat_map(|s| s.rules.iter().flatten()).enumerate() {
            let host = rule.host.as_deref().filter(|h| !h.is_empty()).map(normalize_host);
            let paths = rule.http.as_ref().map(|http| http.paths.as_slice()).unwrap_or_default();
            if paths.is_empty() {
                self.claim(owner, host);
                continue;
            }
            for (j, path) in paths.iter().enumerate() {
                let at = format!("spec.rules[{i}].http.paths[{j}]");
                let n = position;
                position += 1;
                let Some(path_spec) = self.path_spec(&owner.key, &at, path) else {
                    continue;
                };
                self.emit(
                    owner,
                    Emit {
                        position: n,
                        host: host.clone(),
                        path: path_spec,
                        backend: &path.backend,
                        at,
                    },
                );
            }
        }
        position
    }

    /// A rule that names `host` and has no paths: the Ingress claims the host without a rule
    /// (ROUTING.md §2), once however many such rules name it.
    fn claim(&mut self, owner: &Owner, host: Option<String>) {
        let Some(host) = host else { return };
        let known = self
            .claims
            .iter()
            .rev()
            .take_while(|c| c.key == owner.key)
            .any(|c| c.host == host);
        if !known {
            self.claims.push(Claim {
                host,
                key: owner.key.clone(),
                age: (*owner.age).clone(),
            });
        }
    }

    /// The table path of an Ingress path: `Exact` is exact, `Prefix` and `ImplementationSpecific`
    /// segment prefixes, a path left out `/`; `None` (reported) for an unknown `pathType`.
    fn path_spec(&mut self, key: &ResourceKey, at: &str, path: &HTTPIngressPath) -> Option<PathSpec> {
        let value = path
            .path
            .clone()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "/".to_owned());
        if path.path_type == "ImplementationSpecific" && looks_like_regex(&value) {
            self.inputs.book.add(
                key,
                Status::Accepted,
                ConditionKind::Warning,
                Reason::PathLooksLikeRegex,
                format!(
                    "{at}: path {value:?} looks like a regular expression, but an ImplementationSpecific \
                     path is a literal segment prefix here: it matches only paths starting with exactly \
                     these characters (use Prefix/Exact paths, or an HTTPProxy regex condition)"
                ),
            );
        }
        match path.path_type.as_str() {
            "Exact" => Some(PathSpec::Exact(value)),
            "Prefix" | "ImplementationSpecific" | "" => Some(PathSpec::SegmentPrefix(value)),
            other => {
                self.inputs.book.error(
                    key,
                    Status::Accepted,
                    Reason::UnknownPathType,
                    format!("{at}: pathType {other:?} is not Exact, Prefix or ImplementationSpecific; this path is not routed"),
                );
                None
            }
        }
    }

    /// Drafts one rule: its backend resolved (a 503 when the port cannot be), refused with a status
    /// when the backend is unusable or the filter would refuse the rule.
    fn emit(&mut self, owner: &Owner, emit: Emit<'_>) {
        let Some(action) = self.action(&owner.key, emit.backend, &emit.at) else {
            return;
        };
        let mut rule = RuleSpec {
            name: format!("{}#{}", owner.key.display(), emit.position),
            host: emit.host,
            path: emit.path,
            conditions: owner.conditions.clone(),
            action,
            hsts: None,
            policy: None,
        };
        if let Err(why) = validate_rule(&rule) {
            self.inputs.book.error(
                &owner.key,
                Status::Accepted,
                Reason::InvalidRule,
                format!("{}: {why}; this path is not routed", emit.at),
            );
            return;
        }
        match owner.plain_http {
            PlainHttp::Served => {}
            PlainHttp::Redirected => self.draft(owner, emit.position, https_redirect(&rule, 301)),
            PlainHttp::Refused => only(&mut rule, Scheme::Https),
        }
        self.draft(owner, emit.position, rule);
    }

    fn draft(&mut self, owner: &Owner, position: usize, rule: RuleSpec) {
        self.drafts.push(Draft {
            owner: owner.key.clone(),
            age: owner.age.clone(),
            position,
            claimant: owner.key.clone(),
            claimant_age: owner.age.clone(),
            rule,
            order: HostOrder::General,
            claiming: Claiming::Contends,
        });
    }

    /// What a rule does with its backend: route to its cluster, answer 503 when its port cannot be
    /// resolved (ROUTING.md §5), or `None` (reported) when the backend cannot be used at all.
    fn action(&mut self, key: &ResourceKey, backend: &IngressBackend, at: &str) -> Option<ActionSpec> {
        match backend_cluster(backend, key, self.inputs.services, self.inputs.options) {
            Ok(cluster) => Some(ActionSpec::Route(RouteAction::to(cluster))),
            Err(NoCluster::PortNotFound(why)) => {
                self.inputs.book.error(
                    key,
                    Status::Accepted,
                    Reason::ServicePortNotFound,
                    format!("{at}: {why}; requests for this path get 503"),
                );
                Some(service_unavailable())
            }
            Err(NoCluster::Unusable(reason, why)) => {
                self.inputs.book.error(
                    key,
                    Status::Accepted,
                    reason,
                    format!("{at}: {why}; this path is not routed"),
                );
                None
            }
        }
    }
}

/// Why a backend has no cluster.
pub(crate) enum NoCluster {
    /// Its port cannot be resolved: the rule stays and answers 503 (ROUTING.md §5).
    PortNotFound(String),
    /// It cannot be used at all (reason, why): the path is not routed.
    Unusable(Reason, String),
}

/// The cluster of a backend, or why it has none.
pub(crate) fn backend_cluster(
    backend: &IngressBackend,
    key: &ResourceKey,
    services: &ServicePorts,
    options: &Options,
) -> Result<String, NoCluster> {
    let (service, number) = backend_port(backend, key, services)?;
    Ok(options.cluster(&key.namespace, service, number))
}

/// The Service and port number of a backend, or why it has none.
pub(crate) fn backend_port<'b>(
    backend: &'b IngressBackend,
    key: &ResourceKey,
    services: &ServicePorts,
) -> Result<(&'b str, i32), NoCluster> {
    let Some(service) = backend.service.as_ref() else {
        return Err(NoCluster::Unusable(
            Reason::UnsupportedBackend,
            "the backend names no service (resource backends are not supported)".to_owned(),
        ));
    };
    let port = service.port.as_ref();
    let port = match (port.and_then(|p| p.number), port.and_then(|p| p.name.as_deref())) {
        (Some(number), _) => PortRef::Number(number),
        (None, Some(name)) if !name.is_empty() => PortRef::Name(name),
        _ => {
            return Err(NoCluster::Unusable(
                Reason::MissingServicePort,
                format!("the backend for service {:?} has no port", service.name),
            ))
        }
    };
    let number = services
        .resolve(&key.namespace, &service.name, port)
        .map_err(NoCluster::PortNotFound)?;
    Ok((&service.name, number))
}
