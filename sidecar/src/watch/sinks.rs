//! Where tables go: the ECDS file, a plain table file, and (Kubernetes mode) Istio resources.
//! Every sink is idempotent, so a failed push is simply retried with the newest table.

use std::path::PathBuf;

use switchyard_table::TableSpec;

use crate::watch::ecds::{write_atomically, EcdsFile};
use crate::watch::istio::IstioSink;

/// One destination for tables.
pub enum Sink {
    /// `--ecds-file`.
    Ecds(EcdsFile),
    /// `-o FILE`: the table as `switchyard compile` writes it.
    TableFile(PathBuf),
    /// `--envoyfilter` / `--wasmplugin`.
    Istio(IstioSink),
}

impl Sink {
    /// The name used in logs and metrics.
    pub fn name(&self) -> String {
        match self {
            Sink::Ecds(ecds) => format!("ecds-file {}", ecds.path.display()),
            Sink::TableFile(path) => format!("table-file {}", path.display()),
            Sink::Istio(istio) => istio.name(),
        }
    }

    /// Pushes `table`. `compact` is its JSON on one line, `pretty` indented.
    pub async fn push(&self, table: &TableSpec, compact: &str, pretty: &str) -> Result<(), String> {
        match self {
            Sink::Ecds(ecds) => ecds.write(compact).await,
            Sink::TableFile(path) => write_atomically(path, pretty),
            Sink::Istio(istio) => istio.apply(table).await,
        }
    }
}
