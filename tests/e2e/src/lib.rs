//! End-to-end harness: a real Envoy (from `ENVOY_BIN`) loading the real filter (`SWITCHYARD_WASM`)
//! through ECDS, local backends that answer with their own name, and a tiny HTTP/1.1 client. The
//! same harness runs the native dynamic module (`SWITCHYARD_MODULE`, [`FilterForm::Module`]) in the
//! wasm filter's place.
//!
//! Everything listens on 127.0.0.1 ports the OS picks (Envoy's listener and admin on port 0, read
//! back from the admin API), so tests run in parallel. Envoy is killed when its [`Envoy`] drops.
//! No mocks: requests go through Envoy's codec, the wasm filter under V8, Envoy's router and a TCP
//! connection to the backend, which reports what it saw.

pub mod bench;
pub mod https;
pub mod l4;
pub mod process;
pub mod protocol;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// The ECDS resource name of the filter (the HTTP filter's `name` in Envoy's listener).
pub const FILTER_NAME: &str = "switchyard";

/// How long Envoy gets to start or to apply a configuration update.
use process::{EnvoyProcess, PATIENCE};

/// A path from an environment variable that must be set (the Makefile sets it); the tests fail,
/// never skip, without it.
pub fn required_path(variable: &str) -> PathBuf {
    let Some(value) = std::env::var_os(variable) else {
        panic!("{variable} is not set: run the Envoy tests with `make test-envoy` (it builds the filter and installs Envoy)")
    };
    let path = PathBuf::from(value);
    assert!(path.is_file(), "{variable}={} is not a file", path.display());
    std::fs::canonicalize(&path).unwrap_or(path)
}

// ---- backends ---------------------------------------------------------------------------------

/// One backend: a thread per connection, HTTP/1.1 keep-alive, answering every request with
/// `200` and a body naming itself, the path it received, every request header and the request body.
pub struct Backend {
    /// The name it answers with.
    pub name: String,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl Backend {
    /// Starts a backend named `name` on a free 127.0.0.1 port.
    pub fn start(name: &str) -> std::io::Result<Backend> {
        Backend::start_on(name, "127.0.0.1:0")
    }

    /// Starts a backend named `name` on `addr`.
    pub fn start_on(name: &str, addr: &str) -> std::io::Result<Backend> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let owned = name.to_owned();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let name = owned.clone();
                thread::spawn(move || serve_connection(&name, stream));
            }
        });
        Ok(Backend {
            name: name.to_owned(),
            addr,
        })
    }
}

/// A chunked body, read to its last chunk and trailers; `None` when the connection ends first.
fn read_chunked(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let size = usize::from_str_radix(line.trim().split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            // Trailers, to the empty line.
            loop {
                let mut trailer = String::new();
                if reader.read_line(&mut trailer).ok()? == 0 || trailer.trim().is_empty() {
                    return Some(body);
                }
            }
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..]).ok()?;
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf).ok()?;
    }
}

fn serve_connection(name: &str, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let Ok(write_half) = stream.try_clone() else { return };
    let mut writer = write_half;
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        match reader.read_line(&mut request_line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let path = request_line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut headers = Vec::new();
        let mut content_length = 0usize;
        let mut close = false;
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((key, value)) = line.split_once(':') {
                let (key, value) = (key.trim().to_ascii_lowercase(), value.trim().to_owned());
                if key == "content-length" {
                    content_length = value.parse().unwrap_or(0);
                }
                if key == "connection" && value.eq_ignore_ascii_case("close") {
                    close = true;
                }
                headers.push((key, value));
            }
        }
        let chunked = headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
        let body_in = match chunked {
            true => match read_chunked(&mut reader) {
                Some(body) => body,
                None => return,
            },
            false => {
                let mut body = vec![0; content_length];
                if reader.read_exact(&mut body).is_err() {
                    return;
                }
                body
            }
        };
        let mut body = format!("backend: {name}\npath: {path}\n");
        for (key, value) in &headers {
            body.push_str(&format!("header: {key}: {value}\n"));
        }
        if !body_in.is_empty() {
            body.push_str(&format!("body: {}\n", String::from_utf8_lossy(&body_in)));
        }
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-backend: {name}\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if writer.write_all(response.as_bytes()).is_err() || close {
            return;
        }
    }
}

// ---- client -----------------------------------------------------------------------------------

/// An HTTP/1.1 request to send through Envoy.
#[derive(Debug, Clone)]
pub struct Request {
    /// Method.
    pub method: String,
    /// The `Host` header.
    pub host: String,
    /// Path and query.
    pub path: String,
    /// Further headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body, sent with its `content-length` when not empty.
    pub body: String,
}

/// A GET of `path` on `host`.
pub fn get(host: &str, path: &str) -> Request {
    Request {
        method: "GET".into(),
        host: host.into(),
        path: path.into(),
        headers: Vec::new(),
        body: String::new(),
    }
}

impl Request {
    /// With one more header.
    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// With another method.
    pub fn method(mut self, method: &str) -> Request {
        self.method = method.into();
        self
    }

    /// With a body.
    pub fn body(mut self, body: &str) -> Request {
        self.body = body.into();
        self
    }
}

/// A response as the client read it.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers (names lowercase), in order.
    pub headers: Vec<(String, String)>,
    /// The body as text.
    pub body: String,
}

impl Response {
    /// The first value of a response header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The backend that answered (from its body), or `None` for a local reply.
    pub fn backend(&self) -> Option<&str> {
        self.body.lines().next()?.strip_prefix("backend: ")
    }

