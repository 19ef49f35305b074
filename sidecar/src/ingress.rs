//! The Ingress processor: every accepted Ingress becomes rules, one per (host, path), plus a
//! catch-all for `defaultBackend`.
//!
//! `Prefix` and `ImplementationSpecific` paths are segment prefixes, `Exact` is exact, a path left
//! out is the segment prefix `/` (an `ImplementationSpecific` path that looks like a regex gets a
//! `PathLooksLikeRegex` warning: it stays a literal prefix, as ROUTING.md says). `defaultBackend`
//! is a rule with no host and `Prefix("/")`, so it ranks below everything by keys 1 and 2. The router annotations of ROUTING.md §4 add one
//! condition each to every rule of the Ingress. A backend whose port cannot be resolved keeps its
//! rule as a 503 ([`crate::services`]). TLS settings do not affect routing and are not read.

use k8s_openapi::api::networking::v1::{Ingress, IngressBackend};
use switchyard_table::{ActionSpec, Backend, ConditionSource, ConditionSpec, MatchOp, PathSpec, RouteAction, RuleSpec};

use crate::class::Classes;
use crate::objects::{annotation, key_of, Age, Kind, ResourceKey};
use crate::pipeline::{normalize_host, validate_rule, Draft, Options};
use crate::services::{service_unavailable, PortRef, ServicePorts, PORT_NOT_FOUND};
use crate::status::{Status, StatusBook};

/// Router annotations: (annotation keys, what they test).
const ROUTER_ANNOTATIONS: [(&str, ConditionSource); 4] = [
    ("bfe.ingress.kubernetes.io/router.cookie", ConditionSource::Cookie),
    ("bfe.ingress.kubernetes.io/router.header", ConditionSource::Header),
    ("switchyard.io/router.cookie", ConditionSource::Cookie),
    ("switchyard.io/router.header", ConditionSource::Header),
];

/// Whether a path holds characters that only mean something in a regular expression or a glob
/// (ImplementationSpecific paths of other controllers are often regexes; ours are literal).
fn looks_like_regex(path: &str) -> bool {
    path.contains(['[', ']', '(', ')', '{', '}', '*', '+', '?', '^', '$', '|', '\\'])
}

/// Turns the accepted Ingresses into drafts; records each Ingress's status.
pub fn process(
    ingresses: &[Ingress],
    classes: &Classes,
    services: &ServicePorts,
    options: &Options,
    book: &mut StatusBook,
) -> Vec<Draft> {
    let mut drafts = Vec::new();
    for ingress in ingresses {
        let key = key_of(Kind::Ingress, &ingress.metadata);
        let spec = ingress.spec.as_ref();
        match classes.decide(&ingress.metadata, spec.and_then(|s| s.ingress_class_name.as_deref())) {
            Err(why) => {
                book.ignored_by_class(&key, why);
                continue;
            }
            Ok(why) => book.add(&key, Status::Accepted, "Info", "ClassMatches", format!("ours: {why}")),
        }
        let conditions = match router_conditions(ingress) {
            Ok(conditions) => conditions,
            Err(why) => {
                book.error(&key, Status::Rejected, "BadRouterAnnotation", why);
                book.set(&key, Status::Rejected);
                continue;
            }
        };
        let before = drafts.len();
        let age = Age::of(Kind::Ingress, &ingress.metadata);
        let mut position = 0usize;
        let mut emit = |n: usize,
                        host: Option<String>,
                        path: PathSpec,
                        backend: Option<&IngressBackend>,
                        where_: String,
                        book: &mut StatusBook| {
            let action = match backend_cluster(backend, &key, services, options) {
                Ok(cluster) => ActionSpec::Route(RouteAction {
                    backends: vec![Backend { cluster, weight: 1 }],
                    rewrite_prefix: None,
                    set_headers: Vec::new(),
                    remove_headers: Vec::new(),
                }),
                Err(NoCluster::PortNotFound(why)) => {
                    book.error(
                        &key,
                        Status::Accepted,
                        PORT_NOT_FOUND,
                        format!("{where_}: {why}; requests for this path get 503"),
                    );
                    service_unavailable()
                }
                Err(NoCluster::Unusable(reason, why)) => {
                    book.error(
                        &key,
                        Status::Accepted,
                        reason,
                        format!("{where_}: {why}; this path is not routed"),
                    );
                    return;
                }
            };
            let rule = RuleSpec {
                name: format!("{}#{n}", key.display()),
                host,
                path,
                conditions: conditions.clone(),
                action,
            };
            if let Err(why) = validate_rule(&rule) {
                book.error(
                    &key,
                    Status::Accepted,
                    "InvalidRule",
                    format!("{where_}: {why}; this path is not routed"),
                );
                return;
            }
            drafts.push(Draft {
                owner: key.clone(),
                age: age.clone(),
                position: n,
                claimant: key.clone(),
                claimant_age: age.clone(),
                rule,
            });
        };
        for (i, rule) in spec.iter().flat_map(|s| s.rules.iter().flatten()).enumerate() {
            let host = rule.host.as_deref().filter(|h| !h.is_empty()).map(normalize_host);
            let Some(http) = rule.http.as_ref() else { continue };
            for (j, path) in http.paths.iter().enumerate() {
                let where_ = format!("spec.rules[{i}].http.paths[{j}]");
                let n = position;
                position += 1;
                let value = path
                    .path
                    .clone()
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| "/".to_owned());
                if path.path_type == "ImplementationSpecific" && looks_like_regex(&value) {
                    book.add(
                        &key,
                        Status::Accepted,
                        "Warning",
                        "PathLooksLikeRegex",
                        format!(
                            "{where_}: path {value:?} looks like a regular expression, but an ImplementationSpecific \
                             path is a literal segment prefix here: it matches only paths starting with exactly \
                             these characters (use Prefix/Exact paths, or an HTTPProxy regex condition)"
                        ),
                    );
                }
                let path_spec = match path.path_type.as_str() {
                    "Exact" => PathSpec::Exact(value),
                    "Prefix" | "ImplementationSpecific" | "" => PathSpec::SegmentPrefix(value),
                    other => {
                        book.error(
                            &key,
                            Status::Accepted,
                            "UnknownPathType",
                            format!("{where_}: pathType {other:?} is not Exact, Prefix or ImplementationSpecific; this path is not routed"),
                        );
                        continue;
                    }
                };
                emit(n, host.clone(), path_spec, Some(&path.backend), where_, book);
            }
        }
        if let Some(default) = spec.and_then(|s| s.default_backend.as_ref()) {
            emit(
                position,
                None,
                PathSpec::SegmentPrefix("/".to_owned()),
                Some(default),
                "spec.defaultBackend".to_owned(),
                book,
            );
        }
        if drafts.len() == before {
            book.error(
                &key,
                Status::Rejected,
                "NoRules",
                "this Ingress has no usable rule: nothing routes to it",
            );
            book.set(&key, Status::Rejected);
        }
    }
    drafts
}

