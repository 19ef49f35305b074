//! `switchyard explain`: the decision for one request, from the same matcher the filter runs
//! ([`RouteTable::route`] and [`RouteTable::candidates`]), and why every other candidate lost; the
//! winner's policy and which part of it answered ([`policy`]).

pub mod policy;

use std::net::IpAddr;

use serde::Serialize;
use switchyard_table::canary::{CanaryDecision, CanaryStep};
use switchyard_table::precedence::Precedence;
use switchyard_table::{ActionSpec, ConditionSpec, MatchOp, NoRoute, RequestView, RouteTable, SimpleRequest};

use crate::collisions::describe_path;

/// The JSON form of a decision: `{"rule", "cluster", "status", "path"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The winning rule's name, or `null`.
    pub rule: Option<String>,
    /// The cluster the request goes to, or `null` (direct response, no route).
    pub cluster: Option<String>,
    /// 200 when routed (or passed through), else the local reply's status.
    pub status: u16,
    /// The `:path` sent upstream (after a prefix rewrite).
    pub path: String,
    /// The `Location` of a redirect, filled in for this request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// For a location with an ingress-nginx canary (ROUTING.md §7.6): which backend and which step
    /// decided (`canary: header x-canary = always`, `main: cookie canary = never`, `canary by
    /// weight 10/100`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canary: Option<String>,
    /// The body of a local reply the table writes (a 403 names the access control this gateway does
    /// not enforce, ROUTING.md §9).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Why the winner's policy answered the request itself (`413: a body of … over proxy-body-size
    /// 1m of Ingress shop/api`), when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
}

/// A candidate that lost, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Loser {
    /// The rule's name.
    pub rule: String,
    /// Its position in the table.
    pub position: usize,
    /// Why it lost.
    pub why: String,
}

/// The full explanation (serialized by the dashboard of `switchyard watch`).
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    /// The decision.
    pub decision: Decision,
    /// The winner's position, host and path, for the human form.
    pub winner_detail: Option<String>,
    /// Every other rule whose host and path matched, in table order.
    pub losers: Vec<Loser>,
    /// What the winner's policy asks of a request, one line per part.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<String>,
}

/// Builds a request from the command line's pieces: URL, method, `Name: value` headers and
/// cookies (`name=value`, or `name: value` as seed 002 writes it for curl).
pub fn request(url: &str, method: &str, headers: &[String], cookies: &[String]) -> Result<SimpleRequest, String> {
    let mut request = SimpleRequest::from_url(url).method(method);
    if request.authority.is_empty() {
        return Err(format!("{url:?} names no host; write it as http://host/path"));
    }
    for header in headers {
        let Some((name, value)) = header.split_once(':') else {
            return Err(format!("header {header:?} is not \"Name: value\""));
        };
        request = request.header(name.trim(), value.trim());
    }
    for cookie in cookies {
        let pair = cookie.split_once('=').or_else(|| cookie.split_once(':'));
        let Some((name, value)) = pair else {
            return Err(format!("cookie {cookie:?} is not \"name=value\""));
        };
        request = request.cookie(name.trim(), value.trim());
    }
    Ok(request)
}

/// Explains the table's decision for `request`.
pub fn explain(table: &RouteTable, request: &SimpleRequest) -> Explanation {
    explain_from(table, request, None)
}

