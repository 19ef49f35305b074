//! The HTTPProxy processor: inclusion trees (ROUTING.md §3, seed 004, Contour's rules).
//!
//! Only roots (`spec.virtualhost.fqdn`) start a tree. Walking down, include conditions accumulate:
//! prefixes concatenate (repeated `/` collapse), a child's `exact` or `regex` after inherited
//! prefixes becomes one exact or regex, header and query conditions are unioned. An include of a
//! proxy that is missing, closes a cycle or is another root is skipped and its conditions answer
//! 502, so a broken delegation is visible. An include or a route whose own conditions are malformed
//! is skipped alone; conditions that contradict each other after merging make the proxy that holds
//! them un-routable. A service whose port cannot be resolved leaves its route answering 503
//! ([`crate::services`]). Proxies no valid root reaches are orphaned. Every HTTPProxy gets a status.
//! A proxy's access controls (ROUTING.md §9, [`access_fields`]) turn the rules they protect into 403s
//! unless waived: a virtual host's reach every route of its tree, a route's its own proxy's rules.

use crate::upstream::variant::{UpstreamProtocol, Variant};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use switchyard_table::{
    ActionSpec, Affinity, Backend, ConditionSource, ConditionSpec, Cors, DirectResponse, HeaderValue, HostPattern,
    MatchOp, PathSpec, Policy, RateLimit, RouteAction, RuleSpec,
};

use self::ip_filter::{IpFilter, IpFilterRead};
use crate::access::{is_set, Field, Guard, Reach};
mod cors;
mod ip_filter;
mod passthrough;
mod ratelimit;
mod timing;
mod upstream;

use crate::https::httpproxy::{check as check_tls, RootTls};
use crate::https::routing::{https_redirect, only, Scheme};
use crate::https::secrets::Secrets;
use crate::model::{normalize_host, validate_rule, Claiming, Draft, HostOrder};
use crate::objects::secret::Secret;
use crate::objects::{
    key_of, Age, HTTPProxy, HTTPProxySpec, HeaderMatch, Include, Kind, MatchCondition, Objects, ProxyRoute, QueryMatch,
    RateLimitPolicy, ResourceKey,
};
use crate::processor::{Ignored, Inputs, Output, Processor};
use crate::services::{service_unavailable, PortRef};
use crate::status::{ConditionKind, Reason, Status};
use passthrough::{Passthrough, Passthroughs};

/// The HTTPProxy processor in the pipeline's list: [`HTTPProxyProcessor`] over the proxies that
/// are ours; their rules keep the general order ([`crate::model::HostOrder::General`]).
pub struct HTTPProxies;

impl Processor for HTTPProxies {
    fn run(&self, ours: &Objects, inputs: Inputs<'_>) -> Output {
        let (drafts, passthroughs) = HTTPProxyProcessor::new(inputs, &ours.secrets).run(&ours.http_proxies);
        Output {
            drafts,
            claims: passthroughs.claims(),
            settle: Some(Box::new(passthroughs)),
        }
    }
}

/// The HTTPProxy processor: walks every root's inclusion tree into drafts and records every proxy's
/// status.
pub struct HTTPProxyProcessor<'a> {
    inputs: Inputs<'a>,
    /// The Secrets roots' `tls` names (ROUTING.md §8.5).
    secrets: Secrets<'a>,
    drafts: Vec<Draft>,
    /// The next rule position of each proxy (the `n` of its rules' names).
    counters: BTreeMap<ResourceKey, usize>,
    /// Proxies some valid root reached.
    reached: BTreeSet<ResourceKey>,
    /// Proxies whose conditions contradict each other: none of their own rules reach the table.
    unroutable: BTreeSet<ResourceKey>,
    /// Proxies visited for the current root.
    visits: usize,
    /// The roots that pass TLS through (ROUTING.md §8.5).
    passthroughs: Passthroughs,
}

/// The proxies the class rules let in, and why each other one was left out.
struct Forest<'p, 'i> {
    eligible: BTreeMap<ResourceKey, &'p HTTPProxy>,
    ignored: &'i Ignored,
}

/// What a proxy inherits from the includes above it.
#[derive(Debug, Clone)]
struct Context {
    root: ResourceKey,
    root_age: Arc<Age>,
    host: String,
    /// The concatenated include prefixes, `""` at the root.
    prefix: String,
    /// The include condition blocks from the root down, as written: their header and query
    /// conditions are unioned into every rule below (their prefixes are in `prefix`).
    blocks: Vec<MatchCondition>,
    /// The proxies from the root down to here, to spot cycles.
    stack: Vec<ResourceKey>,
    /// Whether the root terminates TLS (ROUTING.md §8.5): its routes redirect plain HTTP to https
    /// unless they permit it; a root without (or passing TLS through) serves its routes on plain
    /// HTTP only.
    terminates_tls: bool,
    /// The root's `virtualhost.rateLimitPolicy.local`: the bucket every route of the host shares
    /// unless it has its own.
    rate_limit: Option<RateLimit>,
    /// The root's `virtualhost.corsPolicy` ([`cors`]): every route of the host answers with it.
    cors: Option<Arc<Cors>>,
    /// The root's `virtualhost.ipAllowPolicy` / `ipDenyPolicy` ([`ip_filter`]): every route's
    /// address ranges unless it has its own.
    ip_filter: Option<IpFilter>,
}

impl Context {
    /// The inherited prefix as a path (`/` at the root): the path of a route without a path condition
    /// and of a broken include's 502.
    fn prefix_path(&self) -> PathSpec {
        PathSpec::Prefix(if self.prefix.is_empty() {
            "/".to_owned()
        } else {
            self.prefix.clone()
        })
    }
}

/// The deepest include chain followed.
const MAX_DEPTH: usize = 64;
/// The most proxy visits one root's tree may take (a proxy included twice is visited twice).
const MAX_VISITS_PER_ROOT: usize = 10_000;

