//! Kubernetes mode's status write-back, after every compilation, on resources our class rules
//! accept and nothing else:
//!
//! - HTTPProxy `.status`: `currentStatus` (valid, invalid, orphaned), `description` and one
//!   Contour-style `Valid` condition with the errors and warnings (each sub-condition with the
//!   `status` Contour's schema requires), plus `loadBalancer` from `--publish-address`.
//! - Ingress events (events.k8s.io/v1): `Rejected`, `HostTaken`, `PathTaken`, `PathLooksLikeRegex`,
//!   and on ingress-nginx's Ingresses (ROUTING.md §7) `AnnotationNotHonored`, `AnnotationInvalid`,
//!   `PathRegexUnsupported`, `AliasTaken`, `AliasWildcardDepth` and the canaries'
//!   `CanaryWithoutMain`, `CanaryTaken`, `CanaryIsMain`, and on every Ingress ROUTING.md §9's
//!   `AccessControlNotEnforced` and `AccessControlWaived` (the migration report, in `kubectl describe
//!   ingress`), one per distinct message, written by us under a name derived from the Ingress's
//!   uid, the reason and the note, so a restart finds them (`409 AlreadyExists`) instead of adding
//!   copies.
//! - Ingress `.status.loadBalancer`: the `--publish-address` list on every Ingress that routes.
//! - VirtualServer and VirtualServerRoute `.status` and events as NGINX writes them (`nginx.rs`).
//!
//! Which resources are ours is the compiler's verdict, never decided again here: a resource whose
//! status is not `Ignored`. An Ingress of ingress-nginx's class is ours only with
//! `--ingress-nginx-class` and when ROUTING.md §7.1 says it is ingress-nginx's (the compiler then
//! accepts it with `ClassMatches`); without the flag §1 ignores it (its IngressClass names
//! another controller), so nothing is written on it.
//!
//! Status is written with the field manager `switchyard`, so what we wrote is recognisable after a
//! restart: a resource that is no longer ours (another class) or an Ingress that no longer routes
//! has only our fields removed, whether this process or an earlier one wrote them (its
//! `managedFields` name `switchyard` on the status subresource). A resource of another class is
//! never written otherwise: its status belongs to its controller.
//!
//! Only changes are written: what was last written (or announced) is remembered, so a steady state
//! sends nothing. A failed write is counted, logged, and retried on the next compilation.
//!
//! With `--leader-elect` only the leader writes: the [`Leader`] gate is checked before each
//! resource's writes, so a replica that loses the Lease stops in the middle of a batch.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource};
use serde_json::{json, Value};
use tracing::warn;

mod nginx;

use crate::watch::cluster::FIELD_MANAGER;
use crate::watch::lead::leader::Leader;
use crate::watch::state::Shared;
use switchyard_compiler::objects::{HTTPProxy, Kind, Objects};
use switchyard_compiler::order::fnv1a;
use switchyard_compiler::status::{ConditionKind, Reason, ResourceStatus, Status};

/// The event reasons Switchyard publishes on Ingresses (Warning events), besides `Rejected`.
pub fn is_ingress_event(reason: Reason) -> bool {
    matches!(
        reason,
        Reason::HostTaken
            | Reason::PathTaken
            | Reason::PathLooksLikeRegex
            | Reason::AnnotationNotHonored
            | Reason::AnnotationInvalid
            | Reason::PathRegexUnsupported
            | Reason::AliasTaken
            | Reason::AliasWildcardDepth
            | Reason::CanaryWithoutMain
            | Reason::CanaryTaken
            | Reason::CanaryIsMain
            | Reason::AccessControlNotEnforced
            | Reason::AccessControlWaived
            | Reason::TLSSecretNotValid
            | Reason::TLSSecretIgnored
            | Reason::TLSHostWithoutRule
            | Reason::TLSDelegationNotPermitted
            | Reason::CertificateExpired
            | Reason::CertificateExpiresSoon
            | Reason::CertificateHostMismatch
    )
}

/// A namespaced object: (namespace, name).
type Key = (String, String);

