//! Kubernetes mode's source: one kube-rs watcher per kind (and namespace, with `--namespaces`) for
//! Ingress, IngressClass, Service, HTTPProxy, VirtualServer, VirtualServerRoute, TransportServer and
//! GlobalConfiguration (GlobalConfigurations are read in the watched namespaces: add NGINX's
//! controller namespace to `--namespaces` when it is restricted), each feeding a [`Held`] store that decodes object
//! by object, and the rebuild loop over them.
//!
//! - With `--ingress-nginx-configmap NAMESPACE/NAME`, one more watcher follows that one ConfigMap
//!   (ConfigMaps in its namespace, field selector `metadata.name=NAME`: what RBAC's `resourceNames`
//!   allow, `deploy/ingress-nginx/configmap-rbac.yaml`), whatever `--namespaces` says; its `data` is
//!   ingress-nginx's settings (ROUTING.md §7.8, [`super::read_controller_config`]). It is a store
//!   like the others: compiled only once its first list finished. A ConfigMap that does not exist
//!   is not fatal: ingress-nginx's defaults apply, `/status` names it, and it is read as soon as it
//!   is created.
//! - Nothing is compiled before every store has synced (its first list finished); until then
//!   `/readyz` names the stores still waiting.
//! - An object that does not decode is listed in `/status` errors (kind, namespace, name, field);
//!   an HTTPProxy, VirtualServer, VirtualServerRoute or TransportServer of ours among them is Invalid
//!   (`ObjectDoesNotDecode`); everything else routes.
//! - A watcher error marks its source down (logged once, with a short reason; `/readyz` says which
//!   and why) while the last good table keeps serving. The watcher retries after 100 ms, doubling up
//!   to 1 s, so it lists again within about a second of the API server coming back (a restarted
//!   server answers the old resourceVersion with `410 Gone`); a source down whose API answers a
//!   one-item list again (probed every 2 s) starts a fresh watcher, which lists. The source is up
//!   again only once its
//!   watch delivered again (a finished relist, or an event) *and* the table was rebuilt from it:
//!   ready means the table reflects the cluster.
//! - [`Cluster`] is the [`Source`] over the stores: after every settled change the one rebuild loop
//!   ([`crate::watch::rebuild`]) compiles their contents; the status is written back by
//!   [`crate::watch::status`]. A snapshot copies no object: it takes the `Arc`s the stores hold,
//!   which the compiler and the status writer share.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::networking::v1::IngressClass;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use tokio::sync::mpsc;
use tracing::{info, warn};

use crate::watch::cluster::outliving;
use crate::watch::lead::leader::Leader;
use crate::watch::source::store::{Held, Undecodable};
use crate::watch::source::{read_controller_config, Snapshot, Source};
use crate::watch::state::{Failures, Shared, SourceError};
use crate::watch::status::StatusWriter;
use switchyard_compiler::class::Classes;
use switchyard_compiler::model::Options;
use switchyard_compiler::objects::{key_of, EachKind, Kind, Object, Objects};
use switchyard_compiler::status::{Condition, ConditionKind, NginxStatus, Reason, ResourceStatus, Status, StatusBook};

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
    /// Whether to watch VirtualServers and VirtualServerRoutes (false: `--without-virtualserver`).
    pub virtualserver: bool,
    /// Whether to watch TransportServers and GlobalConfigurations (false: `--without-transportserver`).
    pub transportserver: bool,
    /// Whether to watch EndpointSlices (`--clusters-dir`: the clusters' endpoints).
    pub endpoints: bool,
    /// The controller name (events' reporter).
    pub controller_name: String,
    /// Whether this replica writes status now (`--leader-elect`).
    pub leader: Leader,
}

/// The longest reason kept from a watcher error (an error may carry a whole response body).
const REASON_MAX: usize = 200;

/// Objects per page of a store's list (kube's default is 500). A page is held whole as JSON
/// values (every field, `managedFields` included) until its objects are decoded, which for
/// Ingresses of 100 paths is about 250 KiB each: 500 of them took 125 MiB at once, more than the
/// whole compiled state of 100,000 rules (deploy/README.md, "Sizing"). Smaller pages cost more
/// requests (the initial sync of 13,000 objects took no measurably longer: BENCHMARKS.md,
/// "`switchyard watch --kubernetes`: memory").
const LIST_PAGE: u32 = 100;

