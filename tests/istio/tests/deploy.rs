//! `deploy/istio/` through a real istiod and Envoy (issue 23, items 7 and 8).
//!
//! - Each folder of `deploy/istio/` (`wasmplugin/`, `envoyfilter/`) is accepted as it is by the real
//!   API server with Istio's CRDs (server-side dry run, as `kubectl apply --dry-run=server`), and
//!   `mesh-config/` holds no object an API server would take.
//! - Each variant, applied from its folder as an operator would (the module's location pointed at
//!   the real filter `.wasm`, the table from `switchyard compile`), routes by the filter on every host
//!   and port of a Gateway with two hosts (`shop.example.com`, `*.example.org`) on two ports (80,
//!   8080), although a VirtualService on those hosts sends elsewhere; Envoy accepts every update.
//!   The EnvoyFilter variant with the path as shipped, where this machine has no `.wasm`, is
//!   rejected by Envoy (`Invalid path`), as its comment says.
//!
//! Needs `KUBEBUILDER_ASSETS`, `PILOT_DISCOVERY`, `ISTIO_CRDS`, `ENVOY_BIN`, `SWITCHYARD_WASM` and
//! `SWITCHYARD_BIN` (`make test-istio` sets them).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Value};
use switchyard_e2e::{get, required_path, Backend, Response};
use switchyard_free_port::free_port;
use switchyard_istio::objects::{gateway, gateway_service, server, service_entry, virtual_service};
use switchyard_istio::{deploy, ingressgateway, Gateway, Istio};

/// The Gateway's hosts: one exact, one wildcard (a virtual host each, on each port).
const HOSTS: [&str; 2] = ["shop.example.com", "*.example.org"];
/// The Gateway's ports (each a route configuration `http.PORT` of its own).
const PORTS: [u16; 2] = [80, 8080];
/// What the VirtualService routes to, and what the Ingress compiled into the table routes to.
const B: &str = "backend-b.shop.svc.cluster.local";
const A: &str = "backend-a.shop.svc.cluster.local";
/// The cluster the filter picks (Istio's name for A's ServiceEntry).
const CLUSTER_A: &str = "outbound|80||backend-a.shop.svc.cluster.local";

/// The Ingress Switchyard compiles: both hosts of the Gateway to backend-a (port 80) of `shop`.
const INGRESS: &str = r#"apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: shop}
spec:
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: backend-a, port: {number: 80}}}}
  - host: "*.example.org"
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: backend-a, port: {number: 80}}}}
"#;

/// The table the sidecar would push for [`INGRESS`], with deploy/deployment.yaml's cluster template.
fn table() -> Value {
    let text = switchyard_e2e::compile_manifests(
        INGRESS,
        &[
            "--cluster-template",
            "outbound|{port}||{service}.{namespace}.svc.cluster.local",
        ],
    );
    serde_json::from_str(&text).unwrap()
}

/// The real filter (`make build-wasm`).
fn wasm() -> PathBuf {
    required_path("SWITCHYARD_WASM")
}

/// A gateway with [`HOSTS`] on [`PORTS`] whose VirtualService sends everything to B, the backends A and
/// B behind ServiceEntries, and Envoy as the gateway pod; returned once every host and port reaches B.
struct Scene {
    istio: Istio,
    gateway: Gateway,
    /// Gateway port -> the port Envoy listens on (127.0.0.1).
    targets: BTreeMap<u16, u16>,
    _backends: [Backend; 2],
}

async fn scene() -> Scene {
    let istio = Istio::start().await.unwrap_or_else(|e| panic!("{e}"));
    let a = Backend::start("backend-a").unwrap();
    let b = Backend::start("backend-b").unwrap();
    let targets: BTreeMap<u16, u16> = PORTS.iter().map(|p| (*p, free_port())).collect();
    let selector = ingressgateway();
    let pairs: Vec<(u16, u16)> = targets.iter().map(|(p, t)| (*p, *t)).collect();
    istio
        .apply(&[
            service_entry("backend-a", A, 80, "HTTP", a.addr),
            service_entry("backend-b", B, 80, "HTTP", b.addr),
            gateway_service("istio-ingressgateway", &selector, &pairs),
            gateway(
                "public",
                &selector,
                &[server(80, "http", &HOSTS), server(8080, "http-alt", &HOSTS)],
            ),
            virtual_service("shop", &HOSTS, &["istio-system/public"], B, 80),
        ])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let gateway = istio.gateway("istio-ingressgateway-0", &selector);
    let scene = Scene {
        istio,
        gateway,
        targets,
        _backends: [a, b],
    };
    // Without Switchyard, the VirtualService decides: B everywhere.
    scene
        .wait_all_reach("backend-b", "the VirtualService routes before Switchyard is applied")
        .await;
    scene
}

