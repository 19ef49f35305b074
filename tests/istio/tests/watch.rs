//! The real `switchyard watch --kubernetes` writing the Istio objects, through a real istiod, into
//! a plain Envoy as the ingress gateway (issue 27).
//!
//! For each sink, `--wasmplugin` (the module as a `file://` url to the real `.wasm`) and
//! `--envoyfilter` (`--gateway-wasm-path` the real `.wasm`), with its `deploy/istio/` folder applied
//! first as an operator does:
//! - an Ingress and an HTTPProxy are routed through the gateway by the filter;
//! - the filter runs after the gateway's authorization (an AuthorizationPolicy's RBAC filter) and
//!   before the router, in Envoy's HTTP filter chain as istiod built it; a denied request is denied;
//! - `deploy/istio/mesh-config/mesh.yaml`'s path normalisation: `..`, `%2e%2e`, `%2F` and `//` paths
//!   are routed, and forwarded, as the normalised path (docs/deploy-envoy.md, "Paths");
//! - a change is routed within seconds: 20 changes, each timed from the apply to the first request
//!   routed by it through istiod and Envoy (p50 and max printed);
//! - the sink object deleted is applied again by drift repair, and routing comes back.
//!
//! Needs what `make test-istio` sets (`KUBEBUILDER_ASSETS`, `PILOT_DISCOVERY`, `ISTIO_CRDS`,
//! `ENVOY_BIN`, `SWITCHYARD_WASM`, `SWITCHYARD_BIN`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, DynamicObject};
use kube::discovery::pinned_kind;
use serde_json::{json, Value};
use switchyard_e2e::{get, required_path, Backend, Request, Response};
use switchyard_envtest::manifests;
use switchyard_envtest::watch::Watch;
use switchyard_envtest::User;
use switchyard_istio::objects::{gateway, gateway_service, server, service_entry, virtual_service};
use switchyard_istio::{deploy, ingressgateway, listener_port, Gateway, Istio, ISTIO_SYSTEM, PATIENCE};

/// Istio's cluster names, as deploy/deployment.yaml runs the watch.
const CLUSTER_TEMPLATE: &str = "outbound|{port}||{service}.{namespace}.svc.cluster.local";
/// How many changes are timed.
const CHANGES: usize = 20;

/// Which sink the watch keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sink {
    WasmPlugin,
    EnvoyFilter,
}

impl Sink {
    fn kind(self) -> &'static str {
        match self {
            Sink::WasmPlugin => "WasmPlugin",
            Sink::EnvoyFilter => "EnvoyFilter",
        }
    }

    fn api_version(self) -> &'static str {
        match self {
            Sink::WasmPlugin => "extensions.istio.io/v1alpha1",
            Sink::EnvoyFilter => "networking.istio.io/v1alpha3",
        }
    }

    /// The name of the filter in the gateway's HTTP filters (a WasmPlugin is an ECDS extension named
    /// `<namespace>.<name>`; the EnvoyFilter inserts a filter named `switchyard`).
    fn filter_name(self) -> &'static str {
        match self {
            Sink::WasmPlugin => "istio-system.switchyard",
            Sink::EnvoyFilter => "switchyard",
        }
    }

    /// The watch's flags for this sink, the module being the real `.wasm`.
    fn args(self) -> Vec<String> {
        match self {
            Sink::WasmPlugin => vec![
                "--wasmplugin".into(),
                "istio-system/switchyard".into(),
                "--wasm-url".into(),
                wasm_url(),
            ],
            Sink::EnvoyFilter => vec![
                "--envoyfilter".into(),
                "istio-system/switchyard".into(),
                "--gateway-wasm-path".into(),
                wasm().display().to_string(),
            ],
        }
    }

    /// `deploy/istio/<folder>/` as an operator applies it, the module pointed at the real `.wasm`.
    fn folder(self) -> Vec<Value> {
        let name = match self {
            Sink::WasmPlugin => "wasmplugin",
            Sink::EnvoyFilter => "envoyfilter",
        };
        let mut objects = deploy::folder(&deploy::istio_dir().join(name)).unwrap_or_else(|e| panic!("{e}"));
        let object = deploy::find(&mut objects, self.kind(), "switchyard").unwrap();
        match self {
            Sink::WasmPlugin => object["spec"]["url"] = json!(wasm_url()),
            Sink::EnvoyFilter => {
                let config = object
                    .pointer_mut("/spec/configPatches/0/patch/value/typed_config/config")
                    .unwrap();
                config["vm_config"]["code"]["local"]["filename"] = json!(wasm().display().to_string());
            }
        }
        objects
    }
}

