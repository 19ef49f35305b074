//! The VirtualServer processor: NGINX's VirtualServer and VirtualServerRoute (ROUTING.md §6,
//! seed 003).
//!
//! A VirtualServer of ours owns `spec.host` alone and competes for it in §2's contest as one
//! resource ([`crate::collisions`]). Its routes become rules on that host: a route's matches in list
//! order, then its own action ([`crate::nginx`] ranks them as NGINX picks locations). A route that
//! references a VirtualServerRoute (`route: [ns/]name`) is replaced by the VirtualServerRoute's
//! subroutes, when it exists, is valid and is on the same host, with subroute paths under the
//! route's; otherwise the route answers 502, never falling through to another route (a
//! VirtualServerRoute valid on its own whose subroutes do not fit the route is not Invalid but
//! ignored by that VirtualServer, `Warning`/`Ignored`, as NGINX reports it). A
//! VirtualServer or VirtualServerRoute that fails validation (a duplicate path or upstream, an
//! unknown upstream, splits not summing to 100, a regex that does not compile, a malformed action or
//! condition) is Invalid and routes nothing; a route Switchyard cannot express (a `subselector`, a
//! variable other than `$request_method`, a split to a `return` or `redirect`) is refused alone with a warning. Requests to the host that no route
//! matches get a 404 from the VirtualServer itself, never another resource's rule.
//!
//! [`VirtualServerProcessor::run`] computes one VirtualServer at a time (`compute_virtual_server`,
//! `compute_reference`), each route's rules planned by `scope` (matches, actions, upstreams);
//! [`settle`] gives VirtualServerRoutes their status once the host contest is decided (orphaned
//! when no winning VirtualServer uses them). `policies` lists name NGINX Policies ([`policies`]):
//! `accessControl`, `rateLimit` and `basicAuth` go into the rules' table policy (a route's own kind
//! replacing the server's, as nginx inherits directives); a list with a reference that cannot be
//! enforced (ROUTING.md §9, `policy_fields`) turns the rules it protects into 403s unless waived.

use std::collections::BTreeMap;
use std::sync::Arc;

use switchyard_table::{ActionSpec, DirectResponse, HostPattern, PathSpec, RuleSpec};

use crate::access::{is_set, Field, Guard, Reach};
use crate::collisions::HostWinners;
use crate::l4::L4Routes;
use crate::model::Options;
use crate::model::{normalize_host, Claiming, Draft, HostOrder, RuleValidator};
use crate::nginx::{self, Location, NginxRank};
use crate::objects::nginx::{Route, VirtualServer, VirtualServerRoute};
use crate::objects::Objects;
use crate::objects::{key_of, Age, Kind, ResourceKey};
use crate::processor::{Inputs, Output, Processor, Settle};

use crate::status::{ConditionKind, Reason, Status, StatusBook};

mod policies;
mod scope;
mod tls;
mod upstream;

use policies::{Asked, PolicyBook};
use scope::{Fault, Note, Scope};
use tls::ServerTls;

/// What [`settle`] needs once the host contest is decided.
#[derive(Debug, Default)]
pub struct Delegations {
    /// Each eligible, valid VirtualServerRoute: its host and the VirtualServers that use it.
    routes: BTreeMap<ResourceKey, (String, Vec<ResourceKey>)>,
    /// The warnings of each VirtualServerRoute, recorded when some winning VirtualServer uses it.
    notes: BTreeMap<ResourceKey, Vec<Note>>,
    /// The host of each VirtualServer that routes.
    servers: BTreeMap<ResourceKey, String>,
    /// VirtualServerRoutes valid on their own whose subroutes do not fit a route that references
    /// them: each VirtualServer that ignored one, and why.
    misfits: BTreeMap<ResourceKey, Vec<(ResourceKey, String)>>,
}

/// A VirtualServer route that references a VirtualServerRoute: its location, and what its own
/// `policies` ask of the subroutes that have none.
struct Referrer<'r> {
    location: &'r Location,
    asked: &'r Asked,
}

/// Why a VirtualServerRoute's subroutes cannot serve the route that references them.
enum Unusable {
    /// It fails validation on its own: it is Invalid.
    Invalid(String),
    /// It is valid on its own, but its subroutes do not fit the route (a path outside the route's
    /// prefix, another location kind): NGINX ignores it for this VirtualServer, with a warning.
    Misfit(String),
}

