//! `switchyard watch --manifests` as a process on real files and a real socket (no Envoy: the
//! Envoy end-to-end tests are in tests/e2e/tests/watch.rs): the table file follows the folder, the
//! status endpoint answers, bad flags exit 1 with a message, SIGTERM stops it cleanly.

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use switchyard_watch_process::{http, Address, WatchProcess};

const INGRESS: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec:\n  rules:\n  - host: HOST\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n";

/// `switchyard watch ARGS...`, its log in `log`; killed when the test ends however it ends.
fn spawn(args: &[&str], log: &Path) -> WatchProcess {
    WatchProcess::spawn(env!("CARGO_BIN_EXE_switchyard"), args, log)
}

/// How long a watch may take to bind its addresses.
const PATIENCE: Duration = Duration::from_secs(20);

fn wait_for<T>(what: &str, log: &Path, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(value) = f() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "never happened: {what}\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// GET `path`: (status code, body).
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    get_with(addr, path, &[])
}

/// GET `path` with more header lines: (status code, body).
fn get_with(addr: SocketAddr, path: &str, headers: &[&str]) -> (u16, String) {
    let answer = http(addr, "GET", path, headers, "").unwrap_or_else(|e| panic!("GET {path}: {e}"));
    (answer.code, answer.body)
}

/// POST `body` as JSON to `path` with more header lines: (status code, body; 0 when the connection
/// broke).
fn post(addr: SocketAddr, path: &str, headers: &[&str], body: &str) -> (u16, String) {
    http(addr, "POST", path, headers, body).map_or((0, String::new()), |a| (a.code, a.body))
}

/// `deploy/deployment.yaml`'s value of `--flag=VALUE`.
fn shipped_flag(flag: &str) -> String {
    let deployment =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/deployment.yaml")).unwrap();
    deployment
        .lines()
        .find_map(|l| l.trim().strip_prefix("- ")?.strip_prefix(flag)?.strip_prefix('='))
        .map(|value| value.split_whitespace().next().unwrap_or_default().to_owned())
        .unwrap_or_else(|| panic!("deploy/deployment.yaml has no {flag}=…"))
}

/// A folder with one Ingress for `a.example` (`<dir>/m`), and the watch's arguments for it and its
/// table file (`<dir>/table.json`).
fn one_ingress() -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("m");
    std::fs::create_dir(&manifests).unwrap();
    std::fs::write(manifests.join("web.yaml"), INGRESS.replace("HOST", "a.example")).unwrap();
    let table = dir.path().join("table.json");
    let args = [
        "--manifests",
        manifests.to_str().unwrap(),
        "-o",
        table.to_str().unwrap(),
    ];
    let args = args.map(str::to_owned).to_vec();
    (dir, args)
}

/// The watch's arguments: `base` then `more`.
fn with(base: &[String], more: &[&str]) -> Vec<String> {
    base.iter()
        .map(String::as_str)
        .chain(more.iter().copied())
        .map(str::to_owned)
        .collect()
}

/// With the flags `deploy/deployment.yaml` ships (their ports made free), the pod's address (here
/// 127.0.0.2, any address but 127.0.0.1) answers the probes and metrics and nothing else, and the
/// dashboard, `/table`, `/status` and `/explain` answer only on 127.0.0.1.
#[test]
fn the_shipped_deployments_flags_keep_the_routing_picture_off_the_pod_address() {
    let (dir, args) = one_ingress();
    let log = dir.path().join("log");
    let with_free_port = |value: String| {
        let host = value
            .rsplit_once(':')
            .map(|(host, _)| format!("{host}:"))
            .unwrap_or_default();
        format!("{host}{}", switchyard_free_port::free_port())
    };
    let listen = with_free_port(shipped_flag("--listen"));
    let dashboard_listen = with_free_port(shipped_flag("--dashboard-listen"));
    assert!(listen.starts_with("0.0.0.0:"), "probes on the pod address: {listen}");
    let args = with(&args, &["--listen", &listen, "--dashboard-listen", &dashboard_listen]);
    let mut watch = spawn(&args.iter().map(String::as_str).collect::<Vec<_>>(), &log);
    let operations = watch.wait_for_address(Address::Operations, PATIENCE);
    let dashboard = watch.wait_for_address(Address::Dashboard, PATIENCE);
    let pod = |addr: SocketAddr| SocketAddr::from(([127, 0, 0, 2], addr.port()));
    wait_for("ready", &log, || {
        (get(pod(operations), "/readyz").0 == 200).then_some(())
    });
    assert_eq!(get(pod(operations), "/healthz").0, 200);
    let (code, metrics) = get(pod(operations), "/metrics");
    assert!(
        code == 200 && metrics.contains("switchyard_table_generation 1"),
        "{metrics}"
    );
    for path in ["/", "/table", "/status", "/rules", "/events", "/dashboard.js"] {
        assert_eq!(get(pod(operations), path).0, 404, "{path} on the pod address");
    }
    assert_eq!(
        post(pod(operations), "/explain", &[], "{\"url\": \"http://a.example/\"}").0,
        404
    );
    assert!(
        TcpStream::connect(pod(dashboard)).is_err(),
        "the dashboard answers on the pod address"
    );
    assert!(dashboard.ip().is_loopback());
    let (code, status) = get(dashboard, "/status");
    assert!(code == 200 && status.contains("\"resources\""), "{status}");
    assert_eq!(get(dashboard, "/table").0, 200);
    let (code, answer) = post(dashboard, "/explain", &[], "{\"url\": \"http://a.example/\"}");
    assert_eq!(code, 200, "{answer}");
    assert!(answer.contains("shop/web:80"), "{answer}");
}

