//! The ECDS file: Envoy's extension config discovery from the filesystem.
//!
//! Envoy's listener names the filter with `config_discovery` and a `path_config_source`; the file
//! holds a `DiscoveryResponse` whose one resource is a `TypedExtensionConfig` named after the filter,
//! carrying the filter in one of two forms ([`FilterForm`], `--filter-form`), each with the table as
//! a `google.protobuf.StringValue`:
//! - **wasm**: an `envoy.extensions.filters.http.wasm.v3.Wasm` that loads the `.wasm`, the table as
//!   its plugin configuration;
//! - **module**: an `envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter` that
//!   loads the native module (`libswitchyard_module.so`, by name, from
//!   `ENVOY_DYNAMIC_MODULES_SEARCH_PATH`), the table as its filter configuration.
//!
//! The listener's `config_discovery.type_urls` must name the form's type URL
//! ([`FilterForm::type_url`]). Envoy reloads when the file is moved into place, so
//! [`write_atomically`] writes beside it and renames.
//!
//! Envoy reads the file by its name ([`EcdsEncoding`]): a `.pb` file is written in binary protobuf
//! (`switchyard_xds`), which costs Envoy's main thread several times less than the JSON written
//! under any other name (at 100,000 rules, 6 – 8 ms a push against 45 – 55: BENCHMARKS.md, "Table
//! pushes: the ECDS file in binary").

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::watch::sink::envoy_admin::EnvoyAdmin;

/// The wasm runtime Envoy runs the filter in unless `--wasm-runtime` says otherwise.
pub const DEFAULT_WASM_RUNTIME: &str = "envoy.wasm.runtime.v8";
/// The `.wasm` `--wasm` names by default (`make build`'s).
pub const DEFAULT_WASM: &str = "target/wasm32-wasip1/release/switchyard_filter.wasm";
/// The dynamic module's name by default: Envoy loads `libswitchyard_module.so`.
pub const DEFAULT_MODULE_NAME: &str = "switchyard_module";

/// `--filter-form`: which of Switchyard's two filters the ECDS file configures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum FilterForm {
    /// The proxy-wasm filter (`--wasm`, under `--wasm-runtime`): any Envoy version, Istio, any
    /// proxy-wasm host.
    #[default]
    Wasm,
    /// The native dynamic module (`libswitchyard_module.so`, `--module-name`): Envoy 1.40 or 1.41
    /// only; one table for all workers, the largest tables, the lowest latency.
    Module,
}

impl FilterForm {
    /// The type URL of the filter's configuration: what the listener's `config_discovery.type_urls`
    /// must name.
    pub fn type_url(self) -> &'static str {
        match self {
            FilterForm::Wasm => switchyard_xds::WASM_FILTER,
            FilterForm::Module => switchyard_xds::DYNAMIC_MODULE_FILTER,
        }
    }
}

/// How the ECDS file is written: as Envoy reads it, by the file's name (Envoy's
/// `MessageUtil::loadFromFile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcdsEncoding {
    /// Any name but `.pb` (and `.pb_text`, refused): JSON, which Envoy also reads from a `.yaml`
    /// file (JSON being YAML); a file a person can read.
    Json,
    /// `.pb`: binary protobuf, the fastest for Envoy to parse.
    Protobuf,
}

impl EcdsEncoding {
    /// The encoding Envoy reads `path` in; an error for `.pb_text` (protobuf's text format, which
    /// Envoy reads and Switchyard does not write).
    pub fn of(path: &Path) -> Result<EcdsEncoding, String> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("pb") => Ok(EcdsEncoding::Protobuf),
            Some("pb_text") => Err(format!(
                "--ecds-file {}: Envoy reads a .pb_text file as protobuf text, which switchyard does not write; \
                 name it .json (JSON) or .pb (binary protobuf, the fastest for Envoy to parse)",
                path.display()
            )),
            _ => Ok(EcdsEncoding::Json),
        }
    }
}