/// The VirtualServer processor in the pipeline's list: [`VirtualServerProcessor`] over the
/// VirtualServers and VirtualServerRoutes that are ours. Their rules are in NGINX's location order
/// ([`crate::model::HostOrder::Nginx`]); the VirtualServerRoutes' statuses are settled after the
/// host contest ([`settle`]).
pub struct VirtualServers;

impl Processor for VirtualServers {
    fn run(&self, ours: &Objects, inputs: Inputs<'_>) -> Output {
        let policies = PolicyBook::new(&ours.policies, &ours.secrets);
        let (drafts, delegations) =
            VirtualServerProcessor::new(inputs, policies).run(&ours.virtual_servers, &ours.virtual_server_routes);
        Output {
            drafts,
            claims: Vec::new(),
            settle: Some(Box::new(delegations)),
        }
    }
}

impl Settle for Delegations {
    fn settle(self: Box<Self>, _: &HostWinners, _: &Options, book: &mut StatusBook, _: &mut L4Routes) {
        settle(*self, book);
    }
}

/// The VirtualServer processor.
pub struct VirtualServerProcessor<'a> {
    inputs: Inputs<'a>,
    /// The Policies `policies` references name.
    policies: PolicyBook<'a>,
    drafts: Vec<Draft>,
    delegations: Delegations,
    validator: RuleValidator,
}

/// A VirtualServer being computed: everything its rules share, and what it has made so far.
struct Server {
    key: ResourceKey,
    age: Arc<Age>,
    host: String,
    /// The position of the next route in NGINX's regex order: the VirtualServer's routes in order, a
    /// VirtualServerRoute's subroutes in place of the route that references it.
    position: usize,
    drafts: Vec<Draft>,
    /// Rule positions per resource (the `n` of the next draft).
    counters: BTreeMap<ResourceKey, usize>,
    /// Warnings for the VirtualServer itself.
    notes: Vec<Note>,
    /// VirtualServerRoutes it uses, with their warnings.
    used: BTreeMap<ResourceKey, Vec<Note>>,
    /// Whether a route's own action covers every path (`/`): then no 404 rule is needed.
    covers_all: bool,
    /// What its `tls` changes in its rules (ROUTING.md §8.6).
    tls: ServerTls,
    /// What its `spec.policies` asks of every rule (what a route's own policies do not replace).
    asked: Asked,
}