/// The real filter (`make build-wasm`).
fn wasm() -> PathBuf {
    required_path("SWITCHYARD_WASM")
}

fn wasm_url() -> String {
    format!("file://{}", wasm().display())
}

/// The Ingress: `shop.example.com` to backend-a; on `norm.example.com`, `/public` to backend-a and
/// `/admin` to backend-b (the path normalisation cases).
fn ingress(ns: &str) -> Value {
    let path = |p: &str, service: &str| json!({"path": p, "pathType": "Prefix", "backend": {"service": {"name": service, "port": {"number": 80}}}});
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "shop", "namespace": ns},
        "spec": {"rules": [
            {"host": "shop.example.com", "http": {"paths": [path("/", "backend-a")]}},
            {"host": "norm.example.com", "http": {"paths": [path("/public", "backend-a"), path("/admin", "backend-b")]}}
        ]}
    })
}

/// An Ingress named `change` sending `host` to backend-a (each timed change gives it a new host).
fn change(ns: &str, host: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "change", "namespace": ns},
        "spec": {"rules": [{"host": host, "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "backend-a", "port": {"number": 80}}}}
        ]}}]}
    })
}

/// The HTTPProxy: `proxy.example.com` to backend-b.
fn httpproxy(ns: &str) -> Value {
    json!({
        "apiVersion": "projectcontour.io/v1",
        "kind": "HTTPProxy",
        "metadata": {"name": "proxy", "namespace": ns},
        "spec": {
            "virtualhost": {"fqdn": "proxy.example.com"},
            "routes": [{"conditions": [{"prefix": "/"}], "services": [{"name": "backend-b", "port": 80}]}]
        }
    })
}

/// An AuthorizationPolicy of the gateway denying every path under `/denied`: istiod gives the
/// gateway Envoy's RBAC filter (`envoy.filters.http.rbac`).
fn deny_policy() -> Value {
    json!({
        "apiVersion": "security.istio.io/v1beta1",
        "kind": "AuthorizationPolicy",
        "metadata": {"name": "deny-denied", "namespace": ISTIO_SYSTEM},
        "spec": {
            "selector": {"matchLabels": ingressgateway()},
            "action": "DENY",
            "rules": [{"to": [{"operation": {"paths": ["/denied", "/denied/*"]}}]}]
        }
    })
}

/// The gateway (one HTTP server on port 80 for every host, a VirtualService sending everything to
/// backend-c), the backends behind ServiceEntries, the deploy folder of `sink`, and the watch.
struct Scene {
    sink: Sink,
    istio: Istio,
    gateway: Gateway,
    /// The port Envoy listens on for the Gateway's port 80.
    port: u16,
    ns: String,
    watch: Option<Watch>,
    _backends: [Backend; 3],
}

fn host_of(name: &str, ns: &str) -> String {
    format!("{name}.{ns}.svc.cluster.local")
}

async fn scene(sink: Sink) -> Scene {
    scene_with(sink, true).await
}

/// The scene, with the watch only when `watch` (else the deploy folder's table stays until a test
/// applies its own).
async fn scene_with(sink: Sink, with_watch: bool) -> Scene {
    let istio = Istio::start().await.unwrap_or_else(|e| panic!("{e}"));
    let admin = istio.admin().await;
    // Without the other kinds' CRDs the watch waits for their stores.
    istio.install_other_kinds_crds(&admin).await;
    let ns = istio.env.namespace("shop").await;
    let backends = [
        Backend::start("backend-a").unwrap(),
        Backend::start("backend-b").unwrap(),
        Backend::start("backend-c").unwrap(),
    ];
    let port = listener_port().unwrap();
    let selector = ingressgateway();
    let mut objects = vec![
        gateway_service("istio-ingressgateway", &selector, &[(80, port)]),
        gateway("public", &selector, &[server(80, "http", &["*"])]),
        virtual_service("rest", &["*"], &["istio-system/public"], &host_of("backend-c", &ns), 80),
        deny_policy(),
    ];
    for (name, backend) in ["backend-a", "backend-b", "backend-c"].iter().zip(&backends) {
        objects.push(service_entry(name, &host_of(name, &ns), 80, "HTTP", backend.addr));
    }
    let mut folder = sink.folder();
    if with_watch {
        // The phase as the watch applies it, not as the folder has it.
        if let Some(plugin) = deploy::find(&mut folder, "WasmPlugin", "switchyard") {
            plugin["spec"].as_object_mut().unwrap().remove("phase");
        }
    }
    objects.extend(folder);
    istio.apply(&objects).await.unwrap_or_else(|e| panic!("{e}"));
    istio
        .apply(&[ingress(&ns), httpproxy(&ns)])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let gateway = istio.gateway("istio-ingressgateway-0", &selector);
    let mut args: Vec<String> = ["--namespaces", &ns, "--cluster-template", CLUSTER_TEMPLATE]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    args.extend(sink.args());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let bin = required_path("SWITCHYARD_BIN");
    let watch = match with_watch {
        true => {
            let mut watch = Watch::start(&bin, &istio.env.kubeconfig(User::Switchyard), &args).unwrap();
            watch.ready(PATIENCE).await.unwrap_or_else(|e| panic!("{e}"));
            Some(watch)
        }
        false => None,
    };
    Scene {
        sink,
        istio,
        gateway,
        port,
        ns,
        watch,
        _backends: backends,
    }
}

