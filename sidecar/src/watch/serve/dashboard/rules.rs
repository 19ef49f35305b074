//! The dashboard's view of the live table: its hosts in table order (the catch-all last), each with
//! its rules in priority order, every rule with the resource it came from (read back from its name,
//! `<kind>/<namespace>/<name>#<n>`, so any kind the compiler learns shows up), its path, conditions
//! (in the words of `switchyard explain`), backends with their share, and its action.
//!
//! A host whose rules come from ingress-nginx's Ingresses (ROUTING.md §7, `--ingress-nginx-class`)
//! also shows its server's mode ([`ServerMode`]): regex mode and what turned it on, or plain
//! paths; read from the status report ([`IngressNginxServers::of`]), where the compiler's conditions
//! say which Ingresses are ingress-nginx's and which hosts are in regex mode, and what turned it on
//! ([`About`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use switchyard_compiler::collisions::describe_path;
use switchyard_compiler::explain::describe_condition;
use switchyard_compiler::objects::Kind;
use switchyard_compiler::status::{About, ResourceStatus};
use switchyard_table::{ActionSpec, Canary, NoRoute, PathSpec, RouteTable, RuleSpec};

/// The whole view.
#[derive(Debug, Serialize)]
pub struct RulesView<'a> {
    /// The push counter of the table shown (`generation` in `/status`).
    pub generation: u64,
    /// The table's content hash.
    pub table: &'a str,
    /// What the filter does with a request no rule matches.
    pub no_route: NoRoute,
    /// Rules in the table.
    pub rules: usize,
    /// Hosts in table order, the catch-all (`host: null`) last.
    pub hosts: Vec<HostView<'a>>,
}

/// One host and its rules.
#[derive(Debug, Serialize)]
pub struct HostView<'a> {
    /// The host pattern; `None` for rules that apply to any host.
    pub host: Option<&'a str>,
    /// Its rules, in priority order.
    pub rules: Vec<RuleView<'a>>,
    /// When ingress-nginx's Ingresses route it (ROUTING.md §7): its server's mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingress_nginx: Option<ServerMode>,
}

/// The mode of a host's ingress-nginx server (ROUTING.md §7.3, §7.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerMode {
    /// Whether the server is in regex mode (every path a case-insensitive regex anchored at its
    /// start, longest first); else plain paths.
    pub regex: bool,
    /// In regex mode: what turned it on, `use-regex on Ingress shop/web` (the `RegexMode`
    /// condition's words).
    pub turned_on_by: Option<String>,
}

/// What the status report says of ingress-nginx's servers: which Ingresses are ingress-nginx's, and
/// the hosts in regex mode with what turned it on.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IngressNginxServers {
    /// `(namespace, name)` of the Ingresses served as ingress-nginx served them.
    ingresses: BTreeSet<(String, String)>,
    /// Hosts in regex mode (`None`: the catch-all server) → what turned it on.
    regex: BTreeMap<Option<String>, String>,
}

