//! `switchyard watch --manifests DIR --ecds-file ...` driving a real Envoy: manifests are written,
//! changed and deleted in a temporary folder, and every assertion is about which backend answered a
//! real request through Envoy, or what the watch's own `/status`, `/readyz` and `/metrics` say.
//! Needs `ENVOY_BIN`, `SWITCHYARD_WASM` and `SWITCHYARD_BIN` (`make test-envoy` sets them); fails
//! without them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use switchyard_e2e::{backend_name, envoy_config, fresh_dir, required_path, Backend, Envoy};
use switchyard_watch_process::{Address, WatchProcess};

const BLUE: &str = "shop/blue:80";
const GREEN: &str = "shop/green:80";

/// The bound the issue sets: routing follows a manifest change within one second.
const FOLLOW_WITHIN: Duration = Duration::from_secs(1);

/// A running `switchyard watch` on `<dir>/manifests`, writing `<dir>/ecds/filter.json`.
struct Watch(WatchProcess);

impl Watch {
    /// Starts `switchyard watch` on `<dir>/manifests` with these more arguments.
    fn start_with(dir: &Path, extra: &[String]) -> Watch {
        let bin = required_path("SWITCHYARD_BIN");
        let wasm = required_path("SWITCHYARD_WASM");
        let (manifests, ecds) = (dir.join("manifests"), dir.join("ecds/filter.json"));
        let mut args = vec![
            "--manifests",
            manifests.to_str().unwrap(),
            "--ecds-file",
            ecds.to_str().unwrap(),
            "--wasm",
            wasm.to_str().unwrap(),
            "--debug-rule-header",
        ];
        args.extend(Address::both_on_free_ports());
        args.extend(extra.iter().map(String::as_str));
        let mut process = WatchProcess::spawn(bin, &args, &dir.join("watch.log"));
        let within = Duration::from_secs(30);
        process.wait_until("the addresses and the ECDS file", within, |watch| {
            watch.address(Address::Operations).is_some()
                && watch.address(Address::Dashboard).is_some()
                && ecds.is_file()
        });
        Watch(process)
    }

    fn log(&self) -> String {
        self.0.log()
    }

    /// GET `path` on the address that serves it: probes and metrics on `--listen`, the rest on
    /// `--dashboard-listen`.
    fn get(&self, path: &str) -> (u16, String) {
        let answer = self
            .0
            .get(path)
            .unwrap_or_else(|e| panic!("GET {path}: {e}\n{}", self.log()));
        (answer.code, answer.body)
    }

    fn status(&self) -> serde_json::Value {
        serde_json::from_str(&self.get("/status").1).unwrap()
    }