impl<'a> VirtualServerProcessor<'a> {
    /// A processor reading and reporting through `inputs`, resolving `policies` references in
    /// `policies`.
    fn new(inputs: Inputs<'a>, policies: PolicyBook<'a>) -> VirtualServerProcessor<'a> {
        VirtualServerProcessor {
            inputs,
            policies,
            drafts: Vec::new(),
            delegations: Delegations::default(),
            validator: RuleValidator::default(),
        }
    }

    /// The drafts of every VirtualServer of ours (with the subroutes of the VirtualServerRoutes it
    /// uses), and what [`settle`] needs afterwards.
    pub fn run(
        mut self,
        servers: &[Arc<VirtualServer>],
        routes: &[Arc<VirtualServerRoute>],
    ) -> (Vec<Draft>, Delegations) {
        let eligible = self.eligible_routes(routes);
        for server in servers {
            self.compute_virtual_server(server, &eligible);
        }
        let mut guard = Guard::default();
        for server in servers {
            let key = key_of(Kind::VirtualServer, &server.metadata);
            let fields = policy_fields(&self.policies, server.spec.policies.as_ref(), &server.spec.routes, &key);
            guard.judge(&key, &server.metadata, fields, self.inputs.book, Status::Valid);
        }
        for route in routes {
            let key = key_of(Kind::VirtualServerRoute, &route.metadata);
            let fields = policy_fields(&self.policies, None, &route.spec.subroutes, &key);
            guard.judge(&key, &route.metadata, fields, self.inputs.book, Status::Valid);
        }
        guard.apply(&mut self.drafts);
        (self.drafts, self.delegations)
    }

    /// The VirtualServerRoutes (the ones the pipeline's class check let in), by key.
    fn eligible_routes<'r>(
        &mut self,
        routes: &'r [Arc<VirtualServerRoute>],
    ) -> BTreeMap<ResourceKey, &'r VirtualServerRoute> {
        let mut eligible = BTreeMap::new();
        for route in routes {
            let key = key_of(Kind::VirtualServerRoute, &route.metadata);
            eligible.insert(key.clone(), &**route);
            let host = normalize_host(&route.spec.host);
            self.delegations.routes.insert(key, (host, Vec::new()));
        }
        eligible
    }

    /// One VirtualServer (ours: the pipeline checked its class): its host and upstreams, then each route; Invalid (no rules) at the
    /// first fault of validation.
    fn compute_virtual_server(&mut self, vs: &VirtualServer, routes: &BTreeMap<ResourceKey, &VirtualServerRoute>) {
        let key = key_of(Kind::VirtualServer, &vs.metadata);
        let age = Arc::new(Age::of(Kind::VirtualServer, &vs.metadata));
        let host = normalize_host(&vs.spec.host);
        let checked = if host.is_empty() {
            Err("spec.host is empty: a VirtualServer needs a host".to_owned())
        } else {
            HostPattern::parse(Some(&host))
                .map(|_| ())
                .map_err(|problem| format!("spec.host: {problem}"))
        };
        let tls = checked.and_then(|()| ServerTls::check(vs.spec.tls.as_ref()));
        let scope = tls.clone().and_then(|_| {
            Scope::new(
                &key,
                &age,
                &vs.spec.upstreams,
                self.inputs.services,
                self.inputs.options,
            )
        });
        let (mut scope, tls) = match (scope, tls) {
            (Ok(scope), Ok(tls)) => (scope, tls),
            (Err(why), _) | (_, Err(why)) => return self.invalid(&key, why),
        };
        let spec_policies = self
            .policies
            .resolve(vs.spec.policies.as_ref(), "spec.policies", &key.namespace, &key);
        let mut server = Server {
            key: key.clone(),
            age,
            host,
            position: 0,
            drafts: Vec::new(),
            counters: BTreeMap::new(),
            notes: Vec::new(),
            used: BTreeMap::new(),
            covers_all: false,
            tls,
            asked: spec_policies.asked,
        };
        server.notes.extend(spec_policies.notes);
        // `/x` and `^~/x` are one location (as NGINX says): compared as table paths.
        let mut seen: BTreeMap<PathSpec, usize> = BTreeMap::new();
        for (ri, route) in vs.spec.routes.iter().enumerate() {
            let at = format!("spec.routes[{ri}]");
            let location = match Location::parse(&route.path) {
                Ok(location) => location,
                Err(why) => return self.invalid(&key, format!("{at}.path: {why}")),
            };
            if let Err(why) = self.validator.path(&location.path_spec()) {
                return self.invalid(&key, format!("{at}.path: {why}"));
            }
            if let Some(first) = seen.insert(location.path_spec(), ri) {
                let why = format!("{at}.path: {:?} is also the path of spec.routes[{first}]", route.path);
                return self.invalid(&key, why);
            }
            let route_policies =
                self.policies
                    .resolve(route.policies.as_ref(), &format!("{at}.policies"), &key.namespace, &key);
            server.notes.extend(route_policies.notes);
            let outcome = match &route.route {
                Some(reference) => {
                    if route.action.is_some() || !route.splits.is_empty() || !route.matches.is_empty() {
                        let why = format!("{at}: a route with `route` may have no action, splits or matches");
                        return self.invalid(&key, why);
                    }
                    let referrer = Referrer {
                        location: &location,
                        asked: &route_policies.asked,
                    };
                    self.compute_reference(&mut server, ri, reference, &referrer, routes);
                    Ok(())
                }
                None => {
                    let asked = route_policies.asked.over(&server.asked);
                    let at = (ri, at.as_str(), &asked);
                    server.add_route(&mut scope, &mut self.validator, &key, at, route, &location)
                }
            };
            if let Err(why) = outcome {
                return self.invalid(&key, why);
            }
        }
        server.notes.append(&mut scope.notes);
        self.finish(server);
    }

    /// A route's `route: [ns/]name`: the VirtualServerRoute's subroutes in its place, or a 502 for
    /// the route's path (with a warning) when that VirtualServerRoute cannot be used.
    fn compute_reference(
        &mut self,
        server: &mut Server,
        ri: usize,
        reference: &str,
        referrer: &Referrer<'_>,
        routes: &BTreeMap<ResourceKey, &VirtualServerRoute>,
    ) {
        let location = referrer.location;
        let at = format!("spec.routes[{ri}].route");
        let (namespace, name) = match reference.split_once('/') {
            Some((ns, name)) => (ns.to_owned(), name.to_owned()),
            None => (server.key.namespace.clone(), reference.to_owned()),
        };
        let target = ResourceKey {
            kind: Kind::VirtualServerRoute,
            namespace,
            name,
        };
        let usable = match routes.get(&target) {
            None if self.inputs.ignored.contains_key(&target) => Err(format!(
                "VirtualServerRoute {}/{} is not ours (its class)",
                target.namespace, target.name
            )),
            None => Err(format!(
                "VirtualServerRoute {}/{} does not exist",
                target.namespace, target.name
            )),
            Some(_) if server.used.contains_key(&target) => Err(format!(
                "VirtualServerRoute {}/{} is already used by another route of this VirtualServer",
                target.namespace, target.name
            )),
            Some(vsr) => self.compute_subroutes(server, &target, vsr, referrer),
        };
        if let Err(why) = usable {
            let message = format!("{at}: {why}; requests for path {:?} get 502", location_text(location));
            server.notes.push((Reason::VirtualServerRouteNotUsable, message));
            let rule = RuleSpec {
                name: format!("{}#{ri}", server.key.display()),
                host: Some(server.host.clone()),
                path: location.path_spec(),
                conditions: Vec::new(),
                action: ActionSpec::DirectResponse(DirectResponse {
                    status: 502,
                    ..DirectResponse::default()
                }),
                hsts: None,
                policy: None,
            };
            let (key, age) = (server.key.clone(), server.age.clone());
            server.push(&key, &age, rule, NginxRank::of(location, server.position, None));
        }
        server.position += 1;
    }

    /// The subroutes of a VirtualServerRoute under `location`, added to `server`; `Err` (why) when it
    /// is on another host or invalid (then it is reported Invalid, and nothing of it is added).
    fn compute_subroutes(
        &mut self,
        server: &mut Server,
        key: &ResourceKey,
        vsr: &VirtualServerRoute,
        referrer: &Referrer<'_>,
    ) -> Result<(), String> {
        let host = normalize_host(&vsr.spec.host);
        if host != server.host {
            return Err(format!(
                "VirtualServerRoute {}/{} is for host {host:?}, not {:?}",
                key.namespace, key.name, server.host
            ));
        }
        let age = Arc::new(Age::of(Kind::VirtualServerRoute, &vsr.metadata));
        let scope = Scope::new(
            key,
            &age,
            &vsr.spec.upstreams,
            self.inputs.services,
            self.inputs.options,
        );
        // An unusable VirtualServerRoute leaves the server as it was: what was added is taken back.
        let (drafts, position, covers_all) = (server.drafts.len(), server.position, server.covers_all);
        let added = scope.map_err(Unusable::Invalid).and_then(|mut scope| {
            self.add_subroutes(server, &mut scope, key, vsr, referrer)?;
            Ok(scope.notes)
        });
        let why = match added {
            Ok(notes) => {
                server.used.insert(key.clone(), notes);
                return Ok(());
            }
            Err(why) => why,
        };
        server.drafts.truncate(drafts);
        server.position = position;
        server.covers_all = covers_all;
        server.counters.remove(key);
        Err(match why {
            Unusable::Invalid(why) => self.invalid_route(key, why),
            Unusable::Misfit(why) => {
                let message = format!(
                    "VirtualServerRoute {}/{} does not fit this route: {why}",
                    key.namespace, key.name
                );
                self.delegations
                    .misfits
                    .entry(key.clone())
                    .or_default()
                    .push((server.key.clone(), why));
                message
            }
        })
    }

    /// The subroutes of a VirtualServerRoute: validated on their own first (Invalid), then each
    /// checked against the referencing route's location (a misfit), as NGINX validates a
    /// VirtualServerRoute before it validates it for a VirtualServer.
    fn add_subroutes(
        &mut self,
        server: &mut Server,
        scope: &mut Scope<'_>,
        key: &ResourceKey,
        vsr: &VirtualServerRoute,
        referrer: &Referrer<'_>,
    ) -> Result<(), Unusable> {
        let location = referrer.location;
        let mut seen: BTreeMap<PathSpec, usize> = BTreeMap::new();
        let mut misfit = None;
        let mut first_kind = None;
        for (si, subroute) in vsr.spec.subroutes.iter().enumerate() {
            let at = format!("spec.subroutes[{si}]");
            let invalid = |why: String| Unusable::Invalid(format!("{at}.{why}"));
            let sub = Location::parse(&subroute.path).map_err(|why| invalid(format!("path: {why}")))?;
            let (kind, first) = (sub.tier(), *first_kind.get_or_insert((sub.tier(), si)));
            if kind != first.0 {
                return Err(invalid(format!(
                    "path: {:?} is not of the location kind of spec.subroutes[{}] (all subroutes use one kind: prefix, ^~ prefix, exact or regex)",
                    subroute.path, first.1
                )));
            }
            if let Some(first) = seen.insert(sub.path_spec(), si) {
                return Err(invalid(format!(
                    "path: {:?} is also the path of spec.subroutes[{first}]",
                    subroute.path
                )));
            }
            if subroute.route.is_some() {
                return Err(invalid(
                    "route: a subroute cannot reference another VirtualServerRoute".to_owned(),
                ));
            }
            if misfit.is_none() && !location.admits(&sub) {
                misfit = Some(format!(
                    "{at}.path: {:?} is not under the referencing route's path {:?} (under a prefix a subroute path must start with it, under an exact path or a regex it must equal it, in the same kind)",
                    subroute.path,
                    location_text(location)
                ));
            }
            let asked = self.subroute_asked(server, scope, &at, subroute, referrer);
            server
                .add_route(scope, &mut self.validator, key, (si, &at, &asked), subroute, &sub)
                .map_err(Unusable::Invalid)?;
        }
        misfit.map_or(Ok(()), |why| Err(Unusable::Misfit(why)))
    }

    /// What a subroute's rules ask: its own `policies`, else those of the route that references
    /// its VirtualServerRoute (as NGINX takes them when a subroute has none), over the server's.
    fn subroute_asked(
        &self,
        server: &Server,
        scope: &mut Scope<'_>,
        at: &str,
        subroute: &Route,
        referrer: &Referrer<'_>,
    ) -> Asked {
        if !is_set(subroute.policies.as_ref()) {
            return referrer.asked.over(&server.asked);
        }
        let at = format!("{at}.policies");
        let own = (self.policies).resolve(subroute.policies.as_ref(), &at, &scope.key.namespace, &server.key);
        scope.notes.extend(own.notes);
        own.asked.over(&server.asked)
    }

    /// Records a VirtualServer as Invalid (it routes nothing).
    fn invalid(&mut self, key: &ResourceKey, why: String) {
        let message = format!("{why}; the VirtualServer routes nothing until it is fixed");
        self.inputs
            .book
            .error(key, Status::Invalid, Reason::VirtualServerInvalid, message);
        self.inputs.book.set(key, Status::Invalid);
    }

    /// Records a VirtualServerRoute as Invalid; returns the reason for the referencing route's warning.
    fn invalid_route(&mut self, key: &ResourceKey, why: String) -> String {
        self.inputs
            .book
            .error(key, Status::Invalid, Reason::VirtualServerInvalid, why.clone());
        self.inputs.book.set(key, Status::Invalid);
        self.delegations.routes.remove(key);
        format!("VirtualServerRoute {}/{} is invalid: {why}", key.namespace, key.name)
    }

    /// A VirtualServer that routes: its 404 for unmatched paths, its drafts, its status.
    fn finish(&mut self, mut server: Server) {
        if !server.covers_all {
            let rule = RuleSpec {
                name: format!("{}{}", server.key.display(), nginx::UNMATCHED_SUFFIX),
                host: Some(server.host.clone()),
                path: PathSpec::Prefix("/".to_owned()),
                conditions: Vec::new(),
                action: ActionSpec::DirectResponse(DirectResponse {
                    status: 404,
                    ..DirectResponse::default()
                }),
                hsts: None,
                policy: None,
            };
            let (key, age) = (server.key.clone(), server.age.clone());
            server.push(&key, &age, rule, NginxRank::unmatched());
        }
        let (key, host) = (server.key.clone(), server.host.clone());
        let redirect = server
            .tls
            .apply(&key, &host, &mut server.drafts.iter_mut().map(|d| &mut d.rule));
        if let Some(rule) = redirect {
            let age = server.age.clone();
            server.push(&key, &age, rule, NginxRank::server());
        }
        let key = server.key.clone();
        record(self.inputs.book, &key, &server.notes);
        for (route, notes) in server.used {
            if let Some((_, users)) = self.delegations.routes.get_mut(&route) {
                users.push(key.clone());
            }
            self.delegations.notes.insert(route, notes);
        }
        self.delegations.servers.insert(key, server.host);
        self.drafts.append(&mut server.drafts);
    }
}