impl<'a> HTTPProxyProcessor<'a> {
    /// A processor reading and reporting through `inputs`.
    pub fn new(inputs: Inputs<'a>, secrets: &'a [Arc<Secret>]) -> HTTPProxyProcessor<'a> {
        HTTPProxyProcessor {
            inputs,
            secrets: Secrets::new(secrets),
            drafts: Vec::new(),
            counters: BTreeMap::new(),
            reached: BTreeSet::new(),
            unroutable: BTreeSet::new(),
            visits: 0,
            passthroughs: Passthroughs::default(),
        }
    }

    /// The drafts of every tree: each valid root walked down its includes; then every proxy that
    /// no root reached is orphaned, and the rules of un-routable proxies are dropped.
    pub fn run(mut self, proxies: &[Arc<HTTPProxy>]) -> (Vec<Draft>, Passthroughs) {
        let forest = self.forest(proxies);
        for (key, proxy) in &forest.eligible {
            if let Some(context) = self.root_context(key, proxy) {
                self.visits = 0;
                self.compute_proxy(&forest, key, &context);
            }
        }
        self.report_unreported(&forest);
        let mut guard = Guard::default();
        for (key, proxy) in &forest.eligible {
            let mut fields = access_fields(&proxy.spec);
            enforce_ip_filters(&mut fields, &proxy.spec);
            guard.judge(key, &proxy.metadata, fields, self.inputs.book, Status::Valid);
        }
        let unroutable = self.unroutable;
        let mut drafts: Vec<Draft> = self
            .drafts
            .into_iter()
            .filter(|d| !unroutable.contains(&d.owner))
            .collect();
        guard.apply(&mut drafts);
        (drafts, self.passthroughs)
    }

    /// The proxies that are ours by key (the pipeline's class check let them in, children
    /// included), and the ones it left out.
    fn forest<'p>(&self, proxies: &'p [Arc<HTTPProxy>]) -> Forest<'p, 'a> {
        Forest {
            eligible: proxies
                .iter()
                .map(|proxy| (key_of(Kind::HTTPProxy, &proxy.metadata), &**proxy))
                .collect(),
            ignored: self.inputs.ignored,
        }
    }

    /// The context a root starts its tree with, or `None` when the proxy is no root or an invalid
    /// one (no fqdn, a malformed fqdn, a namespace `--root-namespaces` leaves out).
    fn root_context(&mut self, key: &ResourceKey, proxy: &HTTPProxy) -> Option<Context> {
        let vhost = proxy.spec.virtualhost.as_ref()?;
        let fqdn = normalize_host(&vhost.fqdn);
        if fqdn.is_empty() {
            self.invalid(
                key,
                Reason::VirtualHostFqdnMissing,
                "spec.virtualhost.fqdn is empty: a root needs a host".to_owned(),
            );
            return None;
        }
        if let Err(problem) = HostPattern::parse(Some(&fqdn)) {
            self.invalid(
                key,
                Reason::VirtualHostFqdnInvalid,
                format!("spec.virtualhost.fqdn: {problem}"),
            );
            return None;
        }
        let roots = &self.inputs.options.root_namespaces;
        if !roots.is_empty() && !roots.contains(&key.namespace) {
            let message = format!(
                "root HTTPProxies are allowed only in the namespaces {roots:?} (--root-namespaces); namespace {:?} is not one of them",
                key.namespace
            );
            self.invalid(key, Reason::RootProxyNotAllowedInNamespace, message);
            return None;
        }
        let has_default = self.inputs.options.default_certificate.is_some();
        let terminates_tls = match check_tls(&key.namespace, vhost.tls.as_ref(), has_default, &mut self.secrets) {
            Ok(RootTls::Passthrough) => {
                let Some(service) = proxy.spec.tcpproxy.as_ref().and_then(|t| t.services.first()) else {
                    let message =
                        "spec.virtualhost.tls.passthrough needs spec.tcpproxy with a service; the proxy routes nothing";
                    self.invalid(key, Reason::TLSConfigNotValid, message.to_owned());
                    return None;
                };
                if proxy.spec.tcpproxy.as_ref().is_some_and(|t| t.services.len() > 1) {
                    let message = format!(
                        "spec.tcpproxy.services: TLS is passed through to {} only (Envoy's tcp_proxy reaches one cluster here)",
                        service.name
                    );
                    self.inputs.book.add(
                        key,
                        Status::Valid,
                        ConditionKind::Warning,
                        Reason::ServiceInvalid,
                        message,
                    );
                }
                self.passthroughs.0.push(Passthrough {
                    key: key.clone(),
                    age: Age::of(Kind::HTTPProxy, &proxy.metadata),
                    host: fqdn.clone(),
                    service: service.clone(),
                });
                false
            }
            Ok(tls) => matches!(tls, RootTls::Terminated(..)),
            Err((reason, message)) => {
                self.invalid(key, reason, format!("{message}; the proxy routes nothing"));
                return None;
            }
        };
        let cors = match vhost
            .cors_policy
            .as_ref()
            .map(|p| cors::read(p, "spec.virtualhost.corsPolicy"))
        {
            None => None,
            Some(Ok(cors)) => Some(Arc::new(cors)),
            Some(Err(why)) => {
                self.invalid(
                    key,
                    Reason::PolicyDidNotParse,
                    format!("{why}; the proxy routes nothing"),
                );
                return None;
            }
        };
        let ip_filter = match ip_filter::read(
            vhost.ip_allow_policy.as_ref(),
            vhost.ip_deny_policy.as_ref(),
            "spec.virtualhost",
        ) {
            Ok(IpFilterRead::Enforced(filter)) => Some(filter),
            Ok(_) => None,
            Err(why) => {
                self.invalid(
                    key,
                    Reason::PolicyDidNotParse,
                    format!("{why}; the proxy routes nothing"),
                );
                return None;
            }
        };
        let zone = format!("{}/virtualhost", key.display());
        let policy = vhost.rate_limit_policy.as_ref();
        let Ok(rate_limit) = self.local_rate_limit(key, policy, ("spec.virtualhost", zone, "the proxy routes nothing"))
        else {
            return None;
        };
        Some(Context {
            root: key.clone(),
            root_age: Arc::new(Age::of(Kind::HTTPProxy, &proxy.metadata)),
            host: fqdn,
            prefix: String::new(),
            blocks: Vec::new(),
            stack: vec![key.clone()],
            terminates_tls,
            rate_limit,
            cors,
            ip_filter,
        })
    }

    /// One proxy of a tree: its routes, then its includes, each followed down. Bounded in depth
    /// and in visits per root.
    fn compute_proxy(&mut self, forest: &Forest<'_, '_>, key: &ResourceKey, context: &Context) {
        let Some(proxy) = forest.eligible.get(key).copied() else {
            return;
        };
        // Diamonds of includes multiply; a chain can be as deep as there are proxies. Bound both so
        // that no input can exhaust the stack or the time.
        if context.stack.len() > MAX_DEPTH || self.visits >= MAX_VISITS_PER_ROOT {
            let message = format!(
                "the include tree below this root is deeper than {MAX_DEPTH} levels or visits more than {MAX_VISITS_PER_ROOT} proxies; the part beyond that is not routed"
            );
            self.invalid(&context.root, Reason::IncludeTreeTooLarge, message);
            return;
        }
        self.visits += 1;
        self.reached.insert(key.clone());
        let age = Arc::new(Age::of(Kind::HTTPProxy, &proxy.metadata));
        for (ri, route) in proxy.spec.routes.iter().enumerate() {
            self.compute_route(key, &age, ri, route, context);
        }
        for (ii, include) in proxy.spec.includes.iter().enumerate() {
            self.compute_include(forest, key, &age, ii, include, context);
        }
    }

    /// One include: its conditions added to the context and the child followed; a broken include
    /// (missing, a cycle, a root) answers 502 for its conditions, a malformed one is skipped.
    fn compute_include(
        &mut self,
        forest: &Forest<'_, '_>,
        key: &ResourceKey,
        age: &Arc<Age>,
        ii: usize,
        include: &Include,
        context: &Context,
    ) {
        let at = format!("spec.includes[{ii}]");
        let Some(mut child) = self.include_context(key, &at, include, context) else {
            return;
        };
        match include_target(forest, key, &at, include, context) {
            Ok(target) => {
                child.stack.push(target.clone());
                self.compute_proxy(forest, &target, &child);
            }
            Err((reason, message)) => {
                self.invalid(key, reason, message);
                self.bad_gateway(key, age, &child);
            }
        }
    }

    /// The context below an include: its prefix joined and its condition blocks added; `None`
    /// (reported, the include skipped) when its conditions are malformed or contradict.
    fn include_context(
        &mut self,
        key: &ResourceKey,
        at: &str,
        include: &Include,
        context: &Context,
    ) -> Option<Context> {
        let prefix = match path_condition(&include.conditions, Block::Include) {
            Ok(prefix) => prefix,
            Err((reason, why)) => {
                self.invalid(key, reason, format!("{at}.conditions: {why}; this include is skipped"));
                return None;
            }
        };
        let mut child = context.clone();
        if let Some(WrittenPath::Prefix(p)) = prefix {
            child.prefix = join_path(&child.prefix, p);
        }
        child.blocks.extend(include.conditions.iter().cloned());
        if let Err((reason, why)) = conflicts(&child.blocks) {
            self.invalid(key, reason, format!("{at}: {why}; this include is skipped"));
            return None;
        }
        Some(child)
    }

    /// One route: its path and conditions under the context, its backends, the rule drafted.
    fn compute_route(&mut self, key: &ResourceKey, age: &Arc<Age>, ri: usize, route: &ProxyRoute, context: &Context) {
        let at = format!("spec.routes[{ri}]");
        // Every written route takes a position, refused or not, so names do not shift when one is fixed.
        let n = self.next_position(key);
        let Some((path, conditions)) = self.route_match(key, &at, route, context) else {
            return;
        };
        // The table would refuse the rule too; checked here to name the manifest's own field.
        let set = route.request_headers_policy.iter().flat_map(|p| p.set.iter());
        for (hi, header) in set.enumerate() {
            if let Err(fault) = switchyard_table::field::field_value(&header.value) {
                let field = format!("{at}.requestHeadersPolicy.set[{hi}].value");
                let message = format!("{field}: {:?}: {fault}; the route is skipped", header.value);
                self.invalid(key, Reason::RequestHeadersPolicyInvalid, message);
                return;
            }
        }
        let Some(policy) = self.route_policy(key, &at, (route, context)) else {
            return;
        };
        let Some((backends, affinity)) = self.backends(key, &at, route) else {
            return;
        };
        // A route none of whose services can be resolved answers 503 rather than letting its
        // requests fall through to a shorter path (ROUTING.md §5).
        let action = if backends.is_empty() {
            service_unavailable()
        } else {
            route_action(route, &path, context, (backends, affinity))
        };
        let rule = RuleSpec {
            name: format!("{}#{n}", key.display()),
            host: Some(context.host.clone()),
            path,
            conditions,
            action,
            hsts: None,
            policy,
        };
        self.push_valid(key, age, n, (rule, route.permit_insecure), context, &at);
    }

    /// The policy of a route's rule: its timeouts and retries as a gateway route of its own
    /// ([`timing`]), on a gateway whose routes are Switchyard's (elsewhere they are reported not
    /// honoured), its local rate limit ([`ratelimit`]: its own, else its host's) and its host's CORS
    /// ([`cors`]). `None` (reported) when they are not valid: the route is skipped.
    fn route_policy(
        &mut self,
        key: &ResourceKey,
        at: &str,
        (route, context): (&ProxyRoute, &Context),
    ) -> Option<Option<Arc<Policy>>> {
        let settings = match timing::route_settings(route, at) {
            Ok(settings) => settings,
            Err(why) => {
                let reason = match why.contains(".retryPolicy.") {
                    true => Reason::RetryPolicyNotValid,
                    false => Reason::TimeoutPolicyNotValid,
                };
                self.invalid(key, reason, format!("{why}; the route is skipped"));
                return None;
            }
        };
        let zone = format!("{}/{at}", key.display());
        let own = self.local_rate_limit(
            key,
            route.rate_limit_policy.as_ref(),
            (at, zone, "the route is skipped"),
        );
        let Ok(own) = own else {
            return None;
        };
        let rate_limit = own.or_else(|| context.rate_limit.clone());
        let ip_filter = match ip_filter::read(route.ip_allow_policy.as_ref(), route.ip_deny_policy.as_ref(), at) {
            Ok(IpFilterRead::Enforced(filter)) => Some(filter),
            // A route's own list that is not enforced denies its rules (§9); none: the host's.
            Ok(IpFilterRead::NotEnforced(_)) | Ok(IpFilterRead::None) => context.ip_filter.clone(),
            Err(why) => {
                self.invalid(key, Reason::PolicyDidNotParse, format!("{why}; the route is skipped"));
                return None;
            }
        };
        let (allow, deny) = ip_filter.map(|f| (f.allow, f.deny)).unwrap_or_default();
        let name = settings.name();
        if name.is_some() && !self.inputs.options.gateway_routes {
            let message = format!(
                "{at}: its timeoutPolicy.response and .idle and its retryPolicy need a route of its own, which only \
                 a gateway whose routes come from switchyard watch --clusters-dir has; the gateway's route applies"
            );
            let why = (ConditionKind::Warning, Reason::RouteSettingNotHonored);
            self.inputs.book.add(key, Status::Valid, why.0, why.1, message);
        }
        let policy = Policy {
            route: name.filter(|_| self.inputs.options.gateway_routes),
            rate_limit,
            cors: context.cors.clone(),
            allow,
            deny,
            ..Policy::default()
        };
        Some((policy != Policy::default()).then(|| Arc::new(policy)))
    }

    /// The bucket of a `rateLimitPolicy` at `at` counted in `zone` ([`ratelimit`]): its `local`
    /// part, `None` without one; its `global` part and a `responseHeadersToAdd` are noted as not
    /// applied. `Err` (reported `RateLimitPolicyNotValid`, with `consequence`) when Contour refuses it.
    fn local_rate_limit(
        &mut self,
        key: &ResourceKey,
        policy: Option<&RateLimitPolicy>,
        (at, zone, consequence): (&str, String, &str),
    ) -> Result<Option<RateLimit>, ()> {
        if policy.is_some_and(|p| is_set(p.global.as_ref())) {
            self.not_applied(
                key,
                format!("{at}.rateLimitPolicy.global: it needs a rate limit service, which this gateway has not; not applied"),
            );
        }
        let local = policy.and_then(|p| p.local.as_ref());
        let limit = match local.map(|local| ratelimit::local(local, zone, &format!("{at}.rateLimitPolicy.local"))) {
            None => None,
            Some(Ok((limit, note))) => {
                if let Some(note) = note {
                    self.not_applied(key, note);
                }
                Some(limit)
            }
            Some(Err(why)) => {
                self.invalid(key, Reason::RateLimitPolicyNotValid, format!("{why}; {consequence}"));
                return Err(());
            }
        };
        Ok(limit)
    }

    /// Notes a setting of `key` that is not applied (`UpstreamSettingNotHonored`).
    fn not_applied(&mut self, key: &ResourceKey, message: String) {
        let why = (ConditionKind::Warning, Reason::UpstreamSettingNotHonored);
        self.inputs.book.add(key, Status::Valid, why.0, why.1, message);
    }

    /// What a route matches: its path after the inherited prefix, and the inherited and its own
    /// header and query conditions. `None` (reported) when they are malformed (the route is
    /// skipped) or contradict (the whole proxy becomes un-routable).
    fn route_match(
        &mut self,
        key: &ResourceKey,
        at: &str,
        route: &ProxyRoute,
        context: &Context,
    ) -> Option<(PathSpec, Vec<ConditionSpec>)> {
        let path = match path_condition(&route.conditions, Block::Route) {
            Ok(path) => path,
            Err((reason, why)) => {
                self.invalid(key, reason, format!("{at}.conditions: {why}; this route is skipped"));
                return None;
            }
        };
        let path = match path {
            Some(WrittenPath::Prefix(p)) => PathSpec::Prefix(join_path(&context.prefix, p)),
            Some(WrittenPath::Exact(e)) => PathSpec::Exact(join_path(&context.prefix, e)),
            Some(WrittenPath::Regex(r)) => PathSpec::Regex(join_regex(&context.prefix, r)),
            None => context.prefix_path(),
        };
        let blocks: Vec<MatchCondition> = context.blocks.iter().chain(&route.conditions).cloned().collect();
        if let Err((reason, why)) = conflicts(&blocks) {
            self.invalid(
                key,
                reason,
                format!("{at}: {why}; this HTTPProxy is un-routable until it is fixed"),
            );
            self.unroutable.insert(key.clone());
            return None;
        }
        match table_conditions(&blocks) {
            Ok(conditions) => Some((path, conditions)),
            Err(why) => {
                self.invalid(
                    key,
                    Reason::ConditionsNotValid,
                    format!("{at}.conditions: {why}; this route is skipped"),
                );
                None
            }
        }
    }

    /// The route's backends, each service's port resolved through its Service, and the affinity
    /// its `loadBalancerPolicy` keys requests with (with variant clusters only); `None` when the route
    /// is refused. As Contour does, a service that cannot be resolved gets no traffic (status
    /// `ServicePortNotFound`); an empty list means none could be, and the route answers 503.
    fn backends(
        &mut self,
        key: &ResourceKey,
        at: &str,
        route: &ProxyRoute,
    ) -> Option<(Vec<Backend>, Option<Affinity>)> {
        if route.services.is_empty() {
            self.invalid(
                key,
                Reason::RouteHasNoServices,
                format!("{at}: a route needs at least one service; it is skipped"),
            );
            return None;
        }
        let idle = match route.timeout_policy.as_ref().and_then(|t| t.idle_connection.as_deref()) {
            None => None,
            Some(text) => match go_duration_ms(text) {
                Some(ms) => Some(ms),
                None => {
                    let why = format!("{at}.timeoutPolicy.idleConnection: {text:?} is not a duration or infinity");
                    self.invalid(
                        key,
                        Reason::TimeoutPolicyNotValid,
                        format!("{why}; the route is skipped"),
                    );
                    return None;
                }
            },
        };
        let policies = match upstream::route_upstream(route, at) {
            Ok(policies) => policies,
            Err(why) => {
                self.invalid(key, Reason::ServiceInvalid, format!("{why}; the route is skipped"));
                return None;
            }
        };
        let mut resolved = Vec::new();
        let mut unresolved = Vec::new();
        for (si, service) in route.services.iter().enumerate() {
            if !(1..=65535).contains(&service.port) || service.name.is_empty() {
                self.invalid(
                    key,
                    Reason::ServiceInvalid,
                    format!(
                        "{at}.services[{si}]: a service needs a name and a port from 1 to 65535; the route is skipped"
                    ),
                );
                return None;
            }
            // The CRD allows any int64; the table's weights are u32.
            if let Some(weight) = service.weight.filter(|w| u32::try_from(*w).is_err()) {
                self.invalid(
                    key,
                    Reason::ServiceInvalid,
                    format!(
                        "{at}.services[{si}].weight: {weight} is out of range (0 to {}); the route is skipped",
                        u32::MAX
                    ),
                );
                return None;
            }
            let Some(protocol) = service_protocol(service.protocol.as_deref()) else {
                let word = service.protocol.as_deref().unwrap_or_default();
                let why = format!("{at}.services[{si}].protocol: {word:?} is not h2, h2c or tls");
                self.invalid(key, Reason::ServiceInvalid, format!("{why}; the route is skipped"));
                return None;
            };
            let verify = match (&service.validation, protocol.tls()) {
                (None, _) => None,
                (Some(_), false) => {
                    let why = format!("{at}.services[{si}].validation: the service's protocol is not h2 or tls");
                    self.invalid(key, Reason::ServiceInvalid, format!("{why}; the route is skipped"));
                    return None;
                }
                (Some(validation), true) => match upstream::verify(validation, &key.namespace) {
                    Ok(verify) => Some(verify),
                    Err(why) => {
                        let why = format!("{at}.services[{si}].validation: {why}");
                        self.invalid(key, Reason::ServiceInvalid, format!("{why}; the route is skipped"));
                        return None;
                    }
                },
            };
            let wanted = Variant {
                idle_timeout_ms: idle,
                verify,
                balance: policies.balance,
                health_check: policies.health_check.clone(),
                ..Variant::speaking(protocol)
            };
            let variant = wanted.clone().under(self.inputs.options);
            if variant != wanted {
                let message = format!(
                    "{at}.services[{si}]: its protocol, validation and the route's timeoutPolicy.idleConnection, \
                     loadBalancerPolicy and healthCheckPolicy need a cluster of its own, which only a gateway whose \
                     clusters come from switchyard watch --clusters-dir or --istio-clusters has; the service is spoken to with its \
                     cluster's own settings"
                );
                self.not_applied(key, message);
            }
            if wanted.verify.is_some() && variant.verify.is_none() {
                // Fail closed: never reach a service unchecked that asked for its certificate to be.
                unresolved.push(format!(
                    "{at}.services[{si}].validation: checking the service's certificate needs its own cluster"
                ));
                continue;
            }
            match self
                .inputs
                .services
                .resolve(&key.namespace, &service.name, PortRef::Number(service.port))
            {
                Ok(port) => resolved.push((service, port, variant)),
                Err(why) => unresolved.push(format!("{at}.services[{si}]: {why}")),
            }
        }
        let consequence = if resolved.is_empty() {
            "requests for this route get 503"
        } else {
            "this service gets no traffic; the route's other services share it"
        };
        for why in unresolved {
            self.invalid(key, Reason::ServicePortNotFound, format!("{why}; {consequence}"));
        }
        let all_unweighted = resolved.iter().all(|(s, _, _)| s.weight.unwrap_or(0) == 0);
        let backends = resolved
            .into_iter()
            .map(|(service, port, variant)| Backend {
                cluster: variant.cluster(self.inputs.options.cluster(&key.namespace, &service.name, port)),
                weight: if all_unweighted {
                    1
                } else {
                    service.weight.and_then(|w| u32::try_from(w).ok()).unwrap_or(0)
                },
            })
            .collect();
        let affinity = policies.affinity.filter(|_| self.inputs.options.upstream_variants);
        Some((backends, affinity))
    }

    /// Pushes a route's rule if the filter would accept it; otherwise the route is refused here.
    fn push_valid(
        &mut self,
        key: &ResourceKey,
        age: &Arc<Age>,
        n: usize,
        (rule, permit_insecure): (RuleSpec, bool),
        context: &Context,
        at: &str,
    ) {
        if let Err(why) = validate_rule(&rule) {
            self.invalid(key, Reason::RouteNotValid, format!("{at}: {why}; the route is skipped"));
            return;
        }
        self.push(key, age, n, (rule, permit_insecure), context);
    }

    /// The 502 rule for a broken include: the include's accumulated conditions, answered locally.
    fn bad_gateway(&mut self, key: &ResourceKey, age: &Arc<Age>, context: &Context) {
        // The include's blocks were checked before it was followed; should that ever change, no 502
        // is better than a 502 that ignores some of its conditions.
        let Ok(conditions) = table_conditions(&context.blocks) else {
            return;
        };
        let n = self.next_position(key);
        let rule = RuleSpec {
            name: format!("{}#{n}", key.display()),
            host: Some(context.host.clone()),
            path: context.prefix_path(),
            conditions,
            action: ActionSpec::DirectResponse(DirectResponse {
                status: 502,
                ..DirectResponse::default()
            }),
            hsts: None,
            policy: None,
        };
        if validate_rule(&rule).is_ok() {
            self.push(key, age, n, (rule, false), context);
        }
    }

    /// Drafts `rule` as its root's TLS asks (ROUTING.md §8.5): on a root that terminates TLS, a
    /// route that does not permit plain HTTP answers it with a 301 to https; on any other root,
    /// the route is served on plain HTTP only.
    fn push(
        &mut self,
        key: &ResourceKey,
        age: &Arc<Age>,
        position: usize,
        (mut rule, permit_insecure): (RuleSpec, bool),
        context: &Context,
    ) {
        match (context.terminates_tls, permit_insecure) {
            (true, false) => {
                let redirect = https_redirect(&rule, 301);
                self.draft(key, age, position, redirect, context);
            }
            (true, true) => {}
            (false, _) => only(&mut rule, Scheme::Http),
        }
        self.draft(key, age, position, rule, context);
    }

    fn draft(&mut self, key: &ResourceKey, age: &Arc<Age>, position: usize, rule: RuleSpec, context: &Context) {
        self.drafts.push(Draft {
            owner: key.clone(),
            age: age.clone(),
            position,
            claimant: context.root.clone(),
            claimant_age: context.root_age.clone(),
            rule,
            order: HostOrder::General,
            claiming: Claiming::Contends,
        });
    }

    /// Records an error that makes `key` invalid.
    fn invalid(&mut self, key: &ResourceKey, reason: Reason, message: String) {
        self.inputs.book.error(key, Status::Invalid, reason, message);
        self.inputs.book.set(key, Status::Invalid);
    }

    /// The next rule position of `key`.
    fn next_position(&mut self, key: &ResourceKey) -> usize {
        let counter = self.counters.entry(key.clone()).or_default();
        let n = *counter;
        *counter += 1;
        n
    }

    /// The status of every eligible proxy nothing reported on: orphaned when no valid root reached
    /// it, else valid.
    fn report_unreported(&mut self, forest: &Forest<'_, '_>) {
        for (key, proxy) in &forest.eligible {
            if proxy.spec.virtualhost.is_none() && !self.reached.contains(key) {
                self.inputs.book.add(
                    key,
                    Status::Orphaned,
                    ConditionKind::Orphaned,
                    Reason::Orphaned,
                    "no valid root HTTPProxy includes this HTTPProxy (a root has spec.virtualhost.fqdn), so it routes nothing",
                );
                self.inputs.book.set(key, Status::Orphaned);
            } else if self.inputs.book.get(key).is_none() {
                let message = if proxy.spec.virtualhost.is_some() {
                    "valid root HTTPProxy".to_owned()
                } else {
                    "valid HTTPProxy, included by a valid root".to_owned()
                };
                self.inputs
                    .book
                    .add(key, Status::Valid, ConditionKind::Valid, Reason::Valid, message);
            }
        }
    }
}

