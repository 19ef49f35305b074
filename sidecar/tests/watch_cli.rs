//! `switchyard watch --manifests` as a process on real files and a real socket (no Envoy: the
//! Envoy end-to-end tests are in tests/e2e/tests/watch.rs): the table file follows the folder, the
//! status endpoint answers, bad flags exit 1 with a message, SIGTERM stops it cleanly.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const INGRESS: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec:\n  rules:\n  - host: HOST\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n";

/// A `switchyard watch` process, killed when the test ends however it ends.
struct Watch(Child);

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(args: &[&str], log: &Path) -> Watch {
    Watch(
        Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .arg("watch")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap(),
    )
}

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
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: switchyard\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let code = response.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (code, body)
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
            "--debounce-ms",
            "20",
        ],
        &log,
    );
    let addr: SocketAddr = wait_for("the listening line", &log, || {
        let text = std::fs::read_to_string(&log).ok()?;
        text.lines().find_map(|l| {
            l.split("listening on http://")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
    });
    wait_for("the first table", &log, || {
        std::fs::read_to_string(&table).ok().filter(|t| t.contains("a.example"))
    });

    assert_eq!(get(addr, "/healthz").0, 200);
    let (code, ready) = get(addr, "/readyz");
    assert_eq!(code, 200, "{ready}");
    assert!(ready.contains("generation 1"), "{ready}");
    let (code, served) = get(addr, "/table");
    assert_eq!(code, 200);
    assert_eq!(
        served,
        std::fs::read_to_string(&table).unwrap(),
        "/table is the table pushed"
    );
    let (_, status) = get(addr, "/status");
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

    let killed = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let exit = wait_for("the exit after SIGTERM", &log, || child.0.try_wait().unwrap());
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