/// One watched store: a kind in one namespace (or all).
struct Store<K> {
    held: Arc<Mutex<Held<K>>>,
    label: String,
}

impl<K> Store<K> {
    fn held(&self) -> std::sync::MutexGuard<'_, Held<K>> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The stores of one kind, whatever the kind.
trait KindStores: Send + Sync {
    /// The labels of the stores not synced yet.
    fn unsynced(&self, out: &mut Vec<String>);
    /// Puts the objects of every store into their kind's vector of `objects`.
    fn fill(&self, objects: &mut Objects, undecodable: &mut Vec<Undecodable>);
}

impl<K: Object> KindStores for Vec<Store<K>> {
    fn unsynced(&self, out: &mut Vec<String>) {
        out.extend(pending(self));
    }

    fn fill(&self, objects: &mut Objects, undecodable: &mut Vec<Undecodable>) {
        *K::of_mut(objects) = all(self, undecodable);
    }
}

/// The stores of every kind ([`Objects::each_kind`]).
struct Stores(Vec<Box<dyn KindStores>>);

fn pending<K>(sources: &[Store<K>]) -> impl Iterator<Item = String> + '_ {
    sources.iter().filter(|s| !s.held().synced).map(|s| s.label.clone())
}

/// The objects of every store of one kind: the held `Arc`s, no object copied.
fn all<K>(sources: &[Store<K>], undecodable: &mut Vec<Undecodable>) -> Vec<Arc<K>> {
    let mut out = Vec::new();
    for source in sources {
        let held = source.held();
        out.extend(held.objects.values().cloned());
        undecodable.extend(held.undecodable.values().cloned());
    }
    out
}

impl Stores {
    fn unsynced(&self) -> Vec<String> {
        let mut out = Vec::new();
        for kind in &self.0 {
            kind.unsynced(&mut out);
        }
        out
    }

    fn objects(&self) -> (Objects, Vec<Undecodable>) {
        let mut undecodable = Vec::new();
        let mut objects = Objects::default();
        for kind in &self.0 {
            kind.fill(&mut objects, &mut undecodable);
        }
        (objects, undecodable)
    }
}

/// Starts one watcher per namespace (or one for all) of kind `K`, each signalling `changes`.
fn start<K: Object>(
    client: &Client,
    namespaces: &[String],
    changes: &mpsc::Sender<()>,
    state: &Shared,
) -> Vec<Store<K>> {
    let resource = ApiResource::erase::<K>(&());
    let kind = K::kind(&()).to_string();
    let apis: Vec<(Api<DynamicObject>, String)> = if namespaces.is_empty() {
        // IngressClass is cluster-scoped: it has no namespaces.
        let label = if !K::KIND.is_namespaced() {
            kind
        } else {
            format!("{kind} (all namespaces)")
        };
        vec![(Api::all_with(client.clone(), &resource), label)]
    } else {
        namespaces
            .iter()
            .map(|ns| {
                (
                    Api::namespaced_with(client.clone(), ns, &resource),
                    format!("{kind} in {ns}"),
                )
            })
            .collect()
    };
    apis.into_iter()
        .map(|(api, label)| {
            let held = Arc::new(Mutex::new(Held::new(K::KIND)));
            let task = SourceTask {
                api,
                label: label.clone(),
                held: held.clone(),
                changes: changes.clone(),
                state: state.clone(),
            };
            tokio::spawn(task.run());
            Store { held, label }
        })
        .collect()
}

struct SourceTask<K> {
    api: Api<DynamicObject>,
    label: String,
    held: Arc<Mutex<Held<K>>>,
    changes: mpsc::Sender<()>,
    state: Shared,
}

impl<K: Object> SourceTask<K> {
    async fn run(self) {
        let stream = outliving(self.api.clone(), watcher::Config::default().page_size(LIST_PAGE));
        let mut stream = std::pin::pin!(stream);
        while let Some(next) = stream.next().await {
            match next {
                Ok(event) => self.receive(event),
                // A compacted or fresh watch cache: the watcher lists again. Routine, not down.
                Err(watcher::Error::WatchError(status)) if status.code == 410 => {
                    info!(
                        "store {}: resourceVersion expired (410 Gone), listing again",
                        self.label
                    );
                }
                // A kind whose CRD is not installed and whose absence opens nothing (Policy: every
                // reference to one denies, ROUTING.md §9) is read as none.
                Err(e) if K::KIND.absence_is_none() && not_found(&e) => self.absent(),
                Err(e) => down(&self.state, &self.label, &e),
            }
        }
    }

