//! `switchyard watch --clusters-dir` with a real Envoy (issue "The upstream side"): Envoy has no
//! cluster of its own; the watch gives it one per backend through the CDS file and the endpoints of
//! each through an EDS file, from the Services and EndpointSlices among the manifests (the same
//! objects the watch follows in a cluster: `sidecar/tests/envtest.rs` shows the API server's reach
//! the same files). Endpoints come and go without any cluster being re-created; a backend named by
//! no rule any more loses its cluster.
//!
//! Needs `ENVOY_BIN`, `SWITCHYARD_BIN` and the filter (`make test-envoy` sets them).

mod watch_setup;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use switchyard_e2e::{
    envoy_config_reading, fresh_dir, get, required_path, set_module_search_path, Backend, EcdsFile, Envoy, FilterForm,
};
use watch_setup::{ingress, Watch, FOLLOW_WITHIN};

/// Service `name` in `shop`: port 80 named `http`, to the pods' port `web`.
fn service(name: &str) -> String {
    format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: shop}}\nspec:\n  ports:\n  - {{name: http, port: 80, targetPort: web}}\n")
}

/// An EndpointSlice of Service `service`: its `http` port is `backend`'s port, one endpoint on
/// 127.0.0.1, ready or not.
fn slice(name: &str, service: &str, backend: &Backend, ready: bool) -> String {
    format!(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {name}\n  namespace: shop\n  labels: {{kubernetes.io/service-name: {service}}}\naddressType: IPv4\nports:\n- {{name: http, port: {port}}}\nendpoints:\n- {{addresses: [127.0.0.1], conditions: {{ready: {ready}}}}}\n",
        port = backend.addr.port()
    )
}

struct Scene {
    dir: PathBuf,
    envoy: Envoy,
    watch: Watch,
}