    /// The path the backend received.
    pub fn upstream_path(&self) -> Option<&str> {
        self.body.lines().find_map(|l| l.strip_prefix("path: "))
    }

    /// The request body the backend received (one line), if any.
    pub fn upstream_body(&self) -> Option<&str> {
        self.body.lines().find_map(|l| l.strip_prefix("body: "))
    }

    /// The values of a request header as the backend received it.
    pub fn upstream_header(&self, name: &str) -> Vec<&str> {
        let prefix = format!("header: {name}: ");
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix(prefix.as_str()))
            .collect()
    }
}

/// Sends `request` to `addr` on a fresh connection and reads the whole response.
pub fn send(addr: SocketAddr, request: &Request) -> std::io::Result<Response> {
    let stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    send_on(stream, request)
}

/// Sends `request` on `stream` (a fresh connection, plain or TLS) and reads the whole response.
pub fn send_on(mut stream: impl Read + Write, request: &Request) -> std::io::Result<Response> {
    let mut text = format!(
        "{} {} HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n",
        request.method, request.path, request.host
    );
    for (key, value) in &request.headers {
        text.push_str(&format!("{key}: {value}\r\n"));
    }
    if !request.body.is_empty() {
        text.push_str(&format!("content-length: {}\r\n", request.body.len()));
    }
    text.push_str("\r\n");
    text.push_str(&request.body);
    stream.write_all(text.as_bytes())?;
    // Read up to the end of the body as framed by content-length or chunking, not to EOF: Envoy may
    // delay closing after a local reply (its delayed-close timeout is 1 s).
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        if response_complete(&raw) {
            break;
        }
    }
    parse_response(&raw)
        .ok_or_else(|| std::io::Error::other(format!("bad response: {}", String::from_utf8_lossy(&raw))))
}

/// Whether `raw` holds a whole response (headers and the body they announce).
pub(crate) fn response_complete(raw: &[u8]) -> bool {
    let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let body = &raw[split + 4..];
    if let Some(length) = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        return body.len() >= length;
    }
    if head
        .lines()
        .any(|l| l.starts_with("transfer-encoding:") && l.contains("chunked"))
    {
        return body.ends_with(b"0\r\n\r\n");
    }
    false
}

fn parse_response(raw: &[u8]) -> Option<Response> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..split]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body)?;
    }
    Some(Response {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn dechunk(mut raw: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|w| w == b"\r\n")?;
        let size = usize::from_str_radix(std::str::from_utf8(&raw[..line_end]).ok()?.trim(), 16).ok()?;
        raw = &raw[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(raw.get(..size)?);
        raw = raw.get(size + 2..)?;
    }
}

// ---- Envoy ------------------------------------------------------------------------------------

/// How Envoy hands the table to the filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigForm {
    /// `google.protobuf.StringValue` holding the JSON text (what the sidecar writes).
    StringValue,
    /// `google.protobuf.Struct` holding the table object (what Istio's `WasmPlugin.pluginConfig` is).
    Struct,
}

/// `table` as the `google.protobuf.Any` Envoy hands to the filter (the wasm filter's plugin
/// configuration, the dynamic module's filter configuration).
fn configuration_any(table: &str, form: ConfigForm) -> serde_json::Value {
    match form {
        ConfigForm::StringValue => serde_json::json!({
            "@type": "type.googleapis.com/google.protobuf.StringValue",
            "value": table,
        }),
        ConfigForm::Struct => {
            let value: serde_json::Value = serde_json::from_str(table).unwrap_or(serde_json::Value::Null);
            serde_json::json!({ "@type": "type.googleapis.com/google.protobuf.Struct", "value": value })
        }
    }
}

/// Which form of Switchyard's filter an [`Envoy`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterForm {
    /// The proxy-wasm filter under V8 (`SWITCHYARD_WASM`).
    Wasm,
    /// The native dynamic module (`SWITCHYARD_MODULE`, a `lib<name>.so`), found by Envoy through
    /// `ENVOY_DYNAMIC_MODULES_SEARCH_PATH`.
    Module,
    /// The same module as Envoy's cluster specifier: the route's `cluster_specifier_plugin` picks
    /// the cluster during the route match, by the table of the module's filter beside it (named
    /// [`ACTIONS_FILTER_NAME`], through the same ECDS file), which answers only the actions.
    ModuleClusterSpecifier,
}

/// The `filter_name` of the module's filter beside its cluster specifier (the module's
/// `cluster_specifier::ACTIONS_FILTER_NAME`); the specifier's `specifier_name` names it.
pub const ACTIONS_FILTER_NAME: &str = "switchyard-actions";

impl FilterForm {
    /// The form `SWITCHYARD_FILTER_FORM` names (`wasm`, the default, or `module`): `make test-module`
    /// runs the wasm filter's suites again through the module with `module`.
    pub fn from_env() -> FilterForm {
        match std::env::var("SWITCHYARD_FILTER_FORM").as_deref() {
            Ok("module") => FilterForm::Module,
            Ok("module-cs") => FilterForm::ModuleClusterSpecifier,
            Ok("wasm") | Err(_) => FilterForm::Wasm,
            Ok(other) => panic!("SWITCHYARD_FILTER_FORM={other}: `wasm`, `module` or `module-cs`"),
        }
    }

