//! The matcher's benchmark (`make bench`): lookup time at 10 to 100k rules for a typical and the
//! worst-case request, hostile 60 KB paths of four shapes at 10k rules, and the time to parse,
//! validate and index 10k and 100k rules. After the criterion runs it prints the figures side by
//! side with the ratio 100k/10 and the goals.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion};
use switchyard_table::compact::Miniz;
use switchyard_table::shards::{self, InMemory, ShardEncoder, ShardStore, ShardedTable};
use switchyard_table::{json, synthetic, PathSpec, RouteTable, SimpleRequest};

const SIZES: [usize; 4] = [10, 1_000, 10_000, 100_000];
const INDEX_SIZES: [usize; 2] = [10_000, 100_000];
/// Hostile paths: about 60 KB (Envoy's default header limit) of one unit repeated after a `/`.
const HOSTILE: [(&str, &str); 4] = [
    ("slashes", "/"),
    ("one_segment", "a"),
    ("short_segments", "ab/"),
    ("a_slash_a", "a/"),
];
const HOSTILE_BYTES: usize = 60_000;
const HOSTILE_RULES: usize = 10_000;
/// The sharded form's table size.
const SHARDED_RULES: usize = 100_000;
/// Locations of the ingress-nginx host in regex mode (`host-sim/bench/table.py --regex-mode N`).
const REGEX_MODE_PATHS: usize = 100;

/// The table and the request of `host-sim/bench/table.py --regex-mode n`, rule for rule: one
/// ingress-nginx host in regex mode (ROUTING.md §7.4) with `n` locations `(?i)(?:P).*`, longest
/// path string first; two thirds plain (`/api/v<j>/items/list`), a third with `rewrite-target`
/// (`/r<j>(/|$)(.*)` -> `/$2`, with `x-forwarded-prefix`), the root `/` last. The request is
/// rewritten by the middle one of the rewrites, about the 80th location tried.
fn regex_mode(n: usize) -> (RouteTable, SimpleRequest) {
    let mut paths: Vec<(String, usize, bool)> = (0..n - 1)
        .map(|j| match j % 3 {
            0 => (format!("/r{j}(/|$)(.*)"), j, true),
            _ => (format!("/api/v{j}/items/list"), j, false),
        })
        .collect();
    paths.sort_by(|a, b| (b.0.len(), &b.0).cmp(&(a.0.len(), &a.0)));
    paths.push(("/".to_owned(), n, false));
    let rules: Vec<serde_json::Value> = (paths.iter().enumerate())
        .map(|(i, (path, j, rewrite))| {
            let mut route = serde_json::json!({ "backends": [{ "cluster": format!("ns/svc{j}:80") }] });
            if *rewrite {
                route["rewrite_regex"] = serde_json::json!({
                    "pattern": format!("(?i)^{path}"),
                    "path": "/$2",
                    "headers": [{ "name": "x-forwarded-prefix", "value": format!("/r{j}") }],
                });
            }
            serde_json::json!({
                "name": format!("Ingress/ns/rx{j}#{i}"),
                "host": "rx.example",
                "path": { "type": "regex", "value": format!("(?i)(?:{path}).*") },
                "action": { "route": route },
            })
        })
        .collect();
    let json = serde_json::json!({ "version": 1, "generation": format!("bench-regex-mode-{n}"), "rules": rules });
    let table = RouteTable::from_document(json).expect("the regex-mode table is valid");
    let mid = 3 * ((n - 1) / 6);
    (
        table,
        SimpleRequest::get("rx.example", &format!("/R{mid}/items/42?id=1")),
    )
}

/// A request for the deep host (rules at five depths under `/a`, a regex, the wildcard above it
/// and the catch-all) with a hostile path.
fn hostile_request(unit: &str) -> SimpleRequest {
    let path = format!("/{}", unit.repeat(HOSTILE_BYTES / unit.len()));
    SimpleRequest::get(synthetic::DEEP_HOST, &path)
}

