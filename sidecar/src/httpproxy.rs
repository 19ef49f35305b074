//! The HTTPProxy processor: inclusion trees (ROUTING.md §3, seed 004, Contour's rules).
//!
//! Only roots (`spec.virtualhost.fqdn`) start a tree. Walking down, include conditions accumulate:
//! prefixes concatenate (repeated `/` collapse), a child's `exact` or `regex` after inherited
//! prefixes becomes one exact or regex, header and query conditions are unioned. An include of a
//! proxy that is missing or closes a cycle is skipped and its conditions answer 502, so a broken
//! delegation is visible. Proxies no valid root reaches are orphaned. Every HTTPProxy gets a status.

use std::collections::{BTreeMap, BTreeSet};

use switchyard_table::{
    ActionSpec, Backend, ConditionSource, ConditionSpec, DirectResponse, HeaderValue, HostPattern, MatchOp, PathSpec,
    RouteAction, RuleSpec,
};

use crate::class::Classes;
use crate::objects::{key_of, Age, HTTPProxy, HeaderMatch, Kind, MatchCondition, ProxyRoute, QueryMatch, ResourceKey};
use crate::pipeline::{normalize_host, validate_rule, Draft, Options};
use crate::status::{Status, StatusBook};

/// Turns the HTTPProxy trees into drafts; records every proxy's status.
pub fn process(proxies: &[HTTPProxy], classes: &Classes, options: &Options, book: &mut StatusBook) -> Vec<Draft> {
    let mut eligible: BTreeMap<ResourceKey, &HTTPProxy> = BTreeMap::new();
    let mut ignored: BTreeMap<ResourceKey, String> = BTreeMap::new();
    for proxy in proxies {
        let key = key_of(Kind::HTTPProxy, &proxy.metadata);
        match classes.decide(&proxy.metadata, proxy.spec.ingress_class_name.as_deref()) {
            Ok(_) => {
                eligible.insert(key, proxy);
            }
            Err(why) => {
                book.ignored_by_class(&key, &why);
                ignored.insert(key, why);
            }
        }
    }
    let mut walker = Walker {
        proxies: &eligible,
        ignored: &ignored,
        options,
        book,
        drafts: Vec::new(),
        counters: BTreeMap::new(),
        reached: BTreeSet::new(),
        unroutable: BTreeSet::new(),
        checked: BTreeMap::new(),
        visits: 0,
    };
    for (key, proxy) in &eligible {
        let Some(vhost) = proxy.spec.virtualhost.as_ref() else {
            continue;
        };
        let fqdn = normalize_host(&vhost.fqdn);
        if fqdn.is_empty() {
            walker.invalid(
                key,
                "VirtualHostFqdnMissing",
                "spec.virtualhost.fqdn is empty: a root needs a host".to_owned(),
            );
            continue;
        }
        if let Err(problem) = HostPattern::parse(Some(&fqdn)) {
            walker.invalid(
                key,
                "VirtualHostFqdnInvalid",
                format!("spec.virtualhost.fqdn: {problem}"),
            );
            continue;
        }
        if !options.root_namespaces.is_empty() && !options.root_namespaces.contains(&key.namespace) {
            walker.invalid(
                key,
                "RootProxyNotAllowedInNamespace",
                format!(
                    "root HTTPProxies are allowed only in the namespaces {:?} (--root-namespaces); namespace {:?} is not one of them",
                    options.root_namespaces, key.namespace
                ),
            );
            continue;
        }
        let age = Age::of(Kind::HTTPProxy, &proxy.metadata);
        let context = Context {
            root: key.clone(),
            root_age: age,
            host: fqdn,
            prefix: String::new(),
            conditions: Vec::new(),
            stack: vec![key.clone()],
        };
        walker.visits = 0;
        walker.visit(key, &context);
    }
    let Walker {
        drafts,
        reached,
        unroutable,
        book,
        ..
    } = walker;
    for (key, proxy) in &eligible {
        if proxy.spec.virtualhost.is_none() && !reached.contains(key) {
            book.add(
                key,
                Status::Orphaned,
                "Orphaned",
                "Orphaned",
                "no valid root HTTPProxy includes this HTTPProxy (a root has spec.virtualhost.fqdn), so it routes nothing",
            );
            book.set(key, Status::Orphaned);
        } else if book.get(key).is_none() {
            let message = if proxy.spec.virtualhost.is_some() {
                "valid root HTTPProxy".to_owned()
            } else {
                "valid HTTPProxy, included by a valid root".to_owned()
            };
            book.add(key, Status::Valid, "Valid", "Valid", message);
        }
    }
    drafts.into_iter().filter(|d| !unroutable.contains(&d.owner)).collect()
}

