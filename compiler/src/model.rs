//! What every stage of the compiler shares: its [`Options`], the [`Draft`] a processor makes of a
//! rule (with its host's ordering policy, [`HostOrder`]), [`validate_rule`], the host
//! normalisation processors apply, and [`CompileError`]. A leaf: it depends on no stage, every
//! stage depends on it, and [`crate::pipeline`] orders the stages (Contour's `dag.go` holds the
//! types, each `*_processor.go` uses them, `builder.go` runs them).

use std::collections::BTreeSet;
use std::sync::Arc;

use switchyard_table::{ActionSpec, ConditionSpec, DirectResponse, NoRoute, PathSpec, Rule, RuleSpec};

use crate::ingress_nginx::configmap::ControllerConfig;
use crate::ingress_nginx::flags::Flags as IngressNginxFlags;
use crate::nginx::NginxRank;
use crate::objects::{Age, ResourceKey};

/// What `--host-collision` chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostCollision {
    /// Ingresses naming the same host share it (ROUTING.md §2).
    #[default]
    Merge,
    /// Every resource competes alone; the oldest wins the host.
    Winner,
}

/// The compiler's options: the controller flags of ROUTING.md §1 and the table-wide settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--ingress-class` (empty: none).
    pub ingress_class: String,
    /// `--empty-ingress-class`.
    pub empty_ingress_class: bool,
    /// `--controller-name`.
    pub controller_name: String,
    /// `--host-collision`.
    pub host_collision: HostCollision,
    /// `--root-namespaces` (empty: every namespace may hold roots).
    pub root_namespaces: Vec<String>,
    /// `--cluster-template`, over `{namespace}`, `{service}` and `{port}`.
    pub cluster_template: String,
    /// `--cluster-header`.
    pub cluster_header: String,
    /// `--no-route`.
    pub no_route: NoRoute,
    /// `--debug-rule-header`.
    pub debug_rule_header: bool,
    /// `--metrics-max-resources`: how many resources have series of their own in the per-resource
    /// request metrics ([`switchyard_table::format::MetricsFold`]).
    pub metrics_max_resources: usize,
    /// `--tls-passthrough-port`: the port of the TLS passthrough listener, which no
    /// GlobalConfiguration listener may take over TCP ([`crate::transportserver`]).
    pub tls_passthrough_port: u16,
    /// The `--ingress-nginx-*` flags (ROUTING.md §7; off while `class` is `None`).
    pub ingress_nginx: IngressNginxFlags,
    /// What `--ingress-nginx-configmap` names: ingress-nginx's ConfigMap, read (§7.8).
    pub ingress_nginx_config: ControllerConfig,
    /// `--default-certificate NAMESPACE/NAME`: the Secret of the default certificate (ROUTING.md
    /// §8.1.2); `None`: one made at start.
    pub default_certificate: Option<String>,
    /// Whether a backend spoken to with other settings than the defaults (a protocol, a connect
    /// timeout) gets a variant cluster ([`crate::upstream::variant`]): only when the gateway's
    /// clusters come from the sidecar (`--clusters-dir`), which makes them. Otherwise those
    /// settings are reported as not honoured and the template's cluster is used, as before.
    pub upstream_variants: bool,
    /// Whether the gateway's routes are Switchyard's ([`crate::route_config`]): a rule's timeouts
    /// and retries get a route of their own (`--clusters-dir` writes the route configuration beside
    /// the clusters). Otherwise those settings are reported as not honoured: the gateway's route applies.
    pub gateway_routes: bool,
    /// How long the filter waits for an auth service's answer (ingress-nginx's `auth-url`), in
    /// milliseconds; none in time is a `500`.
    pub external_auth_timeout_ms: u64,
}

/// How long an auth service may take by default: nginx's 60 s, which ingress-nginx's auth
/// location inherits (it sets no timeout of its own).
pub const DEFAULT_EXTERNAL_AUTH_TIMEOUT_MS: u64 = 60_000;

/// The default TLS passthrough port (NGINX's tls-passthrough listener is its HTTPS port).
pub const DEFAULT_TLS_PASSTHROUGH_PORT: u16 = 443;

