//! The validated, indexed table and the matcher that picks a request's winning rule.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use crate::canary::{CanaryDecision, CanaryPolicy};
use crate::condition::Condition;
use crate::error::{Problem, TableError};
use crate::field::{field_value, is_token, FieldValueFault};
use crate::format::{
    ActionSpec, Backend, DirectResponse, MetricsFold, NoRoute, RouteAction, RuleSpec, TableSpec, VERSION,
};
use crate::host::{normalize_authority, HostPattern};
use crate::index::{HostIndex, RuleId};
use crate::path::{request_path, PathPattern};
use crate::redirect::{MoreParts, RedirectTemplate, RequestParts};
use crate::request::RequestView;
use crate::rewrite::{RegexRewriter, Rewritten};

/// A table ready to route: validated, regexes compiled, indexed. Built with `TryFrom<TableSpec>` or
/// [`RouteTable::from_json`]; immutable afterwards, so one instance serves every request.
#[derive(Debug)]
pub struct RouteTable {
    generation: String,
    cluster_header: String,
    no_route: NoRoute,
    debug_rule_header: bool,
    metrics_fold: Option<MetricsFold>,
    rules: Vec<Rule>,
    index: HostIndex,
}

/// One validated rule. What few rules have (a redirect, a regex rewrite, a canary) is boxed: a
/// rule's size is paid by every rule of a table, in every VM of the proxy.
#[derive(Debug)]
pub struct Rule {
    spec: RuleSpec,
    host: HostPattern,
    path: PathPattern,
    conditions: Vec<Condition>,
    total_weight: u64,
    /// The parsed location template of a redirect action.
    redirect: Option<Box<RedirectTemplate>>,
    /// The compiled `rewrite_regex` of a route action.
    regex_rewrite: Option<Box<RegexRewriter>>,
    /// The validated `canary` of a route action.
    canary: Option<Box<CanaryPolicy>>,
}

/// The outcome of matching one request: the winning rule and, for a route, the chosen backend.
#[derive(Debug, Clone, Copy)]
pub struct Decision<'t> {
    /// The rule's position in the table.
    pub position: usize,
    /// The winning rule.
    pub rule: &'t Rule,
    /// The backend picked by weight (or the canary's); `None` for a direct response.
    pub backend: Option<&'t Backend>,
    /// For a route with a canary: whether the canary serves this request, and which step decided.
    pub canary: Option<CanaryDecision>,
}

/// A rule whose host and path matched a request, and whether its conditions held.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'t> {
    /// The rule's position in the table.
    pub position: usize,
    /// The rule.
    pub rule: &'t Rule,
    /// The position of the first condition that failed, or `None` when the rule matched.
    pub failed_condition: Option<usize>,
}

impl RouteTable {
    /// The table's generation label.
    pub fn generation(&self) -> &str {
        &self.generation
    }

    /// The request header that carries the cluster name (lowercase).
    pub fn cluster_header(&self) -> &str {
        &self.cluster_header
    }

    /// What to do when no rule matches.
    pub fn no_route(&self) -> NoRoute {
        self.no_route
    }

    /// Whether responses should name the winning rule.
    pub fn debug_rule_header(&self) -> bool {
        self.debug_rule_header
    }

    /// The resources the per-resource metrics count together, if any ([`MetricsFold`]).
    pub fn metrics_fold(&self) -> Option<&MetricsFold> {
        self.metrics_fold.as_ref()
    }

    /// The rules in table order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The number of distinct hosts (exact and wildcard) the rules name.
    pub fn host_count(&self) -> usize {
        self.index.hosts()
    }

    /// The first rule in table order whose host, path and conditions match, with a backend chosen
    /// by weight using `random` (any value; the caller supplies it so tests are deterministic).
    pub fn route(&self, request: &impl RequestView, random: u64) -> Option<Decision<'_>> {
        self.walk(request, |_| {}, true).map(|(position, rule)| {
            let canary = rule.canary.as_ref().map(|c| (c, c.decide(request, random)));
            let backend = match canary {
                Some((policy, decision)) if decision.canary => Some(policy.backend()),
                _ => rule.pick_backend(random),
            };
            Decision {
                position,
                rule,
                backend,
                canary: canary.map(|(_, decision)| decision),
            }
        })
    }

    /// Every rule whose host and path match, in table order, each with its first failing condition.
    /// The first one without a failing condition is the one [`route`](Self::route) picks.
    pub fn candidates(&self, request: &impl RequestView) -> Vec<Candidate<'_>> {
        let mut seen = Vec::new();
        self.walk(request, |candidate| seen.push(candidate), false);
        seen
    }

    /// Visits host-and-path candidates in table order; stops at the first full match when
    /// `stop_at_match`, returning it.
    fn walk<'t>(
        &'t self,
        request: &impl RequestView,
        mut visit: impl FnMut(Candidate<'t>),
        stop_at_match: bool,
    ) -> Option<(usize, &'t Rule)> {
        let host = normalize_authority(request.authority());
        let path = request_path(request.path());
        let mut candidates = self.index.candidates(&host, path);
        let mut winner = None;
        while let Some((id, needs_regex)) = candidates.next_id() {
            let position = id as usize;
            let Some(rule) = self.rules.get(position) else { continue };
            if needs_regex && !rule.path.matches(path) {
                continue;
            }
            let failed_condition = rule.conditions.iter().position(|c| !c.holds(request));
            visit(Candidate {
                position,
                rule,
                failed_condition,
            });
            if failed_condition.is_none() && winner.is_none() {
                winner = Some((position, rule));
                if stop_at_match {
                    break;
                }
            }
        }
        winner
    }
}