/// With `--dashboard-token-file`, everything on the dashboard's address needs the token (401
/// without it, as a bearer or the login page's cookie), the login form excepted; the probes never do.
#[test]
fn the_dashboard_token_guards_the_page_the_table_the_status_and_explain() {
    let (dir, args) = one_ingress();
    let token = dir.path().join("token");
    std::fs::write(&token, "correct horse\n").unwrap();
    let log = dir.path().join("log");
    let args = with(
        &args,
        &[
            "--listen",
            "127.0.0.1:0",
            "--dashboard-listen",
            "0.0.0.0:0",
            "--dashboard-token-file",
            token.to_str().unwrap(),
        ],
    );
    let mut watch = spawn(&args.iter().map(String::as_str).collect::<Vec<_>>(), &log);
    let operations = watch.wait_for_address(Address::Operations, PATIENCE);
    let dashboard = SocketAddr::from((
        [127, 0, 0, 1],
        watch.wait_for_address(Address::Dashboard, PATIENCE).port(),
    ));
    wait_for("ready", &log, || (get(operations, "/readyz").0 == 200).then_some(()));

    let (code, page) = get(dashboard, "/");
    assert_eq!(code, 401);
    assert!(
        page.contains("<form") && page.contains("name=\"token\""),
        "the page asks for it: {page}"
    );
    for path in ["/table", "/status", "/rules", "/dashboard.js", "/events"] {
        let (code, body) = get(dashboard, path);
        assert_eq!(code, 401, "{path}: {body}");
        assert!(body.contains("Authorization: Bearer"), "{body}");
    }
    let explain = "{\"url\": \"http://a.example/\"}";
    assert_eq!(post(dashboard, "/explain", &[], explain).0, 401);
    assert_eq!(
        post(dashboard, "/explain", &["authorization: Bearer wrong"], explain).0,
        401
    );
    assert_eq!(get(dashboard, "/login").0, 200);
    assert_eq!(get(dashboard, "/dashboard.css").0, 200, "the login form's style");

    let bearer = &["authorization: Bearer correct horse"];
    assert_eq!(get_with(dashboard, "/table", bearer).0, 200);
    assert_eq!(get_with(dashboard, "/status", bearer).0, 200);
    assert_eq!(get_with(dashboard, "/", bearer).0, 200);
    assert_eq!(post(dashboard, "/explain", bearer, explain).0, 200);
    assert_eq!(get(operations, "/metrics").0, 200, "the probes need no token");
}

/// `POST /explain` reads at most 16 KiB (413 beyond).
#[test]
fn explain_refuses_a_body_over_its_limit() {
    let (dir, args) = one_ingress();
    let log = dir.path().join("log");
    let args = with(&args, &["--dashboard-listen", "127.0.0.1:0"]);
    let mut watch = spawn(&args.iter().map(String::as_str).collect::<Vec<_>>(), &log);
    let dashboard = watch.wait_for_address(Address::Dashboard, PATIENCE);
    wait_for("a table", &log, || (get(dashboard, "/table").0 == 200).then_some(()));
    let huge = format!(
        "{{\"url\": \"http://a.example/\", \"headers\": [\"x: {}\"]}}",
        "a".repeat(17 * 1024)
    );
    assert_eq!(post(dashboard, "/explain", &[], &huge).0, 413);
    let fits = format!(
        "{{\"url\": \"http://a.example/\", \"headers\": [\"x: {}\"]}}",
        "a".repeat(8 * 1024)
    );
    assert_eq!(post(dashboard, "/explain", &[], &fits).0, 200);
}

