//! Class eligibility (ROUTING.md §1, seeds 000 and 001): which Ingresses and HTTPProxies are ours.
//!
//! The effective default IngressClass is chosen as kube-apiserver's DefaultIngressClass admission
//! does: among classes annotated `ingressclass.kubernetes.io/is-default-class: "true"`, the newest by
//! `creationTimestamp`, then the smallest name. (HAProxy takes "the first found"; we do not.)

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::networking::v1::IngressClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::ingress_nginx::class::{decide_by, is_ingress_nginx_class};
use crate::ingress_nginx::flags::Flags as IngressNginxFlags;
use crate::model::Options;
use crate::objects::{annotation, key_of, Age, Kind};
use crate::status::{ConditionKind, Reason, Status, StatusBook};

pub use crate::objects::CLASS_ANNOTATION;
/// The legacy short class annotation (read when the long one is absent).
pub const LEGACY_CLASS_ANNOTATION: &str = "ingress.class";
/// The IngressClass annotation that makes a class the default.
pub const DEFAULT_CLASS_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";

/// The IngressClasses of one compilation, judged once.
#[derive(Debug)]
pub struct Classes {
    /// name → controller.
    controllers: BTreeMap<String, String>,
    /// The controller value a valid class must carry.
    wanted: String,
    /// The effective default class, if any class is marked default.
    default: Option<String>,
    flag: String,
    empty_class: bool,
    /// The IngressClasses that are ingress-nginx's (ROUTING.md §7.1), by name.
    ingress_nginx_classes: std::collections::BTreeSet<String>,
    /// The `--ingress-nginx-*` flags.
    ingress_nginx: IngressNginxFlags,
}

impl Classes {
    /// Judges the classes against the options; records a status for each class.
    pub fn new(classes: &[Arc<IngressClass>], options: &Options, book: &mut StatusBook) -> Classes {
        let wanted = if options.ingress_class.is_empty() {
            options.controller_name.clone()
        } else {
            format!("{}/{}", options.controller_name, options.ingress_class)
        };
        let mut controllers = BTreeMap::new();
        let mut ingress_nginx_classes = std::collections::BTreeSet::new();
        let mut defaults: Vec<(Age, String)> = Vec::new();
        for class in classes {
            let name = class.metadata.name.clone().unwrap_or_default();
            let controller = class
                .spec
                .as_ref()
                .and_then(|s| s.controller.clone())
                .unwrap_or_default();
            if annotation(&class.metadata, DEFAULT_CLASS_ANNOTATION) == Some("true") {
                defaults.push((Age::of(Kind::IngressClass, &class.metadata), name.clone()));
            }
            let key = key_of(Kind::IngressClass, &class.metadata);
            if is_ingress_nginx_class(class, &options.ingress_nginx) {
                book.add(
                    &key,
                    Status::Valid,
                    ConditionKind::Valid,
                    Reason::ControllerMatches,
                    format!(
                        "this class is ingress-nginx's (spec.controller {controller:?}): its Ingresses are \
                         served as ingress-nginx served them (ROUTING.md §7)"
                    ),
                );
                ingress_nginx_classes.insert(name.clone());
            } else if controller == wanted {
                book.add(
                    &key,
                    Status::Valid,
                    ConditionKind::Valid,
                    Reason::ControllerMatches,
                    format!("spec.controller is {controller:?}: this class is ours"),
                );
            } else {
                book.add(
                    &key,
                    Status::Ignored,
                    ConditionKind::Ignored,
                    Reason::OtherController,
                    format!("spec.controller is {controller:?}; ours is {wanted:?}"),
                );
            }
            controllers.insert(name, controller);
        }
        // Newest first; on equal timestamps the smallest name.
        defaults.sort_by(|(a, an), (b, bn)| {
            let t = |x: &Age| x.created.unwrap_or((i64::MIN, 0));
            t(b).cmp(&t(a)).then_with(|| an.cmp(bn))
        });
        let default = defaults.into_iter().next().map(|(_, name)| name);
        Classes {
            controllers,
            wanted,
            default,
            flag: options.ingress_class.clone(),
            empty_class: options.empty_ingress_class,
            ingress_nginx_classes,
            ingress_nginx: options.ingress_nginx.clone(),
        }
    }

