//! What the watch suites share (watch.rs for the wasm filter, watch_module.rs for the native
//! module's two forms): `switchyard watch` on a temporary folder of manifests writing the ECDS file
//! of a filter form, and a real Envoy reading it, with one backend per cluster.

// Each suite uses its own part of this module.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use switchyard_e2e::{
    backend_name, envoy_config_reading, fresh_dir, module_name, required_path, set_module_search_path, Backend,
    EcdsFile, Envoy, FilterForm,
};
use switchyard_watch_process::{Address, WatchProcess};

pub const BLUE: &str = "shop/blue:80";
pub const GREEN: &str = "shop/green:80";

/// How long a test waits for routing to follow a manifest change: long enough that a busy machine
/// never reaches it by accident. How fast it follows is a benchmark's figure (`make bench-push`,
/// BENCHMARKS.md), not a test's bound.
pub const FOLLOW_WITHIN: Duration = Duration::from_secs(30);

/// A running `switchyard watch` on `<dir>/manifests`, writing the ECDS file in `<dir>/ecds/`.
pub struct Watch(pub WatchProcess);

/// The watch's flags for the ECDS file of the filter form `form`: the `.wasm`; the module's name
/// (`--filter-form module`); and beside the cluster specifier the filter's name, which is both the
/// ECDS resource's and the module's `filter_name`.
pub fn form_flags(form: FilterForm) -> Vec<String> {
    let file = required_path(form.variable());
    let mut flags = match form {
        FilterForm::Wasm => vec!["--wasm".to_owned(), file.display().to_string()],
        FilterForm::Module | FilterForm::ModuleClusterSpecifier => {
            vec![
                "--filter-form".to_owned(),
                "module".to_owned(),
                "--module-name".to_owned(),
                module_name(&file),
            ]
        }
    };
    if form == FilterForm::ModuleClusterSpecifier {
        flags.extend(["--filter-name".to_owned(), form.ecds_name().to_owned()]);
    }
    flags
}