    /// Waits until `/status` satisfies `check`.
    fn wait_status(&self, what: &str, check: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let status = self.status();
            if check(&status) {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "/status never showed {what}: {status:#}\n{}",
                self.log()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Envoy reading the watch's ECDS file, with one backend per cluster, and the watch itself.
struct Setup {
    dir: PathBuf,
    // Field order: Envoy stops before the watch.
    envoy: Envoy,
    watch: Watch,
}

impl Setup {
    fn start() -> Setup {
        Setup::start_with(false)
    }

    /// With `paced`, Envoy's admin listens on a port chosen here and the watch gets `--envoy-admin`.
    fn start_with(paced: bool) -> Setup {
        let envoy_bin = required_path("ENVOY_BIN");
        let wasm = required_path("SWITCHYARD_WASM");
        let dir = fresh_dir("watch");
        std::fs::create_dir_all(dir.join("manifests")).unwrap();
        std::fs::create_dir_all(dir.join("ecds")).unwrap();
        let backends: Vec<(String, Backend)> = [BLUE, GREEN]
            .iter()
            .map(|c| ((*c).to_owned(), Backend::start(&backend_name(c)).unwrap()))
            .collect();
        let ports: Vec<(&str, u16)> = backends.iter().map(|(c, b)| (c.as_str(), b.addr.port())).collect();
        let admin_port = if paced {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        } else {
            0
        };
        std::fs::write(dir.join("envoy.yaml"), envoy_config(&dir, &ports, 0, admin_port)).unwrap();
        // The watch writes the ECDS file before Envoy starts: Envoy's listener waits for it.
        let extra = if paced {
            vec!["--envoy-admin".to_owned(), format!("127.0.0.1:{admin_port}")]
        } else {
            Vec::new()
        };
        let watch = Watch::start_with(&dir, &extra);
        let mut envoy = Envoy::spawn(&envoy_bin, dir.clone(), wasm, 1);
        envoy.backends = backends.into_iter().collect();
        Setup { dir, envoy, watch }
    }

    fn manifest(&self, file: &str) -> PathBuf {
        self.dir.join("manifests").join(file)
    }

    /// The backend that answers `host` now (`None`: a local reply).
    fn backend(&self, host: &str) -> Option<String> {
        ask(self.envoy.addr, host)
            .unwrap_or_else(|e| panic!("GET {host}: {e}\n{}", self.envoy.log()))
            .1
    }

    /// Writes (or, with `None`, deletes) a manifest and returns how long it took until `host` is
    /// answered by `expected`; fails past [`FOLLOW_WITHIN`].
    fn change(&self, file: &str, text: Option<&str>, host: &str, expected: Option<&str>) -> Duration {
        let started = Instant::now();
        match text {
            Some(text) => std::fs::write(self.manifest(file), text).unwrap(),
            None => std::fs::remove_file(self.manifest(file)).unwrap(),
        }
        loop {
            if self.backend(host).as_deref() == expected {
                return started.elapsed();
            }
            let waited = started.elapsed();
            assert!(
                waited < FOLLOW_WITHIN,
                "{host} still not answered by {expected:?} {waited:?} after changing {file}\nwatch:\n{}",
                self.watch.log()
            );
            thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Sends `GET /` for `host` on a new connection and reads exactly one response (by its
/// `content-length`): (status, backend). Not the harness's `send`, which reads to EOF: after a local
/// reply Envoy holds the connection open for its `delayed_close_timeout` (1 s), which would swamp the
/// latency measured.
fn ask(addr: SocketAddr, host: &str) -> std::io::Result<(u16, Option<String>)> {
    let stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    ask_on(&mut BufReader::new(stream), host)
}

/// Sends `GET /` for `host` on an open (keep-alive) connection and reads one response.
fn ask_on(connection: &mut BufReader<TcpStream>, host: &str) -> std::io::Result<(u16, Option<String>)> {
    connection
        .get_mut()
        .write_all(format!("GET / HTTP/1.1\r\nhost: {host}\r\n\r\n").as_bytes())?;
    let mut line = String::new();
    connection.read_line(&mut line)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let mut length = 0;
    loop {
        line.clear();
        connection.read_line(&mut line)?;
        if line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    connection.read_exact(&mut body)?;
    let backend = String::from_utf8_lossy(&body)
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("backend: "))
        .map(str::to_owned);
    Ok((status, backend))
}

/// An Ingress routing `host` to the service `service` (port 80) in namespace `shop`.
fn ingress(name: &str, host: &str, service: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: {name}, namespace: shop}}\nspec:\n  rules:\n  - host: {host}\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, backend: {{service: {{name: {service}, port: {{number: 80}}}}}}}}\n"
    )
}

fn report(what: &str, latencies: &[Duration]) {
    let max = latencies.iter().max().copied().unwrap_or_default();
    let mean = latencies.iter().sum::<Duration>() / u32::try_from(latencies.len().max(1)).unwrap();
    eprintln!(
        "{what}: change-to-routing latency over {} changes: mean {mean:?}, max {max:?}",
        latencies.len()
    );
}

#[test]
fn routing_follows_added_changed_and_deleted_manifests_within_a_second() {
    let setup = Setup::start();
    assert_eq!(setup.backend("a.example"), None, "an empty folder routes nothing");
    let (code, body) = setup.watch.get("/readyz");
    assert_eq!(code, 200, "ready after the first push: {body}");

    let mut latencies = Vec::new();
    latencies.push(setup.change(
        "a.yaml",
        Some(&ingress("a", "a.example", "blue")),
        "a.example",
        Some("blue"),
    ));
    latencies.push(setup.change(
        "a.yaml",
        Some(&ingress("a", "a.example", "green")),
        "a.example",
        Some("green"),
    ));
    latencies.push(setup.change(
        "b.yaml",
        Some(&ingress("b", "b.example", "blue")),
        "b.example",
        Some("blue"),
    ));
    assert_eq!(
        setup.backend("a.example").as_deref(),
        Some("green"),
        "adding b.yaml leaves a.example alone"
    );
    latencies.push(setup.change("a.yaml", None, "a.example", None));
    assert_eq!(
        setup.backend("b.example").as_deref(),
        Some("blue"),
        "deleting a.yaml leaves b.example alone"
    );
    report("add, change, add, delete", &latencies);

    // Envoy can route by the new ECDS file before the watch has counted and logged its push: wait for
    // the count (the log line is written under the same lock) before reading the log and the metrics.
    setup
        .watch
        .wait_status("the fifth push counted", |s| s["generation"].as_u64() >= Some(5));
    let log = setup.watch.log();
    assert!(
        log.contains("hosts lost: a.example"),
        "the push log names the host that went away:\n{log}"
    );
    let (_, metrics) = setup.watch.get("/metrics");
    let pushes: u64 = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix("switchyard_pushes_total{sink=\"ecds-file ")
                .and_then(|rest| rest.rsplit(' ').next()?.parse().ok())
        })
        .unwrap_or_else(|| panic!("no ECDS push counter in\n{metrics}"));
    assert_eq!(
        pushes, 5,
        "one push for the empty folder and one per change:\n{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|l| l == "switchyard_resources{kind=\"Ingress\",status=\"accepted\"} 1"),
        "{metrics}"
    );
}

