//! The compiler's speed: 10k Ingresses plus 1k HTTPProxy trees (a root and two children each),
//! generated in code, through the whole pipeline (class, processors, collisions, order, hash).
//! Goal: under 1 s. Run with `cargo bench -p switchyard --bench compile`.

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use switchyard::{compile, HTTPProxy, Objects, Options};

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
        objects.ingresses.push(serde_json::from_value(ingress).unwrap());
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
        objects.http_proxies.push(proxy(
            "root",
            json!({
                "virtualhost": {"fqdn": format!("tree{t}.example.org")},
                "includes": [
                    {"name": "api", "conditions": [{"prefix": "/api"}, {"header": {"name": "x-team", "exact": "shop"}}]},
                    {"name": "static", "conditions": [{"prefix": "/static"}]}
                ],
                "routes": [{"services": [{"name": "web", "port": 80}]}]
            }),
        ));
        objects.http_proxies.push(proxy(
            "api",
            json!({"routes": [
                {"conditions": [{"prefix": "/v1"}], "services": [{"name": "api-v1", "port": 80, "weight": 90}, {"name": "api-v2", "port": 80, "weight": 10}]},
                {"conditions": [{"exact": "/health"}], "services": [{"name": "api-v1", "port": 80}]}
            ]}),
        ));
        objects.http_proxies.push(proxy(
            "static",
            json!({"routes": [
                {"conditions": [{"regex": "/.*\\.js"}], "services": [{"name": "cdn", "port": 80}]},
                {"services": [{"name": "files", "port": 80}], "pathRewritePolicy": {"replacePrefix": [{"replacement": "/"}]}}
            ]}),
        ));
    }
    objects
}

fn bench(c: &mut Criterion) {
    let objects = objects();
    let options = Options::default();
    let compiled = compile(&objects, &options).expect("the bench objects compile");
    eprintln!("compile bench: {} rules", compiled.table.rules.len());
    let mut group = c.benchmark_group("compile");
    group.sample_size(10);
    group.bench_function("10k_ingresses_1k_httpproxy_trees", |b| {
        b.iter(|| compile(&objects, &options))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
