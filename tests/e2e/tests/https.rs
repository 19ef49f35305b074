//! HTTPS from the manifests (ROUTING.md §8) in a real Envoy: `switchyard watch --manifests DIR
//! --lds-file … --sds-dir …` writes the HTTPS listener and its certificates from the Secrets the
//! manifests name; Envoy presents them per SNI, routes by `:authority` through the same filter,
//! follows a renewed Secret without a restart, and the plain listener redirects where the kind says.
//! Needs `ENVOY_BIN`, `SWITCHYARD_WASM` and `SWITCHYARD_BIN` (`make test-envoy` sets them); `make
//! test-module` runs it again with the native module (`SWITCHYARD_FILTER_FORM=module`).

mod watch_setup;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use switchyard_e2e::https::{https_send, HttpsAnswer, TestCertificate};
use switchyard_e2e::l4::TlsBackend;
use switchyard_e2e::{
    backend_name, envoy_config_reading, fresh_dir, get, required_path, send, set_module_search_path, Backend, EcdsFile,
    Envoy, FilterForm,
};
use switchyard_free_port::free_port;
use watch_setup::{Watch, BLUE, GREEN};

/// The TLS backend of the passthrough TransportServer.
const SECURE: &str = "default/secure-app:8443";

/// `switchyard watch` serving HTTPS, and Envoy reading its ECDS, LDS and SDS files.
struct Https {
    dir: PathBuf,
    /// The HTTPS listener.
    tls: SocketAddr,
    envoy: Envoy,
    watch: Watch,
}

impl Https {
    /// Starts both with `manifests` written first (file name, text), plus a passthrough backend.
    fn start(manifests: &[(&str, String)], passthrough: Option<&TlsBackend>) -> Https {
        Https::start_with(manifests, passthrough, &[])
    }

    /// [`Https::start`] with more flags for the watch.
    fn start_with(manifests: &[(&str, String)], passthrough: Option<&TlsBackend>, flags: &[&str]) -> Https {
        let envoy_bin = required_path("ENVOY_BIN");
        // The wasm filter, or the native module with SWITCHYARD_FILTER_FORM=module (`make test-module`).
        let form = FilterForm::from_env();
        let file = required_path(form.variable());
        if form.is_module() {
            set_module_search_path(&file);
        }
        let dir = fresh_dir("https");
        for sub in ["manifests", "ecds", "lds"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        for (file, text) in manifests {
            std::fs::write(dir.join("manifests").join(file), text).unwrap();
        }
        let backends: Vec<(String, Backend)> = [BLUE, GREEN]
            .iter()
            .map(|c| ((*c).to_owned(), Backend::start(&backend_name(c)).unwrap()))
            .collect();
        let mut ports: Vec<(&str, u16)> = backends.iter().map(|(c, b)| (c.as_str(), b.addr.port())).collect();
        if let Some(backend) = passthrough {
            ports.push((SECURE, backend.addr.port()));
        }
        let mut bootstrap = envoy_config_reading(&dir, &ports, 0, 0, form, EcdsFile::Json);
        bootstrap.push_str(&format!(
            "dynamic_resources:\n  lds_config:\n    path_config_source:\n      path: {lds}/listeners.json\n      watched_directory: {{path: {lds}}}\n",
            lds = dir.join("lds").display()
        ));
        std::fs::write(dir.join("envoy.yaml"), bootstrap).unwrap();
        let port = free_port();
        let extra: Vec<String> = [
            "--lds-file",
            &dir.join("lds/listeners.json").display().to_string(),
            "--sds-dir",
            &dir.join("sds").display().to_string(),
            "--tls-passthrough-port",
            &port.to_string(),
            "--l4-address",
            "127.0.0.1",
        ]
        .iter()
        .chain(flags)
        .map(|s| s.to_string())
        .collect();
        let watch = Watch::start_with(&dir, form, EcdsFile::Json, &extra);
        let mut envoy = Envoy::spawn(&envoy_bin, dir.clone(), file, 1);
        envoy.backends = backends.into_iter().collect();
        let https = Https {
            dir,
            tls: SocketAddr::from(([127, 0, 0, 1], port)),
            envoy,
            watch,
        };
        // The plain listener and the HTTPS one active: its certificates loaded (a listener waits
        // for its SDS secrets before it takes connections).
        let active = || https.envoy.stat("listener_manager.total_listeners_active");
        https.eventually("the HTTPS listener active", || active() >= Some(2));
        https
    }

    /// `GET /` for `host` over TLS with `sni`.
    fn ask(&self, sni: Option<&str>, host: &str) -> Result<HttpsAnswer, String> {
        https_send(self.tls, sni, &get(host, "/"))
    }

    /// The certificate of the SDS file `file` (what Envoy was handed).
    fn handed(&self, file: &str) -> CertificateDer<'static> {
        let text = std::fs::read_to_string(self.dir.join("sds").join(file)).unwrap();
        let document: serde_json::Value = serde_json::from_str(&text).unwrap();
        let pem = document["resources"][0]["tls_certificate"]["certificate_chain"]["inline_string"]
            .as_str()
            .unwrap();
        CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
    }