/// What a proxy inherits from the includes above it.
#[derive(Debug, Clone)]
struct Context {
    root: ResourceKey,
    root_age: Age,
    host: String,
    /// The concatenated include prefixes, `""` at the root.
    prefix: String,
    /// Header and query conditions, unioned.
    conditions: Vec<ConditionSpec>,
    /// The proxies from the root down to here, to spot cycles.
    stack: Vec<ResourceKey>,
}

struct Walker<'a> {
    proxies: &'a BTreeMap<ResourceKey, &'a HTTPProxy>,
    ignored: &'a BTreeMap<ResourceKey, String>,
    options: &'a Options,
    book: &'a mut StatusBook,
    drafts: Vec<Draft>,
    counters: BTreeMap<ResourceKey, usize>,
    reached: BTreeSet<ResourceKey>,
    /// Proxies whose conditions cannot route: none of their own rules reach the table.
    unroutable: BTreeSet<ResourceKey>,
    /// Proxies whose own condition blocks were checked: `true` when they are sound.
    checked: BTreeMap<ResourceKey, bool>,
    /// Proxies visited for the current root.
    visits: usize,
}

/// The deepest include chain followed.
const MAX_DEPTH: usize = 64;
/// The most proxy visits one root's tree may take (a proxy included twice is visited twice).
const MAX_VISITS_PER_ROOT: usize = 10_000;