/// ROUTING.md §9: the access-control fields of an HTTPProxy, by the path its manifest writes them
/// at. The virtual host's (`authorization`, `jwtProviders`, `ipAllowPolicy`, `ipDenyPolicy`,
/// `tls.clientValidation`) reach every rule of its host, includes' too; a route's (`authPolicy`,
/// `jwtVerificationPolicy`, `ipAllowPolicy`, `ipDenyPolicy`) reach the rules of the proxy that
/// holds it.
pub fn access_fields(spec: &HTTPProxySpec) -> Vec<Field> {
    let mut fields = Vec::new();
    if let Some(vhost) = &spec.virtualhost {
        let client_validation = vhost.tls.as_ref().and_then(|t| t.client_validation.as_ref());
        let named = [
            ("authorization", vhost.authorization.as_ref()),
            ("jwtProviders", vhost.jwt_providers.as_ref()),
            ("ipAllowPolicy", vhost.ip_allow_policy.as_ref()),
            ("ipDenyPolicy", vhost.ip_deny_policy.as_ref()),
            ("tls.clientValidation", client_validation),
        ];
        for (name, value) in named {
            if is_set(value) {
                fields.push(Field::new(format!("spec.virtualhost.{name}"), Reach::Host));
            }
        }
    }
    for (i, route) in spec.routes.iter().enumerate() {
        let named = [
            ("authPolicy", route.auth_policy.as_ref()),
            ("jwtVerificationPolicy", route.jwt_verification_policy.as_ref()),
            ("ipAllowPolicy", route.ip_allow_policy.as_ref()),
            ("ipDenyPolicy", route.ip_deny_policy.as_ref()),
        ];
        for (name, value) in named {
            if is_set(value) {
                fields.push(Field::new(format!("spec.routes[{i}].{name}"), Reach::OwnRules));
            }
        }
    }
    fields
}

