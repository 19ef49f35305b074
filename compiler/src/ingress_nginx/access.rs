//! ROUTING.md §9 for ingress-nginx: the access-control annotations of an Ingress (`auth-*`,
//! `whitelist-source-range`, `denylist-source-range`, `satisfy`) and the ConfigMap's keys that
//! protect every Ingress of the class (`global-auth-url`, `whitelist-source-range`,
//! `denylist-source-range`, `block-cidrs`, `block-user-agents`, `block-referers`). None of them is
//! ever "not honoured" (§7.9): each is enforced or denies.
//!
//! All are [`crate::access::Field`]s ([`fields`]). The source ranges are enforced by the
//! ingress-nginx processor ([`SourceRanges`]: the rule's policy, checked by the filter against the
//! client's address; [`enforce_ranges`] marks them); the others deny, as a range whose value is
//! not a list of ranges does, and as every range does on an Ingress of another processor.

use std::collections::BTreeMap;

use switchyard_table::IpRange;

use crate::access::{Field, Reach};

/// The source-range annotations and ConfigMap keys this gateway enforces.
const RANGES: &[&str] = &["whitelist-source-range", "denylist-source-range", "block-cidrs"];

/// The client addresses an Ingress's locations let through, as ingress-nginx's template writes
/// them: the `deny` lines (the ConfigMap's `block-cidrs`, then the Ingress's
/// `denylist-source-range`, else the ConfigMap's), then the `allow` lines with `deny all` (its
/// `whitelist-source-range`, else the ConfigMap's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceRanges {
    /// The ranges allowed (empty: any).
    pub allow: Vec<IpRange>,
    /// The ranges denied, checked first.
    pub deny: Vec<IpRange>,
}

/// The ranges of a list (`10.0.0.0/8, 192.168.1.7`); `None` when an entry is no range.
fn range_list(value: &str) -> Option<Vec<IpRange>> {
    (value.split(',').map(str::trim))
        .filter(|entry| !entry.is_empty())
        .map(IpRange::parse)
        .collect()
}

/// The source ranges of an Ingress with these annotations (under `prefix`) and the ConfigMap's
/// keys `configmap` (key → value, blank values left out): the ranges, and the fields whose value
/// is not a list of ranges (which stay access controls that deny).
pub fn source_ranges(
    annotations: &BTreeMap<String, String>,
    prefix: &str,
    configmap: &[(String, String)],
) -> (SourceRanges, Vec<String>) {
    let annotation = |name: &str| {
        let key = format!("{prefix}/{name}");
        annotations
            .get(&key)
            .filter(|v| !v.trim().is_empty())
            .map(|value| (key, value.as_str()))
    };
    let key = |name: &str| {
        (configmap.iter())
            .find(|(key, _)| key == name)
            .map(|(key, value)| (format!("configmap/{key}"), value.as_str()))
    };
    let mut out = SourceRanges::default();
    let mut unusable = Vec::new();
    let mut take = |field: Option<(String, &str)>, into: &mut Vec<IpRange>| {
        let Some((name, value)) = field else { return };
        match range_list(value) {
            Some(ranges) => into.extend(ranges),
            None => unusable.push(name),
        }
    };
    take(key("block-cidrs"), &mut out.deny);
    take(
        annotation("denylist-source-range").or_else(|| key("denylist-source-range")),
        &mut out.deny,
    );
    take(
        annotation("whitelist-source-range").or_else(|| key("whitelist-source-range")),
        &mut out.allow,
    );
    (out, unusable)
}

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
        out.push(Field::new(format!("configmap/{key}"), Reach::OwnRules).saying(format!(
            "ingress-nginx's ConfigMap sets {key}: {value:?} for every Ingress"
        )));
    }
    out
}

/// Marks the source ranges among `fields` that the rule's policy enforces: every one but the
/// `unusable` ones ([`source_ranges`]), which deny as the other fields do. Only a processor that
/// writes the ranges into its rules' policy calls this.
pub fn enforce_ranges(fields: &mut [Field], unusable: &[String]) {
    for field in named(fields, RANGES) {
        if !unusable.contains(&field.name) {
            field.enforced = true;
        }
    }
}

/// Why an Ingress's access-control annotations of one family (basic or external authentication)
/// cannot be enforced as written: they deny, the status saying this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unenforceable(pub String);

/// Marks the annotations of one family among `fields` (`names`: [`super::basic_auth::ANNOTATIONS`],
/// [`super::external_auth::ANNOTATIONS`]) as the rule's policy enforces them, or, when they cannot
/// be, says why they deny.
pub fn enforce_family<T>(fields: &mut [Field], names: &[&str], read: &Result<T, Unenforceable>) {
    let read = read.as_ref().map(|_| ()).map_err(|why| why.0.as_str());
    for field in named(fields, names) {
        match read {
            Ok(()) => field.enforced = true,
            Err(why) => field.detail = Some(why.to_owned()),
        }
    }
}

