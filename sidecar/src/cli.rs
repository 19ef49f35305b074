//! The command line: `switchyard compile`, `switchyard explain` and `switchyard watch` (whose
//! flags live in [`crate::watch::args`]; the compiler's flags both share are [`crate::flags`]). Other tools depend on these
//! exact flags and output shapes (see docs/compile-and-explain.md).
//!
//! Exit codes: 0 when the input was read (even if resources were rejected: that is status), 1 when
//! input or output cannot be read or written (the message names the file and line), 2 for usage
//! errors.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use switchyard_table::RouteTable;

use crate::flags::{L4Args, TableArgs, TableEncoding};
use switchyard_compiler::access::AccessReport;
use switchyard_compiler::load::{read_paths, Loaded};
use switchyard_compiler::pipeline::compile;
use switchyard_compiler::status::{summarize, About, Condition, ConditionKind, Reason, ResourceStatus, Status};

const AFTER_HELP: &str = "\
Examples:
  switchyard compile examples/002-host-priority --ingress-class bfe -o table.json
  switchyard compile manifests/ --status status.json > table.json
  switchyard explain --table table.json http://example.net/bar/foo -H 'Key: value'
  switchyard explain --table table.json --json http://example.net/bar --cookie 'cookie-key=value'
  switchyard watch --manifests examples/ --ecds-file build/run/switchyard-filter.json --listen 127.0.0.1:9102
  switchyard convert table.json --encoding sharded > table.sharded.json

The routing rules are docs/routing.md, sections 1 to 4; the table format is table/README.md.";

const COMPILE_HELP: &str = "\
Examples:
  # Seed 002's BFE Ingresses carry kubernetes.io/ingress.class: bfe
  switchyard compile examples/002-cond-priority --ingress-class bfe -o table.json

  # A whole directory (recursive *.yaml, *.yml, *.json), status report to a file
  switchyard compile deploy/manifests --status status.json > table.json

  # Istio cluster names
  switchyard compile m/ --cluster-template 'outbound|{port}||{service}.{namespace}.svc.cluster.local'

  # NGINX TransportServers: Envoy listeners for an LDS file (dynamic_resources.lds_config)
  switchyard compile m/ -o table.json --l4 listeners.json --tls-passthrough-port 8443

  # ingress-nginx's Ingresses as ingress-nginx routed them, with its ConfigMap; the summary counts
  # the annotations that do not carry over (the migration report; per Ingress in status.json)
  switchyard compile m/ --ingress-nginx-class nginx --ingress-nginx-configmap ingress-nginx/ingress-nginx-controller \
      --status status.json -o table.json

Access controls (docs/routing.md, 9): a resource that asks for authentication, client certificates or
source ranges Switchyard does not enforce yet (ingress-nginx's auth-url, auth-type, auth-tls-*,
whitelist-source-range, ...; HTTPProxy authorization and IP policies; VirtualServer policies) is never
served open: its rules answer 403 naming the field, and the summary lists it first, as BLOCKING. Its
owner may accept to lose exactly those fields with the annotation
  switchyard.io/serve-without-access-control: \"auth-url,whitelist-source-range\"

Exit status: 0 when the input was read, even if some resources were ignored or rejected (see the
status report); 1 when a path cannot be read, or when a document or object does not parse or decode
(each is listed, file, line, object and field; the rest is still compiled and written); 2 for a usage
error. The summary on stderr lists what is blocking, then counts resources by status, rules, hosts and
warnings.
TLS settings (spec.tls, virtualhost.tls) do not affect routing and are not read, but for
ingress-nginx's Ingresses, whose spec.tls hosts get ingress-nginx's HTTPS redirect (docs/routing.md, 7.7),
and HTTPProxy's tls.clientValidation, an access control (9).";

const EXPLAIN_HELP: &str = "\
Examples:
  switchyard explain --table table.json http://example.net/bar/foo -H 'Key: value'
  switchyard explain --table table.json http://example.net/bar/foo \\
      -H 'Header-key: value' --cookie 'cookie-key=value'
  switchyard explain --table table.json --json -X POST 'http://shop.example.org/api?v=2'
  switchyard explain --table table.json -X POST -H 'Content-Length: 3145728' \\
      --client-address 10.1.2.3 http://shop.example.org/upload

