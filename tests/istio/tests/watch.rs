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
//! And 100,000 rules through the WasmPlugin: 10,000 Ingresses of 10 paths in the API server, then the
//! watch (sharded form, its default) started; timed from its start to the first requests routed by that table.
//!
//! Needs what `make test-istio` sets (`KUBEBUILDER_ASSETS`, `PILOT_DISCOVERY`, `ISTIO_CRDS`,
//! `ENVOY_BIN`, `SWITCHYARD_WASM`, `SWITCHYARD_BIN`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::discovery::pinned_kind;
use kube::Client;
use serde_json::{json, Value};
use switchyard_e2e::{get, required_path, Backend, Request, Response};
use switchyard_envtest::manifests;
use switchyard_envtest::watch::Watch;
use switchyard_envtest::User;
use switchyard_free_port::free_port;
use switchyard_istio::objects::{gateway, gateway_service, server, service_entry, virtual_service};
use switchyard_istio::{deploy, ingressgateway, Gateway, Istio, ISTIO_SYSTEM, PATIENCE};

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

/// The scene with the watch started and ready.
async fn scene(sink: Sink) -> Scene {
    let mut scene = setup(sink).await;
    scene.start_watch(&[], true, PATIENCE).await;
    scene
}

/// The scene without the watch yet (the deploy folder's table serves until [`Scene::start_watch`]).
async fn setup(sink: Sink) -> Scene {
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
    let port = free_port();
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
    // The phase as the watch applies it, not as the folder has it.
    if let Some(plugin) = deploy::find(&mut folder, "WasmPlugin", "switchyard") {
        plugin["spec"].as_object_mut().unwrap().remove("phase");
    }
    objects.extend(folder);
    istio.apply(&objects).await.unwrap_or_else(|e| panic!("{e}"));
    istio
        .apply(&[ingress(&ns), httpproxy(&ns)])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let gateway = istio.gateway("istio-ingressgateway-0", &selector);
    Scene {
        sink,
        istio,
        gateway,
        port,
        ns,
        watch: None,
        _backends: backends,
    }
}

impl Scene {
    /// Starts `switchyard watch --kubernetes` on the scene's namespace with the sink's flags and
    /// `extra`, as the ServiceAccount user (with a table file, `-o`, when `table_file`: a 100,000-rule
    /// table's indented JSON costs a debug build seconds); waits until it is ready.
    async fn start_watch(&mut self, extra: &[&str], table_file: bool, ready_within: Duration) {
        let mut args: Vec<String> = ["--namespaces", &self.ns, "--cluster-template", CLUSTER_TEMPLATE]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        args.extend(self.sink.args());
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let bin = required_path("SWITCHYARD_BIN");
        let kubeconfig = self.istio.env.kubeconfig(User::Switchyard);
        let watch = match table_file {
            true => Watch::start(&bin, &kubeconfig, &args),
            false => Watch::start_without_table_file(&bin, &kubeconfig, &args),
        };
        let watch = self.watch.insert(watch.unwrap());
        if let Err(e) = watch.ready(ready_within).await {
            self.fail(&e);
        }
    }

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
    // Every change routed (the loop above waited at most PATIENCE each); the latency is the figure above.
    assert!(max < PATIENCE, "{kind}: {samples:?}");

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

/// The 100,000-rule cluster: [`INGRESSES`] Ingresses of [`PATHS`] paths each over [`HOSTS`] hosts.
const INGRESSES: usize = 10_000;
const PATHS: usize = 10;
const HOSTS: usize = 1_000;
/// Create requests in flight at once while the Ingresses are put into the API server.
const PARALLEL: usize = 16;

/// Ingress `app<i>` of the 100,000-rule cluster: host `h<i % HOSTS>.example.com`, paths
/// `/app<i>/p<j>` (Prefix) to backend-a.
fn app_ingress(ns: &str, i: usize) -> Value {
    let paths: Vec<Value> = (0..PATHS)
        .map(|j| {
            json!({"path": format!("/app{i}/p{j}"), "pathType": "Prefix",
            "backend": {"service": {"name": "backend-a", "port": {"number": 80}}}})
        })
        .collect();
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": format!("app{i}"), "namespace": ns},
        "spec": {"rules": [{"host": format!("h{}.example.com", i % HOSTS), "http": {"paths": paths}}]}
    })
}

