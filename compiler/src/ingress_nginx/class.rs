//! ROUTING.md §7.1: which Ingresses are ingress-nginx's, as a pure function over the Ingress, the
//! IngressClasses and the flags.

use k8s_openapi::api::networking::v1::IngressClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::objects::{annotation, CLASS_ANNOTATION};

pub use super::flags::{Flags, DEFAULT_ANNOTATIONS_PREFIX, DEFAULT_CONTROLLER};

/// Which sentence of §7.1 made an Ingress ingress-nginx's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// 1: its `ingressClassName` names an IngressClass of ingress-nginx.
    ClassName,
    /// 2: no `ingressClassName`, and its class annotation equals `--ingress-nginx-class`.
    Annotation,
    /// 3: neither, and `--ingress-nginx-without-class` is on.
    WithoutClass,
}

/// Whether an IngressClass is ingress-nginx's: its controller is `--ingress-nginx-controller`, or
/// (with `--ingress-nginx-class-by-name`) its name is `--ingress-nginx-class`.
pub fn is_ingress_nginx_class(class: &IngressClass, flags: &Flags) -> bool {
    let Some(wanted) = &flags.class else { return false };
    let controller = class.spec.as_ref().and_then(|s| s.controller.as_deref());
    controller == Some(flags.controller.as_str())
        || (flags.class_by_name && class.metadata.name.as_deref() == Some(wanted.as_str()))
}

/// §7.1: `Some(why)` when an Ingress with this metadata and `ingressClassName` is ingress-nginx's,
/// `None` when it is judged by §1, given which IngressClass names are ingress-nginx's. The default
/// class annotation is not read (the API server wrote `ingressClassName` when the Ingress was made).
pub fn decide_by(
    meta: &ObjectMeta,
    class_name: Option<&str>,
    is_ingress_nginx_class_name: impl Fn(&str) -> bool,
    flags: &Flags,
) -> Option<Why> {
    let wanted = flags.class.as_deref()?;
    if let Some(name) = class_name {
        // 1. The class annotation is then not read at all.
        return is_ingress_nginx_class_name(name).then_some(Why::ClassName);
    }
    match annotation(meta, CLASS_ANNOTATION) {
        // 2. Exactly equal; any other value, "" included, never qualifies.
        Some(value) => (value == wanted).then_some(Why::Annotation),
        // 3.
        None => flags.without_class.then_some(Why::WithoutClass),
    }
}

impl Why {
    /// The sentence of §7.1, for the status.
    pub fn describe(self, flags: &Flags) -> String {
        let class = flags.class.as_deref().unwrap_or_default();
        match self {
            Why::ClassName => format!(
                "its ingressClassName names an IngressClass of ingress-nginx (controller {:?})",
                flags.controller
            ),
            Why::Annotation => format!("its class annotation equals --ingress-nginx-class {class:?}"),
            Why::WithoutClass => "it has no class and --ingress-nginx-without-class is on".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::networking::v1::Ingress;
    use k8s_openapi::api::networking::v1::{IngressClassSpec, IngressSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    /// [`decide_by`] of an Ingress, given the IngressClasses.
    fn decide(ingress: &Ingress, classes: &[&IngressClass], flags: &Flags) -> Option<Why> {
        let class_name = ingress.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref());
        let is_ingress_nginx = |name: &str| {
            classes
                .iter()
                .any(|c| c.metadata.name.as_deref() == Some(name) && is_ingress_nginx_class(c, flags))
        };
        decide_by(&ingress.metadata, class_name, is_ingress_nginx, flags)
    }

    fn flags() -> Flags {
        Flags {
            class: Some("nginx".into()),
            ..Flags::default()
        }
    }

    fn class(name: &str, controller: &str) -> IngressClass {
        IngressClass {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: Some(IngressClassSpec {
                controller: Some(controller.into()),
                ..IngressClassSpec::default()
            }),
        }
    }

    fn ingress(class_name: Option<&str>, annotation: Option<&str>) -> Ingress {
        Ingress {
            metadata: ObjectMeta {
                name: Some("i".into()),
                annotations: annotation.map(|a| [(CLASS_ANNOTATION.to_owned(), a.to_owned())].into()),
                ..ObjectMeta::default()
            },
            spec: Some(IngressSpec {
                ingress_class_name: class_name.map(str::to_owned),
                ..IngressSpec::default()
            }),
            status: None,
        }
    }

    #[test]
    fn class_name_of_an_ingress_nginx_controller_class_qualifies() {
        let c = class("public", DEFAULT_CONTROLLER);
        assert_eq!(
            decide(&ingress(Some("public"), None), &[&c], &flags()),
            Some(Why::ClassName)
        );
    }

    #[test]
    fn class_name_makes_the_annotation_unread() {
        let c = class("ours", "switchyard.io/ingress-controller");
        assert_eq!(decide(&ingress(Some("ours"), Some("nginx")), &[&c], &flags()), None);
        assert_eq!(decide(&ingress(Some("missing"), Some("nginx")), &[], &flags()), None);
    }

    #[test]
    fn class_by_name_accepts_a_class_named_like_the_flag() {
        let c = class("nginx", "example.com/other");
        assert_eq!(decide(&ingress(Some("nginx"), None), &[&c], &flags()), None);
        let by_name = Flags {
            class_by_name: true,
            ..flags()
        };
        assert_eq!(
            decide(&ingress(Some("nginx"), None), &[&c], &by_name),
            Some(Why::ClassName)
        );
    }

    #[test]
    fn annotation_equal_to_the_class_qualifies_without_class_name() {
        assert_eq!(
            decide(&ingress(None, Some("nginx")), &[], &flags()),
            Some(Why::Annotation)
        );
        assert_eq!(decide(&ingress(None, Some("Nginx")), &[], &flags()), None);
    }

    #[test]
    fn without_class_accepts_only_an_ingress_with_neither() {
        let on = Flags {
            without_class: true,
            ..flags()
        };
        assert_eq!(decide(&ingress(None, None), &[], &on), Some(Why::WithoutClass));
        assert_eq!(decide(&ingress(None, None), &[], &flags()), None);
        assert_eq!(decide(&ingress(None, Some("")), &[], &on), None);
        assert_eq!(decide(&ingress(None, Some("other")), &[], &on), None);
    }

    #[test]
    fn nothing_is_ingress_nginx_without_the_class_flag() {
        let c = class("public", DEFAULT_CONTROLLER);
        assert_eq!(decide(&ingress(Some("public"), None), &[&c], &Flags::default()), None);
    }

    #[test]
    fn without_class_and_empty_ingress_class_together_are_a_usage_error() {
        let on = Flags {
            without_class: true,
            ..flags()
        };
        assert!(on.check(true).is_err());
        assert!(on.check(false).is_ok());
        assert!(flags().check(true).is_ok());
    }
}
