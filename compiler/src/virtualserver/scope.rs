//! One VirtualServer's or VirtualServerRoute's routes in the table's terms (ROUTING.md §6): each
//! route's matches in list order, then its own action or splits; `pass`, `proxy`, `return`,
//! `redirect`; upstreams resolved to clusters through the cluster template and the Services. What
//! fails validation is [`Fault::Invalid`], what Switchyard cannot express [`Fault::Refused`].

use super::upstream::upstream_variant;
use std::collections::BTreeMap;
use std::sync::Arc;

use switchyard_table::{
    ActionSpec, Backend, ConditionSpec, DirectResponse, HeaderValue, Policy, Redirect, RegexRewrite, RouteAction,
};

use crate::ingress_nginx::proxying::{NextUpstream, Proxying};
use crate::model::Options;
use crate::nginx::{self, ConditionFault, Location};
use crate::objects::nginx::{Action, Route, Split, Upstream};
use crate::objects::{Age, ResourceKey};
use crate::services::{service_unavailable, PortRef, ServicePorts};
use crate::status::Reason;

/// Why a route (or the whole resource) does not route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Fault {
    /// The resource fails validation: it routes nothing.
    Invalid(String),
    /// This route cannot be expressed here: it alone is skipped, with a warning.
    Refused(String),
}

/// How a `proxy` action rewrites the path: `rewritePath` as a prefix rewrite, or on a regex
/// location as NGINX's `rewrite` with the regex's groups.
#[derive(Default)]
struct PathRewrite {
    prefix: Option<String>,
    regex: Option<RegexRewrite>,
}

/// A warning: its reason and message.
pub(super) type Note = (Reason, String);

/// One rule a route plans: its match (`None`: the route's own action), conditions and action.
pub(super) struct Planned {
    pub(super) branch: Option<usize>,
    pub(super) conditions: Vec<ConditionSpec>,
    pub(super) action: ActionSpec,
    /// What the rule asks of a request before it is proxied (the upstream's body limit).
    pub(super) policy: Option<Arc<Policy>>,
}

/// The resource whose routes are being compiled (the VirtualServer, or one of its
/// VirtualServerRoutes): its upstreams, its namespace, and the warnings it collects.
pub(super) struct Scope<'s> {
    pub(super) key: ResourceKey,
    pub(super) age: Arc<Age>,
    upstreams: BTreeMap<&'s str, &'s Upstream>,
    services: &'s ServicePorts,
    options: &'s Options,
    pub(super) notes: Vec<Note>,
    /// The policy of the action [`Scope::choice`] made last (a proxying one's), taken by
    /// [`Scope::route`] into its [`Planned`].
    policy: Option<Arc<Policy>>,
}

