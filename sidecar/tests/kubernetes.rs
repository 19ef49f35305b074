//! `switchyard watch --kubernetes` against a stand-in API server (tests/apiserver), only for what a
//! real API server cannot be made to do on demand (everything else is in `tests/envtest.rs`, against
//! a real kube-apiserver): a watch connection dropped at an exact point and resumed from its
//! resourceVersion without a list, a `410 Gone` on a live watch after a compaction (a relist, not an
//! outage), and a bookmark moving the resume point past a compaction. A real kube `Client`, real
//! watchers and the real store speak the list/watch wire protocol over 127.0.0.1.

mod apiserver;

use std::time::Duration;

use apiserver::{ApiServer, HTTPPROXY, INGRESS, INGRESS_CLASS, SECRET, SERVICE};
use serde_json::{json, Value};
use switchyard::watch::engine::Engine;
use switchyard::watch::rebuild::follow;
use switchyard::watch::sink::Sink;
use switchyard::watch::source::debounce::Debounce;
use switchyard::watch::source::kubernetes::Settings;
use switchyard::watch::state::Shared;
use switchyard_compiler::Options;

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
    _dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<Result<(), String>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn start(api: &ApiServer, namespaces: &[&str]) -> Running {
    let client = api.client();
    let dir = tempfile::tempdir().unwrap();
    let table_file = dir.path().join("table.json");
    let state = Shared::default();
    let sinks = vec![Sink::TableFile(table_file.clone())];
    let engine = Engine::new(Options::default(), sinks, state.clone());
    let settings = Settings {
        namespaces: namespaces.iter().map(|s| (*s).to_owned()).collect(),
        publish_addresses: vec!["203.0.113.7".into()],
        write_status: true,
        httpproxy: true,
        // The stand-in serves Ingress, IngressClass, Service and HTTPProxy only.
        virtualserver: false,
        transportserver: false,
        endpoints: false,
        controller_name: "switchyard.io/ingress-controller".into(),
        leader: switchyard::watch::lead::leader::Leader::always(),
    };
    let debounce = Debounce {
        quiet: Duration::from_millis(20),
        max: Duration::from_millis(200),
    };
    let task = tokio::spawn(follow(client, settings, engine, state.clone(), debounce));
    Running { state, _dir: dir, task }
}

impl Running {
    /// The rule names of the table last pushed (empty before the first push).
    fn rules(&self) -> Vec<String> {
        let Some(table) = self.state.lock().table.clone() else {
            return Vec::new();
        };
        table.rules.iter().map(|r| r.name.clone()).collect()
    }

    fn generation(&self) -> u64 {
        self.state.lock().tables_pushed
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
    for other in [INGRESS_CLASS, SERVICE, HTTPPROXY, SECRET] {
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
