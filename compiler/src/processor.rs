//! The processor contract: what every processor is given ([`Inputs`]), what it returns
//! ([`Output`]), and the trait the pipeline runs them through ([`Processor`]), as Contour's DAG
//! builder runs a list of processors over one cache.
//!
//! The pipeline ([`crate::pipeline`]) applies the class check of ROUTING.md §1 once, to every
//! object of a kind with a class ([`crate::objects::Kind::has_class`], [`admit`]): a processor is
//! handed only the objects that are ours, and never records an "ignored" status itself. It then
//! runs the list ([`crate::pipeline::processors_of`] each kind): each processor returns its rules
//! (each with how its host orders its rules, [`crate::model::HostOrder`]), the hosts it claims
//! without rules, and what it decides once the host contest is over ([`Settle`]); its statuses it
//! writes into the shared book ([`Inputs::book`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::networking::v1::Ingress;

use crate::class::Classes;
use crate::collisions::{Claim, HostWinners};
use crate::l4::L4Routes;
use crate::model::{Draft, Options};
use crate::objects::{key_of, Kind, Object, Objects, ResourceKey};
use crate::services::ServicePorts;
use crate::status::{About, ConditionKind, Reason, Status, StatusBook};

/// The inputs a processor reads and the status book it writes.
pub struct Inputs<'a> {
    /// Which resources are ours (ROUTING.md §1).
    pub classes: &'a Classes,
    /// Backend ports through the Services of the input (ROUTING.md §5).
    pub services: &'a ServicePorts,
    /// The compiler's options.
    pub options: &'a Options,
    /// The resources the class check left out, and why (for messages about references to them).
    pub ignored: &'a Ignored,
    /// Where every resource's status is recorded.
    pub book: &'a mut StatusBook,
    /// The Ingresses that are ingress-nginx's (ROUTING.md §7.1: [`ingress_nginx_split`]), for the
    /// ingress-nginx processor; not in `ours`.
    pub ingress_nginx: &'a [Arc<Ingress>],
}

/// The resources the class check left out ([`admit`]), with the class rule that failed.
pub type Ignored = BTreeMap<ResourceKey, String>;

/// What one processor made of the objects that are ours.
#[derive(Default)]
pub struct Output {
    /// Its rules, in the order it made them, each with its host's ordering policy.
    pub drafts: Vec<Draft>,
    /// The hosts it claims without rules ([`crate::collisions::Claim`]).
    pub claims: Vec<Claim>,
    /// What it decides once the host contest is decided, if anything.
    pub settle: Option<Box<dyn Settle>>,
}

/// The part of a processor's work that depends on who won each host (ROUTING.md §2): statuses,
/// and the L4 routes.
pub trait Settle {
    /// Decides it, given who won each host; records statuses in `book` and adds L4 routes to `l4`.
    fn settle(self: Box<Self>, winners: &HostWinners, options: &Options, book: &mut StatusBook, l4: &mut L4Routes);
}

/// A processor: the routing of some kinds, from the objects that are ours.
pub trait Processor: Sync {
    /// Processes `ours` (every kind with a class holds only the objects the class check let in;
    /// the others, such as GlobalConfigurations, are all there).
    fn run(&self, ours: &Objects, inputs: Inputs<'_>) -> Output;
}

/// The class check (ROUTING.md §1) of the objects of one kind: the ones that are ours, in the
/// order given; the others are recorded `Ignored` in `book` and in `ignored`. A kind without a
/// class ([`crate::objects::Kind::has_class`]) is all ours and records nothing.
pub fn admit<T: Object>(
    items: &[Arc<T>],
    classes: &Classes,
    book: &mut StatusBook,
    ignored: &mut Ignored,
) -> Vec<Arc<T>> {
    if !T::KIND.has_class() {
        return items.to_vec();
    }
    let mut ours = Vec::with_capacity(items.len());
    for item in items {
        let meta = item.meta();
        let key = key_of(T::KIND, meta);
        match classes.decide(meta, item.class_name()) {
            Ok(why) => {
                if let Some(status) = T::KIND.ours_status() {
                    book.add(
                        &key,
                        status,
                        ConditionKind::Info,
                        Reason::ClassMatches,
                        format!("ours: {why}"),
                    );
                }
                ours.push(item.clone());
            }
            Err(why) => {
                book.ignored_by_class(&key, &why);
                ignored.insert(key, why);
            }
        }
    }
    ours
}

/// ROUTING.md §7.1, before §1's check: the Ingresses that are ingress-nginx's (recorded as ours,
/// served by §7), and the others, for [`admit`]; both in the order given. With §7 off (no
/// `--ingress-nginx-class`), every Ingress is in the second.
pub fn ingress_nginx_split(
    ingresses: &[Arc<Ingress>],
    classes: &Classes,
    book: &mut StatusBook,
) -> (Vec<Arc<Ingress>>, Vec<Arc<Ingress>>) {
    let mut ingress_nginx = Vec::new();
    let mut others = Vec::with_capacity(ingresses.len());
    for ingress in ingresses {
        let class_name = ingress.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref());
        match classes.ingress_nginx(&ingress.metadata, class_name) {
            Some(why) => {
                let key = key_of(Kind::Ingress, &ingress.metadata);
                let message = format!("ours, served as ingress-nginx served it (ROUTING.md §7): {why}");
                let reason = (ConditionKind::Info, Reason::ClassMatches);
                book.add_about(&key, Status::Accepted, reason, About::IngressNginx, message);
                ingress_nginx.push(ingress.clone());
            }
            None => others.push(ingress.clone()),
        }
    }
    (ingress_nginx, others)
}
