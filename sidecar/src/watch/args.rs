//! `switchyard watch`'s flags (clap derive), and their checks that clap cannot express.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::flags::TableArgs;
use crate::watch::lead::lease::{default_identity, Election};
use crate::watch::serve::dashboard::access::Access;
use crate::watch::sink::ecds::{EcdsFilter, FilterForm, DEFAULT_MODULE_NAME, DEFAULT_WASM, DEFAULT_WASM_RUNTIME};

/// `switchyard watch --help`'s examples.
pub const WATCH_HELP: &str = "\
Examples:
  # A folder of manifests, pushed to Envoy through its ECDS file (envoy.yaml, `make run`)
  switchyard watch --manifests examples/002-host-priority --ingress-class bfe \\
      --ecds-file build/run/switchyard-filter.json --listen 127.0.0.1:9102 --dashboard-listen 9103

  # A cluster (kubeconfig or in-cluster), two namespaces, to an Istio ingress gateway's WasmPlugin
  switchyard watch --kubernetes --namespaces shop,blog --wasmplugin istio-system/switchyard \\
      --wasm-url oci://registry.example/switchyard-filter:0.1 --publish-address 203.0.113.7

  # Follow the table by hand
  switchyard watch --manifests m/ -o table.json
  curl -s 127.0.0.1:9102/readyz; curl -s 127.0.0.1:9103/status | jq '.errors'

  # In a pod: probes and metrics on the pod address, the dashboard on the pod's loopback
  switchyard watch --kubernetes ... --listen 0.0.0.0:9102 --dashboard-listen 9103
  kubectl -n istio-system port-forward deploy/switchyard 9103   # then http://127.0.0.1:9103/

A change is compiled about 100 ms after the last one (--debounce-ms), at most 1 s after the first
(--debounce-max-ms), and pushed only when the table's content changed; each push logs the generation
and what changed. A manifest that does not parse keeps its last good version routed and is listed in
/status (errors). In Kubernetes mode nothing is pushed before every store (Ingress, IngressClass,
Service, HTTPProxy) has synced; when the API server is unreachable the last table keeps serving and
/readyz (503) says why. Endpoints of --listen: /healthz, /readyz, /metrics (Prometheus). Endpoints
of --dashboard-listen: the dashboard (/), /table, /status (JSON), POST /explain (a body of at most
16 KiB, answered within 2 s; one runs at a time). Stop with Ctrl-C or SIGTERM.

With --leader-elect, run two or more replicas: they elect a leader through a Lease, every replica
compiles and writes its own files, and only the leader writes to the cluster; /status (leader) and
/metrics (switchyard_leader) say who leads. A leader that cannot renew the Lease within
--leader-elect-renew-deadline stops writing; one stopped with SIGTERM releases the Lease at once.";

/// A duration flag: a number with a unit, `ms`, `s` or `m` (`15s`, `500ms`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?}: expected a number and a unit (15s, 500ms, 1m)"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(number)),
        "s" => Ok(Duration::from_secs(number)),
        "m" => Ok(Duration::from_secs(number * 60)),
        _ => Err(format!("{text:?}: the unit must be ms, s or m (15s, 500ms, 1m)")),
    }
}

/// `--dashboard-listen`: `ADDR:PORT`, or a bare `PORT` on 127.0.0.1.
pub fn parse_dashboard_listen(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    match text.parse::<u16>() {
        Ok(port) => Ok(SocketAddr::from(([127, 0, 0, 1], port))),
        Err(_) => text
            .parse()
            .map_err(|_| format!("{text:?}: expected PORT (on 127.0.0.1) or ADDR:PORT")),
    }
}

