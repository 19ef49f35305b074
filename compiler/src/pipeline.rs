//! The compiler as one pure function: (objects, options) → (table, status).
//!
//! This module only orders the stages: the cache (sort and de-duplicate the objects, so input order
//! never matters), class eligibility ([`crate::class`]), the Ingress processor ([`crate::ingress`]),
//! the HTTPProxy processor ([`crate::httpproxy`]), host ownership and collisions
//! ([`crate::collisions`]) and the priority order ([`crate::order`]). What the stages share is in
//! [`crate::model`], which imports none of them. No I/O happens here; tests call [`compile`] with
//! plain values.

use std::collections::BTreeMap;

use switchyard_table::TableSpec;

use crate::class::Classes;
use crate::httpproxy::HTTPProxyProcessor;
use crate::ingress::IngressProcessor;
use crate::l4::L4Routes;
pub use crate::model::{CompileError, HostCollision, Options, DEFAULT_CLUSTER_TEMPLATE, DEFAULT_CONTROLLER};
use crate::objects::{key_of, Kind, Objects, ResourceKey};
use crate::processor::Inputs;
use crate::services::ServicePorts;
use crate::status::{ResourceStatus, StatusBook};
use crate::transportserver::TransportServerProcessor;

/// The result of one compilation.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The table, in priority order, with its generation hash.
    pub table: TableSpec,
    /// What the TransportServers route at L4 (ROUTING.md §6), for Envoy's listeners.
    pub l4: L4Routes,
    /// One entry per Ingress, HTTPProxy and IngressClass.
    pub statuses: Vec<ResourceStatus>,
}

/// Compiles objects into the table and the status report. Pure and deterministic: the same objects
/// in any order give the same table, byte for byte. Fails only when something cannot be serialised
/// (for the cache's tie-break or the generation hash).
pub fn compile(objects: &Objects, options: &Options) -> Result<Compiled, CompileError> {
    let objects = cache(objects)?;
    let mut book = StatusBook::default();
    let classes = Classes::new(&objects.ingress_classes, options, &mut book);
    let services = ServicePorts::new(&objects.services);
    let mut drafts = IngressProcessor::new(Inputs {
        classes: &classes,
        services: &services,
        options,
        book: &mut book,
    })
    .run(&objects.ingresses);
    drafts.extend(
        HTTPProxyProcessor::new(Inputs {
            classes: &classes,
            services: &services,
            options,
            book: &mut book,
        })
        .run(&objects.http_proxies),
    );
    let transport = TransportServerProcessor::new(Inputs {
        classes: &classes,
        services: &services,
        options,
        book: &mut book,
    })
    .run(&objects.transport_servers, &objects.global_configurations);
    let (drafts, winners) =
        crate::collisions::resolve(drafts, &transport.host_claims(), options.host_collision, &mut book);
    let l4 = transport.settle(&winners, options, &mut book);
    let rules = crate::order::sort(drafts);
    let mut table = TableSpec {
        cluster_header: options.cluster_header.clone(),
        no_route: options.no_route,
        debug_rule_header: options.debug_rule_header,
        rules,
        ..TableSpec::default()
    };
    table.generation = crate::order::generation(&table)?;
    Ok(Compiled {
        table,
        l4,
        statuses: book.finish(),
    })
}

/// The cache stage: objects sorted by identity, later duplicates of the same identity dropped, so
/// that the rest of the pipeline never sees input order.
fn cache(objects: &Objects) -> Result<Objects, CompileError> {
    fn sorted<T: Clone + serde::Serialize>(
        items: &[T],
        kind: Kind,
        meta: impl Fn(&T) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    ) -> Result<Vec<T>, CompileError> {
        let text = |t: &T| {
            serde_json::to_string(t).map_err(|source| CompileError::Serialize {
                what: "an object with the same identity as another",
                source,
            })
        };
        let mut by_key: BTreeMap<ResourceKey, &T> = BTreeMap::new();
        for item in items {
            match by_key.entry(key_of(kind, meta(item))) {
                std::collections::btree_map::Entry::Vacant(slot) => {
                    slot.insert(item);
                }
                // Two objects with one identity (the loader warns): keep the one whose JSON sorts
                // first, so that the choice does not depend on file order. (Kubernetes' types have
                // no order of their own.)
                std::collections::btree_map::Entry::Occupied(mut slot) => {
                    if text(item)? < text(slot.get())? {
                        slot.insert(item);
                    }
                }
            }
        }
        Ok(by_key.into_values().cloned().collect())
    }
    Ok(Objects {
        ingresses: sorted(&objects.ingresses, Kind::Ingress, |o| &o.metadata)?,
        ingress_classes: sorted(&objects.ingress_classes, Kind::IngressClass, |o| &o.metadata)?,
        services: sorted(&objects.services, Kind::Ingress, |o| &o.metadata)?,
        http_proxies: sorted(&objects.http_proxies, Kind::HTTPProxy, |o| &o.metadata)?,
        transport_servers: sorted(&objects.transport_servers, Kind::TransportServer, |o| &o.metadata)?,
        global_configurations: sorted(&objects.global_configurations, Kind::GlobalConfiguration, |o| {
            &o.metadata
        })?,
    })
}
