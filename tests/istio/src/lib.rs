//! A real Istio control plane for tests (see `../shared/istio/README.md`): the envtest API server
//! (`switchyard-envtest`, from `KUBEBUILDER_ASSETS`) with Istio 1.14's 14 CRDs installed, a real
//! istiod (`pilot-discovery`) reading it, and a plain Envoy as the ingress gateway, configured by
//! istiod over ADS. Backends are local ([`switchyard_e2e::Backend`]) and reached through
//! `ServiceEntry` objects ([`objects::service_entry`]).
//!
//! - [`Istio::start`]: API server, CRDs, namespace istio-system, istiod (ready when its `/ready`
//!   answers 200). [`Istio::api_only`]: the API server and the CRDs without istiod (to check that
//!   manifests are accepted).
//! - [`Istio::gateway`]: an Envoy whose node says it is a pod of the ingress gateway (`router~…`,
//!   labels `istio: ingressgateway` by default), bootstrapped with ADS to istiod. Its listeners,
//!   route configurations and rejected updates are read from its admin API ([`Gateway`]).
//! - [`deploy`]: the folders of `deploy/istio/`, read as `kubectl apply -f FOLDER` reads them.
//!
//! Inputs, from the environment (the Makefile's `test-istio` sets them): `KUBEBUILDER_ASSETS`,
//! `PILOT_DISCOVERY` (the unpacked binary; default `build/istio/pilot-discovery`), `ISTIO_CRDS`
//! (default `../shared/istio/crds.yaml`), and for the gateway `ENVOY_BIN`. Everything listens on
//! 127.0.0.1 ports the OS picks; istiod, etcd and kube-apiserver die with the test binary, Envoy
//! when its [`Gateway`] drops.

pub mod deploy;
pub mod objects;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::{pinned_kind, Scope};
use kube::Client;
use serde_json::{json, Value};
use switchyard_e2e::process::EnvoyProcess;
use switchyard_e2e::{get, send, Request, Response};
use switchyard_envtest::process::Proc;
use switchyard_envtest::{manifests, project_root, Envtest};
use switchyard_free_port::free_port;

/// The namespace of istiod, the gateway and the mesh-wide objects.
pub const ISTIO_SYSTEM: &str = "istio-system";

/// How long istiod may take to answer `/ready` (1–2 s when idle) and a change to reach Envoy.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The mesh configuration istiod needs on this machine (`../shared/istio/README.md`): no Ingress
/// controller (istiod 1.14 would watch networking/v1beta1 Ingress, which this API server no longer
/// serves), no auto mTLS (clusters would wait for SDS secrets only istio-agent serves), no tracing.
/// `deploy/istio/mesh-config/mesh.yaml` (the mesh settings Switchyard asks of an installation) is
/// laid over it, so that the gateway is configured as in a cluster installed with it.
pub const BASE_MESH: &str = r#"{"ingressControllerMode": "OFF", "enableAutoMtls": false, "enableTracing": false}"#;

/// A path from the environment, else `default`; an error names the variable when the file is missing.
fn input(variable: &str, default: PathBuf, what: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os(variable).map(PathBuf::from).unwrap_or(default);
    match path.is_file() {
        true => Ok(path),
        false => Err(format!(
            "{variable}={}: no such file ({what}; `make test-istio` sets it up)",
            path.display()
        )),
    }
}

/// istiod's binary: `PILOT_DISCOVERY`, else `build/istio/pilot-discovery` (the Makefile unpacks it
/// there from `../shared/istio/pilot-discovery.xz`).
pub fn pilot_discovery() -> Result<PathBuf, String> {
    input(
        "PILOT_DISCOVERY",
        project_root().join("build/istio/pilot-discovery"),
        "istiod's pilot-discovery binary",
    )
}

/// Istio's CRDs: `ISTIO_CRDS`, else `../shared/istio/crds.yaml` beside the project root.
pub fn istio_crds() -> Result<PathBuf, String> {
    input(
        "ISTIO_CRDS",
        project_root().join("../shared/istio/crds.yaml"),
        "Istio 1.14's CRDs",
    )
}

/// The mesh configuration istiod runs with: [`BASE_MESH`] with `deploy/istio/mesh-config/mesh.yaml`'s
/// keys laid over it.
pub fn mesh_config() -> Result<Value, String> {
    let mut mesh: Value = serde_json::from_str(BASE_MESH).map_err(|e| e.to_string())?;
    let path = deploy::mesh_config_dir().join("mesh.yaml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let ours: Value = serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let (Some(base), Some(ours)) = (mesh.as_object_mut(), ours.as_object()) else {
        return Err(format!("{}: not a mapping", path.display()));
    };
    for (key, value) in ours {
        base.insert(key.clone(), value.clone());
    }
    Ok(mesh)
}

