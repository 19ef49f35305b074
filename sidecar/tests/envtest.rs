//! `switchyard watch --kubernetes` against a real kube-apiserver and etcd (`switchyard-envtest`,
//! from `KUBEBUILDER_ASSETS`) with the real CRDs of Contour and Istio and `deploy/rbac.yaml`. The
//! sidecar runs as a process, as the restricted ServiceAccount user, through its kubeconfig. Most
//! tests share one API server, each in its own namespace (and watching only it); the outage tests
//! start their own.
//!
//! Run with `make test-kubernetes` (part of `make test` when `KUBEBUILDER_ASSETS` is set).

use std::path::Path;
use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject};
use kube::discovery::pinned_kind;
use kube::Client;
use serde_json::{json, Value};
use switchyard_envtest::manifests::{apply, documents, gvk_of};
use switchyard_envtest::watch::{eventually, Watch};
use switchyard_envtest::{Envtest, User};

const PATIENCE: Duration = Duration::from_secs(20);

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_switchyard"))
}

/// `switchyard watch` as the ServiceAccount user, watching `namespace` only.
fn watch(env: &Envtest, namespace: &str, args: &[&str]) -> Watch {
    let mut all = vec!["--namespaces", namespace, "--debounce-ms", "50"];
    all.extend_from_slice(args);
    Watch::start(bin(), &env.kubeconfig(User::Switchyard), &all).unwrap()
}

/// Server-side applies YAML documents as the admin.
async fn admin_apply(client: &Client, yaml: &str) {
    for object in documents(yaml).unwrap() {
        apply(client, &object).await.unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Deletes an object as the admin.
async fn admin_delete(client: &Client, api_version: &str, kind: &str, namespace: &str, name: &str) {
    let gvk = gvk_of(&json!({"apiVersion": api_version, "kind": kind})).unwrap();
    let (resource, _) = pinned_kind(client, &gvk).await.unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    api.delete(name, &DeleteParams::default()).await.unwrap();
}

#[allow(dead_code)] // used by the status tests below
/// Reads an object as the admin (`Null` when missing).
async fn admin_get(client: &Client, api_version: &str, kind: &str, namespace: &str, name: &str) -> Value {
    let gvk = gvk_of(&json!({"apiVersion": api_version, "kind": kind})).unwrap();
    let (resource, _) = pinned_kind(client, &gvk).await.unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    match api.get_opt(name).await.unwrap() {
        Some(object) => serde_json::to_value(object).unwrap(),
        None => Value::Null,
    }
}

fn ingress(namespace: &str, name: &str, host: &str, service: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n  rules:\n  - host: {host}\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, backend: {{service: {{name: {service}, port: {{number: 80}}}}}}}}\n"
    )
}

#[tokio::test]
async fn a_namespace_is_synced_and_routed_as_the_service_account() {
    let env = Envtest::shared().await;
    let admin = env.admin().await;
    let ns = env.namespace("routed").await;
    admin_apply(&admin, &ingress(&ns, "web", "web.example", "web")).await;
    let mut sy = watch(env, &ns, &[]);
    sy.ready(PATIENCE).await.unwrap();
    let cluster = format!("{ns}/web:80");
    eventually(
        "web.example routed",
        PATIENCE,
        || sy.routes("web.example", Some(&cluster)).then_some(()),
        || sy.log(),
    )
    .await;
    admin_apply(&admin, &ingress(&ns, "api", "api.example", "api")).await;
    eventually(
        "api.example routed",
        PATIENCE,
        || sy.routes("api.example", None).then_some(()),
        || sy.log(),
    )
    .await;
    admin_delete(&admin, "networking.k8s.io/v1", "Ingress", &ns, "web").await;
    eventually(
        "web.example gone",
        PATIENCE,
        || (!sy.routes("web.example", None)).then_some(()),
        || sy.log(),
    )
    .await;
    assert!(!sy.log().contains("403"), "{}", sy.log());
}