impl Scene {
    fn watch(&self) -> &Watch {
        self.watch.as_ref().expect("a scene with the watch")
    }

    fn watch_log(&self) -> String {
        self.watch.as_ref().map(Watch::log).unwrap_or_default()
    }

    fn cluster(&self, backend: &str) -> String {
        format!("outbound|80||{}", host_of(backend, &self.ns))
    }

    /// Whether `answer` came from `backend` by the filter's choice.
    fn by_filter(&self, answer: &Response, backend: &str) -> Result<(), String> {
        let cluster = self.cluster(backend);
        match answer.backend() == Some(backend) && answer.upstream_header("x-route-cluster") == [cluster.as_str()] {
            true => Ok(()),
            false => Err(format!(
                "{} from {:?}, x-route-cluster {:?} (want {backend} by {cluster})\n{}",
                answer.status,
                answer.backend(),
                answer.upstream_header("x-route-cluster"),
                answer.body
            )),
        }
    }

    /// Waits until each `(request, backend)` is routed by the filter to its backend.
    async fn wait_routed(&self, what: &str, cases: &[(Request, &str)]) -> Vec<Response> {
        let result = self
            .gateway
            .wait_for(what, |gw| {
                let mut answers = Vec::new();
                for (request, backend) in cases {
                    let answer = gw
                        .send(self.port, request)
                        .map_err(|e| format!("{} {}: {e}", request.host, request.path))?;
                    self.by_filter(&answer, backend)
                        .map_err(|e| format!("{} {}: {e}", request.host, request.path))?;
                    answers.push(answer);
                }
                Ok(answers)
            })
            .await;
        result.unwrap_or_else(|e| self.fail(&e))
    }

    fn fail(&self, e: &str) -> ! {
        panic!(
            "{}: {e}\n--- virtual hosts: {:#?}\n--- istiod:\n{}\n--- watch:\n{}",
            self.sink.kind(),
            self.gateway.virtual_hosts(),
            self.istio.istiod_log_tail(30),
            self.watch_log()
        )
    }

    /// The Ingress and the HTTPProxy, routed by the filter.
    fn routed(&self) -> Vec<(Request, &'static str)> {
        vec![
            (get("shop.example.com", "/cart"), "backend-a"),
            (get("proxy.example.com", "/"), "backend-b"),
        ]
    }

