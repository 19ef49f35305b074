//! Following the Istio objects we write (`--wasmplugin`, `--envoyfilter`, and the Gateway and
//! VirtualService of `--istio-gateway`): one watcher per object (a `metadata.name` field selector,
//! which RBAC authorizes by `resourceNames`). The object is applied again, with what its sink last
//! pushed, when it is deleted, missing after a relist, or changed by someone else so that a field we
//! own no longer has our value (a re-creation from `deploy/istio/` is such a change: its table is
//! empty), or given pluginConfig keys beside ours (the filter would read them as part of the table).
//! Our own applies are recognised by the resourceVersion they returned; server defaults added to our
//! fields do not count as changes.
//!
//! A follower outlives an API server outage as the sources do ([`outliving`]): it says once that it
//! cannot follow, retries, and once the API answers again follows from a fresh list, so an object
//! deleted or re-created during or after the outage is repaired.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use serde_json::Value;
use tokio::sync::mpsc;
use tracing::{info, warn};

use crate::watch::cluster::outliving;
use crate::watch::state::Shared;

/// What we last applied to an object: our fields, and the resourceVersion the API gave it.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    /// The object we applied (only the fields we own).
    pub object: Value,
    /// Its resourceVersion after our apply.
    pub resource_version: String,
}

/// The keys of the object `live` that `ours` (what we applied) does not have; none when either is
/// not an object (an EnvoyFilter has no pluginConfig).
pub fn foreign_keys(live: &Value, ours: &Value) -> Vec<String> {
    match (live.as_object(), ours.as_object()) {
        (Some(live), Some(ours)) => live.keys().filter(|k| !ours.contains_key(*k)).cloned().collect(),
        _ => Vec::new(),
    }
}

/// Where a sink keeps what it last applied to one object (shared with the object's follower).
pub type AppliedSlot = Arc<Mutex<Option<Applied>>>;

/// Records what a sink applied to an object, and the resourceVersion the API gave it.
pub fn record_applied(slot: &AppliedSlot, object: Value, resource_version: Option<String>) {
    *slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Applied {
        object,
        resource_version: resource_version.unwrap_or_default(),
    });
}

/// Records that a sink deleted an object on purpose: its follower no longer repairs it.
pub fn forget_applied(slot: &AppliedSlot) {
    *slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
}

/// One object a sink writes, to follow.
#[derive(Clone)]
pub struct Followed {
    /// The client.
    pub client: Client,
    /// Its API resource.
    pub resource: ApiResource,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The sink that writes it (its name in logs and `/status`): the one [`follow`] asks to repair.
    pub sink: String,
    /// What the sink last applied to it.
    pub applied: AppliedSlot,
}

impl Followed {
    /// What the sink last applied.
    fn applied(&self) -> Option<Applied> {
        self.applied
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The sink and the object, for the log.
    fn label(&self) -> String {
        format!(
            "{} ({} {}/{})",
            self.sink, self.resource.kind, self.namespace, self.name
        )
    }
}

/// Whether `actual` holds every field of `wanted` with its value (extra fields allowed).
pub fn holds(actual: &Value, wanted: &Value) -> bool {
    match (actual, wanted) {
        (Value::Object(actual), Value::Object(wanted)) => {
            wanted.iter().all(|(k, w)| actual.get(k).is_some_and(|a| holds(a, w)))
        }
        (Value::Array(actual), Value::Array(wanted)) => {
            actual.len() == wanted.len() && actual.iter().zip(wanted).all(|(a, w)| holds(a, w))
        }
        _ => actual == wanted,
    }
}

/// Whether the object as the API shows it lost what we applied; `Err` when it cannot be compared
/// (never expected: the object does not serialize).
fn drifted(followed: &Followed, object: &DynamicObject) -> Result<bool, serde_json::Error> {
    let Some(applied) = followed.applied() else {
        return Ok(false);
    };
    if object.metadata.resource_version.as_deref() == Some(applied.resource_version.as_str()) {
        return Ok(false);
    }
    let actual = serde_json::to_value(object)?;
    // Keys beside ours in the pluginConfig are read by the filter as part of the table: a change too.
    let foreign = foreign_keys(&actual["spec"]["pluginConfig"], &applied.object["spec"]["pluginConfig"]);
    Ok(!(holds(&actual["spec"], &applied.object["spec"])
        && holds(&actual["metadata"]["labels"], &applied.object["metadata"]["labels"])
        && foreign.is_empty()))
}

/// Follows the object; sends its sink's name on `drifted` whenever it must be applied again.
/// `state` counts an object that cannot be compared.
pub async fn follow(followed: Followed, drifted_tx: mpsc::Sender<String>, state: Shared) {
    let api: Api<DynamicObject> =
        Api::namespaced_with(followed.client.clone(), &followed.namespace, &followed.resource);
    let config = watcher::Config::default().fields(&format!("metadata.name={}", followed.name));
    let stream = outliving(api, config);
    let mut stream = std::pin::pin!(stream);
    let mut present = false;
    let mut failing = false;
    while let Some(next) = stream.next().await {
        // Followed again once the watch delivers (a relist that finished, or an event).
        let delivered = matches!(next, Ok(Event::InitDone | Event::Apply(_) | Event::Delete(_)));
        if delivered && std::mem::take(&mut failing) {
            info!("{}: followed again", followed.label());
        }
        let lost = match next {
            Ok(Event::Init) => {
                present = false;
                false
            }
            Ok(Event::InitApply(object) | Event::Apply(object)) => {
                present = true;
                drifted(&followed, &object).unwrap_or_else(|e| {
                    // Not compared, so not repaired: an apply on a guess could undo someone's edit.
                    state.internal_error(&format!(
                        "{}: the object as the API shows it does not serialize: {e}",
                        followed.label()
                    ));
                    false
                })
            }
            Ok(Event::InitDone) => !present && followed.applied().is_some(),
            Ok(Event::Delete(_)) => {
                present = false;
                followed.applied().is_some()
            }
            // A compacted or fresh watch cache: the watcher lists again.
            Err(watcher::Error::WatchError(status)) if status.code == 410 => false,
            // Said once (a Role without list/watch on the object, the API server down); it retries
            // meanwhile, and says when it follows again.
            Err(e) => {
                if !std::mem::replace(&mut failing, true) {
                    warn!(
                        "{}: cannot follow it ({e}); a deletion or someone else's change is not repaired until it can",
                        followed.label()
                    );
                }
                false
            }
        };
        if lost {
            let _ = drifted_tx.send(followed.sink.clone()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_defaults_do_not_count_as_a_change_but_another_value_does() {
        let ours =
            json!({"selector": {"matchLabels": {"istio": "ingressgateway"}}, "pluginConfig": {"generation": "g1"}});
        let defaulted = json!({"selector": {"matchLabels": {"istio": "ingressgateway"}}, "pluginConfig": {"generation": "g1"}, "phase": "UNSPECIFIED_PHASE"});
        assert!(holds(&defaulted, &ours));
        let recreated =
            json!({"selector": {"matchLabels": {"istio": "ingressgateway"}}, "pluginConfig": {"generation": ""}});
        assert!(!holds(&recreated, &ours));
    }
}