/// `--dashboard-listen` beyond loopback without a token is refused at start (exit 1), naming the flag.
#[test]
fn a_dashboard_beyond_loopback_without_a_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args([
            "watch",
            "--manifests",
            dir.path().to_str().unwrap(),
            "--dashboard-listen",
            "0.0.0.0:0",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--dashboard-token-file"), "{stderr}");
}

/// An `--ecds-file` Envoy would read as protobuf text (`.pb_text`), which the watch does not write,
/// is refused at start (exit 1), before anything is written, naming the names it can write.
#[test]
fn an_ecds_file_named_for_protobuf_text_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ecds = dir.path().join("filter.pb_text");
    let output = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["watch", "--manifests", dir.path().to_str().unwrap(), "--ecds-file"])
        .arg(&ecds)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("filter.pb_text") && stderr.contains(".pb (binary protobuf"),
        "{stderr}"
    );
    assert!(!ecds.exists());
}

#[test]
fn the_table_file_follows_the_folder_and_the_status_endpoint_answers() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("m");
    std::fs::create_dir(&manifests).unwrap();
    std::fs::write(manifests.join("web.yaml"), INGRESS.replace("HOST", "a.example")).unwrap();
    let table = dir.path().join("table.json");
    let log = dir.path().join("log");
    let mut child = spawn(
        &[
            "--manifests",
            manifests.to_str().unwrap(),
            "-o",
            table.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--dashboard-listen",
            "127.0.0.1:0",
            "--debounce-ms",
            "20",
        ],
        &log,
    );
    let addr = child.wait_for_address(Address::Operations, PATIENCE);
    let dashboard = child.wait_for_address(Address::Dashboard, PATIENCE);
    wait_for("the first table", &log, || {
        std::fs::read_to_string(&table).ok().filter(|t| t.contains("a.example"))
    });

    assert_eq!(get(addr, "/healthz").0, 200);
    let (code, ready) = get(addr, "/readyz");
    assert_eq!(code, 200, "{ready}");
    assert!(ready.contains("generation 1"), "{ready}");
    let (code, served) = get(dashboard, "/table");
    assert_eq!(code, 200);
    assert_eq!(
        served,
        std::fs::read_to_string(&table).unwrap(),
        "/table is the table pushed"
    );
    let (_, status) = get(dashboard, "/status");
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["resources"][0]["status"], "accepted", "{status:#}");

    std::fs::write(manifests.join("web.yaml"), INGRESS.replace("HOST", "b.example")).unwrap();
    wait_for("the table to follow", &log, || {
        std::fs::read_to_string(&table).ok().filter(|t| t.contains("b.example"))
    });
    let (_, metrics) = get(addr, "/metrics");
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("switchyard_pushes_total{sink=\"table-file") && l.ends_with(" 2")),
        "{metrics}"
    );
    assert!(
        metrics.lines().any(|l| l == "switchyard_table_generation 2"),
        "{metrics}"
    );

    let exit = child.terminate();
    assert_eq!(exit.code(), Some(0), "{}", std::fs::read_to_string(&log).unwrap());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("hosts gained: b.example; hosts lost: a.example"),
        "{text}"
    );
}

#[test]
fn two_folders_compile_as_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    std::fs::create_dir(&one).unwrap();
    std::fs::create_dir(&two).unwrap();
    std::fs::write(one.join("a.yaml"), INGRESS.replace("HOST", "a.example")).unwrap();
    std::fs::write(
        two.join("b.yaml"),
        INGRESS
            .replace("HOST", "b.example")
            .replace("name: web,", "name: other,"),
    )
    .unwrap();
    let table = dir.path().join("table.json");
    let log = dir.path().join("log");
    let _child = spawn(
        &[
            "--manifests",
            one.to_str().unwrap(),
            two.to_str().unwrap(),
            "-o",
            table.to_str().unwrap(),
        ],
        &log,
    );
    let text = wait_for("the table", &log, || std::fs::read_to_string(&table).ok());
    assert!(text.contains("a.example") && text.contains("b.example"), "{text}");
}

#[test]
fn watch_without_a_sink_says_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["watch", "--manifests", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("give --ecds-file PATH, -o FILE"), "{stderr}");
}

