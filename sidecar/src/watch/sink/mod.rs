//! Where tables go: the ECDS file, a plain table file, and (Kubernetes mode) Istio resources.
//! Every sink is idempotent, so a failed push is simply retried with the newest table; a table too
//! large for a sink ([`PushError::TooLarge`]) is refused there and not retried until it changes.

use std::fmt;
use std::path::PathBuf;

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

/// Why a sink did not take a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushError {
    /// A failure that may pass (a file system error, the API server unreachable): retried.
    Failed(String),
    /// The table can never fit this sink: refused there, and not retried until the table changes.
    TooLarge(TooLarge),
}

/// A table too large for a sink: the size of what would be sent, and the sink's limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLarge {
    /// The serialized object's size, in bytes.
    pub bytes: usize,
    /// The sink's limit (`--istio-max-bytes`), in bytes.
    pub limit: usize,
    /// The API server's answer, when it was the one that refused (the object was under `limit`).
    pub answer: Option<String>,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (bytes, limit) = (self.bytes, self.limit);
        match &self.answer {
            None => write!(f, "table too large: the object is {bytes} bytes, over this sink's limit of {limit} bytes (--istio-max-bytes)")?,
            Some(answer) => write!(f, "table too large: the API server refused the object of {bytes} bytes ({answer}), though under --istio-max-bytes {limit}: lower it")?,
        }
        write!(
            f,
            "; not retried until the table changes, the last good table stays there. Route fewer rules \
             through this sink, or use --ecds-file"
        )
    }
}

impl fmt::Display for PushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Failed(e) => f.write_str(e),
            PushError::TooLarge(too_large) => too_large.fmt(f),
        }
    }
}

impl From<String> for PushError {
    fn from(e: String) -> PushError {
        PushError::Failed(e)
    }
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

    /// Whether it writes to the cluster (only the leader does, with `--leader-elect`); file sinks
    /// are written by every replica.
    pub fn writes_to_cluster(&self) -> bool {
        matches!(self, Sink::Istio(_))
    }

    /// Pushes `table`. `config` is the filter's plugin configuration (`--table-encoding`: the
    /// compact form or the JSON on one line), `pretty` the JSON indented, for people (`-o`). Files
    /// have no size limit.
    pub async fn push(&self, config: &str, pretty: &str) -> Result<(), PushError> {
        match self {
            Sink::Ecds(ecds) => Ok(ecds.write(config).await?),
            Sink::TableFile(path) => Ok(write_atomically(path, pretty)?),
            Sink::Istio(istio) => istio.apply(config).await,
        }
    }
}