impl IngressNginxServers {
    /// Read from the status report (nothing without `--ingress-nginx-class`).
    pub fn of(statuses: &[ResourceStatus]) -> IngressNginxServers {
        let mut out = IngressNginxServers::default();
        for status in statuses.iter().filter(|s| s.kind == Kind::Ingress) {
            for condition in &status.conditions {
                match &condition.about {
                    Some(About::IngressNginx) => {
                        out.ingresses.insert((status.namespace.clone(), status.name.clone()));
                    }
                    Some(About::RegexMode { host, turned_on_by }) => {
                        out.regex.entry(host.clone()).or_insert_with(|| turned_on_by.clone());
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// The mode of `host`'s server, when ingress-nginx's Ingresses route it (`rules`: its rules).
    fn mode(&self, host: Option<&str>, rules: &[RuleView<'_>]) -> Option<ServerMode> {
        if let Some(by) = self.regex.get(&host.map(str::to_owned)) {
            return Some(ServerMode {
                regex: true,
                turned_on_by: Some(by.clone()),
            });
        }
        let ours = rules
            .iter()
            .filter_map(|r| r.resource.as_ref())
            .any(|r| r.kind == "Ingress" && self.ingresses.contains(&(r.namespace.to_owned(), r.name.to_owned())));
        ours.then_some(ServerMode {
            regex: false,
            turned_on_by: None,
        })
    }
}

/// One rule.
#[derive(Debug, Serialize)]
pub struct RuleView<'a> {
    /// Its position in the table (as `switchyard explain` counts).
    pub position: usize,
    /// Its name.
    pub name: &'a str,
    /// The resource it came from, when its name says so.
    pub resource: Option<ResourceRef<'a>>,
    /// Its path: `{"type": "segment_prefix", "value": "/bar"}`.
    pub path: &'a PathSpec,
    /// The path in words: `segment prefix /bar`.
    pub path_text: String,
    /// Its conditions in words: `header key exact "value"`.
    pub conditions: Vec<String>,
    /// What it does.
    pub action: ActionView<'a>,
}

/// The resource a rule came from.
#[derive(Debug, PartialEq, Eq, Serialize)]
pub struct ResourceRef<'a> {
    /// `Ingress`, `HTTPProxy`, ... as the rule's name spells it.
    pub kind: &'a str,
    /// Its namespace.
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
}

/// A rule's action.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ActionView<'a> {
    /// Route to the backends.
    Route {
        /// Backends with weight and share.
        backends: Vec<BackendView<'a>>,
        /// The prefix rewrite, if any.
        rewrite_prefix: Option<&'a str>,
        /// The rewrite by regex groups (NGINX's `rewritePath` on a regex location, ingress-nginx's
        /// `rewrite-target`), if any: the regex, the new path, and the headers set when it applies.
        rewrite_regex: Option<RegexRewriteView<'a>>,
        /// Request headers set, `name: value`.
        set_headers: Vec<String>,
        /// Request headers removed.
        remove_headers: &'a [String],
        /// ingress-nginx's canary (ROUTING.md §7.6), if the location has one.
        canary: Option<CanaryView<'a>>,
    },
    /// A local reply.
    DirectResponse {
        /// Its status.
        status: u16,
        /// Its body, if any.
        body: Option<&'a str>,
    },
    /// A redirect (NGINX VirtualServer `redirect`).
    Redirect {
        /// Its status.
        status: u16,
        /// The `Location` template (`${scheme}`, `${host}`, `${request_uri}` filled in per request).
        url: &'a str,
    },
}

/// A location's canary: its cluster and the steps that decide, in order.
#[derive(Debug, Serialize)]
pub struct CanaryView<'a> {
    /// The canary's cluster.
    pub cluster: &'a str,
    /// The steps, in the order a request meets them (`header X-Canary: always or never`, `cookie
    /// canary: always or never`, `weight 10 of 100`).
    pub steps: Vec<String>,
}

impl<'a> CanaryView<'a> {
    fn of(canary: &'a Canary) -> CanaryView<'a> {
        let mut steps = Vec::new();
        if let Some(header) = &canary.header {
            let how = match (&header.value, &header.pattern, header.main) {
                (Some(value), _, _) => format!("= {value}"),
                (None, Some(pattern), _) => format!("matching {pattern}"),
                (None, None, true) => "present: main (its pattern did not compile)".to_owned(),
                (None, None, false) => "always or never".to_owned(),
            };
            steps.push(format!("header {} {how}", header.name));
        }
        if let Some(cookie) = &canary.cookie {
            steps.push(format!("cookie {cookie}: always or never"));
        }
        steps.push(format!("weight {} of {}", canary.weight, canary.weight_total.max(100)));
        CanaryView {
            cluster: &canary.cluster,
            steps,
        }
    }
}

/// A rewrite by regex groups.
#[derive(Debug, Serialize)]
pub struct RegexRewriteView<'a> {
    /// The regex searched in the path.
    pub pattern: &'a str,
    /// The new path, `$0`…`$9` its groups.
    pub path: &'a str,
    /// Request headers set when it applies, `name: value`.
    pub headers: Vec<String>,
}

/// One backend.
#[derive(Debug, Serialize)]
pub struct BackendView<'a> {
    /// The cluster.
    pub cluster: &'a str,
    /// Its weight.
    pub weight: u32,
    /// Its share of the requests, in percent (one decimal).
    pub percent: f64,
}

/// The view of `table`, the table of push `generation`; `servers` says which hosts are
/// ingress-nginx's servers and their mode.
pub fn view<'t>(table: &'t RouteTable, generation: u64, servers: &IngressNginxServers) -> RulesView<'t> {
    let mut hosts: Vec<HostView<'_>> = Vec::new();
    // Where each host is in `hosts` (a lookup, not a scan: 10,000 hosts stay linear).
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut any_host = Vec::new();
    for (position, rule) in table.rules().iter().enumerate() {
        let spec = rule.spec();
        let row = rule_view(position, spec);
        let Some(host) = spec.host.as_deref() else {
            any_host.push(row);
            continue;
        };
        match index.get(host) {
            Some(&at) => hosts[at].rules.push(row),
            None => {
                index.insert(host, hosts.len());
                hosts.push(HostView {
                    host: Some(host),
                    rules: vec![row],
                    ingress_nginx: None,
                });
            }
        }
    }
    if !any_host.is_empty() {
        hosts.push(HostView {
            host: None,
            rules: any_host,
            ingress_nginx: None,
        });
    }
    for host in &mut hosts {
        host.ingress_nginx = servers.mode(host.host, &host.rules);
    }
    RulesView {
        generation,
        table: table.generation(),
        no_route: table.no_route(),
        rules: table.rules().len(),
        hosts,
    }
}