JSON form: {\"rule\": name or null, \"cluster\": name or null, \"status\": 200|404|502|..., \"path\": the
path sent upstream}. status is 200 when the request is routed (or passed through with --no-route
pass), otherwise the local reply the filter sends; \"policy\" says why the winner's policy answered
it (a CORS preflight 204, an address outside its ranges 403, a declared body over its limit 413).
The human form names the winner and its policy (body limit, address ranges, CORS, timeouts and
retries), then every other rule whose host and path matched and why it lost: a failed condition,
or the priority key that ranked it lower.";

#[derive(Debug, Parser)]
#[command(name = "switchyard", version, about = "Compile Kubernetes ingress manifests into Switchyard's route table, explain its decisions, and keep Envoy or Istio up to date.", after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compile Ingress, IngressClass, Service, HTTPProxy and NGINX VirtualServer, VirtualServerRoute
    /// and TransportServer manifests into the route table (JSON) and L4 listeners.
    #[command(after_help = COMPILE_HELP)]
    Compile(Box<CompileArgs>),
    /// Show which rule of a table wins a request, and why the other candidates lost.
    #[command(after_help = EXPLAIN_HELP)]
    Explain(ExplainArgs),
    /// Rewrite a table (JSON, compact or sharded form) in another form: `--encoding json` decodes
    /// the table of an ECDS file or Istio object for people; `sharded` and `compact` make one.
    Convert(ConvertArgs),
    /// Follow a folder of manifests or a cluster; push the table to Envoy (ECDS file) or Istio on every change.
    #[command(after_help = crate::watch::args::WATCH_HELP)]
    Watch(Box<crate::watch::args::WatchArgs>),
}

#[derive(Debug, clap::Args)]
struct CompileArgs {
    /// Manifest files or directories (directories are read recursively: *.yaml, *.yml, *.json).
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Write the table here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write the status report (JSON) here.
    #[arg(long, value_name = "FILE")]
    status: Option<PathBuf>,
    /// json: the table as people and `switchyard explain` read it (indented); sharded: as
    /// `switchyard watch` writes it into the ECDS file and Istio objects, `{"table_shards": …}`;
    /// compact: the one-stream compact form, `{"table_z": "<base64>"}`.
    #[arg(long, value_enum, default_value = "json", value_name = "ENCODING")]
    encoding: TableEncoding,
    /// Write Envoy's L4 listeners (an LDS DiscoveryResponse: TLS passthrough by SNI, TCP and UDP
    /// proxies) for the TransportServers that won here.
    #[arg(long, value_name = "FILE")]
    l4: Option<PathBuf>,
    #[command(flatten)]
    table: TableArgs,
    #[command(flatten)]
    l4_listeners: L4Args,
}

#[derive(Debug, clap::Args)]
struct ConvertArgs {
    /// The table: its JSON, the compact form `{"table_z": "…"}` or the sharded form
    /// `{"table_shards": …}`; `-` reads stdin.
    #[arg(value_name = "FILE")]
    table: PathBuf,
    /// The form to write.
    #[arg(long, value_enum, default_value = "json", value_name = "ENCODING")]
    encoding: TableEncoding,
}