impl Scene {
    /// Every (Host header, Envoy port) pair: both hosts (`x.example.org` for the wildcard) on both
    /// ports, the Host with its port when it is not 80.
    fn requests(&self) -> Vec<(String, u16)> {
        let mut out = Vec::new();
        for (port, target) in &self.targets {
            for host in ["shop.example.com", "x.example.org"] {
                let host = match port {
                    80 => host.to_owned(),
                    _ => format!("{host}:{port}"),
                };
                out.push((host, *target));
            }
        }
        out
    }

    /// Waits until every request of [`Scene::requests`] is answered by `backend`.
    async fn wait_all_reach(&self, backend: &str, what: &str) -> Vec<Response> {
        let requests = self.requests();
        let result = self
            .gateway
            .wait_for(what, |gw| {
                let mut answers = Vec::new();
                for (host, port) in &requests {
                    let answer = gw
                        .send(*port, &get(host, "/cart"))
                        .map_err(|e| format!("{host} on {port}: {e}"))?;
                    if answer.backend() != Some(backend) {
                        return Err(format!(
                            "{host} on 127.0.0.1:{port}: {} from {:?}, x-route-cluster {:?}\n{}",
                            answer.status,
                            answer.backend(),
                            answer.upstream_header("x-route-cluster"),
                            answer.body
                        ));
                    }
                    answers.push(answer);
                }
                Ok(answers)
            })
            .await;
        result.unwrap_or_else(|e| {
            panic!(
                "{e}\n--- virtual hosts: {:#?}\n--- istiod:\n{}",
                self.gateway.virtual_hosts(),
                self.istio.istiod_log_tail(30)
            )
        })
    }

    /// Every virtual host of the Gateway's route configurations (one per port; istiod names them
    /// after the target port and the bind address, `http.TARGET.127.0.0.1`), which between them hold
    /// both hosts, has the `switchyard` route first.
    fn assert_route_first_everywhere(&self) {
        let vhosts = self.gateway.virtual_hosts();
        for target in self.targets.values() {
            let name = format!("http.{target}.127.0.0.1");
            let here: Vec<_> = vhosts.iter().filter(|v| v.route_config == name).collect();
            assert!(!here.is_empty(), "no route configuration {name}: {vhosts:#?}");
            for host in HOSTS {
                assert!(
                    here.iter().any(|v| v.domains.iter().any(|d| d == host)),
                    "{host} in {name}: {vhosts:#?}"
                );
            }
            for vhost in here {
                assert_eq!(
                    vhost.routes.first().map(String::as_str),
                    Some("switchyard"),
                    "{vhost:?}"
                );
            }
        }
    }

    /// Envoy accepted every update, and listens on each target port (the Gateway's two listeners).
    fn assert_accepted(&self) {
        assert_eq!(self.gateway.rejected_updates(), 0, "{}", self.gateway.log_tail());
        assert!(
            !self.gateway.log().contains("Invalid path"),
            "{}",
            self.gateway.log_tail()
        );
        for target in self.targets.values() {
            assert!(
                self.gateway.listener_on(*target).is_some(),
                "{:?}",
                self.gateway.listeners()
            );
        }
    }
}

/// Routed through the filter: A, with the header the filter set.
fn assert_routed_by_filter(answers: &[Response]) {
    for answer in answers {
        assert_eq!(
            answer.upstream_header("x-route-cluster"),
            [CLUSTER_A],
            "{}",
            answer.body
        );
    }
}