/// istiod as a process.
#[derive(Debug)]
struct Istiod {
    proc: Proc,
    dir: PathBuf,
    http: u16,
    grpc: u16,
}

/// The API server with Istio's CRDs, and istiod unless [`Istio::api_only`].
#[derive(Debug)]
pub struct Istio {
    /// The API server (an owned one: stopped when this drops).
    pub env: Envtest,
    istiod: Option<Istiod>,
}

impl Istio {
    /// The API server with Istio's CRDs and the namespace istio-system, and istiod, ready.
    pub async fn start() -> Result<Istio, String> {
        let mut istio = Istio::api_only().await?;
        istio.istiod = Some(istio.start_istiod().await?);
        Ok(istio)
    }

    /// The API server with Istio's CRDs and the namespace istio-system, without istiod.
    pub async fn api_only() -> Result<Istio, String> {
        // Istio's own CRDs, all 14 (envtest's CRD folder has four of them, and other projects').
        let crds = istio_crds()?;
        let env = Envtest::start_without_crds().await?;
        let text = std::fs::read_to_string(&crds).map_err(|e| format!("{}: {e}", crds.display()))?;
        manifests::install_crds(&env.admin().await, &text).await?;
        Ok(Istio { env, istiod: None })
    }

    async fn start_istiod(&self) -> Result<Istiod, String> {
        let binary = pilot_discovery()?;
        let dir = self.env.kubeconfig(switchyard_envtest::User::Admin);
        let dir = dir.parent().unwrap_or(Path::new("/tmp")).join("istiod");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok::<PathBuf, String>(path)
        };
        // JSON is YAML: istiod reads it as its mesh file.
        let mesh = write("mesh.yaml", &mesh_config()?.to_string())?;
        let networks = write("networks.yaml", "{}")?;
        // Below the ephemeral range, as the listeners': a port from it can be taken by any outgoing
        // connection before istiod binds it (seen: `bind: address already in use`).
        let ports: Vec<u16> = (0..7).map(|_| free_port()).collect();
        let addr = |port: u16| format!("127.0.0.1:{port}");
        let log = std::fs::File::create(dir.join("istiod.log")).map_err(|e| e.to_string())?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let mut command = Command::new(&binary);
        command
            .envs([
                ("POD_NAMESPACE", ISTIO_SYSTEM),
                ("POD_NAME", "istiod-0"),
                ("REVISION", "default"),
                // Filters only Istio's own Envoy build has: a plain Envoy rejects them.
                ("PILOT_ENABLE_METADATA_EXCHANGE", "false"),
                ("PILOT_ENABLE_ALPN_FILTER", "false"),
                // Pushes 100 ms after the last change by default; tests wait for each.
                ("PILOT_DEBOUNCE_AFTER", "50ms"),
            ])
            .arg("discovery")
            .arg("--kubeconfig")
            .arg(self.env.kubeconfig(switchyard_envtest::User::Admin))
            .arg("--meshConfig")
            .arg(&mesh)
            .arg("--networksConfig")
            .arg(&networks)
            .args(["--httpAddr", &addr(ports[0])])
            .args(["--grpcAddr", &addr(ports[1])])
            .args(["--secureGRPCAddr", &addr(ports[2])])
            .args(["--httpsAddr", &addr(ports[3])])
            .args(["--monitoringAddr", &addr(ports[4])])
            .args(["--federationAddr", &addr(ports[5])])
            .args(["--ctrlz_port", &ports[6].to_string(), "--ctrlz_address", "127.0.0.1"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        let mut istiod = Istiod {
            proc: Proc::spawn("pilot-discovery", command)?,
            dir,
            http: ports[0],
            grpc: ports[1],
        };
        let ready = SocketAddr::from(([127, 0, 0, 1], istiod.http));
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = istiod.proc.exited() {
                return Err(format!(
                    "istiod exited ({status}):\n{}",
                    tail(&istiod.dir.join("istiod.log"), 30)
                ));
            }
            if send(ready, &get("istiod", "/ready")).is_ok_and(|r| r.status == 200) {
                return Ok(istiod);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "istiod not ready after {PATIENCE:?}:\n{}",
                    tail(&istiod.dir.join("istiod.log"), 30)
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn istiod(&self) -> &Istiod {
        self.istiod
            .as_ref()
            .expect("this Istio was started without istiod (Istio::api_only)")
    }

    /// istiod's plain gRPC xDS address.
    pub fn xds(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.istiod().grpc))
    }

    /// istiod's HTTP address (`/ready`, `/debug/…`).
    pub fn http(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.istiod().http))
    }

    /// A `/debug/…` page of istiod (`configz`, `adsz`, `push_status`, ...).
    pub fn debug(&self, page: &str) -> String {
        send(self.http(), &get("istiod", &format!("/debug/{page}")))
            .map(|r| r.body)
            .unwrap_or_else(|e| format!("/debug/{page}: {e}"))
    }

    /// The last `lines` lines of istiod's log.
    pub fn istiod_log_tail(&self, lines: usize) -> String {
        self.istiod
            .as_ref()
            .map_or_else(String::new, |i| tail(&i.dir.join("istiod.log"), lines))
    }

    /// Installs the CRDs of the kinds `switchyard watch` reads besides Istio's (Contour's and NGINX's,
    /// from the envtest suite's folder): without them the watch waits for their stores.
    pub async fn install_other_kinds_crds(&self, admin: &Client) {
        let dir = switchyard_envtest::crds_dir();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .filter(|p| {
                !p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .starts_with("istio-")
            })
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            manifests::install_crds(admin, &text)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }

    /// The admin client of the API server (one per test runtime).
    pub async fn admin(&self) -> Client {
        self.env.admin().await
    }

    /// Server-side applies `objects` as an admin (field manager `envtest`), in order.
    pub async fn apply(&self, objects: &[Value]) -> Result<(), String> {
        let client = self.admin().await;
        for object in objects {
            manifests::apply(&client, object).await?;
        }
        Ok(())
    }

    /// What `kubectl apply --server-side --dry-run=server` answers for each of `objects`: the API
    /// server resolves the kind, validates the object against its CRD's schema and admits it, and
    /// stores nothing. An error names the object and the server's answer.
    pub async fn dry_run(&self, objects: &[Value]) -> Result<(), String> {
        let client = self.admin().await;
        for object in objects {
            apply_with(
                &client,
                object,
                &PatchParams {
                    dry_run: true,
                    ..PatchParams::apply("kubectl").force()
                },
            )
            .await?;
        }
        Ok(())
    }

    /// Starts an Envoy that istiod configures as the ingress gateway pod `pod` of istio-system with
    /// `labels` (its node metadata's `LABELS`); returns once Envoy is ready (its first CDS and LDS
    /// answers applied).
    pub fn gateway(&self, pod: &str, labels: &BTreeMap<String, String>) -> Gateway {
        let envoy_bin = switchyard_e2e::required_path("ENVOY_BIN");
        let dir = switchyard_e2e::fresh_dir("istio-gateway");
        switchyard_e2e::write_file(&dir.join("envoy.yaml"), &gateway_bootstrap(pod, labels, self.xds()));
        let process = EnvoyProcess::start(&envoy_bin, dir, 1, |_| true);
        Gateway { process }
    }

    /// `switchyard watch --istio-gateway istio-system/switchyard` (`SWITCHYARD_BIN`) as the
    /// ServiceAccount user, on namespace `ns`, the passthrough and HTTPS port `port`; returns it
    /// ready.
    pub async fn gateway_watch(&self, ns: &str, port: u16) -> switchyard_envtest::watch::Watch {
        let port = port.to_string();
        let args = [
            "--namespaces",
            ns,
            "--istio-gateway",
            "istio-system/switchyard",
            "--tls-passthrough-port",
            &port,
        ];
        let bin = switchyard_e2e::required_path("SWITCHYARD_BIN");
        let kubeconfig = self.env.kubeconfig(switchyard_envtest::User::Switchyard);
        let mut watch =
            switchyard_envtest::watch::Watch::start(&bin, &kubeconfig, &args).unwrap_or_else(|e| panic!("{e}"));
        watch.ready(PATIENCE).await.unwrap_or_else(|e| panic!("{e}"));
        watch
    }
}

