//! The `host-sim` command: load a proxy-wasm module, give it a plugin configuration, and either
//! run one request and print what happened as one JSON object, or time the whole request
//! lifecycle. Other tools parse its output: keep the `request` JSON keys stable.

use crate::{bench, LogLevel, Outcome, Request, Sim, SimError};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

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
  host-sim --wasm new.wasm --config table.json bench --requests 1000000 --against main.wasm \\
      http://example.net/bar
  host-sim --wasm filter.wasm --config policy.json bench --against filter.wasm \\
      --against-config plain.json http://example.net/bar

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

`bench` prints one JSON object: cpu_ns_per_request (this thread's CPU time), ns_per_request
(wall clock), memory_bytes (the module's linear memory), the last request's action, forwarded and
local_status; with --against, `against` too: the other module's cpu_ns_per_request, and per pair
of adjacent batches difference_cpu_ns_per_request and ratio (min, median, max; the first module
against the other). A batch of one module runs, then one of the other, in A B then B A order, so
both see the machine at the same moments: read the median. Every request must be answered as
the first was (upstream, or locally with one status): a run whose answer changes (a rate limit
that fills up) prints an error naming both answers, not a figure.

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
        /// Another .wasm to time side by side in this process, on the same configuration and
        /// request: batches of --batch requests alternate between the two, and the report adds
        /// `against`, with the difference and ratio of each pair of adjacent batches (min, median,
        /// max). Each module runs --requests requests.
        #[arg(long, value_name = "FILE")]
        against: Option<PathBuf>,
        /// The plugin configuration of the --against module (--config's by default): the same
        /// module on two tables compares the tables (a rule with a policy against one without).
        #[arg(long, value_name = "FILE", requires = "against")]
        against_config: Option<PathBuf>,
        /// Requests per batch with --against.
        #[arg(long, default_value_t = 10_000, requires = "against")]
        batch: u64,
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
    let load = |path: &PathBuf| -> Result<Sim, String> {
        let mut sim = Sim::load(path).map_err(|e: SimError| e.to_string())?;
        if let Some(vm_config) = &vm_config {
            sim.vm_config(vm_config.clone());
        }
        Ok(sim)
    };
    let mut sim = load(&cli.wasm)?;
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
        Command::Bench {
            requests,
            against,
            against_config,
            batch,
            request,
        } => {
            let request = request.to_request()?;
            let first = bench_runner(sim, config.clone())?;
            let report = match against {
                None => bench::alone(first, &request, *requests)?,
                Some(path) => {
                    let second_config = match against_config {
                        Some(path) => read(path, "plugin configuration")?,
                        None => config,
                    };
                    let second = bench_runner(load(path)?, second_config)?;
                    let name = match against_config {
                        Some(table) => format!("{} on {}", path.display(), table.display()),
                        None => path.display().to_string(),
                    };
                    bench::side_by_side(first, second, name, &request, *requests, *batch)?
                }
            };
            println!("{}", serde_json::to_string(&report).map_err(|e| e.to_string())?);
        }
    }
    Ok(())
}

/// `sim` configured for the bench; an error with its logs when it refuses the configuration.
fn bench_runner(mut sim: Sim, config: Vec<u8>) -> Result<bench::Runner, String> {
    // Envoy logs at info by default; debug lines would be formatted and kept for nothing.
    sim.log_level(LogLevel::Info);
    if !sim.configure(config) {
        let logs: Vec<String> = sim.take_logs().iter().map(ToString::to_string).collect();
        return Err(format!(
            "the module refused the configuration; its logs: {}",
            logs.join(" | ")
        ));
    }
    Ok(bench::Runner::new(sim))
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
