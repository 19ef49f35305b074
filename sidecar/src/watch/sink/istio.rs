//! The Istio sinks: the table as the plugin configuration of an ingress gateway's wasm filter,
//! written by server-side apply with Switchyard's own field manager, so that only the fields we set
//! are ours and other tools' fields on the same object are left alone.
//!
//! - `--wasmplugin NAMESPACE/NAME`: an `extensions.istio.io/v1alpha1` WasmPlugin whose
//!   `pluginConfig` is the table (a `google.protobuf.Struct`, which the filter accepts as well).
//! - `--envoyfilter NAMESPACE/NAME`: a `networking.istio.io/v1alpha3` EnvoyFilter inserting the wasm
//!   filter before the router of the gateway's HTTP connection managers, with the same
//!   `envoy.extensions.filters.http.wasm.v3.Wasm` configuration as the ECDS file.
//!
//! Every Kubernetes object must fit one etcd request (`--max-request-bytes`, 1.5 MiB by default), so
//! an object over `--istio-max-bytes` ([`DEFAULT_MAX_BYTES`]) is refused before any request is sent,
//! and an API server answering "request is too large" (or 413) is treated the same way: never retried
//! until the table changes.

use std::collections::BTreeMap;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{json, Value};

use crate::watch::cluster::FIELD_MANAGER;
use crate::watch::sink::drift::{foreign_keys, record_applied, AppliedSlot, Followed};
use crate::watch::sink::ecds::wasm_filter_config;
use crate::watch::sink::error::{PushError, TooLarge};

/// The default `--istio-max-bytes`: 1,400,000 bytes, under etcd's default request limit of 1.5 MiB
/// (1,572,864 bytes) by ~170 KB, room for what the API server adds to our object before storing it
/// (metadata, managedFields, other managers' fields, the etcd transaction's own framing).
pub const DEFAULT_MAX_BYTES: usize = 1_400_000;

/// Which Istio resource carries the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IstioKind {
    /// `networking.istio.io/v1alpha3` EnvoyFilter.
    EnvoyFilter,
    /// `extensions.istio.io/v1alpha1` WasmPlugin.
    WasmPlugin,
}

/// What the Istio resources need besides the table.
#[derive(Debug, Clone)]
pub struct IstioSettings {
    /// The gateway pods' labels (`istio=ingressgateway`).
    pub selector: BTreeMap<String, String>,
    /// WasmPlugin: where Istio fetches the module (`oci://...`, `https://...` or `file:///...`).
    pub wasm_url: String,
    /// EnvoyFilter: the module's path inside the gateway pods.
    pub wasm_path: String,
    /// The filter's name (and root id).
    pub filter_name: String,
    /// The wasm runtime (EnvoyFilter).
    pub runtime: String,
}

/// One Istio resource to keep up to date.
#[derive(Clone)]
pub struct IstioSink {
    /// The client.
    pub client: Client,
    /// Which resource.
    pub kind: IstioKind,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The rest.
    pub settings: IstioSettings,
    /// What we last applied (shared with [`crate::watch::sink::drift`], which follows the object).
    pub applied: AppliedSlot,
    /// The largest object (serialized JSON, in bytes) sent to the API server.
    pub max_bytes: usize,
}

impl IstioKind {
    /// The API resource.
    pub fn api_resource(self) -> ApiResource {
        let gvk = match self {
            IstioKind::EnvoyFilter => GroupVersionKind::gvk("networking.istio.io", "v1alpha3", "EnvoyFilter"),
            IstioKind::WasmPlugin => GroupVersionKind::gvk("extensions.istio.io", "v1alpha1", "WasmPlugin"),
        };
        ApiResource::from_gvk(&gvk)
    }
}

/// Parses `NAMESPACE/NAME`.
pub fn parse_target(value: &str) -> Result<(String, String), String> {
    match value.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((ns.to_owned(), name.to_owned()))
        }
        _ => Err(format!("{value:?}: expected NAMESPACE/NAME")),
    }
}

