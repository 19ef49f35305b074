//! `make bench-push` (issue 28): what a table push costs the requests Envoy is serving, and what a
//! table costs Envoy's memory, with the filter and with Envoy's own routes for the same table.
//!
//! For each table given on the command line (`host-sim/bench/table.py N` documents; the first should
//! be a small one, 10 rules, the baseline of the memory figures), each worker count of `PUSH_WORKERS`
//! (default `1,4`) and each variant of `PUSH_VARIANTS` (default `switchyard,envoy,module`), one Envoy
//! (`--concurrency W`) at a time:
//!
//! - `switchyard`: the filter (`SWITCHYARD_WASM`) configured through the ECDS file with the table in
//!   the sharded form (the encoder `switchyard watch` writes with: a VM decodes only the shards a push
//!   changed, and the others when a request needs them), Envoy routing on
//!   `cluster_header`; a push writes a new ECDS file beside and renames it into place, as `switchyard
//!   watch` does; it is applied when Envoy logged `table accepted` for its generation as many times as
//!   for the first table (the main thread loads each table twice, each worker once); the VMs are the
//!   threads that logged it: the main thread's and each worker's;
//! - `switchyard-compact`: the same with the table in the one-stream compact form (`table_z`), which
//!   every VM decodes whole at every push: the form before issue 28, for comparison;
//! - `envoy`: Envoy's own routes for the same table (`switchyard_e2e::bench::native_virtual_hosts`: one
//!   virtual host per host, one route per rule, all to the one backend), read from an RDS file; a push
//!   is a new RDS file renamed into place, applied when `rds.….update_success` counts it;
//! - `module`: as `switchyard`, with the native dynamic module (`SWITCHYARD_MODULE`, issue 29) in the
//!   wasm filter's place: the same ECDS file and bootstrap (`envoy_config_for`); it loads each table
//!   once, on Envoy's main thread, for all workers (the "VMs" column counts the threads that logged
//!   `table accepted`: 1), so its RSS over the small table is given in total, as Envoy's routes'.
//!
//! A request loop on one keep-alive connection (one request every `PUSH_EVERY_MS`, default 2 ms, or
//! at once after a slower one) asks for a rule in the middle of the table all along. After a second
//! of warm-up, `PUSH_COUNT` tables (default 5) are pushed one after the other, each with one rule's
//! path changed and a new generation, `PUSH_GAP_MS` (default 100) after the last was applied; after a
//! second of quiet, the same length of steady traffic. Printed per run: the latency of the requests
//! sent during the pushes and of those sent in the steady window (p50, p99, max), the time from the
//! rename to the push applied (median, max), the filter's `loaded in` over every VM and push
//! (median, max), Envoy's RSS (`VmRSS`, sampled every 20 ms) once the first table is loaded, after the
//! steady window, and its peak from the first push on; and the RSS over the same variant and worker count with the first (small)
//! table, per VM for the filter, once for Envoy's routes and the module. Last, a table of RSS ratios:
//! the module against Envoy's routes (issue 29's goal: below them) and against the wasm filter, for
//! each table and worker count. Written to build/bench-push.md as well.
//!
//! With `PUSH_ROUNDS=R` (default 1) the whole series runs R times, each round through every table,
//! worker count and variant in turn, and a last table gives, for each, the slowest request during
//! the pushes over the steady window's slowest in every round and their median: the maximum of one
//! window against the maximum of another is the figure a busy machine moves most.
//!
//! With `PUSH_ECDS=pb` the filters' ECDS file is `filter.pb`, the same `DiscoveryResponse` in binary
//! protobuf (`switchyard watch --ecds-file …/filter.pb` writes it so), instead of `filter.json`.
//!
//! Environment: ENVOY_BIN, SWITCHYARD_WASM, SWITCHYARD_MODULE (set by the Makefile; the module only
//! when a variant needs it); PUSH_WORKERS, PUSH_VARIANTS (default `switchyard,envoy,module`),
//! PUSH_COUNT, PUSH_GAP_MS, PUSH_EVERY_MS, PUSH_ROUNDS; PUSH_EDIT (`one`, the default: one changed
//! rule per push; `all`: every rule); PUSH_ECDS (`json`, the default, or `pb`).