    /// The effective default IngressClass's name.
    pub fn effective_default(&self) -> Option<&str> {
        self.default.as_deref()
    }

    fn is_valid(&self, name: &str) -> bool {
        self.controllers.get(name) == Some(&self.wanted)
    }

    /// Why `name` is not a matching IngressClass.
    fn why_not_matching(&self, name: &str) -> String {
        match self.controllers.get(name) {
            None => format!("ingressClassName {name:?} names no IngressClass"),
            Some(controller) => format!(
                "ingressClassName {name:?} names an IngressClass of controller {controller:?}, not {:?}",
                self.wanted
            ),
        }
    }

    /// Whether §7 is off (no `--ingress-nginx-class`).
    pub fn ingress_nginx_off(&self) -> bool {
        self.ingress_nginx.class.is_none()
    }

    /// ROUTING.md §7.1, before §1: `Some(why)` (a sentence) when an Ingress with this metadata and
    /// `ingressClassName` is ingress-nginx's, to be served by §7; `None` when §1 judges it.
    pub fn ingress_nginx(&self, meta: &ObjectMeta, class_name: Option<&str>) -> Option<String> {
        let is_class = |name: &str| self.ingress_nginx_classes.contains(name);
        decide_by(
            meta,
            class_name.filter(|n| !n.is_empty()),
            is_class,
            &self.ingress_nginx,
        )
        .map(|why| why.describe(&self.ingress_nginx))
    }

    /// Decides one resource: `Ok(rule)` says which accept rule of §1 let it in, `Err(why)` why it is
    /// ignored.
    pub fn decide(&self, meta: &ObjectMeta, class_name: Option<&str>) -> Result<String, String> {
        let annotation_value = annotation(meta, CLASS_ANNOTATION).or_else(|| annotation(meta, LEGACY_CLASS_ANNOTATION));
        let class_name = class_name.filter(|n| !n.is_empty());
        let matching_default = self.default.as_deref().filter(|d| self.is_valid(d));
        if !self.flag.is_empty() {
            if let Some(value) = annotation_value {
                return if value == self.flag {
                    Ok(format!("class annotation {value:?} equals --ingress-class"))
                } else {
                    Err(format!(
                        "class annotation {value:?} is not --ingress-class {:?}",
                        self.flag
                    ))
                };
            }
        } else if let Some(value) = annotation_value {
            return Err(format!(
                "it has the class annotation {value:?} and --ingress-class is empty (only resources without the annotation are ours)"
            ));
        }
        match class_name {
            Some(name) if self.is_valid(name) => Ok(format!("ingressClassName {name:?} is a matching IngressClass")),
            Some(name) => Err(self.why_not_matching(name)),
            None => {
                if self.flag.is_empty() && self.default.is_none() {
                    return Ok("no class given and no IngressClass is marked default".to_owned());
                }
                if !self.flag.is_empty() && self.empty_class {
                    return Ok("no class given and --empty-ingress-class is on".to_owned());
                }
                if let Some(default) = matching_default {
                    return Ok(format!("no class given; the default IngressClass {default:?} is ours"));
                }
                Err(match self.default.as_deref() {
                    Some(default) => format!(
                        "no class given, and the default IngressClass {default:?} belongs to controller {:?}, not {:?}",
                        self.controllers.get(default).map(String::as_str).unwrap_or_default(),
                        self.wanted
                    ),
                    None => format!(
                        "no class given, no IngressClass is marked default, and --empty-ingress-class is off (--ingress-class is {:?})",
                        self.flag
                    ),
                })
            }
        }
    }
}