/// Why a backend has no cluster.
enum NoCluster {
    /// Its port cannot be resolved: the rule stays and answers 503 (ROUTING.md §5).
    PortNotFound(String),
    /// It cannot be used at all (reason, why): the path is not routed.
    Unusable(&'static str, String),
}

/// The cluster of a backend, or why it has none.
fn backend_cluster(
    backend: Option<&IngressBackend>,
    key: &ResourceKey,
    services: &ServicePorts,
    options: &Options,
) -> Result<String, NoCluster> {
    let Some(service) = backend.and_then(|b| b.service.as_ref()) else {
        return Err(NoCluster::Unusable(
            "UnsupportedBackend",
            "the backend names no service (resource backends are not supported)".to_owned(),
        ));
    };
    let port = service.port.as_ref();
    let port = match (port.and_then(|p| p.number), port.and_then(|p| p.name.as_deref())) {
        (Some(number), _) => PortRef::Number(number),
        (None, Some(name)) if !name.is_empty() => PortRef::Name(name),
        _ => {
            return Err(NoCluster::Unusable(
                "MissingServicePort",
                format!("the backend for service {:?} has no port", service.name),
            ))
        }
    };
    let number = services
        .resolve(&key.namespace, &service.name, port)
        .map_err(NoCluster::PortNotFound)?;
    Ok(options.cluster(&key.namespace, &service.name, number))
}

/// The conditions the router annotations ask for (ROUTING.md §4), cookie first.
fn router_conditions(ingress: &Ingress) -> Result<Vec<ConditionSpec>, String> {
    let mut conditions = Vec::new();
    for (key, on) in ROUTER_ANNOTATIONS {
        let Some(text) = annotation(&ingress.metadata, key) else {
            continue;
        };
        let Some((name, value)) = text.split_once(':') else {
            return Err(format!("annotation {key}: {text:?} is not \"Name: value\""));
        };
        let name = name.trim();
        let value = value.trim();
        if name.is_empty() {
            return Err(format!("annotation {key}: {text:?} has no name before ':'"));
        }
        let name = if on == ConditionSource::Header {
            name.to_ascii_lowercase()
        } else {
            name.to_owned()
        };
        let condition = if value.contains('|') {
            let alternatives: Vec<String> = value.split('|').map(|v| regex_lite::escape(v.trim())).collect();
            ConditionSpec {
                on,
                name: Some(name),
                op: MatchOp::Regex,
                value: Some(alternatives.join("|")),
                invert: false,
            }
        } else {
            ConditionSpec {
                on,
                name: Some(name),
                op: MatchOp::Exact,
                value: Some(value.to_owned()),
                invert: false,
            }
        };
        if !conditions.contains(&condition) {
            conditions.push(condition);
        }
    }
    Ok(conditions)
}