/// [`explain`] for a request from the client address `client` (`None`: address ranges are
/// described, not decided).
pub fn explain_from(table: &RouteTable, request: &SimpleRequest, client: Option<IpAddr>) -> Explanation {
    let full_path = request.path().to_owned();
    let decision = table.route(request, 0);
    let candidates = table.candidates(request);
    let Some(winner) = decision else {
        let status = match table.no_route() {
            NoRoute::NotFound => 404,
            NoRoute::Pass => 200,
        };
        let losers = candidates
            .iter()
            .map(|c| Loser {
                rule: c.rule.name().to_owned(),
                position: c.position,
                why: failed(c.rule.spec().conditions.get(c.failed_condition.unwrap_or(0))),
            })
            .collect();
        return Explanation {
            decision: Decision {
                rule: None,
                cluster: None,
                status,
                path: full_path,
                location: None,
                canary: None,
                body: None,
                policy: None,
            },
            winner_detail: None,
            losers,
            policies: Vec::new(),
        };
    };
    let spec = winner.rule.spec();
    let mut location = None;
    let mut body = None;
    let (status, cluster, path) = match &spec.action {
        ActionSpec::DirectResponse(direct) => {
            body = direct.body.clone();
            (direct.status, None, full_path.clone())
        }
        ActionSpec::Redirect(redirect) => {
            // The filter's own call: every variable filled as it fills them.
            location = winner.rule.redirect_for(request).map(|(_, l)| l);
            (redirect.status, None, full_path.clone())
        }
        ActionSpec::Route(_) => (
            200,
            winner.backend.map(|b| b.cluster.clone()),
            winner
                .rule
                .rewrite(&full_path)
                .map(|rewritten| rewritten.path)
                .unwrap_or_else(|| full_path.clone()),
        ),
    };
    let (mut status, mut cluster) = (status, cluster);
    let policies = (spec.policy.as_deref()).map_or_else(Vec::new, |p| policy::describe(p, &spec.name));
    let answered = match (&spec.action, spec.policy.as_deref()) {
        (ActionSpec::Route(_), Some(p)) => policy::answer(p, &spec.name, request, client),
        _ => None,
    };
    if let Some((answer, _)) = &answered {
        (status, cluster) = (*answer, None);
    }
    let winner_precedence = Precedence::of(spec);
    let losers = candidates
        .iter()
        .filter(|c| c.position != winner.position)
        .map(|c| {
            let why = match c.failed_condition {
                Some(i) => failed(c.rule.spec().conditions.get(i)),
                None => match crate::nginx::why_ranked_lower(spec, c.rule.spec()) {
                    Some(why) => format!("ranked lower by NGINX's order: {why}"),
                    None => match crate::ingress_nginx::explain::why_ranked_lower(spec, c.rule.spec()) {
                        Some(why) => format!("ingress-nginx's order: {why}"),
                        None => format!(
                            "ranked lower by {}",
                            winner_precedence
                                .deciding_key(&Precedence::of(c.rule.spec()))
                                .describe()
                        ),
                    },
                },
            };
            Loser {
                rule: c.rule.name().to_owned(),
                position: c.position,
                why,
            }
        })
        .collect();
    let conditions: Vec<String> = spec.conditions.iter().map(describe_condition).collect();
    let detail = format!(
        "position {}, host {}, path {}{}{}",
        winner.position,
        spec.host.as_deref().unwrap_or("(any)"),
        describe_path(&spec.path),
        if conditions.is_empty() {
            String::new()
        } else {
            format!(", when {}", conditions.join(" and "))
        },
        match crate::ingress_nginx::explain::describe_winner(spec) {
            Some(about) => format!("; ingress-nginx: {about}"),
            None => String::new(),
        }
    );
    Explanation {
        decision: Decision {
            rule: Some(spec.name.clone()),
            cluster,
            status,
            path,
            location,
            canary: winner.canary.map(|d| canary_step(spec, d, request)),
            body,
            policy: answered.map(|(_, why)| why),
        },
        winner_detail: Some(detail),
        losers,
        policies,
    }
}

