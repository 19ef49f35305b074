//! The helpers behind `make run` (scripts/run.sh):
//!
//! - `switchyard-demo ecds WASM TABLE OUT`: writes the ECDS file that loads the filter with a table
//!   (written beside OUT, then renamed over it, so a running Envoy picks it up whole).
//! - `switchyard-demo backends ENVOY_YAML [CERT_DIR]`: starts one backend per cluster of the Envoy
//!   config on the cluster's port, each answering with its name (the cluster name less the port): an
//!   HTTP backend, or what the cluster's `# demo:` comment asks for (`tls HOST`: a TLS server with a
//!   fresh self-signed certificate for HOST, written to CERT_DIR, default `build/run/tls`; `tcp`: a
//!   TCP echo; see [`l4`]; `front PROTOCOL`: nothing, the port is the listener of the backends' own
//!   Envoy, scripts/envoy-backends.yaml, whose clusters get their HTTP backends from a second
//!   `backends` of that file); runs until killed.
//! - `switchyard-demo samples LISTENER ADMIN [LDS_FILE CERT_DIR]`: waits until Envoy is ready, then
//!   sends sample requests and prints which backend answered each; with an LDS file, also a sample
//!   through each of its listeners.
//! - `switchyard-demo pem HOST CERT KEY`: writes a fresh self-signed certificate for HOST and its key
//!   as PEM files (the TLS of scripts/envoy-backends.yaml, made at run time).

mod l4;

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::thread;
use std::time::{Duration, Instant};

use switchyard_e2e::{ecds_document, get, send, Backend, ConfigForm, Request};