#[test]
fn no_request_fails_while_twenty_changes_are_pushed() {
    let setup = Setup::start();
    setup.change(
        "a.yaml",
        Some(&ingress("a", "a.example", "blue")),
        "a.example",
        Some("blue"),
    );

    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::new(Mutex::new(std::collections::BTreeSet::new()));
    let addr = setup.envoy.addr;
    // Two clients: one opening a connection per request, one keeping a single connection alive
    // across every table swap. Bounded: each stops when told, or after two minutes.
    let clients: Vec<_> = [false, true]
        .into_iter()
        .map(|keep_alive| {
            let (stop, sent, failures, seen) = (stop.clone(), sent.clone(), failures.clone(), seen.clone());
            thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(120);
                let mut connection = None;
                while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                    sent.fetch_add(1, Ordering::SeqCst);
                    let answer = if keep_alive {
                        let open = connection.get_or_insert_with(|| {
                            let stream = TcpStream::connect(addr).unwrap();
                            stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                            BufReader::new(stream)
                        });
                        ask_on(open, "a.example")
                    } else {
                        ask(addr, "a.example")
                    };
                    match answer {
                        Ok((200, Some(backend))) => {
                            seen.lock().unwrap().insert((keep_alive, backend));
                        }
                        Ok((status, backend)) => failures
                            .lock()
                            .unwrap()
                            .push(format!("keep-alive {keep_alive}: status {status} from {backend:?}")),
                        Err(e) => failures.lock().unwrap().push(format!("keep-alive {keep_alive}: {e}")),
                    }
                }
            })
        })
        .collect();

    let mut latencies = Vec::new();
    for change in 0..20 {
        let service = if change % 2 == 0 { "green" } else { "blue" };
        latencies.push(setup.change(
            "a.yaml",
            Some(&ingress("a", "a.example", service)),
            "a.example",
            Some(service),
        ));
    }
    stop.store(true, Ordering::SeqCst);
    for client in clients {
        client.join().unwrap();
    }
    report("20 changes under load", &latencies);

    let failures = failures.lock().unwrap();
    let sent = sent.load(Ordering::SeqCst);
    eprintln!(
        "requests sent through the 20 changes: {sent}, failed: {}",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {sent} requests failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert!(sent >= 100, "the clients kept sending ({sent} requests)");
    let both: std::collections::BTreeSet<(bool, String)> = [false, true]
        .into_iter()
        .flat_map(|k| [(k, "blue".to_owned()), (k, "green".to_owned())])
        .collect();
    assert_eq!(
        *seen.lock().unwrap(),
        both,
        "each client, the keep-alive one too, saw both backends"
    );
    let status = setup.watch.status();
    assert_eq!(
        status["generation"], 22,
        "the empty folder, the first Ingress and 20 changes: {status:#}"
    );
}