use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchyard_e2e::bench::{
    accepted_lines, native_virtual_hosts, quantile, Accepted, RequestLoop, RssSampler, Sample,
};
use switchyard_e2e::{
    ecds_binary_for, ecds_document_for, envoy_config_reading, fresh_dir, get, required_path, send,
    set_module_search_path, write_file, Backend, ConfigForm, EcdsFile, Envoy, FilterForm,
};
use switchyard_table::compact::Encoder;
use switchyard_table::shards::ShardEncoder;

/// How long a push may take before the run fails.
const PUSH_PATIENCE: Duration = Duration::from_secs(180);

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_owned())
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// `PUSH_EDIT=all`: each push changes every rule (default: one).
/// The ECDS file `PUSH_ECDS` names: `json` (the default) or `pb`.
fn ecds_file() -> EcdsFile {
    match std::env::var("PUSH_ECDS").as_deref() {
        Ok("pb") => EcdsFile::Binary,
        Ok("json") | Err(_) => EcdsFile::Json,
        Ok(other) => panic!("PUSH_ECDS={other}: `json` or `pb`"),
    }
}

fn every_rule_changes() -> bool {
    std::env::var("PUSH_EDIT").is_ok_and(|v| v == "all")
}

/// A table and the request the loop sends.
struct Table {
    doc: Value,
    rules: usize,
    host: String,
    path: String,
    /// The cluster the filter routes the request to.
    cluster: String,
}

impl Table {
    fn read(file: &str) -> Table {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let rules = doc["rules"].as_array().unwrap_or_else(|| panic!("{file}: no rules"));
        // A rule from the middle on: a host, a segment prefix, no condition, a backend.
        let probe = rules
            .iter()
            .skip(rules.len() / 2)
            .chain(rules.iter())
            .find(|r| r["host"].is_string() && r["path"]["type"] == "segment_prefix" && r.get("conditions").is_none())
            .unwrap_or_else(|| panic!("{file}: no rule to send requests to"));
        let cluster = probe["action"]["route"]["backends"][0]["cluster"].as_str();
        Table {
            rules: rules.len(),
            host: probe["host"].as_str().unwrap_or_default().to_owned(),
            path: format!("{}/items", probe["path"]["value"].as_str().unwrap_or_default()),
            cluster: cluster
                .unwrap_or_else(|| panic!("{file}: the probe rule has no cluster"))
                .to_owned(),
            doc,
        }
    }

    /// The document of push `k` (0: the first table): generation `push-k`, and for k > 0 one rule
    /// of the first quarter (never the one requested) with its path changed; with `PUSH_EDIT=all`,
    /// every rule renamed instead (`<name>~k`: routes the same, but no shard of the table before is
    /// one of the new table's).
    fn version(&self, k: usize) -> Value {
        let mut doc = self.doc.clone();
        doc["generation"] = json!(format!("push-{k}"));
        if k > 0 && every_rule_changes() {
            for rule in doc["rules"].as_array_mut().into_iter().flatten() {
                let name = format!("{}~{k}", rule["name"].as_str().unwrap_or_default());
                rule["name"] = json!(name);
            }
        } else if k > 0 {
            let index = (k * 97) % (self.rules / 4).max(1);
            if let Some(path) = doc["rules"][index].get_mut("path") {
                path["value"] = json!(format!("/changed{k}"));
            }
        }
        doc
    }
}

/// The encoder of a variant's plugin configurations, kept from push to push (as `switchyard watch`
/// keeps one: the same text as a fresh encoder's).
enum TableEncoder {
    /// `switchyard`: the sharded form.
    Sharded(ShardEncoder),
    /// `switchyard-compact`: the one-stream compact form.
    Compact(Encoder),
}

