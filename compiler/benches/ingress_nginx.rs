//! ingress-nginx's Ingresses (ROUTING.md §7) at scale: 10,000 Ingresses of ingress-nginx's class
//! over 7,000 hosts (1,000 hosts shared by four Ingresses of four namespaces, 6,000 hosts of one
//! Ingress), a third of the hosts in regex mode (`use-regex` with a `rewrite-target: /$2` on
//! `/svcN(/|$)(.*)`, some with `x-forwarded-prefix`), a fifth with TLS (so `ssl-redirect` puts an
//! HTTPS redirect before each location), some with `force-ssl-redirect`, `app-root`,
//! `upstream-vhost`, paths ending in `/` (the trailing-slash 301) and an annotation that is not
//! honoured. Goal: the full compile under 1 s.
//!
//! Then one changed Ingress among them through [`Incremental::update`] (goal: under 200 ms), each
//! case alternating between two versions of one Ingress: a backend changed on a host outside regex
//! mode; a backend changed on a host in regex mode; `use-regex` and `rewrite-target` taken off and
//! put back on a host shared by four Ingresses (the host's regex mode off and on: every path of
//! the four Ingresses changes); and the same on a host of one Ingress. Each case is checked
//! against the full compile (the oracle) once before it is timed.
//!
//! Besides criterion's wall times, each case prints the CPU time of this thread per iteration
//! (`/proc/thread-self/schedstat`, median of several): on a machine shared with other builds, the
//! figure that does not count the time spent waiting for a core.
//!
//! It allocates with mimalloc, as the `switchyard` binary does (sidecar/src/main.rs): glibc's
//! allocator was a third of the compile's profile, which the sidecar never pays.
//!
//! Run with `cargo bench -p switchyard-compiler --bench ingress_nginx`.

use std::sync::Arc;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{criterion_group, criterion_main, Criterion};
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use serde_json::{json, Value};
use switchyard_compiler::incremental::{Incremental, Path};
use switchyard_compiler::{compile, Objects, Options};

/// Ingresses in all.
const INGRESSES: usize = 10_000;
/// Hosts shared by four Ingresses: Ingress `i < 4 * SHARED` is on host `i % SHARED`.
const SHARED: usize = 1_000;

/// The host of Ingress `i` (its number).
fn host_of(i: usize) -> usize {
    match i < 4 * SHARED {
        true => i % SHARED,
        false => SHARED + (i - 4 * SHARED),
    }
}

/// Whether host `h` is in regex mode (a third of them).
fn regex_host(h: usize) -> bool {
    h % 3 == 0
}

/// How one Ingress differs from its first version.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// As generated.
    Base,
    /// Its first path's backend is another Service.
    Backend,
    /// Without `use-regex` and `rewrite-target` (its host leaves regex mode).
    NoRegex,
}

/// Ingress `i`: on a regex host the first Ingress of the host turns regex mode on (`use-regex`,
/// `rewrite-target: /$2` on `/svcN(/|$)(.*)`), the others' paths become regexes with it.
fn ingress(i: usize, variant: Variant) -> Ingress {
    let h = host_of(i);
    let host = format!("app{h}.team{}.example.com", h % 37);
    let namespace = format!("team-{}", if i < 4 * SHARED { i / SHARED } else { i % 50 });
    let first_of_host = !(SHARED..4 * SHARED).contains(&i);
    let mut annotations = serde_json::Map::new();
    let mut put = |k: &str, v: &str| {
        annotations.insert(format!("nginx.ingress.kubernetes.io/{k}"), Value::from(v));
    };
    let regex_on = regex_host(h) && first_of_host && variant != Variant::NoRegex;
    if regex_on {
        put("use-regex", "true");
        put("rewrite-target", "/$2");
        if h % 2 == 0 {
            put("x-forwarded-prefix", "/svc");
        }
    }
    if h % 11 == 0 {
        put("force-ssl-redirect", "true");
    }
    if h % 7 == 2 && first_of_host {
        put("app-root", "/app");
    }
    if h % 13 == 3 {
        put("upstream-vhost", "internal.example.com");
    }
    if i % 4 == 0 {
        // Not honoured: the migration report lists it.
        put("proxy-body-size", "8m");
    }
    let service = |p: usize| match (p, variant) {
        (0, Variant::Backend) => format!("svc-{i}-v2"),
        _ => format!("svc-{i}-{p}"),
    };
    let backend = |p: usize, port: i32| json!({"service": {"name": service(p), "port": {"number": port}}});
    let k = i / SHARED % 4;
    let paths = match regex_on {
        true => vec![
            json!({"path": format!("/svc{k}(/|$)(.*)"), "pathType": "ImplementationSpecific", "backend": backend(0, 80)}),
            json!({"path": format!("/api{k}/v[0-9]+/"), "pathType": "ImplementationSpecific", "backend": backend(1, 8080)}),
        ],
        false => vec![
            json!({"path": format!("/svc{k}"), "pathType": "Prefix", "backend": backend(0, 80)}),
            json!({"path": format!("/static{k}/"), "pathType": "Prefix", "backend": backend(1, 8080)}),
            json!({"path": format!("/healthz{k}"), "pathType": "Exact", "backend": backend(2, 8081)}),
        ],
    };
    let mut spec = json!({"rules": [{"host": host, "http": {"paths": paths}}]});
    if h % 5 == 1 {
        spec["tls"] = json!([{"hosts": [host], "secretName": format!("tls-{h}")}]);
    }
    // Half by ingressClassName (an IngressClass of ingress-nginx), half by the class annotation.
    match i % 2 {
        0 => spec["ingressClassName"] = json!("nginx"),
        _ => drop(annotations.insert("kubernetes.io/ingress.class".to_owned(), json!("nginx"))),
    }
    let version = match variant {
        Variant::Base => 0,
        Variant::Backend => 1,
        Variant::NoRegex => 2,
    };
    serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": format!("ing-{i}"), "namespace": namespace, "uid": format!("{i:08}"),
                     "resourceVersion": format!("{}", i * 10 + version),
                     "creationTimestamp": format!("2024-01-{:02}T{:02}:00:00Z", 1 + i % 28, i % 24),
                     "annotations": annotations},
        "spec": spec
    }))
    .expect("a valid Ingress")
}

