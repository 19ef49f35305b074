//! Applying YAML manifests of any kind, as `kubectl apply --server-side` does: each document's kind
//! is resolved through discovery, then server-side applied with the field manager `envtest`.

use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::{pinned_kind, Scope};
use kube::Client;
use serde_json::Value;

/// The documents of a multi-document YAML text, as JSON (empty documents skipped).
pub fn documents(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for document in serde_yaml::Deserializer::from_str(text) {
        let value: Value = serde::Deserialize::deserialize(document).map_err(|e| e.to_string())?;
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

/// The group/version/kind of a manifest.
pub fn gvk_of(object: &Value) -> Result<GroupVersionKind, String> {
    let api_version = object["apiVersion"].as_str().ok_or("a document without apiVersion")?;
    let kind = object["kind"].as_str().ok_or("a document without kind")?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    Ok(GroupVersionKind::gvk(group, version, kind))
}

/// Server-side applies one object (namespaced ones without a namespace go to `default`).
pub async fn apply(client: &Client, object: &Value) -> Result<DynamicObject, String> {
    let gvk = gvk_of(object)?;
    let name = object["metadata"]["name"]
        .as_str()
        .ok_or("a document without metadata.name")?;
    let (resource, capabilities) = pinned_kind(client, &gvk)
        .await
        .map_err(|e| format!("{}: {e}", gvk.kind))?;
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Cluster => Api::all_with(client.clone(), &resource),
        Scope::Namespaced => {
            let namespace = object["metadata"]["namespace"].as_str().unwrap_or("default");
            Api::namespaced_with(client.clone(), namespace, &resource)
        }
    };
    api.patch(name, &PatchParams::apply("envtest").force(), &Patch::Apply(object))
        .await
        .map_err(|e| format!("{} {name}: {e}", gvk.kind))
}

/// Applies every document of `text`.
pub async fn apply_all(client: &Client, text: &str) -> Result<(), String> {
    for object in documents(text)? {
        apply(client, &object).await?;
    }
    Ok(())
}

/// Applies CustomResourceDefinitions and waits until every kind they define is served.
pub async fn install_crds(client: &Client, text: &str) -> Result<(), String> {
    let crds = documents(text)?;
    for crd in &crds {
        apply(client, crd).await?;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    for crd in &crds {
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or_default();
        let versions = crd["spec"]["versions"].as_array().cloned().unwrap_or_default();
        for version in versions.iter().filter(|v| v["served"] == true) {
            let gvk = GroupVersionKind::gvk(group, version["name"].as_str().unwrap_or_default(), kind);
            while let Err(e) = pinned_kind(client, &gvk).await {
                if Instant::now() > deadline {
                    return Err(format!("CRD {kind}.{group} is not served after 30 s: {e}"));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    Ok(())
}