fn rule_view(position: usize, spec: &RuleSpec) -> RuleView<'_> {
    RuleView {
        position,
        name: &spec.name,
        resource: resource_of(&spec.name),
        path: &spec.path,
        path_text: describe_path(&spec.path),
        conditions: spec.conditions.iter().map(describe_condition).collect(),
        action: action_view(&spec.action),
    }
}

fn action_view(action: &ActionSpec) -> ActionView<'_> {
    match action {
        ActionSpec::Route(route) => {
            let total: u64 = route.backends.iter().map(|b| u64::from(b.weight)).sum();
            ActionView::Route {
                backends: route
                    .backends
                    .iter()
                    .map(|b| BackendView {
                        cluster: &b.cluster,
                        weight: b.weight,
                        percent: percent(b.weight, total),
                    })
                    .collect(),
                rewrite_prefix: route.rewrite_prefix.as_deref(),
                rewrite_regex: route.rewrite_regex.as_ref().map(|rewrite| RegexRewriteView {
                    pattern: &rewrite.pattern,
                    path: &rewrite.path,
                    headers: rewrite
                        .headers
                        .iter()
                        .map(|h| format!("{}: {}", h.name, h.value))
                        .collect(),
                }),
                set_headers: route
                    .set_headers
                    .iter()
                    .map(|h| format!("{}: {}", h.name, h.value))
                    .collect(),
                remove_headers: &route.remove_headers,
                canary: route.canary.as_deref().map(CanaryView::of),
            }
        }
        ActionSpec::DirectResponse(direct) => ActionView::DirectResponse {
            status: direct.status,
            body: direct.body.as_deref(),
        },
        ActionSpec::Redirect(redirect) => ActionView::Redirect {
            status: redirect.status,
            url: &redirect.url,
        },
    }
}

/// `weight` of `total` in percent, rounded to one decimal (0 when the total is 0, which a valid
/// table never has).
fn percent(weight: u32, total: u64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    (f64::from(weight) * 1000.0 / total as f64).round() / 10.0
}

