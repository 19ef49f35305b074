//! The VirtualServer processor: NGINX's VirtualServer and VirtualServerRoute (ROUTING.md §6,
//! seed 003).
//!
//! A VirtualServer of ours owns `spec.host` alone and competes for it in §2's contest as one
//! resource ([`crate::collisions`]). Its routes become rules on that host: a route's matches in list
//! order, then its own action ([`crate::nginx`] ranks them as NGINX picks locations). A route that
//! references a VirtualServerRoute (`route: [ns/]name`) is replaced by the VirtualServerRoute's
//! subroutes, when it exists, is valid and is on the same host, with subroute paths under the
//! route's; otherwise the route answers 502, never falling through to another route. A
//! VirtualServer or VirtualServerRoute that fails validation (a duplicate path or upstream, an
//! unknown upstream, splits not summing to 100, a regex that does not compile, a malformed action or
//! condition) is Invalid and routes nothing; a route Switchyard cannot express (a `subselector`, a
//! variable other than `$request_method`, a `rewritePath` on a regex location, a split to a
//! `return` or `redirect`) is refused alone with a warning. Requests to the host that no route
//! matches get a 404 from the VirtualServer itself, never another resource's rule.
//!
//! [`VirtualServerProcessor::run`] computes one VirtualServer at a time (`compute_virtual_server`,
//! `compute_reference`); [`settle`] gives VirtualServerRoutes their status once the host contest is
//! decided (orphaned when no winning VirtualServer uses them).

use std::collections::BTreeMap;

use switchyard_table::{
    ActionSpec, Backend, ConditionSpec, DirectResponse, HeaderValue, HostPattern, PathSpec, Redirect, RouteAction,
    RuleSpec,
};

use crate::model::{normalize_host, Draft, Options, RuleValidator};
use crate::nginx::{self, ConditionFault, Location, NginxRank};
use crate::objects::nginx::{Action, Route, Split, Upstream, VirtualServer, VirtualServerRoute};
use crate::objects::{key_of, Age, Kind, ResourceKey};
use crate::processor::Inputs;
use crate::services::{service_unavailable, PortRef, ServicePorts};
use crate::status::{ConditionKind, Reason, Status, StatusBook};

/// Why a route (or the whole resource) does not route.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fault {
    /// The resource fails validation: it routes nothing.
    Invalid(String),
    /// This route cannot be expressed here: it alone is skipped, with a warning.
    Refused(String),
}

/// A warning: its reason and message.
type Note = (Reason, String);

/// One rule a route plans: its match (`None`: the route's own action), conditions and action.
struct Planned {
    branch: Option<usize>,
    conditions: Vec<ConditionSpec>,
    action: ActionSpec,
}

/// What [`settle`] needs once the host contest is decided.
#[derive(Debug, Default)]
pub struct Delegations {
    /// Each eligible, valid VirtualServerRoute: its host and the VirtualServers that use it.
    routes: BTreeMap<ResourceKey, (String, Vec<ResourceKey>)>,
    /// The warnings of each VirtualServerRoute, recorded when some winning VirtualServer uses it.
    notes: BTreeMap<ResourceKey, Vec<Note>>,
    /// The host of each VirtualServer that routes.
    servers: BTreeMap<ResourceKey, String>,
}

/// The VirtualServer processor.
pub struct VirtualServerProcessor<'a> {
    inputs: Inputs<'a>,
    drafts: Vec<Draft>,
    delegations: Delegations,
    validator: RuleValidator,
}

/// A VirtualServer being computed: everything its rules share, and what it has made so far.
struct Server {
    key: ResourceKey,
    age: Age,
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
}

/// The resource whose routes are being compiled (the VirtualServer, or one of its
/// VirtualServerRoutes): its upstreams, its namespace, and the warnings it collects.
struct Scope<'s> {
    key: ResourceKey,
    age: Age,
    upstreams: BTreeMap<&'s str, &'s Upstream>,
    services: &'s ServicePorts,
    options: &'s Options,
    notes: Vec<Note>,
}

