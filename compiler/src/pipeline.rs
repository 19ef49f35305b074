//! The compiler as one pure function: (objects, options) → (table, status).
//!
//! This module only orders the stages: the cache (sort and de-duplicate the objects, so input order
//! never matters), class eligibility ([`crate::class`]), applied once to every kind with a class
//! ([`crate::processor::admit`]), then the list of processors ([`processors_of`] each kind, each
//! a [`Processor`]: Ingress ([`crate::ingress`]), HTTPProxy ([`crate::httpproxy`]), VirtualServer
//! ([`crate::virtualserver`]), TransportServer ([`crate::transportserver`])), host ownership and
//! collisions ([`crate::collisions`]), what each processor settles after that ([`Settle`]) and the
//! priority order ([`crate::order`], each host by its ordering policy,
//! [`crate::model::HostOrder`]). What the stages share is in [`crate::model`], which imports none
//! of them; what a processor is given and returns, in [`crate::processor`]. No I/O happens here;
//! tests call [`compile`] with plain values.

use std::collections::BTreeMap;
use std::sync::Arc;

use switchyard_table::format::MetricsFold;
use switchyard_table::{RuleSpec, TableSpec};

use crate::class::Classes;
use crate::collisions::{Claim, HostClaim, Resolution};
use crate::httpproxy::HTTPProxies;
use crate::ingress::Ingresses;
use crate::ingress_nginx::processor::IngressNginxServers;
use crate::l4::L4Routes;
use crate::model::Draft;
pub use crate::model::{CompileError, HostCollision, Options, DEFAULT_CLUSTER_TEMPLATE, DEFAULT_CONTROLLER};
use crate::objects::{key_of, EachKind, Kind, Object, Objects, ResourceKey};
use crate::processor::{admit, ingress_nginx_split, Ignored, Inputs, Processor, Settle};
use crate::services::ServicePorts;
use crate::status::{ResourceStatus, StatusBook};
use crate::transportserver::TransportServers;
use crate::virtualserver::VirtualServers;

/// The result of one compilation.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The table, in priority order, with its generation hash.
    pub table: TableSpec,
    /// What the TransportServers route at L4 (ROUTING.md §6), for Envoy's listeners.
    pub l4: L4Routes,
    /// One entry per Ingress, HTTPProxy, VirtualServer, VirtualServerRoute, TransportServer and
    /// IngressClass.
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
    let settled = process(&objects, &classes, &services, options, book).settle(options);
    let rules = crate::order::sort(settled.resolution.kept);
    Ok(Compiled {
        table: table(options, rules)?,
        l4: settled.l4,
        statuses: settled.statuses,
    })
}

/// The processors of each kind: each a [`Processor`] over the objects the class check let in (an
/// Ingress has two: Switchyard's, and ingress-nginx's of ROUTING.md §7). The pipeline runs them in
/// [`Kind`]'s order (which is also the order their drafts are listed). None for a kind another kind's processor reads (VirtualServerRoute, Policy,
/// GlobalConfiguration) or that no processor reads (IngressClass: the class stage; Service: the
/// backend ports). Exhaustive: a new kind does not compile until it says which.
pub fn processors_of(kind: Kind) -> &'static [&'static dyn Processor] {
    match kind {
        // Switchyard's own Ingresses (§1–5), then ingress-nginx's (§7).
        Kind::Ingress => &[&Ingresses, &IngressNginxServers],
        Kind::HTTPProxy => &[&HTTPProxies],
        Kind::VirtualServer => &[&VirtualServers],
        Kind::TransportServer => &[&TransportServers],
        Kind::VirtualServerRoute
        | Kind::GlobalConfiguration
        | Kind::Policy
        | Kind::IngressClass
        | Kind::Service
        | Kind::Secret
        | Kind::EndpointSlice => &[],
    }
}

