//! `make bench-envoy`: wrk against Envoy with one worker, in six variants that route the same rules:
//!
//! - (a) `envoy`: Envoy's own route table (one route per rule, `path_separated_prefix`, in table order);
//! - (b) `switchyard`: the switchyard filter with the table, Envoy routing on `cluster_header`;
//! - (c) `noop-wasm`: a wasm filter that does nothing and a single route: the floor any wasm filter pays;
//! - (d) `headers-wasm`: the same no-op filter making only the host calls the switchyard filter makes
//!   on a routed request (read `:authority` and `:path`, set the cluster header), with the
//!   `cluster_header` route: (b) less (d) is the cost of matching, (d) less (c) that of the host calls
//!   and of Envoy re-picking the route, which any filter that routes by `cluster_header` pays;
//! - (e) `map-wasm`: as (d), but reading the header map in one `get_header_map_pairs` call, as the
//!   switchyard filter does since issue 13: (b) less (e) is then the cost of matching, and (e)
//!   against (d) compares the two ways of reading the headers;
//! - (f) `module`: the native dynamic module (`libswitchyard_module.so`, issue 29) in (b)'s place, with
//!   the same table and route: (f) against (a) is the goal of ≥ 0.95 at 10 rules and ≥ 3.5 at 10,000
//!   (last rule), (f) against (b) what the wasm VM costs;
//! - (g) `module-cs`: the same module as Envoy's cluster specifier (the route's
//!   `inline_cluster_specifier_plugin` picks the cluster during the route match), its filter
//!   (`switchyard-actions`, holding the table) in the chain but `disabled`: no HTTP filter runs, as
//!   for a table whose winners are plain routes (docs/deploy-envoy.md, "The cluster specifier");
//! - (h) `module-cs-filter`: (g) with that filter running on every request (a table with actions
//!   needs it): (h) against (f) is what the cluster specifier saves a filter that routes by
//!   `cluster_header` (the header write and the second route match).
//!
//! Tables of 10 and 10,000 rules (segment prefixes `/p0` .. `/p{N-1}` on host `bench.example`, all to
//! one backend). Two requests: `first` matches the first rule (Envoy's best case) and `last` the last
//! one (Envoy's worst case: it tries every route in order; the filter's index does not). Each
//! measurement is repeated for 3 rounds, alternating the variants, and the median is reported.
//!
//! Environment: ENVOY_BIN, SWITCHYARD_WASM, NOOP_WASM, SWITCHYARD_MODULE (set by the Makefile);
//! BENCH_SECONDS (per run, default 5), BENCH_CONNECTIONS (default 16), BENCH_ROUNDS (default 3),
//! BENCH_SIZES (one size only), BENCH_VARIANTS (a comma-separated subset of the variants; the ratios
//! of variants left out are left out), BENCH_TABLE (`json`, the default, or `sharded`: the form
//! `switchyard watch` writes, which the filter and the module route through their shards). Writes
//! build/bench-envoy.md.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use switchyard_e2e::{
    cluster_specifier_route, fresh_dir, get, module_name, required_path, send, set_module_search_path,
    wasm_filter_config, write_file, Backend, ConfigForm, Envoy, FilterForm,
};

const HOST: &str = "bench.example";
const ALL_SIZES: [usize; 2] = [10, 10_000];
const VARIANTS: [&str; 8] = [
    "envoy",
    "switchyard",
    "module",
    "module-cs",
    "module-cs-filter",
    "noop-wasm",
    "headers-wasm",
    "map-wasm",
];
const REQUESTS: [&str; 2] = ["first", "last"];

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn table(size: usize) -> String {
    let rules: Vec<Value> = (0..size)
        .map(|i| {
            json!({
                "name": format!("Ingress/bench/r{i}#0"),
                "host": HOST,
                "path": { "type": "segment_prefix", "value": format!("/p{i}") },
                "action": { "route": { "backends": [ { "cluster": "backend" } ] } }
            })
        })
        .collect();
    let json = json!({ "version": 1, "generation": format!("bench-{size}"), "rules": rules });
    if std::env::var("BENCH_TABLE").is_ok_and(|form| form == "sharded") {
        let spec = switchyard_table::TableSpec::from_value(json).unwrap_or_else(|e| panic!("table: {e}"));
        let text = switchyard_table::shards::ShardEncoder::new().encode(&spec);
        return text.unwrap_or_else(|e| panic!("encoding: {e}"));
    }
    json.to_string()
}

