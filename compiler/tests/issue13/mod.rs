//! Issue 13's cluster, shared by the incremental compiler's benchmark (`benches/incremental.rs`)
//! and its memory test (`tests/memory.rs`), by path: 1,000 Ingresses of 100 paths over 300 hosts.

use k8s_openapi::api::networking::v1::Ingress;
use serde_json::json;

/// Ingress `app{i}` on host `h{i % 300}.example`, paths `/app{i}/p0` … `/app{i}/p99`; `version`
/// changes the backend of its first path.
pub fn ingress(i: usize, version: usize) -> Ingress {
    let resource_version = format!("{}", i * 10 + version);
    let paths: Vec<_> = (0..100)
        .map(|p| {
            let service = if p == 0 {
                format!("s{p}-v{version}")
            } else {
                format!("s{p}")
            };
            json!({"path": format!("/app{i}/p{p}"), "pathType": "Prefix",
                   "backend": {"service": {"name": service, "port": {"number": 80}}}})
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": format!("app{i}"), "namespace": "bench", "resourceVersion": resource_version,
                     "creationTimestamp": format!("2024-01-01T00:{:02}:{:02}Z", i / 60 % 60, i % 60)},
        "spec": {"rules": [{"host": format!("h{}.example", i % 300), "http": {"paths": paths}}]}
    }))
    .expect("a valid Ingress")
}
