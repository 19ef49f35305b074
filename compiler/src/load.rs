//! Reading manifests: files and directories, multi-document YAML, JSON, `kind: List`, and old
//! Ingress API versions, into [`Objects`] plus warnings for the summary.
//!
//! [`parse_text`] is pure (text in, objects out) and [`read_paths`] does the file I/O around it.
//! Every error names the file, the line and, where it can, the field and the likely fix.
//! `serde_yaml` is deprecated upstream but remains what the kube ecosystem reads manifests with.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::objects::{EachKind, Kind, Object, Objects};

/// What was read.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The objects Switchyard uses.
    pub objects: Objects,
    /// Conversions and oddities worth a line in the summary.
    pub warnings: Vec<String>,
    /// Objects of kinds Switchyard does not use, counted by `apiVersion kind`.
    pub skipped: BTreeMap<String, usize>,
    /// Files read.
    pub files: usize,
    /// The `data` of every `v1` ConfigMap, by namespace and name: ingress-nginx's ConfigMap
    /// (ROUTING.md §7.8) is one of them. Counted in `skipped` too (no kind of the compiler's).
    pub config_maps: BTreeMap<(String, String), BTreeMap<String, String>>,
    /// The documents and objects [`read_paths`] could not read, each with its file, object and
    /// field: the rest was read around them.
    pub errors: Vec<LoadError>,
    /// Where each object was defined, to report duplicates.
    seen: BTreeMap<(String, String, String), String>,
}

/// Input that cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A file or directory that cannot be read.
    #[error("{path}: cannot read: {message}")]
    Io {
        /// The path.
        path: String,
        /// The operating system's words.
        message: String,
    },
    /// YAML or JSON that does not parse.
    #[error("{file}:{line}:{column}: {message}{hint}")]
    Syntax {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
        /// The likely fix, when one is known (starts with a newline).
        hint: String,
    },
    /// A document that parses but is not a valid object of its kind.
    #[error("{file}:{line}: {what}: field `{field}`: {message}")]
    Schema {
        /// The file.
        file: String,
        /// The line where the document starts.
        line: usize,
        /// `Ingress default/web`.
        what: String,
        /// The field at fault, as a path (`spec.rules[0].host`).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A path that holds no manifest at all.
    #[error("{path}: no *.yaml, *.yml or *.json file found")]
    NoManifests {
        /// The path given.
        path: String,
    },
}

/// Reads files and directories (recursively: `*.yaml`, `*.yml`, `*.json`), in sorted path order.
/// A path that cannot be read, or holds no manifest, is an error; a document or an object that does
/// not parse or decode is not: it is listed in [`Loaded::errors`] and the rest is read (a migration
/// dry run over a whole repository wants every problem at once).
pub fn read_paths(paths: &[PathBuf]) -> Result<Loaded, LoadError> {
    let mut files = Vec::new();
    for path in paths {
        let before = files.len();
        collect(path, &mut files, true)?;
        if files.len() == before {
            return Err(LoadError::NoManifests {
                path: path.display().to_string(),
            });
        }
    }
    files.sort();
    files.dedup();
    let mut loaded = Loaded::default();
    for file in &files {
        let name = file.display().to_string();
        let text = std::fs::read_to_string(file).map_err(|e| LoadError::Io {
            path: name.clone(),
            message: e.to_string(),
        })?;
        let mut errors = Vec::new();
        read_text(&text, &name, &mut loaded, &mut errors);
        loaded.errors.extend(errors);
        loaded.files += 1;
    }
    Ok(loaded)
}

/// The manifest files under `dir` (recursively: `*.yaml`, `*.yml`, `*.json`), sorted; an empty
/// list when there are none (`switchyard watch` starts from an empty folder as well).
pub fn manifest_files(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let mut files = Vec::new();
    collect(dir, &mut files, false)?;
    files.sort();
    Ok(files)
}