impl TableEncoder {
    fn for_variant(variant: &str) -> TableEncoder {
        match variant {
            "switchyard-compact" => TableEncoder::Compact(Encoder::new()),
            _ => TableEncoder::Sharded(ShardEncoder::new()),
        }
    }

    /// The filter's configuration for push `k`.
    fn encode(&mut self, table: &Table, k: usize) -> String {
        let spec = switchyard_table::TableSpec::from_value(table.version(k)).unwrap_or_else(|e| panic!("table: {e}"));
        let text = match self {
            TableEncoder::Sharded(encoder) => encoder.encode(&spec),
            TableEncoder::Compact(encoder) => encoder.encode(&spec),
        };
        text.unwrap_or_else(|e| panic!("encoding: {e}"))
    }
}

/// The RDS file for push `k`: Envoy's own routes for the table.
fn rds_document(table: &Table, k: usize) -> String {
    json!({ "resources": [{
        "@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
        "name": "bench",
        "virtual_hosts": native_virtual_hosts(&table.version(k), "backend"),
    }]})
    .to_string()
}

/// The bootstrap of the `envoy` variant: as `envoy_config`'s listener, with routes from `<dir>/rds`.
fn native_bootstrap(dir: &Path, backend: &Backend) -> String {
    let rds = dir.join("rds");
    let routes = json!({ "rds": {
        "route_config_name": "bench",
        "config_source": {
            "resource_api_version": "V3",
            "path_config_source": {
                "path": rds.join("routes.json").display().to_string(),
                "watched_directory": { "path": rds.display().to_string() }
            }
        }
    } });
    switchyard_e2e::static_bootstrap_routed(routes, vec![], &[("backend", backend.addr.port())]).to_string()
}

/// Writes `bytes` to `file` through a file beside it renamed into place.
fn replace(file: &Path, bytes: &[u8]) {
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, bytes).unwrap_or_else(|e| panic!("{}: {e}", tmp.display()));
    std::fs::rename(&tmp, file).unwrap_or_else(|e| panic!("rename to {}: {e}", file.display()));
}

