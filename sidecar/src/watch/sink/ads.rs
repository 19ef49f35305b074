//! `--ads-listen ADDR`: the clusters' endpoints served to Envoy over ADS (Envoy's aggregated
//! discovery service, gRPC), state of the world, EDS only (`docs/deploy-envoy.md`, "Clusters and
//! endpoints"). The clusters themselves stay a file (`--clusters-dir`,
//! [`crate::watch::sink::clusters`]), each naming ADS as its EDS source.
//!
//! Why not a file per cluster: Envoy's file subscription opens an inotify instance of its own per
//! file, and the kernel's default limit is 128 per user: past about a hundred clusters Envoy
//! aborts at start (`inotify_fd_ >= 0`). One ADS stream carries every cluster's endpoints.
//!
//! Per stream (one per Envoy, normally the one beside this watch): Envoy names the clusters it
//! wants (`resource_names`); the server answers with the `ClusterLoadAssignment` of each one whose
//! endpoints this Envoy does not hold yet, and pushes a cluster's again whenever its endpoints
//! change. EDS lets a response carry only some of the clusters, so a pod that comes or goes sends
//! one small assignment. A cluster with no Service (or no ready endpoint) gets an empty one, so
//! that it does not wait for its initial fetch timeout. An update Envoy refuses (a NACK: its
//! `error_detail`) is counted (`/status` `envoy_refused`, `switchyard_envoy_refused_total`) and
//! logged once per message; Envoy keeps the cluster's last good endpoints.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use switchyard_compiler::order::fnv1a;
use switchyard_compiler::upstream::{Endpoints, Upstream};
use switchyard_xds::messages::{DiscoveryRequest, DiscoveryResponse};
use switchyard_xds::prost::Message;
use switchyard_xds::{load_assignment, LOAD_ASSIGNMENT};
use tokio::sync::{mpsc, watch};
use tonic::codegen::{http, BoxFuture, Context, Poll, Service};
use tonic::server::NamedService;
use tracing::{info, warn};

use crate::watch::state::Shared;

/// The gRPC method Envoy calls.
const METHOD: &str = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";

/// The ADS server: the newest clusters, handed to every stream.
#[derive(Debug)]
pub struct AdsServer {
    /// Where it listens.
    pub addr: SocketAddr,
    upstream: watch::Sender<Arc<Upstream>>,
}

impl AdsServer {
    /// Binds `listen` and serves there from now on (in a task of its own); Envoy's refusals are
    /// counted in `state`.
    pub async fn start(listen: SocketAddr, state: Shared) -> Result<AdsServer, String> {
        let listener = (tokio::net::TcpListener::bind(listen).await)
            .map_err(|e| format!("--ads-listen {listen}: cannot listen: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("--ads-listen {listen}: {e}"))?;
        let (upstream, _) = watch::channel(Arc::new(Upstream::default()));
        let service = Ads {
            upstream: upstream.subscribe(),
            refused: Arc::default(),
            state,
        };
        tokio::spawn(async move {
            let served = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                .await;
            if let Err(e) = served {
                warn!("ads-listen {addr}: stopped serving: {e}");
            }
        });
        info!("serving the clusters' endpoints over ADS on {addr}");
        Ok(AdsServer { addr, upstream })
    }

    /// The name used in logs, `/status` and metrics.
    pub fn name(&self) -> String {
        format!("ads-listen {}", self.addr)
    }

    /// Hands `upstream` to every stream (each sends what changed for its Envoy).
    pub fn publish(&self, upstream: &Arc<Upstream>) {
        self.upstream.send_replace(upstream.clone());
    }
}

/// The gRPC service.
#[derive(Clone)]
struct Ads {
    upstream: watch::Receiver<Arc<Upstream>>,
    /// The refusals already logged.
    refused: Arc<Mutex<BTreeSet<String>>>,
    /// Where refusals are counted (`/status` `envoy_refused`, `switchyard_envoy_refused_total`).
    state: Shared,
}

impl NamedService for Ads {
    const NAME: &'static str = "envoy.service.discovery.v3.AggregatedDiscoveryService";
}

impl Service<http::Request<tonic::body::Body>> for Ads {
    type Response = http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        if request.uri().path() != METHOD {
            return Box::pin(async { Ok(tonic::Status::unimplemented("only StreamAggregatedResources").into_http()) });
        }
        let stream = Stream(self.clone());
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::default());
            Ok(grpc.streaming(stream, request).await)
        })
    }
}