fn bootstrap(virtual_hosts: Value, filters: Vec<Value>, backend_port: u16) -> Value {
    switchyard_e2e::static_bootstrap(virtual_hosts, filters, &[("backend", backend_port)])
}

/// The filters' files: the switchyard wasm filter, the do-nothing wasm module, the native module.
struct Files {
    switchyard: PathBuf,
    noop: PathBuf,
    module: Option<PathBuf>,
}

/// The route every filter variant ends in: Envoy routes on the cluster header the filter sets.
fn cluster_header_hosts() -> Value {
    json!([{ "name": "all", "domains": ["*"], "routes": [{ "match": { "prefix": "/" }, "route": { "cluster_header": "x-route-cluster" } }] }])
}

/// The switchyard filter of form `form` with the table of `size` rules, in the cluster-header bootstrap.
fn switchyard_config(form: FilterForm, file: &Path, size: usize, backend_port: u16) -> Value {
    bootstrap(
        cluster_header_hosts(),
        vec![
            json!({ "name": "switchyard", "typed_config": form.filter_config(file, &table(size), ConfigForm::StringValue) }),
        ],
        backend_port,
    )
}

/// The module as the route's cluster specifier, with its filter (holding the table) running on every
/// request (`filter_runs`) or in the chain but disabled.
fn cluster_specifier_config(module: &Path, size: usize, filter_runs: bool, backend_port: u16) -> Value {
    let form = FilterForm::ModuleClusterSpecifier;
    let mut filter = json!({ "name": "switchyard", "typed_config": form.filter_config(module, &table(size), ConfigForm::StringValue) });
    if !filter_runs {
        filter["disabled"] = true.into();
    }
    bootstrap(
        json!([{ "name": "all", "domains": ["*"], "routes": [cluster_specifier_route(&module_name(module))] }]),
        vec![filter],
        backend_port,
    )
}

fn config(variant: &str, size: usize, backend_port: u16, files: &Files) -> Value {
    let noop = &files.noop;
    let module = || {
        files
            .module
            .as_deref()
            .unwrap_or_else(|| panic!("the {variant} variant needs SWITCHYARD_MODULE"))
    };
    match variant {
        "envoy" => {
            let routes: Vec<Value> = (0..size)
                .map(|i| json!({ "match": { "path_separated_prefix": format!("/p{i}") }, "route": { "cluster": "backend" } }))
                .collect();
            bootstrap(
                json!([{ "name": "bench", "domains": [HOST], "routes": routes }]),
                vec![],
                backend_port,
            )
        }
        "switchyard" => switchyard_config(FilterForm::Wasm, &files.switchyard, size, backend_port),
        "module" => switchyard_config(FilterForm::Module, module(), size, backend_port),
        "module-cs" | "module-cs-filter" => {
            cluster_specifier_config(module(), size, variant == "module-cs-filter", backend_port)
        }
        "headers-wasm" | "map-wasm" => bootstrap(
            cluster_header_hosts(),
            vec![json!({ "name": "noop", "typed_config": wasm_filter_config(
                noop,
                if variant == "map-wasm" { "header-map" } else { "headers" },
                ConfigForm::StringValue,
            ) })],
            backend_port,
        ),
        _ => bootstrap(
            json!([{ "name": "all", "domains": ["*"], "routes": [{ "match": { "prefix": "/" }, "route": { "cluster": "backend" } }] }]),
            vec![json!({ "name": "noop", "typed_config": wasm_filter_config(noop, "{}", ConfigForm::StringValue) })],
            backend_port,
        ),
    }
}

fn path(request: &str, size: usize) -> String {
    match request {
        "first" => "/p0/item".to_owned(),
        _ => format!("/p{}/item", size - 1),
    }
}

/// (variant, rules, request).
type Key = (&'static str, usize, &'static str);

#[derive(Debug, Clone, Copy, Default)]
struct Measure {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    /// Envoy's CPU time (user + system, all its threads) per request: unlike req/s, barely moved by
    /// whatever else the machine runs.
    cpu_us: f64,
}

/// A process's CPU time so far (user + system), in microseconds, from /proc (Linux).
fn cpu_time_us(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which is in parentheses): utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // The kernel reports clock ticks of 1/100 s (USER_HZ) on Linux.
    Some(ticks * 10_000.0)
}

fn duration_ms(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().ok()?;
    Some(match unit {
        "us" => value / 1000.0,
        "ms" => value,
        "s" => value * 1000.0,
        "m" => value * 60_000.0,
        _ => return None,
    })
}