/// The filter the ECDS file configures, with what loading it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EcdsFilter {
    /// The proxy-wasm filter.
    Wasm {
        /// The `.wasm` as Envoy should load it (`code.local.filename`).
        wasm: PathBuf,
        /// The wasm runtime, e.g. `envoy.wasm.runtime.v8`.
        runtime: String,
    },
    /// The dynamic module.
    Module {
        /// The name Envoy loads it by (`lib<name>.so` in `ENVOY_DYNAMIC_MODULES_SEARCH_PATH`).
        name: String,
    },
}

impl EcdsFilter {
    /// The wasm filter from the `.wasm` at `wasm`, made absolute (Envoy would resolve a relative
    /// path against its own working directory); warns when there is no such file yet.
    pub fn local_wasm(wasm: &Path, runtime: &str) -> EcdsFilter {
        let wasm = std::path::absolute(wasm).unwrap_or_else(|_| wasm.to_path_buf());
        if !wasm.is_file() {
            tracing::warn!(
                "--wasm {}: no such file yet; Envoy will reject the filter until it exists",
                wasm.display()
            );
        }
        EcdsFilter::Wasm {
            wasm,
            runtime: runtime.to_owned(),
        }
    }

    /// Its form.
    pub fn form(&self) -> FilterForm {
        match self {
            EcdsFilter::Wasm { .. } => FilterForm::Wasm,
            EcdsFilter::Module { .. } => FilterForm::Module,
        }
    }

    /// The binary ECDS document of the filter named `filter_name`, with `table` as its
    /// configuration: what [`EcdsFile::document`] writes in JSON, field for field.
    fn binary_document(&self, filter_name: &str, table: &str) -> Vec<u8> {
        let filename;
        let filter = match self {
            EcdsFilter::Wasm { wasm, runtime } => {
                filename = wasm.display().to_string();
                switchyard_xds::Filter::Wasm {
                    name: filter_name,
                    runtime,
                    filename: &filename,
                }
            }
            EcdsFilter::Module { name } => switchyard_xds::Filter::Module {
                module: name,
                filter_name,
            },
        };
        switchyard_xds::ecds_response(filter_name, filter, table)
    }

    /// The `typed_config` of the filter named `filter_name`, with `table` as its configuration.
    pub fn typed_config(&self, filter_name: &str, table: &str) -> serde_json::Value {
        match self {
            EcdsFilter::Wasm { wasm, runtime } => {
                let code = serde_json::json!({ "local": { "filename": wasm.display().to_string() } });
                wasm_filter_config(filter_name, runtime, code, table)
            }
            EcdsFilter::Module { name } => module_filter_config(name, filter_name, table),
        }
    }
}

/// Where and how to write the ECDS file.
#[derive(Debug, Clone)]
pub struct EcdsFile {
    /// The file Envoy's `path_config_source` names.
    pub path: PathBuf,
    /// The `TypedExtensionConfig` name: the HTTP filter's `name` in Envoy's listener.
    pub filter_name: String,
    /// The filter it configures.
    pub filter: EcdsFilter,
    /// `--envoy-admin`: wait for Envoy to settle each write before the next.
    pub admin: Option<EnvoyAdmin>,
}

impl EcdsFile {
    /// The file's content for `table`, in the encoding its name asks for ([`EcdsEncoding`]); `Err`
    /// for a name Switchyard cannot write, or (never expected) a document that does not serialize.
    pub fn document(&self, table: &str) -> Result<Vec<u8>, String> {
        match EcdsEncoding::of(&self.path)? {
            EcdsEncoding::Json => self.json_document(table).map(String::into_bytes),
            EcdsEncoding::Protobuf => Ok(self.filter.binary_document(&self.filter_name, table)),
        }
    }