fn collect(path: &Path, files: &mut Vec<PathBuf>, given: bool) -> Result<(), LoadError> {
    let io = |e: std::io::Error| LoadError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(io)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(io)?;
        entries.sort();
        for entry in entries {
            collect(&entry, files, false)?;
        }
    } else if given || is_manifest(path) {
        files.push(path.to_path_buf());
    }
    Ok(())
}

fn is_manifest(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json"))
}

/// Parses one file's text (YAML, possibly several documents, or JSON) into `loaded`; the first
/// document or object that does not parse or decode is the error (the others are read all the same).
pub fn parse_text(text: &str, file: &str, loaded: &mut Loaded) -> Result<(), LoadError> {
    let mut errors = Vec::new();
    read_text(text, file, loaded, &mut errors);
    errors.into_iter().next().map_or(Ok(()), Err)
}

/// Parses one file's text into `loaded`, each document or object that does not parse or decode
/// into `errors`, and the rest read around it.
fn read_text(text: &str, file: &str, loaded: &mut Loaded, errors: &mut Vec<LoadError>) {
    if file.ends_with(".json") {
        match serde_json::from_str::<Value>(text) {
            Ok(value) => add_value(value, file, 1, loaded, errors),
            Err(e) => errors.push(LoadError::Syntax {
                file: file.to_owned(),
                line: e.line(),
                column: e.column(),
                message: format!("JSON error: {e}"),
                hint: String::new(),
            }),
        }
        return;
    }
    for (start, document) in split_documents(text) {
        match serde_yaml::from_str::<Value>(&document) {
            Ok(value) => add_value(value, file, start, loaded, errors),
            Err(e) => errors.push(yaml_error(&e, file, start, &document)),
        }
    }
}

/// Splits YAML text at `---` lines; returns (1-based line of the document's first line, text).
fn split_documents(text: &str) -> Vec<(usize, String)> {
    let mut documents = Vec::new();
    let mut start = 1;
    let mut current = String::new();
    for (i, line) in text.lines().enumerate() {
        let marker = line
            .strip_prefix("---")
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '#']));
        if marker {
            documents.push((start, std::mem::take(&mut current)));
            start = i + 2;
            // A document may start on the marker line (`--- {kind: List}`): keep its text.
            let rest = line.get(3..).unwrap_or_default().trim_start();
            if !rest.is_empty() && !rest.starts_with('#') {
                current.push_str(rest);
                current.push('\n');
                start = i + 1;
            }
            continue;
        }
        if line == "..." {
            continue;
        }
        current.push_str(line);
        current.push('\n');
    }
    documents.push((start, current));
    documents
        .into_iter()
        .filter(|(_, d)| {
            d.lines()
                .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        })
        .collect()
}

fn yaml_error(error: &serde_yaml::Error, file: &str, start: usize, document: &str) -> LoadError {
    let (line, column) = error.location().map_or((0, 0), |l| (l.line(), l.column()));
    let source_line = document.lines().nth(line.saturating_sub(1)).unwrap_or_default();
    // serde_yaml counts lines within the document; say them as lines of the file.
    let message = shift_lines(&error.to_string(), start.saturating_sub(1));
    let hint =
        if source_line.contains(": *") || source_line.trim_start().starts_with("- *") || message.contains("anchor") {
            let fixed = quote_star(source_line);
            format!(
                "\nhint: a value starting with '*' is a YAML alias; a wildcard host must be quoted, as in `{}`",
                fixed.trim()
            )
        } else {
            String::new()
        };
    LoadError::Syntax {
        file: file.to_owned(),
        line: start + line.saturating_sub(1),
        column,
        message: format!("YAML error: {message}"),
        hint,
    }
}

/// Rewrites every `line N` in a parser message to `line N + offset`.
fn shift_lines(message: &str, offset: usize) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        let (head, tail) = rest.split_at(at + 5);
        out.push_str(head);
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        match tail[..digits].parse::<usize>() {
            Ok(n) => out.push_str(&(n + offset).to_string()),
            Err(_) => out.push_str(&tail[..digits]),
        }
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