    /// The environment variable naming the filter's file.
    pub fn variable(self) -> &'static str {
        match self {
            FilterForm::Wasm => "SWITCHYARD_WASM",
            FilterForm::Module | FilterForm::ModuleClusterSpecifier => "SWITCHYARD_MODULE",
        }
    }

    /// The prefix Envoy puts before the filter's metrics: `wasmcustom` for a Wasm filter's, the
    /// dynamic-module filter's default metrics namespace for the module's.
    pub fn metrics_prefix(self) -> &'static str {
        match self {
            FilterForm::Wasm => "wasmcustom",
            FilterForm::Module | FilterForm::ModuleClusterSpecifier => "dynamicmodulescustom",
        }
    }

    /// The type URL of the filter's configuration (what the listener's ECDS subscription accepts).
    pub fn type_url(self) -> &'static str {
        match self {
            FilterForm::Wasm => "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm",
            FilterForm::Module | FilterForm::ModuleClusterSpecifier => {
                "type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter"
            }
        }
    }

    /// The filter's configuration loading `file` (the `.wasm`, or the module's `.so`) with `table`.
    pub fn filter_config(self, file: &Path, table: &str, form: ConfigForm) -> serde_json::Value {
        match self {
            FilterForm::Wasm => wasm_filter_config(file, table, form),
            FilterForm::Module => module_filter_config(file, table, form),
            FilterForm::ModuleClusterSpecifier => {
                let mut config = module_filter_config(file, table, form);
                config["filter_name"] = ACTIONS_FILTER_NAME.into();
                config
            }
        }
    }

    /// The filter's name in the listener and its ECDS resource's ([`FILTER_NAME`]; beside the
    /// cluster specifier [`ACTIONS_FILTER_NAME`], also the module's `filter_name`, as
    /// `switchyard watch --filter-name` writes both).
    pub fn ecds_name(self) -> &'static str {
        match self {
            FilterForm::ModuleClusterSpecifier => ACTIONS_FILTER_NAME,
            FilterForm::Wasm | FilterForm::Module => FILTER_NAME,
        }
    }

    /// Whether the form is the native module's (either of its two).
    pub fn is_module(self) -> bool {
        self != FilterForm::Wasm
    }

    /// The bootstrap's route to the backends (YAML, indented to sit in a virtual host's `routes`):
    /// by the cluster header, or by the module's cluster specifier.
    pub fn route_yaml(self) -> String {
        match self {
            FilterForm::Wasm | FilterForm::Module => {
                format!(
                    "              - match: {{prefix: \"/\", headers: [{{name: x-route-cluster, present_match: true}}]}}\n                route: {{cluster_header: x-route-cluster, hash_policy: {}}}\n",
                    hash_policy()
                )
            }
            // JSON is YAML (flow style): one line in the routes' list.
            FilterForm::ModuleClusterSpecifier => format!(
                "              - {}\n",
                cluster_specifier_route(&module_name(&required_path(self.variable())))
            ),
        }
    }
}

/// A route to the cluster the module `module`'s cluster specifier picks for every request, by the
/// table of the module's filter named [`ACTIONS_FILTER_NAME`] (Envoy's
/// `envoy.router.cluster_specifier_plugin.dynamic_modules`, inline in the route).
pub fn cluster_specifier_route(module: &str) -> serde_json::Value {
    serde_json::json!({
        "match": { "prefix": "/" },
        "route": { "inline_cluster_specifier_plugin": { "extension": {
            "name": "switchyard",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.router.cluster_specifiers.dynamic_modules.v3.DynamicModuleClusterSpecifier",
                "dynamic_module_config": { "name": module, "do_not_close": true },
                "specifier_name": ACTIONS_FILTER_NAME
            }
        } }, "hash_policy": hash_policy() }
    })
}

/// The route's hash policy, as `envoy.yaml` and `deploy/` write it: the affinity key the filter
/// sets (`switchyard_table::affinity`), else the client's address; read only by clusters that hash.
pub fn hash_policy() -> serde_json::Value {
    serde_json::json!([
        { "header": { "header_name": switchyard_table::affinity::HASH_HEADER }, "terminal": true },
        { "header": { "header_name": switchyard_table::affinity::HASH_WITH_ADDRESS_HEADER } },
        { "connection_properties": { "source_ip": true } }
    ])
}

/// A static bootstrap (JSON, which is YAML): admin and one listener on free ports of 127.0.0.1, the
/// listener's routes `virtual_hosts` and its HTTP filters `filters` then the router (path
/// normalisation on, as in envoy.yaml: what a production listener pays), and one static cluster per
/// `(name, port)` on 127.0.0.1.
pub fn static_bootstrap(
    virtual_hosts: serde_json::Value,
    filters: Vec<serde_json::Value>,
    clusters: &[(&str, u16)],
) -> serde_json::Value {
    let routes = serde_json::json!({ "route_config": { "name": "ingress", "virtual_hosts": virtual_hosts } });
    static_bootstrap_routed(routes, filters, clusters)
}

/// The bootstrap's `stats_config`, as envoy.yaml's: the tags of the per-resource request metrics,
/// which the wasm filter writes into each stat's name (`switchyard_table::metrics::stats_tags`).
pub fn stats_config() -> serde_json::Value {
    let tags: Vec<serde_json::Value> = (switchyard_table::metrics::stats_tags().into_iter())
        .map(|(tag_name, regex)| serde_json::json!({ "tag_name": tag_name, "regex": regex }))
        .collect();
    serde_json::json!({ "stats_tags": tags })
}