    /// The kind is not served by the API server (its CRD is not installed): the store is synced
    /// and empty. Only for a kind whose absence opens nothing ([`Kind::absence_is_none`]).
    fn absent(&self) {
        let changed = {
            let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let changed = !held.synced || !held.objects.is_empty() || !held.undecodable.is_empty();
            if changed {
                info!(
                    "store {}: the API server does not serve this kind; read as none",
                    self.label
                );
                held.relist();
                held.relist_done();
            }
            changed
        };
        // A source down before (the API server away, or not yet authorizing after a restart) is
        // up again once the kind is known to be absent, even when nothing else changed.
        let was_down = self.state.lock().down.contains_key(&self.label);
        delivered(&self.state, &self.label);
        if changed || was_down {
            let _ = self.changes.try_send(());
        }
    }

    fn receive(&self, event: Event<DynamicObject>) {
        {
            let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match &event {
                Event::Init => held.relist(),
                Event::InitApply(object) => held.relisted(object),
                Event::InitDone => {
                    if !held.synced {
                        info!("store {} synced", self.label);
                    }
                    held.relist_done();
                }
                Event::Apply(object) => held.apply(object),
                Event::Delete(object) => held.delete(object),
            }
        }
        if matches!(event, Event::InitDone | Event::Apply(_) | Event::Delete(_)) {
            delivered(&self.state, &self.label);
            let _ = self.changes.try_send(());
        }
    }
}

/// A watcher error: the source `label` is down (logged when it goes down or its reason changes).
fn down(state: &Shared, label: &str, error: &watcher::Error) {
    let reason = short_reason(error);
    let mut state = state.lock();
    state.recovered.remove(label);
    state.relapsed.insert(label.to_owned());
    // One line when it goes down; a later reason (connection refused, then 403 while a restarted
    // API server warms up) only updates /readyz.
    if state.down.fail(label, reason.clone()) {
        warn!("source {label} is down, the last table keeps serving: {reason}");
    }
}

/// The watch of `label` delivered: a source that was down is up once the table is rebuilt from it.
fn delivered(state: &Shared, label: &str) {
    let mut state = state.lock();
    if state.down.contains_key(label) {
        state.recovered.insert(label.to_owned());
    }
}

/// What the watcher of ingress-nginx's ConfigMap holds.
#[derive(Debug, Default)]
struct HeldConfigMap {
    /// Whether the first list finished.
    synced: bool,
    /// Its `data`; `None` while it does not exist.
    data: Option<BTreeMap<String, String>>,
    /// The relist in progress (`Some(None)`: nothing listed yet).
    relist: Option<Option<BTreeMap<String, String>>>,
}

/// The `data` of a ConfigMap as the watch delivers it (the API server validates it as strings;
/// anything else would read as empty).
fn config_map_data(object: &DynamicObject) -> BTreeMap<String, String> {
    object
        .data
        .get("data")
        .and_then(|data| serde_json::from_value(data.clone()).ok())
        .unwrap_or_default()
}

impl HeldConfigMap {
    fn receive(&mut self, event: &Event<DynamicObject>) {
        match event {
            Event::Init => self.relist = Some(None),
            Event::InitApply(object) => self.relist = Some(Some(config_map_data(object))),
            Event::InitDone => {
                if let Some(listed) = self.relist.take() {
                    self.data = listed;
                }
                self.synced = true;
            }
            Event::Apply(object) => self.data = Some(config_map_data(object)),
            Event::Delete(_) => self.data = None,
        }
    }
}

/// The watcher of ingress-nginx's ConfigMap (`--ingress-nginx-configmap`): ConfigMaps of its
/// namespace, by name.
struct ConfigMapStore {
    /// Its namespace and name.
    name: (String, String),
    held: Arc<Mutex<HeldConfigMap>>,
    label: String,
}

