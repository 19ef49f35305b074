//! Where the compiled output goes: one contract, [`Sink`], for every destination. Each sink is
//! handed the whole [`Output`] of a compilation (the table and the TransportServers' L4 routes, with
//! the table encoded once for all: [`Encoded`]) and reads the [`Part`] it carries.
//!
//! | sink | flag | part | writes to |
//! |---|---|---|---|
//! | [`ecds::EcdsFile`] (paced by [`envoy_admin`]) | `--ecds-file` | table | a file beside Envoy |
//! | table file | `-o` | table | a file |
//! | [`istio::IstioSink`] | `--wasmplugin`, `--envoyfilter` | table | the cluster |
//! | [`l4::LdsFile`] | `--lds-file` | L4 | a file beside Envoy |
//! | [`l4::IstioGateway`] (with [`credentials`]) | `--istio-gateway` | L4 | the cluster |
//! | [`ads::AdsServer`] | `--ads-listen` | clusters | Envoys over gRPC (endpoints) |
//! | [`clusters::ClustersDir`] | `--clusters-dir` | clusters | a file beside Envoy |
//!
//! What is common lives once, in [`delivery::Sinks`]: each sink is pushed only the part it does not
//! hold yet, a failed push is retried with the newest output, a failing sink is logged once when it
//! starts failing and once when it works again ([`crate::watch::state::Failures`]), and the sinks
//! that write to the cluster are written only while this replica leads. What differs stays with the
//! sink: a table too large for an Istio object is refused there ([`error::PushError::TooLarge`]) and not
//! retried until the table changes; the objects written to the cluster are followed by [`drift`]
//! and applied again when someone else deletes or changes them.
//!
//! Every sink is idempotent, so a failed push is simply retried with the newest output.

pub mod ads;
pub mod clusters;
pub mod credentials;
pub mod delivery;
pub mod drift;
pub mod ecds;
pub mod envoy_admin;
pub mod error;
pub mod https;
pub mod istio;
pub mod istio_clusters;
pub mod l4;

use std::path::PathBuf;
use std::sync::Arc;

use switchyard_compiler::l4::L4Routes;
use switchyard_compiler::upstream::Upstream;
use switchyard_table::TableSpec;

use crate::watch::sink::ads::AdsServer;
use crate::watch::sink::clusters::ClustersDir;
use crate::watch::sink::drift::Followed;
use crate::watch::sink::ecds::{write_atomically, EcdsFile};
use crate::watch::sink::error::PushError;
use crate::watch::sink::https::HttpsOutput;
use crate::watch::sink::istio::IstioSink;
use crate::watch::sink::istio_clusters::IstioClusters;
use crate::watch::sink::l4::{IstioGateway, LdsFile};

/// What one compilation gives the sinks: the table and the L4 routes.
#[derive(Debug, Clone)]
pub struct Output {
    /// The HTTP route table.
    pub table: Arc<TableSpec>,
    /// The compiler's content hash of each rule, when it gave them: they make the push diff of a big
    /// table cheap ([`crate::watch::diff::Compared`]).
    pub rule_hashes: Option<Arc<[u64]>>,
    /// The TransportServers' L4 routes.
    pub l4: Arc<L4Routes>,
    /// The HTTPS listener's certificates (ROUTING.md §8), which travel with the listeners.
    pub https: Arc<HttpsOutput>,
    /// The clusters and their endpoints (`--clusters-dir`; empty without it).
    pub upstream: Arc<Upstream>,
}

/// The part of the [`Output`] a sink carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The HTTP route table.
    Table,
    /// The L4 routes and the HTTPS listener (the listeners and their certificates; its HTTP
    /// routes, which are the gateway's).
    L4,
    /// The clusters and their endpoints.
    Clusters,
}

impl Part {
    /// Whether `a` and `b` agree on this part (the table by its content hash).
    pub fn same(self, a: &Output, b: &Output) -> bool {
        match self {
            Part::Table => a.table.generation == b.table.generation,
            Part::L4 => a.l4 == b.l4 && a.https == b.https && a.upstream.routes == b.upstream.routes,
            Part::Clusters => a.upstream == b.upstream,
        }
    }
}

