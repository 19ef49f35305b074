//! `switchyard watch --clusters-dir --ads-listen` with a real Envoy (issue "The upstream side"):
//! Envoy has no cluster of its own; the watch gives it one per backend through the CDS file and the
//! endpoints of each over ADS, and its routes through the RDS file (a route per rule's timeouts
//! and retries), from the Services and EndpointSlices among the manifests (the same
//! objects the watch follows in a cluster: `sidecar/tests/envtest_gateway.rs` shows the API
//! server's reach Envoy the same way). Endpoints come and go without any cluster being re-created;
//! a backend named by no rule any more loses its cluster.
//!
//! Needs `ENVOY_BIN`, `SWITCHYARD_BIN` and the filter (`make test-envoy` sets them).

mod watch_setup;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use std::thread;
use std::time::{Duration, Instant};
use switchyard_e2e::https::{TestCa, TestCertificate};
use switchyard_e2e::protocol::protocol_backends;
use switchyard_free_port::free_port;

use switchyard_e2e::{
    envoy_config_reading, fresh_dir, get, required_path, routes_from_file, set_module_search_path, Backend, EcdsFile,
    Envoy, FilterForm,
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
    /// From the watch's start to its CDS file written.
    cds_written: Duration,
}

impl Scene {
    /// The watch on `manifests` with `--clusters-dir`, and Envoy reading its CDS file.
    fn start(manifests: &[(&str, String)]) -> Scene {
        Scene::start_with(manifests, &[])
    }

    /// [`Scene::start`] with more arguments for the watch.
    fn start_with(manifests: &[(&str, String)], flags: &[&str]) -> Scene {
        Scene::start_form(manifests, flags, FilterForm::from_env())
    }

    /// [`Scene::start_with`] with the filter in `form`.
    fn start_form(manifests: &[(&str, String)], flags: &[&str], form: FilterForm) -> Scene {
        let envoy_bin = required_path("ENVOY_BIN");
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
        let ads = free_port();
        // The routes from the watch's RDS file, as deploy/envoy/ takes them.
        let reading = envoy_config_reading(&dir, &[], 0, 0, form, EcdsFile::Json);
        let mut bootstrap = routes_from_file(&reading, &clusters.join("rds.json"));
        bootstrap.push_str(&ads_bootstrap(&clusters.join("cds.json"), ads));
        std::fs::write(dir.join("envoy.yaml"), bootstrap).unwrap();
        let mut extra = vec![
            "--clusters-dir".to_owned(),
            clusters.display().to_string(),
            "--ads-listen".to_owned(),
            format!("127.0.0.1:{ads}"),
        ];
        extra.extend(flags.iter().map(|f| (*f).to_owned()));
        let started = Instant::now();
        let watch = Watch::start_with(&dir, form, EcdsFile::Json, &extra);
        // Envoy refuses a bootstrap whose CDS file is missing (deploy/envoy/ waits for it too).
        while !clusters.join("cds.json").is_file() {
            assert!(
                started.elapsed() < FOLLOW_WITHIN,
                "no CDS file
{}",
                watch.log()
            );
            thread::sleep(Duration::from_millis(10));
        }
        let cds_written = started.elapsed();
        let envoy = Envoy::spawn(&envoy_bin, dir.clone(), file, 1);
        Scene {
            dir,
            envoy,
            watch,
            cds_written,
        }
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
        let describe = || format!("watch:\n{}\nenvoy:\n{}", self.watch.log(), self.envoy.log());
        watch_setup::eventually(what, check, describe);
    }
}