/// One Envoy's stream.
struct Stream(Ads);

type Responses = futures::stream::BoxStream<'static, Result<DiscoveryResponse, tonic::Status>>;

impl Service<tonic::Request<tonic::Streaming<DiscoveryRequest>>> for Stream {
    type Response = tonic::Response<Responses>;
    type Error = tonic::Status;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: tonic::Request<tonic::Streaming<DiscoveryRequest>>) -> Self::Future {
        let (tx, rx) = mpsc::channel(16);
        let ads = self.0.clone();
        tokio::spawn(serve(request.into_inner(), tx, ads));
        let responses = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|r| (Ok(r), rx)) });
        Box::pin(async move { Ok(tonic::Response::new(responses.boxed())) })
    }
}

/// What one Envoy asked for and holds.
#[derive(Default)]
struct Held {
    /// The clusters it asked for.
    wanted: BTreeSet<String>,
    /// What it was sent of each (a hash of the assignment).
    sent: BTreeMap<String, u64>,
    /// Responses sent so far (the nonce of the next).
    responses: u64,
}

impl Held {
    /// The response carrying the assignments of the wanted clusters that changed since sent,
    /// if any.
    fn changes(&mut self, upstream: &Upstream) -> Option<DiscoveryResponse> {
        let mut resources = Vec::new();
        for name in &self.wanted {
            let endpoints: Vec<(&str, u16)> = match upstream.clusters.binary_search_by(|c| c.name.as_str().cmp(name)) {
                Ok(i) => match &upstream.clusters[i].source {
                    Endpoints::Slices(endpoints) => endpoints.iter().map(|e| (e.address.as_str(), e.port)).collect(),
                    // Not this server's to serve.
                    Endpoints::Dns { .. } | Endpoints::ControlPlane { .. } => continue,
                },
                Err(_) => Vec::new(),
            };
            let resource = load_assignment(name, &endpoints);
            let hash = fnv1a(&resource.encode_to_vec());
            if self.sent.insert(name.clone(), hash) != Some(hash) {
                resources.push(resource);
            }
        }
        if resources.is_empty() {
            return None;
        }
        self.responses += 1;
        Some(DiscoveryResponse {
            version_info: self.responses.to_string(),
            resources,
            type_url: LOAD_ASSIGNMENT.to_owned(),
            nonce: self.responses.to_string(),
        })
    }
}

/// Answers one stream until Envoy closes it.
async fn serve(mut requests: tonic::Streaming<DiscoveryRequest>, tx: mpsc::Sender<DiscoveryResponse>, mut ads: Ads) {
    let mut held = Held::default();
    loop {
        let response = tokio::select! {
            request = requests.message() => {
                let Ok(Some(request)) = request else { return };
                if request.type_url != LOAD_ASSIGNMENT {
                    continue;
                }
                if let Some(refusal) = &request.error_detail {
                    refused(&ads, &request, &refusal.message);
                }
                held.wanted = request.resource_names.into_iter().collect();
                held.sent.retain(|name, _| held.wanted.contains(name));
                let upstream = ads.upstream.borrow().clone();
                held.changes(&upstream)
            }
            changed = ads.upstream.changed() => {
                if changed.is_err() {
                    return;
                }
                let upstream = ads.upstream.borrow_and_update().clone();
                held.changes(&upstream)
            }
        };
        if let Some(response) = response {
            if tx.send(response).await.is_err() {
                return;
            }
        }
    }
}