fn objects() -> Objects {
    let class: IngressClass = serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx"}
    }))
    .expect("a valid IngressClass");
    Objects {
        ingresses: (0..INGRESSES).map(|i| Arc::new(ingress(i, Variant::Base))).collect(),
        ingress_classes: vec![Arc::new(class)],
        ..Objects::default()
    }
}

fn options() -> Options {
    let mut options = Options::default();
    options.ingress_nginx.class = Some("nginx".to_owned());
    options
}

/// The objects with Ingress `i` in `variant`.
fn with(objects: &Objects, i: usize, variant: Variant) -> Objects {
    let mut changed = objects.clone();
    changed.ingresses[i] = Arc::new(ingress(i, variant));
    changed
}

/// This thread's CPU time so far, in ns (`None` where /proc does not say).
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// The median CPU time of `runs` calls of `f`, in ms (printed as `what`).
fn cpu_median(what: &str, runs: usize, mut f: impl FnMut(usize)) {
    let mut times: Vec<f64> = Vec::with_capacity(runs);
    for run in 0..runs {
        let Some(before) = thread_cpu_ns() else { return };
        f(run);
        let Some(after) = thread_cpu_ns() else { return };
        times.push((after - before) as f64 / 1e6);
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "{what}: CPU median {:.1} ms (min {:.1}, max {:.1}, {runs} runs)",
        times[runs / 2],
        times[0],
        times[runs - 1]
    );
}

fn bench(c: &mut Criterion) {
    let options = options();
    let base = objects();
    let compiled = compile(&base, &options).expect("the bench objects compile");
    let regex_hosts = (0..SHARED + INGRESSES - 4 * SHARED).filter(|&h| regex_host(h)).count();
    eprintln!(
        "ingress-nginx bench: {INGRESSES} Ingresses, {} hosts ({regex_hosts} in regex mode), {} rules",
        SHARED + INGRESSES - 4 * SHARED,
        compiled.table.rules.len()
    );
    cpu_median("compile_10k_ingresses", 7, |_| drop(compile(&base, &options)));
    let mut group = c.benchmark_group("ingress_nginx");
    group.sample_size(10);
    group.bench_function("compile_10k_ingresses", |b| b.iter(|| compile(&base, &options)));

    // Ingress 4,001 is alone on host 1,001 (outside regex mode), 4,500 alone on host 1,500
    // (regex mode, which it turns on); 300 is the first of four on host 300 (regex mode, which it
    // turns on for the four).
    let cases = [
        ("incremental_backend_plain_host", 4_001, Variant::Backend),
        ("incremental_backend_regex_host", 4_500, Variant::Backend),
        ("incremental_regex_mode_flip_host_of_4", 300, Variant::NoRegex),
        ("incremental_regex_mode_flip_host_of_1", 4_500, Variant::NoRegex),
    ];
    let mut incremental = Incremental::new(options.clone());
    incremental.update(&base).expect("compiles");
    for (name, i, variant) in cases {
        let changed = with(&base, i, variant);
        for objects in [&changed, &base] {
            let update = incremental.update(objects).expect("compiles");
            let want = compile(objects, &options).expect("compiles");
            let got = incremental.compiled().expect("compiled");
            assert!(
                **got.table == want.table,
                "{name}: the table differs from the full compile's"
            );
            assert!(
                got.statuses == want.statuses,
                "{name}: the statuses differ from the full compile's"
            );
            eprintln!("{name}: {update:?}");
            assert_eq!(update.path, Path::Incremental, "{name}");
        }
        cpu_median(name, 21, |run| {
            let objects = if run % 2 == 0 { &changed } else { &base };
            assert_eq!(incremental.update(objects).expect("compiles").path, Path::Incremental);
        });
        let mut turn = 0usize;
        group.bench_function(name, |b| {
            b.iter(|| {
                turn += 1;
                let objects = if turn % 2 == 0 { &changed } else { &base };
                incremental.update(objects).expect("compiles")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
