//! ROUTING.md §7.3–7.5, §7.7: one ingress-nginx server laid out as rules, in the order a request
//! meets them: `app-root` on `/`, then the locations in ingress-nginx's order (§7.3 outside regex
//! mode, the trailing-slash 301s among them; §7.4 in regex mode), each location's HTTPS redirect
//! right before it. Each rule's action is a redirect, the 404, or a route to a backend with the
//! location's rewrite and headers; the backend's cluster is the processor's to resolve
//! ([`super::processor`]). The redirect URLs are the templates table/README.md lists.
//!
//! Rule names say what each rule is, so that `switchyard explain` can (from the table alone):
//! `Ingress/ns/name#n` a location (its Ingress's n-th path), `Ingress/ns/first#root@host` the
//! implicit root with the first Ingress's annotations, `Ingress/ns/name#default` the catch-all
//! server's default backend, `…#app-root@host`, `…#www-redirect@host`, and the suffixes
//! `.slash-redirect` (§7.3's 301) and `.https-redirect` (§7.7.6) after what they stand before
//! (`Ingress/ns/name#2.https-redirect`); a rule copied to a `server-alias` host ends in `@alias`.

use std::cmp::Ordering;

use k8s_openapi::api::networking::v1::IngressBackend;
use switchyard_table::{ConditionSpec, DirectResponse, HeaderValue, PathSpec, Redirect, RegexRewrite};

use super::annotations::{IngressNginxAnnotations, RewriteTarget};
use super::configmap::ControllerConfig;
use super::paths::{self, PathType};
use super::server::{Location, Member, Origin, Server, Target};
use crate::https::routing::{scheme_is, Scheme};

/// What a laid-out rule does.
#[derive(Debug, Clone)]
pub enum Act<'o> {
    /// Answer a redirect.
    Redirect(Redirect),
    /// Answer locally (a redirect annotation's code nginx's `return` does not treat as a redirect).
    Respond(DirectResponse),
    /// ingress-nginx's default backend: the 404.
    NotFound,
    /// Send it to the backend, rewritten.
    Route {
        /// The backend, to resolve.
        backend: &'o IngressBackend,
        /// `rewrite-target` (and `x-forwarded-prefix`).
        rewrite_regex: Option<RegexRewrite>,
        /// `upstream-vhost` (`:authority`).
        set_headers: Vec<HeaderValue>,
        /// The location's canary (§7.6): the canary Ingress (an index into the canaries) and its
        /// backend, to resolve.
        canary: Option<(usize, &'o IngressBackend)>,
    },
}

/// One rule of a server, in the server's order.
#[derive(Debug, Clone)]
pub struct Laid<'o> {
    /// The rule's name.
    pub name: String,
    /// The Ingress it is reported on (an index into the members).
    pub member: usize,
    /// Its position within that Ingress (§4's key 5 among hosts; the server's order decides
    /// within it).
    pub position: usize,
    /// Where the manifest writes it.
    pub at: String,
    /// The host it answers (`None`: the catch-all server).
    pub host: Option<String>,
    /// The path it matches.
    pub path: PathSpec,
    /// Its conditions (the HTTPS redirect's `:scheme`).
    pub conditions: Vec<ConditionSpec>,
    /// What it does.
    pub action: Act<'o>,
}

/// The position given to the rules that are not a path of an Ingress (roots, redirects), after
/// every path's.
const AFTER_PATHS: usize = 1 << 20;