impl Drop for Istio {
    /// istiod first, then the API server (the field order would stop the API server under it).
    fn drop(&mut self) {
        self.istiod.take();
    }
}

/// The default gateway labels: `istio: ingressgateway`, what deploy/istio/ selects.
pub fn ingressgateway() -> BTreeMap<String, String> {
    BTreeMap::from([("istio".to_owned(), "ingressgateway".to_owned())])
}

/// Server-side applies one object with `params` (namespaced ones without a namespace go to `default`).
pub async fn apply_with(client: &Client, object: &Value, params: &PatchParams) -> Result<DynamicObject, String> {
    // As kubectl: the kind first (`no matches for kind`), then the object.
    let gvk = manifests::gvk_of(object)?;
    let (resource, capabilities) = pinned_kind(client, &gvk).await.map_err(|e| {
        format!(
            "no matches for kind {:?} in version {:?}: {e}",
            gvk.kind, object["apiVersion"]
        )
    })?;
    let name = object["metadata"]["name"]
        .as_str()
        .ok_or("a document without metadata.name")?;
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Cluster => Api::all_with(client.clone(), &resource),
        Scope::Namespaced => {
            let namespace = object["metadata"]["namespace"].as_str().unwrap_or("default");
            Api::namespaced_with(client.clone(), namespace, &resource)
        }
    };
    api.patch(name, params, &Patch::Apply(object))
        .await
        .map_err(|e| format!("{} {name}: {e}", gvk.kind))
}