/// Counts a refusal, and logs it once per message.
fn refused(ads: &Ads, request: &DiscoveryRequest, message: &str) {
    {
        let mut state = ads.state.lock();
        state.envoy_refused.0 += 1;
        state.envoy_refused.1 = Some(message.to_owned());
    }
    let mut logged = ads.refused.lock().unwrap_or_else(|e| e.into_inner());
    if logged.insert(message.to_owned()) {
        let node = request.node.as_ref().map_or("", |n| n.id.as_str());
        warn!(
            node,
            "Envoy refused an endpoints update (it keeps the last good ones): {message}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_compiler::upstream::endpoints::Endpoint;
    use switchyard_compiler::upstream::UpstreamCluster;
    use switchyard_xds::messages::ClusterLoadAssignment;

    fn upstream(web: &[&str]) -> Upstream {
        let endpoint = |address: &&str| Endpoint {
            address: (*address).to_owned(),
            port: 8080,
        };
        Upstream {
            clusters: vec![
                UpstreamCluster {
                    name: "shop/api:80".into(),
                    service: "shop/api:80".into(),
                    variant: Default::default(),
                    trusted_ca: None,
                    server_name: None,
                    source: Endpoints::Slices(vec![endpoint(&"10.0.0.9")]),
                },
                UpstreamCluster {
                    name: "shop/ext:443".into(),
                    service: "shop/ext:443".into(),
                    variant: Default::default(),
                    trusted_ca: None,
                    server_name: None,
                    source: Endpoints::Dns {
                        host: "api.example.org".into(),
                        port: 443,
                    },
                },
                UpstreamCluster {
                    name: "shop/web:80".into(),
                    service: "shop/web:80".into(),
                    variant: Default::default(),
                    trusted_ca: None,
                    server_name: None,
                    source: Endpoints::Slices(web.iter().map(endpoint).collect()),
                },
            ],
            ..Upstream::default()
        }
    }

    /// The clusters a response carries, each with its endpoints' addresses.
    fn carried(response: &DiscoveryResponse) -> Vec<(String, usize)> {
        (response.resources.iter())
            .map(|any| {
                let assignment = ClusterLoadAssignment::decode(any.value.as_slice()).unwrap();
                (assignment.cluster_name, assignment.endpoints[0].lb_endpoints.len())
            })
            .collect()
    }

    #[test]
    fn a_stream_is_sent_each_wanted_cluster_once_then_only_the_ones_that_changed() {
        let mut held = Held {
            wanted: ["shop/api:80", "shop/gone:80", "shop/web:80"].map(str::to_owned).into(),
            ..Held::default()
        };
        let first = held.changes(&upstream(&["10.0.0.1"])).unwrap();
        assert_eq!(
            carried(&first),
            [
                ("shop/api:80".to_owned(), 1),
                ("shop/gone:80".to_owned(), 0),
                ("shop/web:80".to_owned(), 1)
            ],
            "every wanted cluster, one without a Service empty"
        );
        assert_eq!((first.type_url.as_str(), first.nonce.as_str()), (LOAD_ASSIGNMENT, "1"));
        assert_eq!(
            held.changes(&upstream(&["10.0.0.1"])),
            None,
            "nothing changed, nothing sent"
        );
        let second = held.changes(&upstream(&["10.0.0.1", "10.0.0.2"])).unwrap();
        assert_eq!(
            carried(&second),
            [("shop/web:80".to_owned(), 2)],
            "only the changed cluster"
        );
        assert_eq!(second.nonce, "2");
    }

    #[test]
    fn a_dns_cluster_is_never_sent_over_eds() {
        let mut held = Held {
            wanted: ["shop/ext:443".to_owned()].into(),
            ..Held::default()
        };
        assert_eq!(held.changes(&upstream(&[])), None);
    }
}
