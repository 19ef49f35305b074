//! The plugin configuration as Envoy hands it over, decoded into a [`RouteTable`].
//!
//! Envoy passes the bytes of `PluginConfig.configuration`: the raw text of a
//! `google.protobuf.StringValue`, or the JSON rendering of a `google.protobuf.Struct` (what Istio's
//! `WasmPlugin.pluginConfig` becomes). Both carry the same table document (`table/README.md`). What
//! this module accepts, in order:
//!
//! 1. the table object itself (a JSON object with a `version` key);
//! 2. a JSON string whose contents are any of these forms (a table stored as a string value);
//! 3. an object with exactly one key, `value`, `table` or `config`, whose value is any of these forms
//!    (the wrappers Istio users and `StringValue`-in-`Struct` conversions produce);
//! 4. the compact form, `{"table_z": "…"}` (`switchyard_table::compact`), or the sharded form,
//!    `{"table_shards": …}` (`switchyard_table::shards`, what the sidecar writes to every sink);
//!    their zlib streams are inflated by the [`Inflater`] the caller gives (in Envoy, the host's
//!    `uncompress`: [`crate::uncompress`]).
//!
//! Wrappers nest at most [`MAX_WRAPPING`] deep. Anything else is read as a table, so the error names
//! what the table lacks (for example ``field `version`: missing``).
//!
//! A `Struct` written in Envoy's own configuration reaches the filter as protobuf bytes, not JSON
//! (Envoy passes the `Any`'s payload as is for every type but `StringValue` and `BytesValue`); such
//! bytes are read as a `Struct` (see [`crate::protobuf`]) and then as above.
//!
//! The configuration is read once into the table's document tree (`switchyard_table::json` for
//! JSON text, [`crate::protobuf`] for a `Struct`), with no `serde_json::Value` and no serde derive
//! (`switchyard_table::RouteTable::from_tree` reads the table): that keeps the `.wasm` small and the
//! load fast (BENCHMARKS.md, "Compact table" and "Filter size").

use switchyard_table::compact::Inflater;
use switchyard_table::doc::{Doc, Node};
use switchyard_table::{RouteTable, TableError};

use crate::protobuf::struct_to_doc;

/// How many wrappers (a JSON string, a one-key object) are unwrapped before the table itself.
pub const MAX_WRAPPING: usize = 3;

/// The keys of a one-key wrapper object.
const WRAPPER_KEYS: [&str; 3] = ["value", "table", "config"];