/// The bootstrap's `layered_runtime`, as envoy.yaml's: the native module's metrics under the same
/// names as the wasm filter's (its metrics namespace taken out of their Prometheus names, as
/// Envoy does for `wasmcustom`, rather than `envoy_dynamicmodulescustom_…`).
pub fn layered_runtime() -> serde_json::Value {
    serde_json::json!({ "layers": [{ "name": "static", "static_layer": {
        "envoy.reloadable_features.dynamic_modules_strip_custom_stat_prefix": true
    }}]})
}

/// [`static_bootstrap`] with the listener's routes given as the connection manager's fields that
/// say where they come from (`route_config`, or `rds`).
pub fn static_bootstrap_routed(
    routes: serde_json::Value,
    mut filters: Vec<serde_json::Value>,
    clusters: &[(&str, u16)],
) -> serde_json::Value {
    use serde_json::json;
    let socket = |port: u16| json!({ "socket_address": { "address": "127.0.0.1", "port_value": port } });
    filters.push(json!({
        "name": "envoy.filters.http.router",
        "typed_config": { "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router" }
    }));
    let mut manager = json!({
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "ingress",
        "normalize_path": true,
        "merge_slashes": true,
        "path_with_escaped_slashes_action": "UNESCAPE_AND_FORWARD",
        "http_filters": filters
    });
    if let (Some(manager), Some(routes)) = (manager.as_object_mut(), routes.as_object()) {
        manager.extend(routes.clone());
    }
    let clusters: Vec<serde_json::Value> = clusters
        .iter()
        .map(|(name, port)| {
            json!({
                "name": name,
                "type": "STATIC",
                "connect_timeout": "1s",
                "load_assignment": {
                    "cluster_name": name,
                    "endpoints": [{ "lb_endpoints": [{ "endpoint": { "address": socket(*port) } }] }]
                }
            })
        })
        .collect();
    json!({
        "node": { "id": "switchyard-test", "cluster": "switchyard-test" },
        "stats_config": stats_config(),
        "layered_runtime": layered_runtime(),
        "admin": { "address": socket(0) },
        "static_resources": {
            "listeners": [{
                "name": "ingress",
                "address": socket(0),
                "filter_chains": [{ "filters": [{
                    "name": "envoy.filters.network.http_connection_manager",
                    "typed_config": manager
                }]}]
            }],
            "clusters": clusters
        }
    })
}

/// The `envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter` config that loads the
/// module `module` (`lib<name>.so`, by its name: Envoy looks for it in
/// `ENVOY_DYNAMIC_MODULES_SEARCH_PATH`) with `table` as its filter configuration.
pub fn module_filter_config(module: &Path, table: &str, form: ConfigForm) -> serde_json::Value {
    serde_json::json!({
        "@type": FilterForm::Module.type_url(),
        "dynamic_module_config": { "name": module_name(module), "do_not_close": true },
        "filter_name": FILTER_NAME,
        "filter_config": configuration_any(table, form)
    })
}

/// The name Envoy loads `module` by: its file name without `lib` and `.so`.
pub fn module_name(module: &Path) -> String {
    let file = module
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = file.strip_prefix("lib").unwrap_or(&file);
    name.strip_suffix(".so").unwrap_or(name).to_owned()
}

/// Points Envoy's dynamic-module search path (`ENVOY_DYNAMIC_MODULES_SEARCH_PATH`, read by every
/// Envoy this process starts) at `module`'s folder; every test of a run uses the same module.
pub fn set_module_search_path(module: &Path) {
    static SET: std::sync::Once = std::sync::Once::new();
    if let Some(folder) = module.parent() {
        let folder = folder.to_path_buf();
        SET.call_once(|| std::env::set_var("ENVOY_DYNAMIC_MODULES_SEARCH_PATH", folder));
    }
}

/// The `envoy.extensions.filters.http.wasm.v3.Wasm` config that loads `wasm` under V8 with `table`
/// as its plugin configuration.
pub fn wasm_filter_config(wasm: &Path, table: &str, form: ConfigForm) -> serde_json::Value {
    let configuration = configuration_any(table, form);
    serde_json::json!({
        "@type": "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm",
        "config": {
            "name": FILTER_NAME,
            "root_id": FILTER_NAME,
            "vm_config": {
                "vm_id": FILTER_NAME,
                "runtime": "envoy.wasm.runtime.v8",
                "code": { "local": { "filename": wasm.display().to_string() } }
            },
            "configuration": configuration
        }
    })
}

/// The ECDS file content (a `DiscoveryResponse`) that loads `wasm` with `table` as its configuration.
pub fn ecds_document(wasm: &Path, table: &str, form: ConfigForm) -> String {
    ecds_document_for(FilterForm::Wasm, wasm, table, form)
}

/// The ECDS file content that loads the filter of form `filter` from `file` with `table`.
pub fn ecds_document_for(filter: FilterForm, file: &Path, table: &str, form: ConfigForm) -> String {
    let document = serde_json::json!({
        "resources": [{
            "@type": "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig",
            "name": filter.ecds_name(),
            "typed_config": filter.filter_config(file, table, form)
        }]
    });
    document.to_string()
}

