//! An Ingress's annotations, read once into a typed value ([`IngressAnnotations`]), the way
//! Contour's `annotations.go` reads its own: one function per annotation, each value checked where
//! it enters, a malformed one named with its key.
//!
//! Today these are the router annotations of ROUTING.md §4 (BFE's `bfe.ingress.kubernetes.io/router.*`
//! and our `switchyard.io/router.*`), which make exact conditions. ingress-nginx's
//! `nginx.ingress.kubernetes.io/*` (§7) have their own typed value,
//! [`crate::ingress_nginx::annotations::IngressNginxAnnotations`], read from the same metadata
//! when an Ingress is ingress-nginx's.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use switchyard_table::{ConditionSource, ConditionSpec, MatchOp};

use crate::objects::annotation;

/// The router annotations: key, and what the condition it makes tests (§4). The order is the
/// conditions' order: a cookie before a header, BFE's before ours.
const ROUTER: [(&str, ConditionSource); 4] = [
    ("bfe.ingress.kubernetes.io/router.cookie", ConditionSource::Cookie),
    ("bfe.ingress.kubernetes.io/router.header", ConditionSource::Header),
    ("switchyard.io/router.cookie", ConditionSource::Cookie),
    ("switchyard.io/router.header", ConditionSource::Header),
];

/// What an Ingress's annotations ask of Switchyard's own semantics (sections 1–5).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngressAnnotations {
    /// The conditions every rule of the Ingress carries (router annotations, §4), without
    /// duplicates, in [`ROUTER`]'s order.
    pub router: Vec<ConditionSpec>,
}

/// A malformed annotation: it rejects the Ingress, since dropping a condition would widen its rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnnotationError {
    /// A router annotation that is not `Name: value`.
    #[error("annotation {key}: {text:?} is not \"Name: value\"")]
    NotNameValue {
        /// The annotation's key.
        key: &'static str,
        /// Its value.
        text: String,
    },
    /// A router annotation with nothing before the `:`.
    #[error("annotation {key}: {text:?} has no name before ':'")]
    NoName {
        /// The annotation's key.
        key: &'static str,
        /// Its value.
        text: String,
    },
}

impl IngressAnnotations {
    /// Reads the annotations of `meta`.
    pub fn parse(meta: &ObjectMeta) -> Result<IngressAnnotations, AnnotationError> {
        let mut router = Vec::new();
        for (key, on) in ROUTER {
            if let Some(text) = annotation(meta, key) {
                let condition = router_condition(key, on, text)?;
                if !router.contains(&condition) {
                    router.push(condition);
                }
            }
        }
        Ok(IngressAnnotations { router })
    }
}

/// One router annotation's condition: `Name: value` is one exact test, `Name: a|b` a test for
/// either value (as BFE reads it); a header's name is compared lowercase, a cookie's as written.
fn router_condition(key: &'static str, on: ConditionSource, text: &str) -> Result<ConditionSpec, AnnotationError> {
    let Some((name, value)) = text.split_once(':') else {
        return Err(AnnotationError::NotNameValue {
            key,
            text: text.to_owned(),
        });
    };
    let (name, value) = (name.trim(), value.trim());
    if name.is_empty() {
        return Err(AnnotationError::NoName {
            key,
            text: text.to_owned(),
        });
    }
    let name = match on {
        ConditionSource::Header => name.to_ascii_lowercase(),
        _ => name.to_owned(),
    };
    let (op, value) = match value.contains('|') {
        true => {
            let alternatives: Vec<String> = value.split('|').map(|v| regex_lite::escape(v.trim())).collect();
            (MatchOp::Regex, alternatives.join("|"))
        }
        false => (MatchOp::Exact, value.to_owned()),
    };
    Ok(ConditionSpec {
        on,
        name: Some(name),
        op,
        value: Some(value),
        invert: false,
        ignore_case: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(pairs: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            annotations: Some(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn router_annotations_become_exact_conditions_cookie_first_header_names_lowercase() {
        let parsed = IngressAnnotations::parse(&meta(&[
            ("switchyard.io/router.header", "X-Key: v"),
            ("bfe.ingress.kubernetes.io/router.cookie", "Session: a"),
        ]))
        .unwrap();
        let shown: Vec<(ConditionSource, Option<&str>, MatchOp, Option<&str>)> = parsed
            .router
            .iter()
            .map(|c| (c.on, c.name.as_deref(), c.op, c.value.as_deref()))
            .collect();
        assert_eq!(
            shown,
            [
                (ConditionSource::Cookie, Some("Session"), MatchOp::Exact, Some("a")),
                (ConditionSource::Header, Some("x-key"), MatchOp::Exact, Some("v")),
            ]
        );
    }

    #[test]
    fn a_router_value_with_a_bar_means_either_value_escaped() {
        let parsed = IngressAnnotations::parse(&meta(&[("switchyard.io/router.header", "k: a.b | c")])).unwrap();
        assert_eq!(
            (parsed.router[0].op, parsed.router[0].value.as_deref()),
            (MatchOp::Regex, Some("a\\.b|c"))
        );
    }

    #[test]
    fn the_same_condition_from_bfe_and_switchyard_keys_is_one() {
        let parsed = IngressAnnotations::parse(&meta(&[
            ("bfe.ingress.kubernetes.io/router.header", "k: v"),
            ("switchyard.io/router.header", "K: v"),
        ]))
        .unwrap();
        assert_eq!(parsed.router.len(), 1);
    }

    #[test]
    fn a_malformed_router_annotation_is_named_with_its_key() {
        let error = IngressAnnotations::parse(&meta(&[("switchyard.io/router.cookie", "novalue")])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "annotation switchyard.io/router.cookie: \"novalue\" is not \"Name: value\""
        );
        let error = IngressAnnotations::parse(&meta(&[("switchyard.io/router.header", " : v")])).unwrap_err();
        assert!(matches!(
            error,
            AnnotationError::NoName {
                key: "switchyard.io/router.header",
                ..
            }
        ));
    }

    #[test]
    fn an_ingress_without_router_annotations_has_no_conditions() {
        assert_eq!(
            IngressAnnotations::parse(&meta(&[("other", "x")])).unwrap(),
            IngressAnnotations::default()
        );
    }
}
