//! Test support for the dashboard's browser tests (tests/dashboard.rs): a `switchyard watch` process
//! on a folder of real files with `--dashboard-listen 127.0.0.1:0` ([`Watch`], over
//! `switchyard_watch_process`), a real headless Chromium
//! driven over W3C WebDriver by Debian's chromedriver ([`Browser`], through fantoccini), and a
//! stand-in for Envoy's admin endpoint that serves per-resource request counters ([`StatsStandIn`]).
//!
//! Needs `SWITCHYARD_BIN`, `CHROMIUM_BIN` and `CHROMEDRIVER_BIN` (`make test-browser` sets them and
//! installs chromium and chromium-driver); fails, never skips, without them.

use std::future::Future;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use switchyard_watch_process::{Address, WatchProcess};

/// How long anything the tests wait for may take.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// The path in environment variable `name`; panics with what to do when it is unset.
pub fn required_path(name: &str) -> PathBuf {
    match std::env::var_os(name) {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => panic!("{name} is not set: run `make test-browser` (it installs chromium and chromium-driver and sets SWITCHYARD_BIN, CHROMIUM_BIN and CHROMEDRIVER_BIN)"),
    }
}

/// The repository's root (for examples/).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A running `switchyard watch --manifests <dir>/manifests -o <dir>/table.json --dashboard-listen 127.0.0.1:0`,
/// killed when dropped.
pub struct Watch {
    process: WatchProcess,
    dir: tempfile::TempDir,
    /// Its `--dashboard-listen` address.
    pub addr: SocketAddr,
}

impl Watch {
    /// Starts the watch on a new folder that holds `files` (path relative to the folder, content),
    /// with these more arguments; returns once the first table is written.
    pub fn start(files: &[(String, String)], extra: &[&str]) -> Watch {
        let dir = tempfile::tempdir().unwrap();
        let manifests = dir.path().join("manifests");
        std::fs::create_dir(&manifests).unwrap();
        for (path, text) in files {
            let path = manifests.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let table = dir.path().join("table.json");
        let mut args = vec![
            "--manifests",
            manifests.to_str().unwrap(),
            "-o",
            table.to_str().unwrap(),
            "--dashboard-listen",
            "127.0.0.1:0",
            "--debounce-ms",
            "20",
        ];
        args.extend_from_slice(extra);
        let mut process = WatchProcess::spawn(required_path("SWITCHYARD_BIN"), &args, &dir.path().join("watch.log"));
        let addr = process.wait_for_address(Address::Dashboard, PATIENCE);
        process.wait_until("the first table", PATIENCE, |_| table.is_file());
        Watch { process, dir, addr }
    }

    /// The dashboard's URL.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The watched folder.
    pub fn manifests(&self) -> PathBuf {
        self.dir.path().join("manifests")
    }

    /// Replaces (or creates) the file `name` of the watched folder in one step, as `kubectl`-style
    /// tools and most editors do: written beside the folder, then renamed into it (a plain write
    /// is a truncation then a write, two changes a loaded machine may let the watch see apart).
    pub fn write(&self, name: &str, text: impl AsRef<[u8]>) {
        let staged = self.dir.path().join(format!(".{name}.staged"));
        std::fs::write(&staged, text).unwrap();
        std::fs::rename(&staged, self.manifests().join(name)).unwrap();
    }

    /// The table file the watch writes (`-o`).
    pub fn table_path(&self) -> PathBuf {
        self.dir.path().join("table.json")
    }

    /// The table the watch wrote last.
    pub fn table(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.table_path()).unwrap()).unwrap()
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        self.process.log()
    }

    /// `switchyard explain --table <the table file> --json <args>`: the CLI's decision.
    pub fn explain_cli(&self, args: &[String]) -> serde_json::Value {
        serde_json::from_str(&self.explain(&["--json".to_owned()], args)).unwrap()
    }

    /// `switchyard explain --table <the table file> <args>`: the CLI's human explanation.
    pub fn explain_cli_text(&self, args: &[String]) -> String {
        self.explain(&[], args)
    }

    /// `switchyard explain --table <the table file> <args>` that fails: its message, without the
    /// `switchyard: ` prefix.
    pub fn explain_cli_error(&self, args: &[String]) -> String {
        let out = self.run_explain(&[], args);
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
        let stderr = String::from_utf8(out.stderr).unwrap();
        stderr.trim_end().trim_start_matches("switchyard: ").to_owned()
    }

    fn explain(&self, flags: &[String], args: &[String]) -> String {
        let out = self.run_explain(flags, args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    fn run_explain(&self, flags: &[String], args: &[String]) -> std::process::Output {
        Command::new(required_path("SWITCHYARD_BIN"))
            .arg("explain")
            .arg("--table")
            .arg(self.table_path())
            .args(flags)
            .args(args)
            .output()
            .unwrap()
    }
}

/// Chromium's flags: headless, and quiet on a machine without network (no background requests).
const CHROMIUM_ARGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
];