/// Writes status back, remembering what it wrote.
pub struct StatusWriter {
    client: Client,
    controller: String,
    instance: String,
    publish: Vec<String>,
    state: Shared,
    /// What was last written to each HTTPProxy's status (and, keyed `(namespace, "Kind/name")`, to
    /// each VirtualServer's and VirtualServerRoute's); `Null` once released.
    proxies: BTreeMap<Key, Value>,
    balancers: BTreeMap<Key, Value>,
    /// Events known to exist: (namespace, event name).
    events: BTreeSet<Key>,
    /// Whether this replica may write now.
    leader: Leader,
}

/// Whether `switchyard` wrote some of this object's status (its `managedFields` say so).
pub fn wrote_status(meta: &ObjectMeta) -> bool {
    meta.managed_fields
        .iter()
        .flatten()
        .any(|m| m.manager.as_deref() == Some(FIELD_MANAGER) && m.subresource.as_deref() == Some("status"))
}

/// The merge patch that removes what [`proxy_status`] writes.
fn proxy_status_removed() -> Value {
    json!({"currentStatus": null, "description": null, "conditions": null, "loadBalancer": null})
}

/// `.status` of an HTTPProxy for its status entry (without timestamps, so that it compares).
pub fn proxy_status(status: &ResourceStatus, publish: &[String]) -> Value {
    let errors: Vec<Value> = conditions(status, ConditionKind::Error);
    let warnings: Vec<Value> = conditions(status, ConditionKind::Warning);
    let valid = status.status == Status::Valid;
    let description = match status.status {
        Status::Valid => "Valid HTTPProxy".to_owned(),
        Status::Orphaned => "this HTTPProxy is not part of a delegation chain from a root HTTPProxy".to_owned(),
        _ => status
            .conditions
            .iter()
            .find(|c| c.kind == ConditionKind::Error)
            .map_or_else(|| status.status.as_str().to_owned(), |c| c.message.clone()),
    };
    let reason = match status.status {
        Status::Valid => Reason::Valid.to_string(),
        Status::Orphaned => Reason::Orphaned.to_string(),
        _ => status
            .conditions
            .iter()
            .find(|c| c.kind == ConditionKind::Error)
            .map_or_else(|| "Invalid".to_owned(), |c| c.reason.to_string()),
    };
    let mut condition = json!({
        "type": "Valid",
        "status": if valid { "True" } else { "False" },
        "reason": reason,
        "message": description,
    });
    if !errors.is_empty() {
        condition["errors"] = json!(errors);
    }
    if !warnings.is_empty() {
        condition["warnings"] = json!(warnings);
    }
    let mut out = json!({
        "currentStatus": status.status.as_str(),
        "description": description,
        "conditions": [condition],
    });
    if !publish.is_empty() {
        out["loadBalancer"] = load_balancer(publish);
    }
    out
}

fn conditions(status: &ResourceStatus, kind: ConditionKind) -> Vec<Value> {
    status
        .conditions
        .iter()
        .filter(|c| c.kind == kind)
        .map(|c| {
            json!({
                "type": if kind == ConditionKind::Error { "ErrorDetail" } else { "WarningDetail" },
                // Contour's CRD requires it in every sub-condition (a patch without it is refused).
                "status": "True",
                "reason": c.reason,
                "message": c.message,
            })
        })
        .collect()
}

/// `.status.loadBalancer` for `--publish-address`: IPs as `ip`, anything else as `hostname`.
pub fn load_balancer(publish: &[String]) -> Value {
    let entries: Vec<Value> = publish
        .iter()
        .map(|a| {
            if a.parse::<std::net::IpAddr>().is_ok() {
                json!({"ip": a})
            } else {
                json!({"hostname": a})
            }
        })
        .collect();
    json!({ "ingress": entries })
}

/// The events an Ingress's status calls for: (reason, note), all of type Warning.
pub fn ingress_events(status: &ResourceStatus) -> Vec<(Reason, String)> {
    let mut out = Vec::new();
    if status.status == Status::Rejected {
        let why: Vec<&str> = status
            .conditions
            .iter()
            .filter(|c| c.kind == ConditionKind::Error)
            .map(|c| c.message.as_str())
            .collect();
        out.push((Reason::Rejected, format!("routes nothing: {}", why.join("; "))));
    }
    for c in &status.conditions {
        if is_ingress_event(c.reason) {
            out.push((c.reason, c.message.clone()));
        }
    }
    for (_, note) in &mut out {
        truncate_note(note);
    }
    out
}