/// What the processors made of the objects: every draft (Ingresses' first, in object order), the
/// hosts claimed without rules, the status book, and what the processors settle once the host
/// contest is decided.
pub(crate) struct Processed {
    /// The drafts of every processor, in pipeline order.
    pub drafts: Vec<Draft>,
    /// The hosts claimed without rules ([`crate::collisions::Claim`]): by Ingress rules without
    /// paths, and by TLS passthrough TransportServers.
    pub claims: Vec<Claim>,
    /// The statuses the class stage and the processors recorded.
    pub book: StatusBook,
    settle: Vec<Box<dyn Settle>>,
}

/// What the last stages decided.
pub(crate) struct Settled {
    /// Host ownership and `PathTaken`: the rules that stay (not yet in table order), and why.
    pub resolution: Resolution,
    /// The L4 routes.
    pub l4: L4Routes,
    /// The status report.
    pub statuses: Vec<ResourceStatus>,
}

/// Runs the class check once over `objects` (already through [`cache`]), then every kind's
/// processor ([`processors_of`]) over the objects that are ours, given the classes and Service
/// ports, recording into `book`.
pub(crate) fn process(
    objects: &Objects,
    classes: &Classes,
    services: &ServicePorts,
    options: &Options,
    mut book: StatusBook,
) -> Processed {
    let (ingress_nginx, ours, ignored) = match objects.ingresses.is_empty() || classes.ingress_nginx_off() {
        true => {
            let (ours, ignored) = admit_all(objects, classes, &mut book);
            (Vec::new(), ours, ignored)
        }
        false => {
            let (ingress_nginx, others) = ingress_nginx_split(&objects.ingresses, classes, &mut book);
            let rest = Objects {
                ingresses: others,
                ..objects.clone()
            };
            let (ours, ignored) = admit_all(&rest, classes, &mut book);
            (ingress_nginx, ours, ignored)
        }
    };
    let mut processed = Processed {
        drafts: Vec::new(),
        claims: Vec::new(),
        book: StatusBook::default(),
        settle: Vec::new(),
    };
    for processor in Kind::ALL.iter().flat_map(|&kind| processors_of(kind)) {
        let inputs = Inputs {
            classes,
            services,
            options,
            ignored: &ignored,
            book: &mut book,
            ingress_nginx: &ingress_nginx,
        };
        let output = processor.run(&ours, inputs);
        if processed.drafts.is_empty() {
            // The first processor's drafts are taken as they are, not copied.
            processed.drafts = output.drafts;
        } else {
            // Exactly: doubling room for a few more drafts would add up to as many again.
            processed.drafts.reserve_exact(output.drafts.len());
            processed.drafts.extend(output.drafts);
        }
        processed.claims.extend(output.claims);
        processed.settle.extend(output.settle);
    }
    processed.book = book;
    processed
}

/// The class check (ROUTING.md §1), once for every kind with a class ([`admit`]): the objects
/// that are ours (every object of the other kinds), and the ones left out.
fn admit_all(objects: &Objects, classes: &Classes, book: &mut StatusBook) -> (Objects, Ignored) {
    struct Admit<'o> {
        from: &'o Objects,
        classes: &'o Classes,
        book: &'o mut StatusBook,
        ours: Objects,
        ignored: Ignored,
    }
    impl EachKind for Admit<'_> {
        fn kind<T: Object>(&mut self) {
            *T::of_mut(&mut self.ours) = admit(T::of(self.from), self.classes, self.book, &mut self.ignored);
        }
    }
    let mut admit = Admit {
        from: objects,
        classes,
        book,
        ours: Objects::default(),
        ignored: Ignored::new(),
    };
    Objects::each_kind(&mut admit);
    (admit.ours, admit.ignored)
}