/// The end of a bootstrap (after its `static_resources.clusters:` line): the ADS cluster (HTTP/2
/// to the watch's `--ads-listen`), and CDS from `cds` with the clusters' endpoints over ADS.
fn ads_bootstrap(cds: &Path, ads: u16) -> String {
    format!(
        r#"  - name: switchyard-ads
    type: STATIC
    connect_timeout: 1s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {{http2_protocol_options: {{}}}}
    load_assignment:
      cluster_name: switchyard-ads
      endpoints: [{{lb_endpoints: [{{endpoint: {{address: {{socket_address: {{address: 127.0.0.1, port_value: {ads}}}}}}}}}]}}]
dynamic_resources:
  ads_config:
    api_type: GRPC
    transport_api_version: V3
    grpc_services: [{{envoy_grpc: {{cluster_name: switchyard-ads}}}}]
  cds_config:
    path_config_source: {{path: {cds}}}
    resource_api_version: V3
"#,
        cds = cds.display()
    )
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
        2,
        "the table's one backend, and the ADS cluster"
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

    // Its Ingress gone, its cluster goes.
    std::fs::remove_file(scene.manifest("api.yaml")).unwrap();
    scene.eventually("the api cluster removed", || {
        scene.stat("cluster_manager.cluster_removed") >= 1 && scene.stat("cluster_manager.active_clusters") == 2
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
}

/// Pod churn: an endpoint of `web` turns ready and unready 100 times a second for 3 seconds (each
/// change pushed within 20 ms: a short debounce) while
/// requests flow to `web` and a keep-alive connection serves `api`: no request fails (the endpoints
/// that come and go are real backends, ready when listed), and `api`'s upstream connection is the
/// one it had (no other cluster drained).
#[test]
fn endpoint_churn_fails_no_request_and_drains_no_other_cluster() {
    use std::io::BufReader;
    use std::net::TcpStream;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let (a, b, c, d) = (
        Backend::start("web-a").unwrap(),
        Backend::start("web-b").unwrap(),
        Backend::start("web-c").unwrap(),
        Backend::start("api-d").unwrap(),
    );
    let manifests = [
        (
            "web.yaml",
            format!(
                "{}---\n{}---\n{}---\n{}",
                ingress("shop", "shop.example.com", "web"),
                service("web"),
                slice("web-a", "web", &a, true),
                slice("web-b", "web", &b, true)
            ),
        ),
        ("slice-c.yaml", slice("web-c", "web", &c, true)),
        (
            "api.yaml",
            format!(
                "{}---\n{}---\n{}",
                ingress("api", "api.example.com", "api"),
                service("api"),
                slice("api-d", "api", &d, true)
            ),
        ),
    ];
    let scene = Scene::start_with(&manifests, &["--debounce-ms", "5", "--debounce-max-ms", "20"]);
    scene.eventually("web's three endpoints serve", || {
        scene.answering("shop.example.com", 20) == backends(&["web-a", "web-b", "web-c"])
    });
    let mut api = BufReader::new(TcpStream::connect(scene.envoy.addr).unwrap());
    assert_eq!(
        watch_setup::ask_on(&mut api, "api.example.com").unwrap(),
        (200, Some("api-d".into()))
    );
    let api_connections = scene.stat("cluster.shop/api_80.upstream_cx_total");
    let edits_before = scene.stat("cluster.shop/web_80.update_success");

    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let (stop, file, c) = (stop.clone(), scene.manifest("slice-c.yaml"), c.addr);
        thread::spawn(move || {
            let backend = Backend {
                name: "web-c".into(),
                addr: c,
            };
            let mut ready = false;
            while !stop.load(Ordering::Relaxed) {
                std::fs::write(&file, slice("web-c", "web", &backend, ready)).unwrap();
                ready = !ready;
                thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let started = Instant::now();
    let (mut sent, mut failed) = (0, Vec::new());
    while started.elapsed() < Duration::from_secs(3) {
        let answer = switchyard_e2e::send(scene.envoy.addr, &get("shop.example.com", "/"));
        sent += 1;
        match answer {
            Ok(response) if response.status == 200 => {}
            other => failed.push(format!("{other:?}")),
        }
        if sent % 20 == 0 {
            let answer = watch_setup::ask_on(&mut api, "api.example.com");
            assert_eq!(answer.unwrap(), (200, Some("api-d".into())), "api on its connection");
        }
    }
    stop.store(true, Ordering::Relaxed);
    churn.join().unwrap();
    assert!(
        failed.is_empty(),
        "{} of {sent} requests failed: {:?}",
        failed.len(),
        &failed[..failed.len().min(5)]
    );
    let edits = scene.stat("cluster.shop/web_80.update_success") - edits_before;
    assert!(
        edits >= 50,
        "web's endpoints changed under the requests: {edits} EDS updates"
    );
    println!("churn: {sent} requests, none failed, during {edits} EDS updates of web");
    assert_eq!(
        scene.stat("cluster.shop/api_80.upstream_cx_total"),
        api_connections,
        "api kept its one upstream connection"
    );
}

/// Ingress, Service and EndpointSlice `web-i` of the benchmark: `ENDPOINTS` endpoints on 10.x
/// addresses (never sent to: no request goes to them and Envoy does not health-check), the first
/// `unready` of them not ready.
fn bench_manifests(i: usize, unready: usize) -> String {
    const ENDPOINTS: usize = 10;
    let endpoints: String = (0..ENDPOINTS)
        .map(|e| {
            format!(
                "- {{addresses: [10.{}.{}.{e}], conditions: {{ready: {}}}}}\n",
                i / 256,
                i % 256,
                e >= unready
            )
        })
        .collect();
    format!(
        "{}---\napiVersion: v1\nkind: Service\nmetadata: {{name: web-{i}, namespace: shop}}\nspec: {{ports: [{{name: http, port: 80}}]}}\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: web-{i}, namespace: shop, labels: {{kubernetes.io/service-name: web-{i}}}}}\naddressType: IPv4\nports: [{{name: http, port: 8080}}]\nendpoints:\n{endpoints}",
        ingress(&format!("web-{i}"), &format!("h{i}.example.com"), &format!("web-{i}"))
    )
}

/// `make bench-clusters-envoy` (BENCHMARKS.md, "Clusters and endpoints"): 1,000 Services of 10
/// endpoints through a real Envoy: from the watch's start to Envoy holding the 1,000 clusters with
/// their endpoints; one endpoint turned unready until Envoy applied it (its cluster's EDS update
/// counted); then 100 such changes, one every 10 ms, each in another Service, until Envoy holds
/// them all. The watch's CPU for each (release build, folder mode). Prints figures; asserts only
/// that the work was done.
#[test]
#[ignore = "benchmark: make bench-clusters-envoy"]
fn bench_clusters_through_envoy() {
    const SERVICES: usize = 1_000;
    let cpu_ms = |scene: &Scene| switchyard_watch_process::cpu_ns(scene.watch.0.pid()) as f64 / 1e6;
    let manifests: Vec<(String, String)> = (0..SERVICES)
        .map(|i| (format!("web-{i}.yaml"), bench_manifests(i, 0)))
        .collect();
    let borrowed: Vec<(&str, String)> = manifests.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
    let started = Instant::now();
    let scene = Scene::start(&borrowed);
    let members = |i: usize| scene.stat(&format!("cluster.shop/web-{i}_80.membership_total"));
    scene.eventually("Envoy holds every cluster and its endpoints", || {
        scene.stat("cluster_manager.active_clusters") == SERVICES as u64 + 1 && members(SERVICES - 1) == 10
    });
    let first = started.elapsed();
    let first_cpu = cpu_ms(&scene);

    thread::sleep(Duration::from_millis(500));
    let cpu = cpu_ms(&scene);
    let changed = Instant::now();
    std::fs::write(scene.manifest("web-7.yaml"), bench_manifests(7, 1)).unwrap();
    scene.eventually("Envoy applied the endpoint change", || members(7) == 9);
    let one = changed.elapsed();
    let one_cpu = cpu_ms(&scene) - cpu;

    thread::sleep(Duration::from_millis(500));
    let cpu = cpu_ms(&scene);
    let churn = Instant::now();
    for i in 100..200 {
        std::fs::write(scene.manifest(&format!("web-{i}.yaml")), bench_manifests(i, 1)).unwrap();
        thread::sleep(Duration::from_millis(10));
    }
    // The changes are pushed in order: the last one held, all are (checked once after).
    scene.eventually("Envoy applied the 100 changes", || members(199) == 9);
    let churn_wall = churn.elapsed();
    let churn_cpu = cpu_ms(&scene) - cpu;
    assert!((100..200).all(|i| members(i) == 9));
    println!("Clusters through Envoy, {SERVICES} Services of 10 endpoints (switchyard watch --clusters-dir --ads-listen, folder mode):");
    println!(
        "  the watch's start to its CDS file written: {:.2?}; to Envoy (started then) holding every cluster and its endpoints: {first:.2?}; {first_cpu:.0} ms of sidecar CPU",
        scene.cds_written
    );
    println!("  one endpoint unready, file edit to Envoy holding the change: {one:.2?} wall (the folder's 100 ms debounce included), {one_cpu:.0} ms of sidecar CPU");
    println!("  100 changes at 100/s (1 s of writes) to Envoy holding the last: {churn_wall:.2?} wall, {churn_cpu:.0} ms of sidecar CPU ({:.1} ms per change)", churn_cpu / 100.0);
}

/// An ingress-nginx Ingress (class `nginx`) `name` for `name.example.com` to `service`, with
/// ingress-nginx's `annotations` (names without the prefix).
fn nginx_ingress(name: &str, service: &str, annotations: &[(&str, &str)]) -> String {
    let annotations = match annotations.is_empty() {
        true => String::new(),
        false => {
            let pairs: Vec<String> = (annotations.iter())
                .map(|(k, v)| format!("nginx.ingress.kubernetes.io/{k}: {v:?}"))
                .collect();
            format!("  annotations: {{{}}}\n", pairs.join(", "))
        }
    };
    ingress(name, &format!("{name}.example.com"), service)
        .replace("metadata: {name: ", "metadata:\n  name: ")
        .replace(", namespace: shop}\n", &format!("\n  namespace: shop\n{annotations}"))
        .replace("spec:\n", "spec:\n  ingressClassName: nginx\n")
}

/// The IngressClass of ingress-nginx's Ingresses.
const NGINX_CLASS: &str =
    "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: nginx}\nspec: {controller: k8s.io/ingress-nginx}\n";

/// ingress-nginx's `backend-protocol` (issue "The upstream side") through the gateway's Envoy:
/// HTTPS reaches a TLS backend over HTTP/1.1 (its certificate unchecked, as ingress-nginx's
/// default), GRPCS the same over HTTP/2, GRPC an HTTP/2-only backend in the clear; without the
/// annotation the TLS backend is spoken to in plain HTTP and fails. With them, `service-upstream`
/// (the Service's cluster IP as the backend) and `proxy-connect-timeout` (a cluster of its own).
#[test]
fn backend_protocol_reaches_a_tls_backend_and_an_http2_backend_as_ingress_nginx_asks() {
    let (tls, h2c) = (free_port(), free_port());
    let behind = Backend::start("behind").unwrap();
    let backends = protocol_backends(&behind, (tls, h2c), &TestCertificate::new(&["backend.internal"]));
    let at = |port: u16| Backend {
        name: String::new(),
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
    };
    let with_protocol = |name: &str, service: &str, protocol: Option<&str>| {
        let annotations: Vec<(&str, &str)> = protocol.map(|p| ("backend-protocol", p)).into_iter().collect();
        nginx_ingress(name, service, &annotations)
    };
    let manifests = [
        ("class.yaml", NGINX_CLASS.to_owned()),
        (
            "tls.yaml",
            format!("{}---\n{}", service("secure"), slice("secure", "secure", &at(tls), true)),
        ),
        (
            "h2c.yaml",
            format!("{}---\n{}", service("grpc"), slice("grpc", "grpc", &at(h2c), true)),
        ),
        ("https.yaml", with_protocol("https", "secure", Some("HTTPS"))),
        ("grpcs.yaml", with_protocol("grpcs", "secure", Some("GRPCS"))),
        ("grpc.yaml", with_protocol("grpc", "grpc", Some("GRPC"))),
        ("plain.yaml", with_protocol("plain", "secure", None)),
        (
            "proxies.yaml",
            [("idle-h2c", "grpc", "h2c", "30s"), ("idle-tls", "secure", "tls", "infinity")]
                .map(|(name, service, protocol, idle)| {
                    format!(
                        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: {name}, namespace: shop}}\nspec:\n  virtualhost: {{fqdn: {name}.example.com}}\n  routes:\n  - conditions: [{{prefix: /}}]\n    timeoutPolicy: {{idleConnection: {idle}}}\n    services: [{{name: {service}, port: 80, protocol: {protocol}}}]\n"
                    )
                })
                .join("---\n"),
        ),
        (
            "direct.yaml",
            format!(
                "{}---\napiVersion: v1\nkind: Service\nmetadata: {{name: direct, namespace: shop}}\nspec: {{clusterIP: 127.0.0.1, ports: [{{port: {port}}}]}}\n",
                nginx_ingress("direct", "direct", &[("service-upstream", "true")])
                    .replace("number: 80", &format!("number: {}", behind.addr.port())),
                port = behind.addr.port()
            ),
        ),
        (
            "slow.yaml",
            nginx_ingress(
                "slow",
                "secure",
                &[("backend-protocol", "HTTPS"), ("proxy-connect-timeout", "12")],
            ),
        ),
    ];
    let scene = Scene::start_with(&manifests, &["--ingress-nginx-class", "nginx"]);
    let seen = |host: &str| {
        let response = scene.envoy.send(&get(host, "/"));
        let header = |name: &str| {
            response
                .upstream_header(name)
                .first()
                .map(|v| (*v).to_owned())
                .unwrap_or_default()
        };
        (
            response.status,
            response.backend().map(str::to_owned),
            header("x-seen-protocol"),
            header("x-seen-tls"),
        )
    };
    scene.eventually("the HTTPS backend reached over TLS", || {
        seen("https.example.com").1.as_deref() == Some("behind")
    });
    // Each host: the protocol the backend saw and whether it came over TLS (both as the backend
    // Envoy reports them; `service-upstream` goes straight to the Service's IP, past that Envoy,
    // so it reports neither).
    let reached = [
        ("https.example.com", "HTTP/1.1", true),
        ("grpcs.example.com", "HTTP/2", true),
        ("grpc.example.com", "HTTP/2", false),
        // HTTPProxy's protocol with timeoutPolicy.idleConnection (30 s; `infinity`).
        ("idle-h2c.example.com", "HTTP/2", false),
        ("idle-tls.example.com", "HTTP/1.1", true),
        // service-upstream: the Service's cluster IP (here 127.0.0.1, the backend's port).
        ("direct.example.com", "", false),
        // proxy-connect-timeout: a cluster of its own (`~tls+connect=12000ms`).
        ("slow.example.com", "HTTP/1.1", true),
    ];
    for (host, wanted_protocol, over_tls) in reached {
        let (status, backend, protocol, tls_version) = seen(host);
        assert_eq!(
            (status, backend.as_deref(), protocol.as_str()),
            (200, Some("behind"), wanted_protocol),
            "{host}"
        );
        assert_eq!(tls_version.starts_with("TLSv1."), over_tls, "{host}: {tls_version:?}");
        assert!(
            over_tls || tls_version.is_empty(),
            "{host}: in the clear: {tls_version:?}"
        );
    }
    let (status, backend, _, _) = seen("plain.example.com");
    assert_eq!(backend, None, "plain HTTP to a TLS port reaches nothing");
    assert!(status >= 500, "{status}");
    let cds = std::fs::read_to_string(scene.dir.join("clusters/cds.json")).unwrap();
    assert!(
        cds.contains("\"shop/secure:80~tls+connect=12000ms\"") && cds.contains("\"12s\""),
        "{cds}"
    );
    assert_eq!(scene.stat("cluster_manager.cds.update_rejected"), 0);
    drop(backends);
}

/// The backend's certificate checked (issue "The upstream side"): ingress-nginx's
/// `proxy-ssl-verify` with `proxy-ssl-secret` and `proxy-ssl-name`, and HTTPProxy's `validation`,
/// reach a TLS backend whose certificate the CA Secret's `ca.crt` signed for the name asked for;
/// the same backend checked against another CA, or for another name, is refused (Envoy's 503:
/// the handshake fails), never reached.
#[test]
fn a_checked_backend_is_reached_when_its_ca_signed_its_certificate_for_the_name_and_refused_otherwise() {
    let (ca, other) = (TestCa::new("backend-ca"), TestCa::new("other-ca"));
    let (tls, h2c) = (free_port(), free_port());
    let behind = Backend::start("behind").unwrap();
    let backends = protocol_backends(&behind, (tls, h2c), &ca.issue(&["backend.internal"]));
    let at = Backend {
        name: String::new(),
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], tls)),
    };
    let checked = |name: &str, secret: &str, ssl_name: &str| {
        let annotations = [
            ("backend-protocol", "HTTPS"),
            ("proxy-ssl-secret", secret),
            ("proxy-ssl-verify", "on"),
            ("proxy-ssl-name", ssl_name),
            ("proxy-ssl-server-name", "on"),
        ];
        (format!("{name}.yaml"), nginx_ingress(name, "secure", &annotations))
    };
    let validated = |name: &str, subject: &str| {
        format!(
            "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: {name}, namespace: shop}}\nspec:\n  virtualhost: {{fqdn: {name}.example.com}}\n  routes:\n  - conditions: [{{prefix: /}}]\n    services: [{{name: secure, port: 80, protocol: tls, validation: {{caSecret: backend-ca, subjectName: {subject}}}}}]\n"
        )
    };
    let mut manifests = [
        ("class.yaml".to_owned(), NGINX_CLASS.to_owned()),
        (
            "secure.yaml".to_owned(),
            format!("{}---\n{}", service("secure"), slice("secure", "secure", &at, true)),
        ),
        (
            "cas.yaml".to_owned(),
            format!(
                "{}---\n{}",
                ca.secret("shop", "backend-ca"),
                other.secret("shop", "other-ca")
            ),
        ),
        checked("verified", "shop/backend-ca", "backend.internal"),
        checked("other-ca", "shop/other-ca", "backend.internal"),
        checked("other-name", "shop/backend-ca", "other.internal"),
        (
            "proxies.yaml".to_owned(),
            format!(
                "{}---\n{}",
                validated("validated", "backend.internal"),
                validated("misnamed", "nope.internal")
            ),
        ),
    ];
    manifests.sort();
    let manifests: Vec<(&str, String)> = manifests.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
    let scene = Scene::start_with(&manifests, &["--ingress-nginx-class", "nginx"]);
    let answer = |host: &str| {
        let response = scene.envoy.send(&get(host, "/"));
        (response.status, response.backend().map(str::to_owned))
    };
    scene.eventually("the checked backend reached", || {
        answer("verified.example.com").1.as_deref() == Some("behind")
    });
    for (host, reached) in [
        ("verified.example.com", true),
        ("validated.example.com", true),
        ("other-ca.example.com", false),
        ("other-name.example.com", false),
        ("misnamed.example.com", false),
    ] {
        let (status, backend) = answer(host);
        match reached {
            true => assert_eq!((status, backend.as_deref()), (200, Some("behind")), "{host}"),
            false => assert_eq!((status, backend), (503, None), "{host}: refused, never reached"),
        }
    }
    // The refused ones have their clusters (the 503 is the handshake's, not a missing cluster's).
    let cds = std::fs::read_to_string(scene.dir.join("clusters/cds.json")).unwrap();
    for name in [
        "shop/secure:80~tls+ca=shop/other-ca+san=backend.internal+sni=backend.internal+depth=1",
        "shop/secure:80~tls+ca=shop/backend-ca+san=other.internal+sni=other.internal+depth=1",
        "shop/secure:80~tls+ca=shop/backend-ca+san=nope.internal",
    ] {
        assert!(cds.contains(&format!("\"{name}\"")), "{name}: {cds}");
    }
    assert_eq!(scene.stat("cluster_manager.cds.update_rejected"), 0);
    drop(backends);
}