/// ROUTING.md §9: every `policies` list of a VirtualServer (`spec.policies`, reaching every rule
/// of its host, the VirtualServerRoutes' included) or of its routes (`spec.routes[i].policies`) or
/// of a VirtualServerRoute's subroutes (`spec.subroutes[i].policies`), reaching the rules of the
/// resource that holds the route, or every rule of the host when the route hands its policies to a
/// VirtualServerRoute. A list whose every reference the rules' policy enforces ([`PolicyBook`])
/// is enforced; one with a reference that cannot be (missing, invalid, a kind not enforced)
/// denies, saying why.
fn policy_fields(
    policies: &PolicyBook<'_>,
    spec: Option<&serde_json::Value>,
    routes: &[Route],
    owner: &ResourceKey,
) -> Vec<Field> {
    let routes_at = match owner.kind {
        Kind::VirtualServerRoute => "subroutes",
        _ => "routes",
    };
    let mut fields = Vec::new();
    let mut add = |value: Option<&serde_json::Value>, name: String, reach: Reach| {
        if is_set(value) {
            let resolved = policies.resolve(value, &name, &owner.namespace, owner);
            let mut field = Field::new(name, reach);
            match resolved.unenforced.is_empty() {
                true => {
                    field.enforced = true;
                    field.detail = Some(format!("Policy {}", policy_names(value, &owner.namespace)));
                }
                false => field.detail = Some(resolved.unenforced.join("; ")),
            }
            fields.push(field);
        }
    };
    add(spec, "spec.policies".to_owned(), Reach::Host);
    for (i, route) in routes.iter().enumerate() {
        let reach = match route.route {
            Some(_) => Reach::Host,
            None => Reach::OwnRules,
        };
        add(
            route.policies.as_ref(),
            format!("spec.{routes_at}[{i}].policies"),
            reach,
        );
    }
    fields
}