impl Processed {
    /// Host ownership and collisions, then what depends on who won: each processor's
    /// [`Settle`] (the VirtualServerRoutes' statuses, the TransportServers' L4 routes).
    pub fn settle(self, options: &Options) -> Settled {
        let Processed {
            drafts,
            claims,
            mut book,
            settle,
        } = self;
        let claims: Vec<HostClaim<'_>> = claims.iter().map(Claim::borrowed).collect();
        let resolution = crate::collisions::resolve(drafts, &claims, options.host_collision, &mut book);
        let mut l4 = L4Routes::default();
        for step in settle {
            step.settle(&resolution.winners, options, &mut book, &mut l4);
        }
        Settled {
            resolution,
            l4,
            statuses: book.finish(),
        }
    }
}

/// The table of `rules` (in table order) under `options`' settings, with its generation hash.
pub(crate) fn table(options: &Options, rules: Vec<RuleSpec>) -> Result<TableSpec, CompileError> {
    let mut table = TableSpec {
        metrics_fold: MetricsFold::of(&rules, options.metrics_max_resources),
        rules,
        ..header(options)
    };
    table.generation = crate::order::generation(&table)?;
    Ok(table)
}

/// A table with `options`' settings and no rules.
pub(crate) fn header(options: &Options) -> TableSpec {
    TableSpec {
        cluster_header: options.cluster_header.clone(),
        no_route: options.no_route,
        debug_rule_header: options.debug_rule_header,
        ..TableSpec::default()
    }
}

/// The objects of one kind by identity, later duplicates of the same identity dropped: of two
/// objects with one identity (the loader warns), the one whose JSON (without its
/// `resourceVersion`, which `switchyard watch` sets on objects read from files) sorts first, so
/// that the choice does not depend on file order. (Kubernetes' types have no order of their own.)
pub(crate) fn identities<T: Object>(items: &[Arc<T>]) -> Result<BTreeMap<ResourceKey, &Arc<T>>, CompileError> {
    let text = |t: &T| {
        let failed = |source| CompileError::Serialize {
            what: "an object with the same identity as another",
            source,
        };
        let mut value = serde_json::to_value(t).map_err(failed)?;
        if let Some(meta) = value.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            meta.remove("resourceVersion");
        }
        serde_json::to_string(&value).map_err(failed)
    };
    let mut by_key: BTreeMap<ResourceKey, &Arc<T>> = BTreeMap::new();
    for item in items {
        match by_key.entry(key_of(T::KIND, item.meta())) {
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(item);
            }
            std::collections::btree_map::Entry::Occupied(mut slot) => {
                if text(item)? < text(slot.get())? {
                    slot.insert(item);
                }
            }
        }
    }
    Ok(by_key)
}

/// The cache stage: objects sorted by identity, later duplicates of the same identity dropped
/// ([`identities`]), so that the rest of the pipeline never sees input order.
pub(crate) fn cache(objects: &Objects) -> Result<Objects, CompileError> {
    let mut cached = others(objects)?;
    cached.ingresses = sorted(&objects.ingresses)?;
    Ok(cached)
}

/// [`cache`] of every kind but Ingress (whose vector stays empty).
pub(crate) fn others(objects: &Objects) -> Result<Objects, CompileError> {
    struct Cache<'o> {
        from: &'o Objects,
        into: Objects,
        failed: Option<CompileError>,
    }
    impl EachKind for Cache<'_> {
        fn kind<T: Object>(&mut self) {
            if T::KIND == Kind::Ingress || self.failed.is_some() {
                return;
            }
            match sorted(T::of(self.from)) {
                Ok(sorted) => *T::of_mut(&mut self.into) = sorted,
                Err(error) => self.failed = Some(error),
            }
        }
    }
    let mut cache = Cache {
        from: objects,
        into: Objects::default(),
        failed: None,
    };
    Objects::each_kind(&mut cache);
    match cache.failed {
        Some(error) => Err(error),
        None => Ok(cache.into),
    }
}

/// [`identities`] in key order: the same `Arc`s, no object copied.
fn sorted<T: Object>(items: &[Arc<T>]) -> Result<Vec<Arc<T>>, CompileError> {
    Ok(identities(items)?.into_values().cloned().collect())
}