/// Marks the IP filters among `fields` that the rules' address ranges enforce ([`ip_filter`]), and
/// says why one with a `source: Peer` entry is not. One Contour refuses leaves its rules unrouted.
fn enforce_ip_filters(fields: &mut [Field], spec: &HTTPProxySpec) {
    let mut places = Vec::new();
    if let Some(vhost) = &spec.virtualhost {
        places.push((
            "spec.virtualhost".to_owned(),
            vhost.ip_allow_policy.as_ref(),
            vhost.ip_deny_policy.as_ref(),
        ));
    }
    for (i, route) in spec.routes.iter().enumerate() {
        places.push((
            format!("spec.routes[{i}]"),
            route.ip_allow_policy.as_ref(),
            route.ip_deny_policy.as_ref(),
        ));
    }
    for (at, allow, deny) in places {
        let read = ip_filter::read(allow, deny, &at);
        let named =
            |field: &Field| field.name == format!("{at}.ipAllowPolicy") || field.name == format!("{at}.ipDenyPolicy");
        for field in fields.iter_mut().filter(|f| named(f)) {
            match &read {
                Ok(IpFilterRead::Enforced(_)) | Err(_) => field.enforced = true,
                Ok(IpFilterRead::NotEnforced(why)) => field.detail = Some(why.clone()),
                Ok(IpFilterRead::None) => {}
            }
        }
    }
}