fn main() {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/criterion");
    let mut c = Criterion::default()
        .output_directory(&out)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .configure_from_args();

    let mut lookup = c.benchmark_group("lookup");
    for size in SIZES {
        let table = RouteTable::try_from(synthetic::table(size)).expect("synthetic tables are valid");
        for (case, request) in [
            ("typical", synthetic::typical_request(size)),
            ("worst", synthetic::worst_request()),
        ] {
            lookup.bench_with_input(BenchmarkId::new(case, size), &request, |b, request| {
                b.iter(|| table.route(black_box(request), 7).map(|d| d.position))
            });
        }
    }
    lookup.finish();

    let mut hostile = c.benchmark_group("hostile");
    let table = RouteTable::try_from(synthetic::table(HOSTILE_RULES)).expect("synthetic tables are valid");
    for (shape, unit) in HOSTILE {
        let request = hostile_request(unit);
        hostile.bench_with_input(BenchmarkId::new(shape, HOSTILE_RULES), &request, |b, request| {
            b.iter(|| table.route(black_box(request), 7).map(|d| d.position))
        });
    }
    hostile.finish();

    // What the filter does per request on the regex-mode host: the match, then the winner's
    // rewrite (path and `x-forwarded-prefix`).
    let mut regex = c.benchmark_group("regex_mode");
    let ordinary = RouteTable::try_from(synthetic::table(10)).expect("synthetic tables are valid");
    let typical = synthetic::typical_request(10);
    regex.bench_with_input(BenchmarkId::new("ordinary", 10), &typical, |b, request| {
        b.iter(|| ordinary.route(black_box(request), 7).map(|d| d.position))
    });
    let (table, request) = regex_mode(REGEX_MODE_PATHS);
    regex.bench_with_input(BenchmarkId::new("route", REGEX_MODE_PATHS), &request, |b, request| {
        b.iter(|| table.route(black_box(request), 7).map(|d| d.position))
    });
    regex.bench_with_input(
        BenchmarkId::new("route_rewrite", REGEX_MODE_PATHS),
        &request,
        |b, request| {
            b.iter(|| {
                let decision = table.route(black_box(request), 7)?;
                decision.rule.rewrite(&request.path).map(|done| done.path.len())
            })
        },
    );
    regex.finish();

    let mut index = c.benchmark_group("index");
    index.sample_size(10);
    for size in INDEX_SIZES {
        let json = serde_json::to_vec(&synthetic::table(size)).expect("serialises");
        index.bench_with_input(BenchmarkId::new("parse_validate_index", size), &json, |b, json| {
            b.iter(|| RouteTable::from_json(black_box(json)).map(|t| t.rules().len()))
        });
    }
    index.finish();
    sharded(&mut c);
    c.final_summary();

    report(&out);
}

/// `text` (the sharded form) loaded into `store`.
fn load(store: &mut ShardStore, text: &str) -> ShardedTable {
    let doc = json::parse(text.as_bytes()).expect("JSON");
    let parts = shards::read(&doc, doc.root())
        .expect("the sharded form")
        .expect("well formed");
    store.load(parts, &Miniz).expect("a valid table").0
}