/// `--metrics-max-resources`'s default: the resources with series of their own in the
/// per-resource request metrics, the rest counted together.
pub const DEFAULT_METRICS_MAX_RESOURCES: usize = 1000;

/// The default controller name.
pub const DEFAULT_CONTROLLER: &str = "switchyard.io/ingress-controller";
/// The default cluster template.
pub const DEFAULT_CLUSTER_TEMPLATE: &str = "{namespace}/{service}:{port}";

impl Default for Options {
    fn default() -> Self {
        Options {
            ingress_class: String::new(),
            empty_ingress_class: false,
            controller_name: DEFAULT_CONTROLLER.to_owned(),
            host_collision: HostCollision::Merge,
            root_namespaces: Vec::new(),
            cluster_template: DEFAULT_CLUSTER_TEMPLATE.to_owned(),
            cluster_header: switchyard_table::format::DEFAULT_CLUSTER_HEADER.to_owned(),
            no_route: NoRoute::NotFound,
            debug_rule_header: false,
            metrics_max_resources: DEFAULT_METRICS_MAX_RESOURCES,
            tls_passthrough_port: DEFAULT_TLS_PASSTHROUGH_PORT,
            ingress_nginx: IngressNginxFlags::default(),
            ingress_nginx_config: ControllerConfig::default(),
            default_certificate: None,
            upstream_variants: false,
            gateway_routes: false,
            external_auth_timeout_ms: DEFAULT_EXTERNAL_AUTH_TIMEOUT_MS,
        }
    }
}

impl Options {
    /// The cluster name of a service port.
    pub fn cluster(&self, namespace: &str, service: &str, port: i32) -> String {
        self.cluster_template
            .replace("{namespace}", namespace)
            .replace("{service}", service)
            .replace("{port}", &port.to_string())
    }
}

/// A rule on its way to the table, with what the later stages need to know about it.
#[derive(Debug, Clone)]
pub struct Draft {
    /// The resource the rule is named after (an Ingress, or the HTTPProxy that wrote the route).
    pub owner: ResourceKey,
    /// The owner's age (§4 key 5 and §2's `PathTaken`), shared by its drafts: an age is some
    /// hundred bytes and three allocations, and a full compile holds every draft at once.
    pub age: Arc<Age>,
    /// The rule's position within its owner (the `n` of its name).
    pub position: usize,
    /// The resource that claims the rule's host: the Ingress itself, or the HTTPProxy tree's root.
    pub claimant: ResourceKey,
    /// The claimant's age, shared likewise.
    pub claimant_age: Arc<Age>,
    /// The rule, named.
    pub rule: RuleSpec,
    /// How the rules of its host are ordered among themselves ([`crate::order`]).
    pub order: HostOrder,
    /// How its claimant takes part in the host's contest (ROUTING.md §2, §7.2).
    pub claiming: Claiming,
}

/// How a draft's claimant takes part in its host's contest ([`crate::collisions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Claiming {
    /// It contends for the host; Ingresses of Switchyard's own merge into one contender
    /// (`--host-collision=merge`).
    #[default]
    Contends,
    /// It contends alone, never merged: an ingress-nginx server, one resource in the contest
    /// (ROUTING.md §7.2), though its claimant is an Ingress.
    ContendsAlone,
    /// It takes the host only when nothing contends for it, and loses without a `HostTaken`: an
    /// ingress-nginx `server-alias`, a `from-to-www-redirect` (ROUTING.md §7.2, §7.7).
    IfUnclaimed,
}