/// HTTPProxy's `healthCheckPolicy` (issue "The upstream side"): of a Service's two endpoints, one
/// listening and one not, the checked cluster takes the dead one out after its first failed
/// check, so every request is answered; the same Service unchecked (round robin) sends every
/// other request to the dead endpoint. A `loadBalancerPolicy` cluster (least request) beside them
/// is taken by Envoy too.
#[test]
fn a_health_checked_service_sends_nothing_to_its_dead_endpoint() {
    let behind = Backend::start("behind").unwrap();
    let dead = Backend {
        name: String::new(),
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], free_port())),
    };
    let proxy = |name: &str, policy: &str| {
        format!(
            "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: {name}, namespace: shop}}\nspec:\n  virtualhost: {{fqdn: {name}.example.com}}\n  routes:\n  - conditions: [{{prefix: /}}]\n{policy}    services: [{{name: pair, port: 80}}]\n---\n"
        )
    };
    let manifests = [
        (
            "pair.yaml",
            format!(
                "{}---\n{}---\n{}",
                service("pair"),
                slice("pair-live", "pair", &behind, true),
                slice("pair-dead", "pair", &dead, true)
            ),
        ),
        (
            "proxies.yaml",
            [
                proxy(
                    "checked",
                    "    healthCheckPolicy: {path: /healthz, intervalSeconds: 1, unhealthyThresholdCount: 1, healthyThresholdCount: 1}\n",
                ),
                proxy("unchecked", ""),
                proxy("least", "    loadBalancerPolicy: {strategy: WeightedLeastRequest}\n"),
            ]
            .concat(),
        ),
    ];
    let scene = Scene::start(&manifests);
    let statuses = |host: &str| -> Vec<u16> { (0..20).map(|_| scene.envoy.send(&get(host, "/")).status).collect() };
    scene.eventually("the checked cluster answering every request", || {
        statuses("checked.example.com").iter().all(|s| *s == 200)
    });
    assert!(
        statuses("unchecked.example.com").contains(&503),
        "round robin without a check reaches the dead endpoint"
    );
    assert!(statuses("least.example.com").contains(&200));
    let cds = std::fs::read_to_string(scene.dir.join("clusters/cds.json")).unwrap();
    assert!(
        cds.contains("\"LEAST_REQUEST\"") && cds.contains("\"health_checks\""),
        "{cds}"
    );
    assert_eq!(scene.stat("cluster_manager.cds.update_rejected"), 0);
}