    fn eventually(&self, what: &str, check: impl Fn() -> bool) {
        let describe = || format!("watch:\n{}\nenvoy:\n{}", self.watch.log(), self.envoy.log());
        watch_setup::eventually(what, check, describe);
    }
}

/// An Ingress in `default` routing `hosts` (path `/`) to `service` in namespace `shop`... kept in
/// `shop` as the watch suites' backends are: the Ingress is in `shop`.
fn ingress(name: &str, hosts: &[&str], service: &str, tls: &str, annotations: &str) -> String {
    let rules: String = hosts
        .iter()
        .map(|h| format!("  - host: \"{h}\"\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, backend: {{service: {{name: {service}, port: {{number: 80}}}}}}}}\n"))
        .collect();
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: {name}\n  namespace: shop\n  annotations: {{{annotations}}}\nspec:\n  tls:\n{tls}  rules:\n{rules}"
    )
}

/// cert-manager's HTTP-01 solver Ingress for `host` (its path for the token, to green), with `spec`
/// lines added (an `ingressClassName`).
fn acme_solver(host: &str, spec: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: cm-acme-http-solver, namespace: shop}}\nspec:\n{spec}  rules:\n  - host: {host}\n    http:\n      paths:\n      - {{path: /.well-known/acme-challenge/t0ken, pathType: ImplementationSpecific, backend: {{service: {{name: green, port: {{number: 80}}}}}}}}\n"
    )
}

/// ingress-nginx's IngressClass `nginx`, the Secret `shop/n-tls` holding `certificate` and the
/// ingress-nginx Ingress `shop/n` routing `n.example.com` to blue with it (run with
/// `--ingress-nginx-class nginx`).
fn ingress_nginx_n(certificate: &TestCertificate) -> Vec<(&'static str, String)> {
    let class = "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: nginx}\nspec: {controller: k8s.io/ingress-nginx}\n";
    let tls = "  - {hosts: [n.example.com], secretName: n-tls}\n";
    let n = ingress("n", &["n.example.com"], "blue", tls, "").replace("spec:\n", "spec:\n  ingressClassName: nginx\n");
    vec![
        ("class.yaml", class.to_owned()),
        ("n-tls.yaml", certificate.secret("shop", "n-tls")),
        ("n.yaml", n),
    ]
}

/// The Secret `shop/a-tls` holding `certificate` and the Ingress `shop/web` routing `a.example.com`
/// to blue with it, with `annotations`.
fn web_a(certificate: &TestCertificate, annotations: &str) -> Vec<(&'static str, String)> {
    let tls = "  - {hosts: [a.example.com], secretName: a-tls}\n";
    vec![
        ("a-tls.yaml", certificate.secret("shop", "a-tls")),
        ("web.yaml", ingress("web", &["a.example.com"], "blue", tls, annotations)),
    ]
}

