//! Status write-back for NGINX's VirtualServer, VirtualServerRoute and TransportServer, as NGINX's
//! controller writes it: `.status.state` (`Valid`, `Warning`, `Invalid`), `.status.reason` (`AddedOrUpdated`,
//! `AddedOrUpdatedWithWarning`, `Rejected`, `NoVirtualServerFound`, `Ignored`) and `.status.message`
//! through the status subresource (field manager `switchyard`), `externalEndpoints` from
//! `--publish-address` on those that route (an `ip` or a `hostname` each; no `ports`: the
//! gateway's ports are not ours to know), and an event with the same reason
//! (`Normal` for `AddedOrUpdated`, `Warning` otherwise), once per distinct message. Only resources
//! our class rules accept are written; one that is no longer ours has only our fields removed, as
//! for HTTPProxy.

use k8s_openapi::NamespaceResourceScope;
use kube::api::Patch;
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::{wrote_status, StatusWriter};
use switchyard_compiler::objects::Kind;
use switchyard_compiler::status::{NginxReason, NginxState, ResourceStatus, Status};

/// `.status` of a VirtualServer or VirtualServerRoute for its status entry and `--publish-address`;
/// `None` when there is nothing of ours to write (another class).
pub fn nginx_status(status: &ResourceStatus, publish: &[String]) -> Option<Value> {
    let nginx = status.nginx.as_ref()?;
    let routes = matches!(
        nginx.reason,
        NginxReason::AddedOrUpdated | NginxReason::AddedOrUpdatedWithWarning
    );
    let endpoints: Vec<Value> = if routes {
        publish
            .iter()
            .map(|a| match a.parse::<std::net::IpAddr>() {
                Ok(_) => json!({"ip": a}),
                Err(_) => json!({"hostname": a}),
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut body = json!({
        "state": nginx.state.as_str(),
        "reason": nginx.reason.as_str(),
        "message": nginx.message,
    });
    // A TransportServer's status has no externalEndpoints (NGINX's schema).
    if status.kind != Kind::TransportServer {
        // Null removes what an earlier write published once the resource stops routing.
        body["externalEndpoints"] = if endpoints.is_empty() {
            Value::Null
        } else {
            json!(endpoints)
        };
    }
    Some(body)
}

/// The event NGINX's controller records with that status: (type, reason, note).
pub fn nginx_event(status: &ResourceStatus) -> Option<(&'static str, &'static str, String)> {
    let nginx = status.nginx.as_ref()?;
    let kind = if nginx.state == NginxState::Valid && nginx.reason == NginxReason::AddedOrUpdated {
        "Normal"
    } else {
        "Warning"
    };
    Some((kind, nginx.reason.as_str(), nginx.message.clone()))
}

/// The merge patch that removes what [`nginx_status`] writes.
fn removed() -> Value {
    json!({"state": null, "reason": null, "message": null, "externalEndpoints": null})
}

/// The resources' statuses are kept apart by kind in [`StatusWriter`]'s memory.
fn memory_key(kind: &str, namespace: &str, name: &str) -> (String, String) {
    (namespace.to_owned(), format!("{kind}/{name}"))
}

impl StatusWriter {
    /// A VirtualServer's, VirtualServerRoute's or TransportServer's status entry: written (with its
    /// event) when ours, released when not.
    pub(super) async fn write_nginx<K>(&mut self, status: &ResourceStatus, object: Option<&K>)
    where
        K: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + DeserializeOwned + std::fmt::Debug,
    {
        // An object that does not decode has a status but no typed object: its status is written,
        // without an event (nothing to refer to).
        let key = memory_key(status.kind.as_str(), &status.namespace, &status.name);
        let body = match nginx_status(status, &self.publish) {
            Some(body) => body,
            None if status.status == Status::Ignored => {
                let Some(object) = object else { return };
                // Not ours: remove what we wrote (now or before a restart), else nothing.
                let ours = self.proxies.contains_key(&key) || wrote_status(object.meta());
                if ours
                    && self.proxies.get(&key) != Some(&Value::Null)
                    && self.patch_nginx::<K>(status, removed()).await
                {
                    self.proxies.insert(key, Value::Null);
                }
                return;
            }
            None => return,
        };
        if self.proxies.get(&key) == Some(&body) {
            return;
        }
        if self.patch_nginx::<K>(status, body.clone()).await {
            self.proxies.insert(key, body);
        }
        if let (Some(object), Some((kind, reason, note))) = (object, nginx_event(status)) {
            self.record_event(object, &status.namespace, &status.name, kind, reason, note)
                .await;
        }
    }

    async fn patch_nginx<K>(&self, status: &ResourceStatus, body: Value) -> bool
    where
        K: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + DeserializeOwned + std::fmt::Debug,
    {
        let api: Api<K> = Api::namespaced(self.client.clone(), &status.namespace);
        let result = api
            .patch_status(&status.name, &Self::params(), &Patch::Merge(json!({ "status": body })))
            .await;
        self.count(
            result.map(|_| ()).map_err(|e| e.to_string()),
            &format!("{} {}/{}", status.kind, status.namespace, status.name),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_compiler::status::NginxStatus;

    fn entry(state: NginxState, reason: NginxReason) -> ResourceStatus {
        ResourceStatus {
            nginx: Some(NginxStatus {
                state,
                reason,
                message: "Configuration for cafe/cafe was added or updated".into(),
            }),
            kind: Kind::VirtualServer,
            namespace: "cafe".into(),
            name: "cafe".into(),
            status: Status::Valid,
            conditions: Vec::new(),
        }
    }

    #[test]
    fn virtualserver_status_is_state_reason_message_as_nginx_writes_it() {
        let s = entry(NginxState::Valid, NginxReason::AddedOrUpdated);
        assert_eq!(
            nginx_status(&s, &["203.0.113.7".into(), "lb.example.com".into()]),
            Some(json!({"state": "Valid", "reason": "AddedOrUpdated",
                "message": "Configuration for cafe/cafe was added or updated",
                "externalEndpoints": [{"ip": "203.0.113.7"}, {"hostname": "lb.example.com"}]}))
        );
        assert_eq!(nginx_event(&s).map(|e| (e.0, e.1)), Some(("Normal", "AddedOrUpdated")));
        let rejected = entry(NginxState::Warning, NginxReason::Rejected);
        assert_eq!(
            nginx_event(&rejected).map(|e| (e.0, e.1)),
            Some(("Warning", "Rejected"))
        );
    }

    #[test]
    fn a_resource_of_another_class_gets_no_status_from_us() {
        let mut s = entry(NginxState::Valid, NginxReason::AddedOrUpdated);
        s.nginx = None;
        s.status = Status::Ignored;
        assert_eq!(nginx_status(&s, &[]), None);
        assert_eq!(nginx_event(&s), None);
    }
}
