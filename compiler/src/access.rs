//! ROUTING.md §9: access controls are enforced, or nobody gets through. Each processor lists the
//! access-control fields its resources carry ([`Field`]: ingress-nginx's annotations and ConfigMap
//! keys, HTTPProxy's `authorization`, `jwtProviders`, IP policies and `clientValidation`, the
//! VirtualServer kinds' `policies`); [`Guard::judge`] weighs them against the resource's waiver
//! ([`WAIVER`]) and records `AccessControlNotEnforced` or `AccessControlWaived`; [`Guard::apply`]
//! then turns every rule a field that is not waived protects into a 403 naming the field. The rules
//! stay, so the resource keeps its hosts: no other resource inherits them.
//!
//! A field reaches either the rules of the resource that carries it ([`Reach::OwnRules`]), or every
//! rule its processor drafts on that resource's hosts ([`Reach::Host`]: a virtual host's
//! authorization covers the routes its includes bring in; an ingress-nginx `auth-tls-*` asks for a
//! client certificate on the whole server).
//!
//! Only rules that would reach a backend are turned: a redirect, a 404 or a 503 serves nothing of
//! the protected application.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use switchyard_table::{ActionSpec, DirectResponse};

use crate::model::Draft;
use crate::objects::ResourceKey;
use crate::status::{About, ConditionKind, Reason, ResourceStatus, Status, StatusBook};

/// The annotation by which a resource's owner accepts to lose named access-control fields:
/// `"<field>,<field>"`, each as the status names it (an ingress-nginx annotation may also be named
/// without its prefix).
pub const WAIVER: &str = "switchyard.io/serve-without-access-control";

/// One access-control field a resource carries.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Field {
    /// The field as its manifest writes it: `nginx.ingress.kubernetes.io/auth-url`,
    /// `spec.virtualhost.authorization`, `spec.routes[0].policies`, `configmap/global-auth-url`.
    pub name: String,
    /// Another name the waiver may give it (an annotation without its prefix).
    pub short: Option<String>,
    /// Which rules it protects.
    pub reach: Reach,
    /// What it asks for, for the status (`Policy default/allow-office`).
    pub detail: Option<String>,
    /// Whether this gateway enforces it (the rule's policy does): it denies nothing, and a waiver
    /// naming it opens nothing.
    pub enforced: bool,
}

/// Which rules a field protects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reach {
    /// The rules of the resource that carries it.
    OwnRules,
    /// Every rule its processor drafts on the hosts of that resource's rules (or of the rules it
    /// claims: an HTTPProxy root's includes).
    Host,
}

impl Field {
    /// A field that reaches `reach`, with nothing more to say.
    pub fn new(name: impl Into<String>, reach: Reach) -> Field {
        Field {
            name: name.into(),
            short: None,
            reach,
            detail: None,
            enforced: false,
        }
    }

    /// The same field, saying what it asks for.
    pub fn saying(mut self, detail: impl Into<String>) -> Field {
        self.detail = Some(detail.into());
        self
    }

    /// The same field, which the waiver may also name `short`.
    pub fn or_named(mut self, short: impl Into<String>) -> Field {
        self.short = Some(short.into());
        self
    }

    fn named_by(&self, word: &str) -> bool {
        self.name == word || self.short.as_deref() == Some(word)
    }

    fn described(&self) -> String {
        match &self.detail {
            Some(detail) => format!("{} ({detail})", self.name),
            None => self.name.clone(),
        }
    }
}

/// A value that asks for nothing: absent, null, empty or blank.
pub fn is_set(value: Option<&serde_json::Value>) -> bool {
    match value {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::String(s)) => !s.trim().is_empty(),
        Some(serde_json::Value::Array(items)) => !items.is_empty(),
        Some(serde_json::Value::Object(map)) => !map.is_empty(),
        Some(_) => true,
    }
}

/// The fields a resource carries that are not waived, by resource; what [`Guard::apply`] denies.
#[derive(Debug, Default)]
pub struct Guard {
    denied: BTreeMap<ResourceKey, Vec<Field>>,
}