/// The folder `deploy/istio/<name>/` as `kubectl apply -f` reads it.
fn folder(name: &str) -> Vec<Value> {
    deploy::folder(&deploy::istio_dir().join(name)).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn each_deploy_folder_is_accepted_by_the_api_server_as_it_is() {
    let istio = Istio::api_only().await.unwrap_or_else(|e| panic!("{e}"));
    let variants = deploy::variants().unwrap();
    assert_eq!(variants, ["envoyfilter", "wasmplugin"]);
    for variant in &variants {
        let objects = folder(variant);
        let kinds: Vec<(&str, &str)> = objects
            .iter()
            .map(|o| (o["kind"].as_str().unwrap(), o["metadata"]["name"].as_str().unwrap()))
            .collect();
        // One filter, one route: never both variants at once.
        let filter = match variant.as_str() {
            "wasmplugin" => ("WasmPlugin", "switchyard"),
            _ => ("EnvoyFilter", "switchyard"),
        };
        let mut sorted = kinds.clone();
        sorted.sort();
        let mut expected = vec![("EnvoyFilter", "switchyard-route"), filter];
        expected.sort();
        assert_eq!(sorted, expected, "deploy/istio/{variant}/");
        istio
            .dry_run(&objects)
            .await
            .unwrap_or_else(|e| panic!("deploy/istio/{variant}/: {e}"));
    }
    // deploy/istio/ itself holds no manifest (so `kubectl apply -f deploy/istio/` applies nothing,
    // never both variants), and mesh-config/ holds operator input, not objects of this API server.
    assert!(deploy::kubectl_files(&deploy::istio_dir()).unwrap().is_empty());
    let mesh = folder("mesh-config");
    let operator: Vec<&Value> = mesh.iter().filter(|o| o["kind"] == "IstioOperator").collect();
    assert_eq!(operator.len(), 1);
    let refused = istio.dry_run(&[operator[0].clone()]).await.unwrap_err();
    assert!(refused.contains("IstioOperator"), "{refused}");
}

#[tokio::test]
async fn the_wasmplugin_folder_routes_every_host_and_port_by_the_filter() {
    let scene = scene().await;
    let mut objects = folder("wasmplugin");
    let plugin = deploy::find(&mut objects, "WasmPlugin", "switchyard").unwrap();
    // As `switchyard watch --wasmplugin … --wasm-url file://…` would set them (a file URL: istio-agent,
    // which fetches oci:// and https:// modules, does not run here).
    plugin["spec"]["url"] = json!(format!("file://{}", wasm().display()));
    plugin["spec"]["pluginConfig"] = table();
    scene.istio.apply(&objects).await.unwrap_or_else(|e| panic!("{e}"));

    let answers = scene
        .wait_all_reach("backend-a", "the filter routes every host and port")
        .await;
    assert_routed_by_filter(&answers);
    scene.assert_route_first_everywhere();
    scene.assert_accepted();
    // The mesh config of deploy/istio/mesh-config/ reached the gateway's connection managers.
    let managers = scene.gateway.connection_managers();
    assert_eq!(managers.len(), PORTS.len());
    for hcm in &managers {
        assert_eq!(hcm["normalize_path"], true, "{hcm}");
        assert_eq!(hcm["merge_slashes"], true, "{hcm}");
        assert_eq!(hcm["path_with_escaped_slashes_action"], "UNESCAPE_AND_FORWARD", "{hcm}");
    }
}

#[tokio::test]
async fn the_envoyfilter_folder_routes_every_host_and_port_by_the_filter() {
    let scene = scene().await;
    let mut objects = folder("envoyfilter");
    let path = "/spec/configPatches/0/patch/value/typed_config/config";
    let filter = deploy::find(&mut objects, "EnvoyFilter", "switchyard").unwrap();
    let config = filter.pointer_mut(path).unwrap();
    // As `switchyard watch --envoyfilter … --gateway-wasm-path PATH` would set them.
    config["vm_config"]["code"]["local"]["filename"] = json!(wasm().display().to_string());
    config["configuration"]["value"] = json!(table().to_string());
    scene.istio.apply(&objects).await.unwrap_or_else(|e| panic!("{e}"));

    let answers = scene
        .wait_all_reach("backend-a", "the filter routes every host and port")
        .await;
    assert_routed_by_filter(&answers);
    scene.assert_route_first_everywhere();
    scene.assert_accepted();

    // The folder's own path, where this machine has no .wasm: Envoy rejects the listeners (as the
    // file's comment warns) and keeps serving the previous ones.
    scene
        .istio
        .apply(&folder("envoyfilter"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    scene
        .gateway
        .wait_for(
            "Envoy rejects a listener whose .wasm path does not exist",
            |gw| match gw
                .log()
                .contains("Invalid path: /var/lib/switchyard/switchyard_filter.wasm")
            {
                true => Ok(()),
                false => Err(format!("{} rejected updates", gw.rejected_updates())),
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(scene.gateway.stat("listener_manager.lds.update_rejected") > 0);
    let answers = scene
        .wait_all_reach("backend-a", "the previous listeners still serve")
        .await;
    assert_routed_by_filter(&answers);
}