/// How a host orders its rules: the ordering policy of the processor that made them, with the
/// rule's key under that policy. The general order of ROUTING.md §4 places every rule; a policy
/// other than [`HostOrder::General`] then reorders the rules of its host among the places the
/// general order gave them ([`crate::order::placement`]). Such a host holds one resource's rules
/// alone (a VirtualServer owns its host, §6; an ingress-nginx server is one resource, §7.2), so
/// policies never mix on one host (but among the rules without a host: ingress-nginx's catch-all
/// server keeps its order among its own places there).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum HostOrder {
    /// §4's keys 1 to 5 alone (Ingress, HTTPProxy).
    General,
    /// NGINX's location order (§6), by this rule's rank ([`NginxRank`]), which replaces keys 2 to
    /// 5 among the rules of its host (VirtualServer, VirtualServerRoute). Boxed: every draft holds
    /// a `HostOrder`, and a rank is four times the size of the other variants.
    Nginx(Box<NginxRank>),
    /// ingress-nginx's order within one server (ROUTING.md §7.3, §7.4, §7.7): the rule's place
    /// among the server's rules, as [`crate::ingress_nginx::server`] lays them out.
    IngressNginx(usize),
}

impl HostOrder {
    /// Whether the rules of its host are reordered after the general order.
    pub fn reorders(&self) -> bool {
        match self {
            HostOrder::General => false,
            HostOrder::Nginx(_) | HostOrder::IngressNginx(_) => true,
        }
    }
}

/// Why a compilation failed. Only serialising what the compiler builds can fail, and then nothing
/// is written: no table hashed over empty bytes.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// A value could not be written as JSON (`what` says which).
    #[error("cannot serialise {what}: {source}")]
    Serialize {
        /// What was being serialised.
        what: &'static str,
        /// serde_json's error.
        source: serde_json::Error,
    },
}

/// Checks one rule exactly as the filter will, so that an invalid rule is refused here (with its
/// resource's status saying why) and never makes the whole table unusable.
pub fn validate_rule(rule: &RuleSpec) -> Result<(), String> {
    Rule::validate(rule).map_err(|e| e.to_string())
}

/// [`validate_rule`] for many rules that share paths, conditions and rewrite regexes: each
/// distinct path, condition and `rewrite_regex` pattern is checked once per compilation (a regex
/// repeated across rules is compiled once, not once per rule), then the rest of each rule. Same
/// verdicts as [`validate_rule`].
#[derive(Debug, Default)]
pub struct RuleValidator {
    paths: BTreeSet<PathSpec>,
    conditions: BTreeSet<ConditionSpec>,
    /// The `rewrite_regex` patterns that compiled.
    rewrite_patterns: BTreeSet<String>,
}

impl RuleValidator {
    /// Checks a path alone.
    pub fn path(&mut self, path: &PathSpec) -> Result<(), String> {
        if !self.paths.contains(path) {
            validate_rule(&probe(path.clone(), Vec::new()))?;
            self.paths.insert(path.clone());
        }
        Ok(())
    }

    /// Checks one rule.
    pub fn rule(&mut self, rule: &RuleSpec) -> Result<(), String> {
        self.path(&rule.path)?;
        for condition in &rule.conditions {
            if !self.conditions.contains(condition) {
                validate_rule(&probe(PathSpec::Prefix("/".to_owned()), vec![condition.clone()]))?;
                self.conditions.insert(condition.clone());
            }
        }
        // The rest (name, host, action), the path checked above replaced by one that compiles at
        // once: a regex path stays a regex where the action has a prefix rewrite (which a regex
        // path refuses), else it is checked as an exact path (no regex compiled again).
        let prefix_rewrite = matches!(&rule.action, ActionSpec::Route(r) if r.rewrite_prefix.is_some());
        let path = match &rule.path {
            PathSpec::Regex(_) if prefix_rewrite => PathSpec::Regex("/".to_owned()),
            PathSpec::Regex(_) => PathSpec::Exact("/".to_owned()),
            other => other.clone(),
        };
        let mut action = rule.action.clone();
        // A rewrite pattern that compiled before is not compiled again: the rest of the rewrite
        // (its path and headers, which do not depend on the pattern) is checked with a pattern
        // that compiles at once. The pattern is the first thing a rewrite's check reads, so a
        // rule fails with the same error either way.
        let mut new_pattern = None;
        if let ActionSpec::Route(route) = &mut action {
            if let Some(rewrite) = &mut route.rewrite_regex {
                match self.rewrite_patterns.contains(&rewrite.pattern) {
                    true => rewrite.pattern = "/".to_owned(),
                    false => new_pattern = Some(rewrite.pattern.clone()),
                }
            }
        }
        validate_rule(&RuleSpec {
            name: rule.name.clone(),
            host: rule.host.clone(),
            path,
            conditions: Vec::new(),
            action,
            hsts: None,
            policy: None,
        })?;
        if let Some(pattern) = new_pattern {
            self.rewrite_patterns.insert(pattern);
        }
        Ok(())
    }
}