/// chromedriver (in a process group of its own, with the Chromium it starts) and a WebDriver
/// session in a fresh profile.
pub struct Browser {
    driver: Child,
    _profile: tempfile::TempDir,
    /// The WebDriver session.
    pub client: Client,
}

impl Browser {
    /// Starts chromedriver on a free port of 127.0.0.1 and opens a session.
    pub async fn start() -> Browser {
        use std::os::unix::process::CommandExt;
        let port = switchyard_free_port::free_port();
        let driver = Command::new(required_path("CHROMEDRIVER_BIN"))
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let profile = tempfile::tempdir().unwrap();
        let deadline = Instant::now() + PATIENCE;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "chromedriver never listened on 127.0.0.1:{port}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let client = session(port, &required_path("CHROMIUM_BIN"), profile.path()).await;
        Browser {
            driver,
            _profile: profile,
            client,
        }
    }

    /// Ends the session (Chromium quits) and chromedriver.
    pub async fn close(mut self) {
        let client = self.client.clone();
        let _ = client.close().await;
        self.stop();
    }

    fn stop(&mut self) {
        // The whole group: chromedriver and any Chromium process it left.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .status();
        let _ = self.driver.wait();
    }

    /// Evaluates `script` (a function body; `arguments` are `args`) in the page.
    pub async fn js(&self, script: &str, args: Vec<serde_json::Value>) -> serde_json::Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Waits until `script` returns something other than `null` or `false`, and returns it.
    pub async fn until(&self, what: &str, script: &str) -> serde_json::Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let value = self.js(script, vec![]).await;
            if !value.is_null() && value != serde_json::Value::Bool(false) {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "never happened in the page: {what}\nlast: {value}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the page has a `:target` (the element the URL's fragment names), and returns its id.
    pub async fn target(&self, what: &str) -> serde_json::Value {
        self.until(what, "const t = document.querySelector(':target'); return t && t.id;")
            .await
    }

    /// Replaces the text of the form field `id` with `text`, as a user types it.
    pub async fn type_into(&self, id: &str, text: &str) {
        let field = self.client.find(Locator::Id(id)).await.unwrap();
        field.clear().await.unwrap();
        if !text.is_empty() {
            field.send_keys(text).await.unwrap();
        }
    }

    /// Clicks the element `css` selects.
    pub async fn click(&self, css: &str) {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn session(port: u16, chromium: &Path, profile: &Path) -> Client {
    let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| (*a).to_owned()).collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("browserName".into(), "chrome".into());
    capabilities.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({ "binary": chromium, "args": args }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .unwrap_or_else(|e| panic!("no WebDriver session: {e}"))
}

/// Retries `f` until it returns `Some`, for [`PATIENCE`].
pub async fn eventually<T, F: Future<Output = Option<T>>>(what: &str, mut f: impl FnMut() -> F) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(value) = f().await {
            return value;
        }
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A stand-in for Envoy's admin endpoint on 127.0.0.1, for `switchyard watch --envoy-admin`: it
/// answers `GET /stats/prometheus...` with the Prometheus text `body(n)` for its `n`-th such request
/// (from 1), and anything else (the ECDS pacing's `/stats?filter=...`) with 404, which the watch
/// takes as an Envoy it need not wait for.
///
/// A stand-in, not Envoy: the filter's per-resource metrics (`switchyard_resource_requests_total`)
/// land in Envoy's stats separately (issue 47), so these tests check the dashboard's side against
/// counters of the metrics' contract; the test against a real Envoy running the filter is in
/// tests/e2e. Dropped (or [`StatsStandIn::stop`]ped), it stops listening: a reading then fails with
/// "connection refused".
pub struct StatsStandIn {
    /// Its address: what `--envoy-admin` is given.
    pub addr: SocketAddr,
    asked: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StatsStandIn {
    /// Starts answering on a free port.
    pub fn start(body: impl Fn(u64) -> String + Send + 'static) -> StatsStandIn {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (asked, stop) = (asked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut served = 0;
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let Some(path) = request_path(&stream) else { continue };
                    let (status, text) = if path.starts_with("/stats/prometheus") {
                        served += 1;
                        ("200 OK", body(served))
                    } else {
                        ("404 Not Found", String::new())
                    };
                    asked.lock().unwrap().push(path);
                    let mut stream = stream;
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                        text.len()
                    );
                }
            })
        };
        StatsStandIn {
            addr,
            asked,
            stop,
            thread: Some(thread),
        }
    }

    /// The paths asked so far, in order.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }

    /// Stops listening: the watch's next reading fails.
    pub fn stop(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept up, so that the thread sees the flag and drops the listener.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for StatsStandIn {
    fn drop(&mut self) {
        self.shut();
    }
}

/// The path of the request on `stream` (its head read to the blank line).
fn request_path(stream: &TcpStream) -> Option<String> {
    let mut reader = BufReader::new(stream);
    let mut first = String::new();
    reader.read_line(&mut first).ok()?;
    let mut line = String::new();
    while reader.read_line(&mut line).ok()? > 2 {
        line.clear();
    }
    first.split_whitespace().nth(1).map(str::to_owned)
}