impl ConfigMapStore {
    fn start(client: &Client, name: (String, String), changes: &mpsc::Sender<()>, state: &Shared) -> ConfigMapStore {
        let label = format!("ConfigMap {}/{}", name.0, name.1);
        let held = Arc::new(Mutex::new(HeldConfigMap::default()));
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &name.0, &ApiResource::erase::<ConfigMap>(&()));
        let config = watcher::Config::default().fields(&format!("metadata.name={}", name.1));
        let (task_held, task_label, changes, state) = (held.clone(), label.clone(), changes.clone(), state.clone());
        tokio::spawn(async move {
            let stream = outliving(api, config);
            let mut stream = std::pin::pin!(stream);
            while let Some(next) = stream.next().await {
                match next {
                    Ok(event) => {
                        {
                            let mut held = task_held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                            if matches!(event, Event::InitDone) && !held.synced {
                                info!("store {task_label} synced");
                            }
                            held.receive(&event);
                        }
                        if matches!(event, Event::InitDone | Event::Apply(_) | Event::Delete(_)) {
                            delivered(&state, &task_label);
                            let _ = changes.try_send(());
                        }
                    }
                    Err(watcher::Error::WatchError(status)) if status.code == 410 => {
                        info!("store {task_label}: resourceVersion expired (410 Gone), listing again");
                    }
                    Err(e) => down(&state, &task_label, &e),
                }
            }
        });
        ConfigMapStore { name, held, label }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HeldConfigMap> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether the watcher failed because the API server does not serve the resource (404).
fn not_found(error: &watcher::Error) -> bool {
    matches!(
        error,
        watcher::Error::InitialListFailed(kube::Error::Api(status))
            | watcher::Error::WatchStartFailed(kube::Error::Api(status))
            if status.code == 404
    )
}

/// A watcher error in one short line: the API's status code and message, or the transport error,
/// never a response body.
fn short_reason(error: &watcher::Error) -> String {
    let text = match error {
        watcher::Error::WatchError(status)
        | watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => {
            format!("{} {}: {}", status.code, status.reason, status.message)
        }
        other => other.to_string(),
    };
    let line = text.lines().next().unwrap_or_default();
    let mut end = line.len().min(REASON_MAX);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    if end < line.len() {
        format!("{}…", &line[..end])
    } else {
        line.to_owned()
    }
}

/// The `/status` errors for objects that do not decode, and the Invalid status of the HTTPProxies
/// among them that our class rules accept.
fn undecodable_report(
    undecodable: &[Undecodable],
    classes: &[Arc<IngressClass>],
    options: &Options,
) -> (Vec<SourceError>, Vec<ResourceStatus>) {
    let classes = Classes::new(classes, options, &mut StatusBook::default());
    let mut errors = Vec::new();
    let mut statuses = Vec::new();
    for object in undecodable {
        errors.push(SourceError {
            source: format!("{} {}", object.kind, object.name()),
            message: format!("does not decode: {}", object.message),
        });
        let kind = object.kind;
        match kind {
            Kind::HTTPProxy | Kind::VirtualServer | Kind::VirtualServerRoute | Kind::TransportServer => {}
            // No status of their own (IngressClass, Service, GlobalConfiguration, Secret), or
            // none for an Ingress that does not decode.
            Kind::Ingress
            | Kind::IngressClass
            | Kind::Service
            | Kind::GlobalConfiguration
            | Kind::Secret
            | Kind::EndpointSlice
            | Kind::Policy => continue,
        }
        if classes.decide(&object.metadata, object.class_name.as_deref()).is_ok() {
            let key = key_of(kind, &object.metadata);
            let conditions = vec![Condition {
                kind: ConditionKind::Error,
                reason: Reason::ObjectDoesNotDecode,
                message: format!(
                    "{}; this {} routes nothing until it is fixed",
                    object.message, object.kind
                ),
                about: None,
            }];
            statuses.push(ResourceStatus {
                nginx: NginxStatus::of(kind, &key.namespace, &key.name, Status::Invalid, &conditions),
                kind,
                namespace: key.namespace,
                name: key.name,
                status: Status::Invalid,
                conditions,
            });
        }
    }
    (errors, statuses)
}

/// The cluster as a [`Source`]: the stores, and where each compilation's status goes.
pub struct Cluster {
    stores: Stores,
    state: Shared,
    options: Options,
    /// Status is written by a task of its own, always from the latest compilation: thousands of
    /// status writes after a big sync must not hold back the next rebuild.
    status_tx: tokio::sync::watch::Sender<Compilation>,
    /// Sources whose watch delivered before the rebuild in progress.
    recovered: BTreeSet<String>,
    /// `--ingress-nginx-configmap`: the watcher of that ConfigMap.
    config_map: Option<ConfigMapStore>,
}

impl Cluster {
    /// Starts the watchers (and, unless `--no-status-write`, the status writer); returns the source
    /// and its change channel.
    pub fn start(
        client: Client,
        settings: &Settings,
        state: Shared,
        options: Options,
    ) -> (Cluster, mpsc::Receiver<()>) {
        let (tx, changes) = mpsc::channel(1);
        /// Starts the watchers of each kind the settings ask for.
        struct Start<'a> {
            client: &'a Client,
            settings: &'a Settings,
            tx: &'a mpsc::Sender<()>,
            state: &'a Shared,
            stores: Vec<Box<dyn KindStores>>,
        }
        impl EachKind for Start<'_> {
            fn kind<K: Object>(&mut self) {
                let settings = self.settings;
                let watched = match K::KIND {
                    // Secrets: the certificates of HTTPS (ROUTING.md §8), and an HTTPProxy root's
                    // `tls` decides whether it is valid at all.
                    Kind::Ingress | Kind::IngressClass | Kind::Service | Kind::Secret => true,
                    Kind::EndpointSlice => settings.endpoints,
                    Kind::HTTPProxy => settings.httpproxy,
                    // Policies: what VirtualServers' `policies` reference.
                    Kind::VirtualServer | Kind::VirtualServerRoute | Kind::Policy => settings.virtualserver,
                    Kind::TransportServer | Kind::GlobalConfiguration => settings.transportserver,
                };
                let namespaces: &[String] = if K::KIND.is_namespaced() {
                    &settings.namespaces
                } else {
                    &[]
                };
                let stores: Vec<Store<K>> = if watched {
                    start(self.client, namespaces, self.tx, self.state)
                } else {
                    Vec::new()
                };
                self.stores.push(Box::new(stores));
            }
        }
        let mut started = Start {
            client: &client,
            settings,
            tx: &tx,
            state: &state,
            stores: Vec::new(),
        };
        Objects::each_kind(&mut started);
        let stores = Stores(started.stores);
        let config_map = options
            .ingress_nginx
            .configmap
            .clone()
            .map(|name| ConfigMapStore::start(&client, name, &tx, &state));
        let (status_tx, status_rx) = tokio::sync::watch::channel(None);
        if settings.write_status {
            let writer = StatusWriter::new(
                client,
                &settings.controller_name,
                &settings.publish_addresses,
                state.clone(),
            )
            .led_by(settings.leader.clone());
            tokio::spawn(write_statuses(writer, status_rx, settings.leader.clone()));
        }
        let cluster = Cluster {
            stores,
            state,
            options,
            status_tx,
            recovered: BTreeSet::new(),
            config_map,
        };
        (cluster, changes)
    }
}