impl Guard {
    /// Weighs the `fields` resource `key` carries against its waiver (read from `meta`), and records
    /// the outcome on its status: `AccessControlNotEnforced` (an error) for each field not waived,
    /// `AccessControlWaived` (a warning) for each waived one, and a note for a waiver that names a
    /// field the resource does not carry. `status` is the resource's status if it has none yet.
    pub fn judge(
        &mut self,
        key: &ResourceKey,
        meta: &ObjectMeta,
        fields: Vec<Field>,
        book: &mut StatusBook,
        status: Status,
    ) {
        let waived = waiver_of(meta);
        let kind = key.kind;
        let mut denied = Vec::new();
        let mut used = vec![false; waived.len()];
        for field in fields {
            let waiver = waived.iter().position(|w| field.named_by(w));
            if field.enforced {
                // Enforced: nothing to deny, and nothing for a waiver to open.
                if let Some(i) = waiver {
                    used[i] = true;
                    let message = format!(
                        "{WAIVER} names {}, which this gateway enforces: it stays enforced",
                        field.described()
                    );
                    book.add(key, status, ConditionKind::Info, Reason::AccessControlWaived, message);
                }
                continue;
            }
            let (why, message) = match waiver {
                Some(i) => {
                    used[i] = true;
                    let message = format!(
                        "{} is not enforced by this gateway, and {WAIVER} waives it: this {kind} is served WITHOUT it",
                        field.described()
                    );
                    ((ConditionKind::Warning, Reason::AccessControlWaived), message)
                }
                None => {
                    let reach = match field.reach {
                        Reach::OwnRules => format!("the rules of this {kind}"),
                        Reach::Host => format!("the rules of this {kind}'s hosts"),
                    };
                    let message = format!(
                        "{} is not enforced by this gateway: {reach} answer 403 until it is, or until the \
                         resource's owner names it in the annotation {WAIVER} (ROUTING.md §9)",
                        field.described(),
                    );
                    ((ConditionKind::Error, Reason::AccessControlNotEnforced), message)
                }
            };
            book.add_about(key, status, why, About::Field(field.name.clone()), message);
            if waiver.is_none() {
                denied.push(field);
            }
        }
        for (word, _) in waived.iter().zip(used).filter(|(_, used)| !used) {
            let message = format!("{WAIVER} names {word:?}, which this {kind} does not carry: it waives nothing");
            book.add(
                key,
                status,
                ConditionKind::Warning,
                Reason::AccessControlWaived,
                message,
            );
        }
        if !denied.is_empty() {
            self.denied.entry(key.clone()).or_default().extend(denied);
        }
    }

    /// Turns every rule a denied field protects into a 403 naming the fields: the rules of a
    /// resource with a field of [`Reach::OwnRules`], and every rule on the hosts of a resource
    /// with one of [`Reach::Host`] (as the rules' owner or their claimant).
    pub fn apply(&self, drafts: &mut [Draft]) {
        if self.denied.is_empty() {
            return;
        }
        let mut by_host: BTreeMap<Option<String>, BTreeSet<&Field>> = BTreeMap::new();
        for draft in drafts.iter() {
            for key in [&draft.owner, &draft.claimant] {
                let host_wide = (self.denied.get(key).into_iter().flatten()).filter(|f| f.reach == Reach::Host);
                for field in host_wide {
                    by_host.entry(draft.rule.host.clone()).or_default().insert(field);
                }
            }
        }
        for draft in drafts.iter_mut() {
            if !matches!(draft.rule.action, ActionSpec::Route(_)) {
                continue;
            }
            let mut fields: BTreeSet<&Field> = by_host.get(&draft.rule.host).cloned().unwrap_or_default();
            let own = self.denied.get(&draft.owner).into_iter().flatten();
            fields.extend(own.filter(|f| f.reach == Reach::OwnRules));
            if !fields.is_empty() {
                let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
                draft.rule.action = forbidden(&names);
            }
        }
    }
}

/// The 403 a rule answers while the access-control `fields` that protect it are not enforced.
pub fn forbidden(fields: &[&str]) -> ActionSpec {
    let verb = if fields.len() == 1 { "is" } else { "are" };
    ActionSpec::DirectResponse(DirectResponse {
        status: 403,
        body: Some(format!("{} {verb} not enforced by this gateway\n", fields.join(", "))),
        ..DirectResponse::default()
    })
}

/// ROUTING.md §9's part of the migration report: the resources whose rules answer 403 (blocking,
/// listed first), and those served without a field their owner waived, each with its fields, in
/// the report's order.
#[derive(Debug, Default, PartialEq, Eq, Serialize)]
pub struct AccessReport {
    /// The resources whose protected rules answer 403, with the fields not enforced.
    pub blocked: Vec<AccessEntry>,
    /// The resources served without fields their owners waived.
    pub waived: Vec<AccessEntry>,
}

/// One resource of an [`AccessReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccessEntry {
    /// `Kind namespace/name`.
    pub resource: String,
    /// The fields.
    pub fields: Vec<String>,
}