    /// The names of the HTTP filters of each HTTP connection manager, in order.
    fn http_filters(&self) -> Vec<Vec<String>> {
        self.gateway
            .connection_managers()
            .iter()
            .map(|hcm| {
                hcm["http_filters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|f| f["name"].as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .collect()
    }

    /// The API of the sink's kind in istio-system, as the admin.
    async fn sink_api(&self) -> Api<DynamicObject> {
        let admin = self.istio.admin().await;
        let gvk = manifests::gvk_of(&json!({"apiVersion": self.sink.api_version(), "kind": self.sink.kind()})).unwrap();
        let (resource, _) = pinned_kind(&admin, &gvk).await.unwrap();
        Api::namespaced_with(admin, ISTIO_SYSTEM, &resource)
    }

    /// istio-system/switchyard of the sink's kind, if it exists.
    async fn sink_object(&self) -> Option<DynamicObject> {
        self.sink_api().await.get_opt("switchyard").await.ok().flatten()
    }

    /// Deletes it; returns the uid it had.
    async fn delete_sink_object(&self) -> Option<String> {
        let uid = self.sink_object().await.and_then(|o| o.metadata.uid);
        self.sink_api()
            .await
            .delete("switchyard", &DeleteParams::default())
            .await
            .unwrap();
        uid
    }
}

/// The median and the largest of `samples`.
fn p50_max(samples: &[Duration]) -> (Duration, Duration) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    (sorted[sorted.len() / 2], sorted[sorted.len() - 1])
}

async fn the_watch_routes_through_istiod(sink: Sink) {
    let scene = scene(sink).await;
    let kind = sink.kind();

    // The Ingress and the HTTPProxy, through the filter.
    scene
        .wait_routed("the Ingress and the HTTPProxy routed", &scene.routed())
        .await;
    assert_eq!(scene.gateway.rejected_updates(), 0, "{}", scene.gateway.log_tail());

    // The filter's place: after the authorization filter, before the router.
    let chains = scene.http_filters();
    assert!(!chains.is_empty(), "no HTTP connection manager");
    for filters in &chains {
        let at = |name: &str| {
            filters
                .iter()
                .position(|f| f == name)
                .unwrap_or_else(|| panic!("{kind}: no {name} in {filters:?}"))
        };
        let (rbac, ours, router) = (
            at("envoy.filters.http.rbac"),
            at(sink.filter_name()),
            at("envoy.filters.http.router"),
        );
        assert!(rbac < ours && ours < router, "{kind}: {filters:?}");
        eprintln!("{kind}: the gateway's HTTP filters: {filters:?}");
    }
    let denied = scene
        .gateway
        .send(scene.port, &get("shop.example.com", "/denied/x"))
        .unwrap();
    assert_eq!(denied.status, 403, "{}", denied.body);
    assert_eq!(denied.backend(), None, "{}", denied.body);

    // The mesh config's path normalisation: the path routed is the path forwarded.
    let norm = |path: &str| get("norm.example.com", path);
    let answers = scene
        .wait_routed(
            "normalised paths",
            &[
                (norm("/public/x"), "backend-a"),
                (norm("/admin/x"), "backend-b"),
                (norm("/public/../admin"), "backend-b"),
                (norm("/public/%2e%2e/admin"), "backend-b"),
                (norm("/public%2F..%2Fadmin"), "backend-b"),
                (norm("//admin"), "backend-b"),
                (norm("/admin%2Fsecret?a=%2F"), "backend-b"),
            ],
        )
        .await;
    let forwarded: Vec<&str> = answers.iter().filter_map(Response::upstream_path).collect();
    assert_eq!(
        forwarded,
        [
            "/public/x",
            "/admin/x",
            "/admin",
            "/admin",
            "/admin",
            "/admin",
            "/admin/secret?a=%2F"
        ],
        "{kind}"
    );
    // A `..` into a denied path is denied: authorization sees the normalised path too.
    let denied = scene
        .gateway
        .send(scene.port, &get("shop.example.com", "/public/..%2Fdenied"))
        .unwrap();
    assert_eq!(denied.status, 403, "{}", denied.body);

    // Changes, each timed from the apply to the first request routed by it.
    let admin = scene.istio.admin().await;
    let mut samples = Vec::new();
    for i in 0..CHANGES {
        let host = format!("c{i}.example.com");
        let started = Instant::now();
        manifests::apply(&admin, &change(&scene.ns, &host))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        loop {
            let answer = scene.gateway.send(scene.port, &get(&host, "/"));
            if answer.is_ok_and(|a| scene.by_filter(&a, "backend-a").is_ok()) {
                break;
            }
            if started.elapsed() > PATIENCE {
                scene.fail(&format!("change {i} ({host}) not routed within {PATIENCE:?}"));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        samples.push(started.elapsed());
    }
    let (p50, max) = p50_max(&samples);
    eprintln!(
        "{kind}: change -> routed through istiod and Envoy over {CHANGES} changes: p50 {} ms, max {} ms",
        p50.as_millis(),
        max.as_millis()
    );
    assert!(max < Duration::from_secs(10), "{kind}: {samples:?}");

    // The sink object deleted: applied again, routing back.
    let started = Instant::now();
    let deleted = scene.delete_sink_object().await;
    assert!(deleted.is_some());
    let mut cases = scene.routed();
    cases.push((get(&format!("c{}.example.com", CHANGES - 1), "/"), "backend-a"));
    // A new object (another uid), created by the watch, with the phase it applies.
    let check = async || {
        let object = scene.sink_object().await;
        let uid = object.as_ref().and_then(|o| o.metadata.uid.clone());
        let log = scene.watch().log();
        match uid.is_some() && uid != deleted && log.contains("applied again") {
            true => Ok(object),
            false => Err(format!(
                "uid {uid:?} (deleted {deleted:?}), `applied again` in the log: {}",
                log.contains("applied again")
            )),
        }
    };
    let restored = switchyard_envtest::watch::eventually_async(
        &format!("the deleted {kind} applied again"),
        PATIENCE,
        check,
        || scene.watch_log(),
    )
    .await
    .unwrap();
    if sink == Sink::WasmPlugin {
        assert_eq!(restored.data["spec"]["phase"], "STATS", "{:?}", restored.data);
    }
    scene.wait_routed("routed again after the deletion", &cases).await;
    eprintln!(
        "{kind}: deleted -> applied again and routed: {} ms",
        started.elapsed().as_millis()
    );
    assert_eq!(scene.gateway.rejected_updates(), 0, "{}", scene.gateway.log_tail());
    let log = scene.watch_log();
    assert!(!log.contains("Forbidden"), "{log}");
}

#[tokio::test]
async fn the_watch_with_wasmplugin_routes_through_istiod() {
    the_watch_routes_through_istiod(Sink::WasmPlugin).await;
}

#[tokio::test]
async fn the_watch_with_envoyfilter_routes_through_istiod() {
    the_watch_routes_through_istiod(Sink::EnvoyFilter).await;
}

/// A 100,000-rule table (`host-sim/bench/table.py`, one rule sending to backend-a), in the compact
/// form (`switchyard convert --encoding compact`), applied as the WasmPlugin's `pluginConfig`:
/// timed from the apply to the first request routed by it through istiod and Envoy.
#[tokio::test]
async fn a_100k_rule_table_reaches_the_gateway_through_the_wasmplugin() {
    let scene = scene_with(Sink::WasmPlugin, false).await;
    let dir = switchyard_e2e::fresh_dir("istio-100k");
    let script = switchyard_envtest::project_root().join("host-sim/bench/table.py");
    let output = std::process::Command::new("python3")
        .arg(&script)
        .arg("100000")
        .output()
        .unwrap_or_else(|e| panic!("python3 {}: {e}", script.display()));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    // The bench request's rule (svc<mid>.example.net /api/v3) to backend-a, by Istio's cluster name.
    let url = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    let host = url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let mut table: Value = serde_json::from_slice(&output.stdout).unwrap();
    let cluster = scene.cluster("backend-a");
    let rules = table["rules"].as_array_mut().unwrap();
    assert_eq!(rules.len(), 100_000);
    let rule = rules
        .iter_mut()
        .find(|r| r["host"] == host.as_str() && r["path"]["value"] == "/api/v3")
        .unwrap();
    rule["action"]["route"]["backends"] = json!([{"cluster": cluster}]);
    let file = dir.join("table.json");
    switchyard_e2e::write_file(&file, &table.to_string());
    let bin = required_path("SWITCHYARD_BIN");
    let output = std::process::Command::new(&bin)
        .arg("convert")
        .arg(&file)
        .args(["--encoding", "compact"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let compact: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut objects = Sink::WasmPlugin.folder();
    let plugin = deploy::find(&mut objects, "WasmPlugin", "switchyard").unwrap();
    plugin["spec"]["pluginConfig"] = compact;
    let bytes = serde_json::to_vec(plugin).unwrap().len();

    let started = Instant::now();
    scene.istio.apply(&objects).await.unwrap_or_else(|e| panic!("{e}"));
    let applied = started.elapsed();
    scene
        .wait_routed(
            "the 100,000-rule table routes",
            &[(get(&host, "/api/v3/items?id=1"), "backend-a")],
        )
        .await;
    let routed = started.elapsed();
    eprintln!(
        "100,000 rules, compact WasmPlugin of {bytes} bytes: applied in {} ms, routed through istiod and Envoy {} ms after the apply",
        applied.as_millis(),
        routed.as_millis()
    );
    assert_eq!(scene.gateway.rejected_updates(), 0, "{}", scene.gateway.log_tail());
    let _ = std::fs::remove_dir_all(&dir);
}