/// The gateway pod's IP as its node says (istiod never connects to it, and Envoy binds only what a
/// Gateway's `bind` says, 127.0.0.1). Not 127.0.0.1: istiod takes the endpoints at the proxy's IP for
/// the proxy's own service instances, so with backends behind ServiceEntries at 127.0.0.1 it would
/// put the gateway's listener on a backend's port (`Address already in use`).
pub const POD_IP: &str = "192.0.2.1";

static GATEWAYS: AtomicUsize = AtomicUsize::new(0);

/// Envoy's bootstrap as an Istio ingress gateway pod: the node (`router~POD_IP~POD.NS~NS.svc.cluster.local`,
/// the pod's labels and Istio version in its metadata), ADS over gRPC (HTTP/2) to istiod's `xds`,
/// CDS and LDS from ADS, and the static cluster `sds-grpc` that istiod's clusters name (nothing
/// listens there: auto mTLS is off, no secret is asked for).
pub fn gateway_bootstrap(pod: &str, labels: &BTreeMap<String, String>, xds: SocketAddr) -> String {
    let n = GATEWAYS.fetch_add(1, Ordering::SeqCst);
    let node = json!({
        "id": format!("router~{POD_IP}~{pod}.{ISTIO_SYSTEM}~{ISTIO_SYSTEM}.svc.cluster.local"),
        "cluster": format!("istio-ingressgateway.{ISTIO_SYSTEM}"),
        "metadata": {
            "LABELS": labels,
            "ISTIO_VERSION": "1.14.6",
            "NAMESPACE": ISTIO_SYSTEM,
            "CLUSTER_ID": "Kubernetes",
            "NAME": format!("{pod}-{n}"),
        }
    });
    let http2 = json!({"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
        "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
        "explicit_http_config": {"http2_protocol_options": {}}
    }});
    let cluster = |name: &str, port: u16| {
        json!({
            "name": name,
            "type": "STATIC",
            "connect_timeout": "1s",
            "typed_extension_protocol_options": http2,
            "load_assignment": {"cluster_name": name, "endpoints": [{"lb_endpoints": [{"endpoint": {"address":
                {"socket_address": {"address": "127.0.0.1", "port_value": port}}}}]}]}
        })
    };
    json!({
        "node": node,
        "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 0}}},
        "dynamic_resources": {
            "ads_config": {
                "api_type": "GRPC",
                "transport_api_version": "V3",
                "set_node_on_first_message_only": true,
                "grpc_services": [{"envoy_grpc": {"cluster_name": "xds-grpc"}}]
            },
            "cds_config": {"ads": {}, "resource_api_version": "V3"},
            "lds_config": {"ads": {}, "resource_api_version": "V3"}
        },
        "static_resources": {"clusters": [cluster("xds-grpc", xds.port()), cluster("sds-grpc", 1)]}
    })
    .to_string()
}

/// One virtual host of a route configuration Envoy holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualHost {
    /// The route configuration (`http.80`, `http.8080`, ...).
    pub route_config: String,
    /// The virtual host (`shop.example.com:80`).
    pub name: String,
    /// Its domains.
    pub domains: Vec<String>,
    /// Its routes' names, in order.
    pub routes: Vec<String>,
}

/// Envoy as the ingress gateway, configured by istiod.
pub struct Gateway {
    /// The process (its folder, admin address and log).
    pub process: EnvoyProcess,
}