#[test]
fn each_sni_gets_its_certificate_exact_then_wildcard_else_the_default_and_requests_route_by_host() {
    let a = TestCertificate::new(&["a.example.com"]);
    let star = TestCertificate::new(&["*.example.com"]);
    let manifests = [
        ("a-tls.yaml", a.secret("shop", "a-tls")),
        ("star-tls.yaml", star.secret("shop", "star-tls")),
        (
            "web.yaml",
            ingress(
                "web",
                &["a.example.com", "*.example.com", "plain.org"],
                "blue",
                "  - {hosts: [a.example.com], secretName: a-tls}\n  - {hosts: [\"*.example.com\"], secretName: star-tls}\n",
                "",
            ),
        ),
    ];
    let https = Https::start(&manifests, None);
    let default = https.handed("switchyard-default-certificate.json");
    let seen = |sni: Option<&str>, host: &str| {
        let answer = https
            .ask(sni, host)
            .unwrap_or_else(|e| panic!("{sni:?}: {e}\n{}", https.envoy.log()));
        (answer.certificate, answer.response.backend().map(str::to_owned))
    };
    assert_eq!(
        seen(Some("a.example.com"), "a.example.com"),
        (a.der.clone(), Some("blue".into()))
    );
    assert_eq!(
        seen(Some("b.example.com"), "b.example.com"),
        (star.der.clone(), Some("blue".into()))
    );
    assert_eq!(
        seen(Some("plain.org"), "plain.org"),
        (default.clone(), Some("blue".into())),
        "a host without a certificate of its own"
    );
    assert_eq!(
        seen(Some("unknown.invalid"), "a.example.com").0,
        default,
        "an SNI no host has"
    );
    assert_eq!(
        seen(None, "a.example.com"),
        (default, Some("blue".into())),
        "no SNI: the default, routed by Host"
    );
    assert_ne!(a.der, star.der);
}

