//! The upstream side for a plain Envoy: one cluster for every backend the table and the L4 routes
//! name, with the endpoints of its Service (issue "The upstream side"; `docs/deploy-envoy.md`,
//! "Clusters and endpoints").
//!
//! A backend's cluster name comes from the cluster template ([`Options::cluster`]), with the
//! settings the gateway speaks to it with when they are not the defaults ([`variant`]); this stage finds
//! the Service port behind each name by filling the template with every port of every Service, so
//! it works with any template. Then:
//!
//! - a Service of type `ExternalName` is a DNS cluster on its external name and the port;
//! - any other Service's endpoints are those of its EndpointSlices ([`endpoints`]): the ready
//!   ones, on the slice port of the Service port's name (its `targetPort` as resolved by
//!   Kubernetes, by name or number);
//! - a name whose Service is not in the input (a folder without Services, a Service deleted) has
//!   no cluster here: the gateway's own clusters (static ones, `envoy.yaml`) may still hold it, and
//!   [`Upstream::unknown`] names it.
//!
//! [`cds`] writes what Envoy reads.

pub mod affinity;
pub mod auth_service;
pub mod cds;
pub mod endpoints;
pub mod istio;
pub mod variant;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Service;
use serde::Serialize;
use switchyard_table::{ActionSpec, TableSpec};

use crate::https::SecretRef;
use crate::l4::L4Routes;
use crate::model::Options;
use crate::objects::secret::CA_CERTIFICATE;
use crate::objects::Objects;
use crate::route_config::GatewayRoutes;
use crate::upstream::auth_service::AuthService;
use crate::upstream::endpoints::{Endpoint, EndpointIndex};
use crate::upstream::variant::{UpstreamProtocol, Variant};

/// Every cluster the gateway needs, in name order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Upstream {
    /// The clusters, by name.
    pub clusters: Vec<UpstreamCluster>,
    /// The cluster names the table or the L4 routes use that no Service of the input makes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
    /// The cluster names whose backend's certificate is to be checked against a CA Secret that
    /// is not in the input, or holds no `ca.crt`: no cluster is made, so their requests fail
    /// rather than reach a backend unchecked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_ca: Vec<String>,
    /// The gateway's routes the table's rules need (their timeouts and retries).
    pub routes: GatewayRoutes,
}

/// One cluster: its name and where its endpoints come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UpstreamCluster {
    /// The cluster name (the template's).
    pub name: String,
    /// The Service behind it, `namespace/name:port`.
    pub service: String,
    /// How the gateway speaks to it.
    pub variant: Variant,
    /// Its endpoints.
    pub source: Endpoints,
    /// The PEM certificate authorities a [`variant::Verify`] checks the backend with (the CA
    /// Secret's `ca.crt`).
    #[serde(skip)]
    pub trusted_ca: Option<String>,
    /// The server name a TLS handshake sends without a [`variant::Verify`] (an auth service's
    /// host, as nginx's `proxy_ssl_server_name on` sends it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
}

/// Where a cluster's endpoints come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoints {
    /// The ready endpoints of the Service's EndpointSlices (Envoy's EDS).
    Slices(Vec<Endpoint>),
    /// The endpoints a control plane (istiod) holds for the Service port, which it serves over
    /// the proxy's ADS under `service_name`, its own cluster's name (Envoy's EDS with
    /// `eds_cluster_config.service_name`): a variant cluster beside Istio's.
    ControlPlane {
        /// The control plane's cluster name (the template's: `outbound|443||api.shop.svc.cluster.local`).
        service_name: String,
    },
    /// An `ExternalName` Service: Envoy resolves the name (a DNS cluster).
    Dns {
        /// The external name.
        host: String,
        /// The port.
        port: u16,
    },
}

/// The clusters of `table` and `l4` under `options`' template, from the Services and
/// EndpointSlices of `objects`.
pub fn plan(objects: &Objects, table: &TableSpec, l4: &L4Routes, options: &Options) -> Upstream {
    let mut upstream = Upstream {
        routes: GatewayRoutes::of(table),
        ..Upstream::default()
    };
    let wanted = cluster_names(table, l4);
    let bases: BTreeSet<&str> = wanted.iter().map(|name| Variant::of_cluster(name).0).collect();
    let mut ports: BTreeMap<String, (&Service, i32)> = BTreeMap::new();
    for service in &objects.services {
        for port in service_ports(service) {
            let name = options.cluster(namespace_of(service), name_of(service), port.port);
            if bases.contains(name.as_str()) {
                ports.entry(name).or_insert((service, port.port));
            }
        }
    }
    let index = EndpointIndex::new(&objects.endpoint_slices);
    for name in wanted {
        let (base, variant) = Variant::of_cluster(name);
        let Some((service, port)) = ports.get(base) else {
            upstream.unknown.push(name.to_owned());
            continue;
        };
        let (namespace, service_name) = (namespace_of(service), name_of(service));
        let spec = service.spec.as_ref();
        let source = match spec.filter(|s| s.type_.as_deref() == Some("ExternalName")) {
            Some(spec) => Endpoints::Dns {
                host: spec.external_name.clone().unwrap_or_default(),
                port: u16::try_from(*port).unwrap_or_default(),
            },
            None if variant.service_upstream => Endpoints::Slices(cluster_ip(service, *port)),
            None => {
                let port_name = (service_ports(service).find(|p| p.port == *port)).and_then(|p| p.name.as_deref());
                Endpoints::Slices(index.ready(namespace, service_name, port_name))
            }
        };
        let Some(trusted_ca) = upstream.trusted_ca(objects, name, &variant) else {
            continue;
        };
        upstream.clusters.push(UpstreamCluster {
            name: name.to_owned(),
            service: format!("{namespace}/{service_name}:{port}"),
            variant,
            source,
            trusted_ca,
            server_name: None,
        });
    }
    upstream.clusters.extend(auth_clusters(table));
    upstream.clusters.sort_by(|a, b| a.name.cmp(&b.name));
    upstream
}

