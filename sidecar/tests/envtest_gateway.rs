//! The gateway of `deploy/envoy/` as a newcomer installs it (issue "The upstream side"): every file
//! applied to a real API server; the watch run with the arguments `gateway.yaml` gives it, as the
//! ServiceAccount `rbac.yaml` makes; Envoy started on the bootstrap `envoy-config.yaml` holds, once
//! the watch wrote its files (as the envoy container's command waits for them in the pod); and an
//! Ingress of the class
//! reaching its Service with nothing written by hand; then EndpointSlices created, turned ready and
//! deleted in the API server followed by Envoy's cluster, over the watch's ADS.
//!
//! What differs from the pod, and only what must: the shared volume is a temporary folder, the
//! ports are free ports of 127.0.0.1 (Envoy's 8080, 8443 and admin 9901; the L4 address), and the
//! harness gives `watch --kubernetes` and its two listen addresses itself. `--namespaces` keeps the
//! watch to this test's namespace (the API server is shared by the suite).
//!
//! Needs `KUBEBUILDER_ASSETS`, `ENVOY_BIN` and `SWITCHYARD_WASM` (`make test-kubernetes` sets them).

use std::path::{Path, PathBuf};

use serde_json::Value;
use switchyard_e2e::process::EnvoyProcess;
use switchyard_e2e::{get, required_path, send, Backend};
use switchyard_envtest::manifests::{apply, documents};
use switchyard_envtest::watch::{eventually, Watch};
use switchyard_envtest::{project_root, Envtest, User};
use switchyard_free_port::free_port;