impl Gateway {
    /// Envoy's `/config_dump` (without EDS).
    pub fn config_dump(&self) -> Value {
        send(self.process.admin, &get("admin", "/config_dump"))
            .ok()
            .and_then(|r| serde_json::from_str(&r.body).ok())
            .unwrap_or(Value::Null)
    }

    /// The active listeners: name and the address each is bound to.
    pub fn listeners(&self) -> Vec<(String, SocketAddr)> {
        let Ok(answer) = send(self.process.admin, &get("admin", "/listeners?format=json")) else {
            return Vec::new();
        };
        let doc: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
        doc["listener_statuses"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| {
                let address = &l["local_address"]["socket_address"];
                let ip = address["address"].as_str()?.parse().ok()?;
                let port = u16::try_from(address["port_value"].as_u64()?).ok()?;
                Some((l["name"].as_str()?.to_owned(), SocketAddr::new(ip, port)))
            })
            .collect()
    }

    /// The listener bound to `port` on 127.0.0.1, if any.
    pub fn listener_on(&self, port: u16) -> Option<String> {
        self.listeners()
            .into_iter()
            .find(|(_, a)| a.port() == port)
            .map(|(n, _)| n)
    }

    /// The virtual hosts of every dynamic route configuration Envoy holds.
    pub fn virtual_hosts(&self) -> Vec<VirtualHost> {
        let dump = self.config_dump();
        let mut out = Vec::new();
        for config in dump["configs"].as_array().into_iter().flatten() {
            for dynamic in config["dynamic_route_configs"].as_array().into_iter().flatten() {
                let route_config = &dynamic["route_config"];
                for vhost in route_config["virtual_hosts"].as_array().into_iter().flatten() {
                    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
                    out.push(VirtualHost {
                        route_config: text(&route_config["name"]),
                        name: text(&vhost["name"]),
                        domains: vhost["domains"].as_array().into_iter().flatten().map(text).collect(),
                        routes: vhost["routes"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|r| text(&r["name"]))
                            .collect(),
                    });
                }
            }
        }
        out
    }

    /// The HTTP connection managers of the active dynamic listeners (their `typed_config`).
    pub fn connection_managers(&self) -> Vec<Value> {
        let dump = self.config_dump();
        let mut out = Vec::new();
        for config in dump["configs"].as_array().into_iter().flatten() {
            for listener in config["dynamic_listeners"].as_array().into_iter().flatten() {
                for chain in listener["active_state"]["listener"]["filter_chains"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    for filter in chain["filters"].as_array().into_iter().flatten() {
                        if filter["name"] == "envoy.filters.network.http_connection_manager" {
                            out.push(filter["typed_config"].clone());
                        }
                    }
                }
            }
        }
        out
    }

    /// One stat (`listener_manager.lds.update_rejected`, ...), 0 when Envoy does not have it.
    pub fn stat(&self, name: &str) -> u64 {
        self.process.stat(name).unwrap_or(0)
    }

    /// xDS updates Envoy rejected: LDS, CDS, and RDS and ECDS summed over their subscriptions.
    pub fn rejected_updates(&self) -> u64 {
        let Ok(stats) = send(self.process.admin, &get("admin", "/stats?filter=update_rejected$")) else {
            return 0;
        };
        stats
            .body
            .lines()
            .filter_map(|l| l.rsplit_once(": ")?.1.trim().parse::<u64>().ok())
            .sum()
    }

    /// Sends `request` to the gateway's port `port` on 127.0.0.1.
    pub fn send(&self, port: u16, request: &Request) -> std::io::Result<Response> {
        send(SocketAddr::from(([127, 0, 0, 1], port)), request)
    }

    /// Envoy's log so far.
    pub fn log(&self) -> String {
        self.process.log()
    }

    /// The end of Envoy's log.
    pub fn log_tail(&self) -> String {
        self.process.log_tail()
    }

    /// Polls `check` (every 100 ms, up to [`PATIENCE`]) until it returns `Ok`; the last `Err` explains a
    /// timeout, with the end of Envoy's log.
    pub async fn wait_for<T>(
        &self,
        what: &str,
        mut check: impl FnMut(&Gateway) -> Result<T, String>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match check(self) {
                Ok(value) => return Ok(value),
                Err(last) if Instant::now() > deadline => {
                    return Err(format!(
                        "{what}: not after {PATIENCE:?}: {last}\n--- Envoy's log:\n{}",
                        self.log_tail()
                    ))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
}

/// The last `lines` lines of a file.
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