/// The name of the event for (reason, note) on an object: the same across restarts, distinct per
/// message (a DNS subdomain of at most 253 characters).
pub fn event_name(object: &ObjectMeta, reason: &str, note: &str) -> String {
    let uid = object.uid.as_deref().unwrap_or_default();
    let hash = fnv1a(format!("{uid}\n{reason}\n{note}").as_bytes());
    let name = object.name.as_deref().unwrap_or_default();
    let mut end = name.len().min(200);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}.{hash:016x}", &name[..end])
}

impl StatusWriter {
    /// A writer reporting events as `controller` and publishing `publish` (`--publish-address`).
    pub fn new(client: Client, controller: &str, publish: &[String], state: Shared) -> StatusWriter {
        StatusWriter {
            client,
            controller: controller.to_owned(),
            instance: std::env::var("POD_NAME").unwrap_or_else(|_| FIELD_MANAGER.to_owned()),
            publish: publish.to_vec(),
            state,
            proxies: BTreeMap::new(),
            balancers: BTreeMap::new(),
            events: BTreeSet::new(),
            leader: Leader::always(),
        }
    }

    /// The same writer, writing only while `leader` says so.
    pub fn led_by(self, leader: Leader) -> StatusWriter {
        StatusWriter { leader, ..self }
    }

    /// Forgets what it wrote (another replica led meanwhile): the next call writes everything.
    pub fn forget(&mut self) {
        self.proxies.clear();
        self.balancers.clear();
        self.events.clear();
    }

    /// Writes what changed since the last call.
    pub async fn write(&mut self, objects: &Objects, statuses: &[ResourceStatus]) {
        fn index<K: Resource>(all: &[Arc<K>]) -> BTreeMap<(&str, &str), &K> {
            all.iter()
                .map(|o| {
                    let o: &K = o;
                    let meta = o.meta();
                    let namespace = meta.namespace.as_deref().unwrap_or("default");
                    ((namespace, meta.name.as_deref().unwrap_or_default()), o)
                })
                .collect()
        }
        let (proxies, ingresses) = (index(&objects.http_proxies), index(&objects.ingresses));
        let servers = index(&objects.virtual_servers);
        let routes = index(&objects.virtual_server_routes);
        let transport = index(&objects.transport_servers);
        for status in statuses {
            if !self.leader.is_leader() {
                return;
            }
            let key = (status.namespace.clone(), status.name.clone());
            let at = (status.namespace.as_str(), status.name.as_str());
            match status.kind {
                // An HTTPProxy that does not decode has a status but no object: it is written.
                Kind::HTTPProxy => match proxies.get(&at) {
                    Some(proxy) if status.status == Status::Ignored => self.release_proxy(key, proxy).await,
                    _ => self.write_proxy(key, status).await,
                },
                Kind::Ingress => {
                    let Some(ingress) = ingresses.get(&at) else { continue };
                    if status.status != Status::Ignored {
                        self.announce(ingress, status).await;
                    }
                    self.write_balancer(key, ingress, status).await;
                }
                Kind::VirtualServer => self.write_nginx(status, servers.get(&at).copied()).await,
                Kind::VirtualServerRoute => self.write_nginx(status, routes.get(&at).copied()).await,
                Kind::TransportServer => self.write_nginx(status, transport.get(&at).copied()).await,
                // No status written: IngressClass's has no subresource we write; Services,
                // GlobalConfigurations, Secrets and Policies have no status in the report.
                Kind::IngressClass
                | Kind::Service
                | Kind::GlobalConfiguration
                | Kind::Secret
                | Kind::EndpointSlice
                | Kind::Policy => {}
            }
        }
    }

    fn count(&self, result: Result<(), String>, what: &str) -> bool {
        let mut state = self.state.lock();
        match result {
            Ok(()) => {
                state.status_writes.ok += 1;
                true
            }
            Err(e) => {
                state.status_writes.failed += 1;
                warn!("status write failed ({what}), retried on the next change: {e}");
                false
            }
        }
    }