fn tail(envoy: &Envoy) -> String {
    let log = envoy.log();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// One run's figures.
struct Run {
    /// Which round of `PUSH_ROUNDS`, from 0.
    round: usize,
    variant: String,
    rules: usize,
    workers: usize,
    vms: usize,
    pushes: usize,
    steady: Vec<f64>,
    during: Vec<f64>,
    failed: usize,
    apply_ms: Vec<f64>,
    loaded_ms: Vec<f64>,
    /// The first load at start, per VM (ms).
    first_ms: Vec<f64>,
    /// After the first table, before the pushes.
    rss_start_kib: u64,
    rss_after_kib: u64,
    rss_peak_kib: u64,
}

/// The filters' files: the wasm filter's, and the module's when a variant needs it.
struct Files {
    wasm: PathBuf,
    module: Option<PathBuf>,
}

impl Files {
    /// From the environment; the module's folder becomes Envoy's dynamic-module search path.
    fn from_env(variants: &[String]) -> Files {
        let module = variants
            .iter()
            .any(|v| v == "module")
            .then(|| required_path("SWITCHYARD_MODULE"));
        if let Some(module) = &module {
            set_module_search_path(module);
        }
        Files {
            wasm: required_path("SWITCHYARD_WASM"),
            module,
        }
    }

    /// The filter form a variant runs and its file; `None` for Envoy's own routes.
    fn filter(&self, variant: &str) -> Option<(FilterForm, &Path)> {
        match variant {
            "switchyard" | "switchyard-compact" => Some((FilterForm::Wasm, self.wasm.as_path())),
            "module" => Some((
                FilterForm::Module,
                self.module
                    .as_deref()
                    .unwrap_or_else(|| panic!("the module variant needs SWITCHYARD_MODULE")),
            )),
            "envoy" => None,
            other => panic!("PUSH_VARIANTS: unknown variant {other}"),
        }
    }
}

/// Whether the variant's table memory is one per VM (the wasm filter's) rather than one for all
/// workers (Envoy's routes, the module's).
fn per_vm(variant: &str) -> bool {
    variant.starts_with("switchyard")
}

fn measure(
    round: usize,
    variant: &str,
    table: &Table,
    workers: usize,
    backend: &Backend,
    envoy_bin: &Path,
    files: &Files,
) -> Run {
    let pushes = env_number("PUSH_COUNT", 5) as usize;
    let gap = Duration::from_millis(env_number("PUSH_GAP_MS", 100));
    let every = Duration::from_millis(env_number("PUSH_EVERY_MS", 2));
    let form = files.filter(variant);
    let filter = form.is_some();
    let begun = Instant::now();
    eprintln!(
        "{variant}, {} rules, {workers} workers: preparing {pushes} pushes",
        table.rules
    );
    let mut encoder = TableEncoder::for_variant(variant);
    let ecds = ecds_file();
    let documents: Vec<Vec<u8>> = (0..=pushes)
        .map(|k| match form {
            Some((form, file)) if ecds == EcdsFile::Binary => ecds_binary_for(form, file, &encoder.encode(table, k)),
            Some((form, file)) => {
                ecds_document_for(form, file, &encoder.encode(table, k), ConfigForm::StringValue).into_bytes()
            }
            None => rds_document(table, k).into_bytes(),
        })
        .collect();
    let dir = fresh_dir("bench-push");
    let file = match form {
        Some((form, _)) => {
            std::fs::create_dir_all(dir.join("ecds")).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            write_file(
                &dir.join("envoy.yaml"),
                &envoy_config_reading(&dir, &[(table.cluster.as_str(), backend.addr.port())], 0, 0, form, ecds),
            );
            dir.join("ecds").join(ecds.name())
        }
        None => {
            std::fs::create_dir_all(dir.join("rds")).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            write_file(&dir.join("envoy.yaml"), &native_bootstrap(&dir, backend));
            dir.join("rds/routes.json")
        }
    };
    replace(&file, &documents[0]);
    let started = Instant::now();
    eprintln!("  prepared in {:.1} s", begun.elapsed().as_secs_f64());
    let envoy = Envoy::spawn(envoy_bin, dir, files.wasm.clone(), workers);
    let request = get(&table.host, &table.path);
    let deadline = Instant::now() + PUSH_PATIENCE;
    while send(envoy.addr, &request).map_or(true, |r| r.backend() != Some("backend")) {
        assert!(
            Instant::now() < deadline,
            "{variant}: requests are not routed:\n{}",
            tail(&envoy)
        );
        sleep(Duration::from_millis(50));
    }
    // The VMs: the threads that logged the first table, once their count stays put for a second.
    let (mut vms, mut loads) = (0, 0);
    let mut first_ms = Vec::new();
    if filter {
        let mut stable_since = Instant::now();
        while stable_since.elapsed() < Duration::from_secs(1) {
            sleep(Duration::from_millis(100));
            let lines: Vec<_> = accepted_lines(&envoy.log())
                .into_iter()
                .filter(|a| a.generation == "push-0")
                .collect();
            if lines.len() != loads {
                loads = lines.len();
                let mut threads: Vec<&str> = lines.iter().map(|a| a.thread.as_str()).collect();
                threads.sort_unstable();
                threads.dedup();
                vms = threads.len();
                first_ms = lines.iter().map(|a| a.micros as f64 / 1000.0).collect();
                stable_since = Instant::now();
            }
        }
    }
    assert!(
        !filter || loads > 0,
        "{variant}: routing, but no `table accepted` line read from the log:\n{}",
        tail(&envoy)
    );
    eprintln!(
        "  started in {:.1} s{}",
        started.elapsed().as_secs_f64(),
        if filter {
            format!(", {vms} VMs, {loads} loads of a table")
        } else {
            String::new()
        }
    );
    let rds_success = || envoy.stat("http.ingress.rds.bench.update_success").unwrap_or(0);

    let requests = RequestLoop::start(envoy.addr, &table.host, &table.path, every);
    let rss = RssSampler::start(envoy.pid(), requests.started, Duration::from_millis(20));
    sleep(Duration::from_secs(1));
    let push_start = requests.now();
    let mut apply_ms = Vec::new();
    for (k, document) in documents.iter().enumerate().skip(1) {
        let before = rds_success();
        let generation = format!("push-{k}");
        let pushed = Instant::now();
        replace(&file, document);
        loop {
            let applied = match filter {
                true => {
                    accepted_lines(&envoy.log())
                        .iter()
                        .filter(|a| a.generation == generation)
                        .count()
                        >= loads
                }
                false => rds_success() > before,
            };
            if applied {
                break;
            }
            assert!(
                pushed.elapsed() < PUSH_PATIENCE,
                "{variant}: push {k} not applied:\n{}",
                tail(&envoy)
            );
            sleep(Duration::from_millis(5));
        }
        apply_ms.push(pushed.elapsed().as_secs_f64() * 1000.0);
        sleep(gap);
    }
    let push_end = requests.now();
    sleep(Duration::from_secs(1));
    let steady_start = requests.now();
    sleep(Duration::from_secs_f64((push_end - push_start).max(2.0)));
    let steady_end = requests.now();
    let samples = requests.finish();
    let rss_samples = rss.finish();
    let window =
        |from: f64, to: f64| -> Vec<Sample> { samples.iter().filter(|s| s.at >= from && s.at < to).copied().collect() };
    let (during, steady) = (window(push_start, push_end), window(steady_start, steady_end));
    let accepted = accepted_lines(&envoy.log());
    if filter {
        // Each load as `thread: ms`, in the log's order.
        let threads = |generation: &str| -> Vec<String> {
            (accepted.iter())
                .filter(|a| a.generation == generation)
                .map(|a| format!("{}: {:.1} ms", a.thread, a.micros as f64 / 1000.0))
                .collect()
        };
        eprintln!(
            "  loads (thread: loaded in): first table {:?}, last push {:?}",
            threads("push-0"),
            threads(&format!("push-{pushes}"))
        );
        // The slowest loads of the pushes, with the shards each decoded: where `loaded in`'s
        // maximum comes from.
        let mut slowest: Vec<&Accepted> = accepted.iter().filter(|a| a.generation != "push-0").collect();
        slowest.sort_by_key(|a| std::cmp::Reverse(a.micros));
        let slowest: Vec<String> = (slowest.iter().take(3))
            .map(|a| {
                let decoded = a.shards.map_or(String::new(), |s| format!(", {} decoded", s.decoded));
                format!(
                    "{} {}: {:.1} ms{decoded}",
                    a.generation,
                    a.thread,
                    a.micros as f64 / 1000.0
                )
            })
            .collect();
        eprintln!("  slowest loads of the pushes: {slowest:?}");
    }
    let loaded_ms: Vec<f64> = accepted
        .iter()
        .filter(|a| a.generation != "push-0")
        .map(|a| a.micros as f64 / 1000.0)
        .collect();
    let run = Run {
        round,
        variant: variant.to_owned(),
        rules: table.rules,
        workers,
        vms,
        pushes,
        failed: during.iter().chain(&steady).filter(|s| s.status != 200).count(),
        steady: steady.iter().map(|s| s.ms).collect(),
        during: during.iter().map(|s| s.ms).collect(),
        apply_ms,
        loaded_ms,
        first_ms,
        rss_start_kib: rss_samples
            .iter()
            .take_while(|s| s.0 < push_start)
            .last()
            .map_or(0, |s| s.1),
        rss_after_kib: rss_samples.last().map_or(0, |s| s.1),
        rss_peak_kib: rss_samples
            .iter()
            .filter(|s| s.0 >= push_start)
            .map(|s| s.1)
            .max()
            .unwrap_or(0),
    };
    eprintln!(
        "  steady p50 {:.2} max {:.1} ms; during pushes p50 {:.2} max {:.1} ms; RSS {:.0} MiB (peak {:.0})",
        quantile(&run.steady, 0.5),
        quantile(&run.steady, 1.0),
        quantile(&run.during, 0.5),
        quantile(&run.during, 1.0),
        run.rss_after_kib as f64 / 1024.0,
        run.rss_peak_kib as f64 / 1024.0
    );
    run
}

fn ms3(values: &[f64]) -> String {
    format!(
        "{:.2} / {:.2} / {:.1}",
        quantile(values, 0.5),
        quantile(values, 0.99),
        quantile(values, 1.0)
    )
}

fn ms2(values: &[f64]) -> String {
    if values.is_empty() {
        return "—".to_owned();
    }
    format!("{:.1} / {:.1}", quantile(values, 0.5), quantile(values, 1.0))
}

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    assert!(
        !files.is_empty(),
        "usage: switchyard-bench-push SMALL_TABLE.json TABLE.json... (host-sim/bench/table.py N)"
    );
    let envoy_bin = required_path("ENVOY_BIN");
    let workers: Vec<usize> = env_list("PUSH_WORKERS", "1,4")
        .iter()
        .filter_map(|w| w.parse().ok())
        .collect();
    let variants = env_list("PUSH_VARIANTS", "switchyard,envoy,module");
    let filters = Files::from_env(&variants);
    let tables: Vec<Table> = files.iter().map(|f| Table::read(f)).collect();
    let backend = Backend::start("backend").unwrap_or_else(|e| panic!("backend: {e}"));
    let begun = Instant::now();
    let mut runs = Vec::new();
    for round in 0..env_number("PUSH_ROUNDS", 1).max(1) as usize {
        for table in &tables {
            for &w in &workers {
                for variant in &variants {
                    runs.push(measure(round, variant, table, w, &backend, &envoy_bin, &filters));
                }
            }
        }
    }

    let pushes = runs.first().map_or(0, |r| r.pushes);
    let mut report = format!(
        "Envoy 1.40 (V8), one request every {} ms on one keep-alive connection; {pushes} pushes of {} each, \
         the filters' ECDS file {}; steady: the same length of traffic after the pushes. Latency p50 / p99 / max in ms; \
         apply: rename of the file to the push applied (every load's `table accepted`: the main thread's two and each worker's, or RDS update_success), median / max; \
         RSS (VmRSS): at start (the first table loaded, before the pushes), after the steady window, peak from the first push on; \
         over the same Envoy with the {}-rule table, per VM for the wasm filter (VMs: main thread + workers), \
         for Envoy's routes and the module once for all workers (the module's VMs: the threads that loaded the table).\n\n\
         | variant | rules | workers | VMs | steady | during pushes | non-200 | apply ms | `loaded in` ms | first load ms | RSS MiB start / after / peak | over the small table, MiB start / after / peak |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        env_number("PUSH_EVERY_MS", 2),
        if every_rule_changes() { "every rule changed" } else { "one changed rule" },
        ecds_file().name(),
        tables.first().map_or(0, |t| t.rules),
    );
    let small = tables.first().map_or(0, |t| t.rules);
    for run in &runs {
        let base = runs
            .iter()
            .find(|b| b.round == run.round && b.variant == run.variant && b.workers == run.workers && b.rules == small);
        let over = match base {
            Some(base) if run.rules != small => {
                let per = if per_vm(&run.variant) {
                    run.vms.max(1) as f64
                } else {
                    1.0
                };
                let mib = |a: u64, b: u64| (a as f64 - b as f64) / 1024.0 / per;
                format!(
                    "{:+.1} / {:+.1} / {:+.1}{}",
                    mib(run.rss_start_kib, base.rss_start_kib),
                    mib(run.rss_after_kib, base.rss_after_kib),
                    mib(run.rss_peak_kib, base.rss_peak_kib),
                    if per_vm(&run.variant) { " per VM" } else { " total" }
                )
            }
            _ => "—".to_owned(),
        };
        report.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} / {:.0} / {:.0} | {over} |\n",
            run.variant,
            run.rules,
            run.workers,
            if run.variant != "envoy" {
                run.vms.to_string()
            } else {
                "—".to_owned()
            },
            ms3(&run.steady),
            ms3(&run.during),
            run.failed,
            ms2(&run.apply_ms),
            ms2(&run.loaded_ms),
            ms2(&run.first_ms),
            run.rss_start_kib as f64 / 1024.0,
            run.rss_after_kib as f64 / 1024.0,
            run.rss_peak_kib as f64 / 1024.0,
        ));
    }
    report.push_str(&rss_ratios(&runs));
    report.push_str(&over_steady(&runs));
    report.push_str(&format!("\nwhole run: {:.0} s\n", begun.elapsed().as_secs_f64()));
    println!("{report}");
    let out = Path::new("build/bench-push.md");
    if std::fs::create_dir_all("build").is_ok() && std::fs::write(out, &report).is_ok() {
        eprintln!("written to {}", out.display());
    }
}