impl Rule {
    /// The rule as the table wrote it.
    pub fn spec(&self) -> &RuleSpec {
        &self.spec
    }

    /// The rule's unique name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The validated host.
    pub fn host(&self) -> &HostPattern {
        &self.host
    }

    /// Whether this rule alone matches the request: host, path and every condition. The matcher
    /// gives the same answer through its index; this is the plain definition (ROUTING.md §4).
    pub fn matches(&self, request: &impl RequestView) -> bool {
        self.host.matches(&normalize_authority(request.authority()))
            && self.path.matches(request_path(request.path()))
            && self.conditions.iter().all(|c| c.holds(request))
    }

    /// The validated conditions.
    pub fn conditions(&self) -> &[Condition] {
        &self.conditions
    }

    /// The validated path.
    pub fn path(&self) -> &PathPattern {
        &self.path
    }

    /// The action, as written.
    pub fn action(&self) -> &ActionSpec {
        &self.spec.action
    }

    /// The `Strict-Transport-Security` value its responses carry on HTTPS, if any (ROUTING.md §8.4).
    pub fn hsts(&self) -> Option<&str> {
        self.spec.hsts.as_deref().map(String::as_str)
    }

    /// The `:path` and the headers to send upstream for `full_path` (query included), when this rule
    /// rewrites it: its `rewrite_regex` where the regex is found (the path, and headers with the
    /// path's groups), else its `rewrite_prefix` (the path alone). The one call of the filter, the
    /// native module, `switchyard explain` and host-sim.
    pub fn rewrite(&self, full_path: &str) -> Option<Rewritten<'_>> {
        if let Some(rewriter) = &self.regex_rewrite {
            return rewriter.apply(full_path);
        }
        match &self.spec.action {
            ActionSpec::Route(RouteAction {
                rewrite_prefix: Some(replacement),
                ..
            }) => self.path.rewrite(full_path, replacement).map(|path| Rewritten {
                path,
                headers: Vec::new(),
            }),
            _ => None,
        }
    }

    /// The status and `Location` of a redirect action for `request`, every variable filled in (the
    /// scheme is the `:scheme` pseudo-header's, `http` when absent); `None` for any other action.
    pub fn redirect_for(&self, request: &impl RequestView) -> Option<(u16, String)> {
        let template = self.redirect.as_ref()?;
        let scheme = request.header_values(":scheme").into_iter().next();
        let host = normalize_authority(request.authority());
        let forwarded_proto = crate::redirect::forwarded_proto(request);
        let full_path = request.path();
        let parts = RequestParts {
            scheme: scheme.as_deref().unwrap_or("http"),
            forwarded_proto: &forwarded_proto,
            host: &host,
            request_uri: full_path,
        };
        let groups = match template.uses_groups() {
            true => self.path.groups(request_path(full_path)),
            false => Vec::new(),
        };
        let more = MoreParts {
            http_host: request.authority(),
            groups: &groups,
        };
        Some((template.status(), template.location_with(parts, more)))
    }

    fn pick_backend(&self, random: u64) -> Option<&Backend> {
        let ActionSpec::Route(route) = &self.spec.action else {
            return None;
        };
        let mut ticket = random % self.total_weight.max(1);
        for backend in &route.backends {
            let weight = u64::from(backend.weight);
            if ticket < weight {
                return Some(backend);
            }
            ticket -= weight;
        }
        route.backends.first()
    }
}

impl TryFrom<TableSpec> for RouteTable {
    type Error = TableError;