fn wrk(url: &str, seconds: u64, connections: u64, envoy_pid: u32) -> Result<Measure, String> {
    let cpu_before = cpu_time_us(envoy_pid);
    let output = Command::new("wrk")
        .args([
            "-t1",
            &format!("-c{connections}"),
            &format!("-d{seconds}s"),
            "--latency",
            "-H",
            &format!("Host: {HOST}"),
            url,
        ])
        .output()
        .map_err(|e| format!("cannot run wrk: {e}"))?;
    let cpu_after = cpu_time_us(envoy_pid);
    let text = String::from_utf8_lossy(&output.stdout);
    if text.contains("Non-2xx") {
        return Err(format!("wrk saw non-2xx responses:\n{text}"));
    }
    let mut measure = Measure::default();
    let mut requests = 0.0;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [count, "requests", "in", ..] => requests = count.parse().unwrap_or(0.0),
            ["Requests/sec:", value] => measure.rps = value.parse().unwrap_or(0.0),
            ["50%", value] => measure.p50_ms = duration_ms(value).unwrap_or(0.0),
            ["99%", value] => measure.p99_ms = duration_ms(value).unwrap_or(0.0),
            _ => {}
        }
    }
    if measure.rps == 0.0 || requests == 0.0 {
        return Err(format!("cannot read wrk's output:\n{text}"));
    }
    if let (Some(before), Some(after)) = (cpu_before, cpu_after) {
        measure.cpu_us = (after - before) / requests;
    }
    Ok(measure)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// A ratio row of the report: (numerator, denominator, label, goal). Of req/s in [`RPS_RATIOS`], of
/// Envoy's CPU per request in [`CPU_RATIOS`] (there the numerator is the cheaper variant, so that
/// both read "≥ goal").
type Ratio = (&'static str, &'static str, &'static str, &'static str);

const RPS_RATIOS: [Ratio; 12] = [
    ("switchyard", "noop-wasm", "switchyard / noop-wasm (b/c)", "≥ 0.95"),
    ("switchyard", "envoy", "switchyard / envoy (b/a)", "≥ 1.0 at 10k, last"),
    (
        "module",
        "envoy",
        "module / envoy (f/a)",
        "≥ 0.95 at 10; ≥ 3.5 at 10k, last",
    ),
    ("module", "switchyard", "module / switchyard (f/b: the wasm VM)", ""),
    (
        "module-cs",
        "envoy",
        "module-cs / envoy (g/a)",
        "≥ 0.95 at 10; ≥ 3.5 at 10k, last",
    ),
    ("module-cs-filter", "envoy", "module-cs-filter / envoy (h/a)", ""),
    ("module-cs", "module", "module-cs / module (g/f)", ""),
    (
        "module-cs-filter",
        "module",
        "module-cs-filter / module (h/f: no header write, no second match)",
        "",
    ),
    (
        "switchyard",
        "headers-wasm",
        "switchyard / headers-wasm (b/d: matching)",
        "",
    ),
    (
        "headers-wasm",
        "noop-wasm",
        "headers-wasm / noop-wasm (d/c: host calls, route re-pick)",
        "",
    ),
    ("switchyard", "map-wasm", "switchyard / map-wasm (b/e: matching)", ""),
    (
        "map-wasm",
        "noop-wasm",
        "map-wasm / noop-wasm (e/c: host calls, route re-pick)",
        "",
    ),
];

const CPU_RATIOS: [Ratio; 12] = [
    (
        "noop-wasm",
        "switchyard",
        "noop-wasm / switchyard (c/b: the b/c goal in CPU)",
        "≥ 0.95",
    ),
    (
        "headers-wasm",
        "switchyard",
        "headers-wasm / switchyard (d/b: matching)",
        "",
    ),
    ("map-wasm", "switchyard", "map-wasm / switchyard (e/b: matching)", ""),
    (
        "headers-wasm",
        "map-wasm",
        "headers-wasm / map-wasm (d/e: two get_header vs one get_header_map_pairs)",
        "",
    ),
    ("noop-wasm", "map-wasm", "noop-wasm / map-wasm (c/e: the ABI floor)", ""),
    ("envoy", "switchyard", "envoy / switchyard (a/b)", ""),
    (
        "envoy",
        "module",
        "envoy / module (a/f: the f/a goal in CPU)",
        "≥ 0.95 at 10; ≥ 3.5 at 10k, last",
    ),
    ("switchyard", "module", "switchyard / module (b/f: the wasm VM)", ""),
    (
        "envoy",
        "module-cs",
        "envoy / module-cs (a/g: the g/a goal in CPU)",
        "≥ 0.95 at 10; ≥ 3.5 at 10k, last",
    ),
    ("envoy", "module-cs-filter", "envoy / module-cs-filter (a/h)", ""),
    ("module", "module-cs", "module / module-cs (f/g)", ""),
    (
        "module",
        "module-cs-filter",
        "module / module-cs-filter (f/h: no header write, no second match)",
        "",
    ),
];