impl Source for Cluster {
    fn read(&mut self) -> Option<Snapshot> {
        let mut unsynced = self.stores.unsynced();
        unsynced.extend(
            self.config_map
                .as_ref()
                .filter(|c| !c.held().synced)
                .map(|c| c.label.clone()),
        );
        if !unsynced.is_empty() {
            self.state.lock().waiting = Some(format!("waiting for the stores to sync: {}", unsynced.join(", ")));
            return None;
        }
        self.recovered = {
            let mut state = self.state.lock();
            state.waiting = None;
            state.relapsed.clear();
            std::mem::take(&mut state.recovered)
        };
        let (objects, undecodable) = self.stores.objects();
        let (errors, statuses) = undecodable_report(&undecodable, &objects.ingress_classes, &self.options);
        let mut snapshot = Snapshot {
            objects: Arc::new(objects),
            errors,
            statuses,
            ..Snapshot::default()
        };
        if let Some(config_map) = &self.config_map {
            let data = config_map.held().data.clone();
            read_controller_config(&config_map.name, data.as_ref(), &mut snapshot);
        }
        Some(snapshot)
    }

    fn rebuilt(&mut self, snapshot: Snapshot, statuses: &[ResourceStatus]) {
        mark_up(&self.state, std::mem::take(&mut self.recovered));
        let _ = self
            .status_tx
            .send(Some(Arc::new((snapshot.objects, statuses.to_vec()))));
    }