/// The rules of `server`, for its host or (`alias`) one of its `server-alias` hosts, in the order a
/// request meets them (§7.7).
pub fn lay_out<'o>(
    server: &Server<'o>,
    members: &[Member<'o>],
    config: &ControllerConfig,
    alias: Option<&str>,
) -> Vec<Laid<'o>> {
    let host = alias.or(server.host.as_deref());
    let at_host = format!("@{}", host.unwrap_or("*"));
    let alias_part = alias.map(|a| format!("@{a}")).unwrap_or_default();
    let regex_mode = server.regex_mode.is_some();
    let mut out = Vec::new();
    if let Some((member, root)) = app_root(server, members) {
        out.push(Laid {
            name: format!("{}#app-root{at_host}", members[member].key.display()),
            member,
            position: AFTER_PATHS,
            at: "metadata.annotations (app-root)".to_owned(),
            host: host.map(str::to_owned),
            path: PathSpec::Exact("/".to_owned()),
            conditions: Vec::new(),
            action: Act::Redirect(Redirect {
                url: format!("${{scheme}}://${{http_host}}{root}"),
                status: 302,
            }),
        });
    }
    for entry in ordered(server, regex_mode) {
        let location = entry.location();
        let member = &members[location.member];
        // The rule's name: what it is, then (for the redirects before it) which redirect, then
        // the host where the name needs one.
        let (what, position, at, host_part) = match &location.origin {
            Origin::Path { position, at } => (position.to_string(), *position, at.clone(), alias_part.clone()),
            Origin::ImplicitRoot => (
                "root".to_owned(),
                AFTER_PATHS + 1,
                "the implicit root".to_owned(),
                at_host.clone(),
            ),
            Origin::DefaultBackend => (
                "default".to_owned(),
                AFTER_PATHS + 1,
                "spec.defaultBackend".to_owned(),
                alias_part.clone(),
            ),
        };
        let stem = format!("{}#{what}", member.key.display());
        let name = |redirect: &str| format!("{stem}{redirect}{host_part}");
        let rule = |name: String, path: PathSpec, conditions: Vec<ConditionSpec>, action: Act<'o>| Laid {
            name,
            member: location.member,
            position,
            at: at.clone(),
            host: host.map(str::to_owned),
            path,
            conditions,
            action,
        };
        if let Entry::SlashRedirect { bare, .. } = &entry {
            // §7.3: the bare path answers a 301 to the path with its slash, before any annotation.
            out.push(rule(
                name(".slash-redirect"),
                PathSpec::Exact(bare.clone()),
                Vec::new(),
                Act::Redirect(Redirect {
                    url: format!("${{scheme}}://${{host}}{}${{is_args}}${{args}}", location.path),
                    status: 301,
                }),
            ));
            continue;
        }
        // Its regex was checked when the server was gathered (`PathRegexUnsupported`).
        let path = paths::location_path(&location.path, location.kind, regex_mode);
        let annotations = &member.annotations;
        if let Some(answer) = location_redirect(annotations) {
            out.push(rule(name(""), path, Vec::new(), answer));
            continue;
        }
        if let Some(redirect) = https_redirect(server, location, annotations, config) {
            out.push(rule(
                name(".https-redirect"),
                path.clone(),
                vec![scheme_is(Scheme::Http)],
                Act::Redirect(redirect),
            ));
        }
        let action = match location.target {
            Target::NotFound => Act::NotFound,
            Target::Backend(backend) => Act::Route {
                backend,
                rewrite_regex: rewrite(location, annotations),
                set_headers: (annotations.upstream_vhost.iter())
                    .map(|h| HeaderValue {
                        name: ":authority".to_owned(),
                        value: h.clone(),
                    })
                    .collect(),
                canary: location.canary,
            },
        };
        out.push(rule(name(""), path, Vec::new(), action));
    }
    out
}

/// §7.7.1: the `from-to-www-redirect` rule of a server (the first of its Ingresses that sets
/// it): a request for `www.H` (or for `H` without `www.`) gets a redirect to `H`. The processor
/// adds it only where nothing owns that host.
pub fn www_redirect<'o>(server: &Server<'o>, members: &[Member<'o>], config: &ControllerConfig) -> Option<Laid<'o>> {
    let host = server.host.as_deref().filter(|h| !h.starts_with("*."))?;
    let &member = server
        .members
        .iter()
        .find(|&&m| members[m].annotations.from_to_www_redirect == Some(true))?;
    let other = match host.strip_prefix("www.") {
        Some(bare) => bare.to_owned(),
        None => format!("www.{host}"),
    };
    Some(Laid {
        name: format!("{}#www-redirect@{other}", members[member].key.display()),
        member,
        position: AFTER_PATHS + 2,
        at: "metadata.annotations (from-to-www-redirect)".to_owned(),
        host: Some(other),
        path: PathSpec::SegmentPrefix("/".to_owned()),
        conditions: Vec::new(),
        action: Act::Redirect(Redirect {
            url: format!("${{scheme}}://{host}:${{port}}${{uri%/}}${{is_args}}${{args}}"),
            status: config.http_redirect_code,
        }),
    })
}

/// A location in the server's order, or the trailing-slash 301 of one (§7.3).
enum Entry<'s, 'o> {
    Location(&'s Location<'o>),
    SlashRedirect { of: &'s Location<'o>, bare: String },
}

impl<'s, 'o> Entry<'s, 'o> {
    fn location(&self) -> &'s Location<'o> {
        match self {
            Entry::Location(l) | Entry::SlashRedirect { of: l, .. } => l,
        }
    }

    /// The path and pathType it is ordered by (a 301 is the exact bare path).
    fn key(&self) -> (&str, PathType) {
        match self {
            Entry::Location(l) => (&l.path, l.kind),
            Entry::SlashRedirect { bare, .. } => (bare, PathType::Exact),
        }
    }
}

/// The locations in the order a request tries them: §7.4's longest path string first in regex
/// mode; else §7.3's (exact before prefix, longer before shorter), each location ending in `/`
/// bringing its bare path's 301, unless a location of the server has that very path. Ties keep
/// the order the locations were met in.
fn ordered<'s, 'o>(server: &'s Server<'o>, regex_mode: bool) -> Vec<Entry<'s, 'o>> {
    let mut entries: Vec<Entry<'s, 'o>> = server.locations.iter().map(Entry::Location).collect();
    if !regex_mode {
        for location in &server.locations {
            let Some(bare) = paths::trailing_slash_redirect(&location.path, false) else {
                continue;
            };
            let served = server.locations.iter().any(|l| l.path == bare);
            let known = entries
                .iter()
                .any(|e| matches!(e, Entry::SlashRedirect { bare: b, .. } if b == bare));
            if !served && !known {
                entries.push(Entry::SlashRedirect {
                    of: location,
                    bare: bare.to_owned(),
                });
            }
        }
    }
    let order = |a: &Entry<'_, '_>, b: &Entry<'_, '_>| -> Ordering {
        match regex_mode {
            true => paths::regex_location_order(a.key().0, b.key().0),
            false => paths::plain_location_order(a.key(), b.key()),
        }
    };
    // A stable sort: ties keep the order the locations were met in.
    entries.sort_by(order);
    entries
}

/// §7.7.2: the `app-root` of the server (of the longest path that carries one; the first such).
fn app_root(server: &Server<'_>, members: &[Member<'_>]) -> Option<(usize, String)> {
    let mut carriers: Vec<&Location<'_>> = server
        .locations
        .iter()
        .filter(|l| members[l.member].annotations.app_root.is_some())
        .collect();
    carriers.sort_by_key(|l| std::cmp::Reverse(l.path.len()));
    let member = carriers.first()?.member;
    Some((member, members[member].annotations.app_root.clone()?))
}