/// The Policies a `policies` list names, `namespace/name`, comma-separated.
fn policy_names(value: Option<&serde_json::Value>, default_namespace: &str) -> String {
    let names: Vec<String> = (value.and_then(serde_json::Value::as_array).into_iter().flatten())
        .map(|reference| {
            let name = reference.get("name").and_then(serde_json::Value::as_str).unwrap_or("?");
            let namespace = (reference.get("namespace").and_then(serde_json::Value::as_str))
                .filter(|n| !n.is_empty())
                .unwrap_or(default_namespace);
            format!("{namespace}/{name}")
        })
        .collect();
    match names.is_empty() {
        true => "(unreadable reference)".to_owned(),
        false => names.join(", "),
    }
}

/// Records a routing resource's status: Valid, or Warning with each note.
fn record(book: &mut StatusBook, key: &ResourceKey, notes: &[Note]) {
    if notes.is_empty() {
        let message = format!("Configuration for {}/{} was added or updated", key.namespace, key.name);
        book.add(
            key,
            Status::Valid,
            ConditionKind::Valid,
            Reason::AddedOrUpdated,
            message,
        );
        book.set(key, Status::Valid);
        return;
    }
    for (reason, message) in notes {
        book.add(key, Status::Warning, ConditionKind::Warning, *reason, message.clone());
    }
    book.set(key, Status::Warning);
}

