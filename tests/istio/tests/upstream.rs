//! Backends spoken to otherwise through Istio (issue "The upstream side", item 4): the real
//! `switchyard watch --kubernetes --istio-clusters istio-system/switchyard-clusters` writes the
//! EnvoyFilter that adds the variant clusters to the gateway alone; the real istiod gives them to a
//! plain Envoy as the gateway, with the endpoints it holds for the ServiceEntries; through it:
//!
//! - ingress-nginx's `backend-protocol: HTTPS` with `proxy-ssl-verify` reaches a TLS backend whose
//!   certificate the CA Secret signed, and the same backend checked against another CA is refused;
//! - `backend-protocol: GRPC` reaches an HTTP/2-only backend over HTTP/2;
//! - `affinity: cookie` holds a client on one of three endpoints over 100 requests while a client
//!   without the cookie spreads;
//! - Istio's own clusters are left as istiod made them, and the EnvoyFilter selects the gateway.
//!
//! Needs what `make test-istio` sets (`KUBEBUILDER_ASSETS`, `PILOT_DISCOVERY`, `ISTIO_CRDS`,
//! `ENVOY_BIN`, `SWITCHYARD_WASM`, `SWITCHYARD_BIN`).

use std::collections::BTreeSet;
use std::net::SocketAddr;

use kube::api::{Api, DynamicObject};
use kube::discovery::pinned_kind;
use serde_json::{json, Value};
use switchyard_e2e::https::TestCa;
use switchyard_e2e::protocol::protocol_backends;
use switchyard_e2e::{get, required_path, Backend, Response};
use switchyard_envtest::manifests;
use switchyard_envtest::watch::Watch;
use switchyard_envtest::User;
use switchyard_free_port::free_port;
use switchyard_istio::objects::{gateway, gateway_service, server, service_entry};
use switchyard_istio::{deploy, ingressgateway, Gateway, Istio, ISTIO_SYSTEM, PATIENCE};

/// Istio's cluster names, as deploy/deployment.yaml runs the watch.
const CLUSTER_TEMPLATE: &str = "outbound|{port}||{service}.{namespace}.svc.cluster.local";

fn host_of(name: &str, ns: &str) -> String {
    format!("{name}.{ns}.svc.cluster.local")
}

/// An ingress-nginx Ingress `name` in `ns` for `name.example.com` to `service` port 80 with
/// `annotations` (without the prefix).
fn nginx_ingress(ns: &str, name: &str, service: &str, annotations: &[(&str, &str)]) -> Value {
    let annotations: serde_json::Map<String, Value> = (annotations.iter())
        .map(|(k, v)| (format!("nginx.ingress.kubernetes.io/{k}"), json!(v)))
        .collect();
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": {
            "ingressClassName": "nginx",
            "rules": [{"host": format!("{name}.example.com"), "http": {"paths": [{
                "path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": service, "port": {"number": 80}}}
            }]}}]
        }
    })
}

/// A ServiceEntry for `host` port 80 (HTTP) whose endpoints are `backends` (127.0.0.1).
fn service_entry_of(name: &str, host: &str, backends: &[SocketAddr]) -> Value {
    let endpoints: Vec<Value> = (backends.iter())
        .map(|b| json!({"address": b.ip().to_string(), "ports": {"http": b.port()}}))
        .collect();
    json!({
        "apiVersion": "networking.istio.io/v1beta1", "kind": "ServiceEntry",
        "metadata": {"name": name, "namespace": ISTIO_SYSTEM},
        "spec": {
            "hosts": [host], "location": "MESH_INTERNAL", "resolution": "STATIC",
            "ports": [{"number": 80, "name": "http", "protocol": "HTTP"}],
            "endpoints": endpoints
        }
    })
}

