//! The L4 sinks of `switchyard watch` (ROUTING.md §6, TransportServer): what the TransportServers
//! that won route, beside the HTTP table.
//!
//! - `--lds-file PATH`: Envoy's listeners as an LDS `DiscoveryResponse`
//!   ([`switchyard_compiler::lds`]), replaced atomically like the ECDS file. Written by every replica
//!   (it sits beside its Envoy).
//! - `--istio-gateway NAMESPACE/NAME`: an Istio Gateway and a VirtualService of that name
//!   ([`switchyard_compiler::l4_istio`]), server-side applied with Switchyard's field manager, by the
//!   leader only. Istio's Gateway has no UDP: UDP listeners are logged once as left out. Both objects
//!   are followed ([`crate::watch::drift`]) and applied again when deleted or changed by someone else.
//!
//! Each sink takes the routes only when they changed (the HTTP table may change without them, and
//! the other way round); a failed push is retried with the newest routes, like the table's.

use std::path::PathBuf;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::Value;
use switchyard_compiler::l4::L4Routes;
use switchyard_compiler::l4_istio::{gateway, unsupported, virtual_service, IstioL4Options};
use switchyard_compiler::lds::{self, LdsOptions};
use tracing::{info, warn};

use crate::watch::drift::{record_applied, AppliedSlot, Followed};
use crate::watch::ecds::write_atomically;
use crate::watch::istio::FIELD_MANAGER;
use crate::watch::leader::Leader;
use crate::watch::state::Shared;

/// One destination for the L4 routes.
pub enum L4Sink {
    /// `--lds-file`: Envoy's listeners.
    Lds {
        /// The file Envoy's `lds_config.path_config_source` names.
        path: PathBuf,
        /// Where the listeners listen.
        options: LdsOptions,
    },
    /// `--istio-gateway`: a Gateway and a VirtualService.
    Istio {
        /// The client.
        client: Client,
        /// Their namespace, name, selector and passthrough port.
        options: IstioL4Options,
        /// What we last applied to the Gateway and to the VirtualService (shared with
        /// [`crate::watch::drift`], which follows them).
        applied: [AppliedSlot; 2],
    },
}

impl L4Sink {
    /// The name used in logs, `/status` and metrics.
    pub fn name(&self) -> String {
        match self {
            L4Sink::Lds { path, .. } => format!("lds-file {}", path.display()),
            L4Sink::Istio { options, .. } => format!("istio-gateway {}/{}", options.namespace, options.name),
        }
    }

    /// The objects it writes to the cluster, for [`crate::watch::drift`] to follow.
    pub fn followed(&self) -> Vec<Followed> {
        match self {
            L4Sink::Lds { .. } => Vec::new(),
            L4Sink::Istio {
                client,
                options,
                applied,
            } => ["Gateway", "VirtualService"]
                .into_iter()
                .zip(applied)
                .map(|(kind, applied)| Followed {
                    client: client.clone(),
                    resource: istio_resource(kind),
                    namespace: options.namespace.clone(),
                    name: options.name.clone(),
                    sink: self.name(),
                    applied: applied.clone(),
                })
                .collect(),
        }
    }

    /// Whether it writes to the cluster (then only the leader writes it).
    fn writes_to_cluster(&self) -> bool {
        matches!(self, L4Sink::Istio { .. })
    }

    async fn push(&self, routes: &L4Routes) -> Result<(), String> {
        match self {
            L4Sink::Lds { path, options } => write_atomically(path, &lds::document(routes, options)),
            L4Sink::Istio {
                client,
                options,
                applied,
            } => {
                for listener in unsupported(routes) {
                    warn!(
                        "istio-gateway {}/{}: UDP listener {} (port {}) left out: Istio's Gateway has no UDP",
                        options.namespace, options.name, listener.name, listener.port
                    );
                }
                for (object, applied) in [gateway(routes, options), virtual_service(routes, options)]
                    .into_iter()
                    .zip(applied)
                {
                    let resource_version = apply(client, &options.namespace, &object).await?;
                    record_applied(applied, object, resource_version);
                }
                Ok(())
            }
        }
    }
}