/// Affinity (issue "The upstream side"; docs/routing.md, "Affinity") through a real Envoy, on a
/// Service of three endpoints: ingress-nginx's `affinity: cookie` gives a client without the
/// cookie a new key in `Set-Cookie`, and holds a client that sends it back on one endpoint across
/// 100 requests while a client without it spreads; `upstream-hash-by` keeps one user on one
/// endpoint and spreads the users; HTTPProxy's `Cookie` strategy sets Contour's cookie; a
/// VirtualServer's `ip_hash` keeps this one client address on one endpoint.
#[test]
fn affinity_holds_a_client_on_one_endpoint_while_another_spreads() {
    let backends: Vec<Backend> = ["one", "two", "three"]
        .iter()
        .map(|n| Backend::start(n).unwrap())
        .collect();
    let slices: Vec<String> = (backends.iter().enumerate())
        .map(|(i, b)| slice(&format!("trio-{i}"), "trio", b, true))
        .collect();
    let virtual_server = "apiVersion: k8s.nginx.org/v1\nkind: VirtualServer\nmetadata: {name: sticky-vs, namespace: shop}\nspec:\n  host: sticky-vs.example.com\n  upstreams: [{name: trio, service: trio, port: 80, lb-method: ip_hash}]\n  routes: [{path: /, action: {pass: trio}}]\n";
    let proxy = "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: contour-cookie, namespace: shop}\nspec:\n  virtualhost: {fqdn: contour-cookie.example.com}\n  routes:\n  - conditions: [{prefix: /}]\n    loadBalancerPolicy: {strategy: Cookie}\n    services: [{name: trio, port: 80}]\n";
    let manifests = [
        ("class.yaml", NGINX_CLASS.to_owned()),
        ("trio.yaml", format!("{}---\n{}", service("trio"), slices.join("---\n"))),
        (
            "cookie.yaml",
            nginx_ingress("sticky", "trio", &[("affinity", "cookie")]),
        ),
        (
            "hash.yaml",
            nginx_ingress("hashed", "trio", &[("upstream-hash-by", "$arg_user")]),
        ),
        ("vs.yaml", virtual_server.to_owned()),
        ("proxy.yaml", proxy.to_owned()),
    ];
    let scene = Scene::start_with(&manifests, &["--ingress-nginx-class", "nginx"]);
    let answer = |host: &str, path: &str, cookie: Option<&str>| {
        let mut request = get(host, path);
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        let response = scene.envoy.send(&request);
        let set_cookie = response.header("set-cookie").map(str::to_owned);
        (response.backend().map(str::to_owned), set_cookie)
    };
    scene.eventually("the sticky host served", || {
        answer("sticky.example.com", "/", None).0.is_some()
    });

    // A client without the cookie gets one; sent back, it holds the client on one endpoint.
    let (_, set_cookie) = answer("sticky.example.com", "/", None);
    let set_cookie = set_cookie.expect("a Set-Cookie for a client without the cookie");
    assert!(
        set_cookie.starts_with("INGRESSCOOKIE=") && set_cookie.ends_with("; Path=/; HttpOnly"),
        "{set_cookie}"
    );
    let cookie = set_cookie.split(';').next().unwrap().to_owned();
    let held: BTreeSet<Option<String>> = (0..100)
        .map(|_| answer("sticky.example.com", "/", Some(&cookie)))
        .map(|(b, c)| {
            assert_eq!(c, None, "a client with its cookie gets no new one");
            b
        })
        .collect();
    assert_eq!(held.len(), 1, "one endpoint for the cookie's client: {held:?}");
    assert!(held.iter().all(Option::is_some));
    let spread: BTreeSet<Option<String>> = (0..100).map(|_| answer("sticky.example.com", "/", None).0).collect();
    assert!(spread.len() > 1, "a client without the cookie spreads: {spread:?}");

    // upstream-hash-by $arg_user: a user keeps an endpoint; users spread.
    let of_user = |user: usize| answer("hashed.example.com", &format!("/?user={user}"), None).0;
    for user in 0..5 {
        let endpoints: BTreeSet<Option<String>> = (0..20).map(|_| of_user(user)).collect();
        assert_eq!(endpoints.len(), 1, "user {user}: {endpoints:?}");
    }
    let users: BTreeSet<Option<String>> = (0..30).map(of_user).collect();
    assert!(users.len() > 1, "30 users on one endpoint: {users:?}");

    // HTTPProxy's Cookie strategy: Contour's cookie.
    let (_, contour) = answer("contour-cookie.example.com", "/", None);
    let contour = contour.expect("Contour's cookie");
    assert!(contour.starts_with("X-Contour-Session-Affinity="), "{contour}");

    // ip_hash: this client's one address, one endpoint.
    let by_address: BTreeSet<Option<String>> = (0..30).map(|_| answer("sticky-vs.example.com", "/", None).0).collect();
    assert_eq!(by_address.len(), 1, "{by_address:?}");
    assert_eq!(scene.stat("cluster_manager.cds.update_rejected"), 0);
}