impl<'a> VirtualServerProcessor<'a> {
    /// A processor reading and reporting through `inputs`.
    pub fn new(inputs: Inputs<'a>) -> VirtualServerProcessor<'a> {
        VirtualServerProcessor {
            inputs,
            drafts: Vec::new(),
            delegations: Delegations::default(),
            validator: RuleValidator::default(),
        }
    }

    /// The drafts of every VirtualServer of ours (with the subroutes of the VirtualServerRoutes it
    /// uses), and what [`settle`] needs afterwards.
    pub fn run(mut self, servers: &[VirtualServer], routes: &[VirtualServerRoute]) -> (Vec<Draft>, Delegations) {
        let eligible = self.eligible_routes(routes);
        for server in servers {
            self.compute_virtual_server(server, &eligible);
        }
        (self.drafts, self.delegations)
    }

    /// The VirtualServerRoutes the class rules make ours, by key (the others are reported ignored).
    fn eligible_routes<'r>(
        &mut self,
        routes: &'r [VirtualServerRoute],
    ) -> BTreeMap<ResourceKey, &'r VirtualServerRoute> {
        let mut eligible = BTreeMap::new();
        for route in routes {
            let key = key_of(Kind::VirtualServerRoute, &route.metadata);
            match self
                .inputs
                .classes
                .decide(&route.metadata, route.spec.ingress_class_name.as_deref())
            {
                Ok(_) => {
                    eligible.insert(key.clone(), route);
                    let host = normalize_host(&route.spec.host);
                    self.delegations.routes.insert(key, (host, Vec::new()));
                }
                Err(why) => self.inputs.book.ignored_by_class(&key, &why),
            }
        }
        eligible
    }

    /// One VirtualServer: its class, host and upstreams, then each route; Invalid (no rules) at the
    /// first fault of validation.
    fn compute_virtual_server(&mut self, vs: &VirtualServer, routes: &BTreeMap<ResourceKey, &VirtualServerRoute>) {
        let key = key_of(Kind::VirtualServer, &vs.metadata);
        if let Err(why) = self
            .inputs
            .classes
            .decide(&vs.metadata, vs.spec.ingress_class_name.as_deref())
        {
            self.inputs.book.ignored_by_class(&key, &why);
            return;
        }
        let age = Age::of(Kind::VirtualServer, &vs.metadata);
        let host = normalize_host(&vs.spec.host);
        let checked = if host.is_empty() {
            Err("spec.host is empty: a VirtualServer needs a host".to_owned())
        } else {
            HostPattern::parse(Some(&host))
                .map(|_| ())
                .map_err(|problem| format!("spec.host: {problem}"))
        };
        let scope = checked.and_then(|()| {
            Scope::new(
                &key,
                &age,
                &vs.spec.upstreams,
                self.inputs.services,
                self.inputs.options,
            )
        });
        let mut scope = match scope {
            Ok(scope) => scope,
            Err(why) => return self.invalid(&key, why),
        };
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
        };
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
            let outcome = match &route.route {
                Some(reference) => {
                    if route.action.is_some() || !route.splits.is_empty() || !route.matches.is_empty() {
                        let why = format!("{at}: a route with `route` may have no action, splits or matches");
                        return self.invalid(&key, why);
                    }
                    self.compute_reference(&mut server, ri, reference, &location, routes);
                    Ok(())
                }
                None => server.add_route(&mut scope, &mut self.validator, &key, ri, &at, route, &location),
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
        location: &Location,
        routes: &BTreeMap<ResourceKey, &VirtualServerRoute>,
    ) {
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
            None if self.inputs.book.get(&target) == Some(Status::Ignored) => Err(format!(
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
            Some(vsr) => self.compute_subroutes(server, &target, vsr, location),
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
        location: &Location,
    ) -> Result<(), String> {
        let host = normalize_host(&vsr.spec.host);
        if host != server.host {
            return Err(format!(
                "VirtualServerRoute {}/{} is for host {host:?}, not {:?}",
                key.namespace, key.name, server.host
            ));
        }
        let age = Age::of(Kind::VirtualServerRoute, &vsr.metadata);
        let scope = Scope::new(
            key,
            &age,
            &vsr.spec.upstreams,
            self.inputs.services,
            self.inputs.options,
        );
        // An invalid subroute leaves the server as it was: what was added is taken back.
        let (drafts, position, covers_all) = (server.drafts.len(), server.position, server.covers_all);
        let added = scope.and_then(|mut scope| {
            self.add_subroutes(server, &mut scope, key, vsr, location)?;
            Ok(scope.notes)
        });
        match added {
            Ok(notes) => {
                server.used.insert(key.clone(), notes);
                Ok(())
            }
            Err(why) => {
                server.drafts.truncate(drafts);
                server.position = position;
                server.covers_all = covers_all;
                server.counters.remove(key);
                Err(self.invalid_route(key, why))
            }
        }
    }

    /// The subroutes of a VirtualServerRoute, each checked against the referencing route's location.
    fn add_subroutes(
        &mut self,
        server: &mut Server,
        scope: &mut Scope<'_>,
        key: &ResourceKey,
        vsr: &VirtualServerRoute,
        location: &Location,
    ) -> Result<(), String> {
        let mut seen: BTreeMap<PathSpec, usize> = BTreeMap::new();
        for (si, subroute) in vsr.spec.subroutes.iter().enumerate() {
            let at = format!("spec.subroutes[{si}]");
            let sub = Location::parse(&subroute.path).map_err(|why| format!("{at}.path: {why}"))?;
            if !location.admits(&sub) {
                return Err(format!(
                    "{at}.path: {:?} is not under the referencing route's path {:?} (under a prefix a subroute path must start with it, under an exact path or a regex it must equal it, in the same kind)",
                    subroute.path,
                    location_text(location)
                ));
            }
            if let Some(first) = seen.insert(sub.path_spec(), si) {
                return Err(format!(
                    "{at}.path: {:?} is also the path of spec.subroutes[{first}]",
                    subroute.path
                ));
            }
            if subroute.route.is_some() {
                return Err(format!(
                    "{at}.route: a subroute cannot reference another VirtualServerRoute"
                ));
            }
            server.add_route(scope, &mut self.validator, key, si, &at, subroute, &sub)?;
        }
        Ok(())
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
            };
            let (key, age) = (server.key.clone(), server.age.clone());
            server.push(&key, &age, rule, NginxRank::unmatched());
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
        let outcome = if users.iter().any(winning) {
            Ok(delegations.notes.get(route).cloned().unwrap_or_default())
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
        index: usize,
        at: &str,
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
            let rule = RuleSpec {
                name: format!("{}#{index}{suffix}", owner.display()),
                host: Some(self.host.clone()),
                path: location.path_spec(),
                conditions: plan.conditions,
                action: plan.action,
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

    fn push(&mut self, owner: &ResourceKey, age: &Age, rule: RuleSpec, rank: NginxRank) {
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
            nginx: Some(rank),
        });
    }
}

impl<'s> Scope<'s> {
    /// A resource's scope: its upstreams checked (names unique and given, a service and a port each).
    fn new(
        key: &ResourceKey,
        age: &Age,
        upstreams: &'s [Upstream],
        services: &'s ServicePorts,
        options: &'s Options,
    ) -> Result<Scope<'s>, String> {
        let mut by_name = BTreeMap::new();
        for (ui, upstream) in upstreams.iter().enumerate() {
            let at = format!("spec.upstreams[{ui}]");
            if upstream.name.is_empty() || upstream.service.is_empty() {
                return Err(format!("{at}: an upstream needs a name and a service"));
            }
            if !(1..=65535).contains(&upstream.port) {
                return Err(format!("{at}.port: {} is not a port (1 to 65535)", upstream.port));
            }
            if by_name.insert(upstream.name.as_str(), upstream).is_some() {
                return Err(format!("{at}.name: upstream {:?} is defined twice", upstream.name));
            }
        }
        Ok(Scope {
            key: key.clone(),
            age: age.clone(),
            upstreams: by_name,
            services,
            options,
            notes: Vec::new(),
        })
    }

    /// The rules of one route: each match in order, then the route's own action (or splits).
    fn route(&mut self, at: &str, route: &Route, location: &Location) -> Result<Vec<Planned>, Fault> {
        let own = self.choice(at, route.action.as_ref(), &route.splits, location)?;
        let mut planned = Vec::with_capacity(route.matches.len() + 1);
        for (mi, m) in route.matches.iter().enumerate() {
            let at = format!("{at}.matches[{mi}]");
            if m.conditions.is_empty() {
                return Err(Fault::Invalid(format!(
                    "{at}.conditions: a match needs at least one condition"
                )));
            }
            let conditions = m
                .conditions
                .iter()
                .enumerate()
                .map(|(ci, c)| {
                    nginx::condition(c).map_err(|fault| match fault {
                        ConditionFault::Invalid(why) => Fault::Invalid(format!("{at}.conditions[{ci}]: {why}")),
                        ConditionFault::Unsupported(why) => Fault::Refused(format!("{at}.conditions[{ci}]: {why}")),
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let action = self.choice(&at, m.action.as_ref(), &m.splits, location)?;
            planned.push(Planned {
                branch: Some(mi),
                conditions,
                action,
            });
        }
        planned.push(Planned {
            branch: None,
            conditions: Vec::new(),
            action: own,
        });
        Ok(planned)
    }

    /// Exactly one of `action` and `splits`.
    fn choice(
        &mut self,
        at: &str,
        action: Option<&Action>,
        splits: &[Split],
        location: &Location,
    ) -> Result<ActionSpec, Fault> {
        match (action, splits.is_empty()) {
            (Some(action), true) => self.action(&format!("{at}.action"), action, location),
            (None, false) => self.splits(&format!("{at}.splits"), splits),
            _ => Err(Fault::Invalid(format!(
                "{at}: exactly one of action and splits is required"
            ))),
        }
    }

    /// `pass`, `proxy`, `return` or `redirect`.
    fn action(&mut self, at: &str, action: &Action, location: &Location) -> Result<ActionSpec, Fault> {
        let given = [
            action.pass.is_some(),
            action.proxy.is_some(),
            action.return_.is_some(),
            action.redirect.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(Fault::Invalid(format!(
                "{at}: exactly one of pass, proxy, return and redirect is required"
            )));
        }
        if let Some(upstream) = &action.pass {
            return self.forward(&format!("{at}.pass"), &[(upstream.as_str(), 1)], None, Vec::new());
        }
        if let Some(proxy) = &action.proxy {
            if proxy.rewrite_path.is_some() && matches!(location, Location::Regex { .. }) {
                return Err(Fault::Refused(format!(
                    "{at}.proxy.rewritePath on a regex location needs NGINX's regex captures, which the table cannot express"
                )));
            }
            let set = proxy
                .request_headers
                .iter()
                .flat_map(|h| h.set.iter())
                .map(|h| HeaderValue {
                    name: h.name.clone(),
                    value: h.value.clone(),
                })
                .collect();
            let upstream = [(proxy.upstream.as_str(), 1)];
            return self.forward(&format!("{at}.proxy"), &upstream, proxy.rewrite_path.clone(), set);
        }
        if let Some(ret) = &action.return_ {
            let code = ret.code.unwrap_or(200);
            let status = u16::try_from(code)
                .ok()
                .filter(|c| matches!(c / 100, 2 | 4 | 5))
                .ok_or_else(|| Fault::Invalid(format!("{at}.return.code: {code} is not a 2xx, 4xx or 5xx status")))?;
            return Ok(ActionSpec::DirectResponse(DirectResponse {
                status,
                body: Some(ret.body.clone()),
                content_type: Some(ret.type_.clone().unwrap_or_else(|| "text/plain".to_owned())),
                headers: ret
                    .headers
                    .iter()
                    .map(|h| HeaderValue {
                        name: h.name.clone(),
                        value: h.value.clone(),
                    })
                    .collect(),
            }));
        }
        let redirect = action.redirect.clone().unwrap_or_default();
        let code = redirect.code.unwrap_or(301);
        let status = u16::try_from(code)
            .ok()
            .filter(|c| matches!(c, 301 | 302 | 307 | 308))
            .ok_or_else(|| Fault::Invalid(format!("{at}.redirect.code: {code} is not 301, 302, 307 or 308")))?;
        Ok(ActionSpec::Redirect(Redirect {
            url: redirect.url,
            status,
        }))
    }

    /// `splits`: two or more, weights 0 to 100 summing to 100, each a `pass` (or a `proxy` to an
    /// upstream, nothing more): weighted backends.
    fn splits(&mut self, at: &str, splits: &[Split]) -> Result<ActionSpec, Fault> {
        if splits.len() < 2 {
            return Err(Fault::Invalid(format!("{at}: splits need at least two entries")));
        }
        let mut weighted = Vec::new();
        for (si, split) in splits.iter().enumerate() {
            let at = format!("{at}[{si}]");
            let weight = u32::try_from(split.weight)
                .ok()
                .filter(|w| *w <= 100)
                .ok_or_else(|| Fault::Invalid(format!("{at}.weight: {} is not between 0 and 100", split.weight)))?;
            let upstream = match &split.action {
                Some(Action {
                    pass: Some(upstream),
                    proxy: None,
                    return_: None,
                    redirect: None,
                }) => upstream.as_str(),
                Some(Action {
                    pass: None,
                    proxy: Some(proxy),
                    return_: None,
                    redirect: None,
                }) if proxy.rewrite_path.is_none() && proxy.request_headers.is_none() => proxy.upstream.as_str(),
                Some(_) => {
                    return Err(Fault::Refused(format!(
                        "{at}.action: a split can only pass to an upstream here (weighted backends); return, redirect and proxy rewrites in splits cannot be expressed"
                    )))
                }
                None => return Err(Fault::Invalid(format!("{at}.action: a split needs an action"))),
            };
            weighted.push((upstream, weight));
        }
        let sum: u32 = weighted.iter().map(|(_, w)| w).sum();
        if sum != 100 {
            return Err(Fault::Invalid(format!("{at}: the weights sum to {sum}, not 100")));
        }
        self.forward(at, &weighted, None, Vec::new())
    }

    /// Forwarding to weighted upstreams; a service whose port cannot be resolved gets no traffic
    /// (warning `ServicePortNotFound`), and the route answers 503 when none is left.
    fn forward(
        &mut self,
        at: &str,
        upstreams: &[(&str, u32)],
        rewrite_prefix: Option<String>,
        set_headers: Vec<HeaderValue>,
    ) -> Result<ActionSpec, Fault> {
        let mut backends = Vec::new();
        for (name, weight) in upstreams {
            let upstream =
                self.upstreams.get(name).copied().ok_or_else(|| {
                    Fault::Invalid(format!("{at}: upstream {name:?} is not defined in spec.upstreams"))
                })?;
            if upstream.subselector.is_some() {
                return Err(Fault::Refused(format!(
                    "{at}: upstream {name:?} has a subselector, which a cluster name cannot express"
                )));
            }
            let (namespace, service) = match upstream.service.split_once('/') {
                Some((ns, svc)) => (ns.to_owned(), svc.to_owned()),
                None => (self.key.namespace.clone(), upstream.service.clone()),
            };
            match self
                .services
                .resolve(&namespace, &service, PortRef::Number(upstream.port))
            {
                Ok(port) => backends.push(Backend {
                    cluster: self.options.cluster(&namespace, &service, port),
                    weight: *weight,
                }),
                Err(why) => self.notes.push((
                    Reason::ServicePortNotFound,
                    format!("{at}: upstream {name:?}: {why}; it gets no traffic"),
                )),
            }
        }
        if backends.iter().all(|b| b.weight == 0) {
            return Ok(service_unavailable());
        }
        Ok(ActionSpec::Route(RouteAction {
            backends,
            rewrite_prefix,
            set_headers,
            remove_headers: Vec::new(),
        }))
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