/// §7.7.4–5: the location's own redirect: `temporal-redirect`, else `permanent-redirect`, else a
/// `rewrite-target` to an absolute URL (302, its `$n` from the path regex, the query appended).
///
/// nginx's `return code URL` with a code it does not treat as a redirect (300, 304, 305, 306, which
/// ingress-nginx's code ranges allow) sends the URL as the body and no `Location`.
fn location_redirect<'o>(annotations: &IngressNginxAnnotations) -> Option<Act<'o>> {
    let to = (annotations.temporal_redirect.as_ref()).or(annotations.permanent_redirect.as_ref());
    if let Some(to) = to {
        if !matches!(to.code, 301 | 302 | 303 | 307 | 308) {
            return Some(Act::Respond(DirectResponse {
                status: to.code,
                body: Some(to.url.clone()),
                ..DirectResponse::default()
            }));
        }
        let url = match to.url.starts_with('/') {
            true => format!("${{scheme}}://${{host}}{}", to.url),
            false => to.url.clone(),
        };
        return Some(Act::Redirect(Redirect { url, status: to.code }));
    }
    match &annotations.rewrite_target {
        Some(RewriteTarget::Url(url)) => Some(Act::Redirect(Redirect {
            url: format!("{}${{is_args}}${{args}}", groups_as_variables(url)),
            status: 302,
        })),
        _ => None,
    }
}

/// `$1` → `${1}`: a rewrite target's groups as the redirect's variables.
fn groups_as_variables(url: &str) -> String {
    let mut out = String::with_capacity(url.len() + 8);
    let mut chars = url.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied().filter(char::is_ascii_digit)) {
            ('$', Some(digit)) => {
                chars.next();
                out.push_str(&format!("${{{digit}}}"));
            }
            _ => out.push(c),
        }
    }
    out
}

/// §7.7.6: the HTTPS redirect before a location, when it applies.
fn https_redirect(
    server: &Server<'_>,
    location: &Location<'_>,
    annotations: &IngressNginxAnnotations,
    config: &ControllerConfig,
) -> Option<Redirect> {
    let force = annotations.force_ssl_redirect.unwrap_or(config.force_ssl_redirect);
    let ssl = annotations.ssl_redirect.unwrap_or(config.ssl_redirect);
    let applies = (force || (ssl && server.has_certificate)) && !config.exempt_from_tls_redirect(&location.path);
    if !applies {
        return None;
    }
    let preserve = annotations
        .preserve_trailing_slash
        .unwrap_or(config.preserve_trailing_slash);
    Some(Redirect {
        url: match preserve {
            true => "https://${host}${request_uri}".to_owned(),
            false => "https://${host}${request_uri%/}".to_owned(),
        },
        status: config.http_redirect_code,
    })
}

/// §7.5: `rewrite-target` (the whole path replaced, `$n` from the location's path regex matched
/// case-insensitively, the query appended) with `x-forwarded-prefix`.
fn rewrite(location: &Location<'_>, annotations: &IngressNginxAnnotations) -> Option<RegexRewrite> {
    let Some(RewriteTarget::Path(target)) = &annotations.rewrite_target else {
        return None;
    };
    // ingress-nginx writes no `rewrite` for a target equal to the location's path
    // (`buildProxyPass`: `if path == location.Rewrite.Target { return defProxyPass }`).
    if *target == location.path {
        return None;
    }
    Some(RegexRewrite {
        pattern: format!("(?i)^(?:{})", location.path),
        path: target.clone(),
        headers: (annotations.x_forwarded_prefix.iter())
            .map(|prefix| HeaderValue {
                name: "x-forwarded-prefix".to_owned(),
                value: prefix.clone(),
            })
            .collect(),
    })
}