/// The proxy an include names, or why the include is broken (reason, message): the proxy is
/// missing (or not ours), closes a cycle, or is itself a root; requests for it then get 502.
fn include_target(
    forest: &Forest<'_, '_>,
    key: &ResourceKey,
    at: &str,
    include: &Include,
    context: &Context,
) -> Result<ResourceKey, (Reason, String)> {
    let target = ResourceKey {
        kind: Kind::HTTPProxy,
        namespace: include
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| key.namespace.clone()),
        name: include.name.clone(),
    };
    let shown = format!("{}/{}", target.namespace, target.name);
    let Some(target_proxy) = forest.eligible.get(&target).copied() else {
        let why = match forest.ignored.get(&target) {
            Some(class) => format!("{at}: include {shown} exists but is not ours ({class})"),
            None => format!("{at}: include {shown} not found"),
        };
        return Err((Reason::IncludeNotFound, format!("{why}; requests for it get 502")));
    };
    if context.stack.contains(&target) {
        return Err((
            Reason::IncludeCreatesCycle,
            format!("{at}: include {shown} creates an include cycle; requests for it get 502"),
        ));
    }
    if target_proxy.spec.virtualhost.is_some() {
        return Err((
            Reason::RootIncludesRoot,
            format!("{at}: include {shown} is a root HTTPProxy (it has spec.virtualhost); roots cannot include roots, so requests for it get 502"),
        ));
    }
    Ok(target)
}