/// The clusters of the auth services the rules' policies ask ([`AuthService`]).
fn auth_clusters(table: &TableSpec) -> Vec<UpstreamCluster> {
    let names: BTreeSet<&str> = (table.rules.iter())
        .filter_map(|rule| rule.policy.as_ref()?.external_auth.as_ref())
        .map(|auth| auth.cluster.as_str())
        .collect();
    (names.into_iter())
        .filter_map(|name| Some((name, AuthService::of_cluster(name)?)))
        .map(|(name, service)| UpstreamCluster {
            name: name.to_owned(),
            service: format!("auth service {}:{}", service.host, service.port),
            variant: Variant {
                protocol: if service.tls {
                    UpstreamProtocol::Tls
                } else {
                    UpstreamProtocol::Http
                },
                ..Variant::default()
            },
            server_name: service.tls.then(|| service.host.clone()),
            source: Endpoints::Dns {
                host: service.host,
                port: service.port,
            },
            trusted_ca: None,
        })
        .collect()
}

/// The `ca.crt` of Secret `reference`, when it is in the input and holds one.
fn trusted_ca(objects: &Objects, reference: &SecretRef) -> Option<String> {
    let secret = objects.secrets.iter().find(|s| {
        s.metadata.namespace.as_deref().unwrap_or("default") == reference.namespace
            && s.metadata.name.as_deref() == Some(reference.name.as_str())
    })?;
    let pem = String::from_utf8(secret.entry(CA_CERTIFICATE)?.to_vec()).ok()?;
    pem.contains("-----BEGIN CERTIFICATE-----").then_some(pem)
}

/// The clusters of `table` and `l4` that a control plane (Istio) does not make itself: one for every
/// variant (a cluster name with settings, [`variant`]), on the endpoints the control plane holds for
/// the template's cluster ([`Endpoints::ControlPlane`]). The template's own clusters are the
/// control plane's; a variant's Service need not be among `objects` (istiod knows it).
pub fn plan_variants(objects: &Objects, table: &TableSpec, l4: &L4Routes) -> Upstream {
    let mut upstream = Upstream {
        routes: GatewayRoutes::of(table),
        ..Upstream::default()
    };
    for name in cluster_names(table, l4) {
        let (base, variant) = Variant::of_cluster(name);
        if variant == Variant::default() {
            continue;
        }
        let Some(trusted_ca) = upstream.trusted_ca(objects, name, &variant) else {
            continue;
        };
        upstream.clusters.push(UpstreamCluster {
            name: name.to_owned(),
            service: base.to_owned(),
            variant,
            source: Endpoints::ControlPlane {
                service_name: base.to_owned(),
            },
            trusted_ca,
            server_name: None,
        });
    }
    upstream.clusters.extend(auth_clusters(table));
    upstream.clusters.sort_by(|a, b| a.name.cmp(&b.name));
    upstream
}

impl Upstream {
    /// The CA cluster `name` checks its backend's certificate with (`Some(None)` when it checks
    /// none); `None` when its CA Secret is missing, and the name is listed in
    /// [`Upstream::missing_ca`].
    fn trusted_ca(&mut self, objects: &Objects, name: &str, variant: &Variant) -> Option<Option<String>> {
        let Some(verify) = &variant.verify else {
            return Some(None);
        };
        match trusted_ca(objects, &verify.ca) {
            Some(ca) => Some(Some(ca)),
            None => {
                self.missing_ca.push(name.to_owned());
                None
            }
        }
    }
}

/// Every cluster name the rules (backends and canaries) and the L4 routes send to.
fn cluster_names<'t>(table: &'t TableSpec, l4: &'t L4Routes) -> BTreeSet<&'t str> {
    let mut names = BTreeSet::new();
    for rule in &table.rules {
        if let ActionSpec::Route(route) = &rule.action {
            names.extend(route.backends.iter().map(|b| b.cluster.as_str()));
            names.extend(route.canary.iter().map(|c| c.cluster.as_str()));
        }
    }
    let l4_routes = l4.passthrough.iter().chain(l4.listeners.iter().flat_map(|l| &l.routes));
    names.extend(l4_routes.map(|r| r.cluster.as_str()));
    names
}

/// ingress-nginx's `service-upstream`: the Service's cluster IP and port as the one endpoint (none
/// for a headless Service or one without an IP yet).
fn cluster_ip(service: &Service, port: i32) -> Vec<Endpoint> {
    let ip = service.spec.as_ref().and_then(|s| s.cluster_ip.as_deref());
    match (
        ip.filter(|ip| ip.parse::<std::net::IpAddr>().is_ok()),
        u16::try_from(port),
    ) {
        (Some(ip), Ok(port)) => vec![Endpoint {
            address: ip.to_owned(),
            port,
        }],
        _ => Vec::new(),
    }
}

fn service_ports(service: &Service) -> impl Iterator<Item = &k8s_openapi::api::core::v1::ServicePort> {
    (service.spec.iter()).flat_map(|s| s.ports.iter().flatten())
}

fn namespace_of(service: &Service) -> &str {
    service.metadata.namespace.as_deref().unwrap_or("default")
}

fn name_of(service: &Service) -> &str {
    service.metadata.name.as_deref().unwrap_or_default()
}