/// An [`Output`] as the sinks take it, the table encoded once for all of them.
pub struct Encoded<'a> {
    /// The output.
    pub output: &'a Output,
    /// The table as the filter's plugin configuration (`--table-encoding`: the compact form or the
    /// JSON on one line).
    pub config: &'a str,
    /// The table's JSON indented, for people (`-o`); empty when no table file is pushed.
    pub pretty: &'a str,
}

/// One destination of the compiled output.
pub enum Sink {
    /// `--ecds-file`.
    Ecds(EcdsFile),
    /// `-o FILE`: the table as `switchyard compile` writes it.
    TableFile(PathBuf),
    /// `--envoyfilter` / `--wasmplugin`.
    Istio(IstioSink),
    /// `--lds-file`: the L4 routes as Envoy's listeners.
    Lds(LdsFile),
    /// `--istio-gateway`: the L4 routes as an Istio Gateway and VirtualService.
    IstioGateway(IstioGateway),
    /// `--ads-listen`: the clusters' endpoints, served to Envoy over ADS.
    Ads(AdsServer),
    /// `--clusters-dir`: the clusters as Envoy's CDS file.
    Clusters(ClustersDir),
    /// `--istio-clusters`: the variant clusters as an EnvoyFilter adding them to an Istio gateway.
    IstioClusters(IstioClusters),
}

impl Sink {
    /// The name used in logs, `/status` and metrics.
    pub fn name(&self) -> String {
        match self {
            Sink::Ecds(ecds) => format!("ecds-file {}", ecds.path.display()),
            Sink::TableFile(path) => format!("table-file {}", path.display()),
            Sink::Istio(istio) => istio.name(),
            Sink::Lds(lds) => lds.name(),
            Sink::IstioGateway(gateway) => gateway.name(),
            Sink::Ads(ads) => ads.name(),
            Sink::Clusters(clusters) => clusters.name(),
            Sink::IstioClusters(clusters) => clusters.name(),
        }
    }

    /// The part of the output it carries.
    pub fn part(&self) -> Part {
        match self {
            Sink::Ecds(_) | Sink::TableFile(_) | Sink::Istio(_) => Part::Table,
            Sink::Lds(_) | Sink::IstioGateway(_) => Part::L4,
            Sink::Ads(_) | Sink::Clusters(_) | Sink::IstioClusters(_) => Part::Clusters,
        }
    }

    /// Whether it writes to the cluster (only the leader does, with `--leader-elect`); file sinks
    /// are written by every replica.
    pub fn writes_to_cluster(&self) -> bool {
        matches!(self, Sink::Istio(_) | Sink::IstioGateway(_) | Sink::IstioClusters(_))
    }

    /// Whether it takes the table as the filter's plugin configuration ([`Encoded::config`]).
    pub fn needs_config(&self) -> bool {
        matches!(self, Sink::Ecds(_) | Sink::Istio(_))
    }

    /// Whether it takes the table's indented JSON ([`Encoded::pretty`]).
    pub fn needs_pretty(&self) -> bool {
        matches!(self, Sink::TableFile(_))
    }

    /// The objects it writes to the cluster, for [`drift`] to follow.
    pub fn followed(&self) -> Vec<Followed> {
        match self {
            Sink::Istio(istio) => vec![istio.followed()],
            Sink::IstioGateway(gateway) => gateway.followed(),
            Sink::IstioClusters(clusters) => vec![clusters.followed()],
            Sink::Ecds(_) | Sink::TableFile(_) | Sink::Lds(_) | Sink::Ads(_) | Sink::Clusters(_) => Vec::new(),
        }
    }

    /// Pushes its part of `output`. Files have no size limit.
    pub async fn push(&self, output: &Encoded<'_>) -> Result<(), PushError> {
        match self {
            Sink::Ecds(ecds) => Ok(ecds.write(output.config).await?),
            Sink::TableFile(path) => Ok(write_atomically(path, output.pretty.as_bytes())?),
            Sink::Istio(istio) => istio.apply(output.config).await,
            Sink::Lds(lds) => Ok(lds.write(&output.output.l4, &output.output.https, &output.output.upstream.routes)?),
            Sink::IstioGateway(gateway) => Ok(gateway.apply(&output.output.l4, &output.output.https).await?),
            Sink::Ads(ads) => {
                ads.publish(&output.output.upstream);
                Ok(())
            }
            Sink::Clusters(clusters) => Ok(clusters.write(&output.output.upstream)?),
            Sink::IstioClusters(clusters) => clusters.apply(&output.output.upstream).await,
        }
    }
}