#[derive(Debug, clap::Args)]
struct ExplainArgs {
    /// The table (as written by `switchyard compile`).
    #[arg(long, value_name = "FILE")]
    table: PathBuf,
    /// Print the decision as JSON.
    #[arg(long)]
    json: bool,
    /// The request URL: http://host[:port]/path?query.
    url: String,
    /// The request method.
    #[arg(short = 'X', long = "request", default_value = "GET", value_name = "METHOD")]
    method: String,
    /// A request header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_name = "'Name: value'")]
    headers: Vec<String>,
    /// A cookie, 'name=value' (repeatable).
    #[arg(short = 'b', long = "cookie", value_name = "'name=value'")]
    cookies: Vec<String>,
    /// The L4 listeners (`switchyard compile --l4`): say so when the host is a TLS passthrough host
    /// that a TransportServer won (its connections never reach the HTTP table).
    #[arg(long, value_name = "FILE")]
    l4: Option<PathBuf>,
    /// HTTPS (ROUTING.md §8): the certificate the HTTPS listener of --l4 (written by `watch
    /// --lds-file … --sds-dir …`) presents to a handshake naming HOST, and why; `--sni ''` for a
    /// handshake without SNI. The request itself routes by its URL's host, whatever the SNI.
    #[arg(long, value_name = "HOST", requires = "l4")]
    sni: Option<String>,
    /// The client's address, as Envoy derives it (the connection's peer, or from a trusted
    /// X-Forwarded-For): decides the winner's address ranges (ingress-nginx's
    /// whitelist-source-range); without it they are described, not decided.
    #[arg(long, value_name = "IP")]
    client_address: Option<std::net::IpAddr>,
}

/// Runs the command line; returns the exit code.
pub fn run(args: impl IntoIterator<Item = OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let result = match cli.command {
        Command::Compile(args) => run_compile(&args),
        Command::Explain(args) => run_explain(&args),
        Command::Convert(args) => run_convert(&args),
        Command::Watch(args) => crate::watch::run(*args),
    };
    match result {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("switchyard: {message}");
            1
        }
    }
}

fn write_out(path: Option<&PathBuf>, text: &str) -> Result<(), String> {
    match path {
        Some(path) => std::fs::write(path, text).map_err(|e| format!("{}: cannot write: {e}", path.display())),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                .map_err(|e| format!("stdout: {e}"))
        }
    }
}

fn run_compile(args: &CompileArgs) -> Result<(), String> {
    let mut options = args.table.options(&args.l4_listeners)?;
    let mut loaded = read_paths(&args.paths).map_err(|e| e.to_string())?;
    let config_warning = crate::flags::read_ingress_nginx_config(&mut options, &loaded.config_maps)?;
    loaded.warnings.extend(config_warning);
    let compiled = compile(&loaded.objects, &options).map_err(|e| format!("internal error: {e}"))?;
    if let Err(e) = RouteTable::try_from(compiled.table.clone()) {
        // Never expected: every rule was validated on its own. Say so rather than write a bad table.
        return Err(format!("internal error: the compiled table does not validate: {e}"));
    }
    let table = args.encoding.file_text(&compiled.table)?;
    write_out(args.output.as_ref(), &table)?;
    if let Some(path) = &args.status {
        let mut status = serde_json::to_string_pretty(&compiled.statuses).map_err(|e| e.to_string())?;
        status.push('\n');
        write_out(Some(path), &status)?;
    }
    if let Some(path) = &args.l4 {
        let document = switchyard_compiler::lds::document(&compiled.l4, &args.l4_listeners.options());
        write_out(Some(path), &document)?;
    }
    eprint!("{}", summary(&loaded, &compiled));
    match loaded.errors.len() {
        0 => Ok(()),
        n => Err(format!(
            "{n} document(s) or object(s) could not be read (listed above as \"not read\"); the table holds \
             everything else"
        )),
    }
}