impl Scene {
    /// The watch on `manifests` with `--clusters-dir`, and Envoy reading its CDS file.
    fn start(manifests: &[(&str, String)]) -> Scene {
        let envoy_bin = required_path("ENVOY_BIN");
        let form = FilterForm::from_env();
        let file = required_path(form.variable());
        if form.is_module() {
            set_module_search_path(&file);
        }
        let dir = fresh_dir("clusters");
        for sub in ["manifests", "ecds"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        for (name, text) in manifests {
            std::fs::write(dir.join("manifests").join(name), text).unwrap();
        }
        let clusters = dir.join("clusters");
        let mut bootstrap = envoy_config_reading(&dir, &[], 0, 0, form, EcdsFile::Json);
        bootstrap.push_str(&format!(
            "dynamic_resources:\n  cds_config:\n    path_config_source: {{path: {}}}\n    resource_api_version: V3\n",
            clusters.join("cds.json").display()
        ));
        std::fs::write(dir.join("envoy.yaml"), bootstrap).unwrap();
        let extra = ["--clusters-dir".to_owned(), clusters.display().to_string()];
        let watch = Watch::start_with(&dir, form, EcdsFile::Json, &extra);
        let envoy = Envoy::spawn(&envoy_bin, dir.clone(), file, 1);
        Scene { dir, envoy, watch }
    }

    fn manifest(&self, name: &str) -> PathBuf {
        self.dir.join("manifests").join(name)
    }

    /// The backends that answer `shop.example.com` over `tries` requests.
    fn answering(&self, host: &str, tries: usize) -> BTreeSet<String> {
        (0..tries)
            .filter_map(|_| self.envoy.send(&get(host, "/")).backend().map(str::to_owned))
            .collect()
    }

    fn stat(&self, name: &str) -> u64 {
        self.envoy.stat(name).unwrap_or(0)
    }

    fn eventually(&self, what: &str, check: impl Fn() -> bool) {
        let started = Instant::now();
        while !check() {
            assert!(
                started.elapsed() < FOLLOW_WITHIN,
                "{what}: not within {FOLLOW_WITHIN:?}\nwatch:\n{}\nenvoy:\n{}",
                self.watch.log(),
                self.envoy.log()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
}

fn files_in(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| entries.count())
}

fn backends(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

#[test]
fn envoy_gets_a_cluster_per_backend_and_follows_its_endpoints_without_re_creating_any_cluster() {
    let (a, b, c) = (
        Backend::start("web-a").unwrap(),
        Backend::start("web-b").unwrap(),
        Backend::start("api-c").unwrap(),
    );
    let scene = Scene::start(&[
        ("ingress.yaml", ingress("shop", "shop.example.com", "web")),
        ("service.yaml", service("web")),
        ("slice-a.yaml", slice("web-a", "web", &a, true)),
        ("slice-b.yaml", slice("web-b", "web", &b, true)),
    ]);
    scene.eventually("both endpoints of web serve", || {
        scene.answering("shop.example.com", 10) == backends(&["web-a", "web-b"])
    });
    assert_eq!(
        scene.stat("cluster_manager.active_clusters"),
        1,
        "one cluster: the table's one backend"
    );
    let (added, modified, cds) = (
        scene.stat("cluster_manager.cluster_added"),
        scene.stat("cluster_manager.cluster_modified"),
        scene.stat("cluster_manager.cds.update_success"),
    );

    // A pod no longer ready, then gone: its endpoint leaves, the cluster stays as it is.
    std::fs::write(scene.manifest("slice-b.yaml"), slice("web-b", "web", &b, false)).unwrap();
    scene.eventually("web-b unready: only web-a serves", || {
        scene.answering("shop.example.com", 10) == backends(&["web-a"])
    });
    std::fs::remove_file(scene.manifest("slice-b.yaml")).unwrap();
    std::fs::write(scene.manifest("slice-b.yaml"), slice("web-b", "web", &b, true)).unwrap();
    scene.eventually("web-b back", || {
        scene.answering("shop.example.com", 10) == backends(&["web-a", "web-b"])
    });
    assert_eq!(scene.stat("cluster_manager.cluster_added"), added, "no cluster added");
    assert_eq!(
        scene.stat("cluster_manager.cluster_modified"),
        modified,
        "no cluster re-created"
    );
    // Envoy's stat names spell `:` as `_`.
    assert!(
        scene.stat("cluster.shop/web_80.update_success") >= 3,
        "the endpoints updated in place, by EDS"
    );
    assert_eq!(
        scene.stat("cluster_manager.cds.update_success"),
        cds,
        "the CDS file unchanged"
    );

    // A new backend gets a cluster; the first one is left alone.
    std::fs::write(
        scene.manifest("api.yaml"),
        format!(
            "{}---\n{}---\n{}",
            ingress("api", "api.example.com", "api"),
            service("api"),
            slice("api-c", "api", &c, true)
        ),
    )
    .unwrap();
    scene.eventually("api.example.com served by its own cluster", || {
        scene.answering("api.example.com", 3) == backends(&["api-c"])
    });
    assert_eq!(
        scene.stat("cluster_manager.cluster_modified"),
        modified,
        "web's cluster untouched"
    );
    let eds = scene.dir.join("clusters/eds");
    assert_eq!(files_in(&eds), 2);

    // Its Ingress gone, its cluster and its EDS file go.
    std::fs::remove_file(scene.manifest("api.yaml")).unwrap();
    scene.eventually("the api cluster removed", || {
        scene.stat("cluster_manager.cluster_removed") >= 1 && files_in(&eds) == 1
    });
    assert_eq!(scene.answering("shop.example.com", 10), backends(&["web-a", "web-b"]));
}

#[test]
fn an_externalname_service_is_reached_by_its_dns_name() {
    let outside = Backend::start("outside").unwrap();
    let port = outside.addr.port();
    let scene = Scene::start(&[(
        "external.yaml",
        format!(
            "{}---\napiVersion: v1\nkind: Service\nmetadata: {{name: ext, namespace: shop}}\nspec: {{type: ExternalName, externalName: localhost, ports: [{{port: {port}}}]}}\n",
            ingress("ext", "ext.example.com", "ext").replace("number: 80", &format!("number: {port}"))
        ),
    )]);
    scene.eventually("ext.example.com served through localhost", || {
        scene.answering("ext.example.com", 3) == backends(&["outside"])
    });
    assert_eq!(
        files_in(&scene.dir.join("clusters/eds")),
        0,
        "a DNS cluster has no EDS file"
    );
}