impl AccessReport {
    /// The report of `statuses`.
    pub fn of(statuses: &[ResourceStatus]) -> AccessReport {
        let mut report = AccessReport::default();
        for status in statuses {
            let fields = |reason: Reason| -> Vec<String> {
                (status.conditions.iter())
                    .filter(|c| c.reason == reason)
                    .filter_map(|c| match &c.about {
                        Some(About::Field(field)) => Some(field.clone()),
                        _ => None,
                    })
                    .collect()
            };
            let name = match status.namespace.is_empty() {
                true => format!("{} {}", status.kind, status.name),
                false => format!("{} {}/{}", status.kind, status.namespace, status.name),
            };
            let blocked = fields(Reason::AccessControlNotEnforced);
            if !blocked.is_empty() {
                report.blocked.push(AccessEntry {
                    resource: name.clone(),
                    fields: blocked,
                });
            }
            let waived = fields(Reason::AccessControlWaived);
            if !waived.is_empty() {
                report.waived.push(AccessEntry {
                    resource: name,
                    fields: waived,
                });
            }
        }
        report
    }

    /// The report as the summary's lines (nothing when no resource carries an access control).
    pub fn render(&self) -> String {
        let mut out = String::new();
        if !self.blocked.is_empty() {
            out.push_str(&format!(
                "  BLOCKING: {} resource(s) answer 403: they ask for access controls this gateway does not enforce \
                 (ROUTING.md §9); enforce them elsewhere and name the fields in {WAIVER} to serve them:\n",
                self.blocked.len()
            ));
            for entry in &self.blocked {
                out.push_str(&format!("    {}: {}\n", entry.resource, entry.fields.join(", ")));
            }
        }
        if !self.waived.is_empty() {
            out.push_str(&format!(
                "  served WITHOUT access controls their owners waived ({}):\n",
                self.waived.len()
            ));
            for entry in &self.waived {
                out.push_str(&format!("    {}: {}\n", entry.resource, entry.fields.join(", ")));
            }
        }
        out
    }
}

