//! The folders of `deploy/istio/`, read as `kubectl apply -f FOLDER` reads one: its `.yaml`, `.yml`
//! and `.json` files in name order, not its subfolders, every document of each.

use std::path::{Path, PathBuf};

use serde_json::Value;
use switchyard_envtest::{manifests, project_root};

/// `deploy/istio/`.
pub fn istio_dir() -> PathBuf {
    project_root().join("deploy/istio")
}

/// `deploy/istio/mesh-config/`: the mesh settings an Istio installation is given (operator input for
/// `istioctl install -f` or Helm, not objects to apply).
pub fn mesh_config_dir() -> PathBuf {
    istio_dir().join("mesh-config")
}

/// The files `kubectl apply -f dir` reads, in its order.
pub fn kubectl_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml" || x == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// Every document of the files `kubectl apply -f dir` reads.
pub fn folder(dir: &Path) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for file in kubectl_files(dir)? {
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        out.extend(manifests::documents(&text).map_err(|e| format!("{}: {e}", file.display()))?);
    }
    Ok(out)
}

/// The subfolders of `deploy/istio/` that hold objects to apply (every one but `mesh-config`), by name.
pub fn variants() -> Result<Vec<String>, String> {
    let dir = istio_dir();
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
        .filter(|name| name != "mesh-config")
        .collect();
    out.sort();
    Ok(out)
}

/// The object of `kind` named `name` among `objects`.
pub fn find<'a>(objects: &'a mut [Value], kind: &str, name: &str) -> Option<&'a mut Value> {
    objects
        .iter_mut()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
}
