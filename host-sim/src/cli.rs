//! The `host-sim` command: load a proxy-wasm module, give it a plugin configuration, and either
//! run one request and print what happened as one JSON object, or time the whole request
//! lifecycle. Other tools parse its output: keep the `request` JSON keys stable.

use crate::{LogLevel, Outcome, Request, Sim, SimError};
use clap::{Args, Parser, Subcommand};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const ABOUT: &str = "Run a proxy-wasm module (ABI 0.2.1) without Envoy.";

const LONG_ABOUT: &str = "\
Run a proxy-wasm module (ABI 0.2.1) without Envoy, on wasmtime.

host-sim loads FILE, starts the VM (proxy_on_vm_start), hands the module the plugin configuration
(proxy_on_configure), then drives requests through the lifecycle Envoy gives an HTTP filter:
context create, request headers (and body), response headers (and body), on_log, on_done,
on_delete. The upstream answers 200 with no body.

Examples:
  host-sim --wasm target/wasm32-wasip1/release/switchyard_filter.wasm --config table.json \\
      request http://example.net/bar -H 'X-Canary: 1' --cookie 'session=abc'
  host-sim --wasm filter.wasm --config table.json bench --requests 200000 http://example.net/bar

`request` prints one JSON object:
  configured          whether proxy_on_configure accepted the configuration
  action              what proxy_on_request_headers returned: continue, pause, ...
  phases              every phase that ran and its action
  request_headers     [[name, value], ...] as the upstream would see them
  forwarded           whether the request reached the upstream
  local_response      null, or {status, headers, body} the module sent itself
  response_headers    what the client would get
  logs                [{level, message}, ...] from VM start, configuration and the request
  metrics             every metric the module defined, by name
  route_cache_clears  {foreign_function, header_mutations}: clear_route_cache calls, and request
                      header mutations (each of which clears Envoy's route cache under ABI 0.2.1)
  pending_http_calls  HTTP calls left unanswered (host-sim answers none from the command line)
  error               null, or why the module failed (a trap: a Rust panic)

Exit status: 0 when the request ran (a refused configuration is \"configured\": false), 1 when
FILE cannot be loaded (the message lists every import host-sim lacks) or an input is unreadable.";

/// `host-sim`'s command line.
#[derive(Debug, Parser)]
#[command(name = "host-sim", version, about = ABOUT, long_about = LONG_ABOUT)]
pub struct Cli {
    /// The proxy-wasm module (.wasm) to run.
    #[arg(long, value_name = "FILE")]
    pub wasm: PathBuf,

    /// The plugin configuration given to proxy_on_configure (for Switchyard's filter: the route
    /// table, JSON).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,

    /// The VM configuration given to proxy_on_vm_start.
    #[arg(long, value_name = "FILE")]
    pub vm_config: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one request and print what happened as one JSON object.
    Request(RequestArgs),
    /// Time the whole request lifecycle, repeated; prints nanoseconds per request (wall clock and
    /// this thread's CPU time) as JSON.
    Bench {
        /// How many requests to time (after 1000 untimed warm-up requests).
        #[arg(long, default_value_t = 100_000)]
        requests: u64,
        #[command(flatten)]
        request: RequestArgs,
    },
}

/// The request: a URL, a method, headers and cookies.
#[derive(Debug, Args)]
pub struct RequestArgs {
    /// The URL, http://host:port/path?query (the port is optional); :authority and :path come from it.
    pub url: String,

    /// The method.
    #[arg(short = 'X', long = "method", default_value = "GET")]
    pub method: String,

    /// A request header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_name = "'Name: value'")]
    pub headers: Vec<String>,

    /// A cookie, 'name=value' (repeatable); all go in one cookie header.
    #[arg(long = "cookie", value_name = "'name=value'")]
    pub cookies: Vec<String>,

    /// A request body.
    #[arg(long = "body")]
    pub body: Option<String>,
}

impl RequestArgs {
    /// The request these arguments describe.
    pub fn to_request(&self) -> Result<Request, String> {
        let mut request = Request::new(&self.method, &self.url);
        for header in &self.headers {
            let (name, value) = header
                .split_once(':')
                .ok_or_else(|| format!("header {header:?} is not 'Name: value'"))?;
            if name.trim().is_empty() {
                return Err(format!("header {header:?} has no name"));
            }
            request = request.header(name.trim(), value.trim());
        }
        for cookie in &self.cookies {
            let (name, value) = cookie
                .split_once('=')
                .ok_or_else(|| format!("cookie {cookie:?} is not 'name=value'"))?;
            request = request.cookie(name.trim(), value.trim());
        }
        if let Some(body) = &self.body {
            request = request.body(body.as_bytes());
        }
        Ok(request)
    }
}

/// The JSON `bench` prints.
#[derive(Debug, Serialize)]
pub struct BenchReport {
    pub configured: bool,
    pub requests: u64,
    /// Wall-clock time per request.
    pub ns_per_request: f64,
    /// CPU time of the benchmarking thread per request (Linux), which other processes competing
    /// for the cores do not inflate.
    pub cpu_ns_per_request: Option<f64>,
    pub action: String,
    pub forwarded: bool,
    pub local_status: Option<u32>,
    /// The module's linear memory after configuring and the timed requests, in bytes (wasm memory
    /// never shrinks, so this is its peak: what each of a proxy's VMs holds for this table).
    pub memory_bytes: usize,
}

/// The CPU time this thread has run, in nanoseconds (Linux's /proc/thread-self/schedstat).
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("host-sim: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn read(path: &PathBuf, what: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read the {what} {}: {e}", path.display()))
}

