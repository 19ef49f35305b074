//! `switchyard watch`: sources → the same pipeline as `switchyard compile` → sinks, for as long as
//! it runs.
//!
//! # The rooms
//!
//! Each room imports only rooms below it in this list (no cycle):
//!
//! | room | holds |
//! |---|---|
//! | this file | [`run`]: the flags wired into sources, engine, sinks, servers and election |
//! | [`args`] | the flags of `switchyard watch` and their checks |
//! | [`rebuild`] | the one loop: wait for a burst of changes to settle, read the source, rebuild; retry failed pushes, repair drifted objects, take over on becoming the leader |
//! | [`engine`] | one rebuild: compile (incrementally when it can), record the status, hand the output to the sinks, count and log the tables pushed with their [`diff`] |
//! | [`source`] | where input comes from: the [`source::Source`] trait and its [`source::Snapshot`]; [`source::folder`], [`source::kubernetes`] (with its [`source::store`]s), [`source::debounce`] |
//! | [`sink`] | where output goes: the one [`sink::Sink`] contract, its [`sink::error`]s, and [`sink::delivery`] (change detection, retry, failures said once); [`sink::ecds`] (paced by [`sink::envoy_admin`]), the table file, [`sink::istio`], [`sink::l4`] (LDS file, Istio Gateway); [`sink::drift`] repairs what someone else changed |
//! | [`status`] | status write-back: conditions, load balancers and events on the resources (NGINX's kinds in [`status`]'s `nginx`) |
//! | [`serve`] | the two HTTP addresses: `--listen` (`/healthz`, `/readyz`, [`serve::metrics`]) and `--dashboard-listen` (`/table`, `/status`, the [`serve::dashboard`]) |
//! | [`lead`] | replicas (`--leader-elect`): [`lead::lease`] elects, the [`lead::leader`] gate lets only the leader write to the cluster |
//! | [`state`] | what the running watch knows about itself, shared by all of the above |
//! | [`traffic`] | the gateway's traffic per resource, read from Envoy's stats (`--envoy-admin`): Prometheus text parsed, counter resets handled, rates over the last minutes |
//! | [`cluster`] | what every room that talks to the API server shares: the field manager, watchers that outlive outages |
//! | [`diff`] | what changed between two tables, for the push log |
//!
//! # The data path
//!
//! A source signals a change → [`rebuild::run`] lets it settle → [`source::Source::read`] →
//! [`engine::Engine::rebuild`] compiles a [`sink::Output`] (the table and the L4 routes) →
//! [`sink::delivery::Sinks`] pushes it to each sink that does not hold it →
//! [`source::Source::rebuilt`] (the cluster writes the statuses back, [`status`]). [`state::Shared`]
//! records each step for [`serve`].

pub mod args;
pub mod cluster;
pub mod diff;
pub mod engine;
pub mod lead;
pub mod rebuild;
pub mod serve;
pub mod sink;
pub mod source;
pub mod state;
pub mod status;
pub mod traffic;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tracing::{error, info};

use crate::watch::args::WatchArgs;
use crate::watch::engine::Engine;
use crate::watch::lead::leader::Leader;
use crate::watch::lead::lease::Elector;
use crate::watch::sink::ads::AdsServer;
use crate::watch::sink::clusters::ClustersDir;
use crate::watch::sink::ecds::{EcdsEncoding, EcdsFile};
use crate::watch::sink::envoy_admin::EnvoyAdmin;
use crate::watch::sink::https::SdsFolder;
use crate::watch::sink::istio::{parse_target, IstioKind, IstioSettings, IstioSink};
use crate::watch::sink::istio_clusters::IstioClusters;
use crate::watch::sink::l4::{IstioGateway, LdsFile};
use crate::watch::sink::Sink;
use crate::watch::source::debounce::Debounce;
use crate::watch::source::folder::Watched;
use crate::watch::state::Shared;
use switchyard_compiler::l4_istio::IstioGatewayOptions;

/// Runs `switchyard watch` until Ctrl-C or SIGTERM; `Err` is the message for a fatal error.
pub fn run(args: WatchArgs) -> Result<(), String> {
    // Our own lines only: kube's client and watchers log every retry (one line per second during an
    // outage); the sources log each state change once instead. --verbose adds their warnings.
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let (ours, others) = if args.verbose {
        (LevelFilter::DEBUG, LevelFilter::WARN)
    } else {
        (LevelFilter::INFO, LevelFilter::OFF)
    };
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(LevelFilter::DEBUG)
        .with_target(false)
        .with_ansi(ansi)
        .finish()
        .with(Targets::new().with_target("switchyard", ours).with_default(others))
        .try_init();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async {
        let elector = std::sync::Mutex::new(None);
        let result = tokio::select! {
            result = watch(args, &elector) => result,
            () = shutdown() => {
                info!("stopping");
                Ok(())
            }
        };
        // Stop writing, and hand the Lease over at once rather than let it expire.
        let elector = elector.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some((elector, within)) = elector {
            Elector::resign(elector, within).await;
        }
        result
    })
}