/// The status of every VirtualServerRoute of ours, once the host contest is decided (and a
/// VirtualServer that lost its host loses its `AddedOrUpdated`): used by a
/// VirtualServer that won its host (Valid, or Warning with its notes), else orphaned —
/// `IgnoredByVirtualServer` when its host's winning VirtualServer does not use it,
/// `NoVirtualServerFound` otherwise.
pub fn settle(delegations: Delegations, book: &mut StatusBook) {
    let winning = |vs: &ResourceKey| matches!(book.get(vs), Some(Status::Valid | Status::Warning));
    let mut winners: BTreeMap<String, ResourceKey> = BTreeMap::new();
    let mut losers = Vec::new();
    for (vs, host) in &delegations.servers {
        if winning(vs) {
            winners.insert(host.clone(), vs.clone());
        } else {
            losers.push(vs.clone());
        }
    }
    let mut decided: Vec<(ResourceKey, Result<Vec<Note>, Note>)> = Vec::new();
    for (route, (host, users)) in &delegations.routes {
        let misfit = |vs: &ResourceKey| {
            let found = delegations.misfits.get(route)?.iter().find(|(by, _)| by == vs);
            found.map(|(_, why)| why.clone())
        };
        let outcome = if users.iter().any(winning) {
            Ok(delegations.notes.get(route).cloned().unwrap_or_default())
        } else if let Some((vs, why)) = winners.get(host).and_then(|vs| Some((vs, misfit(vs)?))) {
            Err((
                Reason::IgnoredByVirtualServer,
                format!(
                    "VirtualServer {}/{} ignores this VirtualServerRoute: {why}; it is valid on its own, but routes nothing there (the route answers 502)",
                    vs.namespace, vs.name
                ),
            ))
        } else if let Some(vs) = winners.get(host) {
            Err((
                Reason::IgnoredByVirtualServer,
                format!(
                    "VirtualServer {}/{} owns host {host:?} and does not reference this VirtualServerRoute, so it routes nothing",
                    vs.namespace, vs.name
                ),
            ))
        } else {
            Err((
                Reason::NoVirtualServerFound,
                format!("no valid VirtualServer that owns host {host:?} references this VirtualServerRoute, so it routes nothing"),
            ))
        };
        decided.push((route.clone(), outcome));
    }
    // A VirtualServer that lost its host was not added after all.
    for vs in &losers {
        book.drop_reason(vs, Reason::AddedOrUpdated);
    }
    for (route, outcome) in decided {
        match outcome {
            Ok(notes) => record(book, &route, &notes),
            Err((reason, message)) => {
                book.add(&route, Status::Orphaned, ConditionKind::Orphaned, reason, message);
                book.set(&route, Status::Orphaned);
            }
        }
    }
}

