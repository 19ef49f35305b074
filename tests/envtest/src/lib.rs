//! A real Kubernetes API server for tests, started as controller-runtime's envtest starts one: etcd
//! and kube-apiserver from `KUBEBUILDER_ASSETS` (see `../shared/envtest/README.md`), in a temporary
//! folder, on free loopback ports, with a self-signed serving certificate, static tokens for an admin
//! (`system:masters`) and the `system:serviceaccount:istio-system:switchyard` user, RBAC on, and the
//! service-account key flags. Once `/readyz` answers, the real CRDs (`../shared/envtest/crds`) and
//! `deploy/rbac.yaml` are installed, and a kubeconfig is written for each user (the switchyard
//! users' default namespace is istio-system, their ServiceAccount's, as in a pod).
//!
//! - [`Envtest::shared`]: one server per test binary (the first caller starts it); give each test
//!   its own namespace ([`Envtest::namespace`]).
//! - [`Envtest::start`]: a server of one's own, for tests that stop and restart the API server
//!   ([`Envtest::stop_apiserver`], [`Envtest::start_apiserver`]: same port, same etcd data).
//! - [`watch::Watch`]: `switchyard watch` as a process, through a kubeconfig, as a user runs it.
//! - Replicas of it ([`User::Replica`]): the ServiceAccount user with a uid per replica, so that the
//!   API server's audit log ([`Envtest::audit`]: every write of that user) tells who wrote what.
//! - [`gate::Gate`]: a TCP gate in front of the API server that can cut a client off (a network cut).
//! - [`Envtest::kubeconfig_without_namespace`]: a kubeconfig as out of cluster, whose context names
//!   no namespace.
//!
//! etcd and kube-apiserver die with the test binary however it ends (see [`process`]); an owned
//! [`Envtest`] also stops them and removes its folder when dropped.

pub mod gate;
pub mod manifests;
pub mod pki;
pub mod process;
pub mod watch;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::Client;

use crate::pki::Pki;
use switchyard_free_port::free_port;

use crate::process::Proc;

/// Who a client or kubeconfig acts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum User {
    /// `system:masters`.
    Admin,
    /// `system:serviceaccount:istio-system:switchyard`, with only what `deploy/rbac.yaml` grants.
    Switchyard,
    /// The same user, as replica N (< [`pki::REPLICAS`]): its own token and uid.
    Replica(u8),
    /// `system:serviceaccount:switchyard:switchyard`, with only what `deploy/envoy/rbac.yaml`
    /// grants (once a test applied it).
    Gateway,
}

/// One write of the switchyard user, as the audit log records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audited {
    /// When the API server received it (RFC 3339 with microseconds: sorts as text).
    pub received: String,
    /// The user's uid (`uid-switchyard-replica-N`, [`pki::replica_uid`]).
    pub uid: String,
    /// `create`, `update`, `patch` or `delete`.
    pub verb: String,
    /// The resource (`leases`, `httpproxies`, `wasmplugins`, ...).
    pub resource: String,
    /// The subresource (`status`), if any.
    pub subresource: Option<String>,
    /// `namespace/name`.
    pub object: String,
    /// The answer's status code.
    pub code: u16,
}