    fn params() -> PatchParams {
        PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        }
    }

    async fn patch_proxy_status(&self, key: &Key, status: Value) -> bool {
        let api: Api<HTTPProxy> = Api::namespaced(self.client.clone(), &key.0);
        let result = api
            .patch_status(&key.1, &Self::params(), &Patch::Merge(json!({ "status": status })))
            .await;
        self.count(
            result.map(|_| ()).map_err(|e| e.to_string()),
            &format!("HTTPProxy {}/{}", key.0, key.1),
        )
    }

    async fn write_proxy(&mut self, key: Key, status: &ResourceStatus) {
        let body = proxy_status(status, &self.publish);
        if self.proxies.get(&key) == Some(&body) {
            return;
        }
        let mut sent = body.clone();
        let now = k8s_openapi::jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        if let Some(condition) = sent["conditions"].get_mut(0) {
            condition["lastTransitionTime"] = json!(now);
        }
        if self.patch_proxy_status(&key, sent).await {
            self.proxies.insert(key, body);
        }
    }

    /// An HTTPProxy that is not ours: removes what we wrote (now or before a restart), else nothing.
    async fn release_proxy(&mut self, key: Key, proxy: &HTTPProxy) {
        let ours = self.proxies.contains_key(&key) || wrote_status(&proxy.metadata);
        if !ours || self.proxies.get(&key) == Some(&Value::Null) {
            return;
        }
        if self.patch_proxy_status(&key, proxy_status_removed()).await {
            // Null: released; until its managedFields forget us, nothing is sent again.
            self.proxies.insert(key, Value::Null);
        }
    }

    async fn write_balancer(&mut self, key: Key, ingress: &Ingress, status: &ResourceStatus) {
        let published = ingress
            .status
            .as_ref()
            .and_then(|s| s.load_balancer.as_ref())
            .and_then(|lb| lb.ingress.as_ref())
            .is_some_and(|i| !i.is_empty());
        let body = match status.status {
            Status::Accepted if !self.publish.is_empty() => load_balancer(&self.publish),
            // Emptied only where we published (this process, or an earlier one: managedFields):
            // other Ingresses belong to other controllers.
            _ if self.balancers.contains_key(&key) || (published && wrote_status(&ingress.metadata)) => json!({}),
            _ => return,
        };
        if self.balancers.get(&key) == Some(&body) {
            return;
        }
        let api: Api<Ingress> = Api::namespaced(self.client.clone(), &key.0);
        // A merge patch merges `{}` into nothing: emptying takes an explicit null.
        let sent = if body == json!({}) {
            json!({"ingress": null})
        } else {
            body.clone()
        };
        let patch = json!({ "status": { "loadBalancer": sent } });
        let result = api.patch_status(&key.1, &Self::params(), &Patch::Merge(patch)).await;
        if self.count(
            result.map(|_| ()).map_err(|e| e.to_string()),
            &format!("Ingress {}/{} loadBalancer", key.0, key.1),
        ) {
            self.balancers.insert(key, body);
        }
    }

    /// One event per distinct (reason, note), created under a deterministic name: an event that
    /// exists already (written before a restart) answers 409 and is left as it is.
    async fn announce(&mut self, ingress: &Ingress, status: &ResourceStatus) {
        for (reason, note) in ingress_events(status) {
            self.record_event(
                ingress,
                &status.namespace,
                &status.name,
                "Warning",
                reason.as_str(),
                note,
            )
            .await;
        }
    }

    /// Creates the event (type, reason, note) about `object`, once (see [`event_name`]).
    async fn record_event<K: Resource<DynamicType = ()>>(
        &mut self,
        object: &K,
        namespace: &str,
        name: &str,
        type_: &str,
        reason: &str,
        mut note: String,
    ) {
        truncate_note(&mut note);
        let event_name = event_name(object.meta(), reason, &note);
        let key = (namespace.to_owned(), event_name.clone());
        if self.events.contains(&key) {
            return;
        }
        let event = Event {
            metadata: ObjectMeta {
                name: Some(event_name),
                namespace: Some(namespace.to_owned()),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            type_: Some(type_.to_owned()),
            reason: Some(reason.to_owned()),
            note: Some(note),
            action: Some("Route".to_owned()),
            regarding: Some(object.object_ref(&())),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Event::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        let result = match api.create(&PostParams::default(), &event).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
            Err(e) => Err(e.to_string()),
        };
        let what = format!("event {reason} on {} {namespace}/{name}", K::kind(&()));
        if self.count(result, &what) {
            self.events.insert(key);
        }
    }
}