/// A rule that checks only `path` and `conditions`.
fn probe(path: PathSpec, conditions: Vec<ConditionSpec>) -> RuleSpec {
    RuleSpec {
        name: "probe".to_owned(),
        host: None,
        path,
        conditions,
        action: ActionSpec::DirectResponse(DirectResponse {
            status: 404,
            ..DirectResponse::default()
        }),
        hsts: None,
        policy: None,
    }
}

/// A host as a manifest writes it, normalised as the filter normalises a request's authority
/// ([`switchyard_table::normalize_authority`], ROUTING.md §2: hosts compare after normalisation):
/// surrounding blanks, the case, a port and a trailing dot go.
pub fn normalize_host(host: &str) -> String {
    switchyard_table::normalize_authority(host.trim()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_lose_blanks_case_port_and_trailing_dot_as_the_filter_does() {
        assert_eq!(normalize_host("Shop.Example.COM."), "shop.example.com");
        assert_eq!(normalize_host(" shop.example.com:8443 "), "shop.example.com");
        assert_eq!(normalize_host("*.Example.net"), "*.example.net");
        for host in ["[::1]:8080", "[::1]", "[::1]:"] {
            assert_eq!(normalize_host(host), "[::1]", "{host}");
            assert_eq!(
                normalize_host(host),
                switchyard_table::normalize_authority(host),
                "{host}"
            );
        }
    }

    /// A rule routing `path` to one backend with a `rewrite_regex` of `pattern` and `to`.
    fn rewrite_rule(name: &str, path: &str, pattern: &str, to: &str) -> RuleSpec {
        RuleSpec::from_value(serde_json::json!({
            "name": name,
            "host": "shop.example.com",
            "path": {"type": "regex", "value": path},
            "action": {"route": {"backends": [{"cluster": "shop/a:80", "weight": 1}],
                                 "rewrite_regex": {"pattern": pattern, "path": to}}}
        }))
        .expect("a rule document")
    }

    #[test]
    fn the_validator_compiles_a_rewrite_pattern_once_and_gives_validate_rules_verdicts() {
        let mut validator = RuleValidator::default();
        let rules = [
            rewrite_rule("a", "/a", "(?i)^(?:/svc(/|$)(.*))", "/$2"),
            // The same pattern again: not compiled again, the rest of the rewrite still checked.
            rewrite_rule("b", "/b", "(?i)^(?:/svc(/|$)(.*))", "/$2"),
            rewrite_rule("c", "/c", "(?i)^(?:/svc(/|$)(.*))", "no-slash"),
            rewrite_rule("", "/d", "(?i)^(?:/svc(/|$)(.*))", "/$2"),
            rewrite_rule("e", "/e", "(?i)^(?:/svc(", "/$2"),
            rewrite_rule("f", "/f", "(?i)^(?:/svc(", "/$2"),
            rewrite_rule("g", "/g", "(?i)^(?:/svc(", "no-slash"),
        ];
        for rule in &rules {
            assert_eq!(validator.rule(rule), validate_rule(rule), "{rule:?}");
        }
        assert!(validator.rule(&rules[1]).is_ok());
        assert!(validator.rule(&rules[2]).is_err());
        assert!(validator.rule(&rules[4]).is_err());
        assert_eq!(validator.rewrite_patterns.len(), 1);
    }

    #[test]
    fn cluster_template_fills_namespace_service_and_port() {
        let options = Options {
            cluster_template: "outbound|{port}||{service}.{namespace}.svc".into(),
            ..Options::default()
        };
        assert_eq!(options.cluster("shop", "api", 8080), "outbound|8080||api.shop.svc");
        assert_eq!(Options::default().cluster("shop", "api", 80), "shop/api:80");
    }
}
