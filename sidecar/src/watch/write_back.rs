//! Kubernetes mode's status write-back, after every compilation:
//!
//! - HTTPProxy `.status`: `currentStatus` (valid, invalid, orphaned), `description` and one
//!   Contour-style `Valid` condition with the errors and warnings (merge patch of the status
//!   subresource), plus `loadBalancer` from `--publish-address`.
//! - Ingress events (events.k8s.io/v1): `Rejected`, `HostTaken`, `PathTaken`, `IgnoredByClass`.
//! - Ingress `.status.loadBalancer`: the `--publish-address` list on every Ingress that routes;
//!   emptied again on an Ingress that stops routing after we wrote it.
//!
//! Only changes are written: what was last written (or announced) is remembered, so a steady state
//! sends nothing. A failed write is counted, logged, and retried on the next compilation.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Api, Client, Resource};
use serde_json::{json, Value};
use tracing::warn;

use crate::objects::{HTTPProxy, Objects};
use crate::status::{ResourceStatus, Status};
use crate::watch::kubernetes::Settings;
use crate::watch::state::Shared;

/// The event reasons Switchyard publishes on Ingresses.
pub const INGRESS_EVENT_REASONS: [&str; 4] = ["Rejected", "HostTaken", "PathTaken", "IgnoredByClass"];

/// Writes status back, remembering what it wrote.
pub struct StatusWriter {
    client: Client,
    recorder: Recorder,
    publish: Vec<String>,
    state: Shared,
    proxies: BTreeMap<(String, String), Value>,
    balancers: BTreeMap<(String, String), Value>,
    events: BTreeSet<(String, String, String, String)>,
}