#[test]
fn leader_election_needs_a_cluster_and_sane_timings() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("out").join("t.json");
    let watch = |extra: &[&str]| {
        let manifests = dir.path().join("m");
        std::fs::create_dir_all(&manifests).unwrap();
        let mut args = vec![
            "watch",
            "--manifests",
            manifests.to_str().unwrap(),
            "-o",
            table.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .args(args)
            .env("KUBECONFIG", "/nonexistent/kubeconfig")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .output()
            .unwrap()
    };
    let out = watch(&["--leader-elect"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--leader-elect needs a cluster"), "{stderr}");
    let out = watch(&["--leader-elect-lease-duration", "15"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the unit must be ms, s or m"), "{stderr}");
    let out = watch(&["--leader-elect-lease-name", "x"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "the Lease's name alone: --leader-elect is required"
    );
}

#[test]
fn an_output_inside_the_watched_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let inside = dir.path().join("filter.json");
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args([
            "watch",
            "--manifests",
            dir.path().to_str().unwrap(),
            "--ecds-file",
            inside.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("must not be inside the watched folder"), "{stderr}");
}

#[test]
fn watch_needs_a_source_and_namespaces_need_kubernetes() {
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["watch", "-o", "t.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["watch", "--manifests", ".", "--namespaces", "a", "-o", "t.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_watched_folder_deleted_and_created_again_is_read_at_the_next_rescan() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("m");
    std::fs::create_dir(&manifests).unwrap();
    std::fs::write(manifests.join("web.yaml"), INGRESS.replace("HOST", "a.example")).unwrap();
    let table = dir.path().join("table.json");
    let log = dir.path().join("log");
    let _child = spawn(
        &[
            "--manifests",
            manifests.to_str().unwrap(),
            "-o",
            table.to_str().unwrap(),
            "--rescan-secs",
            "1",
        ],
        &log,
    );
    wait_for("the first table", &log, || {
        std::fs::read_to_string(&table).ok().filter(|t| t.contains("a.example"))
    });
    // The folder's inode changes: the file watcher keeps following the old one. The deletion's own
    // events give one more compilation (the new, empty folder); the file written after it is only
    // found by the rescan.
    std::fs::remove_dir_all(&manifests).unwrap();
    std::fs::create_dir(&manifests).unwrap();
    wait_for("the empty table", &log, || {
        std::fs::read_to_string(&table)
            .ok()
            .filter(|t| !t.contains("a.example"))
    });
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(manifests.join("web.yaml"), INGRESS.replace("HOST", "b.example")).unwrap();
    wait_for("the table from the new folder", &log, || {
        std::fs::read_to_string(&table).ok().filter(|t| t.contains("b.example"))
    });
}

/// Between rescans (an hour apart here) the watch reads only the paths its file events name: an
/// edit, a delete, a rename, and a file in a new subfolder each reach the table.
#[test]
fn edits_deletes_renames_and_new_subfolders_reach_the_table_between_rescans() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("m");
    std::fs::create_dir(&manifests).unwrap();
    let ingress = |name: &str, host: &str| {
        INGRESS
            .replace("name: web,", &format!("name: {name},"))
            .replace("HOST", host)
    };
    std::fs::write(manifests.join("a.yaml"), ingress("a", "a.example")).unwrap();
    std::fs::write(manifests.join("b.yaml"), ingress("b", "b.example")).unwrap();
    let table = dir.path().join("table.json");
    let log = dir.path().join("log");
    let _child = spawn(
        &[
            "--manifests",
            manifests.to_str().unwrap(),
            "-o",
            table.to_str().unwrap(),
            "--debounce-ms",
            "20",
            "--rescan-secs",
            "3600",
        ],
        &log,
    );
    let hosts = |wanted: &[&str], unwanted: &[&str]| {
        let what = format!("a table with {wanted:?} and without {unwanted:?}");
        wait_for(&what, &log, || {
            let text = std::fs::read_to_string(&table).ok()?;
            let right = wanted.iter().all(|h| text.contains(h)) && !unwanted.iter().any(|h| text.contains(h));
            right.then_some(())
        });
    };
    hosts(&["a.example", "b.example"], &[]);
    std::fs::write(manifests.join("a.yaml"), ingress("a", "a2.example")).unwrap();
    hosts(&["a2.example", "b.example"], &["\"a.example"]);
    std::fs::remove_file(manifests.join("b.yaml")).unwrap();
    hosts(&["a2.example"], &["b.example"]);
    std::fs::rename(manifests.join("a.yaml"), manifests.join("c.yaml")).unwrap();
    std::fs::write(manifests.join("c.yaml"), ingress("c", "c.example")).unwrap();
    hosts(&["c.example"], &["a2.example"]);
    let sub = manifests.join("new").join("deeper");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("d.yaml"), ingress("d", "d.example")).unwrap();
    hosts(&["c.example", "d.example"], &[]);
    // Then a file in that subfolder, now watched, by its own event.
    std::fs::write(sub.join("e.yaml"), ingress("e", "e.example")).unwrap();
    hosts(&["c.example", "d.example", "e.example"], &[]);
}
