//! The helpers behind `make run` (scripts/run.sh):
//!
//! - `switchyard-demo ecds WASM TABLE OUT`: writes the ECDS file that loads the filter with a table
//!   (written beside OUT, then renamed over it, so a running Envoy picks it up whole).
//! - `switchyard-demo backends ENVOY_YAML`: starts one backend per cluster of the Envoy config on the
//!   cluster's port, each answering with its name (the cluster name less the port); runs until killed.
//! - `switchyard-demo samples LISTENER ADMIN`: waits until Envoy is ready, then sends sample requests
//!   and prints which backend answered each.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::thread;
use std::time::{Duration, Instant};

use switchyard_e2e::{ecds_document, get, send, Backend, ConfigForm, Request};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["ecds", wasm, table, out] => ecds(wasm, table, out),
        ["backends", config] => backends(config),
        ["samples", listener, admin] => samples(listener, admin),
        _ => Err("usage: switchyard-demo ecds WASM TABLE OUT | backends ENVOY_YAML | samples LISTENER ADMIN".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchyard-demo: {e}");
            ExitCode::FAILURE
        }
    }
}

fn ecds(wasm: &str, table: &str, out: &str) -> Result<(), String> {
    let wasm = std::fs::canonicalize(wasm).map_err(|e| format!("{wasm}: {e}"))?;
    let table = std::fs::read_to_string(table).map_err(|e| format!("{table}: {e}"))?;
    let tmp = format!("{out}.tmp");
    std::fs::write(&tmp, ecds_document(&wasm, &table, ConfigForm::StringValue)).map_err(|e| format!("{tmp}: {e}"))?;
    std::fs::rename(&tmp, out).map_err(|e| format!("{out}: {e}"))
}

/// `(cluster name, port)` for every cluster of an Envoy config written like envoy.yaml
/// (`- name: "<cluster>"` then, within the cluster, `port_value: <port>`).
fn clusters(config: &str) -> Vec<(String, u16)> {
    let mut found = Vec::new();
    let mut in_clusters = false;
    let mut name: Option<String> = None;
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
            name = Some(rest.trim().trim_matches('"').to_owned());
        }
        if let Some(at) = trimmed.find("port_value:") {
            let digits: String = trimmed[at + "port_value:".len()..]
                .trim()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let (Some(n), Ok(port)) = (name.take(), digits.parse()) {
                found.push((n, port));
            }
        }
    }
    found
}

fn backends(config: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(config).map_err(|e| format!("{config}: {e}"))?;
    let clusters = clusters(&text);
    if clusters.is_empty() {
        return Err(format!("{config}: no clusters found"));
    }
    let mut running = Vec::new();
    for (cluster, port) in clusters {
        let name = cluster.rsplit_once(':').map_or(cluster.as_str(), |(n, _)| n).to_owned();
        let backend = Backend::start_on(&name, &format!("127.0.0.1:{port}"))
            .map_err(|e| format!("backend {name} on port {port}: {e}"))?;
        println!(
            "  backend {:<24} http://{}  (cluster {cluster})",
            backend.name, backend.addr
        );
        running.push(backend);
    }
    loop {
        thread::park();
    }
}

fn samples(listener: &str, admin: &str) -> Result<(), String> {
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
        get("example.net", "/nothing-here"),
        get("example.net", "/bar").header("x-route-cluster", "default/s1:80"),
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
                    None => format!("{} local reply: {}", response.status, response.body.trim_end()),
                };
                println!("  {shown:<84} -> {answer}{rule}");
            }
            Err(e) => println!("  {shown:<84} -> error: {e}"),
        }
    }
    if let Ok(stats) = send(admin, &get("admin", "/stats?filter=wasmcustom")) {
        println!("The filter's metrics (Envoy admin /stats?filter=wasmcustom; counted on every worker):");
        for line in stats.body.lines() {
            println!("  {line}");
        }
    }
    Ok(())
}