/// The object to apply for a table whose plugin configuration is `config` (a JSON object's text: the
/// compact form or the table's JSON, [`crate::flags::TableEncoding`]).
pub fn manifest(
    kind: IstioKind,
    namespace: &str,
    name: &str,
    settings: &IstioSettings,
    config: &str,
) -> Result<Value, String> {
    let resource = kind.api_resource();
    let spec = match kind {
        IstioKind::WasmPlugin => {
            let config: Value = serde_json::from_str(config).map_err(|e| e.to_string())?;
            json!({
                "selector": { "matchLabels": settings.selector },
                "url": settings.wasm_url,
                "pluginName": settings.filter_name,
                // After the gateway's authentication and authorization filters (a denied request is
                // never routed), before the router: istiod 1.14 puts a WasmPlugin without a phase
                // first (tests/istio/tests/watch.rs checks the place in Envoy's filter chain).
                "phase": "STATS",
                "pluginConfig": config,
            })
        }
        IstioKind::EnvoyFilter => {
            let code = json!({ "local": { "filename": settings.wasm_path } });
            json!({
                "workloadSelector": { "labels": settings.selector },
                "configPatches": [{
                    "applyTo": "HTTP_FILTER",
                    "match": {
                        "context": "GATEWAY",
                        "listener": { "filterChain": { "filter": {
                            "name": "envoy.filters.network.http_connection_manager",
                            "subFilter": { "name": "envoy.filters.http.router" }
                        } } }
                    },
                    "patch": {
                        "operation": "INSERT_BEFORE",
                        "value": {
                            "name": settings.filter_name,
                            "typed_config": wasm_filter_config(&settings.filter_name, &settings.runtime, code, config)
                        }
                    }
                }]
            })
        }
    };
    Ok(json!({
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": { "app.kubernetes.io/managed-by": "switchyard" }
        },
        "spec": spec,
    }))
}

impl IstioSink {
    /// A sink for `namespace/name` of `kind`.
    pub fn new(client: Client, kind: IstioKind, namespace: String, name: String, settings: IstioSettings) -> IstioSink {
        IstioSink {
            client,
            kind,
            namespace,
            name,
            settings,
            applied: AppliedSlot::default(),
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }

    /// Its object, for [`crate::watch::sink::drift`] to follow.
    pub fn followed(&self) -> Followed {
        Followed {
            client: self.client.clone(),
            resource: self.kind.api_resource(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            sink: self.name(),
            applied: self.applied.clone(),
        }
    }

    /// The name used in logs and metrics.
    pub fn name(&self) -> String {
        let kind = match self.kind {
            IstioKind::EnvoyFilter => "envoyfilter",
            IstioKind::WasmPlugin => "wasmplugin",
        };
        format!("{kind} {}/{}", self.namespace, self.name)
    }

    /// Server-side applies the resource carrying `config` (the table as the filter's plugin
    /// configuration), unless its object is over [`Self::max_bytes`].
    pub async fn apply(&self, config: &str) -> Result<(), PushError> {
        let object = manifest(self.kind, &self.namespace, &self.name, &self.settings, config)?;
        let bytes = serde_json::to_vec(&object).map_err(|e| e.to_string())?.len();
        check_size(bytes, self.max_bytes).map_err(PushError::TooLarge)?;
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), &self.namespace, &self.kind.api_resource());
        // Server-side apply would leave the pluginConfig keys other managers set (the JSON table
        // of deploy/istio/, say) beside ours, and the filter would read them all. Removing them in
        // a second write would let istiod push the mixed object in between (the filter refuses
        // it): so when the live object has such keys, one merge patch writes ours and removes
        // theirs at once.
        let live = api
            .get_opt(&self.name)
            .await
            .map_err(|e| refused(&e, bytes, self.max_bytes))?;
        let foreign = live
            .as_ref()
            .map(|live| foreign_keys(&live.data["spec"]["pluginConfig"], &object["spec"]["pluginConfig"]))
            .unwrap_or_default();
        let result = match foreign.is_empty() {
            true => {
                let params = PatchParams::apply(FIELD_MANAGER).force();
                api.patch(&self.name, &params, &Patch::Apply(&object))
                    .await
                    .map_err(|e| refused(&e, bytes, self.max_bytes))?
            }
            false => {
                let mut patch = object.clone();
                if let Some(config) = patch["spec"]["pluginConfig"].as_object_mut() {
                    config.extend(foreign.iter().map(|k| (k.clone(), Value::Null)));
                }
                let params = PatchParams {
                    field_manager: Some(FIELD_MANAGER.to_owned()),
                    ..PatchParams::default()
                };
                let result = api
                    .patch(&self.name, &params, &Patch::Merge(&patch))
                    .await
                    .map_err(|e| refused(&e, bytes, self.max_bytes))?;
                tracing::info!(sink = %self.name(), "removed pluginConfig keys {foreign:?} another field manager had set");
                result
            }
        };
        record_applied(&self.applied, object, result.metadata.resource_version);
        Ok(())
    }
}

/// Refuses an object of `bytes` over `limit`.
pub fn check_size(bytes: usize, limit: usize) -> Result<(), TooLarge> {
    match bytes > limit {
        true => Err(TooLarge {
            bytes,
            limit,
            answer: None,
        }),
        false => Ok(()),
    }
}