/// What decided a canary (ROUTING.md §7.6), with the request's value.
fn canary_step(spec: &switchyard_table::RuleSpec, decision: CanaryDecision, request: &SimpleRequest) -> String {
    let canary = match &spec.action {
        ActionSpec::Route(route) => route.canary.as_ref(),
        _ => None,
    };
    let side = if decision.canary { "canary" } else { "main" };
    match decision.step {
        CanaryStep::Header => {
            let name = canary
                .and_then(|c| c.header.as_ref())
                .map(|h| h.name.as_str())
                .unwrap_or_default();
            let value = request
                .header_values(&name.to_ascii_lowercase())
                .into_iter()
                .next()
                .unwrap_or_default();
            format!("{side}: header {name} = {value}")
        }
        CanaryStep::Cookie => {
            let name = canary.and_then(|c| c.cookie.as_deref()).unwrap_or_default();
            let value = (request.header_values("cookie").iter())
                .find_map(|h| {
                    switchyard_table::cookie_pairs(h)
                        .find(|(k, _)| k.eq_ignore_ascii_case(name))
                        .map(|(_, v)| v.to_owned())
                })
                .unwrap_or_default();
            format!("{side}: cookie {name} = {value}")
        }
        CanaryStep::Weight { weight, total } => format!("{side} by weight {weight}/{total}"),
    }
}

fn failed(condition: Option<&ConditionSpec>) -> String {
    match condition {
        Some(c) => format!("its condition failed: {}", describe_condition(c)),
        None => "its conditions failed".to_owned(),
    }
}

/// `header x-key exact "value"`, `not cookie a present`, ...
pub fn describe_condition(c: &ConditionSpec) -> String {
    let on = match c.on {
        switchyard_table::ConditionSource::Cookie => "cookie",
        switchyard_table::ConditionSource::Header => "header",
        switchyard_table::ConditionSource::Query => "query",
        switchyard_table::ConditionSource::Method => "method",
    };
    let op = match c.op {
        MatchOp::Exact => "exact",
        MatchOp::Prefix => "prefix",
        MatchOp::Contains => "contains",
        MatchOp::Regex => "regex",
        MatchOp::Present => "present",
    };
    let name = c.name.as_deref().map(|n| format!(" {n}")).unwrap_or_default();
    let value = c.value.as_deref().map(|v| format!(" {v:?}")).unwrap_or_default();
    let not = if c.invert { "not " } else { "" };
    let case = if c.ignore_case { " (any case)" } else { "" };
    format!("{not}{on}{name} {op}{value}{case}")
}

/// The human form: the winner, then each other candidate and why it lost.
pub fn render(explanation: &Explanation, request: &SimpleRequest) -> String {
    let d = &explanation.decision;
    let mut out = format!("{} {}{}\n", request.method, request.authority, request.path);
    match (&d.rule, &explanation.winner_detail) {
        (Some(rule), Some(detail)) => {
            let target = match (&d.cluster, &d.location) {
                (Some(cluster), _) => format!("cluster {cluster}, upstream path {}", d.path),
                (None, Some(location)) => format!("redirect {} to {location}", d.status),
                (None, None) => format!("local reply {}", d.status),
            };
            out.push_str(&format!("winner: {rule} -> {target}\n  ({detail})\n"));
            if let Some(body) = &d.body {
                out.push_str(&format!("  reply body: {}\n", body.trim_end()));
            }
            if let Some(canary) = &d.canary {
                out.push_str(&format!("  canary decision: {canary}\n"));
            }
            for line in &explanation.policies {
                out.push_str(&format!("  policy: {line}\n"));
            }
            if let Some(why) = &d.policy {
                out.push_str(&format!("  answered by its policy: {why}\n"));
            }
        }
        _ => out.push_str(&format!(
            "no rule matches: {}\n",
            if d.status == 404 {
                "the filter answers 404"
            } else {
                "the request passes through untouched"
            }
        )),
    }
    if explanation.losers.is_empty() {
        out.push_str("no other rule matched host and path\n");
    } else {
        out.push_str("other candidates (host and path matched):\n");
        for loser in &explanation.losers {
            out.push_str(&format!(
                "  {} (position {}): {}\n",
                loser.rule, loser.position, loser.why
            ));
        }
    }
    out
}