    /// The document in JSON.
    fn json_document(&self, table: &str) -> Result<String, String> {
        let document = serde_json::json!({
            "resources": [{
                "@type": switchyard_xds::TYPED_EXTENSION_CONFIG,
                "name": self.filter_name,
                "typed_config": self.filter.typed_config(&self.filter_name, table)
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
        "@type": FilterForm::Wasm.type_url(),
        "config": {
            "name": name,
            "root_id": name,
            "vm_config": { "vm_id": name, "runtime": runtime, "code": code },
            "configuration": { "@type": switchyard_xds::STRING_VALUE, "value": table }
        }
    })
}

/// The `envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter` configuration: the
/// module Envoy loads by `module` (`lib<module>.so`), its filter `filter_name`, with `table` (JSON
/// or compact text) as the filter configuration.
pub fn module_filter_config(module: &str, filter_name: &str, table: &str) -> serde_json::Value {
    serde_json::json!({
        "@type": FilterForm::Module.type_url(),
        "dynamic_module_config": { "name": module, "do_not_close": true },
        "filter_name": filter_name,
        "filter_config": { "@type": switchyard_xds::STRING_VALUE, "value": table }
    })
}

/// Writes `bytes` to a temporary file in `path`'s folder, then renames it over `path`
/// ([`tempfile::NamedTempFile::persist`]): readers see the old file or the new one, never half of
/// one, and Envoy's directory watch sees the move (a rename within one folder, hence the temporary
/// file beside the target). The file gets the permissions a plain write would give it (0666 less
/// the umask), not the temporary file's 0600: Envoy may run as another user.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    write_file(path, bytes, 0o666)
}

/// [`write_atomically`] with the file's mode (before the umask): 0600 for a file holding a key.
pub fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    let file_name = path
        .file_name()
        .ok_or_else(|| format!("{}: not a file name", path.display()))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    // A folder of its own for each file (Envoy reloads every source watching a folder on any move
    // in it) may not exist yet in a fresh volume.
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    let prefix = format!(".{}.switchyard-", file_name.to_string_lossy());
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(mode));
    let mut file = builder
        .tempfile_in(dir)
        .map_err(|e| format!("{}: cannot create a temporary file beside it: {e}", path.display()))?;
    // No fsync: readers need the rename to be atomic, not the data durable (a crash loses nothing
    // the next push would not write again), and fsync can stall for long on a busy disk.
    file.write_all(bytes)
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
        with_filter(
            path,
            EcdsFilter::Wasm {
                wasm: "/w/f.wasm".into(),
                runtime: DEFAULT_WASM_RUNTIME.into(),
            },
        )
    }

    fn with_filter(path: PathBuf, filter: EcdsFilter) -> EcdsFile {
        EcdsFile {
            path,
            filter_name: "switchyard".into(),
            filter,
            admin: None,
        }
    }

    /// The one resource of the document written for `table`.
    fn resource(file: &EcdsFile, table: &str) -> serde_json::Value {
        let doc: serde_json::Value = serde_json::from_slice(&file.document(table).unwrap()).unwrap();
        assert_eq!(doc["resources"].as_array().map(Vec::len), Some(1), "{doc:#}");
        doc["resources"][0].clone()
    }

    #[test]
    fn the_document_is_a_discovery_response_with_the_table_as_a_string_value() {
        let resource = &resource(&ecds("x".into()), "{\"version\":1}");
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
        assert_eq!(config["vm_config"]["runtime"], DEFAULT_WASM_RUNTIME);
    }

    #[test]
    fn the_module_form_is_a_dynamic_module_filter_with_the_table_as_its_filter_config() {
        let module = EcdsFilter::Module {
            name: DEFAULT_MODULE_NAME.into(),
        };
        let file = with_filter("x".into(), module);
        assert_eq!(file.filter.form(), FilterForm::Module);
        let resource = resource(&file, "{\"version\":1}");
        assert_eq!(
            resource["@type"],
            "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig"
        );
        assert_eq!(resource["name"], "switchyard");
        let config = &resource["typed_config"];
        assert_eq!(
            config["@type"],
            "type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter"
        );
        assert_eq!(config["@type"], FilterForm::Module.type_url());
        assert_eq!(config["dynamic_module_config"]["name"], "switchyard_module");
        assert_eq!(config["filter_name"], "switchyard");
        assert_eq!(
            config["filter_config"]["@type"],
            "type.googleapis.com/google.protobuf.StringValue"
        );
        assert_eq!(config["filter_config"]["value"], "{\"version\":1}");
        assert!(
            config.get("config").is_none(),
            "no wasm VM in the module form: {config:#}"
        );
    }

    /// What a binary document says, in the JSON form's shape, read back with the messages of
    /// `switchyard_xds` (field for field what the JSON form writes).
    fn binary_as_json(document: &[u8]) -> serde_json::Value {
        use switchyard_xds::messages::*;
        use switchyard_xds::prost::Message;
        let response = DiscoveryResponse::decode(document).unwrap();
        let [resource] = &response.resources[..] else {
            panic!("one resource: {response:?}");
        };
        let config = TypedExtensionConfig::decode(&resource.value[..]).unwrap();
        let typed = config.typed_config.unwrap();
        let table = |any: Option<Any>| {
            let any = any.unwrap();
            let value = StringValue::decode(&any.value[..]).unwrap().value;
            serde_json::json!({ "@type": any.type_url, "value": value })
        };
        let typed_config = if typed.type_url == switchyard_xds::WASM_FILTER {
            let plugin = Wasm::decode(&typed.value[..]).unwrap().config.unwrap();
            let vm = plugin.vm_config.unwrap();
            serde_json::json!({
                "@type": typed.type_url,
                "config": {
                    "name": plugin.name,
                    "root_id": plugin.root_id,
                    "vm_config": {
                        "vm_id": vm.vm_id,
                        "runtime": vm.runtime,
                        "code": { "local": { "filename": vm.code.unwrap().local.unwrap().filename } }
                    },
                    "configuration": table(plugin.configuration)
                }
            })
        } else {
            let filter = DynamicModuleFilter::decode(&typed.value[..]).unwrap();
            let module = filter.dynamic_module_config.unwrap();
            serde_json::json!({
                "@type": typed.type_url,
                "dynamic_module_config": { "name": module.name, "do_not_close": module.do_not_close },
                "filter_name": filter.filter_name,
                "filter_config": table(filter.filter_config)
            })
        };
        serde_json::json!({
            "resources": [{ "@type": resource.type_url, "name": config.name, "typed_config": typed_config }]
        })
    }

    #[test]
    fn a_pb_file_is_written_in_binary_saying_what_the_json_file_says() {
        let module = EcdsFilter::Module {
            name: DEFAULT_MODULE_NAME.into(),
        };
        let table = "{\"table_shards\": {\"form\": 1}}";
        for filter in [ecds("x".into()).filter, module] {
            let json = with_filter("filter.json".into(), filter.clone());
            let binary = with_filter("filter.pb".into(), filter);
            let from_json: serde_json::Value = serde_json::from_slice(&json.document(table).unwrap()).unwrap();
            assert_eq!(binary_as_json(&binary.document(table).unwrap()), from_json);
        }
    }

    #[test]
    fn the_files_name_says_how_it_is_written_as_envoy_reads_it() {
        for (name, encoding) in [
            ("filter.pb", EcdsEncoding::Protobuf),
            ("filter.json", EcdsEncoding::Json),
            ("filter.yaml", EcdsEncoding::Json),
            ("filter", EcdsEncoding::Json),
            ("filter.pb.json", EcdsEncoding::Json),
        ] {
            assert_eq!(EcdsEncoding::of(Path::new(name)), Ok(encoding), "{name}");
        }
        let error = EcdsEncoding::of(Path::new("f.pb_text")).unwrap_err();
        assert!(
            error.contains("--ecds-file f.pb_text") && error.contains(".pb"),
            "{error}"
        );
    }

    #[test]
    fn a_relative_wasm_is_made_absolute() {
        let EcdsFilter::Wasm { wasm, runtime } = EcdsFilter::local_wasm(Path::new("f.wasm"), "r") else {
            panic!("the wasm form");
        };
        assert!(wasm.is_absolute() && wasm.ends_with("f.wasm"), "{}", wasm.display());
        assert_eq!(runtime, "r");
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
        write_atomically(&replaced, b"{}").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            mode(&replaced),
            mode(&plain),
            "Envoy running as another user must be able to read it"
        );
    }

    #[test]
    fn a_missing_folder_is_created_and_one_that_cannot_be_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("new/folder/filter.json");
        write_atomically(&file, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{}");
        std::fs::write(dir.path().join("blocker"), "").unwrap();
        let error = write_atomically(&dir.path().join("blocker/x/filter.json"), b"{}").unwrap_err();
        assert!(error.contains("blocker/x"), "{error}");
    }
}