/// A backend on a free port of 127.0.0.1 that reads each request's head, waits `delay`, then
/// answers 200 (`x-backend: slow`).
fn slow_backend(delay: Duration) -> Backend {
    scripted_backend(delay, "")
}

/// [`slow_backend`], its answer with the header lines `head` (each ending `\r\n`) too.
fn scripted_backend(delay: Duration, head: &'static str) -> Backend {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    line.clear();
                }
                thread::sleep(delay);
                let mut stream = stream;
                let answer = format!("HTTP/1.1 200 OK\r\nx-backend: slow\r\n{head}content-length: 3\r\n\r\nok\n");
                let _ = stream.write_all(answer.as_bytes());
            });
        }
    });
    Backend {
        name: "slow".to_owned(),
        addr,
    }
}

/// ingress-nginx's CORS for every origin (`enable-cors` alone; issue "Policies beyond the route"):
/// the headers are the same on every response, so the gateway's route adds them (the filter
/// leaves the response alone), as ingress-nginx's `more_set_headers` does: in place of the
/// backend's own, and on Envoy's own answer too (a 503 when no endpoint is ready). The filter
/// still answers the preflight, which never reaches the backend.
#[test]
fn cors_headers_for_every_origin_come_from_the_gateways_route_on_every_response() {
    let backend = scripted_backend(
        Duration::ZERO,
        "access-control-allow-origin: https://backend.example\r\n",
    );
    let cors = [("enable-cors", "true"), ("cors-max-age", "600")];
    let manifests = [
        ("class.yaml", NGINX_CLASS.to_owned()),
        (
            "web.yaml",
            format!("{}---\n{}", service("web"), slice("web", "web", &backend, true)),
        ),
        (
            "down.yaml",
            format!("{}---\n{}", service("down"), slice("down", "down", &backend, false)),
        ),
        ("open.yaml", nginx_ingress("open", "web", &cors)),
        ("gone.yaml", nginx_ingress("gone", "down", &cors)),
    ];
    let scene = Scene::start_with(&manifests, &["--ingress-nginx-class", "nginx"]);
    scene.eventually("the open host answered by the backend", || {
        scene.envoy.send(&get("open.example.com", "/")).header("x-backend") == Some("slow")
    });
    let cors_headers = |response: &switchyard_e2e::Response| -> Vec<(String, String)> {
        (response.headers.iter())
            .filter(|(name, _)| name.starts_with("access-control-"))
            .cloned()
            .collect()
    };
    let wanted: Vec<(String, String)> = [
        ("access-control-allow-origin", "*"),
        ("access-control-allow-credentials", "true"),
        ("access-control-allow-methods", "GET, PUT, POST, DELETE, PATCH, OPTIONS"),
        (
            "access-control-allow-headers",
            "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization",
        ),
        ("access-control-max-age", "600"),
    ]
    .map(|(name, value)| (name.to_owned(), value.to_owned()))
    .into();
    let answered = scene
        .envoy
        .send(&get("open.example.com", "/").header("origin", "https://app.example"));
    assert_eq!(answered.status, 200, "{answered:?}");
    let mut sorted = wanted.clone();
    sorted.sort();
    let mut got = cors_headers(&answered);
    got.sort();
    assert_eq!(got, sorted, "the route's, in place of the backend's: {answered:?}");
    let unavailable = scene.envoy.send(&get("gone.example.com", "/"));
    assert_eq!(unavailable.status, 503, "{unavailable:?}");
    let mut got = cors_headers(&unavailable);
    got.sort();
    assert_eq!(got, sorted, "Envoy's own answer: {unavailable:?}");
    let preflight = scene.envoy.send(&get("open.example.com", "/").method("OPTIONS"));
    assert_eq!(
        (preflight.status, preflight.header("x-backend")),
        (204, None),
        "{preflight:?}"
    );
    assert_eq!(cors_headers(&preflight), wanted, "the filter's answer");
    let rds = std::fs::read_to_string(scene.dir.join("clusters/rds.json")).unwrap();
    assert_eq!(
        rds.matches("\"response_headers_to_add\"").count(),
        1,
        "one route adds them: {rds}"
    );
}