/// The API's limit for an event note: 1,000 bytes.
fn truncate_note(note: &mut String) {
    if note.len() > 1000 {
        let mut end = 1000;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_compiler::status::Condition;

    fn status(kind: Kind, status: Status, conditions: &[(ConditionKind, Reason, &str)]) -> ResourceStatus {
        ResourceStatus {
            nginx: None,
            kind,
            namespace: "shop".into(),
            name: "web".into(),
            status,
            conditions: conditions
                .iter()
                .map(|(k, r, m)| Condition {
                    kind: *k,
                    reason: *r,
                    message: (*m).into(),
                    about: None,
                })
                .collect(),
        }
    }

    #[test]
    fn an_invalid_proxy_says_why_in_contours_shape_with_the_status_its_schema_requires() {
        let s = status(
            Kind::HTTPProxy,
            Status::Invalid,
            &[(
                ConditionKind::Error,
                Reason::IncludeNotFound,
                "include shop/missing not found",
            )],
        );
        let body = proxy_status(&s, &[]);
        assert_eq!(body["currentStatus"], "invalid");
        assert_eq!(body["description"], "include shop/missing not found");
        assert_eq!(body["conditions"][0]["status"], "False");
        assert_eq!(body["conditions"][0]["reason"], "IncludeNotFound");
        assert_eq!(body["conditions"][0]["errors"][0]["reason"], "IncludeNotFound");
        assert_eq!(body["conditions"][0]["errors"][0]["status"], "True");
        assert!(body.get("loadBalancer").is_none());
    }

    #[test]
    fn a_valid_proxy_is_valid_with_its_published_address() {
        let body = proxy_status(
            &status(Kind::HTTPProxy, Status::Valid, &[]),
            &["203.0.113.7".into(), "lb.example".into()],
        );
        assert_eq!(body["currentStatus"], "valid");
        assert_eq!(body["conditions"][0]["status"], "True");
        assert_eq!(
            body["loadBalancer"],
            json!({"ingress": [{"ip": "203.0.113.7"}, {"hostname": "lb.example"}]})
        );
    }

    #[test]
    fn a_rejected_ingress_gets_rejected_and_host_taken_events() {
        let s = status(
            Kind::Ingress,
            Status::Rejected,
            &[(
                ConditionKind::Error,
                Reason::HostTaken,
                "host a.example belongs to Ingress shop/old",
            )],
        );
        let events = ingress_events(&s);
        assert_eq!(events[0].0, Reason::Rejected);
        assert!(events[0].1.contains("host a.example belongs to"));
        assert_eq!(
            events[1],
            (
                Reason::HostTaken,
                "host a.example belongs to Ingress shop/old".to_owned()
            )
        );
    }

    #[test]
    fn an_ingress_nginx_ingress_gets_one_event_per_annotation_not_honoured() {
        let s = status(
            Kind::Ingress,
            Status::Accepted,
            &[
                (
                    ConditionKind::Info,
                    Reason::ClassMatches,
                    "ours, served as ingress-nginx served it",
                ),
                (
                    ConditionKind::Warning,
                    Reason::AnnotationNotHonored,
                    "a is not honoured",
                ),
                (
                    ConditionKind::Warning,
                    Reason::AnnotationNotHonored,
                    "b is not honoured",
                ),
                (ConditionKind::Info, Reason::RegexMode, "host h is in regex mode"),
            ],
        );
        let events: Vec<Reason> = ingress_events(&s).into_iter().map(|(r, _)| r).collect();
        assert_eq!(events, [Reason::AnnotationNotHonored, Reason::AnnotationNotHonored]);
    }

    #[test]
    fn an_accepted_ingress_without_problems_gets_no_event() {
        assert!(ingress_events(&status(
            Kind::Ingress,
            Status::Accepted,
            &[(ConditionKind::Info, Reason::ClassMatches, "ok")]
        ))
        .is_empty());
    }
}
