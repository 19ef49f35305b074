//! ROUTING.md §7.6: a canary Ingress's annotations read into [`CanarySettings`], and the table's
//! `action.route.canary` made of them for the location it attaches to ([`table_canary`]). Which
//! location that is, is [`super::server`]'s to decide.

use std::collections::BTreeMap;

use switchyard_table::{Canary, CanaryHeader};

use super::annotations::Problem;
use crate::status::Reason;

/// The canary annotations ingress-nginx reads.
const CANARY: &[&str] = &[
    "canary",
    "canary-by-header",
    "canary-by-header-value",
    "canary-by-header-pattern",
    "canary-by-cookie",
    "canary-weight",
    "canary-weight-total",
];

/// A canary Ingress's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CanarySettings {
    /// `canary-by-header`.
    pub header: Option<String>,
    /// `canary-by-header-value`.
    pub header_value: Option<String>,
    /// `canary-by-header-pattern`.
    pub header_pattern: Option<String>,
    /// `canary-by-cookie`.
    pub cookie: Option<String>,
    /// `canary-weight` (default 0).
    pub weight: u32,
    /// `canary-weight-total` (default 100).
    pub weight_total: u32,
}

/// Reads the `canary-*` annotations (names without the prefix) of a canary Ingress; a value
/// ingress-nginx would refuse is `AnnotationInvalid` (the default stands), an unknown `canary-*`
/// name `AnnotationNotHonored`.
pub fn read(annotations: &BTreeMap<String, String>, prefix: &str) -> (CanarySettings, Vec<Problem>) {
    let mut settings = CanarySettings {
        weight_total: 100,
        ..CanarySettings::default()
    };
    let mut problems = Vec::new();
    let text = |name: &str| {
        annotations
            .get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    settings.header = text("canary-by-header");
    settings.header_value = text("canary-by-header-value");
    settings.header_pattern = text("canary-by-header-pattern");
    settings.cookie = text("canary-by-cookie");
    let mut number = |name: &str, default: u32| match annotations.get(name) {
        None => default,
        Some(value) => match value.trim().parse::<u32>() {
            Ok(n) => n,
            Err(_) => {
                problems.push(Problem {
                    name: name.to_owned(),
                    reason: Reason::AnnotationInvalid,
                    message: format!("{prefix}/{name}: {value:?} is not a whole number; ignored"),
                });
                default
            }
        },
    };
    settings.weight = number("canary-weight", 0);
    settings.weight_total = number("canary-weight-total", 100).max(1);
    for name in annotations.keys().filter(|n| !CANARY.contains(&n.as_str())) {
        problems.push(Problem {
            name: name.clone(),
            reason: Reason::AnnotationNotHonored,
            message: super::annotations::not_honored_message(prefix, name),
        });
    }
    (settings, problems)
}

/// The table's canary to `cluster` for these settings, and the problem of a header pattern
/// `regex-lite` cannot compile: the header then answers the main backends, as ingress-nginx's
/// failed match does (§7.6).
pub fn table_canary(settings: &CanarySettings, cluster: String, prefix: &str) -> (Canary, Option<Problem>) {
    let mut problem = None;
    let header = settings.header.as_ref().map(|name| {
        let mut header = CanaryHeader {
            name: name.clone(),
            value: None,
            pattern: None,
            main: false,
        };
        match (&settings.header_value, &settings.header_pattern) {
            (Some(value), _) => header.value = Some(value.clone()),
            (None, Some(pattern)) => match regex_lite::Regex::new(pattern) {
                Ok(_) => header.pattern = Some(pattern.clone()),
                Err(error) => {
                    header.main = true;
                    problem = Some(Problem {
                        name: "canary-by-header-pattern".to_owned(),
                        reason: Reason::AnnotationInvalid,
                        message: format!(
                            "{prefix}/canary-by-header-pattern {pattern:?} does not compile ({error}): a request \
                             with header {name} goes to the main backend"
                        ),
                    });
                }
            },
            (None, None) => {}
        }
        header
    });
    let total = settings.weight_total.max(100);
    let canary = Canary {
        cluster,
        header,
        cookie: settings.cookie.clone(),
        // ingress-nginx's `math.random(total) <= weight`: a weight above the total is always.
        weight: settings.weight.min(total),
        weight_total: settings.weight_total,
    };
    (canary, problem)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_pairs(pairs: &[(&str, &str)]) -> (CanarySettings, Vec<Problem>) {
        let map = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        read(&map, "nginx.ingress.kubernetes.io")
    }

    #[test]
    fn canary_annotations_are_read_with_ingress_nginx_defaults() {
        let (s, problems) = read_pairs(&[
            ("canary", "true"),
            ("canary-by-header", "X-Canary"),
            ("canary-weight", "10"),
        ]);
        assert!(problems.is_empty());
        assert_eq!(
            (s.header.as_deref(), s.weight, s.weight_total),
            (Some("X-Canary"), 10, 100)
        );
    }

    #[test]
    fn canary_weight_that_is_not_a_number_is_invalid_and_zero() {
        let (s, problems) = read_pairs(&[("canary-weight", "ten")]);
        assert_eq!(s.weight, 0);
        assert_eq!(problems[0].reason, Reason::AnnotationInvalid);
    }

    #[test]
    fn canary_header_pattern_that_does_not_compile_sends_the_header_to_main() {
        let (s, _) = read_pairs(&[("canary-by-header", "x"), ("canary-by-header-pattern", "(")]);
        let (canary, problem) = table_canary(&s, "c".into(), "p");
        assert!(canary.header.unwrap().main);
        assert_eq!(problem.unwrap().reason, Reason::AnnotationInvalid);
    }

    #[test]
    fn canary_header_value_wins_over_the_pattern() {
        let (s, _) = read_pairs(&[
            ("canary-by-header", "x"),
            ("canary-by-header-value", "v"),
            ("canary-by-header-pattern", "p"),
        ]);
        let header = table_canary(&s, "c".into(), "p").0.header.unwrap();
        assert_eq!((header.value.as_deref(), header.pattern), (Some("v"), None));
    }
}