/// The resource named by a rule name `<kind>/<namespace>/<name>#<n>`; `None` for a name of another
/// shape (a table written by hand).
pub fn resource_of(rule: &str) -> Option<ResourceRef<'_>> {
    let (key, _) = rule.rsplit_once('#')?;
    let mut parts = key.splitn(3, '/');
    let (kind, namespace, name) = (parts.next()?, parts.next()?, parts.next()?);
    if kind.is_empty() || name.is_empty() || name.contains('/') {
        return None;
    }
    Some(ResourceRef { kind, namespace, name })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rules: serde_json::Value) -> RouteTable {
        RouteTable::from_json(
            serde_json::json!({"version": 1, "generation": "abc", "rules": rules})
                .to_string()
                .as_bytes(),
        )
        .unwrap()
    }

    fn rule(name: &str, host: Option<&str>, path: &str) -> serde_json::Value {
        let mut rule = serde_json::json!({
            "name": name,
            "path": {"type": "segment_prefix", "value": path},
            "action": {"route": {"backends": [{"cluster": "c1", "weight": 3}, {"cluster": "c2", "weight": 1}]}}
        });
        if let Some(host) = host {
            rule["host"] = host.into();
        }
        rule
    }

    #[test]
    fn hosts_keep_table_order_with_their_rules_in_priority_order_and_the_catch_all_last() {
        let table = table(serde_json::json!([
            rule("Ingress/a/x#0", Some("a.example"), "/long"),
            rule("Ingress/a/any#0", None, "/"),
            rule("HTTPProxy/b/y#0", Some("b.example"), "/"),
            rule("Ingress/a/x#1", Some("a.example"), "/"),
        ]));
        let view = view(&table, 7, &IngressNginxServers::default());
        let hosts: Vec<(Option<&str>, Vec<usize>)> = view
            .hosts
            .iter()
            .map(|h| (h.host, h.rules.iter().map(|r| r.position).collect()))
            .collect();
        assert_eq!(
            hosts,
            [
                (Some("a.example"), vec![0, 3]),
                (Some("b.example"), vec![2]),
                (None, vec![1])
            ]
        );
        assert_eq!((view.generation, view.table, view.rules), (7, "abc", 4));
        let first = &view.hosts[0].rules[0];
        assert_eq!(first.path_text, "segment prefix /long");
        let ActionView::Route { backends, .. } = &first.action else {
            panic!("a route")
        };
        assert_eq!(backends.iter().map(|b| b.percent).collect::<Vec<_>>(), [75.0, 25.0]);
    }

    /// The modes as the compiler reports them: its own status report of a regex-mode host and a
    /// host with plain paths, both ingress-nginx's, and a host of Switchyard's own Ingress.
    #[test]
    fn an_ingress_nginx_host_shows_its_servers_mode_and_what_turned_regex_mode_on() {
        let manifests = "\
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: rewrite
  namespace: shop
  annotations: {nginx.ingress.kubernetes.io/use-regex: \"true\", nginx.ingress.kubernetes.io/rewrite-target: /$2}
spec:
  ingressClassName: nginx
  rules:
  - host: regex.example
    http:
      paths:
      - {path: /something(/|$)(.*), pathType: ImplementationSpecific, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: plain, namespace: shop}
spec:
  ingressClassName: nginx
  rules:
  - host: plain.example
    http:
      paths:
      - {path: /docs, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: own, namespace: shop}
spec:
  rules:
  - host: own.example
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
";
        let mut loaded = switchyard_compiler::load::Loaded::default();
        switchyard_compiler::load::parse_text(manifests, "m.yaml", &mut loaded).unwrap();
        let mut options = switchyard_compiler::model::Options::default();
        options.ingress_nginx.class = Some("nginx".into());
        let compiled = switchyard_compiler::compile(&loaded.objects, &options).unwrap();
        let table = RouteTable::try_from(compiled.table.clone()).unwrap();
        let servers = IngressNginxServers::of(&compiled.statuses);
        let view = view(&table, 1, &servers);
        let mode = |host: &str| {
            let found = view.hosts.iter().find(|h| h.host == Some(host));
            found.unwrap_or_else(|| panic!("{host}")).ingress_nginx.clone()
        };
        assert_eq!(
            mode("regex.example"),
            Some(ServerMode {
                regex: true,
                turned_on_by: Some("use-regex on Ingress shop/rewrite".into())
            })
        );
        assert_eq!(
            mode("plain.example"),
            Some(ServerMode {
                regex: false,
                turned_on_by: None
            })
        );
        assert_eq!(mode("own.example"), None);
    }

    #[test]
    fn a_rule_names_its_resource_whatever_its_kind() {
        assert_eq!(
            resource_of("VirtualServerRoute/shop/cafe#12"),
            Some(ResourceRef {
                kind: "VirtualServerRoute",
                namespace: "shop",
                name: "cafe"
            })
        );
        assert_eq!(resource_of("hand-written"), None);
        assert_eq!(resource_of("a/b#0"), None);
    }

    #[test]
    fn conditions_are_in_the_words_of_explain() {
        let mut with_condition = rule("Ingress/a/x#0", Some("a.example"), "/");
        with_condition["conditions"] =
            serde_json::json!([{"on": "header", "name": "key", "match": "exact", "value": "v"}]);
        let table = table(serde_json::json!([with_condition]));
        assert_eq!(
            view(&table, 1, &IngressNginxServers::default()).hosts[0].rules[0].conditions,
            ["header key exact \"v\""]
        );
    }
    #[test]
    fn a_location_with_a_canary_shows_its_cluster_and_the_steps_in_order() {
        let mut location = rule("Ingress/a/main#0", Some("a.example"), "/");
        location["action"]["route"]["canary"] = serde_json::json!({
            "cluster": "a/canary:80", "header": {"name": "X-Canary"}, "cookie": "canary", "weight": 10
        });
        let table = table(serde_json::json!([location]));
        let view = view(&table, 1, &IngressNginxServers::default());
        let ActionView::Route {
            canary: Some(canary), ..
        } = &view.hosts[0].rules[0].action
        else {
            panic!("a route with a canary")
        };
        assert_eq!(canary.cluster, "a/canary:80");
        assert_eq!(
            canary.steps,
            [
                "header X-Canary always or never",
                "cookie canary: always or never",
                "weight 10 of 100"
            ]
        );
    }

    #[test]
    fn a_redirect_shows_its_status_and_location_template() {
        let mut redirect = rule("VirtualServer/a/cafe#0/match1", Some("a.example"), "/");
        redirect["action"] = serde_json::json!({"redirect": {"url": "${scheme}://${host}/new", "status": 301}});
        let table = table(serde_json::json!([redirect]));
        let view = view(&table, 1, &IngressNginxServers::default());
        let rule = &view.hosts[0].rules[0];
        let ActionView::Redirect { status, url } = &rule.action else {
            panic!("a redirect")
        };
        assert_eq!((*status, *url), (301, "${scheme}://${host}/new"));
        assert_eq!(rule.resource.as_ref().map(|r| r.name), Some("cafe"));
    }

    #[test]
    fn a_rewrite_by_regex_groups_shows_its_regex_path_and_headers() {
        let mut rewrite = rule("VirtualServer/a/cafe#0", Some("a.example"), "/");
        rewrite["action"]["route"]["rewrite_regex"] = serde_json::json!({
            "pattern": "^/coffee/(.*)", "path": "/beans/$1",
            "headers": [{"name": "x-forwarded-prefix", "value": "/coffee"}]
        });
        let table = table(serde_json::json!([rewrite]));
        let view = view(&table, 1, &IngressNginxServers::default());
        let ActionView::Route { rewrite_regex, .. } = &view.hosts[0].rules[0].action else {
            panic!("a route")
        };
        let shown = rewrite_regex.as_ref().unwrap();
        assert_eq!((shown.pattern, shown.path), ("^/coffee/(.*)", "/beans/$1"));
        assert_eq!(shown.headers, ["x-forwarded-prefix: /coffee"]);
    }
}
