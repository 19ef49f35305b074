//! `switchyard watch --kubernetes --istio-gateway` serving HTTPS through a real istiod (ROUTING.md
//! §8, issue 44): an Ingress's `spec.tls` Secret is copied into the gateway's namespace, the Gateway
//! gets an HTTPS server naming the copy (and the default server) on the port of a TransportServer's
//! TLS passthrough, istiod turns them into filter chains of the gateway's Envoy whose SDS secret is
//! the copy, a renewed Secret renews the copy, and the copies go with the Ingress.
//!
//! What this gateway cannot show: a handshake. The certificates of `credentialName` reach Envoy by
//! SDS from istiod only over an authenticated xDS connection (istiod's `pilot/pkg/xds/sds.go`
//! refuses a proxy without a verified identity), which istio-agent opens in a real gateway pod and
//! a plain Envoy on istiod's plaintext port cannot: the chains stay warming, waiting for their
//! secret. The proof stops at the configuration istiod builds (its config dump), as
//! `docs/deploy-istio.md` says.
//!
//! Needs what `make test-istio` sets (`KUBEBUILDER_ASSETS`, `PILOT_DISCOVERY`, `ISTIO_CRDS`,
//! `ENVOY_BIN`, `SWITCHYARD_BIN`).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use k8s_openapi::api::core::v1::Secret;
use kube::api::ListParams;
use kube::Api;
use serde_json::{json, Value};
use switchyard_e2e::https::TestCertificate;
use switchyard_free_port::free_port;
use switchyard_istio::objects::{secure_transport_server, service_entry};
use switchyard_istio::{ingressgateway, Gateway, Istio, PATIENCE};

/// The copies' label.
const COPIES: &str = "app.kubernetes.io/managed-by=switchyard,switchyard.io/gateway=switchyard";

/// The Ingress `shop` routing `shop.example.com` with `spec.tls` naming Secret `shop-tls`.
fn ingress(ns: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "shop", "namespace": ns},
        "spec": {
            "tls": [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}],
            "rules": [{"host": "shop.example.com", "http": {"paths": [{
                "path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": "web", "port": {"number": 80}}}
            }]}}]
        }
    })
}

/// A Secret manifest as JSON.
fn secret(certificate: &TestCertificate, ns: &str) -> Value {
    serde_yaml::from_str(&certificate.secret(ns, "shop-tls")).unwrap_or_else(|e| panic!("{e}"))
}

/// Each filter chain of the listener on `port` (active or warming): its server names and the SDS
/// secret its TLS context names.
fn chains_on(gateway: &Gateway, port: u16) -> Vec<(Vec<String>, String)> {
    let dump = gateway.config_dump();
    let mut out = Vec::new();
    for config in dump["configs"].as_array().into_iter().flatten() {
        for listener in config["dynamic_listeners"].as_array().into_iter().flatten() {
            let state = [&listener["active_state"], &listener["warming_state"]]
                .into_iter()
                .find(|s| !s.is_null())
                .cloned()
                .unwrap_or(Value::Null);
            let bound = &state["listener"]["address"]["socket_address"]["port_value"];
            if bound.as_u64() != Some(u64::from(port)) {
                continue;
            }
            for chain in state["listener"]["filter_chains"].as_array().into_iter().flatten() {
                let names = (chain["filter_chain_match"]["server_names"]
                    .as_array()
                    .into_iter()
                    .flatten())
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect();
                let context = &chain["transport_socket"]["typed_config"]["common_tls_context"];
                let sds = context["tls_certificate_sds_secret_configs"][0]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                out.push((names, sds));
            }
        }
    }
    out.sort();
    out
}

/// The copies in istio-system: their `tls.crt`, by name.
async fn copies(api: &Api<Secret>) -> BTreeMap<String, String> {
    let list = api
        .list(&ListParams::default().labels(COPIES))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (list.items.into_iter())
        .filter_map(|s| {
            let crt = s.data?.get("tls.crt")?.0.clone();
            Some((s.metadata.name?, String::from_utf8(crt).ok()?))
        })
        .collect()
}

/// Polls `check` until it holds, up to [`PATIENCE`].
async fn eventually<T>(what: &str, mut check: impl AsyncFnMut() -> Result<T, String>) -> T {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(last) if std::time::Instant::now() > deadline => panic!("{what}: not after {PATIENCE:?}: {last}"),
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
        }
    }
}