impl Server {
    /// One route (or subroute) of `owner`'s: its rules added, or skipped with a warning when it
    /// cannot be expressed; `Err` when it fails validation.
    #[allow(clippy::too_many_arguments)]
    fn add_route(
        &mut self,
        scope: &mut Scope<'_>,
        validator: &mut RuleValidator,
        owner: &ResourceKey,
        (index, at, asked): (usize, &str, &Asked),
        route: &Route,
        location: &Location,
    ) -> Result<(), String> {
        let position = self.position;
        self.position += 1;
        let planned = match scope.route(at, route, location) {
            Ok(planned) => planned,
            Err(Fault::Invalid(why)) => return Err(why),
            Err(Fault::Refused(why)) => {
                scope
                    .notes
                    .push((Reason::RouteRefused, format!("{at}: {why}; this route is skipped")));
                return Ok(());
            }
        };
        for plan in planned {
            let suffix = plan
                .branch
                .map(|m| format!("{}{m}", nginx::MATCH_SUFFIX))
                .unwrap_or_default();
            let policy = match &plan.action {
                ActionSpec::Route(_) => asked.apply(plan.policy),
                _ => plan.policy,
            };
            let rule = RuleSpec {
                name: format!("{}#{index}{suffix}", owner.display()),
                host: Some(self.host.clone()),
                path: location.path_spec(),
                conditions: plan.conditions,
                action: plan.action,
                hsts: None,
                policy,
            };
            validator.rule(&rule).map_err(|why| format!("{at}: {why}"))?;
            if plan.branch.is_none() && rule.path == PathSpec::Prefix("/".to_owned()) {
                self.covers_all = true;
            }
            let (key, age) = (scope.key.clone(), scope.age.clone());
            self.push(&key, &age, rule, NginxRank::of(location, position, plan.branch));
        }
        Ok(())
    }

    fn push(&mut self, owner: &ResourceKey, age: &Arc<Age>, rule: RuleSpec, rank: NginxRank) {
        let counter = self.counters.entry(owner.clone()).or_default();
        let position = *counter;
        *counter += 1;
        self.drafts.push(Draft {
            owner: owner.clone(),
            age: age.clone(),
            position,
            claimant: self.key.clone(),
            claimant_age: self.age.clone(),
            rule,
            order: HostOrder::Nginx(Box::new(rank)),
            claiming: Claiming::Contends,
        });
    }
}

/// A location as NGINX writes it, for messages.
fn location_text(location: &Location) -> String {
    match location {
        Location::Exact(p) => format!("={p}"),
        Location::CaretPrefix(p) => format!("^~{p}"),
        Location::Prefix(p) => p.clone(),
        Location::Regex {
            pattern,
            case_insensitive,
        } => format!("{}{pattern}", if *case_insensitive { "~*" } else { "~" }),
    }
}