/// Where `backends` writes the TLS backends' certificates unless told otherwise.
const CERT_DIR: &str = "build/run/tls";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["ecds", wasm, table, out] => ecds(wasm, table, out),
        ["backends", config] => backends(config, CERT_DIR),
        ["backends", config, cert_dir] => backends(config, cert_dir),
        ["samples", listener, admin] => samples(listener, admin, None),
        ["samples", listener, admin, lds, cert_dir] => samples(listener, admin, Some((lds, cert_dir))),
        ["certificate", host, namespace, name, out] => certificate(host, namespace, name, out),
        ["pem", host, cert, key] => pem(host, cert, key),
        _ => Err(
            "usage: switchyard-demo ecds WASM TABLE OUT | backends ENVOY_YAML [CERT_DIR] \
                  | samples LISTENER ADMIN [LDS_FILE CERT_DIR] | certificate HOST NAMESPACE NAME OUT \
                  | pem HOST CERT KEY"
                .into(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchyard-demo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes a `kubernetes.io/tls` Secret `NAMESPACE/NAME` holding a self-signed certificate for
/// `host`, made now (`make run`'s HTTPS example: no key is kept in the repository). Written beside
/// `out` and renamed over it, so that a watch sees one change: run it again to renew the certificate.
fn certificate(host: &str, namespace: &str, name: &str, out: &str) -> Result<(), String> {
    let made = switchyard_e2e::https::TestCertificate::new(&[host]);
    let tmp = format!("{out}.tmp");
    std::fs::write(&tmp, made.secret(namespace, name)).map_err(|e| format!("{tmp}: {e}"))?;
    std::fs::rename(&tmp, out).map_err(|e| format!("{out}: {e}"))
}

/// Writes a fresh self-signed certificate for `host` to `cert` and its private key to `key`, both
/// PEM (the backends' Envoy of `make run` terminates TLS with them: no key is kept in the repository).
fn pem(host: &str, cert: &str, key: &str) -> Result<(), String> {
    let made = switchyard_e2e::https::TestCertificate::new(&[host]);
    for (path, text) in [(cert, &made.chain_pem), (key, &made.key_pem)] {
        let path = Path::new(path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

fn ecds(wasm: &str, table: &str, out: &str) -> Result<(), String> {
    let wasm = std::fs::canonicalize(wasm).map_err(|e| format!("{wasm}: {e}"))?;
    let table = std::fs::read_to_string(table).map_err(|e| format!("{table}: {e}"))?;
    let tmp = format!("{out}.tmp");
    std::fs::write(&tmp, ecds_document(&wasm, &table, ConfigForm::StringValue)).map_err(|e| format!("{tmp}: {e}"))?;
    std::fs::rename(&tmp, out).map_err(|e| format!("{out}: {e}"))
}

/// The backend `make run` starts for a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
enum BackendKind {
    /// An HTTP backend answering with its name (no `# demo:` comment).
    Http,
    /// `# demo: tls HOST`: a TLS server with its own certificate for HOST.
    Tls(String),
    /// `# demo: tcp`: a TCP echo.
    Tcp,
    /// `# demo: front PROTOCOL`: no backend of ours; the backends' Envoy (scripts/envoy-backends.yaml)
    /// listens there and speaks PROTOCOL (`tls`, `h2c`: the variant the cluster's name ends with).
    Front(String),
}

/// One cluster of envoy.yaml.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cluster {
    name: String,
    port: u16,
    kind: BackendKind,
}

/// The backend a `# demo:` comment asks for.
fn backend_kind(comment: Option<&str>) -> Result<BackendKind, String> {
    let Some(comment) = comment else {
        return Ok(BackendKind::Http);
    };
    let words: Vec<&str> = comment.split_whitespace().collect();
    match words.as_slice() {
        ["demo:", "tls", host] => Ok(BackendKind::Tls((*host).to_owned())),
        ["demo:", "tcp"] => Ok(BackendKind::Tcp),
        ["demo:", "front", protocol] => Ok(BackendKind::Front((*protocol).to_owned())),
        _ if !comment.trim().starts_with("demo:") => Ok(BackendKind::Http),
        _ => Err(format!(
            "`#{comment}`: expected `# demo: tls HOST`, `# demo: tcp` or `# demo: front PROTOCOL`"
        )),
    }
}

/// Every cluster of an Envoy config written like envoy.yaml (`- name: "<cluster>"`, optionally
/// followed by a `# demo: ...` comment, then, within the cluster, `port_value: <port>`).
fn clusters(config: &str) -> Result<Vec<Cluster>, String> {
    let mut found = Vec::new();
    let mut in_clusters = false;
    let mut named: Option<(String, BackendKind)> = None;
    for line in config.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("clusters:") {
            in_clusters = true;
            continue;
        }
        if !in_clusters {
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("- name:") {
            let (name, comment) = match rest.split_once('#') {
                Some((name, comment)) => (name, Some(comment)),
                None => (rest, None),
            };
            named = Some((name.trim().trim_matches('"').to_owned(), backend_kind(comment)?));
        }
        if let Some(at) = trimmed.find("port_value:") {
            let digits: String = trimmed[at + "port_value:".len()..]
                .trim()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let (Some((name, kind)), Ok(port)) = (named.take(), digits.parse()) {
                found.push(Cluster { name, port, kind });
            }
        }
    }
    Ok(found)
}

fn backends(config: &str, cert_dir: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(config).map_err(|e| format!("{config}: {e}"))?;
    let clusters = clusters(&text).map_err(|e| format!("{config}: {e}"))?;
    if clusters.is_empty() {
        return Err(format!("{config}: no clusters found"));
    }
    let mut running = Vec::new();
    for Cluster {
        name: cluster,
        port,
        kind,
    } in clusters
    {
        let name = cluster.rsplit_once(':').map_or(cluster.as_str(), |(n, _)| n).to_owned();
        let failed = |e: String| format!("backend {name} on port {port}: {e}");
        let shown = match kind {
            BackendKind::Http => {
                let backend =
                    Backend::start_on(&name, &format!("127.0.0.1:{port}")).map_err(|e| failed(e.to_string()))?;
                let shown = format!("http://{}", backend.addr);
                running.push(backend);
                shown
            }
            BackendKind::Tls(host) => l4::start_tls(&name, &host, port, Path::new(cert_dir)).map_err(failed)?,
            BackendKind::Tcp => l4::start_tcp(&name, port).map_err(failed)?,
            BackendKind::Front(protocol) => {
                format!("{protocol}://127.0.0.1:{port}  (the backends' Envoy, scripts/envoy-backends.yaml)")
            }
        };
        println!("  backend {name:<24} {shown}  (cluster {cluster})");
    }
    loop {
        thread::park();
    }
}

fn samples(listener: &str, admin: &str, l4: Option<(&str, &str)>) -> Result<(), String> {
    let listener: SocketAddr = listener.parse().map_err(|e| format!("{listener}: {e}"))?;
    let admin: SocketAddr = admin.parse().map_err(|e| format!("{admin}: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !send(admin, &get("admin", "/ready")).is_ok_and(|r| r.status == 200) {
        if Instant::now() > deadline {
            return Err(format!(
                "Envoy's admin {admin} did not report ready within 60 s (see build/run/envoy.log)"
            ));
        }
        thread::sleep(Duration::from_millis(100));
    }
    let requests: Vec<Request> = vec![
        get("example.net", "/bar"),
        get("example.net", "/bar/foo").header("Key", "value"),
        get("example.net", "/bar").header("Key", "value"),
        get("example.net", "/bar")
            .header("Header-key", "value")
            .header("Cookie", "cookie-key=value"),
        get("other.net", "/bar"),
        get("cafe.example.com", "/coffee"),
        get("cafe.example.org", "/coffee"),
        get("cafe-cross.example.com", "/tea"),
        get("cafe-cross.example.com", "/coffee"),
        get("cafe-advanced.example.com", "/tea"),
        get("cafe-advanced.example.com", "/coffee").header("Cookie", "version=v2"),
        get("cafe-advanced.example.com", "/old"),
        get("root.bar.com", "/service2/blog/post-1"),
        get("ns-root.bar.com", "/blog"),
        get("secure.example.com", "/"),
        get("example.net", "/nothing-here"),
        get("example.net", "/bar").header("x-route-cluster", "default/s1:80"),
        // ingress-nginx's documented examples (examples/001-ingress-nginx-*, --ingress-nginx-class nginx).
        get("rewrite.bar.com", "/something/new?x=1"),
        get("approot.bar.com", "/"),
        get("test.com", "/foo/bar/1"),
        get("foo.bar.com", "/a/"),
        get("bar", "/app-b"),
        // ingress-nginx's canaries (examples/001-ingress-nginx-canary).
        get("shop.example.com", "/").header("X-Canary", "always"),
        get("shop.example.com", "/").header("X-Canary", "never"),
        get("shop.example.com", "/cart").header("Cookie", "canary=always"),
        get("api.example.com", "/").header("X-Api-Version", "v2"),
        get("api.example.com", "/"),
    ];
    println!("Sample requests through http://{listener}:");
    for request in &requests {
        let extra: Vec<String> = request.headers.iter().map(|(k, v)| format!("-H '{k}: {v}'")).collect();
        let shown = format!("GET http://{}{} {}", request.host, request.path, extra.join(" "));
        match send(listener, request) {
            Ok(response) => {
                let rule = response
                    .header("x-switchyard-rule")
                    .map(|r| format!("  (rule {r})"))
                    .unwrap_or_default();
                let answer = match response.backend() {
                    Some(backend) => format!(
                        "{} from backend {backend}, which saw path {}",
                        response.status,
                        response.upstream_path().unwrap_or("?")
                    ),
                    None => match response.header("location") {
                        Some(location) => format!("{} redirect to {location}", response.status),
                        None => format!("{} local reply: {}", response.status, response.body.trim_end()),
                    },
                };
                println!("  {shown:<84} -> {answer}{rule}");
            }
            Err(e) => println!("  {shown:<84} -> error: {e}"),
        }
    }
    protocol_samples(listener);
    if let Some((lds, cert_dir)) = l4 {
        l4::samples(Path::new(lds), Path::new(cert_dir), admin)?;
    }
    // The wasm filter's metrics are `wasmcustom.*`, the native module's `dynamicmodulescustom.*`.
    if let Ok(stats) = send(admin, &get("admin", "/stats?filter=wasmcustom|dynamicmodulescustom")) {
        println!("The filter's metrics (Envoy admin /stats?filter=wasmcustom|dynamicmodulescustom):");
        for line in stats.body.lines() {
            println!("  {line}");
        }
    }
    Ok(())
}

/// ingress-nginx's `backend-protocol` (examples/001-ingress-nginx-backend-protocol, the watch with
/// `--variant-clusters`): a request to each host, and how the backends' Envoy in front of the
/// backend was reached (it tells the backend in `x-seen-protocol` and `x-seen-tls`, which the
/// backend echoes). Retried for a while: the backends' Envoy starts beside the gateway's.
fn protocol_samples(listener: SocketAddr) {
    let requests = [
        get("https-backend.example.com", "/"),
        get("grpc-backend.example.com", "/helloworld.Greeter/SayHello"),
    ];
    println!("ingress-nginx's backend-protocol (examples/001-ingress-nginx-backend-protocol, --variant-clusters):");
    for request in &requests {
        let shown = format!("GET http://{}{}", request.host, request.path);
        let deadline = Instant::now() + Duration::from_secs(10);
        let response = loop {
            let response = send(listener, request);
            let answered = response.as_ref().is_ok_and(|r| r.backend().is_some());
            if answered || Instant::now() > deadline {
                break response;
            }
            thread::sleep(Duration::from_millis(200));
        };
        let answer = match response {
            Ok(response) => match response.backend() {
                Some(backend) => {
                    let seen = |name: &str| response.upstream_header(name).first().copied().unwrap_or("").to_owned();
                    let (cluster, protocol, tls) =
                        (seen("x-route-cluster"), seen("x-seen-protocol"), seen("x-seen-tls"));
                    let protocol = if protocol.is_empty() {
                        "an unknown protocol".to_owned()
                    } else {
                        protocol
                    };
                    let over = match tls.as_str() {
                        "" => "in the clear".to_owned(),
                        version => format!("over TLS ({version})"),
                    };
                    format!(
                        "{} from backend {backend} via cluster {cluster}: reached {over} with {protocol}",
                        response.status
                    )
                }
                None => format!("{} local reply: {}", response.status, response.body.trim_end()),
            },
            Err(e) => format!("error: {e}"),
        };
        println!("  {shown:<84} -> {answer}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_demo_comment_picks_the_backend_and_plain_clusters_are_http() {
        let config = "static_resources:\n  clusters:\n  - name: \"default/web:80\"\n    port_value: 18001\n  \
                      - name: \"default/app:8443\"  # demo: tls secure.example.com\n    port_value: 18015\n  \
                      - name: \"default/dns:53\"  # demo: tcp\n    port_value: 18016\n  \
                      - name: \"default/grpc:50051~h2c\"  # demo: front h2c\n    port_value: 18033\n";
        let found = clusters(config).unwrap();
        let kinds: Vec<(&str, u16, BackendKind)> = found
            .iter()
            .map(|c| (c.name.as_str(), c.port, c.kind.clone()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("default/web:80", 18001, BackendKind::Http),
                ("default/app:8443", 18015, BackendKind::Tls("secure.example.com".into())),
                ("default/dns:53", 18016, BackendKind::Tcp),
                ("default/grpc:50051~h2c", 18033, BackendKind::Front("h2c".into())),
            ]
        );
    }

    #[test]
    fn a_malformed_demo_comment_is_an_error_naming_it() {
        let config = "clusters:\n- name: \"a:1\"  # demo: tls\n  port_value: 1\n";
        let error = clusters(config).unwrap_err();
        assert!(error.contains("# demo: tls HOST"), "{error}");
    }

    /// The repository root.
    fn root() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    /// The example folders scripts/run.sh serves (its `EXAMPLES=(examples/NNN-* ...)` line).
    fn served_examples() -> Vec<std::path::PathBuf> {
        let script = std::fs::read_to_string(root().join("scripts/run.sh")).unwrap();
        let line = script
            .lines()
            .find(|l| l.starts_with("EXAMPLES=("))
            .expect("run.sh lists EXAMPLES");
        let prefixes: Vec<&str> = line
            .trim_start_matches("EXAMPLES=(")
            .trim_end_matches(')')
            .split_whitespace()
            .map(|glob| glob.trim_start_matches("examples/").trim_end_matches('*'))
            .collect();
        let mut folders: Vec<_> = std::fs::read_dir(root().join("examples"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .filter(|p| {
                prefixes
                    .iter()
                    .any(|prefix| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
            })
            .collect();
        folders.sort();
        folders
    }

    /// Every string under a `cluster` key of `value`.
    fn clusters_named(value: &serde_json::Value, found: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value.as_str()) {
                        ("cluster", Some(cluster)) => found.push(cluster.to_owned()),
                        _ => clusters_named(value, found),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| clusters_named(v, found)),
            _ => {}
        }
    }

    #[test]
    fn envoy_yaml_has_a_backend_of_the_right_kind_for_every_cluster_make_run_routes_to() {
        let folders = served_examples();
        assert!(
            folders.iter().any(|f| f.ends_with("003-transport-server")),
            "{folders:?}"
        );
        // ingress-nginx's documented examples and the canaries, every one.
        for example in [
            "app-root",
            "backend-protocol",
            "canary",
            "rewrite",
            "server-alias",
            "ssl-redirect",
            "use-regex",
        ] {
            let folder = format!("001-ingress-nginx-{example}");
            assert!(
                folders.iter().any(|f| f.ends_with(&folder)),
                "{folder} not in {folders:?}"
            );
        }
        let loaded = switchyard_compiler::load::read_paths(&folders).unwrap();
        // run.sh's flags: --ingress-class bfe --empty-ingress-class --ingress-nginx-class nginx
        // --variant-clusters.
        let mut options = switchyard_compiler::Options {
            ingress_class: "bfe".to_owned(),
            empty_ingress_class: true,
            upstream_variants: true,
            ..switchyard_compiler::Options::default()
        };
        options.ingress_nginx.class = Some("nginx".to_owned());
        let compiled = switchyard_compiler::compile(&loaded.objects, &options).unwrap();
        let envoy = clusters(&std::fs::read_to_string(root().join("envoy.yaml")).unwrap()).unwrap();
        let kind_of = |cluster: &str| {
            envoy
                .iter()
                .find(|c| c.name == cluster)
                .map(|c| c.kind.clone())
                .unwrap_or_else(|| panic!("envoy.yaml has no cluster {cluster}"))
        };

        let mut http = Vec::new();
        clusters_named(&serde_json::to_value(&compiled.table).unwrap(), &mut http);
        assert!(http.len() > 10, "{http:?}");
        // A variant cluster (examples/001-ingress-nginx-backend-protocol) has the backends' Envoy,
        // speaking its protocol, on its port; every other cluster an HTTP backend.
        let fronts = std::fs::read_to_string(root().join("scripts/envoy-backends.yaml")).unwrap();
        let mut variants = Vec::new();
        for cluster in &http {
            let (_, variant) = switchyard_compiler::upstream::variant::Variant::of_cluster(cluster);
            match variant.protocol {
                switchyard_compiler::upstream::variant::UpstreamProtocol::Http => {
                    assert_eq!(kind_of(cluster), BackendKind::Http, "{cluster}");
                }
                protocol => {
                    let wanted = BackendKind::Front(protocol.as_str().to_owned());
                    assert_eq!(kind_of(cluster), wanted, "{cluster}");
                    let port = envoy.iter().find(|c| &c.name == cluster).unwrap().port;
                    assert!(
                        fronts.contains(&format!("port_value: {port}}}")),
                        "scripts/envoy-backends.yaml listens on no port {port} for {cluster}"
                    );
                    variants.push(cluster.clone());
                }
            }
        }
        variants.sort();
        variants.dedup();
        assert_eq!(
            variants,
            ["default/grpc-svc:50051~h2c", "default/secure-svc:443~tls"],
            "the backend-protocol example's variant clusters"
        );
        assert!(!compiled.l4.passthrough.is_empty() && !compiled.l4.listeners.is_empty());
        for route in &compiled.l4.passthrough {
            let host = route.host.clone().unwrap();
            assert_eq!(kind_of(&route.cluster), BackendKind::Tls(host), "{}", route.cluster);
        }
        for listener in &compiled.l4.listeners {
            for route in &listener.routes {
                assert_eq!(kind_of(&route.cluster), BackendKind::Tcp, "{}", route.cluster);
            }
        }
    }
    /// `make run`'s ingress-nginx example, `--ingress-nginx-class nginx` and `--variant-clusters`
    /// leave the other examples' rules as they were: the table of every served folder, less the rules
    /// of the ingress-nginx example's hosts, is the table of the other folders compiled with the other
    /// flags alone (seed 003's Ingresses of class `nginx`, another controller's, stay ignored, and no
    /// other example names a variant cluster).
    #[test]
    fn the_ingress_nginx_example_leaves_the_other_examples_rules_unchanged() {
        let folders = served_examples();
        let (nginx, others): (Vec<_>, Vec<_>) = folders.iter().cloned().partition(|f| {
            f.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("001-ingress-nginx-")
        });
        assert!(!nginx.is_empty() && !others.is_empty(), "{folders:?}");
        let base = switchyard_compiler::Options {
            ingress_class: "bfe".to_owned(),
            empty_ingress_class: true,
            ..switchyard_compiler::Options::default()
        };
        let mut with_nginx = base.clone();
        with_nginx.ingress_nginx.class = Some("nginx".to_owned());
        with_nginx.upstream_variants = true;
        let rules = |folders: &[std::path::PathBuf], options: &switchyard_compiler::Options| {
            let loaded = switchyard_compiler::load::read_paths(folders).unwrap();
            let compiled = switchyard_compiler::compile(&loaded.objects, options).unwrap();
            serde_json::to_value(&compiled.table.rules).unwrap()
        };
        let nginx_rules = rules(&nginx, &with_nginx);
        let nginx_hosts: Vec<&serde_json::Value> = nginx_rules.as_array().unwrap().iter().map(|r| &r["host"]).collect();
        assert!(nginx_hosts.iter().all(|h| h.is_string()), "{nginx_hosts:?}");
        let all = rules(&folders, &with_nginx);
        let kept: Vec<&serde_json::Value> = all
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| !nginx_hosts.contains(&&r["host"]))
            .collect();
        let alone = rules(&others, &base);
        let alone: Vec<&serde_json::Value> = alone.as_array().unwrap().iter().collect();
        assert_eq!(kept, alone);
    }
}