impl Walker<'_> {
    fn invalid(&mut self, key: &ResourceKey, reason: &str, message: String) {
        self.book.error(key, Status::Invalid, reason, message);
        self.book.set(key, Status::Invalid);
    }

    fn next_position(&mut self, key: &ResourceKey) -> usize {
        let counter = self.counters.entry(key.clone()).or_default();
        let n = *counter;
        *counter += 1;
        n
    }

    fn visit(&mut self, key: &ResourceKey, context: &Context) {
        let Some(proxy) = self.proxies.get(key).copied() else {
            return;
        };
        // Diamonds of includes multiply; a chain can be as deep as there are proxies. Bound both so
        // that no input can exhaust the stack or the time.
        if context.stack.len() > MAX_DEPTH || self.visits >= MAX_VISITS_PER_ROOT {
            let message = format!(
                "the include tree below this root is deeper than {MAX_DEPTH} levels or visits more than {MAX_VISITS_PER_ROOT} proxies; the part beyond that is not routed"
            );
            self.invalid(&context.root, "IncludeTreeTooLarge", message);
            return;
        }
        self.visits += 1;
        self.reached.insert(key.clone());
        if !self.blocks_are_sound(key, proxy) {
            return;
        }
        let age = Age::of(Kind::HTTPProxy, &proxy.metadata);
        for (ri, route) in proxy.spec.routes.iter().enumerate() {
            self.route(key, &age, ri, route, context);
        }
        for (ii, include) in proxy.spec.includes.iter().enumerate() {
            let at = format!("spec.includes[{ii}]");
            let mut prefix = None;
            let mut own = Vec::new();
            let mut bad = None;
            for condition in &include.conditions {
                if condition.exact.is_some() || condition.regex.is_some() {
                    bad = Some("exact and regex conditions are not allowed on an include (only prefix, header and queryParameter)");
                } else if let Some(p) = &condition.prefix {
                    if prefix.replace(p.clone()).is_some() {
                        bad = Some("an include may have at most one prefix condition");
                    }
                }
                match block_conditions(condition) {
                    Ok(list) => own.extend(list),
                    Err(why) => {
                        self.invalid(
                            key,
                            "ConditionsNotValid",
                            format!("{at}.conditions: {why}; this include is skipped"),
                        );
                        bad = Some("");
                    }
                }
            }
            if let Some(why) = bad {
                if !why.is_empty() {
                    self.invalid(
                        key,
                        "PathMatchConditionsNotValid",
                        format!("{at}.conditions: {why}; this include is skipped"),
                    );
                }
                continue;
            }
            let mut child = context.clone();
            if let Some(p) = prefix {
                child.prefix = join_path(&child.prefix, &p);
            }
            child.conditions.extend(own);
            if let Err((reason, why)) = conflicts(&child.conditions) {
                self.invalid(key, reason, format!("{at}: {why}; this include is skipped"));
                continue;
            }
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
            let Some(target_proxy) = self.proxies.get(&target).copied() else {
                let why = match self.ignored.get(&target) {
                    Some(class) => format!("{at}: include {shown} exists but is not ours ({class})"),
                    None => format!("{at}: include {shown} not found"),
                };
                self.invalid(key, "IncludeNotFound", format!("{why}; requests for it get 502"));
                self.bad_gateway(key, &age, &child);
                continue;
            };
            if context.stack.contains(&target) {
                self.invalid(
                    key,
                    "IncludeCreatesCycle",
                    format!("{at}: include {shown} creates an include cycle; requests for it get 502"),
                );
                self.bad_gateway(key, &age, &child);
                continue;
            }
            if target_proxy.spec.virtualhost.is_some() {
                self.invalid(
                    key,
                    "RootIncludesRoot",
                    format!("{at}: include {shown} is a root HTTPProxy (it has spec.virtualhost); roots cannot include roots, so this include is skipped"),
                );
                continue;
            }
            child.stack.push(target.clone());
            self.visit(&target, &child);
        }
    }

    /// Checks the proxy's own condition blocks once: one path condition per block, paths start
    /// with `/`, each header or query condition is well formed.
    fn blocks_are_sound(&mut self, key: &ResourceKey, proxy: &HTTPProxy) -> bool {
        if let Some(sound) = self.checked.get(key) {
            return *sound;
        }
        let mut problems = Vec::new();
        for (ri, route) in proxy.spec.routes.iter().enumerate() {
            let paths = route
                .conditions
                .iter()
                .filter(|c| c.prefix.is_some() || c.exact.is_some() || c.regex.is_some());
            let mut count = 0;
            for c in paths {
                count +=
                    usize::from(c.prefix.is_some()) + usize::from(c.exact.is_some()) + usize::from(c.regex.is_some());
                for p in [&c.prefix, &c.exact, &c.regex].into_iter().flatten() {
                    if !p.starts_with('/') {
                        problems.push((
                            "PathMatchConditionsNotValid",
                            format!("spec.routes[{ri}].conditions: path {p:?} must start with '/'"),
                        ));
                    }
                }
            }
            if count > 1 {
                problems.push((
                    "PathMatchConditionsNotValid",
                    format!("spec.routes[{ri}].conditions: at most one prefix, exact or regex condition is allowed"),
                ));
            }
            for c in &route.conditions {
                if let Err(why) = block_conditions(c) {
                    problems.push(("ConditionsNotValid", format!("spec.routes[{ri}].conditions: {why}")));
                }
            }
        }
        for (ii, include) in proxy.spec.includes.iter().enumerate() {
            for p in include.conditions.iter().filter_map(|c| c.prefix.as_ref()) {
                if !p.starts_with('/') {
                    problems.push((
                        "PathMatchConditionsNotValid",
                        format!("spec.includes[{ii}].conditions: prefix {p:?} must start with '/'"),
                    ));
                }
            }
        }
        let sound = problems.is_empty();
        for (reason, message) in problems {
            self.invalid(
                key,
                reason,
                format!("{message}; this HTTPProxy routes nothing until it is fixed"),
            );
        }
        if !sound {
            self.unroutable.insert(key.clone());
        }
        self.checked.insert(key.clone(), sound);
        sound
    }

    fn route(&mut self, key: &ResourceKey, age: &Age, ri: usize, route: &ProxyRoute, context: &Context) {
        let at = format!("spec.routes[{ri}]");
        let mut path = None;
        let mut conditions = context.conditions.clone();
        for c in &route.conditions {
            if let Some(p) = &c.prefix {
                path = Some(PathSpec::Prefix(join_path(&context.prefix, p)));
            } else if let Some(e) = &c.exact {
                path = Some(PathSpec::Exact(join_path(&context.prefix, e)));
            } else if let Some(r) = &c.regex {
                path = Some(PathSpec::Regex(join_regex(&context.prefix, r)));
            }
            conditions.extend(block_conditions(c).unwrap_or_default());
        }
        let path = path.unwrap_or_else(|| {
            PathSpec::Prefix(if context.prefix.is_empty() {
                "/".to_owned()
            } else {
                context.prefix.clone()
            })
        });
        if let Err((reason, why)) = conflicts(&conditions) {
            self.invalid(
                key,
                reason,
                format!("{at}: {why}; this HTTPProxy is un-routable until it is fixed"),
            );
            self.unroutable.insert(key.clone());
            return;
        }
        if route.services.is_empty() {
            self.invalid(
                key,
                "RouteHasNoServices",
                format!("{at}: a route needs at least one service; it is skipped"),
            );
            return;
        }
        let all_unweighted = route.services.iter().all(|s| s.weight.unwrap_or(0) == 0);
        let mut backends = Vec::new();
        for (si, service) in route.services.iter().enumerate() {
            if !(1..=65535).contains(&service.port) || service.name.is_empty() {
                self.invalid(
                    key,
                    "ServiceInvalid",
                    format!(
                        "{at}.services[{si}]: a service needs a name and a port from 1 to 65535; the route is skipped"
                    ),
                );
                return;
            }
            let weight = if all_unweighted { 1 } else { service.weight.unwrap_or(0) };
            backends.push(Backend {
                cluster: self.options.cluster(&key.namespace, &service.name, service.port),
                weight,
            });
        }
        let rewrite_prefix = route.path_rewrite_policy.as_ref().and_then(|policy| {
            let matched = match &path {
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
        // The table would refuse the rule too; checked here to name the manifest's own field.
        let set = route.request_headers_policy.iter().flat_map(|p| p.set.iter());
        for (hi, header) in set.enumerate() {
            if let Err(fault) = switchyard_table::field::field_value(&header.value) {
                let field = format!("{at}.requestHeadersPolicy.set[{hi}].value");
                let message = format!("{field}: {:?}: {fault}; the route is skipped", header.value);
                self.invalid(key, "RequestHeadersPolicyInvalid", message);
                return;
            }
        }
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
        let n = self.next_position(key);
        let rule = RuleSpec {
            name: format!("{}#{n}", key.display()),
            host: Some(context.host.clone()),
            path,
            conditions,
            action: ActionSpec::Route(RouteAction {
                backends,
                rewrite_prefix,
                set_headers,
                remove_headers,
            }),
        };
        if let Err(why) = validate_rule(&rule) {
            self.invalid(key, "RouteNotValid", format!("{at}: {why}; the route is skipped"));
            return;
        }
        self.push(key, age, n, rule, context);
    }

    /// The 502 rule for a broken include: the include's accumulated conditions, answered locally.
    fn bad_gateway(&mut self, key: &ResourceKey, age: &Age, context: &Context) {
        let n = self.next_position(key);
        let rule = RuleSpec {
            name: format!("{}#{n}", key.display()),
            host: Some(context.host.clone()),
            path: PathSpec::Prefix(if context.prefix.is_empty() {
                "/".to_owned()
            } else {
                context.prefix.clone()
            }),
            conditions: context.conditions.clone(),
            action: ActionSpec::DirectResponse(DirectResponse {
                status: 502,
                body: None,
            }),
        };
        if validate_rule(&rule).is_ok() {
            self.push(key, age, n, rule, context);
        }
    }

    fn push(&mut self, key: &ResourceKey, age: &Age, position: usize, rule: RuleSpec, context: &Context) {
        self.drafts.push(Draft {
            owner: key.clone(),
            age: age.clone(),
            position,
            claimant: context.root.clone(),
            claimant_age: context.root_age.clone(),
            rule,
        });
    }
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

/// Header conditions that no request can satisfy after merging (ROUTING.md §3): two `exact` on one
/// header, `present` with `notpresent`, `exact` with `notexact` of the same value.
fn conflicts(conditions: &[ConditionSpec]) -> Result<(), (&'static str, String)> {
    let headers: Vec<&ConditionSpec> = conditions.iter().filter(|c| c.on == ConditionSource::Header).collect();
    for (i, a) in headers.iter().enumerate() {
        for b in &headers[i + 1..] {
            if a.name != b.name {
                continue;
            }
            let name = a.name.as_deref().unwrap_or_default();
            match (a.op, a.invert, b.op, b.invert) {
                (MatchOp::Exact, false, MatchOp::Exact, false) => {
                    return Err((
                        "DuplicateMatchConditionHeaders",
                        format!("header {name:?} has two exact conditions after inclusion ({:?} and {:?}): no request can match", a.value.as_deref().unwrap_or_default(), b.value.as_deref().unwrap_or_default()),
                    ));
                }
                (MatchOp::Present, x, MatchOp::Present, y) if x != y => {
                    return Err((
                        "HeaderMatchConditionsNotValid",
                        format!("header {name:?} must be both present and not present: no request can match"),
                    ));
                }
                (MatchOp::Exact, x, MatchOp::Exact, y) if x != y && a.value == b.value => {
                    return Err((
                        "HeaderMatchConditionsNotValid",
                        format!(
                            "header {name:?} must both equal and not equal {:?}: no request can match",
                            a.value.as_deref().unwrap_or_default()
                        ),
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
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

    #[test]
    fn header_conflicts_are_found_case_insensitively_after_lowercasing() {
        let exact = |v: &str| {
            spec(
                ConditionSource::Header,
                "x-a",
                MatchOp::Exact,
                Some(v.to_owned()),
                false,
            )
        };
        assert!(conflicts(&[exact("1"), exact("2")]).is_err());
        assert!(conflicts(&[exact("1")]).is_ok());
        let not_exact = spec(ConditionSource::Header, "x-a", MatchOp::Exact, Some("2".into()), true);
        assert!(conflicts(&[exact("1"), not_exact]).is_ok());
        // Query parameters may repeat.
        let query = |v: &str| spec(ConditionSource::Query, "x-a", MatchOp::Exact, Some(v.to_owned()), false);
        assert!(conflicts(&[query("1"), query("2")]).is_ok());
    }
}