    fn stopped(&self) -> String {
        "every Kubernetes watcher stopped".to_owned()
    }
}

/// What the status writer needs of one compilation.
type Compilation = Option<Arc<(Arc<Objects>, Vec<ResourceStatus>)>>;

/// Writes the status of the latest compilation whenever there is a newer one, while leading; on
/// becoming the leader, all of it again (another replica wrote meanwhile).
async fn write_statuses(
    mut writer: StatusWriter,
    mut latest: tokio::sync::watch::Receiver<Compilation>,
    leader: Leader,
) {
    let mut role = leader.subscribe();
    let mut term = leader.term();
    loop {
        tokio::select! {
            changed = latest.changed() => if changed.is_err() { return },
            changed = role.changed() => if changed.is_err() { return },
        }
        if !leader.is_leader() {
            continue;
        }
        if leader.term() != term {
            term = leader.term();
            writer.forget();
        }
        let compilation = latest.borrow_and_update().clone();
        if let Some(compilation) = compilation {
            writer.write(&compilation.0, &compilation.1).await;
        }
    }
}

/// Sources whose watch delivered before this rebuild are up again, unless they failed meanwhile.
fn mark_up(state: &Shared, recovered: BTreeSet<String>) {
    let mut state = state.lock();
    for label in recovered {
        if !state.relapsed.contains(&label) && state.down.recover(&label) {
            info!("source {label} is up again");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtualserver_of_ours_that_does_not_decode_is_invalid_with_nginx_status() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
        let object = Undecodable {
            kind: Kind::VirtualServer,
            metadata: ObjectMeta {
                name: Some("cafe".into()),
                namespace: Some("shop".into()),
                ..ObjectMeta::default()
            },
            class_name: None,
            message: "spec.routes[0].splits[0].weight: invalid type: string".into(),
        };
        let (errors, statuses) = undecodable_report(&[object], &[], &Options::default());
        assert_eq!(errors.len(), 1);
        let status = &statuses[0];
        assert_eq!((status.kind, status.status), (Kind::VirtualServer, Status::Invalid));
        let nginx = status.nginx.clone().unwrap();
        assert_eq!((nginx.state.as_str(), nginx.reason.as_str()), ("Invalid", "Rejected"));
        assert!(nginx.message.contains("splits[0].weight"), "{}", nginx.message);
    }

    #[test]
    fn the_config_map_held_follows_lists_changes_and_deletion() {
        let object = |value: &str| -> DynamicObject {
            serde_json::from_value(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "ingress-nginx-controller", "namespace": "ingress-nginx"},
                "data": {"ssl-redirect": value}}))
            .unwrap()
        };
        let mut held = HeldConfigMap::default();
        held.receive(&Event::Init);
        held.receive(&Event::InitDone);
        assert!(held.synced && held.data.is_none(), "listed, and absent");
        held.receive(&Event::Apply(object("false")));
        assert_eq!(held.data.as_ref().unwrap()["ssl-redirect"], "false");
        held.receive(&Event::Init);
        held.receive(&Event::InitApply(object("true")));
        assert_eq!(
            held.data.as_ref().unwrap()["ssl-redirect"],
            "false",
            "a relist replaces at its end"
        );
        held.receive(&Event::InitDone);
        assert_eq!(held.data.as_ref().unwrap()["ssl-redirect"], "true");
        held.receive(&Event::Delete(object("true")));
        assert!(held.data.is_none());
    }

    #[test]
    fn a_down_reason_is_one_short_line_never_a_body() {
        let body = format!("{}\nsecond line", "x".repeat(5000));
        let error = watcher::Error::WatchError(Box::new(kube::core::Status {
            code: 500,
            reason: "InternalError".into(),
            message: body,
            ..kube::core::Status::default()
        }));
        let reason = short_reason(&error);
        assert!(reason.starts_with("500 InternalError: xxx"), "{reason}");
        assert!(
            reason.chars().count() <= REASON_MAX + 1 && !reason.contains('\n'),
            "{reason}"
        );
    }
}
