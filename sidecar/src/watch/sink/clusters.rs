//! `--clusters-dir DIR`: the clusters as Envoy's CDS file, `DIR/cds.json`
//! ([`switchyard_compiler::upstream::cds`]; `docs/deploy-envoy.md`, "Clusters and endpoints"),
//! replaced atomically and only when it changed: a backend added or removed. The clusters'
//! endpoints go over ADS ([`crate::watch::sink::ads`]), which is handed each output first, so a
//! new cluster finds its endpoints when Envoy asks.
//!
//! Written by every replica (each sits beside its Envoy), like the ECDS and LDS files.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use switchyard_compiler::order::fnv1a;
use switchyard_compiler::upstream::cds::cds_document;
use switchyard_compiler::upstream::Upstream;

use crate::watch::sink::ecds::write_atomically;

/// The CDS file's name in the folder.
pub const CDS_FILE: &str = "cds.json";

/// The folder of the CDS file.
#[derive(Debug)]
pub struct ClustersDir {
    /// The folder.
    pub path: PathBuf,
    /// A hash of what the file holds now.
    written: Mutex<Option<u64>>,
}

impl ClustersDir {
    /// The folder `path`.
    pub fn new(path: &Path) -> ClustersDir {
        ClustersDir {
            path: path.to_path_buf(),
            written: Mutex::default(),
        }
    }

    /// The name used in logs, `/status` and metrics.
    pub fn name(&self) -> String {
        format!("clusters-dir {}", self.path.display())
    }

    /// Writes the CDS file of `upstream` if it changed.
    pub fn write(&self, upstream: &Upstream) -> Result<(), String> {
        let document = cds_document(upstream);
        let hash = fnv1a(document.as_bytes());
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        if *written == Some(hash) {
            return Ok(());
        }
        write_atomically(&self.path.join(CDS_FILE), document.as_bytes())?;
        *written = Some(hash);
        Ok(())
    }
}