/// A route's action: its backends, with its prefix rewrite (the `replacePrefix` entry for the
/// matched prefix, else the one without a prefix) and its request header changes.
fn route_action(
    route: &ProxyRoute,
    path: &PathSpec,
    context: &Context,
    (backends, affinity): (Vec<Backend>, Option<Affinity>),
) -> ActionSpec {
    let rewrite_prefix = route.path_rewrite_policy.as_ref().and_then(|policy| {
        let matched = match path {
            PathSpec::Prefix(p) | PathSpec::Exact(p) | PathSpec::SegmentPrefix(p) => p.as_str(),
            PathSpec::Regex(_) => "",
        };
        policy
            .replace_prefix
            .iter()
            .find(|r| {
                r.prefix
                    .as_deref()
                    .is_some_and(|p| p == matched || join_path("", p) == context.prefix)
            })
            .or_else(|| {
                policy
                    .replace_prefix
                    .iter()
                    .find(|r| r.prefix.as_deref().is_none_or(str::is_empty))
            })
            .map(|r| r.replacement.clone())
    });
    let (set_headers, remove_headers) = match &route.request_headers_policy {
        Some(policy) => (
            policy
                .set
                .iter()
                .map(|h| HeaderValue {
                    name: h.name.clone(),
                    value: h.value.clone(),
                })
                .collect(),
            policy.remove.clone(),
        ),
        None => (Vec::new(), Vec::new()),
    };
    ActionSpec::Route(RouteAction {
        backends,
        rewrite_prefix,
        rewrite_regex: None,
        set_headers,
        remove_headers,
        canary: None,
        affinity: affinity.map(Box::new),
    })
}

