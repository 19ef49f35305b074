//! The compiler's speed: 10k Ingresses plus 1k HTTPProxy trees (a root and two children each),
//! generated in code, through the whole pipeline (class, processors, collisions, order, hash); then
//! the same with 2,000 NGINX VirtualServers added (5 routes of 2 matches each, every location kind,
//! one in ten contesting an Ingress's host). Goal: under 1 s. Run with
//! `cargo bench -p switchyard-compiler --bench compile`.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use switchyard_compiler::objects::nginx::VirtualServer;
use switchyard_compiler::{compile, HTTPProxy, Objects, Options};

fn objects() -> Objects {
    let mut objects = Objects::default();
    for i in 0..10_000 {
        // 2,500 hosts, four Ingresses each, so merging and PathTaken have work to do.
        let host = format!("app{}.team{}.example.com", i % 2_500, i % 37);
        let mut annotations = json!({});
        if i % 5 == 0 {
            annotations = json!({"bfe.ingress.kubernetes.io/router.header": format!("x-canary: v{i}")});
        }
        if i % 7 == 0 {
            annotations = json!({"bfe.ingress.kubernetes.io/router.cookie": "group: a|b"});
        }
        let ingress = json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {
                "name": format!("ing-{i}"),
                "namespace": format!("ns-{}", i % 50),
                "uid": format!("{i:08}"),
                "creationTimestamp": format!("2024-01-{:02}T00:00:00Z", 1 + i % 28),
                "annotations": annotations,
            },
            "spec": {
                "rules": [{
                    "host": host,
                    "http": {"paths": [
                        {"path": format!("/svc{}", i % 4), "pathType": "Prefix",
                         "backend": {"service": {"name": format!("svc-{i}"), "port": {"number": 80}}}},
                        {"path": format!("/svc{}/exact", i % 4), "pathType": "Exact",
                         "backend": {"service": {"name": format!("svc-{i}"), "port": {"number": 8080}}}},
                    ]}
                }]
            }
        });
        objects
            .ingresses
            .push(Arc::new(serde_json::from_value(ingress).unwrap()));
    }
    for t in 0..1_000 {
        let ns = format!("tree-{t}");
        let proxy = |name: &str, spec: serde_json::Value| -> HTTPProxy {
            serde_json::from_value(json!({
                "apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
                "metadata": {"name": name, "namespace": ns}, "spec": spec
            }))
            .unwrap()
        };
        objects.http_proxies.push(Arc::new(proxy(
            "root",
            json!({
                "virtualhost": {"fqdn": format!("tree{t}.example.org")},
                "includes": [
                    {"name": "api", "conditions": [{"prefix": "/api"}, {"header": {"name": "x-team", "exact": "shop"}}]},
                    {"name": "static", "conditions": [{"prefix": "/static"}]}
                ],
                "routes": [{"services": [{"name": "web", "port": 80}]}]
            }),
        )));
        objects.http_proxies.push(Arc::new(proxy(
            "api",
            json!({"routes": [
                {"conditions": [{"prefix": "/v1"}], "services": [{"name": "api-v1", "port": 80, "weight": 90}, {"name": "api-v2", "port": 80, "weight": 10}]},
                {"conditions": [{"exact": "/health"}], "services": [{"name": "api-v1", "port": 80}]}
            ]}),
        )));
        objects.http_proxies.push(Arc::new(proxy(
            "static",
            json!({"routes": [
                {"conditions": [{"regex": "/.*\\.js"}], "services": [{"name": "cdn", "port": 80}]},
                {"services": [{"name": "files", "port": 80}], "pathRewritePolicy": {"replacePrefix": [{"replacement": "/"}]}}
            ]}),
        )));
    }
    objects
}

/// 2,000 VirtualServers, 5 routes each (prefix, exact, regex, `^~` prefix, and a split), every
/// route with 2 matches (header and cookie; method and argument); one in ten on a host an Ingress
/// of [`objects`] also names, so the host contest has work to do.
fn virtual_servers() -> Vec<Arc<VirtualServer>> {
    (0..2_000)
        .map(|i| {
            let host = if i % 10 == 0 {
                format!("app{}.team{}.example.com", i % 2_500, i % 37)
            } else {
                format!("vs{i}.nginx.example.com")
            };
            let matches = json!([
                {"conditions": [{"header": "x-version", "value": "v2"}, {"cookie": "user", "value": "~^admin"}],
                 "action": {"pass": "v2"}},
                {"conditions": [{"variable": "$request_method", "value": "POST"}, {"argument": "debug", "value": "!"}],
                 "action": {"return": {"code": 403, "body": "no"}}}
            ]);
            let route = |path: &str| json!({"path": path, "matches": matches, "action": {"pass": "v1"}});
            let mut routes = vec![route("/r0"), route("=/r1"), route("~/r2/[0-9]+$"), route("^~/r3")];
            routes.push(json!({"path": "/r4", "matches": matches, "splits": [
                {"weight": 90, "action": {"pass": "v1"}}, {"weight": 10, "action": {"pass": "v2"}}]}));
            serde_json::from_value(json!({
                "apiVersion": "k8s.nginx.org/v1", "kind": "VirtualServer",
                "metadata": {"name": format!("vs-{i}"), "namespace": format!("nginx-{}", i % 40),
                             "uid": format!("vs{i:08}"), "creationTimestamp": format!("2024-02-{:02}T00:00:00Z", 1 + i % 28)},
                "spec": {"host": host,
                         "upstreams": [{"name": "v1", "service": "app-v1", "port": 80}, {"name": "v2", "service": "app-v2", "port": 80}],
                         "routes": routes}
            }))
            .map(Arc::new)
            .unwrap()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let objects = objects();
    let mut with_nginx = objects.clone();
    with_nginx.virtual_servers = virtual_servers();
    let options = Options::default();
    for (what, objects) in [("", &objects), (" with 2k VirtualServers", &with_nginx)] {
        let compiled = compile(objects, &options).expect("the bench objects compile");
        eprintln!("compile bench{what}: {} rules", compiled.table.rules.len());
    }
    let mut group = c.benchmark_group("compile");
    group.sample_size(10);
    group.bench_function("10k_ingresses_1k_httpproxy_trees", |b| {
        b.iter(|| compile(&objects, &options))
    });
    group.bench_function("10k_ingresses_1k_httpproxy_trees_2k_virtualservers", |b| {
        b.iter(|| compile(&with_nginx, &options))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