/// The module's RSS against Envoy's routes' and the wasm filter's, for each table and worker count
/// the three ran at: the ratios of RSS at start / after the steady window / peak (below 1: the module
/// takes less).
fn rss_ratios(runs: &[Run]) -> String {
    let mut text = String::from(
        "\n| rules | workers | module RSS MiB start / after / peak | module / envoy | module / switchyard |\n\
         | ---: | ---: | ---: | ---: | ---: |\n",
    );
    let find = |variant: &str, round: usize, rules: usize, workers: usize| {
        runs.iter()
            .find(|r| r.round == round && r.variant == variant && r.rules == rules && r.workers == workers)
    };
    let mut rows = 0;
    for module in runs.iter().filter(|r| r.variant == "module") {
        let against = |variant: &str| match find(variant, module.round, module.rules, module.workers) {
            Some(other) => {
                let ratio = |a: u64, b: u64| a as f64 / (b as f64).max(1.0);
                format!(
                    "{:.2} / {:.2} / {:.2}",
                    ratio(module.rss_start_kib, other.rss_start_kib),
                    ratio(module.rss_after_kib, other.rss_after_kib),
                    ratio(module.rss_peak_kib, other.rss_peak_kib)
                )
            }
            None => "—".to_owned(),
        };
        let mib = |kib: u64| kib as f64 / 1024.0;
        text.push_str(&format!(
            "| {} | {} | {:.0} / {:.0} / {:.0} | {} | {} |\n",
            module.rules,
            module.workers,
            mib(module.rss_start_kib),
            mib(module.rss_after_kib),
            mib(module.rss_peak_kib),
            against("envoy"),
            against("switchyard")
        ));
        rows += 1;
    }
    if rows == 0 {
        return String::new();
    }
    text
}

/// With more than one round: for each variant, table and worker count, the slowest request during
/// the pushes less the steady window's slowest, in each round, and the median of those (of an even
/// number of rounds, the lower of the two middle ones).
fn over_steady(runs: &[Run]) -> String {
    if runs.iter().all(|r| r.round == 0) {
        return String::new();
    }
    let mut text = String::from(
        "\n| variant | rules | workers | slowest during pushes over the steady slowest, ms, each round | median |\n\
         | --- | ---: | ---: | --- | ---: |\n",
    );
    for first in runs.iter().filter(|r| r.round == 0) {
        let excess: Vec<f64> = runs
            .iter()
            .filter(|r| r.variant == first.variant && r.rules == first.rules && r.workers == first.workers)
            .map(|r| quantile(&r.during, 1.0) - quantile(&r.steady, 1.0))
            .collect();
        let each: Vec<String> = excess.iter().map(|e| format!("{e:+.1}")).collect();
        text.push_str(&format!(
            "| {} | {} | {} | {} | {:+.1} |\n",
            first.variant,
            first.rules,
            first.workers,
            each.join(", "),
            quantile(&excess, 0.5)
        ));
    }
    text
}