/// The `networking.istio.io/v1` resource of `kind`.
fn istio_resource(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("networking.istio.io", "v1", kind))
}

/// Server-side applies one Istio object (`networking.istio.io/v1`) with our field manager; returns
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

/// The L4 sinks and what they were last given.
#[derive(Default)]
pub struct L4Sinks {
    sinks: Vec<L4Sink>,
    /// Per sink (by position): the routes it holds, `None` before its first push or after a failure.
    held: Vec<Option<L4Routes>>,
    /// The newest routes compiled (what a retry or a take-over pushes).
    latest: Option<L4Routes>,
    /// Whether a push of `latest` failed somewhere.
    failed: bool,
}

impl L4Sinks {
    /// Sinks for the L4 routes.
    pub fn new(sinks: Vec<L4Sink>) -> L4Sinks {
        L4Sinks {
            held: vec![None; sinks.len()],
            sinks,
            latest: None,
            failed: false,
        }
    }

    /// Whether a push failed and is to be tried again.
    pub fn needs_retry(&self) -> bool {
        self.failed
    }

    /// The sinks' names, as logs and `/status` give them.
    pub fn names(&self) -> Vec<String> {
        self.sinks.iter().map(L4Sink::name).collect()
    }

    /// Pushes `routes` to every sink that does not hold them (cluster sinks only while `leader`
    /// leads); records each answer in `state`.
    pub async fn push(&mut self, routes: &L4Routes, leader: &Leader, state: &Shared) {
        self.latest = Some(routes.clone());
        state.lock().l4 = routes.clone();
        let mut errors = Vec::new();
        for (i, sink) in self.sinks.iter().enumerate() {
            if self.held[i].as_ref() == Some(routes) || (sink.writes_to_cluster() && !leader.is_leader()) {
                continue;
            }
            let name = sink.name();
            let result = sink.push(routes).await;
            let ok = result.is_ok();
            let mut state = state.lock();
            let count = state.pushes.entry(name.clone()).or_default();
            if ok {
                count.ok += 1;
            } else {
                count.failed += 1;
            }
            match &result {
                Ok(()) => state.sink_answered(&name),
                Err(e) => state.sink_failed(&name, "L4 push", &e.to_string()),
            }
            drop(state);
            match result {
                Ok(()) => {
                    info!(
                        sink = %name,
                        "L4: {} TLS passthrough host(s), {} TCP/UDP listener(s)",
                        routes.passthrough.len(),
                        routes.listeners.len()
                    );
                    self.held[i] = Some(routes.clone());
                }
                Err(e) => {
                    errors.push(format!("{name}: {e}"));
                    self.held[i] = None;
                }
            }
        }
        self.failed = !errors.is_empty();
        state.lock().l4_push_error = (!errors.is_empty()).then(|| errors.join("; "));
    }

    /// The objects the sinks write to the cluster, for [`crate::watch::drift`] to follow.
    pub fn followed(&self) -> Vec<Followed> {
        self.sinks.iter().flat_map(L4Sink::followed).collect()
    }

    /// Pushes the newest routes again to the sink named `name`, one of whose objects was deleted or
    /// changed by someone else; `false` when no L4 sink has that name.
    pub async fn repair(&mut self, name: &str, leader: &Leader, state: &Shared) -> bool {
        let Some(i) = self.sinks.iter().position(|s| s.name() == name) else {
            return false;
        };
        if let Some(routes) = self.latest.clone() {
            self.held[i] = None;
            self.push(&routes, leader, state).await;
            if self.held[i].is_some() {
                info!(sink = %name, "deleted or changed by someone else: applied again");
            }
        }
        true
    }

    /// Pushes the newest routes again after a failure.
    pub async fn retry(&mut self, leader: &Leader, state: &Shared) {
        if let (true, Some(routes)) = (self.failed, self.latest.clone()) {
            self.push(&routes, leader, state).await;
        }
    }

    /// Just became the leader: the cluster sinks get the newest routes (they were skipped meanwhile).
    pub async fn take_over(&mut self, leader: &Leader, state: &Shared) {
        if let Some(routes) = self.latest.clone() {
            self.push(&routes, leader, state).await;
        }
    }
}