/// The fields the waiver annotation names, trimmed, in order, each once.
fn waiver_of(meta: &ObjectMeta) -> Vec<String> {
    let value = meta.annotations.as_ref().and_then(|a| a.get(WAIVER));
    let mut words: Vec<String> = Vec::new();
    for word in value.into_iter().flat_map(|v| v.split(',')).map(str::trim) {
        if !word.is_empty() && !words.iter().any(|w| w == word) {
            words.push(word.to_owned());
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use switchyard_table::{PathSpec, RouteAction, RuleSpec};

    use super::*;
    use crate::model::{Claiming, HostOrder};
    use crate::objects::{Age, Kind};

    fn key(name: &str) -> ResourceKey {
        ResourceKey {
            kind: Kind::HTTPProxy,
            namespace: "default".into(),
            name: name.into(),
        }
    }

    fn meta(waiver: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            annotations: waiver.map(|w| BTreeMap::from([(WAIVER.to_owned(), w.to_owned())])),
            ..ObjectMeta::default()
        }
    }

    fn draft(owner: &str, claimant: &str, host: &str, cluster: &str) -> Draft {
        let age = Arc::new(Age::of(Kind::HTTPProxy, &ObjectMeta::default()));
        Draft {
            owner: key(owner),
            age: age.clone(),
            position: 0,
            claimant: key(claimant),
            claimant_age: age,
            rule: RuleSpec {
                name: format!("{owner}#0"),
                host: Some(host.into()),
                path: PathSpec::Prefix("/".into()),
                conditions: Vec::new(),
                action: ActionSpec::Route(RouteAction::to(cluster.into())),
                hsts: None,
                policy: None,
            },
            order: HostOrder::General,
            claiming: Claiming::Contends,
        }
    }

    fn field(name: &str) -> About {
        About::Field(name.to_owned())
    }

    fn status_of(drafts: &[Draft]) -> Vec<u16> {
        drafts
            .iter()
            .map(|d| match &d.rule.action {
                ActionSpec::DirectResponse(r) => r.status,
                _ => 200,
            })
            .collect()
    }

    fn reasons(book: StatusBook) -> Vec<(Reason, Option<About>)> {
        let statuses = book.finish();
        statuses
            .iter()
            .flat_map(|s| s.conditions.iter().map(|c| (c.reason, c.about.clone())))
            .collect()
    }

    #[test]
    fn a_field_not_waived_turns_its_resources_routes_into_403s_naming_it() {
        let (mut guard, mut book) = (Guard::default(), StatusBook::default());
        let field = Field::new("spec.routes[0].ipAllowPolicy", Reach::OwnRules);
        guard.judge(&key("a"), &meta(None), vec![field], &mut book, Status::Valid);
        let mut drafts = vec![draft("a", "a", "a.example", "c1"), draft("b", "b", "b.example", "c2")];
        guard.apply(&mut drafts);
        assert_eq!(status_of(&drafts), [403, 200]);
        let ActionSpec::DirectResponse(reply) = &drafts[0].rule.action else {
            unreachable!()
        };
        assert_eq!(
            reply.body.as_deref(),
            Some("spec.routes[0].ipAllowPolicy is not enforced by this gateway\n")
        );
        assert_eq!(
            reasons(book),
            [(
                Reason::AccessControlNotEnforced,
                Some(About::Field("spec.routes[0].ipAllowPolicy".into()))
            )]
        );
    }

    #[test]
    fn a_host_wide_field_protects_the_rules_it_claims_and_others_on_its_host() {
        let (mut guard, mut book) = (Guard::default(), StatusBook::default());
        let field = Field::new("spec.virtualhost.authorization", Reach::Host);
        guard.judge(&key("root"), &meta(None), vec![field], &mut book, Status::Valid);
        // A child's rule claimed by the root, and a rule of another resource on another host.
        let mut drafts = vec![
            draft("child", "root", "a.example", "c1"),
            draft("other", "other", "b.example", "c2"),
        ];
        guard.apply(&mut drafts);
        assert_eq!(status_of(&drafts), [403, 200]);
    }

    #[test]
    fn the_waiver_serves_exactly_the_fields_it_names() {
        let (mut guard, mut book) = (Guard::default(), StatusBook::default());
        let fields = vec![
            Field::new("nginx.ingress.kubernetes.io/auth-url", Reach::OwnRules).or_named("auth-url"),
            Field::new("nginx.ingress.kubernetes.io/satisfy", Reach::OwnRules).or_named("satisfy"),
        ];
        guard.judge(
            &key("a"),
            &meta(Some(" auth-url ,typo")),
            fields,
            &mut book,
            Status::Valid,
        );
        let mut drafts = vec![draft("a", "a", "a.example", "c1")];
        guard.apply(&mut drafts);
        let ActionSpec::DirectResponse(reply) = &drafts[0].rule.action else {
            unreachable!()
        };
        assert_eq!(
            reply.body.as_deref(),
            Some("nginx.ingress.kubernetes.io/satisfy is not enforced by this gateway\n")
        );
        let mut got = reasons(book);
        got.sort();
        assert_eq!(
            got,
            [
                (
                    Reason::AccessControlNotEnforced,
                    Some(field("nginx.ingress.kubernetes.io/satisfy"))
                ),
                (Reason::AccessControlWaived, None),
                (
                    Reason::AccessControlWaived,
                    Some(field("nginx.ingress.kubernetes.io/auth-url"))
                ),
            ]
        );
    }

    #[test]
    fn every_field_waived_serves_the_resource() {
        let (mut guard, mut book) = (Guard::default(), StatusBook::default());
        let field = Field::new("spec.policies", Reach::Host);
        guard.judge(
            &key("a"),
            &meta(Some("spec.policies")),
            vec![field],
            &mut book,
            Status::Valid,
        );
        let mut drafts = vec![draft("a", "a", "a.example", "c1")];
        guard.apply(&mut drafts);
        assert_eq!(status_of(&drafts), [200]);
    }

    #[test]
    fn a_local_reply_is_left_as_it_is() {
        let (mut guard, mut book) = (Guard::default(), StatusBook::default());
        guard.judge(
            &key("a"),
            &meta(None),
            vec![Field::new("f", Reach::OwnRules)],
            &mut book,
            Status::Valid,
        );
        let mut drafts = vec![draft("a", "a", "a.example", "c1")];
        drafts[0].rule.action = crate::services::service_unavailable();
        guard.apply(&mut drafts);
        assert_eq!(status_of(&drafts), [503]);
    }

    #[test]
    fn only_a_value_that_asks_for_something_is_set() {
        use serde_json::json;
        for unset in [
            None,
            Some(json!(null)),
            Some(json!("  ")),
            Some(json!([])),
            Some(json!({})),
        ] {
            assert!(!is_set(unset.as_ref()), "{unset:?}");
        }
        for set in [json!(false), json!([{"cidr": "10.0.0.0/8"}]), json!({"disabled": true})] {
            assert!(is_set(Some(&set)), "{set}");
        }
    }
}
