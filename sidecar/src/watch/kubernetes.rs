//! Kubernetes mode's source: kube-rs watchers feeding reflector stores for Ingress, IngressClass,
//! Service and HTTPProxy (optionally one store per namespace), and the rebuild loop over them.
//!
//! - Nothing is compiled before every store has synced (its first list finished); until then
//!   `/readyz` names the stores still waiting.
//! - The watchers re-list after `410 Gone` and reconnect with kube's default backoff after any
//!   error. A watcher in error marks its source down (`/readyz` says which and why) while the last
//!   good table keeps serving; the next event, or a successful probe list, marks it up again.
//! - After every settled change the stores' contents are compiled; the status is written back by
//!   [`crate::watch::write_back`].

use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::api::ListParams;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tracing::{info, warn};

use crate::objects::{HTTPProxy, Objects};
use crate::watch::debounce::Debounce;
use crate::watch::engine::{Engine, Input};
use crate::watch::state::Shared;
use crate::watch::write_back::StatusWriter;

/// Kubernetes mode's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Namespaces to watch (empty: all).
    pub namespaces: Vec<String>,
    /// `--publish-address`.
    pub publish_addresses: Vec<String>,
    /// Whether to write status back.
    pub write_status: bool,
    /// Whether to watch HTTPProxies (false: `--without-httpproxy`).
    pub httpproxy: bool,
    /// The controller name (events' reporter).
    pub controller_name: String,
}

/// How often a source that is down is probed with a one-item list.
const PROBE_EVERY: Duration = Duration::from_secs(2);

/// One watched store: a kind in one namespace (or all).
struct Source<K: Resource + Clone + 'static>
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    store: Store<K>,
    synced: Arc<AtomicBool>,
    label: String,
}

/// The stores of every kind.
struct Stores {
    ingresses: Vec<Source<Ingress>>,
    classes: Vec<Source<IngressClass>>,
    services: Vec<Source<Service>>,
    proxies: Vec<Source<HTTPProxy>>,
}

impl Stores {
    fn unsynced(&self) -> Vec<String> {
        fn pending<K: Resource + Clone>(sources: &[Source<K>]) -> impl Iterator<Item = String> + '_
        where
            K::DynamicType: Eq + std::hash::Hash + Clone,
        {
            sources
                .iter()
                .filter(|s| !s.synced.load(Ordering::SeqCst))
                .map(|s| s.label.clone())
        }
        pending(&self.ingresses)
            .chain(pending(&self.classes))
            .chain(pending(&self.services))
            .chain(pending(&self.proxies))
            .collect()
    }

    fn objects(&self) -> Objects {
        fn all<K: Resource + Clone>(sources: &[Source<K>]) -> Vec<K>
        where
            K::DynamicType: Eq + std::hash::Hash + Clone,
        {
            sources
                .iter()
                .flat_map(|s| s.store.state())
                .map(|o| (*o).clone())
                .collect()
        }
        Objects {
            ingresses: all(&self.ingresses),
            ingress_classes: all(&self.classes),
            services: all(&self.services),
            http_proxies: all(&self.proxies),
        }
    }
}

/// Starts one watcher per kind and namespace, each feeding its store and signalling `changes`.
fn start<K>(
    client: &Client,
    namespaces: &[String],
    kind: &str,
    changes: &mpsc::Sender<()>,
    state: &Shared,
) -> Vec<Source<K>>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
{
    let apis: Vec<(Api<K>, String)> = if namespaces.is_empty() {
        vec![(Api::all(client.clone()), format!("{kind} (all namespaces)"))]
    } else {
        namespaces
            .iter()
            .map(|ns| (Api::namespaced(client.clone(), ns), format!("{kind} in {ns}")))
            .collect()
    };
    apis.into_iter()
        .map(|(api, label)| spawn_source(api, label, changes, state))
        .collect()
}

fn spawn_source<K>(api: Api<K>, label: String, changes: &mpsc::Sender<()>, state: &Shared) -> Source<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    let (store, writer) = reflector::store();
    let synced = Arc::new(AtomicBool::new(false));
    let task = SourceTask {
        api,
        label: label.clone(),
        synced: synced.clone(),
        changes: changes.clone(),
        state: state.clone(),
    };
    tokio::spawn(task.run(writer));
    Source { store, synced, label }
}