#[tokio::test]
async fn an_ingress_tls_secret_is_copied_to_the_gateway_namespace_and_served_by_its_https_server() {
    let istio = Istio::start().await.unwrap_or_else(|e| panic!("{e}"));
    let admin = istio.admin().await;
    istio.install_other_kinds_crds(&admin).await;
    let ns = istio.env.namespace("https").await;
    let first = TestCertificate::new(&["shop.example.com"]);
    let backend = SocketAddr::from(([127, 0, 0, 1], 9));
    let fqdn = format!("tls-app.{ns}.svc.cluster.local");
    istio
        .apply(&[
            secret(&first, &ns),
            ingress(&ns),
            service_entry("tls-app", &fqdn, 8443, "TLS", backend),
            secure_transport_server(&ns),
        ])
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let gateway = istio.gateway("istio-ingressgateway-0", &ingressgateway());
    let port = free_port();
    let watch = istio.gateway_watch(&ns, port).await;

    let copy = format!("switchyard.{ns}.shop-tls");
    let made = "switchyard.default-certificate".to_owned();
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), "istio-system");
    let held = eventually("the copies in istio-system", async || {
        let held = copies(&secrets).await;
        (held.len() == 2)
            .then_some(held.clone())
            .ok_or(format!("{held:?}\n{}", watch.log()))
    })
    .await;
    assert_eq!(
        held.get(&copy),
        Some(&first.chain_pem),
        "the copy holds the Ingress's certificate"
    );
    assert!(held.contains_key(&made), "{held:?}");
    let live = secrets.get(&copy).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(live.type_.as_deref(), Some("kubernetes.io/tls"));
    assert_eq!(
        live.data.as_ref().and_then(|d| d.get("tls.key")).map(|k| k.0.clone()),
        Some(first.key_pem.clone().into_bytes())
    );
    let annotations = live.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations.get("switchyard.io/copied-from"),
        Some(&format!("{ns}/shop-tls"))
    );

    // istiod's filter chains on one port: the host's names the copy, the default one the made
    // certificate, the passthrough host's terminates nothing.
    let expected = vec![
        (Vec::new(), format!("kubernetes://{made}")),
        (vec!["secure.example.com".to_owned()], String::new()),
        (vec!["shop.example.com".to_owned()], format!("kubernetes://{copy}")),
    ];
    gateway
        .wait_for("the HTTPS chains istiod builds", |g| {
            let chains = chains_on(g, port);
            (chains == expected)
                .then_some(())
                .ok_or(format!("{chains:?}\n--- istiod:\n{}", istio.istiod_log_tail(20)))
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(gateway.rejected_updates(), 0, "{}", gateway.log_tail());

    // A renewed Secret renews the copy.
    let renewed = TestCertificate::new(&["shop.example.com"]);
    istio
        .apply(&[secret(&renewed, &ns)])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    eventually("the renewed copy", async || {
        let held = copies(&secrets).await;
        (held.get(&copy) == Some(&renewed.chain_pem))
            .then_some(())
            .ok_or(format!("{held:?}"))
    })
    .await;

    // Without the Ingress, no HTTPS server and no copy.
    let ingresses: Api<kube::api::DynamicObject> = Api::namespaced_with(
        admin.clone(),
        &ns,
        &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk("networking.k8s.io", "v1", "Ingress")),
    );
    ingresses
        .delete("shop", &Default::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    eventually("the copies removed", async || {
        let held = copies(&secrets).await;
        held.is_empty().then_some(()).ok_or(format!("{held:?}"))
    })
    .await;
    gateway
        .wait_for("the HTTPS chains gone, the passthrough kept", |g| {
            let chains = chains_on(g, port);
            (chains == [(vec!["secure.example.com".to_owned()], String::new())])
                .then_some(())
                .ok_or(format!("{chains:?}"))
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    // Without the TransportServer too, the Gateway and the VirtualService would carry nothing, which
    // Istio's validation refuses: they are deleted.
    let transport_servers: Api<kube::api::DynamicObject> = Api::namespaced_with(
        admin.clone(),
        &ns,
        &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "k8s.nginx.org",
            "v1",
            "TransportServer",
        )),
    );
    transport_servers
        .delete("secure", &Default::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let istio_api = |kind: &str| -> Api<kube::api::DynamicObject> {
        let gvk = kube::api::GroupVersionKind::gvk("networking.istio.io", "v1beta1", kind);
        Api::namespaced_with(admin.clone(), "istio-system", &kube::api::ApiResource::from_gvk(&gvk))
    };
    for kind in ["Gateway", "VirtualService"] {
        let api = istio_api(kind);
        eventually(&format!("the {kind} deleted"), async || {
            match api.get_opt("switchyard").await {
                Ok(None) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }
    // Deleted on purpose: not re-created by the follower.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    for kind in ["Gateway", "VirtualService"] {
        let left = istio_api(kind)
            .get_opt("switchyard")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(left.is_none(), "{kind} re-created: {left:?}");
    }
    let log = watch.log();
    assert!(!log.contains("PRIVATE KEY") && !log.contains("Forbidden"), "{log}");
}