/// The variants `BENCH_VARIANTS` names (comma-separated), all by default, in [`VARIANTS`]' order.
fn chosen_variants() -> Vec<&'static str> {
    let chosen = std::env::var("BENCH_VARIANTS").ok();
    let chosen: Option<Vec<&str>> = chosen.as_deref().map(|v| v.split(',').map(str::trim).collect());
    VARIANTS
        .into_iter()
        .filter(|v| chosen.as_ref().is_none_or(|c| c.contains(v)))
        .collect()
}

/// The filters' files from the environment; the module only when a variant needs it (its folder
/// becomes Envoy's dynamic-module search path).
fn files(variants: &[&str]) -> Files {
    let module = variants
        .iter()
        .any(|v| v.starts_with("module"))
        .then(|| required_path("SWITCHYARD_MODULE"));
    if let Some(module) = &module {
        set_module_search_path(module);
    }
    Files {
        switchyard: required_path("SWITCHYARD_WASM"),
        noop: required_path("NOOP_WASM"),
        module,
    }
}

/// The per-variant medians of every measure.
struct Results {
    runs: Vec<(Key, Vec<Measure>)>,
}

impl Results {
    fn push(&mut self, key: Key, measure: Measure) {
        match self.runs.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(measure),
            None => self.runs.push((key, vec![measure])),
        }
    }

    fn median(&self, variant: &str, size: usize, request: &str) -> Measure {
        let list = self
            .runs
            .iter()
            .find(|(key, _)| *key == (variant, size, request))
            .map(|(_, l)| l.as_slice())
            .unwrap_or_default();
        let of = |f: fn(&Measure) -> f64| median(list.iter().map(f).collect());
        Measure {
            rps: of(|m| m.rps),
            p50_ms: of(|m| m.p50_ms),
            p99_ms: of(|m| m.p99_ms),
            cpu_us: of(|m| m.cpu_us),
        }
    }
}

/// A markdown table of `ratios` (those whose variants were both measured), one column per size and
/// request, of the measure `metric` picks.
fn ratio_table(
    title: &str,
    ratios: &[Ratio],
    metric: fn(&Measure) -> f64,
    results: &Results,
    sizes: &[usize],
    variants: &[&str],
) -> String {
    let cells: Vec<(usize, &str)> = sizes.iter().flat_map(|&s| REQUESTS.map(|r| (s, r))).collect();
    let columns: Vec<String> = cells.iter().map(|(s, r)| format!("{s} {r}")).collect();
    let mut text = format!(
        "\n| {title} | goal | {} |\n| --- | --- |{}\n",
        columns.join(" | "),
        " ---: |".repeat(columns.len())
    );
    for (over, under, label, goal) in ratios {
        if !(variants.contains(over) && variants.contains(under)) {
            continue;
        }
        let values: Vec<String> = cells
            .iter()
            .map(|&(s, r)| {
                let value = metric(&results.median(over, s, r)) / metric(&results.median(under, s, r));
                format!("{value:.3}")
            })
            .collect();
        text.push_str(&format!("| {label} | {goal} | {} |\n", values.join(" | ")));
    }
    text
}