/// `switchyard watch`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("source").required(true).args(["manifests", "kubernetes"]))]
pub struct WatchArgs {
    /// Follow the manifests in these folders (recursive *.yaml, *.yml, *.json; several folders
    /// compile as one).
    #[arg(long, value_name = "DIR", num_args = 1..)]
    pub manifests: Vec<PathBuf>,
    /// Follow a cluster: Ingress, IngressClass, Service, HTTPProxy, VirtualServer and
    /// VirtualServerRoute (kubeconfig or in-cluster).
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
    /// Kubernetes: do not watch NGINX's VirtualServers and VirtualServerRoutes (for clusters without
    /// NGINX's CRDs: otherwise those stores never sync and nothing is pushed).
    #[arg(long, conflicts_with = "manifests")]
    pub without_virtualserver: bool,
    /// Kubernetes: do not watch NGINX's TransportServers and GlobalConfigurations (for clusters
    /// without those CRDs: otherwise those stores never sync and nothing is pushed).
    #[arg(long, conflicts_with = "manifests")]
    pub without_transportserver: bool,
    /// Kubernetes: do not write HTTPProxy status, Ingress status or events.
    #[arg(long, conflicts_with = "manifests")]
    pub no_status_write: bool,

    /// Run several replicas: elect a leader through a coordination.k8s.io Lease. Every replica
    /// watches, compiles and writes its file sinks (--ecds-file, -o); only the leader writes status,
    /// events, load balancers and the Istio objects. Needs a cluster (--kubernetes or an Istio sink).
    #[arg(long)]
    pub leader_elect: bool,
    /// The Lease's name (give each Deployment of Switchyard its own; deploy/rbac.yaml allows
    /// `switchyard`).
    #[arg(long, value_name = "NAME", default_value = "switchyard", requires = "leader_elect")]
    pub leader_elect_lease_name: String,
    /// The Lease's namespace [default: the pod's namespace in a cluster; outside one the
    /// kubeconfig context's namespace, else `default`]. deploy/rbac.yaml grants the Lease in
    /// istio-system only: a replica that may not read its Lease is not ready (/readyz 503).
    #[arg(long, value_name = "NAMESPACE", requires = "leader_elect")]
    pub leader_elect_lease_namespace: Option<String>,
    /// How long followers wait after the leader's last renewal before taking the Lease (whole
    /// seconds).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader tries to renew the Lease before it steps down (stops writing); shorter
    /// than the lease duration, so it has stopped before another replica takes over.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// How often the leader renews the Lease and followers read it.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: Duration,