/// Concatenates two path pieces; repeated `/` collapse to one.
pub fn join_path(prefix: &str, rest: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + rest.len());
    for c in prefix.chars().chain(rest.chars()) {
        if c == '/' && out.ends_with('/') {
            continue;
        }
        out.push(c);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// Puts inherited prefixes in front of a regex; only the `/` at the seam collapse (the regex itself
/// is left as written).
pub fn join_regex(prefix: &str, regex: &str) -> String {
    let prefix = prefix.trim_end_matches('/');
    if prefix.is_empty() {
        return regex.to_owned();
    }
    let escaped = regex_lite::escape(prefix);
    let rest = regex.trim_start_matches('/');
    format!("{escaped}/{rest}")
}

/// The header and query conditions of one condition block, in the table's terms.
fn block_conditions(c: &MatchCondition) -> Result<Vec<ConditionSpec>, String> {
    let mut out = Vec::new();
    if let Some(h) = &c.header {
        out.push(header_condition(h)?);
    }
    if let Some(q) = &c.query_parameter {
        out.push(query_condition(q)?);
    }
    Ok(out)
}

fn spec(on: ConditionSource, name: &str, op: MatchOp, value: Option<String>, invert: bool) -> ConditionSpec {
    ConditionSpec {
        on,
        name: Some(name.to_owned()),
        op,
        value,
        invert,
        ignore_case: false,
    }
}

fn case_insensitive(pattern: String) -> String {
    format!("(?i){pattern}")
}

fn header_condition(h: &HeaderMatch) -> Result<ConditionSpec, String> {
    if h.name.is_empty() {
        return Err("a header condition needs a name".to_owned());
    }
    let name = h.name.to_ascii_lowercase();
    let on = ConditionSource::Header;
    let esc = |v: &str| regex_lite::escape(v);
    let mut found = Vec::new();
    if h.present {
        found.push(spec(on, &name, MatchOp::Present, None, false));
    }
    if h.notpresent {
        found.push(spec(on, &name, MatchOp::Present, None, true));
    }
    for (value, invert) in [(&h.exact, false), (&h.notexact, true)] {
        if let Some(v) = value {
            found.push(if h.ignore_case {
                spec(on, &name, MatchOp::Regex, Some(case_insensitive(esc(v))), invert)
            } else {
                spec(on, &name, MatchOp::Exact, Some(v.clone()), invert)
            });
        }
    }
    for (value, invert) in [(&h.contains, false), (&h.notcontains, true)] {
        if let Some(v) = value {
            found.push(if h.ignore_case {
                spec(
                    on,
                    &name,
                    MatchOp::Regex,
                    Some(case_insensitive(format!(".*{}.*", esc(v)))),
                    invert,
                )
            } else {
                spec(on, &name, MatchOp::Contains, Some(v.clone()), invert)
            });
        }
    }
    if let Some(r) = &h.regex {
        found.push(spec(on, &name, MatchOp::Regex, Some(r.clone()), false));
    }
    one_of(
        found,
        &format!("header condition {:?}", h.name),
        "present, notpresent, exact, notexact, contains, notcontains or regex",
    )
}

fn query_condition(q: &QueryMatch) -> Result<ConditionSpec, String> {
    if q.name.is_empty() {
        return Err("a queryParameter condition needs a name".to_owned());
    }
    let on = ConditionSource::Query;
    let name = q.name.as_str();
    let esc = |v: &str| regex_lite::escape(v);
    let ci = |p: String| if q.ignore_case { case_insensitive(p) } else { p };
    let mut found = Vec::new();
    if q.present {
        found.push(spec(on, name, MatchOp::Present, None, false));
    }
    if let Some(v) = &q.exact {
        found.push(if q.ignore_case {
            spec(on, name, MatchOp::Regex, Some(ci(esc(v))), false)
        } else {
            spec(on, name, MatchOp::Exact, Some(v.clone()), false)
        });
    }
    if let Some(v) = &q.prefix {
        found.push(if q.ignore_case {
            spec(on, name, MatchOp::Regex, Some(ci(format!("{}.*", esc(v)))), false)
        } else {
            spec(on, name, MatchOp::Prefix, Some(v.clone()), false)
        });
    }
    if let Some(v) = &q.suffix {
        found.push(spec(on, name, MatchOp::Regex, Some(ci(format!(".*{}", esc(v)))), false));
    }
    if let Some(v) = &q.contains {
        found.push(if q.ignore_case {
            spec(on, name, MatchOp::Regex, Some(ci(format!(".*{}.*", esc(v)))), false)
        } else {
            spec(on, name, MatchOp::Contains, Some(v.clone()), false)
        });
    }
    if let Some(r) = &q.regex {
        found.push(spec(on, name, MatchOp::Regex, Some(r.clone()), false));
    }
    one_of(
        found,
        &format!("queryParameter condition {:?}", q.name),
        "present, exact, prefix, suffix, contains or regex",
    )
}

fn one_of(mut found: Vec<ConditionSpec>, what: &str, choices: &str) -> Result<ConditionSpec, String> {
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(format!("{what} needs one of {choices}")),
        _ => Err(format!("{what} has more than one of {choices}")),
    }
}

/// Where a condition list is written: on an include only a prefix may be the path condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Include,
    Route,
}

/// A path condition as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WrittenPath<'a> {
    Prefix(&'a str),
    Exact(&'a str),
    Regex(&'a str),
}

/// The one path condition of an include's or a route's condition list, checked (ROUTING.md §3): at
/// most one, starting with `/`, only a prefix on an include; every header and query condition well
/// formed. Otherwise (reason, why): that include or route is skipped, not the whole proxy.
fn path_condition(blocks: &[MatchCondition], on: Block) -> Result<Option<WrittenPath<'_>>, (Reason, String)> {
    const PATH: Reason = Reason::PathMatchConditionsNotValid;
    let mut found = None;
    for block in blocks {
        let written = [
            block.prefix.as_deref().map(WrittenPath::Prefix),
            block.exact.as_deref().map(WrittenPath::Exact),
            block.regex.as_deref().map(WrittenPath::Regex),
        ];
        for path in written.into_iter().flatten() {
            let value = match path {
                WrittenPath::Prefix(v) | WrittenPath::Exact(v) | WrittenPath::Regex(v) => v,
            };
            if on == Block::Include && !matches!(path, WrittenPath::Prefix(_)) {
                return Err((
                    PATH,
                    "exact and regex conditions are not allowed on an include (only prefix, header and queryParameter)"
                        .to_owned(),
                ));
            }
            if !value.starts_with('/') {
                return Err((PATH, format!("path {value:?} must start with '/'")));
            }
            if found.replace(path).is_some() {
                let why = match on {
                    Block::Include => "an include may have at most one prefix condition",
                    Block::Route => "at most one prefix, exact or regex condition is allowed",
                };
                return Err((PATH, why.to_owned()));
            }
        }
        block_conditions(block).map_err(|why| (Reason::ConditionsNotValid, why))?;
    }
    Ok(found)
}

/// The header and query conditions of condition blocks, in the table's terms and in order.
fn table_conditions(blocks: &[MatchCondition]) -> Result<Vec<ConditionSpec>, String> {
    let mut out = Vec::new();
    for block in blocks {
        out.extend(block_conditions(block)?);
    }
    Ok(out)
}

/// Conditions that make a proxy Invalid once merged (ROUTING.md §3, as Contour's builder checks
/// them): two `exact` on one header; `present` with `notpresent`, `exact` with `notexact` or `contains`
/// with `notcontains` of the same value on one header; two `exact` on one query parameter. Header
/// names compare case-insensitively, query parameter names as written (the filter matches them so).
fn conflicts(blocks: &[MatchCondition]) -> Result<(), (Reason, String)> {
    let headers: Vec<&HeaderMatch> = blocks.iter().filter_map(|b| b.header.as_ref()).collect();
    for (i, a) in headers.iter().enumerate() {
        for b in headers[i + 1..].iter().filter(|b| b.name.eq_ignore_ascii_case(&a.name)) {
            let name = a.name.to_ascii_lowercase();
            if let (Some(x), Some(y)) = (&a.exact, &b.exact) {
                return Err((
                    Reason::DuplicateMatchConditionHeaders,
                    format!("header {name:?} has two exact conditions after inclusion ({x:?} and {y:?}): no request can match"),
                ));
            }
            if (a.present && b.notpresent) || (a.notpresent && b.present) {
                return Err((
                    Reason::HeaderMatchConditionsNotValid,
                    format!("header {name:?} must be both present and not present: no request can match"),
                ));
            }
            if let Some((verb, value)) = negated(a, b).or_else(|| negated(b, a)) {
                return Err((
                    Reason::HeaderMatchConditionsNotValid,
                    format!("header {name:?} must both {verb} and not {verb} {value:?}: no request can match"),
                ));
            }
        }
    }
    let exact_queries: Vec<(&str, &str)> = blocks
        .iter()
        .filter_map(|b| b.query_parameter.as_ref())
        .filter_map(|q| Some((q.name.as_str(), q.exact.as_deref()?)))
        .collect();
    for (i, (name, x)) in exact_queries.iter().enumerate() {
        if let Some((_, y)) = exact_queries[i + 1..].iter().find(|(other, _)| other == name) {
            return Err((
                Reason::QueryParameterMatchConditionsNotValid,
                format!("query parameter {name:?} has two exact conditions after inclusion ({x:?} and {y:?}); one parameter may have only one"),
            ));
        }
    }
    Ok(())
}

/// The test that `negative` negates with the same value as `positive` (`exact`/`notexact`,
/// `contains`/`notcontains`, compared alike: both case-sensitive, or both `ignoreCase`), as (verb, value).
fn negated<'h>(positive: &'h HeaderMatch, negative: &HeaderMatch) -> Option<(&'static str, &'h str)> {
    if positive.ignore_case != negative.ignore_case {
        return None;
    }
    let same = |x: &str, y: &str| x == y || (positive.ignore_case && x.eq_ignore_ascii_case(y));
    let pairs = [
        ("equal", &positive.exact, &negative.notexact),
        ("contain", &positive.contains, &negative.notcontains),
    ];
    pairs.into_iter().find_map(|(verb, x, y)| match (x, y) {
        (Some(x), Some(y)) if same(x, y) => Some((verb, x.as_str())),
        _ => None,
    })
}