/// Runs `future` to its end on a runtime of its own, as `switchyard watch` runs (one thread): for
/// unit tests of async code.
#[cfg(test)]
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// Binds `addr` (the address given by `flag`) and serves `router` on it; `Ok`: the bound address.
async fn listen(flag: &str, addr: SocketAddr, router: axum::Router) -> Result<SocketAddr, String> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("{flag} {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| format!("{flag} {addr}: {e}"))?;
    let flag = flag.to_owned();
    tokio::spawn(async move {
        if let Err(e) = serve::serve(listener, router).await {
            error!("the server of {flag} stopped: {e}");
        }
    });
    Ok(bound)
}

/// The elector once started, and how long its resignation may take.
type Resigning = std::sync::Mutex<Option<(Elector, Duration)>>;

async fn shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

async fn watch(args: WatchArgs, elector: &Resigning) -> Result<(), String> {
    let mut options = args.table.options(&args.l4)?;
    // The clusters this watch makes include the variants (docs/routing.md, "The upstream side").
    options.upstream_variants |= args.clusters_dir.is_some() || args.istio_clusters.is_some();
    // And the routes, beside the clusters (docs/routing.md, "Timeouts and retries").
    options.gateway_routes |= args.clusters_dir.is_some();
    let dashboard = args.dashboard()?;
    let controller_name = options.controller_name.clone();
    let state = Shared::default();
    let client = if args.needs_client() {
        Some(
            kube::Client::try_default()
                .await
                .map_err(|e| format!("cannot reach Kubernetes (kubeconfig or in-cluster): {e}"))?,
        )
    } else {
        None
    };
    let ads = match args.ads_listen {
        Some(listen) => Some(AdsServer::start(listen, state.clone()).await?),
        None => None,
    };
    let sinks = sinks(&args, client.as_ref(), ads)?;
    for dir in &args.manifests {
        check_outputs_outside(dir, &args)?;
    }
    if let Some(addr) = args.listen {
        let bound = listen("--listen", addr, serve::operations_router(state.clone())).await?;
        info!("listening on http://{bound} (/healthz /readyz /metrics)");
    }
    if let Some((addr, access)) = dashboard {
        let guarded = match access.needs_token() {
            true => "a token is asked for",
            false => "no token: keep it on loopback",
        };
        let router = serve::dashboard_router(state.clone(), access);
        let bound = listen("--dashboard-listen", addr, router).await?;
        info!("dashboard on http://{bound}/ (/table /status POST /explain; {guarded})");
        if let Some(admin) = args.envoy_admin {
            let every = args.traffic_every.unwrap_or(traffic::POLL_EVERY);
            if every.is_zero() {
                return Err("--traffic-every: give a duration above zero (10s, 500ms)".to_owned());
            }
            state.lock().traffic = traffic::Traffic::from_envoy(admin, every);
            tokio::spawn(read_traffic(admin, every, state.clone()));
        }
    }
    let leader = match (&client, args.leader_elect) {
        (_, false) => Leader::always(),
        (None, true) => {
            return Err("--leader-elect needs a cluster: --kubernetes, --envoyfilter or --wasmplugin".to_owned())
        }
        (Some(client), true) => {
            let election = args.election(client.default_namespace())?;
            let leader = Leader::elected();
            state.lock().leadership = crate::watch::state::Leadership {
                leading: false,
                lease: Some(election.lease()),
                identity: Some(election.identity.clone()),
                holder: None,
                error: None,
            };
            let within = election.renew_deadline;
            let started = Elector::start(client.clone(), election, leader.clone(), state.clone());
            *elector.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some((started, within));
            leader
        }
    };
    let engine = Engine::new(options, sinks, state.clone())
        .with_encoding(args.table_encoding)
        .led_by(leader.clone());
    let debounce = Debounce {
        quiet: Duration::from_millis(args.debounce_ms),
        max: Duration::from_millis(args.debounce_max_ms.max(args.debounce_ms)),
    };
    match (args.manifests.is_empty(), client) {
        (false, _) => {
            let rescan = Duration::from_secs(args.rescan_secs.max(1));
            let config_map = engine.options().ingress_nginx.configmap.clone();
            let (folder, changes) = Watched::start(&args.manifests, rescan, config_map)?;
            info!("watching {}", folder.names());
            rebuild::run(folder, changes, engine, debounce).await
        }
        (true, Some(client)) => {
            let settings = crate::watch::source::kubernetes::Settings {
                namespaces: args.namespaces.clone(),
                publish_addresses: args.publish_address.clone(),
                write_status: !args.no_status_write,
                httpproxy: !args.without_httpproxy,
                virtualserver: !args.without_virtualserver,
                transportserver: !args.without_transportserver,
                endpoints: args.ads_listen.is_some(),
                controller_name,
                leader,
            };
            rebuild::follow(client, settings, engine, state, debounce).await
        }
        (true, None) => Err("give --manifests DIR or --kubernetes".to_owned()),
    }
}