/// The audit policy: every write of the switchyard user, at the Metadata level, once answered.
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n\
- level: Metadata\n  users: [\"system:serviceaccount:istio-system:switchyard\"]\n  verbs: [create, update, patch, delete]\n\
- level: None\n";

/// A running etcd and kube-apiserver.
#[derive(Debug)]
pub struct Envtest {
    dir: PathBuf,
    assets: PathBuf,
    pki: Pki,
    etcd: Mutex<Option<Proc>>,
    apiserver: Mutex<Option<Proc>>,
    etcd_port: u16,
    port: u16,
    namespaces: AtomicU32,
    owned: bool,
    crds: bool,
}

/// How long the API server may take to answer `/readyz` (2–5 s on a 2-core machine).
const READY_WITHIN: Duration = Duration::from_secs(60);

/// The project's root (where `deploy/` is).
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The real CRDs: `SWITCHYARD_ENVTEST_CRDS`, else `../shared/envtest/crds` beside the project root.
pub fn crds_dir() -> PathBuf {
    std::env::var_os("SWITCHYARD_ENVTEST_CRDS")
        .map(PathBuf::from)
        .unwrap_or_else(|| project_root().join("../shared/envtest/crds"))
}

/// The `KUBEBUILDER_ASSETS` folder, or why there is none.
pub fn assets() -> Result<PathBuf, String> {
    let dir = std::env::var_os("KUBEBUILDER_ASSETS").map(PathBuf::from).ok_or(
        "KUBEBUILDER_ASSETS is not set: point it at a folder with kube-apiserver and etcd \
         (`export KUBEBUILDER_ASSETS=$(../shared/envtest/assets build/envtest)`, or `setup-envtest use -p path`)",
    )?;
    for binary in ["etcd", "kube-apiserver"] {
        if !dir.join(binary).exists() {
            return Err(format!("KUBEBUILDER_ASSETS={}: no {binary} there", dir.display()));
        }
    }
    Ok(dir)
}

impl Envtest {
    /// The server shared by every test of this binary, started by the first caller.
    pub async fn shared() -> &'static Envtest {
        static SHARED: tokio::sync::OnceCell<&'static Envtest> = tokio::sync::OnceCell::const_new();
        // Started on a runtime of its own: the first caller's runtime ends with its test.
        SHARED
            .get_or_init(|| async {
                let started = std::thread::spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| e.to_string())?;
                    runtime.block_on(Envtest::start_with(false, true))
                })
                .join()
                .unwrap_or_else(|_| Err("the envtest start panicked".to_owned()));
                let env: &'static Envtest = Box::leak(Box::new(started.unwrap_or_else(|e| panic!("envtest: {e}"))));
                cleanup_at_exit(env);
                env
            })
            .await
    }

    /// A server of its own (stopped and removed on drop).
    pub async fn start() -> Result<Envtest, String> {
        Envtest::start_with(true, true).await
    }

    /// A server of its own without the CRDs (as a cluster without Contour or Istio).
    pub async fn start_without_crds() -> Result<Envtest, String> {
        Envtest::start_with(true, false).await
    }

    async fn start_with(owned: bool, crds: bool) -> Result<Envtest, String> {
        let assets = assets()?;
        let dir = tempfile::Builder::new()
            .prefix("switchyard-envtest-")
            .tempdir()
            .map_err(|e| format!("temporary folder: {e}"))?
            .keep();
        let pki = pki::write(&dir)?;
        let env = Envtest {
            etcd_port: free_port(),
            port: free_port(),
            dir,
            assets,
            pki,
            etcd: Mutex::new(None),
            apiserver: Mutex::new(None),
            namespaces: AtomicU32::new(0),
            owned,
            crds,
        };
        match env.boot().await {
            Ok(()) => Ok(env),
            Err(e) => {
                env.stop_all();
                Err(e)
            }
        }
    }

    async fn boot(&self) -> Result<(), String> {
        self.start_etcd()?;
        std::fs::write(self.dir.join("audit-policy.yaml"), AUDIT_POLICY).map_err(|e| format!("audit policy: {e}"))?;
        let replicas = (0..pki::REPLICAS).map(User::Replica);
        for user in [User::Admin, User::Switchyard, User::Gateway]
            .into_iter()
            .chain(replicas)
        {
            let path = self.kubeconfig(user);
            std::fs::write(&path, self.kubeconfig_text(user)).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        self.start_apiserver().await?;
        self.install().await
    }

    fn start_etcd(&self) -> Result<(), String> {
        let peer = free_port();
        let client_url = format!("http://127.0.0.1:{}", self.etcd_port);
        let mut command = Command::new(self.assets.join("etcd"));
        command
            .arg("--data-dir")
            .arg(self.dir.join("etcd"))
            .args([
                "--listen-client-urls",
                &client_url,
                "--advertise-client-urls",
                &client_url,
            ])
            .args(["--listen-peer-urls", &format!("http://127.0.0.1:{peer}")])
            .args(["--initial-advertise-peer-urls", &format!("http://127.0.0.1:{peer}")])
            .args(["--initial-cluster", &format!("default=http://127.0.0.1:{peer}")]);
        let proc = Proc::spawn("etcd", self.logged(command, "etcd.log")?)?;
        *self.etcd.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(proc);
        Ok(())
    }

    fn logged(&self, mut command: Command, log: &str) -> Result<Command, String> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(log))
            .map_err(|e| format!("{log}: {e}"))?;
        let err = file.try_clone().map_err(|e| e.to_string())?;
        command.stdin(Stdio::null()).stdout(file).stderr(err);
        Ok(command)
    }

    /// Starts kube-apiserver (again) on its port with the same etcd, and waits for `/readyz`.
    pub async fn start_apiserver(&self) -> Result<(), String> {
        let server = format!("https://127.0.0.1:{}", self.port);
        let path = |p: &Path| p.display().to_string();
        let mut command = Command::new(self.assets.join("kube-apiserver"));
        command
            .arg(format!("--etcd-servers=http://127.0.0.1:{}", self.etcd_port))
            .arg(format!("--secure-port={}", self.port))
            .args(["--bind-address=127.0.0.1", "--advertise-address=127.0.0.1"])
            .arg(format!("--cert-dir={}", path(&self.dir.join("certs"))))
            .arg(format!("--tls-cert-file={}", path(&self.pki.cert)))
            .arg(format!("--tls-private-key-file={}", path(&self.pki.key)))
            .arg(format!("--token-auth-file={}", path(&self.pki.tokens)))
            .arg("--authorization-mode=RBAC")
            .arg(format!("--service-account-issuer={server}"))
            .arg(format!(
                "--service-account-key-file={}",
                path(&self.pki.service_account_public_key)
            ))
            .arg(format!(
                "--service-account-signing-key-file={}",
                path(&self.pki.service_account_key)
            ))
            .args([
                "--service-cluster-ip-range=10.96.0.0/12",
                "--endpoint-reconciler-type=none",
            ])
            .args([
                "--enable-admission-plugins=DefaultIngressClass",
                "--disable-admission-plugins=ServiceAccount",
            ])
            .arg("--allow-privileged=true")
            .arg(format!(
                "--audit-policy-file={}",
                path(&self.dir.join("audit-policy.yaml"))
            ))
            .arg(format!("--audit-log-path={}", path(&self.dir.join("audit.log"))));
        let proc = Proc::spawn("kube-apiserver", self.logged(command, "kube-apiserver.log")?)?;
        *self.apiserver.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(proc);
        self.wait_ready().await
    }

    /// Kills kube-apiserver (etcd keeps its data).
    pub fn stop_apiserver(&self) {
        kill(&self.apiserver);
    }

    async fn wait_ready(&self) -> Result<(), String> {
        let deadline = Instant::now() + READY_WITHIN;
        let mut last = String::new();
        while Instant::now() < deadline {
            if let Some(status) = self
                .apiserver
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .as_mut()
                .and_then(Proc::exited)
            {
                return Err(format!(
                    "kube-apiserver exited ({status}): {}",
                    self.log_tail("kube-apiserver.log")
                ));
            }
            match self.client(User::Admin).await {
                Ok(client) => {
                    let request = http_get("/readyz");
                    match tokio::time::timeout(Duration::from_secs(2), client.request_text(request)).await {
                        Ok(Ok(text)) if text.trim() == "ok" => return Ok(()),
                        Ok(Ok(text)) => last = text,
                        Ok(Err(e)) => last = e.to_string(),
                        Err(_) => last = "no answer in 2 s".to_owned(),
                    }
                }
                Err(e) => last = e,
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(format!(
            "kube-apiserver not ready after {READY_WITHIN:?} ({last}): {}",
            self.log_tail("kube-apiserver.log")
        ))
    }

    fn log_tail(&self, log: &str) -> String {
        let text = std::fs::read_to_string(self.dir.join(log)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    /// The CRDs, the namespace istio-system and `deploy/rbac.yaml`.
    async fn install(&self) -> Result<(), String> {
        let client = self.client(User::Admin).await?;
        if self.crds {
            self.install_crds(&client).await?;
        }
        self.create_namespace("istio-system").await?;
        let rbac = project_root().join("deploy/rbac.yaml");
        let text = std::fs::read_to_string(&rbac).map_err(|e| format!("{}: {e}", rbac.display()))?;
        manifests::apply_all(&client, &text).await
    }

    async fn install_crds(&self, client: &Client) -> Result<(), String> {
        let crds = crds_dir();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&crds)
            .map_err(|e| format!("{}: {e}", crds.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        let mut all = String::new();
        for file in files {
            all += &std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            all += "\n---\n";
        }
        manifests::install_crds(client, &all).await
    }

    /// The API server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The API server's URL.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The kubeconfig file for `user`.
    pub fn kubeconfig(&self, user: User) -> PathBuf {
        self.dir.join(match user {
            User::Admin => "admin.kubeconfig".to_owned(),
            User::Switchyard => "switchyard.kubeconfig".to_owned(),
            User::Replica(n) => format!("switchyard-replica-{n}.kubeconfig"),
            User::Gateway => "gateway.kubeconfig".to_owned(),
        })
    }

    /// A kubeconfig for `user` that reaches the API server through 127.0.0.1:`port` (a
    /// [`gate::Gate`] in front of it).
    pub fn kubeconfig_via(&self, user: User, port: u16) -> Result<PathBuf, String> {
        let path = self.dir.join(format!("via-{port}.kubeconfig"));
        let text = self.kubeconfig_text_for(user, &format!("https://127.0.0.1:{port}"));
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }

    /// A kubeconfig for `user` whose context names no namespace (as a developer's, out of cluster:
    /// a client defaults to `default`).
    pub fn kubeconfig_without_namespace(&self, user: User) -> Result<PathBuf, String> {
        let path = self.dir.join(format!("{user:?}-no-namespace.kubeconfig"));
        let text = self
            .kubeconfig_text_for(user, &self.url())
            .replace("    namespace: istio-system\n", "");
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }

    /// The switchyard user's writes so far (the audit log), in the order the API server received them.
    pub fn audit(&self) -> Vec<Audited> {
        let text = std::fs::read_to_string(self.dir.join("audit.log")).unwrap_or_default();
        let mut out: Vec<Audited> = text
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .map(|e| {
                let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
                let object = &e["objectRef"];
                Audited {
                    received: text(&e["requestReceivedTimestamp"]),
                    uid: text(&e["user"]["uid"]),
                    verb: text(&e["verb"]),
                    resource: text(&object["resource"]),
                    subresource: object["subresource"].as_str().map(str::to_owned),
                    object: format!("{}/{}", text(&object["namespace"]), text(&object["name"])),
                    code: e["responseStatus"]["code"].as_u64().unwrap_or(0) as u16,
                }
            })
            .collect();
        out.sort_by(|a, b| a.received.cmp(&b.received));
        out
    }

    fn kubeconfig_text(&self, user: User) -> String {
        self.kubeconfig_text_for(user, &self.url())
    }

    fn kubeconfig_text_for(&self, user: User, server: &str) -> String {
        let (name, token) = match user {
            User::Admin => (pki::ADMIN, &self.pki.admin_token),
            User::Switchyard => (pki::SWITCHYARD_USER, &self.pki.switchyard_token),
            User::Replica(n) => (pki::SWITCHYARD_USER, &self.pki.replica_tokens[usize::from(n)]),
            User::Gateway => (pki::GATEWAY_USER, &self.pki.gateway_token),
        };
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.pki.cert_pem);
        // Switchyard's default namespace is its ServiceAccount's, as in a pod.
        let namespace = match user {
            User::Admin => "",
            User::Switchyard | User::Replica(_) => "    namespace: istio-system\n",
            User::Gateway => "    namespace: switchyard\n",
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\n\
             users:\n- name: {name:?}\n  user:\n    token: {token}\ncontexts:\n- name: envtest\n  context:\n    cluster: envtest\n    user: {name:?}\n\
             {namespace}current-context: envtest\n"
        )
    }

    /// A client acting as `user` (make one per test: a client lives on the runtime that made it).
    pub async fn client(&self, user: User) -> Result<Client, String> {
        let kubeconfig = Kubeconfig::read_from(self.kubeconfig(user)).map_err(|e| e.to_string())?;
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        Client::try_from(config).map_err(|e| e.to_string())
    }

    /// The admin client (panics if the kubeconfig cannot be read: a test's setup failure).
    pub async fn admin(&self) -> Client {
        self.client(User::Admin)
            .await
            .unwrap_or_else(|e| panic!("admin client: {e}"))
    }

    /// Creates a fresh namespace named `prefix-N` and returns its name.
    pub async fn namespace(&self, prefix: &str) -> String {
        let n = self.namespaces.fetch_add(1, Ordering::SeqCst);
        let name = format!("{prefix}-{n}");
        self.create_namespace(&name).await.unwrap_or_else(|e| panic!("{e}"));
        name
    }

    async fn create_namespace(&self, name: &str) -> Result<(), String> {
        let api: Api<Namespace> = Api::all(self.client(User::Admin).await?);
        let namespace: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).map_err(|e| e.to_string())?;
        match api.create(&PostParams::default(), &namespace).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
            Err(e) => Err(format!("namespace {name}: {e}")),
        }
    }

    /// Stops both processes and removes the folder.
    fn stop_all(&self) {
        kill(&self.apiserver);
        kill(&self.etcd);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Envtest {
    fn drop(&mut self) {
        if self.owned {
            self.stop_all();
        }
    }
}

/// Kills the process in `slot`, if any.
fn kill(slot: &Mutex<Option<Proc>>) {
    if let Some(mut proc) = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
        proc.kill();
    }
}

/// A GET request for a path of the API server.
pub fn http_get(path: &str) -> http::Request<Vec<u8>> {
    let mut request = http::Request::new(Vec::new());
    *request.uri_mut() = path.parse().unwrap_or_default();
    request
}

/// The shared server is never dropped: stop it and remove its folder when the test binary exits.
fn cleanup_at_exit(env: &'static Envtest) {
    static ENV: std::sync::OnceLock<&'static Envtest> = std::sync::OnceLock::new();
    extern "C" fn at_exit() {
        if let Some(env) = ENV.get() {
            env.stop_all();
        }
    }
    if ENV.set(env).is_ok() {
        // SAFETY: registers a plain function; it only kills our children and removes our folder.
        unsafe {
            libc::atexit(at_exit);
        }
    }
}