    fn try_from(spec: TableSpec) -> Result<RouteTable, TableError> {
        if spec.version != VERSION {
            return Err(TableError::UnsupportedVersion { found: spec.version });
        }
        let cluster_header = spec.cluster_header.to_ascii_lowercase();
        if !is_token(&cluster_header) {
            return Err(TableError::BadClusterHeader(spec.cluster_header));
        }
        // FxHash, as the index's host maps: the names come from the table, not from clients.
        let mut first_position: HashMap<&str, usize> = HashMap::default();
        first_position.reserve(spec.rules.len());
        for (position, rule) in spec.rules.iter().enumerate() {
            if let Some(&first) = first_position.get(rule.name.as_str()) {
                return Err(TableError::rule(
                    &rule.name,
                    position,
                    "name",
                    Problem::DuplicateName { first },
                ));
            }
            first_position.insert(&rule.name, position);
        }
        drop(first_position);
        let mut index = HostIndex::default();
        let mut rules = Vec::with_capacity(spec.rules.len());
        let (mut shared, mut policies) = (Vec::new(), Vec::new());
        for (position, mut rule_spec) in spec.rules.into_iter().enumerate() {
            intern(&mut rule_spec.hsts, &mut shared);
            intern(&mut rule_spec.policy, &mut policies);
            let rule = Rule::compile(rule_spec, position)?;
            let id = RuleId::try_from(position).map_err(|_| {
                TableError::rule(
                    rule.name(),
                    position,
                    "name",
                    Problem::ConditionName("a table holds at most 2^32 rules"),
                )
            })?;
            index.insert(id, &rule.host, &rule.path);
            rules.push(rule);
        }
        index.shrink();
        Ok(RouteTable {
            generation: spec.generation,
            cluster_header,
            no_route: spec.no_route,
            debug_rule_header: spec.debug_rule_header,
            metrics_fold: spec.metrics_fold,
            rules,
            index,
        })
    }
}

/// Replaces `text` by the equal string `shared` holds, or adds it there: the table's rules then hold
/// one copy of each value (a handful at most: ingress-nginx's HSTS value).
fn intern<T: PartialEq>(value: &mut Option<Arc<T>>, shared: &mut Vec<Arc<T>>) {
    let Some(value) = value else { return };
    match shared.iter().find(|s| ***s == **value) {
        Some(same) => *value = Arc::clone(same),
        None => shared.push(Arc::clone(value)),
    }
}

impl Rule {
    /// Validates one rule exactly as a table holding it validates it, without building the table
    /// (the compiler checks every rule it drafts this way, so that a bad rule is refused with its
    /// resource's status and never makes the whole table unusable).
    pub fn validate(spec: &RuleSpec) -> Result<(), TableError> {
        Rule::compile(spec.clone(), 0).map(|_| ())
    }

    fn compile(spec: RuleSpec, position: usize) -> Result<Rule, TableError> {
        let fail = |field: String, problem| TableError::rule(&spec.name, position, field, problem);
        if spec.name.is_empty() {
            return Err(fail("name".into(), Problem::EmptyName));
        }
        // The name becomes the debug response header's value.
        field_value(&spec.name).map_err(|fault| fail("name".into(), bad_value(&spec.name, fault)))?;
        if let Some(policy) = &spec.policy {
            // The route's name becomes a request header's value, and the CORS values response
            // headers' values.
            let cors = policy.cors.as_deref();
            let values = [("policy.route", policy.route.as_deref())].into_iter().chain(
                [
                    ("policy.cors.allow_methods", cors.map(|c| c.allow_methods.as_str())),
                    ("policy.cors.allow_headers", cors.map(|c| c.allow_headers.as_str())),
                    ("policy.cors.expose_headers", cors.map(|c| c.expose_headers.as_str())),
                ]
                .into_iter()
                .chain(
                    cors.into_iter()
                        .flat_map(|c| c.allow_origin.iter())
                        .map(|o| ("policy.cors.allow_origin", Some(o.as_str()))),
                ),
            );
            for (field, value) in values {
                if let Some(value) = value {
                    field_value(value).map_err(|fault| fail(field.into(), bad_value(value, fault)))?;
                }
            }
        }
        let host = HostPattern::parse(spec.host.as_deref()).map_err(|p| fail("host".into(), p))?;
        let path = PathPattern::compile(&spec.path).map_err(|p| fail("path.value".into(), p))?;
        let conditions = spec
            .conditions
            .iter()
            .enumerate()
            .map(|(i, c)| Condition::compile(c).map_err(|(field, p)| fail(format!("conditions[{i}].{field}"), p)))
            .collect::<Result<Vec<_>, _>>()?;
        let (mut redirect, mut regex_rewrite, mut canary) = (None, None, None);
        let total_weight = match &spec.action {
            ActionSpec::Route(route) => {
                let sum = validate_route(route, &path).map_err(|(field, p)| fail(field, p))?;
                regex_rewrite = route
                    .rewrite_regex
                    .as_ref()
                    .map(|rewrite| RegexRewriter::compile(rewrite).map(Box::new))
                    .transpose()
                    .map_err(|(field, p)| fail(format!("action.route.rewrite_regex.{field}"), p))?;
                canary = route
                    .canary
                    .as_ref()
                    .map(|canary| CanaryPolicy::compile(canary).map(Box::new))
                    .transpose()
                    .map_err(|(field, p)| fail(format!("action.route.canary.{field}"), p))?;
                sum
            }
            ActionSpec::DirectResponse(direct) => {
                validate_direct(direct).map_err(|(field, p)| fail(field, p))?;
                0
            }
            ActionSpec::Redirect(spec) => {
                let template = RedirectTemplate::compile(spec)
                    .map_err(|(field, p)| fail(format!("action.redirect.{field}"), p))?;
                redirect = Some(Box::new(template));
                0
            }
        };
        Ok(Rule {
            spec,
            host,
            path,
            conditions,
            total_weight,
            redirect,
            regex_rewrite,
            canary,
        })
    }
}