/// The report: every median, the ratio tables, and each filter's 10k / 10 scale.
fn report(results: &Results, sizes: &[usize], variants: &[&str], header: String) -> String {
    let mut report = format!(
        "{header}\n\n| rules | request | variant | req/s | p50 ms | p99 ms | Envoy CPU µs/request |\n| ---: | --- | --- | ---: | ---: | ---: | ---: |\n"
    );
    for &size in sizes {
        for request in REQUESTS {
            for &variant in variants {
                let m = results.median(variant, size, request);
                report.push_str(&format!(
                    "| {size} | {request} | {variant} | {:.0} | {:.3} | {:.3} | {:.1} |\n",
                    m.rps, m.p50_ms, m.p99_ms, m.cpu_us
                ));
            }
        }
    }
    report.push_str(&ratio_table(
        "ratio (req/s)",
        &RPS_RATIOS,
        |m| m.rps,
        results,
        sizes,
        variants,
    ));
    report.push_str(&ratio_table(
        "Envoy CPU per request, ratio",
        &CPU_RATIOS,
        |m| m.cpu_us,
        results,
        sizes,
        variants,
    ));
    if sizes.len() == ALL_SIZES.len() {
        report.push('\n');
        for filter in ["switchyard", "module", "module-cs", "module-cs-filter"]
            .into_iter()
            .filter(|f| variants.contains(f))
        {
            let scale =
                |request: &str| results.median(filter, 10_000, request).rps / results.median(filter, 10, request).rps;
            report.push_str(&format!(
                "{filter} at 10k rules / at 10 rules (goal ≥ 0.95): first {:.3}, last {:.3}\n",
                scale("first"),
                scale("last")
            ));
        }
    }
    report
}

fn main() {
    let envoy_bin = required_path("ENVOY_BIN");
    let variants = chosen_variants();
    let files = files(&variants);
    let seconds = env_number("BENCH_SECONDS", 5);
    let connections = env_number("BENCH_CONNECTIONS", 16);
    let rounds = env_number("BENCH_ROUNDS", 3) as usize;
    // BENCH_SIZES=10 (say) measures one size only, for quick experiments.
    let only: Option<usize> = std::env::var("BENCH_SIZES").ok().and_then(|v| v.parse().ok());
    let sizes: Vec<usize> = ALL_SIZES.into_iter().filter(|s| only.is_none_or(|o| o == *s)).collect();
    let sizes = sizes.as_slice();
    let backend = Backend::start("backend").unwrap_or_else(|e| panic!("backend: {e}"));

    // One Envoy per (variant, size), all started up front, each with one worker.
    let mut envoys = Vec::new();
    for &size in sizes {
        for &variant in &variants {
            let dir = fresh_dir("bench");
            write_file(
                &dir.join("envoy.yaml"),
                &config(variant, size, backend.addr.port(), &files).to_string(),
            );
            let envoy = Envoy::spawn(&envoy_bin, dir, files.switchyard.clone(), 1);
            for request in REQUESTS {
                let response = envoy.send(&get(HOST, &path(request, size)));
                assert_eq!(
                    response.backend(),
                    Some("backend"),
                    "{variant} {size} {request}: {response:?}"
                );
            }
            eprintln!("started {variant:<10} with {size:>5} rules on {}", envoy.addr);
            envoys.push(((variant, size), envoy));
        }
    }
    // Warm up every Envoy (V8 tiers up hot code) before measuring.
    for ((_, size), envoy) in &envoys {
        for request in REQUESTS {
            let _ = wrk(
                &format!("http://{}{}", envoy.addr, path(request, *size)),
                1,
                connections,
                envoy.pid(),
            );
        }
    }

    let mut results = Results { runs: Vec::new() };
    for round in 0..rounds {
        for &size in sizes {
            for request in REQUESTS {
                for ((variant, _), envoy) in envoys.iter().filter(|((_, s), _)| *s == size) {
                    let url = format!("http://{}{}", envoy.addr, path(request, size));
                    let measure = wrk(&url, seconds, connections, envoy.pid())
                        .unwrap_or_else(|e| panic!("{variant} {size} {request}: {e}"));
                    eprintln!(
                        "round {} {variant:<12} {size:>5} rules {request:<5}: {:>8.0} req/s  p50 {:.3} ms  p99 {:.3} ms  Envoy CPU {:.1} us/request",
                        round + 1,
                        measure.rps,
                        measure.p50_ms,
                        measure.p99_ms,
                        measure.cpu_us
                    );
                    results.push((*variant, size, request), measure);
                }
            }
        }
    }
    for (_, envoy) in &envoys {
        let _ = send(envoy.admin, &get("admin", "/healthcheck/fail"));
    }

    let header = format!(
        "wrk -t1 -c{connections} -d{seconds}s, Envoy --concurrency 1, {rounds} rounds alternating the variants; medians."
    );
    let report = report(&results, sizes, &variants, header);
    println!("{report}");
    let out = Path::new("build/bench-envoy.md");
    if std::fs::create_dir_all("build").is_ok() && std::fs::write(out, &report).is_ok() {
        eprintln!("written to {}", out.display());
    }
}
