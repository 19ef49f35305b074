//! The ECDS file: Envoy's extension config discovery from the filesystem.
//!
//! Envoy's listener names the filter with `config_discovery` and a `path_config_source`; the file
//! holds a `DiscoveryResponse` whose one resource is a `TypedExtensionConfig` named after the filter,
//! carrying an `envoy.extensions.filters.http.wasm.v3.Wasm` that loads the `.wasm` with the table as
//! its plugin configuration (a `google.protobuf.StringValue` holding the table's JSON). Envoy reloads
//! when the file is moved into place, so [`write_atomically`] writes beside it and renames.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::watch::sink::envoy_admin::EnvoyAdmin;

/// Where and how to write the ECDS file.
#[derive(Debug, Clone)]
pub struct EcdsFile {
    /// The file Envoy's `path_config_source` names.
    pub path: PathBuf,
    /// The `TypedExtensionConfig` name: the HTTP filter's `name` in Envoy's listener.
    pub filter_name: String,
    /// The filter's `.wasm` as Envoy should load it (`code.local.filename`).
    pub wasm: PathBuf,
    /// The wasm runtime, e.g. `envoy.wasm.runtime.v8`.
    pub runtime: String,
    /// `--envoy-admin`: wait for Envoy to settle each write before the next.
    pub admin: Option<EnvoyAdmin>,
}

impl EcdsFile {
    /// The file's content for `table` (the table's JSON); `Err` (never expected) rather than an
    /// empty document when it does not serialize.
    pub fn document(&self, table: &str) -> Result<String, String> {
        let code = serde_json::json!({ "local": { "filename": self.wasm.display().to_string() } });
        let document = serde_json::json!({
            "resources": [{
                "@type": "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig",
                "name": self.filter_name,
                "typed_config": wasm_filter_config(&self.filter_name, &self.runtime, code, table)
            }]
        });
        let text = serde_json::to_string_pretty(&document).map_err(|e| {
            format!(
                "{}: internal error: the ECDS document does not serialize: {e}",
                self.path.display()
            )
        })?;
        Ok(text + "\n")
    }

    /// Writes the file for `table`; with an admin address, returns once Envoy applied or rejected
    /// it (a rejection is the filter's to log: the table was delivered). When the admin API does not
    /// answer before the write (Envoy not started yet), the write does not wait.
    pub async fn write(&self, table: &str) -> Result<(), String> {
        let document = self.document(table)?;
        let Some(admin) = &self.admin else {
            return write_atomically(&self.path, &document);
        };
        // An Envoy that is not up yet reads the file when it starts: nothing to wait for then.
        let before = admin.settled().await;
        write_atomically(&self.path, &document)?;
        match before {
            Ok(before) => admin.wait_settled_beyond(before).await,
            Err(e) => {
                tracing::debug!("not waiting for Envoy to apply the table: {e}");
                Ok(())
            }
        }
    }
}

/// The `envoy.extensions.filters.http.wasm.v3.Wasm` filter configuration: the `.wasm` from `code`
/// (an Envoy `AsyncDataSource`: `{"local": {"filename": ...}}` or `{"remote": ...}`) under `runtime`,
/// with `table` (JSON text) as the plugin configuration. The ECDS file and Istio's EnvoyFilter carry
/// the same object.
pub fn wasm_filter_config(name: &str, runtime: &str, code: serde_json::Value, table: &str) -> serde_json::Value {
    serde_json::json!({
        "@type": "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm",
        "config": {
            "name": name,
            "root_id": name,
            "vm_config": { "vm_id": name, "runtime": runtime, "code": code },
            "configuration": { "@type": "type.googleapis.com/google.protobuf.StringValue", "value": table }
        }
    })
}

/// Writes `text` to a temporary file in `path`'s folder, then renames it over `path`
/// ([`tempfile::NamedTempFile::persist`]): readers see the old file or the new one, never half of
/// one, and Envoy's directory watch sees the move (a rename within one folder, hence the temporary
/// file beside the target). The file gets the permissions a plain write would give it (0666 less
/// the umask), not the temporary file's 0600: Envoy may run as another user.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let file_name = path
        .file_name()
        .ok_or_else(|| format!("{}: not a file name", path.display()))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let prefix = format!(".{}.switchyard-", file_name.to_string_lossy());
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut file = builder
        .tempfile_in(dir)
        .map_err(|e| format!("{}: cannot create a temporary file beside it: {e}", path.display()))?;
    // No fsync: readers need the rename to be atomic, not the data durable (a crash loses nothing
    // the next push would not write again), and fsync can stall for long on a busy disk.
    file.write_all(text.as_bytes())
        .map_err(|e| format!("{}: cannot write: {e}", file.path().display()))?;
    // On failure the temporary file is removed (dropped with the error).
    file.persist(path).map(drop).map_err(|e| {
        format!(
            "{}: cannot rename {} over it: {}",
            path.display(),
            e.file.path().display(),
            e.error
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ecds(path: PathBuf) -> EcdsFile {
        EcdsFile {
            path,
            filter_name: "switchyard".into(),
            wasm: "/w/f.wasm".into(),
            runtime: "envoy.wasm.runtime.v8".into(),
            admin: None,
        }
    }

    #[test]
    fn the_document_is_a_discovery_response_with_the_table_as_a_string_value() {
        let doc: serde_json::Value =
            serde_json::from_str(&ecds("x".into()).document("{\"version\":1}").unwrap()).unwrap();
        let resource = &doc["resources"][0];
        assert_eq!(
            resource["@type"],
            "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig"
        );
        assert_eq!(resource["name"], "switchyard");
        let config = &resource["typed_config"]["config"];
        assert_eq!(
            resource["typed_config"]["@type"],
            "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm"
        );
        assert_eq!(config["vm_config"]["code"]["local"]["filename"], "/w/f.wasm");
        assert_eq!(config["configuration"]["value"], "{\"version\":1}");
    }

    #[test]
    fn writing_replaces_the_file_and_leaves_no_temporary_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("filter.json");
        std::fs::write(&path, "old").unwrap();
        write_atomically(&path, &ecds(path.clone()).document("{}").unwrap()).unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().contains("TypedExtensionConfig"));
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["filter.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_gets_the_permissions_of_a_plain_write_not_the_temporary_files() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (plain, replaced) = (dir.path().join("plain.json"), dir.path().join("filter.json"));
        std::fs::write(&plain, "{}").unwrap();
        write_atomically(&replaced, "{}").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            mode(&replaced),
            mode(&plain),
            "Envoy running as another user must be able to read it"
        );
    }

    #[test]
    fn a_missing_folder_is_an_error_naming_the_file() {
        let error = write_atomically(Path::new("/nonexistent-switchyard/x/filter.json"), "{}").unwrap_err();
        assert!(error.contains("/nonexistent-switchyard/x/"), "{error}");
    }
}