/// The `shards` group: see the module's doc.
fn sharded(c: &mut Criterion) {
    let spec = synthetic::table(SHARDED_RULES);
    let mut encoder = ShardEncoder::new();
    let text = encoder.encode(&spec).expect("encodes");
    let mut changed = spec.clone();
    changed.rules[SHARDED_RULES / 2].path = PathSpec::Prefix("/changed".into());
    let changed_text = encoder.encode(&changed).expect("encodes");
    let whole = RouteTable::try_from(spec).expect("synthetic tables are valid");
    let request = synthetic::typical_request(SHARDED_RULES);
    let mut group = c.benchmark_group("shards");
    group.bench_function("route_whole", |b| {
        b.iter(|| whole.route(black_box(&request), 7).map(|d| d.position))
    });
    let mut store = ShardStore::new();
    let table = load(&mut store, &text);
    group.bench_function("route_hot", |b| {
        b.iter(|| table.route(black_box(&request), 7, &Miniz, |w| w.map(|w| w.position)))
    });
    // A store keeping one rule decoded: every request to another shard's host decodes its shard.
    let mut cold_store = ShardStore::with_decoded_rules(1);
    let cold = load(&mut cold_store, &text);
    let hosts = SHARDED_RULES / 10;
    let requests: Vec<SimpleRequest> = (0..64)
        .map(|i| SimpleRequest::get(&format!("h{}.example.net", i * 7919 % hosts), "/api/v1/items"))
        .collect();
    let mut next = 0;
    group.bench_function("route_cold_host", |b| {
        b.iter(|| {
            next = (next + 1) % requests.len();
            cold.route(black_box(&requests[next]), 7, &Miniz, |w| w.map(|w| w.position))
        })
    });
    // `table` holds every shard but the changed one, which each load decodes (and drops with
    // the table it made).
    group.sample_size(20);
    group.bench_function("load_one_changed_rule", |b| {
        b.iter(|| load(&mut store, black_box(&changed_text)).rule_count())
    });
    // The catalogue (Envoy's VMs of one plugin): a canary, a fresh store, loads the changed table
    // with the table before published, and a worker whose every shard is new takes them all from
    // the catalogue.
    let shared = InMemory::default();
    load(&mut ShardStore::sharing(shared.clone()), &text);
    group.bench_function("canary_one_changed_rule", |b| {
        b.iter_batched(
            // Untimed: the table before published again (the last canary published the changed one).
            || load(&mut ShardStore::sharing(shared.clone()), &text),
            |before| {
                let canary = load(&mut ShardStore::sharing(shared.clone()), black_box(&changed_text));
                (canary.rule_count(), before)
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("worker_every_shard_new", |b| {
        b.iter(|| load(&mut ShardStore::sharing(shared.clone()), black_box(&text)).rule_count())
    });
    group.sample_size(10);
    group.bench_function("load_whole", |b| {
        b.iter(|| RouteTable::from_json(black_box(changed_text.as_bytes())).map(|t| t.rules().len()))
    });
    group.finish();
}

/// Prints this run's means side by side, read back from criterion's estimates.
fn report(out: &Path) {
    let mean = |id: &str| -> Option<f64> {
        let path: PathBuf = out.join(id).join("new/estimates.json");
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str::<serde_json::Value>(&text).ok()?["mean"]["point_estimate"].as_f64()
    };
    println!("\nmatcher lookup, ns per request (mean)");
    println!("{:>8} {:>10} {:>10}", "rules", "typical", "worst");
    for size in SIZES {
        let typical = mean(&format!("lookup/typical/{size}")).unwrap_or(f64::NAN);
        let worst = mean(&format!("lookup/worst/{size}")).unwrap_or(f64::NAN);
        println!("{size:>8} {typical:>10.1} {worst:>10.1}");
    }
    for case in ["typical", "worst"] {
        if let (Some(big), Some(small)) = (
            mean(&format!("lookup/{case}/100000")),
            mean(&format!("lookup/{case}/10")),
        ) {
            println!("ratio 100k/10, {case}: {:.2} (goal <= 2)", big / small);
        }
    }
    if let Some(worst) = mean("lookup/worst/100000") {
        println!("worst case at 100k rules: {worst:.0} ns (goal < 1000 ns)");
    }
    println!("hostile paths of {HOSTILE_BYTES} bytes at {HOSTILE_RULES} rules, us per request (goal < 1000 us)");
    for (shape, _) in HOSTILE {
        if let Some(ns) = mean(&format!("hostile/{shape}/{HOSTILE_RULES}")) {
            println!("{shape:>16} {:>10.1}", ns / 1e3);
        }
    }
    if let Some(route) = mean(&format!("regex_mode/route/{REGEX_MODE_PATHS}")) {
        let whole = mean(&format!("regex_mode/route_rewrite/{REGEX_MODE_PATHS}")).unwrap_or(f64::NAN);
        let plain = mean("regex_mode/ordinary/10").unwrap_or(f64::NAN);
        println!(
            "regex-mode host of {REGEX_MODE_PATHS} paths, ns per request: route {route:.1}, route + rewrite {whole:.1}; \
             ratio to a 10-rule typical lookup {plain:.1} ns: {:.1} / {:.1}",
            route / plain,
            whole / plain
        );
    }
    for size in INDEX_SIZES {
        if let Some(ns) = mean(&format!("index/parse_validate_index/{size}")) {
            let goal = if size == 10_000 { " (goal < 20 ms)" } else { "" };
            println!("parse + validate + index {size} rules: {:.1} ms{goal}", ns / 1e6);
        }
    }
    let shard = |id: &str| mean(&format!("shards/{id}")).unwrap_or(f64::NAN);
    let whole = shard("route_whole");
    println!(
        "sharded form, {SHARDED_RULES} rules, ns per request: whole table {whole:.1}; sharded, shard decoded {:.1} \
         (ratio {:.2}); the first request of a host whose shard is not decoded {:.0} ({:.0}x)",
        shard("route_hot"),
        shard("route_hot") / whole,
        shard("route_cold_host"),
        shard("route_cold_host") / whole
    );
    println!(
        "sharded form, {SHARDED_RULES} rules: a push of one changed rule loaded in {:.2} ms; the same table decoded whole {:.0} ms ({:.0}x)",
        shard("load_one_changed_rule") / 1e6,
        shard("load_whole") / 1e6,
        shard("load_whole") / shard("load_one_changed_rule")
    );
    println!(
        "sharded form, {SHARDED_RULES} rules, from the catalogue: a canary's load of one changed rule {:.2} ms \
         (a fresh store, the table before published); a worker's load of a table whose every shard is new {:.2} ms ({:.0}x less than whole)",
        shard("canary_one_changed_rule") / 1e6,
        shard("worker_every_shard_new") / 1e6,
        shard("load_whole") / shard("worker_every_shard_new")
    );
}