#[test]
fn a_renewed_secret_reaches_new_handshakes_while_requests_keep_being_answered() {
    let old = TestCertificate::new(&["a.example.com"]);
    let manifests = web_a(&old, "");
    let https = Arc::new(Https::start(&manifests, None));
    assert_eq!(
        https.ask(Some("a.example.com"), "a.example.com").unwrap().certificate,
        old.der
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(https.dir.join("sds/shop_a-tls.json"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "a file holding a key is the owner's only");

    // Load while the Secret is renewed: every request must be answered by the backend.
    let stop = Arc::new(AtomicBool::new(false));
    let (sent, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let load = {
        let (https, stop, sent, failed) = (https.clone(), stop.clone(), sent.clone(), failed.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let answer = https.ask(Some("a.example.com"), "a.example.com");
                sent.fetch_add(1, Ordering::Relaxed);
                if answer
                    .as_ref()
                    .map(|a| a.response.backend() != Some("blue"))
                    .unwrap_or(true)
                {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    let new = TestCertificate::new(&["a.example.com"]);
    let renewed = Instant::now();
    std::fs::write(https.dir.join("manifests/a-tls.yaml"), new.secret("shop", "a-tls")).unwrap();
    https.eventually("the renewed certificate is presented", || {
        https
            .ask(Some("a.example.com"), "a.example.com")
            .is_ok_and(|a| a.certificate == new.der)
    });
    eprintln!("renewed Secret to new handshakes: {:?}", renewed.elapsed());
    thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    load.join().unwrap();
    let (sent, failed) = (sent.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    eprintln!("{sent} requests over TLS during the renewal, {failed} failed");
    assert!(sent > 0);
    assert_eq!(failed, 0, "no request fails while the certificate is renewed");
    let modified = https.envoy.stat("listener_manager.listener_modified");
    assert_eq!(
        modified,
        Some(0),
        "the listener was not changed (no drain) for a renewal"
    );
}

#[test]
fn plain_http_is_redirected_where_the_ingress_asks_and_its_https_routes() {
    let a = TestCertificate::new(&["a.example.com"]);
    let mut manifests = web_a(&a, "ingress.kubernetes.io/force-ssl-redirect: \"true\"");
    manifests.push(("open.yaml", ingress("open", &["open.example.com"], "green", "", "")));
    manifests.push(("solver.yaml", acme_solver("a.example.com", "")));
    let https = Https::start(&manifests, None);
    let challenge = send(
        https.envoy.addr,
        &get("a.example.com", "/.well-known/acme-challenge/t0ken"),
    )
    .unwrap();
    assert_eq!(
        challenge.backend(),
        Some("green"),
        "cert-manager's HTTP-01 solver stays reachable on port 80 while its host redirects"
    );
    let plain = send(https.envoy.addr, &get("a.example.com:8080", "/x?y=1")).unwrap();
    assert_eq!(plain.status, 301);
    assert_eq!(plain.header("location"), Some("https://a.example.com/x?y=1"));
    let open = send(https.envoy.addr, &get("open.example.com", "/")).unwrap();
    assert_eq!(
        open.backend(),
        Some("green"),
        "an Ingress without the annotation serves plain HTTP"
    );
    let secure = https.ask(Some("a.example.com"), "a.example.com").unwrap();
    assert_eq!(secure.response.backend(), Some("blue"));
    assert_eq!(secure.certificate, a.der);
}

#[test]
fn passthrough_and_termination_share_the_https_port_by_sni() {
    let backend = TlsBackend::start("secure", "secure.example.com");
    let a = TestCertificate::new(&["a.example.com"]);
    let transport = "apiVersion: k8s.nginx.org/v1\nkind: TransportServer\nmetadata: {name: secure, namespace: default}\nspec:\n  listener: {name: tls-passthrough, protocol: TLS_PASSTHROUGH}\n  host: secure.example.com\n  upstreams:\n  - {name: secure, service: secure-app, port: 8443}\n  action: {pass: secure}\n";
    let mut manifests = web_a(&a, "");
    manifests.push(("secure.yaml", transport.to_owned()));
    let https = Https::start(&manifests, Some(&backend));
    let terminated = https.ask(Some("a.example.com"), "a.example.com").unwrap();
    assert_eq!(
        (terminated.certificate, terminated.response.backend()),
        (a.der.clone(), Some("blue"))
    );
    let passed = switchyard_e2e::l4::tls_hello(
        https.tls,
        "secure.example.com",
        std::slice::from_ref(&backend.certificate),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", https.envoy.log()));
    assert_eq!(passed.line, "backend: secure");
    assert_eq!(
        passed.certificate, backend.certificate,
        "passed through: the backend's own certificate"
    );
}

#[test]
fn a_virtualserver_whose_secret_is_missing_fails_its_handshakes_and_still_routes_port_80() {
    let vs = "apiVersion: k8s.nginx.org/v1\nkind: VirtualServer\nmetadata: {name: cafe, namespace: shop}\nspec:\n  host: cafe.example.com\n  tls: {secret: cafe-tls}\n  upstreams:\n  - {name: blue, service: blue, port: 80}\n  routes:\n  - path: /\n    action: {pass: blue}\n";
    let https = Https::start(&[("cafe.yaml", vs.to_owned())], None);
    let refused = https.ask(Some("cafe.example.com"), "cafe.example.com");
    assert!(refused.is_err(), "a handshake naming the host fails: {refused:?}");
    let plain = send(https.envoy.addr, &get("cafe.example.com", "/")).unwrap();
    assert_eq!(plain.backend(), Some("blue"));
    let status = https.watch.status();
    let text = status.to_string();
    assert!(text.contains("TLSSecretNotValid"), "{status:#}");
}

#[test]
fn ingress_nginx_hosts_send_hsts_on_https_only_as_its_configmap_says() {
    let a = TestCertificate::new(&["n.example.com"]);
    let mut manifests = ingress_nginx_n(&a);
    manifests.extend([
        ("own.yaml", ingress("own", &["own.example.com"], "green", "", "")),
        (
            "solver.yaml",
            acme_solver("n.example.com", "  ingressClassName: nginx\n"),
        ),
    ]);
    let https = Https::start_with(&manifests, None, &["--ingress-nginx-class", "nginx"]);
    let secure = https.ask(Some("n.example.com"), "n.example.com").unwrap();
    assert_eq!(secure.response.backend(), Some("blue"));
    assert_eq!(secure.certificate, a.der, "ingress-nginx's certificate choice (§8.4)");
    assert_eq!(
        secure.response.header("strict-transport-security"),
        Some("max-age=31536000; includeSubDomains")
    );
    let plain = send(https.envoy.addr, &get("n.example.com", "/x")).unwrap();
    assert_eq!(plain.status, 308, "ssl-redirect: the host has a certificate (§7.7)");
    assert_eq!(plain.header("strict-transport-security"), None, "never on plain HTTP");
    let challenge = send(
        https.envoy.addr,
        &get("n.example.com", "/.well-known/acme-challenge/t0ken"),
    )
    .unwrap();
    assert_eq!(
        challenge.backend(),
        Some("green"),
        "no-tls-redirect-locations keeps cert-manager's HTTP-01 solver on port 80"
    );
    let own = https.ask(Some("own.example.com"), "own.example.com").unwrap();
    assert_eq!(own.response.backend(), Some("green"));
    assert_eq!(
        own.response.header("strict-transport-security"),
        None,
        "Switchyard's own Ingresses send none"
    );
}

#[test]
fn with_reject_unknown_sni_a_handshake_without_a_known_host_fails() {
    let a = TestCertificate::new(&["a.example.com"]);
    let https = Https::start_with(&web_a(&a, ""), None, &["--reject-unknown-sni"]);
    let known = https.ask(Some("a.example.com"), "a.example.com").unwrap();
    assert_eq!(
        (known.certificate, known.response.backend()),
        (a.der.clone(), Some("blue"))
    );
    assert!(
        https.ask(Some("unknown.invalid"), "a.example.com").is_err(),
        "an SNI no host has"
    );
    assert!(https.ask(None, "a.example.com").is_err(), "no SNI");
}

/// ROUTING.md §8.1.5: on a connection whose SNI got a host's own certificate, a request for a host of
/// another certificate is answered 421 (HTTP/2 reuses a connection across names one certificate
/// covers); a connection that got the default certificate routes by Host, except to an HTTPProxy
/// without `enableFallbackCertificate`.
#[test]
fn a_request_for_a_host_of_another_certificate_is_misdirected_421() {
    let a = TestCertificate::new(&["a.example.com"]);
    let p = TestCertificate::new(&["p.example.com"]);
    let proxy = "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: p, namespace: shop}\nspec:\n  virtualhost:\n    fqdn: p.example.com\n    tls: {secretName: p-tls}\n  routes:\n  - services: [{name: green, port: 80}]\n";
    let mut manifests = web_a(&a, "");
    manifests.push(("open.yaml", ingress("open", &["open.example.com"], "green", "", "")));
    manifests.push(("p-tls.yaml", p.secret("shop", "p-tls")));
    manifests.push(("p.yaml", proxy.to_owned()));
    let https = Https::start(&manifests, None);
    let status = |sni: Option<&str>, host: &str| {
        let answer = https
            .ask(sni, host)
            .unwrap_or_else(|e| panic!("{sni:?} {host}: {e}\n{}", https.envoy.log()));
        (answer.response.status, answer.response.backend().map(str::to_owned))
    };
    assert_eq!(
        status(Some("a.example.com"), "a.example.com:10443"),
        (200, Some("blue".into()))
    );
    assert_eq!(
        status(Some("a.example.com"), "open.example.com").0,
        421,
        "open.example.com gets the default certificate"
    );
    assert_eq!(status(Some("a.example.com"), "p.example.com").0, 421);
    assert_eq!(
        status(Some("p.example.com"), "p.example.com"),
        (200, Some("green".into()))
    );
    assert_eq!(
        status(None, "open.example.com"),
        (200, Some("green".into())),
        "no SNI: routed by Host"
    );
    assert_eq!(
        status(Some("unknown.invalid"), "a.example.com"),
        (200, Some("blue".into())),
        "the default certificate: routed"
    );
    assert_eq!(
        status(None, "p.example.com").0,
        421,
        "an HTTPProxy without enableFallbackCertificate"
    );
}

/// `wrk` against `addr` over TLS with `Host: host` for `seconds`, keep-alive or one connection (one
/// handshake) per request: its requests per second.
fn wrk(addr: SocketAddr, host: &str, close: bool, seconds: u32) -> f64 {
    let wrk = std::env::var("WRK_BIN").unwrap_or_else(|_| "wrk".to_owned());
    let mut command = std::process::Command::new(wrk);
    command.args(["-t1", "-c8", &format!("-d{seconds}s"), "-H", &format!("Host: {host}")]);
    if close {
        command.args(["-H", "Connection: close"]);
    }
    let out = command
        .arg(format!("https://{addr}/"))
        .output()
        .expect("wrk (make bench-https-envoy installs it)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("Non-2xx"),
        "every request answered by the backend:\n{text}"
    );
    text.lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Requests/sec in wrk's output:\n{text}"))
}

/// The same certificate and filter in a hand-written static Envoy: the HTTPS listener's default
/// chain of `lds` (the watch's own), its SDS reference replaced by the certificate inline, one
/// listener on `port` reading the SNI as any listener serving certificates by host does (the TLS
/// inspector), one worker.
fn static_envoy(
    lds: &std::path::Path,
    certificate: &TestCertificate,
    port: u16,
    backend: SocketAddr,
) -> switchyard_e2e::process::EnvoyProcess {
    let document: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(lds).unwrap()).unwrap();
    let https = (document["resources"].as_array().unwrap().iter())
        .find(|l| l["name"] == "switchyard-https")
        .expect("the HTTPS listener");
    let mut chain = https["default_filter_chain"].clone();
    let context = &mut chain["transport_socket"]["typed_config"]["common_tls_context"];
    context
        .as_object_mut()
        .unwrap()
        .remove("tls_certificate_sds_secret_configs");
    context["tls_certificates"] = serde_json::json!([{
        "certificate_chain": { "inline_string": certificate.chain_pem },
        "private_key": { "inline_string": certificate.key_pem },
    }]);
    let bootstrap = serde_json::json!({
        "node": { "id": "static", "cluster": "static" },
        "admin": { "address": { "socket_address": { "address": "127.0.0.1", "port_value": 0 } } },
        "static_resources": {
            "listeners": [{
                "name": "static-https",
                "address": { "socket_address": { "address": "127.0.0.1", "port_value": port } },
                "listener_filters": https["listener_filters"].clone(),
                "filter_chains": [chain],
            }],
            "clusters": [{
                "name": BLUE, "type": "STATIC", "connect_timeout": "1s",
                "load_assignment": { "cluster_name": BLUE, "endpoints": [{ "lb_endpoints": [{ "endpoint": { "address": {
                    "socket_address": { "address": "127.0.0.1", "port_value": backend.port() } } } }] }] },
            }],
        },
    });
    let dir = fresh_dir("https-static");
    std::fs::write(dir.join("envoy.yaml"), bootstrap.to_string()).unwrap();
    switchyard_e2e::process::EnvoyProcess::start(&required_path("ENVOY_BIN"), dir, 1, |_| true)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The figure (BENCHMARKS.md, "HTTPS"): handshakes and requests per second over TLS through
/// Switchyard's HTTPS listener (SDS, the filter chains of the manifests) against the same
/// certificate and filter in a hand-written static listener, side by side, one Envoy worker each.
#[test]
#[ignore = "benchmark: make bench-https-envoy"]
fn bench_tls_handshakes_and_requests_against_a_static_listener() {
    let certificate = TestCertificate::new(&["bench.example.com"]);
    let tls = "  - {hosts: [bench.example.com], secretName: bench-tls}\n";
    let manifests = [
        ("bench-tls.yaml", certificate.secret("shop", "bench-tls")),
        ("web.yaml", ingress("web", &["bench.example.com"], "blue", tls, "")),
    ];
    // wrk names the address as its SNI: the default certificate, set to the same Secret.
    let ours = Https::start_with(&manifests, None, &["--default-certificate", "shop/bench-tls"]);
    let port = free_port();
    let backend = ours.envoy.backends[BLUE].addr;
    let theirs = static_envoy(&ours.dir.join("lds/listeners.json"), &certificate, port, backend);
    let static_addr = SocketAddr::from(([127, 0, 0, 1], port));
    ours.eventually("the static listener answers", || {
        https_send(static_addr, Some("bench.example.com"), &get("bench.example.com", "/"))
            .is_ok_and(|a| a.response.backend() == Some("blue"))
    });
    let (mut kept, mut closed) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    for _ in 0..5 {
        kept.0.push(wrk(ours.tls, "bench.example.com", false, 5));
        kept.1.push(wrk(static_addr, "bench.example.com", false, 5));
        closed.0.push(wrk(ours.tls, "bench.example.com", true, 5));
        closed.1.push(wrk(static_addr, "bench.example.com", true, 5));
    }
    drop(theirs);
    let report = |what: &str, (a, b): (Vec<f64>, Vec<f64>)| {
        let (a, b) = (median(a.clone()), median(b.clone()));
        println!("  {what}: switchyard {a:.0}/s, static {b:.0}/s, ratio {:.3}", a / b);
    };
    println!("TLS through one Envoy worker, wrk -t1 -c8, 5 rounds of 5 s side by side (medians):");
    report("requests on kept-alive connections", kept);
    report("handshakes (a connection per request)", closed);
}

#[test]
fn ingress_nginx_ssl_passthrough_reaches_the_backend_undecrypted_beside_terminated_hosts() {
    let backend = TlsBackend::start("secure", "secure.example.com");
    let a = TestCertificate::new(&["n.example.com"]);
    let passthrough = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: secure\n  namespace: default\n  annotations: {nginx.ingress.kubernetes.io/ssl-passthrough: \"true\"}\nspec:\n  ingressClassName: nginx\n  rules:\n  - host: secure.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: secure-app, port: {number: 8443}}}}\n";
    let mut manifests = ingress_nginx_n(&a);
    manifests.push(("secure.yaml", passthrough.to_owned()));
    let flags = [
        "--ingress-nginx-class",
        "nginx",
        "--ingress-nginx-enable-ssl-passthrough",
    ];
    let https = Https::start_with(&manifests, Some(&backend), &flags);
    let passed = switchyard_e2e::l4::tls_hello(
        https.tls,
        "secure.example.com",
        std::slice::from_ref(&backend.certificate),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", https.envoy.log()));
    assert_eq!(passed.line, "backend: secure");
    assert_eq!(
        passed.certificate, backend.certificate,
        "passed through: the backend's own certificate"
    );
    let terminated = https.ask(Some("n.example.com"), "n.example.com").unwrap();
    assert_eq!(
        (terminated.certificate, terminated.response.backend()),
        (a.der.clone(), Some("blue"))
    );
}

#[test]
fn an_ingress_nginx_secret_updated_to_unusable_content_keeps_its_last_good_certificate() {
    let good = TestCertificate::new(&["n.example.com"]);
    let manifests = ingress_nginx_n(&good);
    let https = Https::start_with(&manifests, None, &["--ingress-nginx-class", "nginx"]);
    assert_eq!(
        https.ask(Some("n.example.com"), "n.example.com").unwrap().certificate,
        good.der
    );
    let broken = good.secret("shop", "n-tls").replace("PRIVATE KEY", "BROKEN KEY");
    std::fs::write(https.dir.join("manifests/n-tls.yaml"), broken).unwrap();
    https.eventually("the broken Secret said", || {
        https
            .watch
            .status()
            .to_string()
            .contains("last good certificate is kept")
    });
    let answer = https.ask(Some("n.example.com"), "n.example.com").unwrap();
    assert_eq!(
        (answer.certificate, answer.response.backend()),
        (good.der.clone(), Some("blue"))
    );
}