/// Creates `objects` (of one kind, in one namespace) as the admin, [`PARALLEL`] requests at a time:
/// a plain create, cheaper for the API server than a server-side apply (no managed fields to merge).
async fn create_all(admin: &Client, objects: Vec<Value>) {
    let Some(first) = objects.first() else { return };
    let gvk = manifests::gvk_of(first).unwrap();
    let (resource, _) = pinned_kind(admin, &gvk).await.unwrap();
    let ns = first["metadata"]["namespace"].as_str().unwrap().to_owned();
    let api: Api<DynamicObject> = Api::namespaced_with(admin.clone(), &ns, &resource);
    let mut lanes: Vec<Vec<DynamicObject>> = (0..PARALLEL).map(|_| Vec::new()).collect();
    for (i, object) in objects.into_iter().enumerate() {
        lanes[i % PARALLEL].push(serde_json::from_value(object).unwrap());
    }
    let tasks: Vec<_> = lanes
        .into_iter()
        .map(|lane| {
            let api = api.clone();
            tokio::spawn(async move {
                for object in lane {
                    let name = object.metadata.name.clone().unwrap_or_default();
                    api.create(&PostParams::default(), &object)
                        .await
                        .map_err(|e| format!("{} {name}: {e}", gvk_kind(&object)))?;
                }
                Ok::<(), String>(())
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap_or_else(|e| panic!("{e}"));
    }
}

fn gvk_kind(object: &DynamicObject) -> &str {
    object.types.as_ref().map_or("", |t| t.kind.as_str())
}

/// A 100,000-rule table through the real watch: 10,000 Ingresses of 10 paths each (over 1,000
/// hosts) created in the API server, then `switchyard watch --kubernetes --wasmplugin ...
/// ` started: it compiles them and applies the WasmPlugin (the sharded form, the default;
/// the JSON would be some 18 MB, past etcd's limit), istiod turns it into the gateway's ECDS
/// extension, and the filter in Envoy routes by it. Timed from the watch's start (the objects in
/// place) to its `/readyz`, and to the first requests routed by rules of that table.
#[tokio::test]
async fn a_100k_rule_table_reaches_the_gateway_through_the_wasmplugin() {
    let mut scene = setup(Sink::WasmPlugin).await;
    let admin = scene.istio.admin().await;
    let ingresses: Vec<Value> = (0..INGRESSES).map(|i| app_ingress(&scene.ns, i)).collect();
    let started = Instant::now();
    create_all(&admin, ingresses).await;
    let created = started.elapsed();

    let started = Instant::now();
    // A debug build compiles and encodes 100,000 rules in some seconds; on 2 busy cores, more.
    scene.start_watch(&[], false, Duration::from_secs(240)).await;
    let ready = started.elapsed();
    // Rules of the first, a middle and the last Ingress, and one of the scene's own.
    let rule = |i: usize, j: usize| get(&format!("h{}.example.com", i % HOSTS), &format!("/app{i}/p{j}/x"));
    let cases = [
        (rule(0, 0), "backend-a"),
        (rule(INGRESSES / 2, PATHS / 2), "backend-a"),
        (rule(INGRESSES - 1, PATHS - 1), "backend-a"),
        (get("proxy.example.com", "/"), "backend-b"),
    ];
    scene.wait_routed("the 100,000-rule table routes", &cases).await;
    let routed = started.elapsed();

    let status = scene.watch().status();
    let rules = status["rules"].as_u64().unwrap_or_default();
    assert!(rules >= (INGRESSES * PATHS) as u64, "{rules} rules: {status}");
    let plugin = scene.sink_object().await.expect("the WasmPlugin");
    let config = &plugin.data["spec"]["pluginConfig"];
    assert!(
        config.as_object().is_some_and(|c| c.contains_key("table_shards")),
        "not the sharded form: {}",
        &config.to_string()[..config.to_string().len().min(200)]
    );
    let bytes = serde_json::to_vec(&plugin).unwrap().len();
    eprintln!(
        "{INGRESSES} Ingresses of {PATHS} paths ({rules} rules) created in {} ms ({PARALLEL} at a time); \
         the watch started -> ready (WasmPlugin applied, {bytes} bytes as stored) {} ms, \
         -> first requests routed by the table through istiod and Envoy {} ms",
        created.as_millis(),
        ready.as_millis(),
        routed.as_millis()
    );
    let log = scene.watch_log();
    // Where the watch's time went: the store synced, the compile, the push (with its log's times).
    for line in log.lines().filter(|l| {
        ["synced", "compiled everything", "pushed", "removed pluginConfig"]
            .iter()
            .any(|w| l.contains(w))
    }) {
        eprintln!("  watch: {}", &line[..line.len().min(240)]);
    }
    assert!(!log.contains("Forbidden") && !log.contains("refused"), "{log}");
    // Over the WasmPlugin of deploy/istio/ (its pluginConfig an empty JSON table: another field
    // manager's keys), the watch writes `table_shards` and removes those keys in one request
    // (sidecar/src/watch/sink/istio.rs): istiod never sees the two side by side, so the filter
    // never refuses an update on the way.
    assert!(log.contains("removed pluginConfig keys"), "{log}");
    assert_eq!(
        scene.gateway.rejected_updates(),
        0,
        "an ECDS update was rejected on the way:\n{}",
        scene.gateway.log_tail()
    );
}