struct SourceTask<K: Resource + Clone + 'static> {
    api: Api<K>,
    label: String,
    synced: Arc<AtomicBool>,
    changes: mpsc::Sender<()>,
    state: Shared,
}

impl<K> SourceTask<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    async fn run(self, writer: reflector::store::Writer<K>) {
        let stream = reflector::reflector(
            writer,
            watcher::watcher(self.api.clone(), watcher::Config::default()).default_backoff(),
        );
        let mut stream = std::pin::pin!(stream);
        let mut down = false;
        loop {
            let next = tokio::select! {
                next = stream.next() => next,
                () = tokio::time::sleep(PROBE_EVERY), if down => {
                    if self.api.list_metadata(&ListParams::default().limit(1)).await.is_ok() {
                        down = self.up();
                    }
                    continue;
                }
            };
            match next {
                None => return,
                Some(Ok(event)) => {
                    if down {
                        down = self.up();
                    }
                    match event {
                        Event::Init | Event::InitApply(_) => {}
                        Event::InitDone => {
                            if !self.synced.swap(true, Ordering::SeqCst) {
                                info!("store {} synced", self.label);
                            }
                            let _ = self.changes.try_send(());
                        }
                        Event::Apply(_) | Event::Delete(_) => {
                            let _ = self.changes.try_send(());
                        }
                    }
                }
                // 410 Gone: our resourceVersion was compacted away; the watcher lists again (the
                // store is swapped at the end of the list). Routine, not an outage.
                Some(Err(watcher::Error::WatchError(status))) if status.code == 410 => {
                    info!(
                        "store {}: resourceVersion expired (410 Gone), listing again",
                        self.label
                    );
                }
                Some(Err(e)) => {
                    warn!("source {} is down, the last table keeps serving: {e}", self.label);
                    self.state.lock().down.insert(self.label.clone(), e.to_string());
                    down = true;
                }
            }
        }
    }

    /// Marks the source up again; returns the new `down` (false).
    fn up(&self) -> bool {
        if self.state.lock().down.remove(&self.label).is_some() {
            info!("source {} is up again", self.label);
        }
        false
    }
}

/// Kubernetes mode: watches, waits for every store to sync, then compiles after every settled
/// change and writes status back.
pub async fn follow(
    client: Client,
    settings: Settings,
    mut engine: Engine,
    state: Shared,
    debounce: Debounce,
) -> Result<(), String> {
    let (tx, mut changes) = mpsc::channel(1);
    let namespaces = &settings.namespaces;
    let classes: Api<IngressClass> = Api::all(client.clone());
    let stores = Stores {
        ingresses: start(&client, namespaces, "Ingress", &tx, &state),
        classes: vec![spawn_source(classes, "IngressClass".to_owned(), &tx, &state)],
        services: start(&client, namespaces, "Service", &tx, &state),
        proxies: if settings.httpproxy {
            start(&client, namespaces, "HTTPProxy", &tx, &state)
        } else {
            Vec::new()
        },
    };
    drop(tx);
    let mut writer = StatusWriter::new(client, &settings, state.clone());
    state.lock().waiting = Some(format!(
        "waiting for the stores to sync: {}",
        stores.unsynced().join(", ")
    ));
    loop {
        let retry = engine.needs_retry();
        tokio::select! {
            settled = debounce.settle(&mut changes) => {
                if !settled {
                    return Err("every Kubernetes watcher stopped".to_owned());
                }
            }
            () = tokio::time::sleep(Duration::from_secs(1)), if retry => {
                engine.retry().await;
                continue;
            }
        }
        let unsynced = stores.unsynced();
        if !unsynced.is_empty() {
            state.lock().waiting = Some(format!("waiting for the stores to sync: {}", unsynced.join(", ")));
            continue;
        }
        state.lock().waiting = None;
        let objects = stores.objects();
        let compiled = engine
            .rebuild(Input {
                objects: objects.clone(),
                ..Input::default()
            })
            .await;
        if settings.write_status {
            writer.write(&objects, &compiled.statuses).await;
        }
    }
}