/// How Envoy speaks to a service with `protocol` (Contour's words); `None` for a word it does not
/// know.
fn service_protocol(protocol: Option<&str>) -> Option<UpstreamProtocol> {
    match protocol {
        None => Some(UpstreamProtocol::Http),
        Some("h2c") => Some(UpstreamProtocol::H2c),
        Some("tls") => Some(UpstreamProtocol::Tls),
        Some("h2") => Some(UpstreamProtocol::TlsH2),
        Some(_) => None,
    }
}

/// Contour's durations: `infinity` (or `infinite`) is 0, for ever; otherwise Go's (`90s`, `1h30m`,
/// `1.5s`, `250ms`), in milliseconds; `None` when it is neither.
fn go_duration_ms(text: &str) -> Option<u32> {
    if matches!(text.trim(), "infinity" | "infinite") {
        return Some(0);
    }
    let total = go_duration(text)?;
    (total < f64::from(u32::MAX)).then_some(total.round() as u32)
}

/// A Go duration (`90s`, `1h30m`, `1.5s`, `250ms`, `0`; no sign), in milliseconds; `None` when it
/// is not one.
fn go_duration(text: &str) -> Option<f64> {
    let text = text.trim();
    if text == "0" {
        return Some(0.0);
    }
    let mut total = 0.0_f64;
    let mut rest = text;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let number: f64 = rest[..number_len].parse().ok()?;
        let unit_len =
            (rest[number_len..].find(|c: char| c.is_ascii_digit() || c == '.')).unwrap_or(rest.len() - number_len);
        let scale = match &rest[number_len..number_len + unit_len] {
            "ns" => 1e-6,
            "us" | "\u{b5}s" => 1e-3,
            "ms" => 1.0,
            "s" => 1e3,
            "m" => 6e4,
            "h" => 3.6e6,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[number_len + unit_len..];
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_concatenate_and_repeated_slashes_collapse() {
        assert_eq!(join_path("/api", "/v1"), "/api/v1");
        assert_eq!(join_path("/api/", "/v1"), "/api/v1");
        assert_eq!(join_path("", "/"), "/");
        assert_eq!(join_path("/service2", "/"), "/service2/");
        assert_eq!(join_path("", ""), "/");
    }

    #[test]
    fn inherited_prefix_goes_in_front_of_a_regex_escaped() {
        assert_eq!(join_regex("/static", "/.*/main.js"), "/static/.*/main.js");
        assert_eq!(join_regex("", "/.*"), "/.*");
        assert_eq!(join_regex("/v1.0/", "/x+"), "/v1\\.0/x+");
    }

    fn header(name: &str, test: serde_json::Value) -> MatchCondition {
        let mut header = serde_json::json!({ "name": name });
        header
            .as_object_mut()
            .unwrap()
            .extend(test.as_object().unwrap().clone());
        serde_json::from_value(serde_json::json!({ "header": header })).unwrap()
    }

    fn query(name: &str, exact: &str) -> MatchCondition {
        serde_json::from_value(serde_json::json!({ "queryParameter": { "name": name, "exact": exact } })).unwrap()
    }

    fn reason(blocks: &[MatchCondition]) -> Option<Reason> {
        conflicts(blocks).err().map(|(reason, _)| reason)
    }

    #[test]
    fn header_conflicts_are_found_with_names_in_any_case() {
        use serde_json::json;
        let exact = |v: &str| header("X-A", json!({ "exact": v }));
        assert_eq!(
            reason(&[exact("1"), header("x-a", json!({"exact": "2"}))]),
            Some(Reason::DuplicateMatchConditionHeaders)
        );
        assert_eq!(reason(&[exact("1")]), None);
        assert_eq!(reason(&[exact("1"), header("x-a", json!({"notexact": "2"}))]), None);
        assert_eq!(
            reason(&[header("x-a", json!({"notexact": "1"})), exact("1")]),
            Some(Reason::HeaderMatchConditionsNotValid)
        );
        let contains = header("x-a", json!({ "contains": "abc" }));
        assert_eq!(
            reason(&[contains.clone(), header("X-a", json!({"notcontains": "abc"}))]),
            Some(Reason::HeaderMatchConditionsNotValid)
        );
        assert_eq!(
            reason(&[contains.clone(), header("x-a", json!({"notcontains": "abd"}))]),
            None
        );
        // Two tests compared alike (both ignoreCase) conflict on values equal in any case.
        let loose = |k: &str, v: &str| header("x-a", json!({ k: v, "ignoreCase": true }));
        assert_eq!(
            reason(&[loose("contains", "abc"), loose("notcontains", "ABC")]),
            Some(Reason::HeaderMatchConditionsNotValid)
        );
        assert_eq!(reason(&[contains, loose("notcontains", "xyz")]), None);
        assert_eq!(
            reason(&[
                header("x-a", json!({"present": true})),
                header("x-a", json!({"notpresent": true}))
            ]),
            Some(Reason::HeaderMatchConditionsNotValid)
        );
        assert_eq!(
            reason(&[
                header("x-a", json!({"present": true})),
                header("x-b", json!({"notpresent": true}))
            ]),
            None
        );
    }

    #[test]
    fn two_exact_query_conditions_on_one_name_conflict_names_compared_as_written() {
        assert_eq!(
            reason(&[query("v", "1"), query("v", "2")]),
            Some(Reason::QueryParameterMatchConditionsNotValid)
        );
        assert_eq!(reason(&[query("v", "1"), query("V", "2")]), None);
        assert_eq!(reason(&[query("v", "1"), query("w", "1")]), None);
    }
}