/// The binary ECDS file content (what `switchyard watch` writes to a `.pb` file: [`EcdsFile::Binary`])
/// that loads the filter of form `filter` from `file` with `table` as a `StringValue`: what
/// [`ecds_document_for`] writes in JSON.
pub fn ecds_binary_for(filter: FilterForm, file: &Path, table: &str) -> Vec<u8> {
    let (module, filename) = (module_name(file), file.display().to_string());
    let typed = match filter {
        FilterForm::Wasm => switchyard_xds::Filter::Wasm {
            name: FILTER_NAME,
            runtime: "envoy.wasm.runtime.v8",
            filename: &filename,
        },
        FilterForm::Module => switchyard_xds::Filter::Module {
            module: &module,
            filter_name: FILTER_NAME,
        },
        FilterForm::ModuleClusterSpecifier => switchyard_xds::Filter::Module {
            module: &module,
            filter_name: ACTIONS_FILTER_NAME,
        },
    };
    switchyard_xds::ecds_response(filter.ecds_name(), typed, table)
}

/// The ECDS file Envoy's listener reads, in `<dir>/ecds/`: Envoy parses it by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcdsFile {
    /// `filter.json`: JSON.
    Json,
    /// `filter.pb`: binary protobuf.
    Binary,
}

impl EcdsFile {
    /// The file's name.
    pub fn name(self) -> &'static str {
        match self {
            EcdsFile::Json => "filter.json",
            EcdsFile::Binary => "filter.pb",
        }
    }
}

/// A running Envoy with the switchyard filter loaded from an ECDS file, and its backends.
pub struct Envoy {
    process: EnvoyProcess,
    /// The filter's file: the `.wasm`, or the module's `.so` ([`Envoy::filter`]).
    wasm: PathBuf,
    filter: FilterForm,
    /// Envoy's HTTP listener.
    pub addr: SocketAddr,
    /// Envoy's admin API.
    pub admin: SocketAddr,
    /// The backends, by cluster name.
    pub backends: BTreeMap<String, Backend>,
}

static INSTANCE: AtomicUsize = AtomicUsize::new(0);
static PROBE: AtomicUsize = AtomicUsize::new(0);

/// What `read` gives once `done` holds of it, or as it is after 20 s (the caller's assertion then
/// says what was missing); read every 200 ms.
pub fn eventually<T>(read: impl Fn() -> T, done: impl Fn(&T) -> bool) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let value = read();
        if done(&value) || Instant::now() > deadline {
            return value;
        }
        thread::sleep(Duration::from_millis(200));
    }
}