/// Reads the gateway's traffic from Envoy's admin API at `admin` every `every`, for as long as the
/// watch runs ([`traffic`]).
async fn read_traffic(admin: SocketAddr, every: Duration, state: Shared) {
    let started = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let answer = sink::envoy_admin::get(admin, traffic::STATS_PATH).await;
        let at_unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let at = started.elapsed().as_secs_f64();
        state.lock().traffic.read(at, at_unix_ms, answer);
    }
}

/// The sinks the flags name, table sinks first.
fn sinks(args: &WatchArgs, client: Option<&kube::Client>, ads: Option<AdsServer>) -> Result<Vec<Sink>, String> {
    let mut sinks = Vec::new();
    if let Some(path) = &args.ecds_file {
        EcdsEncoding::of(path)?;
        sinks.push(Sink::Ecds(EcdsFile {
            path: path.clone(),
            filter_name: args.filter_name.clone(),
            filter: args.ecds_filter()?,
            admin: args.envoy_admin.map(|addr| EnvoyAdmin {
                addr,
                filter_name: args.filter_name.clone(),
            }),
        }));
    }
    if let Some(path) = &args.output {
        sinks.push(Sink::TableFile(path.clone()));
    }
    let settings = IstioSettings {
        selector: args.selector()?,
        wasm_url: args.wasm_url.clone().unwrap_or_default(),
        wasm_path: args.gateway_wasm_path.clone(),
        filter_name: args.filter_name.clone(),
        runtime: args.wasm_runtime.clone(),
    };
    for (target, kind) in [
        (&args.envoyfilter, IstioKind::EnvoyFilter),
        (&args.wasmplugin, IstioKind::WasmPlugin),
    ] {
        if let (Some(target), Some(client)) = (target, client) {
            let (namespace, name) = parse_target(target)?;
            let mut sink = IstioSink::new(client.clone(), kind, namespace, name, settings.clone());
            sink.max_bytes = args.istio_max_bytes;
            sinks.push(Sink::Istio(sink));
        }
    }
    if let Some(path) = &args.lds_file {
        let sds = match (&args.sds_dir, &args.ecds_file) {
            (Some(dir), Some(ecds)) => Some(Arc::new(SdsFolder::new(
                dir.clone(),
                ecds,
                (&args.filter_name, args.filter_form.type_url()),
                (&args.table.options(&args.l4)?.cluster_header, args.reject_unknown_sni),
            )?)),
            _ => None,
        };
        sinks.push(Sink::Lds(LdsFile {
            path: path.clone(),
            options: args.l4.options(),
            sds,
        }));
    }
    // The endpoints first: a cluster the CDS file adds finds them when Envoy asks.
    if let Some(ads) = ads {
        sinks.push(Sink::Ads(ads));
    }
    if let Some(dir) = &args.clusters_dir {
        sinks.push(Sink::Clusters(ClustersDir::new(dir)));
    }
    if let (Some(target), Some(client)) = (&args.istio_clusters, client) {
        let mut sink = IstioClusters::new(client.clone(), parse_target(target)?, args.selector()?);
        sink.max_bytes = args.istio_max_bytes;
        sinks.push(Sink::IstioClusters(sink));
    }
    if let (Some(target), Some(client)) = (&args.istio_gateway, client) {
        let (namespace, name) = parse_target(target)?;
        let options = IstioGatewayOptions {
            namespace,
            name,
            selector: args.selector()?,
            passthrough_port: args.l4.options().passthrough_port,
            reject_unknown_sni: args.reject_unknown_sni,
        };
        sinks.push(Sink::IstioGateway(IstioGateway::new(client.clone(), options)?));
    }
    if args.reject_unknown_sni && args.sds_dir.is_none() && args.istio_gateway.is_none() {
        return Err(
            "--reject-unknown-sni: give --sds-dir DIR or --istio-gateway NS/NAME: it says how they serve HTTPS"
                .to_owned(),
        );
    }
    if sinks.is_empty() {
        return Err(
            "nothing to push to: give --ecds-file PATH, -o FILE, --envoyfilter NS/NAME, --wasmplugin NS/NAME, --lds-file PATH, --clusters-dir DIR, --istio-clusters NS/NAME or --istio-gateway NS/NAME"
                .to_owned(),
        );
    }
    Ok(sinks)
}

/// Refuses outputs inside the watched folder: each push would look like a change of the input.
fn check_outputs_outside(dir: &Path, args: &WatchArgs) -> Result<(), String> {
    let dir = std::fs::canonicalize(dir).map_err(|e| format!("--manifests {}: {e}", dir.display()))?;
    for (flag, path) in [
        ("--ecds-file", &args.ecds_file),
        ("-o", &args.output),
        ("--lds-file", &args.lds_file),
    ] {
        let Some(path) = path else { continue };
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        let parent = absolute.parent().and_then(|p| std::fs::canonicalize(p).ok());
        if parent.is_some_and(|p| p.starts_with(&dir)) {
            return Err(format!(
                "{flag} {}: must not be inside the watched folder {}",
                path.display(),
                dir.display()
            ));
        }
    }
    Ok(())
}