/// How long the watch, Envoy and a route may take.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// The documents of every file of deploy/envoy/, in the order `kubectl apply -f` takes them.
fn deploy_envoy() -> Vec<Value> {
    let dir = project_root().join("deploy/envoy");
    let mut files: Vec<PathBuf> = (std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    (files.iter())
        .flat_map(|f| documents(&std::fs::read_to_string(f).unwrap()).unwrap())
        .collect()
}

/// What the pod's paths and ports become here.
struct Rewrite {
    run: PathBuf,
    http: u16,
    https: u16,
    admin: u16,
    ads: u16,
}

impl Rewrite {
    fn text(&self, text: &str) -> String {
        text.replace("/var/run/switchyard", &self.run.display().to_string())
            .replace("port_value: 8080", &format!("port_value: {}", self.http))
            .replace("port_value: 9901", &format!("port_value: {}", self.admin))
            .replace("port_value: 18000", &format!("port_value: {}", self.ads))
            .replace("127.0.0.1:18000", &format!("127.0.0.1:{}", self.ads))
            .replace("127.0.0.1:9901", &format!("127.0.0.1:{}", self.admin))
            .replace(
                "--tls-passthrough-port=8443",
                &format!("--tls-passthrough-port={}", self.https),
            )
            .replace("--l4-address=0.0.0.0", "--l4-address=127.0.0.1")
            .replace("address: 0.0.0.0", "address: 127.0.0.1")
    }
}

/// The watch container's arguments, less those the harness gives.
fn watch_args(deploy: &[Value]) -> Vec<String> {
    let gateway = deploy.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let containers = gateway["spec"]["template"]["spec"]["containers"].as_array().unwrap();
    let watch = containers.iter().find(|c| c["name"] == "switchyard").unwrap();
    (watch["args"].as_array().unwrap().iter())
        .map(|a| a.as_str().unwrap().to_owned())
        .filter(|a| !matches!(a.as_str(), "watch" | "--kubernetes"))
        .filter(|a| !a.starts_with("--listen=") && !a.starts_with("--dashboard-listen="))
        .collect()
}

fn envoy_bootstrap(deploy: &[Value]) -> String {
    let config = deploy.iter().find(|d| d["kind"] == "ConfigMap").unwrap();
    config["data"]["envoy.yaml"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn deploy_envoy_as_shipped_routes_an_ingress_of_its_class_to_its_service() {
    let env = Envtest::shared().await;
    let admin = env.admin().await;
    let deploy = deploy_envoy();
    for object in &deploy {
        apply(&admin, object).await.unwrap_or_else(|e| panic!("{e}"));
    }
    let ns = env.namespace("gateway").await;
    let backend = Backend::start("web").unwrap();
    // The Service is an ExternalName of `localhost`: the API server refuses an EndpointSlice of a
    // loopback address, and 127.0.0.1 is the only address a test may send to
    // (`sidecar/tests/envtest.rs` follows EndpointSlices from this API server into the EDS files,
    // `tests/e2e/tests/clusters.rs` through Envoy).
    let app = format!(
        r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: web, namespace: {ns}}}
spec:
  ingressClassName: switchyard
  rules:
  - host: gateway.example
    http:
      paths:
      - {{path: /, pathType: Prefix, backend: {{service: {{name: web, port: {{number: {port}}}}}}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: {ns}}}
spec: {{type: ExternalName, externalName: localhost, ports: [{{name: http, port: {port}}}]}}
"#,
        port = backend.addr.port()
    );
    for object in documents(&app).unwrap() {
        apply(&admin, &object).await.unwrap_or_else(|e| panic!("{e}"));
    }

    let dir = tempfile::tempdir().unwrap();
    let rewrite = Rewrite {
        run: dir.path().join("run"),
        http: free_port(),
        https: free_port(),
        admin: free_port(),
        ads: free_port(),
    };
    let mut args: Vec<String> = watch_args(&deploy).iter().map(|a| rewrite.text(a)).collect();
    args.extend(["--namespaces".to_owned(), ns.clone()]);
    let wasm = required_path("SWITCHYARD_WASM");
    std::fs::create_dir_all(&rewrite.run).unwrap();
    std::fs::copy(&wasm, rewrite.run.join("switchyard_filter.wasm")).unwrap();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let bin = Path::new(env!("CARGO_BIN_EXE_switchyard"));
    let mut watch = Watch::start(bin, &env.kubeconfig(User::Gateway), &args).unwrap();
    watch.ready(PATIENCE).await.unwrap_or_else(|e| panic!("{e}"));

    let envoy_dir = dir.path().join("envoy");
    std::fs::create_dir_all(&envoy_dir).unwrap();
    std::fs::write(envoy_dir.join("envoy.yaml"), rewrite.text(&envoy_bootstrap(&deploy))).unwrap();
    let envoy = EnvoyProcess::start(&required_path("ENVOY_BIN"), envoy_dir, 1, |p| {
        p.stat("server.state") == Some(0)
    });
    let at = std::net::SocketAddr::from(([127, 0, 0, 1], rewrite.http));
    let answered = eventually(
        "gateway.example routed to its Service",
        PATIENCE,
        || {
            send(at, &get("gateway.example", "/"))
                .ok()
                .filter(|r| r.backend() == Some("web"))
        },
        || format!("watch:\n{}\nenvoy:\n{}", watch.log(), envoy.log_tail()),
    )
    .await;
    assert_eq!(answered.status, 200);

    // EndpointSlices created, changed and deleted in the API server reach Envoy's cluster (never
    // sent to: 10.x addresses, which Envoy only holds).
    let api = |slices: &str| {
        format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: api, namespace: {ns}}}\nspec: {{ports: [{{name: http, port: 80, targetPort: web}}]}}\n---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: api, namespace: {ns}}}\nspec:\n  ingressClassName: switchyard\n  rules:\n  - host: api.example\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, backend: {{service: {{name: api, port: {{number: 80}}}}}}}}\n{slices}"
    )
    };
    let slice = |name: &str, endpoints: &[(&str, bool)]| {
        let endpoints: String = (endpoints.iter())
            .map(|(address, ready)| format!("- {{addresses: [{address}], conditions: {{ready: {ready}}}}}\n"))
            .collect();
        format!("---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {name}\n  namespace: {ns}\n  labels: {{kubernetes.io/service-name: api}}\naddressType: IPv4\nports: [{{name: http, port: 8080}}]\nendpoints:\n{endpoints}")
    };
    let cluster = format!("{ns}/api:80");
    let hosts_are = |wanted: &'static [&'static str]| {
        let (admin, cluster) = (envoy.admin, cluster.clone());
        move || (hosts_of(admin, &cluster) == wanted).then_some(())
    };
    let describe = || format!("watch:\n{}\nenvoy:\n{}", watch.log(), envoy.log_tail());
    let applied = |yaml: String| {
        let admin = admin.clone();
        async move {
            for object in documents(&yaml).unwrap() {
                apply(&admin, &object).await.unwrap_or_else(|e| panic!("{e}"));
            }
        }
    };
    applied(api(&slice("api-a", &[("10.0.0.1", true), ("10.0.0.2", false)]))).await;
    eventually(
        "the ready endpoint, on the slice's port",
        PATIENCE,
        hosts_are(&["10.0.0.1:8080"]),
        describe,
    )
    .await;
    applied(slice("api-b", &[("10.0.0.3", true)])).await;
    eventually(
        "a second slice",
        PATIENCE,
        hosts_are(&["10.0.0.1:8080", "10.0.0.3:8080"]),
        describe,
    )
    .await;
    applied(slice("api-a", &[("10.0.0.1", true), ("10.0.0.2", true)])).await;
    eventually(
        "a pod turned ready",
        PATIENCE,
        hosts_are(&["10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"]),
        describe,
    )
    .await;
    let slices: kube::Api<k8s_openapi::api::discovery::v1::EndpointSlice> = kube::Api::namespaced(admin.clone(), &ns);
    slices.delete("api-a", &Default::default()).await.unwrap();
    eventually("a slice deleted", PATIENCE, hosts_are(&["10.0.0.3:8080"]), describe).await;
    assert_eq!(envoy.stat("cluster_manager.cds.update_rejected"), Some(0));
    // Nothing forbidden, nothing refused (Envoy's admin refusing connections while it starts, which
    // the traffic reader says, is not a refusal of ours).
    let log = watch.log();
    let troubles: Vec<&str> = (log.lines())
        .filter(|l| l.contains("Forbidden") || (l.contains("refused") && !l.contains("traffic")))
        .collect();
    assert!(troubles.is_empty(), "{troubles:#?}\n{log}");
}

/// The hosts Envoy holds for `cluster` (`address:port`, sorted), from its admin API.
fn hosts_of(admin: std::net::SocketAddr, cluster: &str) -> Vec<String> {
    let Ok(answer) = send(admin, &get("admin", "/clusters?format=json")) else {
        return Vec::new();
    };
    let document: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    let statuses = document["cluster_statuses"].as_array().cloned().unwrap_or_default();
    let Some(status) = statuses.iter().find(|s| s["name"] == cluster) else {
        return Vec::new();
    };
    let mut hosts: Vec<String> = (status["host_statuses"].as_array().into_iter().flatten())
        .map(|h| {
            let address = &h["address"]["socket_address"];
            format!(
                "{}:{}",
                address["address"].as_str().unwrap_or_default(),
                address["port_value"]
            )
        })
        .collect();
    hosts.sort();
    hosts
}