/// `host: *.net` → `host: "*.net"`.
fn quote_star(line: &str) -> String {
    match line.find('*') {
        Some(at) => {
            let (head, value) = line.split_at(at);
            format!("{head}\"{}\"", value.trim_end())
        }
        None => line.to_owned(),
    }
}

/// Adds one document (or each item of a `List`) to `loaded`; what does not decode goes to `errors`.
fn add_value(value: Value, file: &str, line: usize, loaded: &mut Loaded, errors: &mut Vec<LoadError>) {
    let is_list = |object: &Map<String, Value>| {
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
        kind == "List" || kind.ends_with("List") && object.get("items").is_some_and(Value::is_array)
    };
    match value {
        Value::Object(mut object) if is_list(&object) => {
            let items = match object.remove("items") {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            };
            for item in items {
                add_value(item, file, line, loaded, errors);
            }
        }
        value => {
            if let Err(error) = add_object(value, file, line, loaded) {
                errors.push(error);
            }
        }
    }
}

/// Adds one object to `loaded`.
fn add_object(value: Value, file: &str, line: usize, loaded: &mut Loaded) -> Result<(), LoadError> {
    let Value::Object(mut object) = value else {
        if value.is_null() {
            return Ok(());
        }
        return Err(LoadError::Schema {
            file: file.to_owned(),
            line,
            what: "document".to_owned(),
            field: "(top level)".to_owned(),
            message: "a document must be a Kubernetes object: a mapping with apiVersion, kind and metadata".to_owned(),
        });
    };
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let meta = object.get("metadata");
    let namespace = meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_owned();
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let cluster_scoped = Kind::named(&kind).is_some_and(|k| !k.is_namespaced());
    let what = if cluster_scoped {
        format!("{kind} {name}")
    } else {
        format!("{kind} {namespace}/{name}")
    };
    let schema = |field: &str, message: String| LoadError::Schema {
        file: file.to_owned(),
        line,
        what: what.clone(),
        field: field.to_owned(),
        message,
    };
    let known = Kind::named(&kind)
        .filter(|k| k.api_version() == api_version || k.older_api_versions().contains(&api_version.as_str()));
    let Some(known) = known else {
        if kind == "ConfigMap" && api_version == "v1" {
            let data = object.get("data").cloned().unwrap_or(Value::Null);
            let data: BTreeMap<String, String> = match data {
                Value::Null => BTreeMap::new(),
                data => serde_json::from_value(data)
                    .map_err(|e| schema("data", format!("a ConfigMap's data maps names to strings: {e}")))?,
            };
            loaded.config_maps.insert((namespace.clone(), name.clone()), data);
        }
        let label = if kind.is_empty() {
            "(no kind)".to_owned()
        } else {
            format!("{api_version} {kind}")
        };
        *loaded.skipped.entry(label).or_default() += 1;
        return Ok(());
    };
    if name.is_empty() {
        return Err(schema("metadata.name", "every object needs a name".to_owned()));
    }
    let at = format!("{file}:{line}");
    let identity = (
        kind.clone(),
        if cluster_scoped {
            String::new()
        } else {
            namespace.clone()
        },
        name.clone(),
    );
    if let Some(first) = loaded.seen.insert(identity, at.clone()) {
        loaded.warnings.push(format!(
            "{at}: {what} is also defined at {first}; only one copy is used (the same one whatever the file order)"
        ));
    }
    match known {
        Kind::Ingress => upgrade_ingress(
            &mut object,
            &api_version,
            &format!("{at}: {what}"),
            &mut loaded.warnings,
        ),
        Kind::IngressClass => {
            object.insert("apiVersion".to_owned(), Value::from(known.api_version()));
        }
        Kind::Service
        | Kind::Secret
        | Kind::EndpointSlice
        | Kind::HTTPProxy
        | Kind::VirtualServer
        | Kind::VirtualServerRoute
        | Kind::TransportServer
        | Kind::GlobalConfiguration
        | Kind::Policy => {}
    }
    /// Decodes the object into its kind's type and adds it to its vector.
    struct Add<'l, F> {
        object: Option<Map<String, Value>>,
        schema: &'l F,
        objects: &'l mut Objects,
        failed: Option<LoadError>,
    }
    impl<F: Fn(&str, String) -> LoadError> EachKind for Add<'_, F> {
        fn kind<T: Object>(&mut self) {
            let Some(object) = self.object.take() else { return };
            match typed::<T>(object, self.schema) {
                Ok(typed) => T::of_mut(self.objects).push(typed),
                Err(error) => self.failed = Some(error),
            }
        }
    }
    let mut add = Add {
        object: Some(object),
        schema: &schema,
        objects: &mut loaded.objects,
        failed: None,
    };
    Objects::one_kind(known, &mut add);
    if let Some(error) = add.failed {
        return Err(error);
    }
    Ok(())
}