/// What an apply error means: too large when the API server says so (413, or etcd's
/// "request is too large" passed on as a 500), else a failure to retry.
pub fn refused(e: &kube::Error, bytes: usize, limit: usize) -> PushError {
    match e {
        kube::Error::Api(status) if status.code == 413 || status.message.contains("request is too large") => {
            PushError::TooLarge(TooLarge {
                bytes,
                limit,
                answer: Some(status.message.clone()),
            })
        }
        _ => PushError::Failed(format!("server-side apply: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_table::TableSpec;

    fn settings() -> IstioSettings {
        IstioSettings {
            selector: BTreeMap::from([("istio".to_owned(), "ingressgateway".to_owned())]),
            wasm_url: "oci://registry/switchyard:1".into(),
            wasm_path: "/var/lib/switchyard/filter.wasm".into(),
            filter_name: "switchyard".into(),
            runtime: "envoy.wasm.runtime.v8".into(),
        }
    }

    fn table() -> String {
        let table = TableSpec::from_value(json!({"version": 1, "generation": "g1", "rules": []})).unwrap();
        crate::flags::TableEncoding::Json.plugin_config(&table).unwrap()
    }

    #[test]
    fn a_wasmplugin_carries_the_table_as_its_plugin_config() {
        let object = manifest(
            IstioKind::WasmPlugin,
            "istio-system",
            "switchyard",
            &settings(),
            &table(),
        )
        .unwrap();
        assert_eq!(object["apiVersion"], "extensions.istio.io/v1alpha1");
        assert_eq!(object["kind"], "WasmPlugin");
        assert_eq!(object["spec"]["pluginConfig"]["generation"], "g1");
        assert_eq!(object["spec"]["phase"], "STATS");
        assert_eq!(object["spec"]["selector"]["matchLabels"]["istio"], "ingressgateway");
    }

    #[test]
    fn an_envoyfilter_inserts_the_wasm_filter_before_the_router() {
        let object = manifest(
            IstioKind::EnvoyFilter,
            "istio-system",
            "switchyard",
            &settings(),
            &table(),
        )
        .unwrap();
        assert_eq!(object["apiVersion"], "networking.istio.io/v1alpha3");
        let patch = &object["spec"]["configPatches"][0];
        assert_eq!(patch["patch"]["operation"], "INSERT_BEFORE");
        let config = &patch["patch"]["value"]["typed_config"]["config"];
        assert_eq!(
            config["vm_config"]["code"]["local"]["filename"],
            "/var/lib/switchyard/filter.wasm"
        );
        let carried: Value = serde_json::from_str(config["configuration"]["value"].as_str().unwrap()).unwrap();
        assert_eq!(carried["generation"], "g1");
    }

    #[test]
    fn plugin_config_keys_another_manager_left_are_found() {
        let live = json!({"table_z": "x", "version": 1, "rules": []});
        assert_eq!(foreign_keys(&live, &json!({"table_z": "y"})), ["rules", "version"]);
        assert!(foreign_keys(&json!({"table_z": "x"}), &json!({"table_z": "y"})).is_empty());
        assert!(foreign_keys(&Value::Null, &Value::Null).is_empty());
    }

    #[test]
    fn an_object_over_the_limit_is_refused_naming_its_size_and_the_limit() {
        assert_eq!(check_size(1_400_000, 1_400_000), Ok(()));
        let refused = check_size(2_000_000, 1_400_000).unwrap_err();
        let message = refused.to_string();
        for part in [
            "2000000 bytes",
            "limit of 1400000 bytes",
            "--istio-max-bytes",
            "--ecds-file",
        ] {
            assert!(message.contains(part), "{part:?} missing in {message}");
        }
    }

    #[test]
    fn the_api_servers_too_large_answers_are_not_retried_and_others_are() {
        let answer = |code, message: &str| {
            kube::Error::Api(
                kube::core::Status::failure(message, "InternalError")
                    .with_code(code)
                    .boxed(),
            )
        };
        for e in [
            answer(500, "etcdserver: request is too large"),
            answer(413, "Request entity too large: limit is 3145728"),
        ] {
            match refused(&e, 1_000, 1_400_000) {
                PushError::TooLarge(too_large) => assert!(too_large.to_string().contains("lower it"), "{too_large}"),
                other => panic!("{other:?}"),
            }
        }
        let conflict = answer(409, "Apply failed with 1 conflict");
        assert!(matches!(refused(&conflict, 1_000, 1_400_000), PushError::Failed(_)));
    }

    #[test]
    fn targets_are_namespace_slash_name() {
        assert_eq!(
            parse_target("istio-system/sy").unwrap(),
            ("istio-system".to_owned(), "sy".to_owned())
        );
        assert!(parse_target("sy").is_err());
        assert!(parse_target("a/b/c").is_err());
    }
}