/// ingress-nginx's read timeout (issue "Policies beyond the route"): `proxy-read-timeout: 1` is
/// each try's idle timeout, so a backend silent for 2 s is answered 504 after a second; the
/// same backend behind an Ingress with the 60 s default answers, and that route has no total
/// timeout (Envoy's 15 s default would cut a long poll ingress-nginx keeps). The send timeout
/// (10 s) sets the stream's idle timeout well past the read timeout, so the 504 can only come from
/// the try's idle timeout (with both at 1 s, either could fire first).
#[test]
fn proxy_read_timeout_bounds_each_try_and_no_total_timeout_applies() {
    let backend = slow_backend(Duration::from_secs(2));
    let manifests = [
        ("class.yaml", NGINX_CLASS.to_owned()),
        (
            "slow.yaml",
            format!("{}---\n{}", service("slow"), slice("slow", "slow", &backend, true)),
        ),
        (
            "quick.yaml",
            nginx_ingress(
                "quick",
                "slow",
                &[("proxy-read-timeout", "1"), ("proxy-send-timeout", "10")],
            ),
        ),
        ("patient.yaml", nginx_ingress("patient", "slow", &[])),
    ];
    let scene = Scene::start_with(&manifests, &["--ingress-nginx-class", "nginx"]);
    scene.eventually("the patient host answered by the slow backend", || {
        scene.envoy.send(&get("patient.example.com", "/")).header("x-backend") == Some("slow")
    });
    let started = Instant::now();
    let quick = scene.envoy.send(&get("quick.example.com", "/"));
    let waited = started.elapsed();
    assert_eq!(quick.status, 504, "{quick:?}");
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    assert!(scene.stat("cluster.shop/slow_80.upstream_rq_per_try_idle_timeout") >= 1);
    let rds = std::fs::read_to_string(scene.dir.join("clusters/rds.json")).unwrap();
    let rds: serde_json::Value = serde_json::from_str(&rds).unwrap();
    let routes = rds["resources"][0]["virtual_hosts"][0]["routes"]
        .as_array()
        .unwrap()
        .clone();
    let timeouts: BTreeSet<(String, String, String)> = (routes.iter())
        .filter(|r| r.get("name").is_some())
        .map(|r| {
            let route = &r["route"];
            let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
            let upstream_idle = &route["retry_policy"]["per_try_idle_timeout"];
            (
                text(&route["timeout"]),
                text(&route["idle_timeout"]),
                text(upstream_idle),
            )
        })
        .collect();
    let timeout = |idle: &str, each_try: &str| ("0s".to_owned(), idle.to_owned(), each_try.to_owned());
    assert_eq!(
        timeouts,
        [timeout("10s", "1s"), timeout("60s", "60s")].into(),
        "{routes:?}"
    );
    assert_eq!(scene.envoy.stat("http.ingress.rds.switchyard.update_success"), Some(1));
}

