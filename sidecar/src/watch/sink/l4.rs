//! The L4 sinks of `switchyard watch` (ROUTING.md §6, TransportServer): what the TransportServers
//! that won route, beside the HTTP table.
//!
//! - `--lds-file PATH`: Envoy's listeners as an LDS `DiscoveryResponse`
//!   ([`switchyard_compiler::lds`]), replaced atomically like the ECDS file. Written by every replica
//!   (it sits beside its Envoy).
//! - `--istio-gateway NAMESPACE/NAME`: an Istio Gateway and a VirtualService of that name
//!   ([`switchyard_compiler::l4_istio`]), server-side applied with Switchyard's field manager, by the
//!   leader only; the Gateway's HTTPS servers name copies of the certificates in its namespace
//!   ([`crate::watch::sink::credentials`]). Istio's Gateway has no UDP: UDP listeners are logged once
//!   as left out. Both objects are followed ([`crate::watch::sink::drift`]) and applied again when
//!   deleted or changed by someone else. Istio's validation refuses a Gateway without servers and
//!   a VirtualService without routes: one with nothing to carry is deleted instead.
//!
//! Both are [`crate::watch::sink::Sink`]s that read the output's L4 routes and HTTPS plan: each takes them only
//! when they changed (the HTTP table may change without them, and the other way round), and a failed
//! push is retried with the newest routes, like the table's ([`crate::watch::sink::delivery`]).

use std::path::PathBuf;
use std::sync::Arc;

use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::Value;
use switchyard_compiler::https::listener::HttpsOptions;
use switchyard_compiler::l4::L4Routes;
use switchyard_compiler::l4_istio::{gateway, unsupported, virtual_service, IstioGatewayOptions};
use switchyard_compiler::lds::{self, LdsOptions};
use switchyard_compiler::route_config::GatewayRoutes;
use tracing::warn;

use crate::watch::cluster::FIELD_MANAGER;
use crate::watch::sink::credentials::Credentials;
use crate::watch::sink::drift::{forget_applied, record_applied, AppliedSlot, Followed};
use crate::watch::sink::ecds::write_atomically;
use crate::watch::sink::https::{fake_certificate, HttpsOutput, SdsFolder};

/// `--lds-file`: Envoy's listeners.
#[derive(Debug, Clone)]
pub struct LdsFile {
    /// The file Envoy's `lds_config.path_config_source` names.
    pub path: PathBuf,
    /// Where the listeners listen.
    pub options: LdsOptions,
    /// `--sds-dir`: the HTTPS listener's certificates, when it serves HTTPS (ROUTING.md §8).
    pub sds: Option<Arc<SdsFolder>>,
}

impl LdsFile {
    /// The name used in logs, `/status` and metrics.
    pub fn name(&self) -> String {
        format!("lds-file {}", self.path.display())
    }

    /// Writes the certificates of `https` (when serving HTTPS), then the listeners of `routes`
    /// that name them, the HTTPS listener's HTTP routed by `gateway` (as the plain listener's).
    pub fn write(&self, routes: &L4Routes, https: &HttpsOutput, gateway: &GatewayRoutes) -> Result<(), String> {
        let Some(sds) = &self.sds else {
            return write_atomically(&self.path, lds::document(routes, &self.options).as_bytes());
        };
        sds.write(https)?;
        let options = LdsOptions {
            https: Some(HttpsOptions {
                routes: GatewayRoutes {
                    cluster_header: sds.options.routes.cluster_header.clone(),
                    ..gateway.clone()
                },
                ..sds.options.clone()
            }),
            ..self.options.clone()
        };
        write_atomically(
            &self.path,
            lds::https_document(routes, &https.plan, &options).as_bytes(),
        )
    }
}

/// `--istio-gateway`: a Gateway and a VirtualService, and the Gateway's certificates.
#[derive(Clone)]
pub struct IstioGateway {
    /// The client.
    pub client: Client,
    /// Their namespace, name, selector and passthrough port.
    pub options: IstioGatewayOptions,
    /// What we last applied to the Gateway and to the VirtualService (shared with
    /// [`crate::watch::sink::drift`], which follows them).
    pub applied: [AppliedSlot; 2],
    /// The copies of the certificates its HTTPS servers name.
    credentials: Credentials,
}

