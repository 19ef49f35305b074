//! The compiler as one pure function: (objects, options) → (table, status).
//!
//! Stages, in order: the cache (sort and de-duplicate the objects, so input order never matters),
//! class eligibility ([`crate::class`]), the Ingress processor ([`crate::ingress`]), the HTTPProxy
//! processor ([`crate::httpproxy`]), host ownership and collisions ([`crate::collisions`]) and the
//! priority order ([`crate::order`]). No I/O happens here; tests call [`compile`] with plain values.

use std::collections::BTreeMap;

use switchyard_table::{NoRoute, RouteTable, RuleSpec, TableSpec};

use crate::class::Classes;
use crate::objects::{key_of, Age, Kind, Objects, ResourceKey};
use crate::status::{ResourceStatus, StatusBook};

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
}

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
    /// The owner's age (§4 key 5 and §2's `PathTaken`).
    pub age: Age,
    /// The rule's position within its owner (the `n` of its name).
    pub position: usize,
    /// The resource that claims the rule's host: the Ingress itself, or the HTTPProxy tree's root.
    pub claimant: ResourceKey,
    /// The claimant's age.
    pub claimant_age: Age,
    /// The rule, named.
    pub rule: RuleSpec,
}

/// The result of one compilation.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The table, in priority order, with its generation hash.
    pub table: TableSpec,
    /// One entry per Ingress, HTTPProxy and IngressClass.
    pub statuses: Vec<ResourceStatus>,
}

/// Compiles objects into the table and the status report. Pure and deterministic: the same objects
/// in any order give the same table, byte for byte.
pub fn compile(objects: &Objects, options: &Options) -> Compiled {
    let objects = cache(objects);
    let mut book = StatusBook::default();
    let classes = Classes::new(&objects.ingress_classes, options, &mut book);
    let services = crate::services::ServicePorts::new(&objects.services);
    let mut drafts = crate::ingress::process(&objects.ingresses, &classes, &services, options, &mut book);
    drafts.extend(crate::httpproxy::process(
        &objects.http_proxies,
        &classes,
        &services,
        options,
        &mut book,
    ));
    let drafts = crate::collisions::resolve(drafts, options.host_collision, &mut book);
    let rules = crate::order::sort(drafts);
    let mut table = TableSpec {
        cluster_header: options.cluster_header.clone(),
        no_route: options.no_route,
        debug_rule_header: options.debug_rule_header,
        rules,
        ..TableSpec::default()
    };
    table.generation = crate::order::generation(&table);
    Compiled {
        table,
        statuses: book.finish(),
    }
}

/// The cache stage: objects sorted by identity, later duplicates of the same identity dropped, so
/// that the rest of the pipeline never sees input order.
fn cache(objects: &Objects) -> Objects {
    fn sorted<T: Clone + serde::Serialize>(
        items: &[T],
        kind: Kind,
        meta: impl Fn(&T) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    ) -> Vec<T> {
        let mut by_key: BTreeMap<ResourceKey, &T> = BTreeMap::new();
        for item in items {
            match by_key.entry(key_of(kind, meta(item))) {
                std::collections::btree_map::Entry::Vacant(slot) => {
                    slot.insert(item);
                }
                // Two objects with one identity (the loader warns): keep the one whose JSON sorts
                // first, so that the choice does not depend on file order.
                std::collections::btree_map::Entry::Occupied(mut slot) => {
                    let text = |t: &T| serde_json::to_string(t).unwrap_or_default();
                    if text(item) < text(slot.get()) {
                        slot.insert(item);
                    }
                }
            }
        }
        by_key.into_values().cloned().collect()
    }
    Objects {
        ingresses: sorted(&objects.ingresses, Kind::Ingress, |o| &o.metadata),
        ingress_classes: sorted(&objects.ingress_classes, Kind::IngressClass, |o| &o.metadata),
        services: sorted(&objects.services, Kind::Ingress, |o| &o.metadata),
        http_proxies: sorted(&objects.http_proxies, Kind::HTTPProxy, |o| &o.metadata),
    }
}

/// Checks one rule exactly as the filter will, so that an invalid rule is refused here (with its
/// resource's status saying why) and never makes the whole table unusable.
pub fn validate_rule(rule: &RuleSpec) -> Result<(), String> {
    let spec = TableSpec {
        rules: vec![rule.clone()],
        ..TableSpec::default()
    };
    RouteTable::try_from(spec).map(|_| ()).map_err(|e| e.to_string())
}

/// Lowercases a host and removes a port and a trailing dot (ROUTING.md §2: hosts compare after
/// normalisation).
pub fn normalize_host(host: &str) -> String {
    let host = host.trim();
    let host = match host.rsplit_once(':') {
        Some((name, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    let host = host.strip_suffix('.').unwrap_or(host);
    host.to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_lose_case_port_and_trailing_dot() {
        assert_eq!(normalize_host("Shop.Example.COM."), "shop.example.com");
        assert_eq!(normalize_host("shop.example.com:8443"), "shop.example.com");
        assert_eq!(normalize_host("*.Example.net"), "*.example.net");
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
