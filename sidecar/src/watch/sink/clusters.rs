//! `--clusters-dir DIR`: the clusters as Envoy's CDS file, `DIR/cds.json`
//! ([`switchyard_compiler::upstream::cds`]; `docs/deploy-envoy.md`, "Clusters and endpoints"), and
//! the gateway's routes as its RDS file, `DIR/rds.json` ([`switchyard_compiler::route_config`]; a
//! route per rule's timeouts and retries), each replaced atomically and only when it changed. The clusters'
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
/// The RDS file's name in the folder.
pub const RDS_FILE: &str = "rds.json";

/// The folder of the CDS file.
#[derive(Debug)]
pub struct ClustersDir {
    /// The folder.
    pub path: PathBuf,
    /// A hash of what each file holds now: the CDS file's, the RDS file's.
    written: Mutex<[Option<u64>; 2]>,
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

    /// Writes the RDS and the CDS files of `upstream`, each if it changed: the RDS file first, so
    /// that it is there when the CDS file is (the gateway's Envoy starts once the CDS file is).
    pub fn write(&self, upstream: &Upstream) -> Result<(), String> {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        let [cds, rds] = &mut *written;
        for (file, document, hash) in [
            (RDS_FILE, upstream.routes.rds_document(), rds),
            (CDS_FILE, cds_document(upstream), cds),
        ] {
            let new = fnv1a(document.as_bytes());
            if *hash != Some(new) {
                write_atomically(&self.path.join(file), document.as_bytes())?;
                *hash = Some(new);
            }
        }
        Ok(())
    }
}