/// ingress-nginx's retries (`proxy-next-upstream`, default `error timeout` with 3 tries): of a
/// Service's two endpoints, one refusing connections, every GET is answered (a connect failure is
/// retried on the other endpoint), a POST is not retried (nginx retries no non-idempotent
/// request) unless `non_idempotent`, and `proxy-next-upstream: off` retries nothing.
#[test]
fn proxy_next_upstream_retries_a_get_on_another_endpoint_and_a_post_only_when_asked() {
    let live = Backend::start("live").unwrap();
    let dead = Backend {
        name: "dead".to_owned(),
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], free_port())),
    };
    let manifests = [
        ("class.yaml", NGINX_CLASS.to_owned()),
        (
            "pair.yaml",
            format!(
                "{}---\n{}---\n{}",
                service("pair"),
                slice("pair-live", "pair", &live, true),
                slice("pair-dead", "pair", &dead, true)
            ),
        ),
        ("retried.yaml", nginx_ingress("retried", "pair", &[])),
        (
            "posts.yaml",
            nginx_ingress(
                "posts",
                "pair",
                &[("proxy-next-upstream", "error timeout non_idempotent")],
            ),
        ),
        (
            "off.yaml",
            nginx_ingress("off", "pair", &[("proxy-next-upstream", "off")]),
        ),
    ];
    let scene = Scene::start_with(&manifests, &["--ingress-nginx-class", "nginx"]);
    scene.eventually("the retried host answered", || {
        scene.envoy.send(&get("retried.example.com", "/")).backend() == Some("live")
    });
    let statuses = |host: &str, method: &str| -> BTreeSet<u16> {
        (0..10)
            .map(|_| scene.envoy.send(&get(host, "/").method(method)).status)
            .collect()
    };
    assert_eq!(statuses("retried.example.com", "GET"), [200].into());
    assert!(
        statuses("retried.example.com", "POST").contains(&503),
        "a POST is not retried"
    );
    assert_eq!(statuses("posts.example.com", "POST"), [200].into());
    assert!(statuses("off.example.com", "GET").contains(&503), "off retries nothing");
    // Envoy's stat names have `_` for `:`.
    assert!(scene.stat("cluster.shop/pair_80.upstream_rq_retry_success") > 0);
}

/// ingress-nginx's source ranges enforced through Envoy (issue "Policies beyond the route"): the
/// client here is 127.0.0.1 (`source.address`); an Ingress whose `whitelist-source-range` holds it
/// is served, one whose ranges leave it out, or whose `denylist-source-range` holds it, is
/// answered 403, never reaching the backend.
#[test]
fn source_ranges_let_the_client_through_or_answer_403_by_its_address() {
    let backend = Backend::start("web").unwrap();
    let manifests = [
        ("class.yaml", NGINX_CLASS.to_owned()),
        (
            "web.yaml",
            format!("{}---\n{}", service("web"), slice("web", "web", &backend, true)),
        ),
        (
            "inside.yaml",
            nginx_ingress("inside", "web", &[("whitelist-source-range", "10.0.0.0/8, 127.0.0.1")]),
        ),
        (
            "outside.yaml",
            nginx_ingress("outside", "web", &[("whitelist-source-range", "10.0.0.0/8")]),
        ),
        (
            "denied.yaml",
            nginx_ingress("denied", "web", &[("denylist-source-range", "127.0.0.0/8")]),
        ),
    ];
    let scene = Scene::start_with(&manifests, &["--ingress-nginx-class", "nginx"]);
    scene.eventually("the inside host served", || {
        scene.envoy.send(&get("inside.example.com", "/")).backend() == Some("web")
    });
    for host in ["outside.example.com", "denied.example.com"] {
        let response = scene.envoy.send(&get(host, "/"));
        assert_eq!(
            (response.status, response.backend()),
            (403, None),
            "{host}: {response:?}"
        );
    }
}

/// ingress-nginx's `limit-connections: 1` through Envoy (issue "Policies beyond the route"): while
/// one request from 127.0.0.1 waits on a slow backend, a second is answered 503; once the first
/// ended, its place is free again.
#[test]
fn limit_connections_holds_a_place_while_a_request_is_in_flight_and_frees_it_after() {
    let backend = slow_backend(Duration::from_millis(1_500));
    let manifests = [
        ("class.yaml", NGINX_CLASS.to_owned()),
        (
            "slow.yaml",
            format!("{}---\n{}", service("slow"), slice("slow", "slow", &backend, true)),
        ),
        ("one.yaml", nginx_ingress("one", "slow", &[("limit-connections", "1")])),
    ];
    let scene = Scene::start_with(&manifests, &["--ingress-nginx-class", "nginx"]);
    scene.eventually("the host served", || {
        scene.envoy.send(&get("one.example.com", "/")).status == 200
    });
    let addr = scene.envoy.addr;
    let first = thread::spawn(move || switchyard_e2e::send(addr, &get("one.example.com", "/")).unwrap().status);
    thread::sleep(Duration::from_millis(400));
    let second = scene.envoy.send(&get("one.example.com", "/"));
    assert_eq!(second.status, 503, "{second:?}");
    assert_eq!(first.join().unwrap(), 200);
    assert_eq!(
        scene.envoy.send(&get("one.example.com", "/")).status,
        200,
        "the place is free again"
    );
}