/// What `read` gives once it stayed the same over a flush of the filter's counts (at most 20 s):
/// a count to measure later ones from, with every earlier request in it.
pub fn steady<T: PartialEq>(read: impl Fn() -> T) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = read();
    loop {
        thread::sleep(switchyard_table::metrics::FLUSH_EVERY + Duration::from_millis(200));
        let now = read();
        if now == last || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

/// The host of the probe rule: no test routes it.
pub const PROBE_HOST: &str = "probe.switchyard.invalid";

/// `table` with one more rule, first (so that no catch-all written before it can hide it; its host
/// is no test's): a direct response `200 <label>` for `http://PROBE_HOST/probe`, so a test can tell
/// when Envoy serves this very table. The probe counts as a direct response in
/// the filter's metrics. A table in the compact form (`{"table_z": …}`) gets it too, and stays
/// compact. `None` when `table` is neither a JSON object with `version` nor the compact form of one
/// (it is then used as it is).
pub fn with_probe(table: &str) -> (String, Option<String>) {
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(table) else {
        return (table.to_owned(), None);
    };
    let compact = doc.get(switchyard_table::compact::WRAPPER_KEY).is_some();
    let Ok(mut doc) = switchyard_table::compact::unwrap(doc) else {
        return (table.to_owned(), None);
    };
    // Only a table itself (it has `version`) gets a probe, not a wrapper around one.
    let Some(object) = doc.as_object_mut().filter(|o| o.contains_key("version")) else {
        return (table.to_owned(), None);
    };
    let rules = object.entry("rules").or_insert_with(|| serde_json::json!([]));
    let Some(rules) = rules.as_array_mut() else {
        return (table.to_owned(), None);
    };
    let label = format!("probe-{}-{}", std::process::id(), PROBE.fetch_add(1, Ordering::SeqCst));
    rules.insert(
        0,
        serde_json::json!({
            "name": format!("Probe/e2e/{label}#0"),
            "host": PROBE_HOST,
            "path": { "type": "exact", "value": "/probe" },
            "action": { "direct_response": { "status": 200, "body": label } }
        }),
    );
    let text = match compact {
        // A JSON value always has a compact form.
        true => switchyard_table::compact::to_text(&doc).unwrap_or_else(|_| doc.to_string()),
        false => doc.to_string(),
    };
    (text, Some(label))
}

/// The cluster name's backend name: `production/service1:80` answers as `service1`.
pub fn backend_name(cluster: &str) -> String {
    let service = cluster.rsplit_once('/').map_or(cluster, |(_, s)| s);
    service.split_once(':').map_or(service, |(s, _)| s).to_owned()
}

impl Envoy {
    /// Starts Envoy (`ENVOY_BIN`) with the filter (`SWITCHYARD_WASM`) and `table`, one static
    /// cluster per name in `clusters`, each with its own backend named after the cluster's service.
    pub fn start(table: &str, clusters: &[&str]) -> Envoy {
        Envoy::start_with(table, clusters, ConfigForm::StringValue, 1)
    }

    /// As [`Envoy::start`], choosing the configuration form and the worker count. The filter is the
    /// wasm filter, or the form `SWITCHYARD_FILTER_FORM` names ([`FilterForm::from_env`]).
    pub fn start_with(table: &str, clusters: &[&str], form: ConfigForm, workers: usize) -> Envoy {
        Envoy::start_filter(table, clusters, form, workers, FilterForm::from_env())
    }

    /// As [`Envoy::start_with`], choosing the filter's form too: the dynamic module
    /// (`SWITCHYARD_MODULE`) in the wasm filter's place, with the same listener, routes and ECDS file.
    pub fn start_filter(table: &str, clusters: &[&str], form: ConfigForm, workers: usize, filter: FilterForm) -> Envoy {
        Envoy::start_configured(table, clusters, (form, workers, filter), |yaml| yaml)
    }

    /// [`Envoy::start_filter`] (one worker, the `StringValue` form) whose listener writes the access
    /// log of `deploy/` ([`ACCESS_LOG_FORMAT`]) to `<dir>/access.log` ([`Envoy::access_log`]).
    pub fn start_logged(table: &str, clusters: &[&str], filter: FilterForm) -> Envoy {
        let form = (ConfigForm::StringValue, 1, filter);
        Envoy::start_configured(table, clusters, form, |yaml| {
            with_access_log(&yaml, Path::new("access.log"))
        })
    }

    /// [`Envoy::start_filter`] (one worker, the `StringValue` form) whose listener derives the
    /// client's address as `deploy/envoy/` does behind `hops` trusted proxies: `use_remote_address`
    /// with `xff_num_trusted_hops` (docs/deploy-envoy.md, "Paths").
    pub fn start_trusting(table: &str, clusters: &[&str], filter: FilterForm, hops: u32) -> Envoy {
        let form = (ConfigForm::StringValue, 1, filter);
        Envoy::start_configured(table, clusters, form, |yaml| {
            let anchor = "          stat_prefix: ingress\n";
            let trusting = format!("{anchor}          xff_num_trusted_hops: {hops}\n");
            yaml.replacen(anchor, &trusting, 1)
        })
    }

    /// [`Envoy::start_filter`] with its bootstrap passed through `edit`.
    fn start_configured(
        table: &str,
        clusters: &[&str],
        (form, workers, filter): (ConfigForm, usize, FilterForm),
        edit: impl FnOnce(String) -> String,
    ) -> Envoy {
        let envoy_bin = required_path("ENVOY_BIN");
        let wasm = required_path(filter.variable());
        if filter.is_module() {
            set_module_search_path(&wasm);
        }
        let dir = fresh_dir("e2e");
        std::fs::create_dir_all(dir.join("ecds")).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut backends = BTreeMap::new();
        for cluster in clusters {
            let backend = Backend::start(&backend_name(cluster)).unwrap_or_else(|e| panic!("backend: {e}"));
            backends.insert((*cluster).to_owned(), backend);
        }
        let ports: Vec<(&str, u16)> = backends.iter().map(|(c, b)| (c.as_str(), b.addr.port())).collect();
        let bootstrap = edit(envoy_config_for(&dir, &ports, 0, 0, filter));
        write_file(
            &dir.join("envoy.yaml"),
            &bootstrap.replace("{access_log_dir}", &dir.display().to_string()),
        );
        let (table, probe) = with_probe(table);
        write_file(
            &dir.join("ecds/filter.json"),
            &ecds_document_for(filter, &wasm, &table, form),
        );
        let mut envoy = Envoy::spawn(&envoy_bin, dir, wasm, workers);
        envoy.filter = filter;
        envoy.backends = backends;
        if let Some(label) = probe {
            // Several connections, so that every worker is seen serving the table.
            envoy.wait_for_probe(&label, 2 * workers + 2);
        }
        envoy
    }

    /// Starts Envoy on `<dir>/envoy.yaml` (whose listener is named `ingress`) with `workers` worker
    /// threads, and waits until its listener is bound.
    pub fn spawn(envoy_bin: &Path, dir: PathBuf, wasm: PathBuf, workers: usize) -> Envoy {
        let process = EnvoyProcess::start(envoy_bin, dir, workers, |p| listener_address(p.admin).is_some());
        let (admin, addr) = (process.admin, listener_address(process.admin));
        Envoy {
            process,
            wasm,
            filter: FilterForm::Wasm,
            addr: addr.unwrap_or(admin),
            admin,
            backends: BTreeMap::new(),
        }
    }

    /// Sends a request through Envoy.
    pub fn send(&self, request: &Request) -> Response {
        send(self.addr, request).unwrap_or_else(|e| panic!("{request:?}: {e}\n{}", self.log_tail()))
    }

    /// The backend that answered `request` (`None` for a local reply).
    pub fn backend_for(&self, request: &Request) -> Option<String> {
        self.send(request).backend().map(str::to_owned)
    }

    /// One stat's value from the admin API (`None` when Envoy does not have it).
    pub fn stat(&self, name: &str) -> Option<u64> {
        self.process.stat(name)
    }

    /// Replaces the table through the ECDS file (written beside, then renamed into place) and waits
    /// until Envoy accepted or rejected it; returns whether it was accepted. An accepted table is
    /// serving when this returns: a probe rule added to it answers (see [`with_probe`]).
    pub fn update_table(&self, table: &str, form: ConfigForm) -> bool {
        let counter = |what: &str| {
            let name = self.filter.ecds_name();
            self.stat(&format!("extension_config_discovery.http_filter.{name}.{what}"))
                .unwrap_or(0)
        };
        let (success, rejected) = (counter("update_success"), counter("update_rejected"));
        let (table, probe) = with_probe(table);
        let tmp = self.process.dir.join("ecds/filter.json.tmp");
        write_file(&tmp, &ecds_document_for(self.filter, &self.wasm, &table, form));
        std::fs::rename(&tmp, self.process.dir.join("ecds/filter.json")).unwrap_or_else(|e| panic!("rename: {e}"));
        let deadline = Instant::now() + PATIENCE;
        loop {
            if counter("update_success") > success {
                if let Some(label) = probe {
                    self.wait_for_probe(&label, 4);
                }
                return true;
            }
            if counter("update_rejected") > rejected {
                return false;
            }
            assert!(
                Instant::now() < deadline,
                "Envoy neither accepted nor rejected the table:\n{}",
                self.log_tail()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `times` requests in a row (each on a new connection) reach the probe rule
    /// labelled `label`.
    fn wait_for_probe(&self, label: &str, times: usize) {
        let deadline = Instant::now() + PATIENCE;
        let mut in_a_row = 0;
        while in_a_row < times {
            let answered =
                send(self.addr, &get(PROBE_HOST, "/probe")).is_ok_and(|r| r.status == 200 && r.body == label);
            in_a_row = if answered { in_a_row + 1 } else { 0 };
            assert!(
                Instant::now() < deadline,
                "the table labelled {label} is not serving:\n{}",
                self.log_tail()
            );
            if !answered {
                thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// The form of the filter this Envoy runs.
    pub fn filter(&self) -> FilterForm {
        self.filter
    }

    /// One of the filter's own metrics (`switchyard_requests_routed`, ...) under the prefix Envoy
    /// gives it in this filter form.
    pub fn filter_stat(&self, name: &str) -> Option<u64> {
        self.stat(&format!("{}.{name}", self.filter.metrics_prefix()))
    }

    /// Envoy's process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The ECDS file this Envoy reads the filter from (a sidecar may write it).
    pub fn ecds_file(&self) -> PathBuf {
        self.process.dir.join("ecds/filter.json")
    }

    /// Envoy's resident memory in KiB (`VmRSS` of `/proc/<pid>/status`).
    pub fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
        line.trim().trim_end_matches("kB").trim().parse().ok()
    }

    /// Envoy's log so far.
    pub fn log(&self) -> String {
        self.process.log()
    }

    /// The access log's lines (an Envoy of [`Envoy::start_logged`]) once every text of `wanted`
    /// is in one of them: Envoy flushes the log every second, so this waits for up to 10 s.
    pub fn access_log(&self, wanted: &[&str]) -> Vec<String> {
        let path = self.process.dir.join("access.log");
        let started = std::time::Instant::now();
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<String> = text.lines().map(str::to_owned).collect();
            let complete = wanted.iter().all(|w| lines.iter().any(|l| l.contains(w)));
            if complete || started.elapsed() > Duration::from_secs(10) {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log_tail(&self) -> String {
        self.process.log_tail()
    }
}

/// The HTTP listener's address once it is bound (after the ECDS configuration warmed it): the
/// process is ready (`/ready` answered) and `/listeners` names `ingress::127.0.0.1:PORT`.
fn listener_address(admin: SocketAddr) -> Option<SocketAddr> {
    let listeners = send(admin, &get("admin", "/listeners")).ok()?;
    listeners
        .body
        .lines()
        .find_map(|l| l.strip_prefix("ingress::"))
        .and_then(|a| a.trim().parse().ok())
        .filter(|a: &SocketAddr| a.port() != 0)
}

/// A new, empty directory under the system's temporary directory.
pub fn fresh_dir(purpose: &str) -> PathBuf {
    let n = INSTANCE.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("switchyard-{purpose}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Writes a file, panicking with its path on failure.
pub fn write_file(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// Envoy's bootstrap: one listener whose HTTP filters are the switchyard filter (from the ECDS file
/// `<dir>/ecds/filter.json`) and the router; routes: `cluster_header` when the header is present, else
/// a 418 direct response. The 418 route is what Envoy picks before the filter runs (no client cluster
/// header survives), so any request that reaches a backend proves Envoy re-picked the route after the
/// filter set the header: the ABI 0.2.1 route cache clearing that `cluster_header` routing needs.
pub fn envoy_config(dir: &Path, clusters: &[(&str, u16)], listen_port: u16, admin_port: u16) -> String {
    envoy_config_for(dir, clusters, listen_port, admin_port, FilterForm::Wasm)
}

/// [`envoy_config`] whose ECDS subscription takes the configuration of the filter form `filter`.
pub fn envoy_config_for(
    dir: &Path,
    clusters: &[(&str, u16)],
    listen_port: u16,
    admin_port: u16,
    filter: FilterForm,
) -> String {
    envoy_config_reading(dir, clusters, listen_port, admin_port, filter, EcdsFile::Json)
}

/// [`envoy_config_for`] whose ECDS subscription reads `<dir>/ecds/` + `file`'s name.
pub fn envoy_config_reading(
    dir: &Path,
    clusters: &[(&str, u16)],
    listen_port: u16,
    admin_port: u16,
    filter: FilterForm,
    file: EcdsFile,
) -> String {
    let ecds = dir.join("ecds");
    let (stats_config, runtime) = (stats_config(), layered_runtime());
    let mut yaml = format!(
        r#"node: {{id: switchyard, cluster: switchyard}}
stats_config: {stats_config}
layered_runtime: {runtime}
admin:
  address: {{socket_address: {{address: 127.0.0.1, port_value: {admin_port}}}}}
static_resources:
  listeners:
  - name: ingress
    address: {{socket_address: {{address: 127.0.0.1, port_value: {listen_port}}}}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: ingress
          # As envoy.yaml: the client's address is the peer, never a client's own x-forwarded-for.
          use_remote_address: true
          # As envoy.yaml: the path is normalised before any filter sees it (docs/deploy-envoy.md, "Paths").
          normalize_path: true
          merge_slashes: true
          path_with_escaped_slashes_action: UNESCAPE_AND_FORWARD
          route_config:
            name: switchyard
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
{route}              - match: {{prefix: "/"}}
                direct_response: {{status: 418, body: {{inline_string: "route picked without a cluster header\n"}}}}
          http_filters:
          - name: {ecds_name}
            config_discovery:
              config_source:
                path_config_source:
                  path: {ecds_file}
                  watched_directory: {{path: {ecds_dir}}}
              type_urls: [{type_url}]
          - name: envoy.filters.http.router
            typed_config: {{"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}
  clusters:
"#,
        ecds_file = ecds.join(file.name()).display(),
        ecds_dir = ecds.display(),
        type_url = filter.type_url(),
        route = filter.route_yaml(),
        ecds_name = filter.ecds_name(),
    );
    for (name, port) in clusters {
        yaml.push_str(&static_cluster(name, SocketAddr::from(([127, 0, 0, 1], *port))));
    }
    yaml
}

/// The access log format of `envoy.yaml` and `deploy/` (issue "Which Ingress served this
/// request").
pub use switchyard_table::format::ACCESS_LOG_FORMAT;

/// A bootstrap of [`envoy_config_reading`] whose listener writes the access log to `file` (relative
/// to Envoy's folder) in [`ACCESS_LOG_FORMAT`].
pub fn with_access_log(yaml: &str, file: &Path) -> String {
    let anchor = "          stat_prefix: ingress\n";
    let Some(at) = yaml.find(anchor) else {
        panic!("not a bootstrap of envoy_config_reading:\n{yaml}");
    };
    let log = format!(
        "          access_log:\n          - name: envoy.access_loggers.file\n            typed_config:\n              \"@type\": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog\n              path: {{access_log_dir}}/{}\n              log_format: {{text_format_source: {{inline_string: {}}}}}\n",
        file.display(),
        serde_json::to_string(ACCESS_LOG_FORMAT).unwrap_or_default()
    );
    let end = at + anchor.len();
    format!("{}{log}{}", &yaml[..end], &yaml[end..])
}

/// A bootstrap of [`envoy_config_reading`] whose listener takes its routes from the RDS file `rds`
/// (route configuration `switchyard`), as `deploy/envoy/` does: `switchyard watch --clusters-dir`
/// writes it beside the CDS file.
pub fn routes_from_file(yaml: &str, rds: &Path) -> String {
    let (Some(start), Some(end)) = (
        yaml.find("          route_config:\n"),
        yaml.find("          http_filters:\n"),
    ) else {
        panic!("not a bootstrap of envoy_config_reading:\n{yaml}");
    };
    let folder = rds.parent().unwrap_or(Path::new("."));
    format!(
        "{}          rds:\n            route_config_name: switchyard\n            config_source:\n              path_config_source: {{path: {}, watched_directory: {{path: {}}}}}\n              resource_api_version: V3\n{}",
        &yaml[..start],
        rds.display(),
        folder.display(),
        &yaml[end..]
    )
}

/// One static cluster of a bootstrap's `static_resources.clusters` (YAML, indented to sit under it):
/// `name` sends to the one endpoint `addr`.
pub fn static_cluster(name: &str, addr: SocketAddr) -> String {
    format!(
        r#"  - name: "{name}"
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: "{name}"
      endpoints: [{{lb_endpoints: [{{endpoint: {{address: {{socket_address: {{address: {ip}, port_value: {port}}}}}}}}}]}}]
"#,
        ip = addr.ip(),
        port = addr.port(),
    )
}

// ---- the compiler -------------------------------------------------------------------------------

/// The table `switchyard compile PATHS ARGS` writes (the binary from `SWITCHYARD_BIN`); panics with
/// its stderr when it fails.
pub fn switchyard_compile(paths: &[&Path], args: &[&str]) -> String {
    let switchyard = required_path("SWITCHYARD_BIN");
    let output = Command::new(&switchyard)
        .arg("compile")
        .args(paths)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", switchyard.display()));
    assert!(
        output.status.success(),
        "switchyard compile {paths:?} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap_or_else(|e| panic!("switchyard compile wrote non-UTF-8: {e}"))
}

/// The table `switchyard compile` makes of `yaml` (manifests, `---`-separated), written to a file
/// in a fresh folder.
pub fn compile_manifests(yaml: &str, args: &[&str]) -> String {
    let dir = fresh_dir("manifests");
    let file = dir.join("manifests.yaml");
    write_file(&file, yaml);
    let table = switchyard_compile(&[&file], args);
    let _ = std::fs::remove_dir_all(&dir);
    table
}

// ---- tables -----------------------------------------------------------------------------------

/// Tables written by hand (rules from `switchyard_cases::rule`, in priority order, as the compiler
/// would sort them).
pub mod table {
    use serde_json::{json, Value};

    /// A table document with `rules`.
    pub fn table(generation: &str, rules: Vec<Value>) -> String {
        json!({ "version": 1, "generation": generation, "debug_rule_header": true, "rules": rules }).to_string()
    }
}