/// Checks a direct response: its status, content type and headers.
fn validate_direct(direct: &DirectResponse) -> Result<(), (String, Problem)> {
    let at = |field: &str| format!("action.direct_response.{field}");
    if !(200..=599).contains(&direct.status) {
        return Err((at("status"), Problem::BadStatus(direct.status)));
    }
    if let Some(content_type) = &direct.content_type {
        field_value(content_type).map_err(|fault| (at("content_type"), bad_value(content_type, fault)))?;
    }
    for (i, header) in direct.headers.iter().enumerate() {
        if !is_token(&header.name) {
            return Err((
                at(&format!("headers[{i}].name")),
                Problem::BadHeaderName(header.name.clone()),
            ));
        }
        field_value(&header.value)
            .map_err(|fault| (at(&format!("headers[{i}].value")), bad_value(&header.value, fault)))?;
    }
    Ok(())
}

/// The pseudo-header a route's `set_headers` may set.
const AUTHORITY: &str = ":authority";

/// Checks a route action; returns the sum of its weights.
fn validate_route(route: &RouteAction, path: &PathPattern) -> Result<u64, (String, Problem)> {
    let at = |field: &str| format!("action.route.{field}");
    if route.backends.is_empty() {
        return Err((at("backends"), Problem::NoBackends));
    }
    for (i, backend) in route.backends.iter().enumerate() {
        let field = || at(&format!("backends[{i}].cluster"));
        if backend.cluster.is_empty() {
            return Err((field(), Problem::EmptyCluster));
        }
        field_value(&backend.cluster).map_err(|fault| (field(), bad_value(&backend.cluster, fault)))?;
    }
    for (i, header) in route.set_headers.iter().enumerate() {
        field_value(&header.value)
            .map_err(|fault| (at(&format!("set_headers[{i}].value")), bad_value(&header.value, fault)))?;
    }
    if let Some(rewrite) = &route.rewrite_prefix {
        // The rewritten `:path` is a header value too.
        field_value(rewrite).map_err(|fault| (at("rewrite_prefix"), bad_value(rewrite, fault)))?;
    }
    let sum: u64 = route.backends.iter().map(|b| u64::from(b.weight)).sum();
    if sum == 0 || sum > u64::from(u32::MAX) {
        return Err((at("backends"), Problem::BadWeights { sum }));
    }
    if route.rewrite_prefix.is_some() && !path.can_rewrite() {
        return Err((at("rewrite_prefix"), Problem::RewriteNeedsPrefix));
    }
    if route.rewrite_prefix.is_some() && route.rewrite_regex.is_some() {
        return Err((at("rewrite_regex"), Problem::TwoRewrites));
    }
    if let Some(affinity) = &route.affinity {
        crate::affinity::validate(affinity).map_err(|(field, p)| (at(&format!("affinity.{field}")), p))?;
    }
    let names = route.set_headers.iter().map(|h| &h.name).chain(&route.remove_headers);
    for (i, name) in names.enumerate() {
        // `set_headers` may set `:authority`, the Host the backend receives (ingress-nginx's
        // `upstream-vhost`); no other pseudo-header, and none is removed.
        let authority = i < route.set_headers.len() && name.eq_ignore_ascii_case(AUTHORITY);
        if !is_token(name) && !authority {
            let field = if i < route.set_headers.len() {
                "set_headers"
            } else {
                "remove_headers"
            };
            return Err((at(field), Problem::BadHeaderName(name.clone())));
        }
    }
    Ok(sum)
}

fn bad_value(value: &str, fault: FieldValueFault) -> Problem {
    Problem::BadFieldValue {
        value: value.to_owned(),
        fault,
    }
}