/// The human summary printed on stderr.
fn summary(loaded: &Loaded, compiled: &switchyard_compiler::Compiled) -> String {
    let objects = loaded.objects.len();
    let mut out = format!(
        "switchyard compile: read {objects} objects from {} file(s)\n",
        loaded.files
    );
    if !loaded.errors.is_empty() {
        out.push_str(&format!(
            "  not read ({}): each is left out, everything else is compiled:\n",
            loaded.errors.len()
        ));
        for error in &loaded.errors {
            out.push_str(&format!("    - {error}\n"));
        }
    }
    out.push_str(&AccessReport::of(&compiled.statuses).render());
    for line in summarize(&compiled.statuses) {
        out.push_str(&format!("  {line}\n"));
    }
    let table = &compiled.table;
    let hosts = RouteTable::try_from(table.clone()).map(|t| t.host_count()).unwrap_or(0);
    out.push_str(&format!(
        "  table: {} rules, {hosts} hosts, generation {}\n",
        table.rules.len(),
        table.generation
    ));
    let l4 = &compiled.l4;
    if !l4.is_empty() {
        out.push_str(&format!(
            "  L4: {} TLS passthrough host(s), {} TCP/UDP listener(s)\n",
            l4.passthrough.len(),
            l4.listeners.len()
        ));
    }
    if !loaded.skipped.is_empty() {
        let kinds: Vec<String> = loaded.skipped.iter().map(|(k, n)| format!("{k} ({n})")).collect();
        out.push_str(&format!(
            "  skipped objects of kinds Switchyard does not read: {}\n",
            kinds.join(", ")
        ));
    }
    let problems: Vec<String> = compiled
        .statuses
        .iter()
        .flat_map(|s| {
            s.conditions
                .iter()
                .filter(|c| !listed_elsewhere(c))
                .filter(|c| {
                    c.kind == ConditionKind::Error
                        || c.kind == ConditionKind::Warning
                        || s.status == Status::Ignored
                        || s.status == Status::Orphaned
                })
                .map(move |c| {
                    let ns = if s.namespace.is_empty() {
                        String::new()
                    } else {
                        format!("{}/", s.namespace)
                    };
                    format!(
                        "{} {ns}{} ({}): {}: {}",
                        s.kind,
                        s.name,
                        s.status.as_str(),
                        c.reason,
                        c.message
                    )
                })
        })
        .collect();
    out.push_str(&not_honored_report(&compiled.statuses));
    let warnings = loaded.warnings.len() + problems.len();
    if warnings > 0 {
        out.push_str(&format!("  warnings ({warnings}):\n"));
        for w in loaded.warnings.iter().chain(&problems) {
            out.push_str(&format!("    - {w}\n"));
        }
    }
    out
}

/// Whether the summary says `condition` in a place of its own rather than among the warnings: the
/// annotations not honoured are counted by annotation, the access controls about a field listed by
/// resource first ([`AccessReport`]).
fn listed_elsewhere(condition: &Condition) -> bool {
    match condition.reason {
        Reason::AnnotationNotHonored => true,
        Reason::AccessControlNotEnforced | Reason::AccessControlWaived => condition.about.is_some(),
        _ => false,
    }
}

/// The migration report's summary (ROUTING.md §7.9): the ingress-nginx annotations that will not
/// carry over, each with how many Ingresses carry it, most common first; nothing when none.
fn not_honored_report(statuses: &[ResourceStatus]) -> String {
    let mut by_annotation: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut ingresses = 0;
    for status in statuses {
        let mut any = false;
        for condition in status
            .conditions
            .iter()
            .filter(|c| c.reason == Reason::AnnotationNotHonored)
        {
            let Some(About::Field(annotation)) = &condition.about else {
                continue;
            };
            *by_annotation.entry(annotation).or_default() += 1;
            any = true;
        }
        ingresses += usize::from(any);
    }
    if by_annotation.is_empty() {
        return String::new();
    }
    let mut counts: Vec<(&str, usize)> = by_annotation.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let mut out = format!(
        "  ingress-nginx annotations not honoured ({} on {ingresses} Ingress(es); each Ingress's are in --status):\n",
        counts.len()
    );
    for (annotation, count) in counts {
        out.push_str(&format!("    {annotation}: {count} Ingress(es)\n"));
    }
    out
}

fn run_convert(args: &ConvertArgs) -> Result<(), String> {
    let name = args.table.display();
    let bytes = if args.table.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes).map_err(|e| format!("stdin: {e}"))?;
        bytes
    } else {
        std::fs::read(&args.table).map_err(|e| format!("{name}: cannot read: {e}"))?
    };
    let table = crate::flags::read_table(&bytes, &name.to_string())?;
    write_out(None, &args.encoding.file_text(&table)?)
}

