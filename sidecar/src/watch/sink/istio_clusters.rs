//! `--istio-clusters NAMESPACE/NAME`: the variant clusters an Istio gateway needs beside Istio's own
//! (a backend spoken to over TLS checked against a CA, over HTTP/2, by a ring hash, with a health
//! check…), as one EnvoyFilter adding them to the gateway's pods alone
//! ([`switchyard_compiler::upstream::istio`]). Server-side applied with Switchyard's field manager
//! when the clusters changed (the delivery pushes a sink only then, or to repair drift); followed
//! for drift like the other Istio objects. Written by the leader only.

use std::collections::BTreeMap;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::{Api, Client};
use switchyard_compiler::upstream::istio::envoy_filter;
use switchyard_compiler::upstream::Upstream;

use crate::watch::cluster::FIELD_MANAGER;
use crate::watch::sink::drift::{record_applied, AppliedSlot, Followed};
use crate::watch::sink::error::PushError;
use crate::watch::sink::istio::{check_size, refused};

/// The EnvoyFilter of the variant clusters.
pub struct IstioClusters {
    client: Client,
    namespace: String,
    name: String,
    selector: BTreeMap<String, String>,
    /// The largest object sent to the API server (`--istio-max-bytes`).
    pub max_bytes: usize,
    applied: AppliedSlot,
}

impl IstioClusters {
    /// The EnvoyFilter `namespace/name` for the gateway pods labelled `selector`.
    pub fn new(
        client: Client,
        (namespace, name): (String, String),
        selector: BTreeMap<String, String>,
    ) -> IstioClusters {
        IstioClusters {
            client,
            namespace,
            name,
            selector,
            max_bytes: crate::watch::sink::istio::DEFAULT_MAX_BYTES,
            applied: AppliedSlot::default(),
        }
    }

    fn resource() -> ApiResource {
        ApiResource::from_gvk(&GroupVersionKind::gvk("networking.istio.io", "v1alpha3", "EnvoyFilter"))
    }

    /// The name used in logs, `/status` and metrics.
    pub fn name(&self) -> String {
        format!("istio-clusters {}/{}", self.namespace, self.name)
    }

    /// Its object, for [`crate::watch::sink::drift`] to follow.
    pub fn followed(&self) -> Followed {
        Followed {
            client: self.client.clone(),
            resource: Self::resource(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            sink: self.name(),
            applied: self.applied.clone(),
        }
    }

    /// Applies the EnvoyFilter of `upstream`'s clusters (none: an EnvoyFilter that adds nothing).
    pub async fn apply(&self, upstream: &Upstream) -> Result<(), PushError> {
        let object = envoy_filter(upstream, (&self.namespace, &self.name), &self.selector);
        let bytes = serde_json::to_vec(&object).map_err(|e| e.to_string())?.len();
        check_size(bytes, self.max_bytes).map_err(PushError::TooLarge)?;
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &self.namespace, &Self::resource());
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let result = api
            .patch(&self.name, &params, &Patch::Apply(&object))
            .await
            .map_err(|e| refused(&e, bytes, self.max_bytes))?;
        record_applied(&self.applied, object, result.metadata.resource_version);
        Ok(())
    }
}