/// The object decoded into its type, behind the [`Arc`] that [`Objects`] holds it in.
fn typed<T: serde::de::DeserializeOwned>(
    object: Map<String, Value>,
    schema: &impl Fn(&str, String) -> LoadError,
) -> Result<Arc<T>, LoadError> {
    serde_path_to_error::deserialize(Value::Object(object))
        .map(Arc::new)
        .map_err(|e| {
            let field = e.path().to_string();
            schema(&field, e.into_inner().to_string())
        })
}

/// A warning's subject and its note, as the loader (and the sidecar's sources) write them,
/// `FILE:LINE: Kind namespace/name: note` or `Subject: note`: the subject, and the note without
/// a count in parentheses at its end, so that the same note about many resources reads once
/// (`apiVersion extensions/v1beta1 is converted to networking.k8s.io/v1`, 16 Ingresses).
pub fn warning_parts(warning: &str) -> (&str, &str) {
    let mut parts = warning.splitn(3, ": ");
    let first = parts.next().unwrap_or_default();
    // `FILE:LINE`: the loader's, whose subject goes on to the resource.
    let at_line = first
        .rsplit_once(':')
        .is_some_and(|(_, line)| !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()));
    let (subject_len, note) = match (parts.next(), parts.next()) {
        (Some(what), Some(note)) if at_line => (first.len() + 2 + what.len(), note),
        (Some(_), _) => (first.len(), &warning[first.len() + 2..]),
        _ => (0, warning),
    };
    (&warning[..subject_len], without_count(note))
}

/// A note without the count in parentheses at its end (`… read as ImplementationSpecific (3)`).
fn without_count(note: &str) -> &str {
    match note.strip_suffix(')').and_then(|n| n.rsplit_once(" (")) {
        Some((text, count)) if !count.is_empty() && count.bytes().all(|b| b.is_ascii_digit()) => text,
        _ => note,
    }
}