/// Why a plugin configuration gave no table.
#[derive(Debug)]
pub enum ConfigError {
    /// Envoy handed over no configuration at all.
    Empty,
    /// The bytes are text but not JSON, and not a protobuf `Struct` either.
    Unreadable,
    /// The bytes are not UTF-8 (so not JSON text) and not a protobuf `Struct` either.
    NotUtf8 {
        /// The first byte that is not part of a UTF-8 character.
        byte: u8,
        /// Its offset.
        at: usize,
    },
    /// A wrapper could not be read (it is not JSON).
    Wrapper(serde_json::Error),
    /// The table itself is invalid.
    Table(TableError),
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Empty => f.write_str("the plugin configuration is empty; it must be the route table (JSON)"),
            ConfigError::Unreadable => {
                f.write_str("the plugin configuration is neither JSON text nor a google.protobuf.Struct")
            }
            ConfigError::NotUtf8 { byte, at } => write!(
                f,
                "the plugin configuration is not UTF-8 (byte 0x{byte:02x} at offset {at}); the table is JSON text in UTF-8"
            ),
            ConfigError::Wrapper(e) => write!(f, "the plugin configuration is not JSON: {e}"),
            ConfigError::Table(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Decodes the plugin configuration bytes into a validated, indexed table; the compact form's zlib
/// stream is inflated by `inflater` (in Envoy, [`crate::uncompress::HostUncompress`]). The sharded
/// form is decoded whole (the filter keeps it in shards instead: `crate::loaded`).
pub fn load_table(config: &[u8], inflater: &dyn Inflater) -> Result<RouteTable, ConfigError> {
    read_config(config, &mut |doc, node| {
        RouteTable::from_tree_with(doc, node, inflater).map_err(ConfigError::Table)
    })
}

/// What a table's reader is handed: the parsed configuration and its node past the wrappers.
pub type TableReader<'r, R> = dyn for<'d> FnMut(&Doc<'d>, Node<'d>) -> Result<R, ConfigError> + 'r;

/// Parses the plugin configuration bytes (JSON text, a `Struct` in protobuf bytes), unwraps the
/// wrappers, and hands the table's node to `table` (see [`load_table`]).
pub fn read_config<R>(config: &[u8], table: &mut TableReader<'_, R>) -> Result<R, ConfigError> {
    if config.iter().all(u8::is_ascii_whitespace) {
        return Err(ConfigError::Empty);
    }
    let utf8 = std::str::from_utf8(config);
    let json_text = utf8.ok().filter(|t| t.trim_start().starts_with(['{', '"']));
    if let Some(text) = json_text {
        let result = load_text(text, 0, table);
        // A serialized Struct starts with byte 0x0a, a newline: only if the text fails is it retried so.
        if result.is_err() && config.first() == Some(&b'\n') {
            if let Some(doc) = struct_to_doc(config) {
                return load_node(&doc, doc.root(), 0, table);
            }
        }
        return result;
    }
    match (struct_to_doc(config), utf8) {
        (Some(doc), _) => load_node(&doc, doc.root(), 0, table),
        (None, Ok(_)) => Err(ConfigError::Unreadable),
        (None, Err(e)) => Err(ConfigError::NotUtf8 {
            byte: config.get(e.valid_up_to()).copied().unwrap_or(0),
            at: e.valid_up_to(),
        }),
    }
}

/// JSON text: parsed, then read as [`load_node`] does. Text that is not JSON is a wrapper error
/// when it looks like a JSON string (a wrapper), else the table's.
fn load_text<R>(text: &str, depth: usize, table: &mut TableReader<'_, R>) -> Result<R, ConfigError> {
    if text.trim_start().is_empty() {
        return Err(ConfigError::Empty);
    }
    match switchyard_table::json::parse(text.as_bytes()) {
        Ok(doc) => load_node(&doc, doc.root(), depth, table),
        Err(e) if text.trim_start().starts_with('"') => Err(ConfigError::Wrapper(e)),
        Err(e) => Err(ConfigError::Table(TableError::Json(e))),
    }
}

/// A parsed configuration (`node` of `doc`): wrappers are unwrapped, then the table (or its compact
/// form) is read.
fn load_node<'d, R>(
    doc: &Doc<'d>,
    node: Node<'d>,
    depth: usize,
    table: &mut TableReader<'_, R>,
) -> Result<R, ConfigError> {
    if depth < MAX_WRAPPING {
        if let Node::Str(inner) = node {
            return load_text(doc.text(inner), depth + 1, table);
        }
        if let Some(inner) = WRAPPER_KEYS.iter().find_map(|key| doc.only_field(node, key)) {
            return load_node(doc, inner, depth + 1, table);
        }
    }
    table(doc, node)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_table::compact::Miniz;

    fn load(config: &[u8]) -> Result<RouteTable, ConfigError> {
        load_table(config, &Miniz)
    }

    const TABLE: &str = r#"{"version":1,"generation":"g1","rules":[
        {"name":"Ingress/p/a#0","host":"example.net","path":{"type":"prefix","value":"/"},
         "action":{"route":{"backends":[{"cluster":"p/a:80"}]}}}]}"#;

    fn generation(config: &str) -> String {
        match load(config.as_bytes()) {
            Ok(table) => table.generation().to_owned(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn raw_table_from_a_string_value_is_read() {
        assert_eq!(generation(TABLE), "g1");
    }

    #[test]
    fn istio_wrappers_are_unwrapped() {
        let as_string = serde_json::to_string(TABLE).unwrap();
        assert_eq!(generation(&as_string), "g1");
        assert_eq!(generation(&format!(r#"{{"value": {TABLE}}}"#)), "g1");
        assert_eq!(generation(&format!(r#"{{"value": {as_string}}}"#)), "g1");
        assert_eq!(generation(&format!(r#"{{"table": {TABLE}}}"#)), "g1");
        assert_eq!(
            generation(&format!(r#"  {{"config": {{"value": {as_string}}}}}"#)),
            "g1"
        );
    }

    #[test]
    fn wrapping_is_bounded() {
        let deep = format!(r#"{{"value":{{"value":{{"value":{{"value":{TABLE}}}}}}}}}"#);
        assert!(generation(&deep).starts_with("error: "), "{}", generation(&deep));
    }

    #[test]
    fn a_key_written_twice_is_refused_in_a_wrapper_and_in_the_table() {
        let error = generation(&format!(r#"{{"value": {TABLE}, "value": {TABLE}}}"#));
        assert!(error.contains("field `value` written twice"), "{error}");
        let error = generation(&format!(
            r#"{{"value": {}}}"#,
            TABLE.replace(r#""version":1"#, r#""version":1,"version":1"#)
        ));
        assert!(error.contains("field `version` written twice"), "{error}");
    }

    #[test]
    fn an_invalid_table_names_the_rule_and_field() {
        let bad = TABLE.replace(r#""value":"/""#, r#""value":"nope""#);
        let error = generation(&bad);
        assert!(
            error.contains("Ingress/p/a#0") && error.contains("path.value"),
            "{error}"
        );
        let wrapped_bad = format!(r#"{{"value": {bad}}}"#);
        assert_eq!(generation(&wrapped_bad), error);
    }

    #[test]
    fn control_characters_in_a_cluster_or_header_value_refuse_the_table() {
        for control in ["\\r\\n", "\\n", "\\u0000", "\\u001b"] {
            let bad = TABLE.replace("p/a:80", &format!("p/a:80{control}x"));
            let error = generation(&bad);
            assert!(
                error.contains("Ingress/p/a#0") && error.contains("action.route.backends[0].cluster"),
                "{error}"
            );
            let header = format!(r#"{{"cluster":"p/a:80"}}],"set_headers":[{{"name":"x-team","value":"a{control}"}}]"#);
            let error = generation(&TABLE.replace(r#"{"cluster":"p/a:80"}]"#, &header));
            assert!(error.contains("action.route.set_headers[0].value"), "{error}");
        }
    }

    #[test]
    fn the_compact_form_is_inflated_by_the_inflater_given_and_json_needs_none() {
        use crate::host::HostCallFailed;
        use crate::uncompress::HostUncompress;
        let table: serde_json::Value = serde_json::from_str(TABLE).unwrap();
        let compact = switchyard_table::compact::to_text(&table).unwrap();
        let inflated_by = std::cell::Cell::new(0);
        let host = HostUncompress(|deflated: &[u8]| {
            inflated_by.set(inflated_by.get() + 1);
            Miniz.inflate_zlib(deflated, usize::MAX).map_err(|_| HostCallFailed(3))
        });
        assert_eq!(
            load_table(compact.as_bytes(), &host).map(|t| t.rules().len()).ok(),
            Some(1)
        );
        assert_eq!(inflated_by.get(), 1, "the host inflated it");
        let wrapped = format!(r#"{{"value": {}}}"#, serde_json::to_string(&compact).unwrap());
        assert!(load_table(wrapped.as_bytes(), &host).is_ok());

        let absent = HostUncompress(|_: &[u8]| Err(HostCallFailed(1)));
        let error = load_table(compact.as_bytes(), &absent)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("no foreign function `uncompress`") && error.contains("JSON form"),
            "{error}"
        );
        assert!(load_table(TABLE.as_bytes(), &absent).is_ok(), "JSON needs no inflater");
    }

    #[test]
    fn empty_and_non_json_configurations_are_refused() {
        assert!(matches!(load(b""), Err(ConfigError::Empty)));
        assert!(matches!(load(b"  \n"), Err(ConfigError::Empty)));
        assert!(matches!(
            load(&[0xff, 0xfe]),
            Err(ConfigError::NotUtf8 { byte: 0xff, at: 0 })
        ));
        // A JSON table with one byte that is not UTF-8 is reported as that, not as "not JSON".
        let mut latin1 = TABLE.as_bytes().to_vec();
        latin1[10] = 0xe9;
        let error = load(&latin1).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("not UTF-8 (byte 0xe9 at offset 10)"), "{error}");
        assert!(matches!(load(b"rules: []"), Err(ConfigError::Unreadable)));
        assert!(matches!(load(b"\"unterminated"), Err(ConfigError::Wrapper(_))));
        assert!(generation(r#"{"rules":[]}"#).contains("version"));
    }
}
