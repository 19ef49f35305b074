//! `--clusters-dir DIR`: the clusters and their endpoints as Envoy's CDS and EDS files
//! ([`switchyard_compiler::upstream`]; `docs/deploy-envoy.md`, "Clusters and endpoints").
//!
//! - `DIR/eds/<cluster>.json`: one EDS file per cluster, written only when its endpoints changed,
//!   replaced atomically: a pod that comes or goes rewrites one small file, and Envoy updates that
//!   cluster's hosts without re-creating it.
//! - `DIR/cds.json`: every cluster, each naming its EDS file; written after the EDS files it names
//!   (a new cluster finds its endpoints at once), only when it changed.
//! - An EDS file no cluster names any more is removed after the CDS file no longer names it.
//!
//! Written by every replica (each sits beside its Envoy), like the ECDS and LDS files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use switchyard_compiler::order::fnv1a;
use switchyard_compiler::upstream::cds::{cds_document, eds_document, eds_file_name};
use switchyard_compiler::upstream::Upstream;

use crate::watch::sink::ecds::write_atomically;

/// The CDS file's name in the folder.
pub const CDS_FILE: &str = "cds.json";
/// The EDS files' folder in the folder.
pub const EDS_FOLDER: &str = "eds";

/// The folder of the CDS and EDS files.
#[derive(Debug)]
pub struct ClustersDir {
    /// The folder.
    pub path: PathBuf,
    /// What each file holds now (a hash of its content), by path in the folder.
    written: Mutex<BTreeMap<String, u64>>,
}

impl ClustersDir {
    /// The folder `path`.
    pub fn new(path: &Path) -> ClustersDir {
        ClustersDir {
            path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            written: Mutex::default(),
        }
    }

    /// The name used in logs, `/status` and metrics.
    pub fn name(&self) -> String {
        format!("clusters-dir {}", self.path.display())
    }

    /// Writes the files of `upstream` that changed, and removes the EDS files no longer named.
    pub fn write(&self, upstream: &Upstream) -> Result<(), String> {
        let eds = self.path.join(EDS_FOLDER);
        std::fs::create_dir_all(&eds).map_err(|e| format!("{}: cannot create: {e}", eds.display()))?;
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        let mut named = Vec::new();
        for cluster in &upstream.clusters {
            let Some(document) = eds_document(cluster) else {
                continue;
            };
            let file = format!("{EDS_FOLDER}/{}", eds_file_name(&cluster.name));
            self.write_if_changed(&mut written, &file, &document)?;
            named.push(file);
        }
        let cds = cds_document(upstream, &eds.display().to_string());
        self.write_if_changed(&mut written, CDS_FILE, &cds)?;
        let gone: Vec<String> = (written.keys())
            .filter(|f| f.starts_with(EDS_FOLDER) && !named.contains(f))
            .cloned()
            .collect();
        for file in gone {
            match std::fs::remove_file(self.path.join(&file)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("{}: cannot remove: {e}", self.path.join(&file).display())),
            }
            written.remove(&file);
        }
        Ok(())
    }

    fn write_if_changed(&self, written: &mut BTreeMap<String, u64>, file: &str, document: &str) -> Result<(), String> {
        let hash = fnv1a(document.as_bytes());
        if written.get(file) == Some(&hash) {
            return Ok(());
        }
        write_atomically(&self.path.join(file), document.as_bytes())?;
        written.insert(file.to_owned(), hash);
        Ok(())
    }
}
