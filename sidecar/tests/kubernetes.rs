//! `switchyard watch --kubernetes` against a stand-in API server (tests/apiserver): a real kube
//! `Client`, watchers and reflector stores speaking the list/watch wire protocol over 127.0.0.1.
//! Every test asserts what was pushed (the table file sink, the WasmPlugin applied) and what was
//! written back (status patches, events), through resourceVersions, bookmarks, 410 Gone and relist,
//! dropped watch connections and an unavailable API server.

mod apiserver;

use std::time::Duration;

use apiserver::{ApiServer, HTTPPROXY, INGRESS, INGRESS_CLASS, SERVICE};
use serde_json::{json, Value};
use switchyard::watch::debounce::Debounce;
use switchyard::watch::engine::Engine;
use switchyard::watch::istio::{IstioKind, IstioSettings, IstioSink};
use switchyard::watch::kubernetes::{follow, Settings};
use switchyard::watch::sinks::Sink;
use switchyard::watch::state::Shared;
use switchyard::Options;

const PATIENCE: Duration = Duration::from_secs(15);

fn ingress(namespace: &str, name: &str, host: &str, service: &str) -> Value {
    json!({
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"rules": [{"host": host, "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": service, "port": {"number": 80}}}}
        ]}}]}
    })
}

fn proxy(namespace: &str, name: &str, fqdn: &str, include: Option<&str>) -> Value {
    let mut spec = json!({
        "virtualhost": {"fqdn": fqdn},
        "routes": [{"conditions": [{"prefix": "/"}], "services": [{"name": "api", "port": 80}]}]
    });
    if let Some(include) = include {
        spec["includes"] = json!([{"name": include, "namespace": namespace, "conditions": [{"prefix": "/sub"}]}]);
    }
    json!({"metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2024-01-01T00:00:00Z"}, "spec": spec})
}