/// Converts an old Ingress (`extensions/v1beta1`, `networking.k8s.io/v1beta1`, or a v1 Ingress with
/// the old backend fields) to `networking.k8s.io/v1`, with a warning for each kind of change.
fn upgrade_ingress(object: &mut Map<String, Value>, api_version: &str, what: &str, warnings: &mut Vec<String>) {
    let old_version = api_version != "networking.k8s.io/v1";
    if old_version {
        warnings.push(format!(
            "{what}: apiVersion {api_version} is converted to networking.k8s.io/v1"
        ));
        object.insert("apiVersion".to_owned(), Value::from("networking.k8s.io/v1"));
    }
    let Some(Value::Object(spec)) = object.get_mut("spec") else {
        return;
    };
    let mut old_backends = 0;
    let mut missing_path_type = 0;
    if let Some(backend) = spec.remove("backend") {
        spec.entry("defaultBackend").or_insert(backend);
    }
    if let Some(Value::Object(backend)) = spec.get_mut("defaultBackend") {
        old_backends += upgrade_backend(backend);
    }
    if let Some(Value::Array(rules)) = spec.get_mut("rules") {
        for rule in rules {
            let Some(Value::Array(paths)) = rule.pointer_mut("/http/paths") else {
                continue;
            };
            for path in paths {
                let Value::Object(path) = path else { continue };
                if !path.contains_key("pathType") {
                    path.insert("pathType".to_owned(), Value::from("ImplementationSpecific"));
                    missing_path_type += 1;
                }
                if let Some(Value::Object(backend)) = path.get_mut("backend") {
                    old_backends += upgrade_backend(backend);
                }
            }
        }
    }
    if old_backends > 0 {
        warnings.push(format!(
            "{what}: backends use the old serviceName/servicePort fields; read as service.name/service.port ({old_backends})"
        ));
    }
    if missing_path_type > 0 && !old_version {
        warnings.push(format!(
            "{what}: paths have no pathType; read as ImplementationSpecific ({missing_path_type})"
        ));
    }
}

/// `serviceName`/`servicePort` → `service: {name, port: {number|name}}`; returns 1 when converted.
fn upgrade_backend(backend: &mut Map<String, Value>) -> usize {
    let name = backend.remove("serviceName");
    let port = backend.remove("servicePort");
    if name.is_none() && port.is_none() {
        return 0;
    }
    let port = match port {
        Some(Value::Number(n)) => Some(serde_json::json!({ "number": n })),
        Some(Value::String(s)) => match s.parse::<i32>() {
            Ok(n) => Some(serde_json::json!({ "number": n })),
            Err(_) => Some(serde_json::json!({ "name": s })),
        },
        _ => None,
    };
    let mut service = Map::new();
    service.insert("name".to_owned(), name.unwrap_or(Value::from("")));
    if let Some(port) = port {
        service.insert("port".to_owned(), port);
    }
    backend.entry("service").or_insert(Value::Object(service));
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_split_at_marker_lines_with_their_first_line() {
        let docs = split_documents("# c\n---\na: 1\n--- # two\nb: 2\n---\n\n--- {c: 3}\n");
        let starts: Vec<usize> = docs.iter().map(|(line, _)| *line).collect();
        assert_eq!(starts, [3, 5, 8]);
        assert_eq!(docs[2].1, "{c: 3}\n");
    }

    #[test]
    fn parser_line_numbers_shift_to_file_lines() {
        assert_eq!(
            shift_lines("x at line 3 column 4, while y at line 2", 10),
            "x at line 13 column 4, while y at line 12"
        );
    }

    #[test]
    fn unquoted_star_is_quoted_in_the_hint() {
        assert_eq!(quote_star("    - host: *.net"), "    - host: \"*.net\"");
    }

    #[test]
    fn a_warning_splits_into_its_subject_and_a_note_the_same_for_every_resource() {
        assert_eq!(
            warning_parts(
                "m/a.yaml:12: Ingress shop/a: apiVersion extensions/v1beta1 is converted to networking.k8s.io/v1"
            ),
            (
                "m/a.yaml:12: Ingress shop/a",
                "apiVersion extensions/v1beta1 is converted to networking.k8s.io/v1"
            )
        );
        assert_eq!(
            warning_parts("m/b.yaml:3: Ingress shop/b: paths have no pathType; read as ImplementationSpecific (2)"),
            (
                "m/b.yaml:3: Ingress shop/b",
                "paths have no pathType; read as ImplementationSpecific"
            )
        );
        assert_eq!(
            warning_parts("ConfigMap n/c: not honoured (not routing, or an invalid value: the default stands): x"),
            (
                "ConfigMap n/c",
                "not honoured (not routing, or an invalid value: the default stands): x"
            )
        );
        assert_eq!(warning_parts("no subject"), ("", "no subject"));
    }
}
