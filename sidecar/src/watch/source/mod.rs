//! What a source hands the rebuild loop ([`crate::watch::rebuild`]), whichever it is: one reading of
//! its whole input as a [`Snapshot`], and the [`Source`] trait both sources (the folder,
//! [`crate::watch::source::folder`], and the cluster, [`crate::watch::source::kubernetes`]) implement.
//!
//! The sources, each a [`Source`]:
//!
//! - [`folder`]: a directory of manifests, followed with `notify`, and read again every
//!   `--rescan-secs` as a safety net.
//! - [`kubernetes`]: kube-rs watchers, one per kind (and namespace), each feeding a [`store`] that
//!   decodes object by object; the status of each compilation is written back by
//!   [`crate::watch::status`].
//! - [`changes`]: which paths the folder's watcher named since the folder was last read.
//! - [`debounce`]: how long the rebuild loop lets a burst of changes settle before it reads the
//!   source.
//!
//! What cannot be read is a [`crate::watch::state::SourceError`] (shown in `/status`).

pub mod changes;
pub mod debounce;
pub mod folder;
pub mod kubernetes;
pub mod store;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::watch::state::SourceError;
use switchyard_compiler::ingress_nginx::configmap::ControllerConfig;
use switchyard_compiler::objects::Objects;
use switchyard_compiler::status::ResourceStatus;

/// One reading of a source: everything to compile, and what could not be read.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The objects (a broken file's last good version; a cluster's decoded objects). Shared, and
    /// each object behind its own `Arc`: the folder source keeps its merged objects between readings
    /// and updates them file by file; the cluster's snapshot takes the objects its stores hold.
    pub objects: Arc<Objects>,
    /// Input that could not be read (shown in `/status`).
    pub errors: Vec<SourceError>,
    /// Loader warnings (conversions and oddities).
    pub warnings: Vec<String>,
    /// Statuses of resources the compiler never saw (objects that do not decode), added to its own.
    pub statuses: Vec<ResourceStatus>,
    /// With `--ingress-nginx-configmap`: ingress-nginx's ConfigMap as read now (ROUTING.md §7.8;
    /// ingress-nginx's defaults while it does not exist, see [`read_controller_config`]), which the
    /// engine compiles with; `None` without the flag.
    pub ingress_nginx_config: Option<ControllerConfig>,
}

/// ROUTING.md §7.8 in both modes: `data`, the `data` of the ConfigMap `--ingress-nginx-configmap`
/// names (`name`: namespace and name) as the source found it, into `snapshot`. A ConfigMap that
/// does not exist (`None`) is not fatal: ingress-nginx's defaults apply (as ingress-nginx itself
/// runs without its ConfigMap) and an error naming it stays in `/status` until it appears. Its keys
/// that are not routing are listed in the warnings.
pub fn read_controller_config(
    name: &(String, String),
    data: Option<&BTreeMap<String, String>>,
    snapshot: &mut Snapshot,
) {
    let (namespace, name) = name;
    let config = match data {
        Some(data) => ControllerConfig::from_data(data),
        None => {
            snapshot.errors.push(SourceError {
                source: format!("ConfigMap {namespace}/{name}"),
                message: format!(
                    "--ingress-nginx-configmap {namespace}/{name}: no such ConfigMap; ingress-nginx's defaults \
                     (ssl-redirect true, http-redirect-code 308, ...) apply until it appears"
                ),
            });
            ControllerConfig::default()
        }
    };
    snapshot.warnings.extend(config.not_honored_warning(namespace, name));
    snapshot.ingress_nginx_config = Some(config);
}

/// A source of input: it signals changes on the channel it was started with, and the rebuild loop
/// then reads it whole.
pub trait Source {
    /// Everything to compile now; `None` while the source cannot be compiled yet (a cluster whose
    /// stores have not synced: the source says why in the state's `waiting`).
    fn read(&mut self) -> Option<Snapshot>;

    /// Called with the snapshot [`Source::read`] returned and the statuses of its compilation, once
    /// it was compiled (and pushed when it changed the table).
    fn rebuilt(&mut self, _snapshot: Snapshot, _statuses: &[ResourceStatus]) {}

    /// Read everything again after this long without a change (the folder's safety net for missed
    /// file events); `None`: never.
    fn rescan(&self) -> Option<Duration> {
        None
    }

    /// The error when the source's change channel closed (nothing will change any more).
    fn stopped(&self) -> String;
}
