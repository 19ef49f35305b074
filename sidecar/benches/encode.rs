//! How the sidecar encodes a table for its sinks, on the 100,000-rule table of issue 13 (1,000
//! Ingresses of 100 paths over 300 hosts, compiled by the real compiler): the compact form from
//! scratch against the incremental [`compact::Encoder`] after one Ingress's 100 rules changed, side
//! by side; the one-line JSON (`--table-encoding json`) and the rest of the engine's push path.
//! Before measuring it prints the compact form's size and cost for other zlib levels and chunk
//! sizes (what chose [`compact::ZLIB_LEVEL`] and [`compact::CHUNK_PIECES`]). Run with
//! `cargo bench -p switchyard --bench encode`; figures in BENCHMARKS.md ("Compact table").

use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use switchyard_compiler::load::{parse_text, Loaded};
use switchyard_compiler::model::Options;
use switchyard_compiler::pipeline::compile;
use switchyard_table::{compact, RouteTable, TableSpec};

/// The cluster's manifests; `changed` renames the backends of Ingress `app500`.
fn manifests(changed: bool) -> String {
    let mut yaml = String::new();
    for i in 0..1_000 {
        let service = if changed && i == 500 { "t" } else { "s" };
        yaml.push_str(&format!(
            "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: app{i}, namespace: ns{}}}\nspec:\n  rules:\n  - host: h{}.example\n    http:\n      paths:\n",
            i % 40,
            i % 300
        ));
        for j in 0..100 {
            yaml.push_str(&format!(
                "      - {{path: /app{i}/p{j}, pathType: Prefix, backend: {{service: {{name: {service}{j}, port: {{number: 80}}}}}}}}\n"
            ));
        }
    }
    yaml
}

fn table(changed: bool) -> TableSpec {
    let mut loaded = Loaded::default();
    parse_text(&manifests(changed), "cluster.yaml", &mut loaded).expect("the bench manifests parse");
    compile(&loaded.objects, &Options::default())
        .expect("the bench cluster compiles")
        .table
}

/// Size and cost of the compact form for other levels, chunk sizes and primes, printed once.
fn survey(before: &TableSpec, after: &TableSpec) {
    let grid = [
        (9, u64::MAX, 32 << 10),
        (6, u64::MAX, 32 << 10),
        (9, 256, 16 << 10),
        (6, 64, 8 << 10),
        (6, 128, 8 << 10),
        (6, 256, 0),
        (6, 256, 8 << 10),
        (6, 256, 16 << 10),
        (6, 512, 16 << 10),
        (1, 256, 16 << 10),
    ];
    for (level, pieces, prime) in grid {
        let mut encoder = compact::Encoder::with_params(level, pieces, prime);
        let started = Instant::now();
        let size = encoder.encode(before).map(|t| t.len()).unwrap_or(0);
        let fresh = started.elapsed();
        let started = Instant::now();
        encoder.encode(after).ok();
        let incremental = started.elapsed();
        let stats = encoder.stats();
        eprintln!(
            "level {level}, a chunk ends after 1 rule in {pieces}, prime {prime} bytes: {size} bytes, {} chunks; fresh {:.0} ms, after one Ingress changed {:.1} ms ({} chunks deflated)",
            stats.chunks,
            fresh.as_secs_f64() * 1e3,
            incremental.as_secs_f64() * 1e3,
            stats.deflated
        );
    }
}

fn bench(c: &mut Criterion) {
    let (before, after) = (table(false), table(true));
    let changed = before.rules.iter().zip(&after.rules).filter(|(a, b)| a != b).count();
    eprintln!("{} rules, {changed} changed", after.rules.len());
    let binary = compact::to_binary(&after).map(|b| b.len()).unwrap_or(0);
    let text = compact::to_text(&after).map(|t| t.len()).unwrap_or(0);
    eprintln!("binary document {binary} bytes, compact form {text} bytes");
    if std::env::var_os("ENCODE_SURVEY").is_some() {
        survey(&before, &after);
    }

    let mut group = c.benchmark_group("encode_100k");
    group.sample_size(10);
    group.bench_function("compact_fresh", |b| b.iter(|| compact::to_text(&after)));
    let mut encoder = compact::Encoder::new();
    let mut flip = false;
    group.bench_function("compact_incremental_one_ingress_changed", |b| {
        b.iter(|| {
            // Each encoding follows one of the other table: one Ingress's rules differ.
            flip = !flip;
            encoder.encode(if flip { &after } else { &before })
        })
    });
    group.bench_function("json_one_line", |b| b.iter(|| serde_json::to_string(&after)));
    group.bench_function("json_indented", |b| b.iter(|| serde_json::to_string_pretty(&after)));
    group.bench_function("validate_and_index", |b| {
        b.iter(|| RouteTable::try_from(after.clone()).map(|t| t.host_count()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