/// An auth service on a free port of 127.0.0.1, as ingress-nginx's e2e tests use httpbun's: it
/// answers by the request's `Authorization` (`Bearer good`: 200 with `X-User: alice` and a
/// cookie; `Bearer forbidden`: 403; `Bearer slow`: 200 after 3 s; `Bearer late`: 401 after
/// 300 ms; anything else: 401 with a challenge), and keeps the last request's head for the test to read.
fn auth_service() -> (std::net::SocketAddr, std::sync::Arc<std::sync::Mutex<String>>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let last = seen.clone();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let last = last.clone();
            thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                loop {
                    let mut head = String::new();
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                        head.push_str(&line.to_ascii_lowercase());
                        line.clear();
                    }
                    if head.is_empty() {
                        return;
                    }
                    *last.lock().unwrap() = head.clone();
                    let answer = if head.contains("authorization: bearer good") {
                        "HTTP/1.1 200 OK\r\nx-user: alice\r\nset-cookie: session=1\r\ncontent-length: 0\r\n\r\n"
                    } else if head.contains("authorization: bearer forbidden") {
                        "HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n"
                    } else if head.contains("authorization: bearer slow") {
                        thread::sleep(Duration::from_secs(3));
                        "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"
                    } else if head.contains("authorization: bearer late") {
                        thread::sleep(Duration::from_millis(300));
                        "HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n"
                    } else {
                        "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer realm=\"shop\"\r\ncontent-length: 0\r\n\r\n"
                    };
                    if stream.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

/// ingress-nginx's external authentication (`auth-url`, issue "Policies beyond the route") through
/// Envoy, in both filter forms, the auth service reached through the cluster the watch makes for
/// it: a request the service lets through reaches the backend with its `auth-response-headers`
/// (a client's own value replaced) and its body, and the response carries the service's cookie;
/// its 401 is passed on with its challenge, or redirected to `auth-signin` with `rd`; its 403 is
/// 403; a service that answers too late (`--external-auth-timeout-ms`) or not at all is 500.
#[test]
fn an_auth_service_decides_each_request_and_a_silent_or_dead_one_lets_nobody_through() {
    let backend = Backend::start("web").unwrap();
    let (auth, seen) = auth_service();
    let dead = free_port();
    let url = format!("http://127.0.0.1:{}/check", auth.port());
    let manifests = [
        ("class.yaml", NGINX_CLASS.to_owned()),
        (
            "web.yaml",
            format!("{}---\n{}", service("web"), slice("web", "web", &backend, true)),
        ),
        (
            "guarded.yaml",
            nginx_ingress(
                "guarded",
                "web",
                &[("auth-url", &url), ("auth-response-headers", "X-User")],
            ),
        ),
        (
            "signin.yaml",
            nginx_ingress(
                "signin",
                "web",
                &[("auth-url", &url), ("auth-signin", "https://login.example.com/start")],
            ),
        ),
        (
            "dead.yaml",
            nginx_ingress(
                "dead",
                "web",
                &[("auth-url", &format!("http://127.0.0.1:{dead}/check"))],
            ),
        ),
    ];
    for form in [FilterForm::Wasm, FilterForm::Module] {
        let flags = ["--ingress-nginx-class", "nginx", "--external-auth-timeout-ms", "1000"];
        let scene = Scene::start_form(&manifests, &flags, form);
        let with = |host: &str, token: &str| {
            let request = get(host, "/cart?id=2").header("authorization", &format!("Bearer {token}"));
            scene.envoy.send(&request.header("x-user", "mallory"))
        };
        scene.eventually("a request the auth service lets through", || {
            with("guarded.example.com", "good").backend() == Some("web")
        });
        let passed = with("guarded.example.com", "good");
        assert!(
            passed.body.contains("header: x-user: alice\n"),
            "{form:?}: {}",
            passed.body
        );
        assert!(!passed.body.contains("mallory"), "{form:?}: {}", passed.body);
        assert_eq!(passed.header("set-cookie"), Some("session=1"), "{form:?}");
        let asked = seen.lock().unwrap().clone();
        for line in [
            "get /check http/1.1",
            "x-original-url: http://guarded.example.com/cart?id=2",
            "x-original-method: get",
            "x-auth-request-redirect: /cart?id=2",
            "x-sent-from: nginx-ingress-controller",
        ] {
            assert!(asked.contains(line), "{form:?}: {line} in {asked}");
        }
        let posted = scene.envoy.send(
            &get("guarded.example.com", "/upload")
                .method("POST")
                .header("authorization", "Bearer good")
                .body("hello"),
        );
        assert_eq!(
            (posted.status, posted.upstream_body()),
            (200, Some("hello")),
            "{form:?}: the body waited"
        );
        // A body that comes while the service decides must not carry the request on.
        let sneaking = scene.envoy.send(
            &get("guarded.example.com", "/upload")
                .method("POST")
                .header("authorization", "Bearer late")
                .body(&"x".repeat(64 << 10)),
        );
        assert_eq!((sneaking.status, sneaking.backend()), (401, None), "{form:?}");

        let refused = with("guarded.example.com", "bad");
        assert_eq!((refused.status, refused.backend()), (401, None), "{form:?}");
        assert_eq!(
            refused.header("www-authenticate"),
            Some("Bearer realm=\"shop\""),
            "{form:?}"
        );
        let redirected = with("signin.example.com", "bad");
        assert_eq!(redirected.status, 302, "{form:?}");
        assert_eq!(
            redirected.header("location"),
            Some("https://login.example.com/start?rd=http://signin.example.com%2Fcart%3Fid%3D2"),
            "{form:?}"
        );
        assert_eq!(with("guarded.example.com", "forbidden").status, 403, "{form:?}");
        let started = Instant::now();
        let slow = with("guarded.example.com", "slow");
        assert_eq!((slow.status, slow.backend()), (500, None), "{form:?}: too late");
        assert!(
            started.elapsed() < Duration::from_millis(2500),
            "{form:?}: {:?}",
            started.elapsed()
        );
        let nobody = with("dead.example.com", "good");
        assert_eq!((nobody.status, nobody.backend()), (500, None), "{form:?}: no service");
    }
}