impl<'s> Scope<'s> {
    /// A resource's scope: its upstreams checked (names unique and given, a service and a port each).
    pub(super) fn new(
        key: &ResourceKey,
        age: &Arc<Age>,
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
            policy: None,
        })
    }

    /// The rules of one route: each match in order, then the route's own action (or splits).
    pub(super) fn route(&mut self, at: &str, route: &Route, location: &Location) -> Result<Vec<Planned>, Fault> {
        let own = self.choice(at, route.action.as_ref(), &route.splits, location)?;
        let own_policy = self.policy.take();
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
                policy: self.policy.take(),
            });
        }
        planned.push(Planned {
            branch: None,
            conditions: Vec::new(),
            action: own,
            policy: own_policy,
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
        // Only a proxying action sets it again ([`Scope::forward`]).
        self.policy = None;
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
            return self.forward(
                &format!("{at}.pass"),
                &[(upstream.as_str(), 1)],
                PathRewrite::default(),
                Vec::new(),
            );
        }
        if let Some(proxy) = &action.proxy {
            let rewrite = match (&proxy.rewrite_path, location.capture_pattern()) {
                (None, _) => PathRewrite::default(),
                (Some(path), None) => PathRewrite {
                    prefix: Some(path.clone()),
                    regex: None,
                },
                // NGINX's `rewrite`: the whole path replaced, `$1`…`$9` from the location's regex.
                (Some(path), Some(pattern)) if path.starts_with('/') => PathRewrite {
                    prefix: None,
                    regex: Some(RegexRewrite {
                        pattern,
                        path: path.clone(),
                        headers: Vec::new(),
                    }),
                },
                (Some(path), Some(_)) => {
                    return Err(Fault::Refused(format!(
                        "{at}.proxy.rewritePath {path:?} on a regex location must start with '/' here (it becomes the path sent upstream)"
                    )))
                }
            };
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
            return self.forward(&format!("{at}.proxy"), &upstream, rewrite, set);
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
        self.forward(at, &weighted, PathRewrite::default(), Vec::new())
    }

    /// The policy of the rules that proxy to `upstream`: its body limit and, on a gateway whose
    /// routes are Switchyard's, the gateway route of its timeouts and retries (elsewhere noted as
    /// not honoured when they are set).
    fn upstream_policy(&mut self, upstream: &Upstream, at: &str) -> Result<Option<Arc<Policy>>, Fault> {
        let max_body_bytes = body_limit(upstream, at)?;
        let proxying = proxying(upstream, at)?;
        if upstream
            .next_upstream_timeout
            .as_deref()
            .and_then(nginx::time_ms)
            .is_some()
        {
            self.notes.push((
                Reason::UpstreamSettingNotHonored,
                format!(
                    "{at}: upstream {:?}: next-upstream-timeout: Envoy's router bounds each try, not the time spent \
                     retrying; the retries are bounded by next-upstream-tries alone",
                    upstream.name
                ),
            ));
        }
        let route = match self.options.gateway_routes {
            true => proxying.route().name(),
            false => {
                let set = [&upstream.read_timeout, &upstream.send_timeout, &upstream.next_upstream];
                if set.iter().any(|field| field.is_some()) || upstream.next_upstream_tries.is_some() {
                    self.notes.push((
                        Reason::RouteSettingNotHonored,
                        format!(
                            "{at}: upstream {:?}: read-timeout, send-timeout and next-upstream need a route of their own, \
                             which only a gateway whose routes come from switchyard watch --clusters-dir has; the \
                             gateway's route applies",
                            upstream.name
                        ),
                    ));
                }
                None
            }
        };
        let policy = Policy {
            max_body_bytes,
            route,
            ..Policy::default()
        };
        Ok((policy != Policy::default()).then(|| Arc::new(policy)))
    }

    /// Forwarding to weighted upstreams; a service whose port cannot be resolved gets no traffic
    /// (warning `ServicePortNotFound`), and the route answers 503 when none is left.
    fn forward(
        &mut self,
        at: &str,
        upstreams: &[(&str, u32)],
        rewrite: PathRewrite,
        set_headers: Vec<HeaderValue>,
    ) -> Result<ActionSpec, Fault> {
        let (mut backends, mut affinity) = (Vec::new(), None);
        // The first upstream's body limit is the route's (one check per request, as its key).
        if let Some(first) = upstreams
            .first()
            .and_then(|(name, _)| self.upstreams.get(name).copied())
        {
            self.policy = self.upstream_policy(first, at)?;
        }
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
                Ok(port) => {
                    let (wanted, keyed_by) = upstream_variant(upstream, at)?;
                    let variant = wanted.clone().under(self.options);
                    // The first upstream's key is the route's: one key per request, which only
                    // the upstreams that hash read.
                    if affinity.is_none() && self.options.upstream_variants {
                        affinity = keyed_by.map(Box::new);
                    }
                    if variant != wanted {
                        self.notes.push((
                            Reason::UpstreamSettingNotHonored,
                            format!(
                                "{at}: upstream {name:?}: tls, connect-timeout, lb-method, healthCheck and sessionCookie need a cluster of their own, which \
                                 only a gateway whose clusters come from switchyard watch --clusters-dir or --istio-clusters has; it is \
                                 spoken to with its cluster's own settings"
                            ),
                        ));
                    }
                    let cluster = variant.cluster(self.options.cluster(&namespace, &service, port));
                    backends.push(Backend {
                        cluster,
                        weight: *weight,
                    });
                }
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
            rewrite_prefix: rewrite.prefix,
            rewrite_regex: rewrite.regex,
            set_headers,
            remove_headers: Vec::new(),
            canary: None,
            affinity,
        }))
    }
}

/// NGINX's `client_max_body_size` of an upstream: its `client-max-body-size` (an nginx size; `0`:
/// no limit), else the NGINX Ingress Controller's default, 1 MiB. An invalid size makes the
/// VirtualServer invalid, as NGINX's validation does.
fn body_limit(upstream: &Upstream, at: &str) -> Result<Option<u64>, Fault> {
    match &upstream.client_max_body_size {
        None => Ok(Some(1 << 20)),
        Some(text) => nginx::size_bytes(text).ok_or_else(|| {
            Fault::Invalid(format!(
                "{at}: upstream {:?}: client-max-body-size {text:?} is not a size (bytes, or with k, m or g)",
                upstream.name
            ))
        }),
    }
}

/// NGINX's timeouts and retries of an upstream (`read-timeout`, `send-timeout`, `next-upstream`,
/// `next-upstream-tries`), with the NGINX Ingress Controller's defaults (60 s, 60 s, `error
/// timeout`, no limit), as ingress-nginx's are made a gateway route
/// ([`crate::ingress_nginx::proxying`]). An invalid value makes the VirtualServer invalid.
fn proxying(upstream: &Upstream, at: &str) -> Result<Proxying, Fault> {
    let invalid = |field: &str, text: &dyn std::fmt::Debug| {
        Fault::Invalid(format!(
            "{at}: upstream {:?}: {field} {text:?} is not valid",
            upstream.name
        ))
    };
    let time = |field: &str, text: &Option<String>| -> Result<Option<u64>, Fault> {
        text.as_ref()
            .map(|t| nginx::time_ms(t).map(u64::from).ok_or_else(|| invalid(field, t)))
            .transpose()
    };
    let mut out = Proxying {
        next_upstream_tries: 0,
        ..Proxying::default()
    };
    out.read_timeout_ms = time("read-timeout", &upstream.read_timeout)?.unwrap_or(out.read_timeout_ms);
    out.send_timeout_ms = time("send-timeout", &upstream.send_timeout)?.unwrap_or(out.send_timeout_ms);
    if let Some(text) = &upstream.next_upstream {
        out.next_upstream = NextUpstream::parse(text).ok_or_else(|| invalid("next-upstream", text))?;
    }
    if let Some(tries) = upstream.next_upstream_tries {
        out.next_upstream_tries = u32::try_from(tries).map_err(|_| invalid("next-upstream-tries", &tries))?;
    }
    Ok(out)
}