/// The watch under test, with a table-file sink and a WasmPlugin sink.
struct Running {
    state: Shared,
    table_file: std::path::PathBuf,
    _dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<Result<(), String>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn start(api: &ApiServer, namespaces: &[&str]) -> Running {
    start_with(api, namespaces, Options::default(), false)
}

fn start_with(api: &ApiServer, namespaces: &[&str], options: Options, without_httpproxy: bool) -> Running {
    let client = api.client();
    let dir = tempfile::tempdir().unwrap();
    let table_file = dir.path().join("table.json");
    let state = Shared::default();
    let istio = IstioSettings {
        selector: [("istio".to_owned(), "ingressgateway".to_owned())].into(),
        wasm_url: "oci://registry.example/switchyard:1".into(),
        wasm_path: "/w.wasm".into(),
        filter_name: "switchyard".into(),
        runtime: "envoy.wasm.runtime.v8".into(),
    };
    let sinks = vec![
        Sink::TableFile(table_file.clone()),
        Sink::Istio(IstioSink {
            client: client.clone(),
            kind: IstioKind::WasmPlugin,
            namespace: "istio-system".into(),
            name: "switchyard".into(),
            settings: istio,
        }),
    ];
    let engine = Engine::new(options, sinks, state.clone());
    let settings = Settings {
        namespaces: namespaces.iter().map(|s| (*s).to_owned()).collect(),
        publish_addresses: vec!["203.0.113.7".into()],
        write_status: true,
        httpproxy: !without_httpproxy,
        controller_name: "switchyard.io/ingress-controller".into(),
    };
    let debounce = Debounce {
        quiet: Duration::from_millis(20),
        max: Duration::from_millis(200),
    };
    let task = tokio::spawn(follow(client, settings, engine, state.clone(), debounce));
    Running {
        state,
        table_file,
        _dir: dir,
        task,
    }
}

impl Running {
    /// The rule names of the table last pushed (empty before the first push).
    fn rules(&self) -> Vec<String> {
        let Some(table) = self.state.lock().table.clone() else {
            return Vec::new();
        };
        let table: Value = serde_json::from_str(&table).unwrap();
        table["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_owned())
            .collect()
    }

    fn generation(&self) -> u64 {
        self.state.lock().generation
    }
}

/// Polls `check` until it holds; fails with `what` after [`PATIENCE`].
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn seed(api: &ApiServer) {
    api.put(INGRESS, ingress("shop", "web", "shop.example", "web"));
    api.put(
        SERVICE,
        json!({"metadata": {"name": "web", "namespace": "shop"}, "spec": {"ports": [{"name": "http", "port": 80}]}}),
    );
    api.put(HTTPPROXY, proxy("shop", "root", "api.example", None));
}

#[tokio::test]
async fn nothing_is_pushed_before_every_store_has_synced() {
    let api = ApiServer::start().await;
    seed(&api);
    api.refuse(HTTPPROXY, true);
    let running = start(&api, &[]);
    // The Ingress, IngressClass and Service stores sync; HTTPProxy answers 404 (no CRD yet).
    eventually("the Ingress list was served", || {
        api.lists(INGRESS) >= 1 && api.lists(INGRESS_CLASS) >= 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(running.generation(), 0, "pushed before the HTTPProxy store synced");
    assert!(!running.table_file.exists());
    let reason = running.state.lock().readiness().unwrap_err();
    assert!(reason.contains("no table pushed yet"), "{reason}");
    assert!(
        reason.contains("HTTPProxy"),
        "/readyz names the store it waits for: {reason}"
    );

    api.refuse(HTTPPROXY, false);
    eventually("the first push", || running.generation() == 1).await;
    assert_eq!(running.rules(), ["Ingress/shop/web#0", "HTTPProxy/shop/root#0"]);
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&running.table_file).unwrap()).unwrap();
    assert_eq!(written["rules"].as_array().unwrap().len(), 2);
    eventually("ready", || running.state.lock().readiness().is_ok()).await;
}

#[tokio::test]
async fn without_httpproxy_a_cluster_lacking_the_crd_is_routed() {
    let api = ApiServer::start().await;
    seed(&api);
    api.refuse(HTTPPROXY, true);
    let running = start_with(&api, &[], Options::default(), true);
    eventually("the first push", || running.generation() == 1).await;
    assert_eq!(running.rules(), ["Ingress/shop/web#0"]);
    assert!(
        !api.requests().iter().any(|r| r.path.contains("httpproxies")),
        "HTTPProxies are not even asked for"
    );
}

#[tokio::test]
async fn changes_are_pushed_to_the_table_file_and_the_wasmplugin_by_server_side_apply() {
    let api = ApiServer::start().await;
    seed(&api);
    let running = start(&api, &[]);
    eventually("the first push", || running.generation() == 1).await;

    let applied = api.requests_to("PATCH", "/namespaces/istio-system/wasmplugins/switchyard");
    assert_eq!(applied.len(), 1, "one server-side apply per table");
    assert_eq!(
        applied[0].query.get("fieldManager").map(String::as_str),
        Some("switchyard")
    );
    assert_eq!(applied[0].query.get("force").map(String::as_str), Some("true"));
    assert!(
        applied[0].content_type.starts_with("application/apply-patch"),
        "{}",
        applied[0].content_type
    );
    assert_eq!(
        applied[0].body["spec"]["pluginConfig"]["rules"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(applied[0].body["spec"]["url"], "oci://registry.example/switchyard:1");

    // A new Ingress arrives through the watch.
    api.put(INGRESS, ingress("shop", "blog", "blog.example", "blog"));
    eventually("the new Ingress routed", || {
        running.rules().contains(&"Ingress/shop/blog#0".to_owned())
    })
    .await;
    assert_eq!(running.generation(), 2);
    // A change that does not change the table is not pushed.
    let mut same = ingress("shop", "blog", "blog.example", "blog");
    same["metadata"]["labels"] = json!({"team": "blog"});
    api.put(INGRESS, same);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(running.generation(), 2, "a label change does not change the table");
    assert_eq!(api.requests_to("PATCH", "/wasmplugins/switchyard").len(), 2);
    // A deletion.
    api.delete(INGRESS, "shop", "web");
    eventually("the deleted Ingress gone", || {
        !running.rules().contains(&"Ingress/shop/web#0".to_owned())
    })
    .await;
    let file = std::fs::read_to_string(&running.table_file).unwrap();
    assert!(
        !file.contains("Ingress/shop/web#0") && file.contains("Ingress/shop/blog#0"),
        "{file}"
    );
}

#[tokio::test]
async fn the_envoyfilter_sink_applies_the_table_inside_the_wasm_configuration() {
    let api = ApiServer::start().await;
    seed(&api);
    let client = api.client();
    let dir = tempfile::tempdir().unwrap();
    let state = Shared::default();
    let settings = IstioSettings {
        selector: [("istio".to_owned(), "ingressgateway".to_owned())].into(),
        wasm_url: String::new(),
        wasm_path: "/var/lib/switchyard/switchyard_filter.wasm".into(),
        filter_name: "switchyard".into(),
        runtime: "envoy.wasm.runtime.v8".into(),
    };
    let sinks = vec![
        Sink::TableFile(dir.path().join("t.json")),
        Sink::Istio(IstioSink {
            client: client.clone(),
            kind: IstioKind::EnvoyFilter,
            namespace: "istio-system".into(),
            name: "switchyard".into(),
            settings,
        }),
    ];
    let engine = Engine::new(Options::default(), sinks, state.clone());
    let settings = Settings {
        namespaces: vec![],
        publish_addresses: vec![],
        write_status: false,
        httpproxy: true,
        controller_name: "c".into(),
    };
    let debounce = Debounce {
        quiet: Duration::from_millis(20),
        max: Duration::from_millis(200),
    };
    let task = tokio::spawn(follow(client, settings, engine, state.clone(), debounce));
    eventually("the first push", || state.lock().generation == 1).await;
    let applied = api.requests_to(
        "PATCH",
        "/apis/networking.istio.io/v1alpha3/namespaces/istio-system/envoyfilters/switchyard",
    );
    assert_eq!(applied.len(), 1);
    assert_eq!(
        applied[0].query.get("fieldManager").map(String::as_str),
        Some("switchyard")
    );
    let config = &applied[0].body["spec"]["configPatches"][0]["patch"]["value"]["typed_config"]["config"];
    let table: Value = serde_json::from_str(config["configuration"]["value"].as_str().unwrap()).unwrap();
    assert_eq!(table["rules"].as_array().unwrap().len(), 2);
    assert!(
        api.requests().iter().all(|r| !r.path.ends_with("/status")),
        "--no-status-write writes nothing"
    );
    task.abort();
}

#[tokio::test]
async fn a_410_gone_relists_and_the_table_follows() {
    let api = ApiServer::start().await;
    seed(&api);
    api.put(INGRESS, ingress("shop", "blog", "blog.example", "blog"));
    let running = start(&api, &[]);
    eventually("the first push", || running.generation() == 1).await;
    let lists = api.lists(INGRESS);

    // While the watch is cut, an Ingress is deleted and the history compacted: the watcher resumes
    // from a resourceVersion the server no longer has, gets 410 Gone and lists again.
    api.refuse(INGRESS, true);
    api.delete(INGRESS, "shop", "blog");
    api.compact();
    api.refuse(INGRESS, false);
    eventually("the deleted Ingress gone after the relist", || {
        !running.rules().contains(&"Ingress/shop/blog#0".to_owned())
    })
    .await;
    assert!(api.gone() >= 1, "the watch was answered 410 Gone");
    assert!(api.lists(INGRESS) > lists, "the watcher listed again");
    assert!(
        running.rules().contains(&"Ingress/shop/web#0".to_owned()),
        "the relist kept the other Ingress"
    );
}

#[tokio::test]
async fn a_410_during_a_live_watch_relists_without_marking_the_source_down() {
    let api = ApiServer::start().await;
    seed(&api);
    let running = start(&api, &[]);
    eventually("the first push", || running.generation() == 1).await;
    let lists = api.lists(INGRESS);
    // Compact past every watcher and end the watches: each resumes at an expired version.
    api.put(INGRESS, ingress("shop", "new", "new.example", "web"));
    api.compact();
    api.drop_watches();
    eventually("the new Ingress routed", || {
        running.rules().contains(&"Ingress/shop/new#0".to_owned())
    })
    .await;
    api.put(
        SERVICE,
        json!({"metadata": {"name": "other", "namespace": "shop"}, "spec": {"ports": [{"port": 80}]}}),
    );
    api.compact();
    api.drop_watches();
    eventually("the Ingress watcher relisted", || api.lists(INGRESS) > lists).await;
    assert!(api.gone() >= 1, "the watches were answered 410 Gone");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        running.state.lock().down.is_empty(),
        "410 is routine: {:?}",
        running.state.lock().down
    );
}

#[tokio::test]
async fn a_dropped_watch_resumes_from_its_resource_version_without_listing() {
    let api = ApiServer::start().await;
    seed(&api);
    let running = start(&api, &[]);
    eventually("the first push", || running.generation() == 1).await;
    let lists = api.lists(INGRESS);
    api.drop_watches();
    api.put(INGRESS, ingress("shop", "blog", "blog.example", "blog"));
    eventually("the change made while reconnecting", || {
        running.rules().contains(&"Ingress/shop/blog#0".to_owned())
    })
    .await;
    assert_eq!(api.lists(INGRESS), lists, "resumed by resourceVersion: no relist");
    assert_eq!(api.gone(), 0);
    let watches: Vec<_> = api
        .requests()
        .into_iter()
        .filter(|r| r.path == "/apis/networking.k8s.io/v1/ingresses" && r.query.contains_key("watch"))
        .collect();
    assert!(watches.len() >= 2, "the watch was opened again");
    let last = watches.last().unwrap();
    assert_ne!(
        last.query.get("resourceVersion").map(String::as_str),
        Some("0"),
        "resumed from where it was: {:?}",
        last.query
    );
}

#[tokio::test]
async fn a_bookmark_moves_the_resume_point_past_compaction() {
    let api = ApiServer::start().await;
    seed(&api);
    let running = start(&api, &["shop"]);
    eventually("the first push", || running.generation() == 1).await;
    // The status writes after the first push move the resourceVersion on too: let them finish, so
    // that nothing changes between the bookmark and the compaction.
    eventually("the status written back", || {
        api.object(INGRESS, "shop", "web")
            .is_some_and(|o| !o["status"].is_null())
            && api
                .object(HTTPPROXY, "shop", "root")
                .is_some_and(|o| !o["status"].is_null())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Changes in a namespace nobody watches move the resourceVersion on.
    api.put(INGRESS, ingress("elsewhere", "x", "x.example", "x"));
    api.put(INGRESS, ingress("elsewhere", "y", "y.example", "y"));
    let lists = api.lists(INGRESS);
    let at = api.bookmark(INGRESS);
    for other in [INGRESS_CLASS, SERVICE, HTTPPROXY] {
        api.bookmark(other);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    api.compact();
    api.drop_watches();
    api.put(INGRESS, ingress("shop", "blog", "blog.example", "blog"));
    eventually("the change after the bookmark", || {
        running.rules().contains(&"Ingress/shop/blog#0".to_owned())
    })
    .await;
    assert_eq!(
        api.lists(INGRESS),
        lists,
        "the watch resumed at the bookmark ({at}) instead of relisting after 410"
    );
    assert_eq!(api.gone(), 0, "no watch started before the compaction point");
    let resumed = api
        .requests()
        .into_iter()
        .rfind(|r| r.path == "/apis/networking.k8s.io/v1/namespaces/shop/ingresses" && r.query.contains_key("watch"))
        .unwrap();
    assert_eq!(resumed.query.get("resourceVersion"), Some(&at.to_string()));
    assert!(
        !running.rules().iter().any(|r| r.contains("elsewhere")),
        "--namespaces shop: other namespaces are not routed"
    );
}

#[tokio::test]
async fn while_the_api_server_is_down_the_last_table_keeps_serving_and_readyz_says_why() {
    let api = ApiServer::start().await;
    seed(&api);
    let running = start(&api, &[]);
    eventually("the first push", || running.generation() == 1).await;
    let table = std::fs::read_to_string(&running.table_file).unwrap();

    api.set_down(true);
    eventually("a source marked down", || !running.state.lock().down.is_empty()).await;
    let reason = running.state.lock().readiness().unwrap_err();
    assert!(reason.contains("is down"), "{reason}");
    assert!(
        reason.contains("generation 1"),
        "says which table keeps serving: {reason}"
    );
    assert_eq!(
        std::fs::read_to_string(&running.table_file).unwrap(),
        table,
        "the last good table stays"
    );
    assert_eq!(running.rules().len(), 2);

    api.set_down(false);
    eventually("every source up again", || running.state.lock().readiness().is_ok()).await;
    api.put(INGRESS, ingress("shop", "blog", "blog.example", "blog"));
    eventually("routing follows again", || {
        running.rules().contains(&"Ingress/shop/blog#0".to_owned())
    })
    .await;
}

/// A child process killed when the test ends, however it ends.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The binary end to end in Kubernetes mode: a kubeconfig naming the stand-in, `--listen`, `-o`.
#[tokio::test]
async fn the_binary_follows_the_cluster_named_by_its_kubeconfig() {
    let api = ApiServer::start().await;
    seed(&api);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: stand-in, cluster: {{server: 'http://{}'}}}}]\nusers: [{{name: u, user: {{}}}}]\ncontexts: [{{name: c, context: {{cluster: stand-in, user: u}}}}]\ncurrent-context: c\n",
            api.addr
        ),
    )
    .unwrap();
    let table = dir.path().join("table.json");
    let log = dir.path().join("log");
    let mut child = Reaped(
        std::process::Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .args([
                "watch",
                "--kubernetes",
                "--publish-address",
                "lb.example",
                "--listen",
                "127.0.0.1:0",
                "-o",
            ])
            .arg(&table)
            .env("KUBECONFIG", &kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    eventually("the table file", || {
        std::fs::read_to_string(&table).is_ok_and(|t| t.contains("shop.example"))
    })
    .await;
    eventually("the Ingress load balancer", || {
        api.object(INGRESS, "shop", "web")
            .is_some_and(|o| o["status"]["loadBalancer"]["ingress"][0]["hostname"] == "lb.example")
    })
    .await;
    api.put(INGRESS, ingress("shop", "blog", "blog.example", "blog"));
    eventually("the new Ingress in the table file", || {
        std::fs::read_to_string(&table).is_ok_and(|t| t.contains("blog.example"))
    })
    .await;
    let text = read_log();
    assert!(text.contains("store Ingress (all namespaces) synced"), "{text}");
    assert!(text.contains("hosts gained: blog.example"), "{text}");
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut exit = None;
    eventually("the exit after SIGTERM", || {
        exit = child.0.try_wait().unwrap();
        exit.is_some()
    })
    .await;
    assert_eq!(exit.unwrap().code(), Some(0), "{}", read_log());
}