/// Runs a parsed command line, printing to stdout.
pub fn run(cli: Cli) -> Result<(), String> {
    let config = read(&cli.config, "plugin configuration")?;
    let vm_config = cli
        .vm_config
        .as_ref()
        .map(|p| read(p, "VM configuration"))
        .transpose()?;
    let mut sim = Sim::load(&cli.wasm).map_err(|e: SimError| e.to_string())?;
    if let Some(vm_config) = vm_config {
        sim.vm_config(vm_config);
    }
    match &cli.command {
        Command::Request(args) => {
            let request = args.to_request()?;
            sim.configure(config);
            let mut logs = sim.take_logs();
            let mut outcome: Outcome = sim.request(request);
            logs.append(&mut outcome.logs);
            outcome.logs = logs;
            let json = serde_json::to_string(&outcome).map_err(|e| e.to_string())?;
            println!("{json}");
        }
        Command::Bench { requests, request } => {
            let request = request.to_request()?;
            // Envoy logs at info by default; debug lines would be formatted and kept for nothing.
            sim.log_level(LogLevel::Info);
            let configured = sim.configure(config);
            if !configured {
                let logs: Vec<String> = sim.take_logs().iter().map(ToString::to_string).collect();
                return Err(format!(
                    "the module refused the configuration; its logs: {}",
                    logs.join(" | ")
                ));
            }
            let mut last = None;
            for _ in 0..1000 {
                last = Some(sim.request_ref(&request));
            }
            let cpu_start = thread_cpu_ns();
            let start = Instant::now();
            for _ in 0..*requests {
                last = Some(sim.request_ref(&request));
            }
            let elapsed = start.elapsed();
            let cpu = cpu_start.zip(thread_cpu_ns()).map(|(a, b)| b.saturating_sub(a));
            let last = last.ok_or("no request ran")?;
            if let Some(error) = &last.error {
                return Err(format!("the module failed: {error}"));
            }
            let report = BenchReport {
                configured,
                requests: *requests,
                ns_per_request: elapsed.as_nanos() as f64 / (*requests).max(1) as f64,
                cpu_ns_per_request: cpu.map(|ns| ns as f64 / (*requests).max(1) as f64),
                action: last.action.to_string(),
                forwarded: last.forwarded,
                local_status: last.local_status(),
                memory_bytes: sim.memory_bytes(),
            };
            println!("{}", serde_json::to_string(&report).map_err(|e| e.to_string())?);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn headers_and_cookies_parse() {
        let cli = Cli::parse_from([
            "host-sim",
            "--wasm",
            "f.wasm",
            "--config",
            "t.json",
            "request",
            "http://example.net/bar",
            "-X",
            "POST",
            "-H",
            "X-A: 1",
            "--cookie",
            "a=1",
            "--cookie",
            "b=2",
        ]);
        let Command::Request(args) = cli.command else {
            panic!("a request")
        };
        let headers = args.to_request().unwrap().headers();
        assert!(headers.contains(&(":method".to_string(), "POST".to_string())));
        assert!(headers.contains(&("x-a".to_string(), "1".to_string())));
        assert!(headers.contains(&("cookie".to_string(), "a=1; b=2".to_string())));
        let bad = RequestArgs {
            url: "/".into(),
            method: "GET".into(),
            headers: vec!["nocolon".into()],
            cookies: vec![],
            body: None,
        };
        assert!(bad.to_request().is_err());
    }
}