impl IstioGateway {
    /// A sink applying the Gateway and VirtualService `options` name, with a default certificate
    /// made now.
    pub fn new(client: Client, options: IstioGatewayOptions) -> Result<IstioGateway, String> {
        let credentials = Credentials::new(client.clone(), &options.namespace, &options.name, fake_certificate()?);
        Ok(IstioGateway {
            client,
            options,
            applied: Default::default(),
            credentials,
        })
    }

    /// The name used in logs, `/status` and metrics.
    pub fn name(&self) -> String {
        format!("istio-gateway {}/{}", self.options.namespace, self.options.name)
    }

    /// The objects it writes to the cluster, for [`crate::watch::sink::drift`] to follow.
    pub fn followed(&self) -> Vec<Followed> {
        ["Gateway", "VirtualService"]
            .into_iter()
            .zip(&self.applied)
            .map(|(kind, applied)| Followed {
                client: self.client.clone(),
                resource: istio_resource(kind),
                namespace: self.options.namespace.clone(),
                name: self.options.name.clone(),
                sink: self.name(),
                applied: applied.clone(),
            })
            .collect()
    }

    /// Server-side applies the Gateway and the VirtualService of `routes` and `https`: the copies
    /// of the certificates first, the Gateway that names them next, and the copies it no longer
    /// names are deleted last.
    pub async fn apply(&self, routes: &L4Routes, https: &HttpsOutput) -> Result<(), String> {
        let options = &self.options;
        for listener in unsupported(routes) {
            warn!(
                "istio-gateway {}/{}: UDP listener {} (port {}) left out: Istio's Gateway has no UDP",
                options.namespace, options.name, listener.name, listener.port
            );
        }
        let (gateway, copies) = gateway(routes, &https.plan, options);
        let held = self.credentials.write(&copies, &https.certificates).await?;
        for (object, applied) in [gateway, virtual_service(routes, options)]
            .into_iter()
            .zip(&self.applied)
        {
            // Istio refuses a Gateway without servers and a VirtualService without routes: an
            // object with nothing to say is deleted (and no longer followed) instead.
            if is_empty(&object) {
                forget_applied(applied);
                delete(&self.client, &options.namespace, &object).await?;
                continue;
            }
            // Recorded before the apply too: the follower may see the change before the API answers.
            record_applied(applied, object.clone(), None);
            let resource_version = apply(&self.client, &options.namespace, &object).await?;
            record_applied(applied, object, resource_version);
        }
        self.credentials.remove_unused(&held, &copies).await
    }
}

/// The `networking.istio.io/v1beta1` resource of `kind`: the version every Istio from 1.5 on serves
/// (`v1` only from 1.22).
fn istio_resource(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("networking.istio.io", "v1beta1", kind))
}

/// Whether a Gateway has no server, or a VirtualService no route.
fn is_empty(object: &Value) -> bool {
    let spec = &object["spec"];
    let none = |key: &str| spec[key].as_array().is_none_or(Vec::is_empty);
    match object["kind"].as_str() {
        Some("Gateway") => none("servers"),
        _ => none("tls") && none("tcp") && none("http"),
    }
}

/// Deletes one Istio object of ours, if it is there.
async fn delete(client: &Client, namespace: &str, object: &Value) -> Result<(), String> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &istio_resource(kind));
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(format!("{kind} {namespace}/{name}: cannot delete: {e}")),
    }
}

/// Server-side applies one Istio object (`networking.istio.io/v1beta1`) with our field manager; returns
/// the resourceVersion the API gave it.
async fn apply(client: &Client, namespace: &str, object: &Value) -> Result<Option<String>, String> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &istio_resource(kind));
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(name, &params, &Patch::Apply(object))
        .await
        .map(|applied| applied.metadata.resource_version)
        .map_err(|e| format!("{kind} {namespace}/{name}: {e}"))
}