/// The fields among `fields` an annotation (without its prefix) or a ConfigMap key of `names` names.
fn named<'f>(fields: &'f mut [Field], names: &'f [&str]) -> impl Iterator<Item = &'f mut Field> {
    fields.iter_mut().filter(|field| {
        let name = field.short.as_deref().or_else(|| field.name.strip_prefix("configmap/"));
        name.is_some_and(|name| names.contains(&name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "nginx.ingress.kubernetes.io";

    /// The annotations (with the prefix) and the ConfigMap's keys of the pairs given.
    fn inputs(
        annotations: &[(&str, &str)],
        configmap: &[(&str, &str)],
    ) -> (BTreeMap<String, String>, Vec<(String, String)>) {
        let annotations = annotations
            .iter()
            .map(|(k, v)| (format!("{P}/{k}"), (*v).to_owned()))
            .collect();
        let configmap = configmap
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        (annotations, configmap)
    }

    /// The names of the fields that deny, the source ranges enforced as the ingress-nginx
    /// processor enforces them.
    fn names(annotations: &[(&str, &str)], configmap: &[(&str, &str)]) -> Vec<String> {
        let (annotations, configmap) = inputs(annotations, configmap);
        let (_, unusable) = source_ranges(&annotations, P, &configmap);
        let mut fields = fields(&annotations, P, &configmap);
        enforce_ranges(&mut fields, &unusable);
        fields.into_iter().filter(|f| !f.enforced).map(|f| f.name).collect()
    }

    #[test]
    fn every_auth_annotation_and_unusable_source_range_is_an_access_control_that_denies() {
        let got = names(
            &[
                ("auth-url", "http://auth"),
                ("auth-signin", "https://login"),
                ("auth-tls-secret", "ns/ca"),
                ("whitelist-source-range", "10.0.0.0/8"),
                ("denylist-source-range", "1.2.3.4, not-a-range"),
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
        let configmap = [("global-auth-url", "http://auth"), ("block-user-agents", "curl")];
        assert_eq!(
            names(&[], &configmap),
            ["configmap/global-auth-url", "configmap/block-user-agents"]
        );
        assert_eq!(
            names(&[("enable-global-auth", "false")], &configmap),
            ["configmap/block-user-agents"]
        );
    }

    fn ranges(annotations: &[(&str, &str)], configmap: &[(&str, &str)]) -> (SourceRanges, Vec<String>) {
        let (annotations, configmap) = inputs(annotations, configmap);
        source_ranges(&annotations, P, &configmap)
    }

    fn parsed(list: &[&str]) -> Vec<IpRange> {
        list.iter().filter_map(|r| IpRange::parse(r)).collect()
    }

    #[test]
    fn an_ingresss_source_ranges_override_the_configmaps_and_block_cidrs_always_deny() {
        let configmap = [
            ("whitelist-source-range", "10.0.0.0/8"),
            ("denylist-source-range", "10.1.0.0/16"),
            ("block-cidrs", "192.0.2.1"),
        ];
        let (own, unusable) = ranges(&[("whitelist-source-range", "172.16.0.0/12, 127.0.0.1")], &configmap);
        assert!(unusable.is_empty());
        assert_eq!(own.allow, parsed(&["172.16.0.0/12", "127.0.0.1"]));
        assert_eq!(own.deny, parsed(&["192.0.2.1", "10.1.0.0/16"]));
        let (inherited, _) = ranges(&[], &configmap);
        assert_eq!(inherited.allow, parsed(&["10.0.0.0/8"]));
        assert!(
            names(&[("whitelist-source-range", "10.0.0.0/8")], &configmap).is_empty(),
            "all enforced"
        );
    }

    #[test]
    fn a_source_range_that_is_no_range_is_not_enforced_and_denies() {
        let (_, unusable) = ranges(&[("whitelist-source-range", "10.0.0.0/33")], &[]);
        assert_eq!(unusable, [format!("{P}/whitelist-source-range")]);
        assert_eq!(
            names(&[("whitelist-source-range", "office")], &[]),
            [format!("{P}/whitelist-source-range")]
        );
    }

    #[test]
    fn annotations_of_another_prefix_are_not_read() {
        let annotations = BTreeMap::from([("custom.io/auth-url".to_owned(), "http://a".to_owned())]);
        assert!(fields(&annotations, P, &[]).is_empty());
    }
}