    /// Write Envoy's ECDS file here (a DiscoveryResponse with the filter's TypedExtensionConfig),
    /// encoded as Envoy reads it by its name: a .pb file in binary protobuf, which costs Envoy's
    /// main thread several times less (a 100,000-rule table: 6 – 8 ms a push against 45 – 55);
    /// any other name (.json, .yaml) in JSON, which a person can read.
    #[arg(long, value_name = "PATH")]
    pub ecds_file: Option<PathBuf>,
    /// ECDS file: Envoy's admin address. Each push then waits until Envoy applied (or rejected) the
    /// previous one, by its stats; edits made meanwhile are coalesced into the next push. Without
    /// it, tables written faster than Envoy applies them pile up in its wasm VMs' memory.
    #[arg(long, value_name = "ADDR:PORT", requires = "ecds_file")]
    pub envoy_admin: Option<SocketAddr>,
    /// With --envoy-admin and --dashboard-listen: how often the gateway's traffic per resource is
    /// read from Envoy's stats (`/status` `traffic`, the dashboard) [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "envoy_admin")]
    pub traffic_every: Option<Duration>,
    /// Which filter the ECDS file configures. wasm: the proxy-wasm filter (--wasm), for any Envoy
    /// version and any proxy-wasm host (Istio's WasmPlugin and EnvoyFilter sinks are always wasm).
    /// module: the native dynamic module (libswitchyard_module.so, `make build-module`) for a plain
    /// Envoy pinned at 1.40 or 1.41: one table for all workers, the largest tables, the lowest
    /// latency; Envoy loads lib<--module-name>.so from ENVOY_DYNAMIC_MODULES_SEARCH_PATH, and its
    /// listener's config_discovery.type_urls must name
    /// type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter
    /// (`make run SWITCHYARD_FORM=module` writes such a bootstrap, build/run/envoy-module.yaml;
    /// docs/deploy-envoy.md).
    #[arg(
        long,
        value_enum,
        default_value = "wasm",
        value_name = "FORM",
        requires = "ecds_file"
    )]
    pub filter_form: FilterForm,
    /// ECDS file, wasm form: the filter's .wasm as Envoy loads it [default:
    /// target/wasm32-wasip1/release/switchyard_filter.wasm]. Refused with --filter-form module.
    #[arg(long, value_name = "PATH")]
    pub wasm: Option<PathBuf>,
    /// ECDS file, module form: the name Envoy loads the module by (lib<NAME>.so in
    /// ENVOY_DYNAMIC_MODULES_SEARCH_PATH) [default: switchyard_module]. Refused with the wasm form.
    #[arg(long, value_name = "NAME")]
    pub module_name: Option<String>,
    /// The HTTP filter's name in Envoy's listener (the TypedExtensionConfig's name) and root id.
    #[arg(long, value_name = "NAME", default_value = "switchyard")]
    pub filter_name: String,
    /// The wasm runtime Envoy runs the filter in (the wasm form and the Istio sinks; refused with
    /// --filter-form module).
    #[arg(long, value_name = "NAME", default_value = DEFAULT_WASM_RUNTIME)]
    pub wasm_runtime: String,
    /// Write Envoy's L4 listeners here (an LDS DiscoveryResponse, replaced atomically): the
    /// TransportServers that won, as TLS passthrough by SNI and TCP/UDP proxies. Every replica writes it.
    #[arg(long, value_name = "PATH")]
    pub lds_file: Option<PathBuf>,
    /// Serve HTTPS (ROUTING.md §8): the --lds-file listener on --tls-passthrough-port also
    /// terminates TLS for the hosts of the Ingresses, HTTPProxies and VirtualServers, with the
    /// certificates of the Secrets they name (and the default certificate, --default-certificate),
    /// then runs the same filter (from --ecds-file) and route as the plain listener. The
    /// certificates are written here, one SDS file per certificate, mode 0600 (Envoy must run as
    /// the same user); a renewed Secret reaches new handshakes without a listener change.
    #[arg(long, value_name = "DIR", requires_all = ["lds_file", "ecds_file"])]
    pub sds_dir: Option<PathBuf>,
    /// With --sds-dir or --istio-gateway: a handshake without SNI, or naming no host, fails
    /// instead of getting the default certificate (ROUTING.md §8.1.2; ingress-nginx's
    /// ssl-reject-handshake).
    #[arg(long)]
    pub reject_unknown_sni: bool,
    /// Give Envoy its clusters (issue "The upstream side"): DIR/cds.json (CDS, Envoy's
    /// `cds_config.path_config_source`) holds one cluster for every backend the table and the L4
    /// routes name (the --cluster-template's names); each takes its endpoints over ADS from
    /// --ads-listen (an ExternalName Service is a DNS cluster). And its routes: DIR/rds.json
    /// (RDS, the listener's `rds.config_source.path_config_source`, route configuration
    /// `switchyard`) holds a route per rule's timeouts and retries (ingress-nginx's
    /// proxy-read-timeout and its 60 s default, proxy-next-upstream*) before the default route.
    #[arg(long, value_name = "DIR", requires = "ads_listen")]
    pub clusters_dir: Option<PathBuf>,
    /// With --clusters-dir: serve the clusters' endpoints here over ADS (gRPC; Envoy's
    /// `ads_config`, a static cluster with HTTP/2 to this address): the ready endpoints of each
    /// Service's EndpointSlices, a changed one pushed alone. With --kubernetes, EndpointSlices are
    /// watched (RBAC: list and watch endpointslices).
    #[arg(long, value_name = "ADDR", requires = "clusters_dir")]
    pub ads_listen: Option<std::net::SocketAddr>,
    /// Istio: keep this EnvoyFilter up to date with the clusters Istio does not make: a backend the
    /// manifests ask to be spoken to otherwise (backend-protocol, proxy-ssl-verify, affinity,
    /// load-balance, HTTPProxy's protocol, validation, loadBalancerPolicy, healthCheckPolicy, a
    /// VirtualServer upstream's tls, lb-method, healthCheck…) gets a cluster of its own, added to
    /// the --gateway-selector pods alone, on the endpoints istiod holds for the Service.
    /// Server-side apply; the leader only.
    #[arg(long, value_name = "NAMESPACE/NAME", conflicts_with = "clusters_dir")]
    pub istio_clusters: Option<String>,
    /// Keep this Istio Gateway and VirtualService (same name) up to date with the TransportServers'
    /// TLS passthrough hosts and TCP listeners, and the HTTPS hosts of the Ingresses, HTTPProxies
    /// and VirtualServers (ROUTING.md §8) on --tls-passthrough-port, their certificates copied into
    /// the Gateway's namespace (Istio reads them only there). Server-side apply; the leader only.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub istio_gateway: Option<String>,
    #[command(flatten)]
    pub l4: crate::flags::L4Args,
    /// Write the plain table here (as `switchyard compile -o` does: indented JSON, whatever
    /// --table-encoding says), replaced atomically.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How the ECDS file, the WasmPlugin and the EnvoyFilter carry the table: sharded (the binary
    /// document in shards zlib'd one by one: a filter decodes only the shards a push changed),
    /// compact (the binary document zlib'd in one stream, ~35x smaller than the JSON) or json
    /// (readable in the object). A 100,000-rule table fits a Kubernetes object either compressed way.
    #[arg(long, value_enum, default_value = "sharded", value_name = "ENCODING")]
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
    #[arg(long, value_name = "BYTES", default_value_t = crate::watch::sink::istio::DEFAULT_MAX_BYTES)]
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

    /// Serve the probes and metrics here: /healthz, /readyz and /metrics (Prometheus), what
    /// kubelet and Prometheus need (in a pod: 0.0.0.0:PORT). Nothing else answers on it.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<SocketAddr>,
    /// Serve the dashboard (/), /table, /status and POST /explain here: every host, path and
    /// backend of the cluster. A bare PORT means 127.0.0.1:PORT, reached from a laptop with
    /// `kubectl port-forward`; an address beyond loopback needs --dashboard-token-file.
    #[arg(long, value_name = "[ADDR:]PORT", value_parser = parse_dashboard_listen)]
    pub dashboard_listen: Option<SocketAddr>,
    /// The dashboard's bearer token, read from this file (for example a mounted Secret): clients
    /// send `Authorization: Bearer TOKEN`, a browser signs in at /login; 401 otherwise.
    #[arg(long, value_name = "FILE", requires = "dashboard_listen")]
    pub dashboard_token_file: Option<PathBuf>,
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

    /// The election's settings; `default_namespace` is the client's (in a pod: the pod's).
    pub fn election(&self, default_namespace: &str) -> Result<Election, String> {
        let (duration, deadline, retry) = (
            self.leader_elect_lease_duration,
            self.leader_elect_renew_deadline,
            self.leader_elect_retry_period,
        );
        if duration < Duration::from_secs(1) || duration.subsec_nanos() != 0 {
            return Err(format!(
                "--leader-elect-lease-duration {duration:?}: whole seconds, at least 1s (a Lease counts in seconds)"
            ));
        }
        if deadline >= duration || deadline.is_zero() {
            return Err(format!(
                "--leader-elect-renew-deadline {deadline:?} must be shorter than --leader-elect-lease-duration {duration:?}"
            ));
        }
        if retry >= deadline || retry.is_zero() {
            return Err(format!(
                "--leader-elect-retry-period {retry:?} must be shorter than --leader-elect-renew-deadline {deadline:?}"
            ));
        }
        Ok(Election {
            name: self.leader_elect_lease_name.clone(),
            namespace: self
                .leader_elect_lease_namespace
                .clone()
                .unwrap_or_else(|| default_namespace.to_owned()),
            identity: default_identity(),
            lease_duration: duration,
            renew_deadline: deadline,
            retry_period: retry,
        })
    }

    /// The dashboard's address and who may read it: refused beyond loopback without a token, since
    /// it shows the cluster's whole routing picture to whoever reaches it.
    pub fn dashboard(&self) -> Result<Option<(SocketAddr, Access)>, String> {
        let Some(addr) = self.dashboard_listen else {
            return Ok(None);
        };
        let access = match &self.dashboard_token_file {
            Some(path) => Access::from_token_file(path)?,
            None if addr.ip().is_loopback() => Access::open(),
            None => {
                return Err(format!(
                    "--dashboard-listen {addr} would show every host, path and backend of the cluster to anyone \
                     who reaches that address: serve it on 127.0.0.1 (`--dashboard-listen {}`, then `kubectl \
                     port-forward`), or give --dashboard-token-file",
                    addr.port()
                ))
            }
        };
        Ok(Some((addr, access)))
    }

    /// The filter the ECDS file configures (`--filter-form` and the flags of that form); an error
    /// naming a flag of the other form.
    pub fn ecds_filter(&self) -> Result<EcdsFilter, String> {
        match self.filter_form {
            FilterForm::Wasm => match &self.module_name {
                Some(name) => Err(format!(
                    "--module-name {name}: only for --filter-form module (the ECDS file configures the wasm filter)"
                )),
                None => {
                    let wasm = self.wasm.clone().unwrap_or_else(|| DEFAULT_WASM.into());
                    Ok(EcdsFilter::local_wasm(&wasm, &self.wasm_runtime))
                }
            },
            FilterForm::Module => {
                self.refuse_wasm_flags()?;
                let name = self.module_name.as_deref().unwrap_or(DEFAULT_MODULE_NAME);
                Ok(EcdsFilter::Module { name: name.to_owned() })
            }
        }
    }

    /// With `--filter-form module`: an error naming `--wasm` or `--wasm-runtime` when given, which
    /// only the wasm filter reads.
    fn refuse_wasm_flags(&self) -> Result<(), String> {
        let why = "means nothing with --filter-form module: Envoy loads the module by --module-name from \
                   ENVOY_DYNAMIC_MODULES_SEARCH_PATH, with no wasm VM";
        if let Some(wasm) = &self.wasm {
            return Err(format!("--wasm {}: {why}", wasm.display()));
        }
        if self.wasm_runtime != DEFAULT_WASM_RUNTIME {
            return Err(format!("--wasm-runtime {}: {why}", self.wasm_runtime));
        }
        Ok(())
    }

    /// Whether any sink needs a Kubernetes client.
    pub fn needs_client(&self) -> bool {
        self.kubernetes
            || self.envoyfilter.is_some()
            || self.wasmplugin.is_some()
            || self.istio_gateway.is_some()
            || self.istio_clusters.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        watch: WatchArgs,
    }

    fn parse(flags: &[&str]) -> WatchArgs {
        let mut args = vec!["switchyard", "--kubernetes"];
        args.extend_from_slice(flags);
        Cli::try_parse_from(args).unwrap().watch
    }

    #[test]
    fn the_dashboard_is_on_loopback_for_a_bare_port_and_needs_a_token_beyond_it() {
        let (addr, access) = parse(&["--dashboard-listen", "9103"]).dashboard().unwrap().unwrap();
        assert_eq!(addr, SocketAddr::from(([127, 0, 0, 1], 9103)));
        assert!(!access.needs_token());
        let error = parse(&["--dashboard-listen", "0.0.0.0:9103"]).dashboard().unwrap_err();
        assert!(error.contains("--dashboard-token-file"), "{error}");
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "t0ken\n").unwrap();
        let token = token.to_str().unwrap();
        let guarded = parse(&["--dashboard-listen", "0.0.0.0:9103", "--dashboard-token-file", token]);
        assert!(guarded.dashboard().unwrap().unwrap().1.needs_token());
        assert_eq!(parse(&[]).dashboard().unwrap().map(|(addr, _)| addr), None);
        assert!(parse_dashboard_listen("localhost").unwrap_err().contains("ADDR:PORT"));
    }

    #[test]
    fn the_traffic_is_read_only_from_an_envoy_admin_address() {
        let ecds = ["--ecds-file", "/tmp/f.json", "--envoy-admin", "127.0.0.1:9901"];
        assert_eq!(parse(&ecds).traffic_every, None);
        let every = [&ecds[..], &["--traffic-every", "2s"]].concat();
        assert_eq!(parse(&every).traffic_every, Some(Duration::from_secs(2)));
        let alone = ["switchyard", "--kubernetes", "--traffic-every", "2s"];
        assert!(Cli::try_parse_from(alone)
            .unwrap_err()
            .to_string()
            .contains("--envoy-admin"));
    }

    #[test]
    fn durations_take_a_unit() {
        assert_eq!(parse_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("15").unwrap_err().contains("unit"));
        assert!(parse_duration("s").unwrap_err().contains("number"));
    }

    #[test]
    fn the_election_defaults_to_15s_10s_2s_and_the_clients_namespace() {
        let election = parse(&["--leader-elect"]).election("istio-system").unwrap();
        assert_eq!(election.lease(), "istio-system/switchyard");
        assert_eq!(
            (election.lease_duration, election.renew_deadline, election.retry_period),
            (Duration::from_secs(15), Duration::from_secs(10), Duration::from_secs(2))
        );
        let other = parse(&["--leader-elect", "--leader-elect-lease-namespace", "ops"]);
        assert_eq!(other.election("istio-system").unwrap().namespace, "ops");
    }

    #[test]
    fn the_renew_deadline_must_be_shorter_than_the_lease_and_the_retry_shorter_still() {
        let error = |flags: &[&str]| parse(flags).election("default").unwrap_err();
        assert!(error(&["--leader-elect-renew-deadline", "15s"])
            .contains("must be shorter than --leader-elect-lease-duration"));
        assert!(error(&["--leader-elect-retry-period", "10s"])
            .contains("must be shorter than --leader-elect-renew-deadline"));
        assert!(error(&["--leader-elect-lease-duration", "1500ms"]).contains("whole seconds"));
    }

    #[test]
    fn the_ecds_file_configures_the_wasm_filter_unless_the_module_is_asked_for() {
        let ecds = ["--ecds-file", "f.json"];
        let wasm = parse(&ecds).ecds_filter().unwrap();
        assert_eq!(wasm.form(), FilterForm::Wasm);
        let EcdsFilter::Wasm { wasm, runtime } = wasm else {
            panic!("the wasm form")
        };
        assert!(wasm.ends_with(DEFAULT_WASM) && wasm.is_absolute(), "{}", wasm.display());
        assert_eq!(runtime, DEFAULT_WASM_RUNTIME);
        let module = parse(&[&ecds[..], &["--filter-form", "module"]].concat());
        assert_eq!(
            module.ecds_filter(),
            Ok(EcdsFilter::Module {
                name: "switchyard_module".into()
            })
        );
        let named = parse(&[&ecds[..], &["--filter-form", "module", "--module-name", "m"]].concat());
        assert_eq!(named.ecds_filter(), Ok(EcdsFilter::Module { name: "m".into() }));
    }

    #[test]
    fn the_flags_of_one_form_are_refused_with_the_other() {
        let module = ["--ecds-file", "f.json", "--filter-form", "module"];
        let error = |flags: &[&str]| parse(flags).ecds_filter().unwrap_err();
        assert!(error(&[&module[..], &["--wasm", "f.wasm"]].concat()).starts_with("--wasm f.wasm: means nothing"));
        assert!(
            error(&[&module[..], &["--wasm-runtime", "envoy.wasm.runtime.wamr"]].concat())
                .starts_with("--wasm-runtime envoy.wasm.runtime.wamr: means nothing")
        );
        assert!(error(&["--ecds-file", "f.json", "--module-name", "m"]).contains("only for --filter-form module"));
        let without_ecds = Cli::try_parse_from(["switchyard", "--kubernetes", "--filter-form", "module"]);
        assert!(without_ecds.unwrap_err().to_string().contains("--ecds-file"));
    }
}