impl Watch {
    /// Starts `switchyard watch` on `<dir>/manifests` for the filter form `form`, writing the ECDS
    /// file `file`, with these more arguments.
    pub fn start_with(dir: &Path, form: FilterForm, file: EcdsFile, extra: &[String]) -> Watch {
        let bin = required_path("SWITCHYARD_BIN");
        let (manifests, ecds) = (dir.join("manifests"), dir.join("ecds").join(file.name()));
        let flags = form_flags(form);
        let mut args = vec![
            "--manifests",
            manifests.to_str().unwrap(),
            "--ecds-file",
            ecds.to_str().unwrap(),
            "--debug-rule-header",
        ];
        args.extend(flags.iter().map(String::as_str));
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

    pub fn log(&self) -> String {
        self.0.log()
    }

    /// GET `path` on the address that serves it: probes and metrics on `--listen`, the rest on
    /// `--dashboard-listen`.
    pub fn get(&self, path: &str) -> (u16, String) {
        let answer = self
            .0
            .get(path)
            .unwrap_or_else(|e| panic!("GET {path}: {e}\n{}", self.log()));
        (answer.code, answer.body)
    }

    pub fn status(&self) -> serde_json::Value {
        serde_json::from_str(&self.get("/status").1).unwrap()
    }

    /// Waits until `/status` satisfies `check`.
    pub fn wait_status(&self, what: &str, check: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        self.wait_status_for(what, Duration::from_secs(10), check)
    }

    /// [`Watch::wait_status`] for up to `within`.
    pub fn wait_status_for(
        &self,
        what: &str,
        within: Duration,
        check: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + within;
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
pub struct Setup {
    pub dir: PathBuf,
    /// The filter's form.
    pub form: FilterForm,
    /// The ECDS file the watch writes and Envoy reads.
    pub ecds: EcdsFile,
    // Field order: Envoy stops before the watch.
    pub envoy: Envoy,
    pub watch: Watch,
}

impl Setup {
    /// The watch and Envoy running the filter of form `form`.
    pub fn start(form: FilterForm) -> Setup {
        Setup::start_with(false, form)
    }

    /// [`Setup::start`] with `a.example` routed to blue (`a.yaml`): the scene most tests begin with.
    pub fn routing_a_to_blue(form: FilterForm) -> Setup {
        let setup = Setup::start(form);
        setup.change(
            "a.yaml",
            Some(&ingress("a", "a.example", "blue")),
            "a.example",
            Some("blue"),
        );
        setup
    }

    /// The watch writing the ECDS file in binary protobuf (`filter.pb`), and Envoy reading it.
    pub fn start_binary(form: FilterForm) -> Setup {
        Setup::launch(false, form, EcdsFile::Binary, &[])
    }

    /// With `paced`, Envoy's admin listens on a port chosen here and the watch gets `--envoy-admin`.
    pub fn start_with(paced: bool, form: FilterForm) -> Setup {
        Setup::launch(paced, form, EcdsFile::Json, &[])
    }

    /// [`Setup::start_with`] paced, the watch reading Envoy's traffic every `every` for its
    /// `/status` and dashboard (`--traffic-every`).
    pub fn reading_traffic(form: FilterForm, every: &str) -> Setup {
        Setup::launch(true, form, EcdsFile::Json, &["--traffic-every", every])
    }

    fn launch(paced: bool, form: FilterForm, ecds: EcdsFile, more: &[&str]) -> Setup {
        let envoy_bin = required_path("ENVOY_BIN");
        let file = required_path(form.variable());
        if form.is_module() {
            set_module_search_path(&file);
        }
        let dir = fresh_dir("watch");
        std::fs::create_dir_all(dir.join("manifests")).unwrap();
        std::fs::create_dir_all(dir.join("ecds")).unwrap();
        let backends: Vec<(String, Backend)> = [BLUE, GREEN]
            .iter()
            .map(|c| ((*c).to_owned(), Backend::start(&backend_name(c)).unwrap()))
            .collect();
        let ports: Vec<(&str, u16)> = backends.iter().map(|(c, b)| (c.as_str(), b.addr.port())).collect();
        let admin_port = if paced { switchyard_free_port::free_port() } else { 0 };
        std::fs::write(
            dir.join("envoy.yaml"),
            envoy_config_reading(&dir, &ports, 0, admin_port, form, ecds),
        )
        .unwrap();
        // The watch writes the ECDS file before Envoy starts: Envoy's listener waits for it.
        let mut extra = if paced {
            vec!["--envoy-admin".to_owned(), format!("127.0.0.1:{admin_port}")]
        } else {
            Vec::new()
        };
        extra.extend(more.iter().map(|m| (*m).to_owned()));
        let watch = Watch::start_with(&dir, form, ecds, &extra);
        let mut envoy = Envoy::spawn(&envoy_bin, dir.clone(), file, 1);
        envoy.backends = backends.into_iter().collect();
        Setup {
            dir,
            form,
            ecds,
            envoy,
            watch,
        }
    }

    /// The ECDS file the watch writes.
    pub fn ecds_file(&self) -> PathBuf {
        self.dir.join("ecds").join(self.ecds.name())
    }

    /// One of Envoy's counters of the filter's ECDS updates (`update_success`, `update_rejected`).
    pub fn ecds_stat(&self, what: &str) -> u64 {
        let name = self.form.ecds_name();
        self.envoy
            .stat(&format!("extension_config_discovery.http_filter.{name}.{what}"))
            .unwrap_or(0)
    }

    pub fn manifest(&self, file: &str) -> PathBuf {
        self.dir.join("manifests").join(file)
    }

    /// The backend that answers `host` now (`None`: a local reply).
    pub fn backend(&self, host: &str) -> Option<String> {
        ask(self.envoy.addr, host)
            .unwrap_or_else(|e| panic!("GET {host}: {e}\n{}", self.envoy.log()))
            .1
    }

    /// Writes (or, with `None`, deletes) a manifest and returns how long it took until `host` is
    /// answered by `expected`; fails past [`FOLLOW_WITHIN`].
    pub fn change(&self, file: &str, text: Option<&str>, host: &str, expected: Option<&str>) -> Duration {
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
pub fn ask(addr: SocketAddr, host: &str) -> std::io::Result<(u16, Option<String>)> {
    let stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    ask_on(&mut BufReader::new(stream), host)
}

/// Sends `GET /` for `host` on an open (keep-alive) connection and reads one response.
pub fn ask_on(connection: &mut BufReader<TcpStream>, host: &str) -> std::io::Result<(u16, Option<String>)> {
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
pub fn ingress(name: &str, host: &str, service: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: {name}, namespace: shop}}\nspec:\n  rules:\n  - host: {host}\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, backend: {{service: {{name: {service}, port: {{number: 80}}}}}}}}\n"
    )
}

/// Polls `check` every 20 ms until it holds; panics after [`FOLLOW_WITHIN`] with `what` and what
/// `describe` says (the watch's and Envoy's logs).
pub fn eventually(what: &str, check: impl Fn() -> bool, describe: impl Fn() -> String) {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < FOLLOW_WITHIN,
            "{what}: not within {FOLLOW_WITHIN:?}\n{}",
            describe()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