#[tokio::test]
async fn variant_clusters_reach_a_checked_tls_backend_an_http2_backend_and_hold_a_cookies_client() {
    let istio = Istio::start().await.unwrap_or_else(|e| panic!("{e}"));
    let admin = istio.admin().await;
    istio.install_other_kinds_crds(&admin).await;
    let ns = istio.env.namespace("shop").await;
    let (ca, other) = (TestCa::new("backend-ca"), TestCa::new("other-ca"));
    let behind = Backend::start("behind").unwrap();
    let (tls, h2c) = (free_port(), free_port());
    let fronts = protocol_backends(&behind, (tls, h2c), &ca.issue(&["backend.internal"]));
    let trio: Vec<Backend> = ["one", "two", "three"]
        .iter()
        .map(|n| Backend::start(n).unwrap())
        .collect();
    let port = free_port();
    let selector = ingressgateway();
    let at = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
    let mut objects = vec![
        gateway_service("istio-ingressgateway", &selector, &[(80, port)]),
        gateway("public", &selector, &[server(80, "http", &["*"])]),
        service_entry("secure", &host_of("secure", &ns), 80, "HTTP", at(tls)),
        service_entry("grpc", &host_of("grpc", &ns), 80, "HTTP", at(h2c)),
        service_entry_of(
            "trio",
            &host_of("trio", &ns),
            &trio.iter().map(|b| b.addr).collect::<Vec<_>>(),
        ),
    ];
    // The wasm filter as deploy/istio/envoyfilter/ has it, pointed at the real `.wasm`.
    let mut folder = deploy::folder(&deploy::istio_dir().join("envoyfilter")).unwrap_or_else(|e| panic!("{e}"));
    let wasm = required_path("SWITCHYARD_WASM").display().to_string();
    let filter = deploy::find(&mut folder, "EnvoyFilter", "switchyard").unwrap();
    let config = filter
        .pointer_mut("/spec/configPatches/0/patch/value/typed_config/config")
        .unwrap();
    config["vm_config"]["code"]["local"]["filename"] = json!(wasm);
    objects.extend(folder);
    istio.apply(&objects).await.unwrap_or_else(|e| panic!("{e}"));
    let verified = [
        ("backend-protocol", "HTTPS"),
        ("proxy-ssl-secret", &*format!("{ns}/backend-ca")),
        ("proxy-ssl-verify", "on"),
        ("proxy-ssl-name", "backend.internal"),
    ];
    let other_ca_secret = format!("{ns}/other-ca");
    let mut against_other = verified;
    against_other[1] = ("proxy-ssl-secret", &other_ca_secret);
    let manifests = [
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "nginx"},
               "spec": {"controller": "k8s.io/ingress-nginx"}}),
        serde_yaml::from_str(&ca.secret(&ns, "backend-ca")).unwrap(),
        serde_yaml::from_str(&other.secret(&ns, "other-ca")).unwrap(),
        nginx_ingress(&ns, "verified", "secure", &verified),
        nginx_ingress(&ns, "other-ca", "secure", &against_other),
        nginx_ingress(&ns, "grpc", "grpc", &[("backend-protocol", "GRPC")]),
        nginx_ingress(&ns, "sticky", "trio", &[("affinity", "cookie")]),
    ];
    istio.apply(&manifests).await.unwrap_or_else(|e| panic!("{e}"));
    let gateway = istio.gateway("istio-ingressgateway-0", &selector);

    let args = [
        "--namespaces",
        &ns,
        "--cluster-template",
        CLUSTER_TEMPLATE,
        "--ingress-nginx-class",
        "nginx",
        "--envoyfilter",
        "istio-system/switchyard",
        "--gateway-wasm-path",
        &wasm,
        "--istio-clusters",
        "istio-system/switchyard-clusters",
    ];
    let kubeconfig = istio.env.kubeconfig(User::Switchyard);
    let mut watch = Watch::start(&required_path("SWITCHYARD_BIN"), &kubeconfig, &args).unwrap();
    if let Err(e) = watch.ready(PATIENCE).await {
        panic!(
            "{e}\n--- watch:\n{}\n--- istiod:\n{}",
            watch.log(),
            istio.istiod_log_tail(40)
        );
    }
    let fail = |what: &str| -> ! {
        panic!(
            "{what}\n--- watch:\n{}\n--- gateway:\n{}\n--- istiod:\n{}",
            watch.log(),
            gateway.log_tail(),
            istio.istiod_log_tail(40)
        )
    };
    let send = |gw: &Gateway, host: &str, cookie: Option<&str>| -> Result<Response, String> {
        let mut request = get(host, "/");
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        gw.send(port, &request).map_err(|e| format!("{host}: {e}"))
    };
    let seen = |answer: &Response, header: &str| answer.upstream_header(header).first().map(|v| (*v).to_owned());

    // The checked TLS backend, reached over TLS by the variant cluster.
    let verified_cluster = format!(
        "outbound|80||{}~tls+ca={ns}/backend-ca+san=backend.internal+depth=1",
        host_of("secure", &ns)
    );
    let answer = gateway
        .wait_for("the checked TLS backend", |gw| {
            let answer = send(gw, "verified.example.com", None)?;
            match answer.backend() == Some("behind") {
                true => Ok(answer),
                false => Err(format!(
                    "{} from {:?}: {}",
                    answer.status,
                    answer.backend(),
                    answer.body
                )),
            }
        })
        .await
        .unwrap_or_else(|e| fail(&e));
    assert_eq!(answer.upstream_header("x-route-cluster"), [verified_cluster.as_str()]);
    assert!(
        seen(&answer, "x-seen-tls").is_some_and(|v| v.starts_with("TLSv1.")),
        "{answer:?}"
    );
    // Against another CA: refused, never reached.
    let refused = gateway
        .wait_for("the backend checked against another CA refused", |gw| {
            let answer = send(gw, "other-ca.example.com", None)?;
            match (answer.status, answer.backend()) {
                (503, None) => Ok(answer),
                other => Err(format!("{other:?}: {}", answer.body)),
            }
        })
        .await
        .unwrap_or_else(|e| fail(&e));
    assert_eq!(refused.backend(), None);

    // The HTTP/2-only backend over HTTP/2.
    let answer = gateway
        .wait_for("the HTTP/2 backend", |gw| {
            let answer = send(gw, "grpc.example.com", None)?;
            match seen(&answer, "x-seen-protocol").as_deref() {
                Some("HTTP/2") => Ok(answer),
                other => Err(format!("{} {other:?}: {}", answer.status, answer.body)),
            }
        })
        .await
        .unwrap_or_else(|e| fail(&e));
    assert_eq!(answer.backend(), Some("behind"));

    // Cookie affinity: a new key for a client without one, held across 100 requests; another
    // client, without the cookie, spreads.
    let first = gateway
        .wait_for("the sticky host", |gw| {
            let answer = send(gw, "sticky.example.com", None)?;
            match answer.header("set-cookie") {
                Some(cookie) if answer.backend().is_some() => Ok(cookie.to_owned()),
                _ => Err(format!("{} {:?}: {}", answer.status, answer.backend(), answer.body)),
            }
        })
        .await
        .unwrap_or_else(|e| fail(&e));
    assert!(
        first.starts_with("INGRESSCOOKIE=") && first.contains("; Path=/; HttpOnly"),
        "{first}"
    );
    let cookie = first.split(';').next().unwrap().to_owned();
    let held: BTreeSet<Option<String>> = (0..100)
        .map(|_| {
            send(&gateway, "sticky.example.com", Some(&cookie))
                .unwrap()
                .backend()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(held.len(), 1, "the cookie's client on one endpoint: {held:?}");
    let spread: BTreeSet<Option<String>> = (0..100)
        .map(|_| {
            send(&gateway, "sticky.example.com", None)
                .unwrap()
                .backend()
                .map(str::to_owned)
        })
        .collect();
    assert!(spread.len() > 1, "a client without the cookie spreads: {spread:?}");

    // Istio's own cluster of the Service is as istiod made it (no check of the backend); the
    // variant beside it checks against the CA; the EnvoyFilter selects the gateway alone.
    let dump = gateway.config_dump();
    let clusters: Vec<&Value> = (dump["configs"].as_array().into_iter().flatten())
        .filter(|c| c["@type"].as_str().is_some_and(|t| t.ends_with("ClustersConfigDump")))
        .flat_map(|c| c["dynamic_active_clusters"].as_array().into_iter().flatten())
        .map(|c| &c["cluster"])
        .collect();
    let named = |name: &str| clusters.iter().find(|c| c["name"] == name).copied();
    let istio_own =
        named(&format!("outbound|80||{}", host_of("secure", &ns))).unwrap_or_else(|| fail("no Istio cluster"));
    assert!(!istio_own.to_string().contains("validation_context"), "{istio_own}");
    let variant = named(&verified_cluster).unwrap_or_else(|| fail("no variant cluster"));
    let validation = &variant["transport_socket"]["typed_config"]["common_tls_context"]["validation_context"];
    assert!(
        validation["trusted_ca"]["inline_string"]
            .as_str()
            .is_some_and(|pem| pem == ca.pem),
        "{variant}"
    );
    let gvk = manifests::gvk_of(&json!({"apiVersion": "networking.istio.io/v1alpha3", "kind": "EnvoyFilter"})).unwrap();
    let (resource, _) = pinned_kind(&admin, &gvk).await.unwrap();
    let filters: Api<DynamicObject> = Api::namespaced_with(admin.clone(), ISTIO_SYSTEM, &resource);
    let filter = filters
        .get("switchyard-clusters")
        .await
        .unwrap_or_else(|e| fail(&e.to_string()));
    assert_eq!(filter.data["spec"]["workloadSelector"]["labels"], json!(selector));
    assert_eq!(gateway.rejected_updates(), 0, "{}", gateway.log_tail());
    drop(fronts);
}