/// `.status` of an HTTPProxy for its status entry (without timestamps, so that it compares).
pub fn proxy_status(status: &ResourceStatus, publish: &[String]) -> Value {
    let errors: Vec<Value> = conditions(status, "Error");
    let warnings: Vec<Value> = conditions(status, "Warning");
    let valid = status.status == Status::Valid;
    let description = match status.status {
        Status::Valid => "Valid HTTPProxy".to_owned(),
        Status::Orphaned => "this HTTPProxy is not part of a delegation chain from a root HTTPProxy".to_owned(),
        _ => status
            .conditions
            .iter()
            .find(|c| c.kind == "Error")
            .map_or_else(|| status.status.as_str().to_owned(), |c| c.message.clone()),
    };
    let reason = match status.status {
        Status::Valid => "Valid".to_owned(),
        Status::Orphaned => "Orphaned".to_owned(),
        _ => status
            .conditions
            .iter()
            .find(|c| c.kind == "Error")
            .map_or_else(|| "Invalid".to_owned(), |c| c.reason.clone()),
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

fn conditions(status: &ResourceStatus, kind: &str) -> Vec<Value> {
    status
        .conditions
        .iter()
        .filter(|c| c.kind == kind)
        .map(|c| json!({"type": if kind == "Error" { "ErrorDetail" } else { "WarningDetail" }, "reason": c.reason, "message": c.message}))
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

/// The events an Ingress's status calls for: (type, reason, note).
pub fn ingress_events(status: &ResourceStatus) -> Vec<(EventType, String, String)> {
    let mut out = Vec::new();
    if status.status == Status::Rejected {
        let why: Vec<&str> = status
            .conditions
            .iter()
            .filter(|c| c.kind == "Error")
            .map(|c| c.message.as_str())
            .collect();
        out.push((
            EventType::Warning,
            "Rejected".to_owned(),
            format!("routes nothing: {}", why.join("; ")),
        ));
    }
    for c in &status.conditions {
        if INGRESS_EVENT_REASONS[1..].contains(&c.reason.as_str()) {
            let kind = if c.reason == "IgnoredByClass" {
                EventType::Normal
            } else {
                EventType::Warning
            };
            out.push((kind, c.reason.clone(), c.message.clone()));
        }
    }
    for (_, _, note) in &mut out {
        // The API's limit for an event note.
        if note.len() > 1000 {
            let mut end = 1000;
            while !note.is_char_boundary(end) {
                end -= 1;
            }
            note.truncate(end);
        }
    }
    out
}

impl StatusWriter {
    /// A writer for `settings`.
    pub fn new(client: Client, settings: &Settings, state: Shared) -> StatusWriter {
        let reporter = Reporter {
            controller: settings.controller_name.clone(),
            instance: std::env::var("POD_NAME").ok(),
        };
        StatusWriter {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            publish: settings.publish_addresses.clone(),
            state,
            proxies: BTreeMap::new(),
            balancers: BTreeMap::new(),
            events: BTreeSet::new(),
        }
    }

    /// Writes what changed since the last call.
    pub async fn write(&mut self, objects: &Objects, statuses: &[ResourceStatus]) {
        for status in statuses {
            let key = (status.namespace.clone(), status.name.clone());
            match status.kind {
                "HTTPProxy" => self.write_proxy(key, status).await,
                "Ingress" => {
                    let found = objects.ingresses.iter().find(|i| {
                        i.metadata.name.as_deref() == Some(&status.name)
                            && i.metadata.namespace.as_deref().unwrap_or("default") == status.namespace
                    });
                    if let Some(ingress) = found {
                        self.announce(ingress, status).await;
                        self.write_balancer(key, status).await;
                    }
                }
                _ => {}
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

    async fn write_proxy(&mut self, key: (String, String), status: &ResourceStatus) {
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
        let api: Api<HTTPProxy> = Api::namespaced(self.client.clone(), &key.0);
        let result = api
            .patch_status(
                &key.1,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": sent })),
            )
            .await;
        if self.count(
            result.map(|_| ()).map_err(|e| e.to_string()),
            &format!("HTTPProxy {}/{}", key.0, key.1),
        ) {
            self.proxies.insert(key, body);
        }
    }

    async fn write_balancer(&mut self, key: (String, String), status: &ResourceStatus) {
        if self.publish.is_empty() {
            return;
        }
        let body = match status.status {
            Status::Accepted => load_balancer(&self.publish),
            // Only an Ingress we published before is emptied: others belong to other controllers.
            _ if self.balancers.contains_key(&key) => json!({}),
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
        let result = api
            .patch_status(&key.1, &PatchParams::default(), &Patch::Merge(patch))
            .await;
        if self.count(
            result.map(|_| ()).map_err(|e| e.to_string()),
            &format!("Ingress {}/{} loadBalancer", key.0, key.1),
        ) {
            self.balancers.insert(key, body);
        }
    }

    async fn announce(&mut self, ingress: &Ingress, status: &ResourceStatus) {
        for (kind, reason, note) in ingress_events(status) {
            let key = (
                status.namespace.clone(),
                status.name.clone(),
                reason.clone(),
                note.clone(),
            );
            if self.events.contains(&key) {
                continue;
            }
            let event = Event {
                type_: kind,
                reason: reason.clone(),
                note: Some(note),
                action: "Route".to_owned(),
                secondary: None,
            };
            let result = self.recorder.publish(&event, &ingress.object_ref(&())).await;
            if self.count(
                result.map_err(|e| e.to_string()),
                &format!("event {reason} on Ingress {}/{}", status.namespace, status.name),
            ) {
                self.events.insert(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Condition;

    fn status(kind: &'static str, status: Status, conditions: &[(&str, &str, &str)]) -> ResourceStatus {
        ResourceStatus {
            kind,
            namespace: "shop".into(),
            name: "web".into(),
            status,
            conditions: conditions
                .iter()
                .map(|(k, r, m)| Condition {
                    kind: (*k).into(),
                    reason: (*r).into(),
                    message: (*m).into(),
                })
                .collect(),
        }
    }

    #[test]
    fn an_invalid_proxy_says_why_in_contours_shape() {
        let s = status(
            "HTTPProxy",
            Status::Invalid,
            &[("Error", "IncludeNotFound", "include shop/missing not found")],
        );
        let body = proxy_status(&s, &[]);
        assert_eq!(body["currentStatus"], "invalid");
        assert_eq!(body["description"], "include shop/missing not found");
        assert_eq!(body["conditions"][0]["status"], "False");
        assert_eq!(body["conditions"][0]["reason"], "IncludeNotFound");
        assert_eq!(body["conditions"][0]["errors"][0]["reason"], "IncludeNotFound");
        assert!(body.get("loadBalancer").is_none());
    }

    #[test]
    fn a_valid_proxy_is_valid_with_its_published_address() {
        let body = proxy_status(
            &status("HTTPProxy", Status::Valid, &[]),
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
            "Ingress",
            Status::Rejected,
            &[("Error", "HostTaken", "host a.example belongs to Ingress shop/old")],
        );
        let events: Vec<(String, String)> = ingress_events(&s).into_iter().map(|(_, r, n)| (r, n)).collect();
        assert_eq!(events[0].0, "Rejected");
        assert!(events[0].1.contains("host a.example belongs to"));
        assert_eq!(
            events[1],
            (
                "HostTaken".to_owned(),
                "host a.example belongs to Ingress shop/old".to_owned()
            )
        );
    }

    #[test]
    fn an_accepted_ingress_without_problems_gets_no_event() {
        assert!(ingress_events(&status("Ingress", Status::Accepted, &[("Info", "ClassMatches", "ok")])).is_empty());
    }
}
