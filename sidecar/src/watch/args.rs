//! `switchyard watch`'s flags (clap derive), and their checks that clap cannot express.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::flags::TableArgs;

/// `switchyard watch --help`'s examples.
pub const WATCH_HELP: &str = "\
Examples:
  # A folder of manifests, pushed to Envoy through its ECDS file (envoy.yaml, `make run`)
  switchyard watch --manifests examples/002-host-priority --ingress-class bfe \\
      --ecds-file build/run/switchyard-filter.json --listen 127.0.0.1:9102

  # A cluster (kubeconfig or in-cluster), two namespaces, to an Istio ingress gateway's WasmPlugin
  switchyard watch --kubernetes --namespaces shop,blog --wasmplugin istio-system/switchyard \\
      --wasm-url oci://registry.example/switchyard-filter:0.1 --publish-address 203.0.113.7

  # Follow the table by hand
  switchyard watch --manifests m/ -o table.json
  curl -s 127.0.0.1:9102/readyz; curl -s 127.0.0.1:9102/status | jq '.errors'

A change is compiled about 100 ms after the last one (--debounce-ms), at most 1 s after the first
(--debounce-max-ms), and pushed only when the table's content changed; each push logs the generation
and what changed. A manifest that does not parse keeps its last good version routed and is listed in
/status (errors). In Kubernetes mode nothing is pushed before every store (Ingress, IngressClass,
Service, HTTPProxy) has synced; when the API server is unreachable the last table keeps serving and
/readyz (503) says why. Endpoints of --listen: /healthz, /readyz, /metrics (Prometheus), /table,
/status (JSON). Stop with Ctrl-C or SIGTERM.";

/// `switchyard watch`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("source").required(true).args(["manifests", "kubernetes"]))]
pub struct WatchArgs {
    /// Follow the manifests in these folders (recursive *.yaml, *.yml, *.json; several folders
    /// compile as one).
    #[arg(long, value_name = "DIR", num_args = 1..)]
    pub manifests: Vec<PathBuf>,
    /// Follow a cluster: Ingress, IngressClass, Service and HTTPProxy (kubeconfig or in-cluster).
    #[arg(long)]
    pub kubernetes: bool,
    /// Kubernetes: only these namespaces (comma-separated); IngressClasses are cluster-wide.
    #[arg(long, value_delimiter = ',', value_name = "NS,...", conflicts_with = "manifests")]
    pub namespaces: Vec<String>,
    /// Kubernetes: the addresses written to routed Ingresses' .status.loadBalancer (IPs or hostnames).
    #[arg(long, value_delimiter = ',', value_name = "ADDR,...", conflicts_with = "manifests")]
    pub publish_address: Vec<String>,
    /// Kubernetes: do not watch HTTPProxies (for clusters without Contour's CRD: otherwise that store
    /// never syncs and nothing is pushed).
    #[arg(long, conflicts_with = "manifests")]
    pub without_httpproxy: bool,
    /// Kubernetes: do not write HTTPProxy status, Ingress status or events.
    #[arg(long, conflicts_with = "manifests")]
    pub no_status_write: bool,

    /// Write Envoy's ECDS file here (a DiscoveryResponse with the filter's TypedExtensionConfig).
    #[arg(long, value_name = "PATH")]
    pub ecds_file: Option<PathBuf>,
    /// ECDS file: Envoy's admin address. Each push then waits until Envoy applied (or rejected) the
    /// previous one, by its stats; edits made meanwhile are coalesced into the next push. Without
    /// it, tables written faster than Envoy applies them pile up in its wasm VMs' memory.
    #[arg(long, value_name = "ADDR:PORT", requires = "ecds_file")]
    pub envoy_admin: Option<SocketAddr>,
    /// The filter's .wasm as Envoy loads it (ECDS file).
    #[arg(
        long,
        value_name = "PATH",
        default_value = "target/wasm32-wasip1/release/switchyard_filter.wasm"
    )]
    pub wasm: PathBuf,
    /// The HTTP filter's name in Envoy's listener (the TypedExtensionConfig's name) and root id.
    #[arg(long, value_name = "NAME", default_value = "switchyard")]
    pub filter_name: String,
    /// The wasm runtime Envoy runs the filter in.
    #[arg(long, value_name = "NAME", default_value = "envoy.wasm.runtime.v8")]
    pub wasm_runtime: String,
    /// Write the plain table here (as `switchyard compile -o` does: indented JSON, whatever
    /// --table-encoding says), replaced atomically.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How the ECDS file, the WasmPlugin and the EnvoyFilter carry the table: compact (base64 of the
    /// zlib'd binary document, ~35x smaller than the JSON, faster for the filter to load; a
    /// 100,000-rule table fits a Kubernetes object) or json (readable in the object).
    #[arg(long, value_enum, default_value = "compact", value_name = "ENCODING")]
    pub table_encoding: crate::flags::TableEncoding,
    /// Keep this Istio EnvoyFilter up to date (server-side apply).
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub envoyfilter: Option<String>,
    /// Keep this Istio WasmPlugin up to date (server-side apply).
    #[arg(long, value_name = "NAMESPACE/NAME", requires = "wasm_url")]
    pub wasmplugin: Option<String>,
    /// Istio: the largest object (serialized JSON, bytes) sent to the API server. A table whose
    /// object is larger is refused for that sink (logged, in /status, /readyz and /metrics; the
    /// object keeps its last good table; not retried until the table changes), as is one the API
    /// server answers "request is too large". The default stays ~170 KB under etcd's default
    /// request limit (--max-request-bytes, 1.5 MiB), which every Kubernetes object must fit.
    #[arg(long, value_name = "BYTES", default_value_t = crate::watch::istio::DEFAULT_MAX_BYTES)]
    pub istio_max_bytes: usize,
    /// WasmPlugin: where Istio fetches the filter (oci://, https:// or file://).
    #[arg(long, value_name = "URL")]
    pub wasm_url: Option<String>,
    /// EnvoyFilter: the filter's .wasm path inside the gateway pods.
    #[arg(
        long,
        value_name = "PATH",
        default_value = "/var/lib/switchyard/switchyard_filter.wasm"
    )]
    pub gateway_wasm_path: String,
    /// Istio: the gateway pods' labels (k=v, comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "K=V,...",
        default_value = "istio=ingressgateway"
    )]
    pub gateway_selector: Vec<String>,

    /// Serve /healthz, /readyz, /metrics, /table and /status here.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<SocketAddr>,
    /// Quiet time after the last change before recompiling, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub debounce_ms: u64,
    /// Longest wait after the first change before recompiling, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub debounce_max_ms: u64,
    /// Folder mode: read everything again after this many seconds without a change (a safety net
    /// for missed file events, such as a watched folder deleted and created again).
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub rescan_secs: u64,
    /// Log every recompilation, not only pushes.
    #[arg(short, long)]
    pub verbose: bool,

    #[command(flatten)]
    pub table: TableArgs,
}

impl WatchArgs {
    /// `--gateway-selector` as a map.
    pub fn selector(&self) -> Result<BTreeMap<String, String>, String> {
        self.gateway_selector
            .iter()
            .filter(|s| !s.trim().is_empty())
            .map(|s| match s.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
                _ => Err(format!("--gateway-selector {s:?}: expected KEY=VALUE")),
            })
            .collect()
    }

    /// Whether any sink needs a Kubernetes client.
    pub fn needs_client(&self) -> bool {
        self.kubernetes || self.envoyfilter.is_some() || self.wasmplugin.is_some()
    }
}