fn run_explain(args: &ExplainArgs) -> Result<(), String> {
    let bytes = std::fs::read(&args.table).map_err(|e| format!("{}: cannot read: {e}", args.table.display()))?;
    let table = RouteTable::from_json(&bytes).map_err(|e| format!("{}: {e}", args.table.display()))?;
    let request = switchyard_compiler::explain::request(&args.url, &args.method, &args.headers, &args.cookies)?;
    let explanation = switchyard_compiler::explain::explain_from(&table, &request, args.client_address);
    let passthrough = match &args.l4 {
        Some(path) => passthrough_of(path, &request)?,
        None => None,
    };
    let sni = match (&args.sni, &args.l4) {
        (Some(sni), Some(path)) => Some((sni.as_str(), sni_of(path, sni)?)),
        _ => None,
    };
    let text = if args.json {
        let mut json = serde_json::to_value(&explanation.decision).map_err(|e| e.to_string())?;
        if let (Some(route), Some(object)) = (&passthrough, json.as_object_mut()) {
            object.insert("l4".to_owned(), serde_json::to_value(route).map_err(|e| e.to_string())?);
        }
        if let (Some((_, answer)), Some(object)) = (&sni, json.as_object_mut()) {
            object.insert(
                "tls".to_owned(),
                serde_json::to_value(answer).map_err(|e| e.to_string())?,
            );
        }
        json.to_string() + "\n"
    } else {
        let mut text = String::new();
        if let Some(route) = &passthrough {
            text.push_str(&format!(
                "host {host}: TLS is passed through by SNI on Envoy listener {listener} (port {port}) to cluster \
                 {cluster}, untouched: a TransportServer won this host, and the HTTP table below does not see \
                 these connections\n",
                host = switchyard_table::normalize_authority(&request.authority),
                listener = route.listener,
                port = route.port,
                cluster = route.cluster,
            ));
        }
        if let Some((sni, answer)) = &sni {
            text.push_str(&sni_sentence(sni, answer.as_ref()));
        }
        text + &switchyard_compiler::explain::render(&explanation, &request)
    };
    write_out(None, &text)
}

/// What the HTTPS listener of `--l4 FILE` answers a handshake naming `sni` (empty: none) with.
fn sni_of(path: &PathBuf, sni: &str) -> Result<Option<switchyard_compiler::https::listener::SniAnswer>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let document: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not an LDS document: {e}", path.display()))?;
    let sni = Some(sni).filter(|s| !s.is_empty());
    Ok(switchyard_compiler::https::listener::sni_answer(&document, sni))
}

/// `explain --sni`'s sentence.
fn sni_sentence(sni: &str, answer: Option<&switchyard_compiler::https::listener::SniAnswer>) -> String {
    use switchyard_compiler::https::listener::DEFAULT_CERTIFICATE;
    let named = if sni.is_empty() {
        "without SNI".to_owned()
    } else {
        format!("naming {sni}")
    };
    let Some(answer) = answer else {
        return format!(
            "TLS {named}: no HTTPS listener terminates it (passed through, or no --sds-dir listener in --l4)\n"
        );
    };
    let certificate = match answer.certificate.as_deref() {
        None => "no certificate: the handshake fails (its VirtualServer's Secret is unusable)".to_owned(),
        Some(DEFAULT_CERTIFICATE) => "the default certificate, made at start".to_owned(),
        Some(name) if answer.chain == "https-default" => {
            format!("the default certificate, Secret {name} (--default-certificate)")
        }
        Some(name) => format!("the certificate of Secret {name}"),
    };
    format!(
        "TLS {named}: {certificate} (filter chain {}, {} to {}); the request routes by its Host below\n",
        answer.chain, answer.versions.0, answer.versions.1
    )
}

/// The L4 route `--l4 FILE` (written by `compile --l4`) gives the request's host, if any.
fn passthrough_of(
    path: &PathBuf,
    request: &switchyard_table::SimpleRequest,
) -> Result<Option<switchyard_compiler::lds::SniRoute>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let document: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not an LDS document: {e}", path.display()))?;
    let host = switchyard_table::normalize_authority(&request.authority);
    Ok(switchyard_compiler::lds::sni_route(&document, &host))
}
