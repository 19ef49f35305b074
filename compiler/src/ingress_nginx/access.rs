//! ROUTING.md §9 for ingress-nginx: the access-control annotations of an Ingress (`auth-*`,
//! `whitelist-source-range`, `denylist-source-range`, `satisfy`) and the ConfigMap's keys that
//! protect every Ingress of the class (`global-auth-url`, `whitelist-source-range`,
//! `denylist-source-range`, `block-cidrs`, `block-user-agents`, `block-referers`), as
//! [`crate::access::Field`]s. None of them is ever "not honoured" (§7.9): each is enforced or
//! denies.

use std::collections::BTreeMap;

use crate::access::{Field, Reach};

/// The Ingress annotation (without its prefix) by which ingress-nginx lets an Ingress out of the
/// ConfigMap's `global-auth-url`.
pub const ENABLE_GLOBAL_AUTH: &str = "enable-global-auth";

/// Whether an annotation (without its prefix) is an access control: the `auth-*` family (external
/// auth, basic and digest auth, client certificates), the source ranges, and `satisfy`.
pub fn is_access_annotation(name: &str) -> bool {
    name.starts_with("auth-") || matches!(name, "whitelist-source-range" | "denylist-source-range" | "satisfy")
}

/// The access-control fields of an Ingress with these annotations (under `prefix`), and of the
/// ConfigMap's keys `configmap` (key → value, blank values left out) that reach it. An
/// `auth-tls-*` annotation asks for a client certificate on the whole server (ingress-nginx sets it
/// per server), the others per location.
pub fn fields(annotations: &BTreeMap<String, String>, prefix: &str, configmap: &[(String, String)]) -> Vec<Field> {
    let mut out = Vec::new();
    let mut global_auth = true;
    for (key, value) in annotations {
        let Some(name) = key.strip_prefix(prefix).and_then(|k| k.strip_prefix('/')) else {
            continue;
        };
        if name == ENABLE_GLOBAL_AUTH && value.trim() == "false" {
            global_auth = false;
        }
        if !is_access_annotation(name) || value.trim().is_empty() {
            continue;
        }
        let reach = match name.starts_with("auth-tls-") {
            true => Reach::Host,
            false => Reach::OwnRules,
        };
        out.push(Field::new(key.clone(), reach).or_named(name));
    }
    for (key, value) in configmap {
        if key == "global-auth-url" && !global_auth {
            continue;
        }
        let field = Field::new(format!("configmap/{key}"), Reach::OwnRules).saying(format!(
            "ingress-nginx's ConfigMap sets {key}: {value:?} for every Ingress"
        ));
        out.push(field);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "nginx.ingress.kubernetes.io";

    fn names(annotations: &[(&str, &str)], configmap: &[(&str, &str)]) -> Vec<String> {
        let annotations = annotations
            .iter()
            .map(|(k, v)| (format!("{P}/{k}"), (*v).to_owned()))
            .collect();
        let configmap: Vec<(String, String)> = configmap
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        fields(&annotations, P, &configmap)
            .into_iter()
            .map(|f| f.name)
            .collect()
    }

    #[test]
    fn every_auth_annotation_and_source_range_is_an_access_control() {
        let got = names(
            &[
                ("auth-url", "http://auth"),
                ("auth-signin", "https://login"),
                ("auth-tls-secret", "ns/ca"),
                ("whitelist-source-range", "10.0.0.0/8"),
                ("denylist-source-range", "1.2.3.4"),
                ("satisfy", "any"),
                ("rewrite-target", "/"),
            ],
            &[],
        );
        assert_eq!(
            got,
            [
                "auth-signin",
                "auth-tls-secret",
                "auth-url",
                "denylist-source-range",
                "satisfy",
                "whitelist-source-range"
            ]
            .map(|n| format!("{P}/{n}"))
        );
    }

    #[test]
    fn a_blank_access_annotation_asks_for_nothing() {
        assert!(names(&[("whitelist-source-range", " ")], &[]).is_empty());
    }

    #[test]
    fn client_certificates_reach_the_whole_server() {
        let annotations = BTreeMap::from([(format!("{P}/auth-tls-verify-client"), "on".to_owned())]);
        assert_eq!(fields(&annotations, P, &[])[0].reach, Reach::Host);
        let annotations = BTreeMap::from([(format!("{P}/auth-url"), "http://a".to_owned())]);
        assert_eq!(fields(&annotations, P, &[])[0].reach, Reach::OwnRules);
    }

    #[test]
    fn enable_global_auth_false_lets_an_ingress_out_of_global_auth_url_only() {
        let configmap = [("global-auth-url", "http://auth"), ("block-cidrs", "1.2.3.4")];
        assert_eq!(
            names(&[], &configmap),
            ["configmap/global-auth-url", "configmap/block-cidrs"]
        );
        assert_eq!(
            names(&[("enable-global-auth", "false")], &configmap),
            ["configmap/block-cidrs"]
        );
    }

    #[test]
    fn annotations_of_another_prefix_are_not_read() {
        let annotations = BTreeMap::from([("custom.io/auth-url".to_owned(), "http://a".to_owned())]);
        assert!(fields(&annotations, P, &[]).is_empty());
    }
}