#[test]
fn an_invalid_manifest_leaves_routing_as_it_was_and_appears_in_status() {
    let setup = Setup::start();
    setup.change(
        "a.yaml",
        Some(&ingress("a", "a.example", "blue")),
        "a.example",
        Some("blue"),
    );
    let generation = setup.watch.status()["generation"].clone();

    // A broken edit of a routed manifest: its last good version keeps routing.
    std::fs::write(
        setup.manifest("a.yaml"),
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: a\n",
    )
    .unwrap();
    // A new manifest with a field of the wrong type: it routes nothing.
    let bad_field = ingress("c", "c.example", "green").replace("pathType: Prefix", "pathType: [Prefix]");
    std::fs::write(setup.manifest("c.yaml"), bad_field).unwrap();
    let status = setup
        .watch
        .wait_status("both errors", |s| s["errors"].as_array().is_some_and(|e| e.len() == 2));
    let errors = status["errors"].as_array().unwrap();
    assert!(errors[0]["source"].as_str().unwrap().ends_with("a.yaml"), "{status:#}");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("last good version is still routed"),
        "{status:#}"
    );
    assert!(errors[1]["source"].as_str().unwrap().ends_with("c.yaml"), "{status:#}");
    assert!(
        errors[1]["message"].as_str().unwrap().contains("pathType"),
        "the error names the field: {status:#}"
    );
    assert_eq!(status["generation"], generation, "nothing was pushed: {status:#}");
    assert_eq!(setup.backend("a.example").as_deref(), Some("blue"));
    assert_eq!(setup.backend("c.example"), None);
    let (_, metrics) = setup.watch.get("/metrics");
    assert!(metrics.lines().any(|l| l == "switchyard_source_errors 2"), "{metrics}");

    // Fixing both files routes them and clears the errors.
    setup.change(
        "c.yaml",
        Some(&ingress("c", "c.example", "green")),
        "c.example",
        Some("green"),
    );
    setup.change(
        "a.yaml",
        Some(&ingress("a", "a.example", "green")),
        "a.example",
        Some("green"),
    );
    setup
        .watch
        .wait_status("no errors", |s| s["errors"].as_array().is_some_and(Vec::is_empty));
}

/// `--envoy-admin`: a push to the ECDS file counts only once Envoy's admin stats say it was applied
/// or rejected. A storm of edits (one every 30 ms) is delivered, each push settled by Envoy, and the
/// last edit routes; a second watch whose ECDS file this Envoy does not read writes its file but never
/// counts the push (it waits for Envoy; without `--envoy-admin` it would count it at once).
#[test]
fn paced_pushes_wait_for_envoy_to_apply_them_and_lose_no_edit() {
    let setup = Setup::start_with(true);
    let pushes = |watch: &Watch| -> u64 {
        let (_, metrics) = watch.get("/metrics");
        metrics
            .lines()
            .filter(|l| l.starts_with("switchyard_pushes_total"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    let settled = || {
        ["update_success", "update_rejected"]
            .iter()
            .map(|what| {
                setup
                    .envoy
                    .stat(&format!("extension_config_discovery.http_filter.switchyard.{what}"))
                    .unwrap_or(0)
            })
            .sum::<u64>()
    };
    for i in 0..40 {
        let service = if i % 2 == 0 { "blue" } else { "green" };
        let extra = ingress(&format!("extra{i}"), &format!("e{i}.example"), "blue");
        let text = format!("{}---\n{extra}", ingress("shop", "shop.example", service));
        std::fs::write(setup.manifest("shop.yaml"), text).unwrap();
        thread::sleep(Duration::from_millis(30));
    }
    // The last edit (i = 39: shop.example to green, e39.example added) routes. Green alone is not
    // enough: an earlier odd edit is green too, and the watch would still push the last one (the
    // second watch below would then see Envoy settle that push and count its own).
    let deadline = Instant::now() + FOLLOW_WITHIN * 5;
    while setup.backend("shop.example").as_deref() != Some("green")
        || setup.backend("e39.example").as_deref() != Some("blue")
    {
        assert!(
            Instant::now() < deadline,
            "the last edit never routed\n{}",
            setup.watch.log()
        );
        thread::sleep(Duration::from_millis(20));
    }
    let log = setup.watch.log();
    assert!(!log.contains("push failed"), "{log}");
    assert!(settled() >= pushes(&setup.watch), "{log}");

    let other = setup.dir.join("other");
    std::fs::create_dir_all(other.join("ecds")).unwrap();
    std::fs::create_dir_all(other.join("manifests")).unwrap();
    std::fs::copy(setup.manifest("shop.yaml"), other.join("manifests/shop.yaml")).unwrap();
    let admin = format!("127.0.0.1:{}", setup.envoy.admin.port());
    let waiting = Watch::start_with(&other, &["--envoy-admin".to_owned(), admin]);
    thread::sleep(Duration::from_secs(2));
    assert!(other.join("ecds/filter.json").is_file());
    assert_eq!(pushes(&waiting), 0, "{}", waiting.log());
}
