//! One changed Ingress in a 100,000-rule cluster (1,000 Ingresses of 100 paths each over 300 hosts,
//! as issue 13 states it): the full pipeline against the incremental compiler, side by side. Each
//! incremental iteration is a real change: Ingress `app500` alternates between two versions (one
//! path's backend differs). The objects carry a `resourceVersion`, as both sources hand them over
//! (the API server's; the folder source's, from each file's content hash); `incremental_no_versions`
//! is the same without, every Ingress then compared field by field. Run with
//! `cargo bench -p switchyard-compiler --bench incremental`.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use k8s_openapi::api::networking::v1::Ingress;
use switchyard_compiler::incremental::{Incremental, Path};
use switchyard_compiler::{compile, Objects, Options};

#[path = "../tests/issue13/mod.rs"]
mod issue13;
use issue13::ingress;

fn bench(c: &mut Criterion) {
    let base = Objects {
        ingresses: (0..1_000).map(|i| Arc::new(ingress(i, 0))).collect(),
        ..Objects::default()
    };
    let mut changed = base.clone();
    changed.ingresses[500] = Arc::new(ingress(500, 1));
    let options = Options::default();
    let full = compile(&base, &options).expect("compiles");
    assert_eq!(full.table.rules.len(), 100_000);
    let mut incremental = Incremental::new(options.clone());
    incremental.update(&base).expect("compiles");
    let update = incremental.update(&changed).expect("compiles");
    assert_eq!(update.path, Path::Incremental);
    eprintln!("incremental bench: {update:?}");

    let mut group = c.benchmark_group("one_changed_ingress_of_1000_100k_rules");
    group.sample_size(10);
    group.bench_function("full_compile", |b| b.iter(|| compile(&changed, &options)));
    let mut turn = 0usize;
    group.bench_function("incremental", |b| {
        b.iter(|| {
            turn += 1;
            let objects = if turn % 2 == 0 { &changed } else { &base };
            incremental.update(objects).expect("compiles")
        })
    });
    // For comparison: a deep copy of the 1,000 Ingresses, as the Kubernetes source's snapshot took
    // at every rebuild before the objects were shared, and the shared snapshot it takes now.
    group.bench_function("copy_of_the_1000_ingresses", |b| {
        b.iter(|| base.ingresses.iter().map(|i| Ingress::clone(i)).collect::<Vec<_>>())
    });
    group.bench_function("shared_snapshot_of_the_1000_ingresses", |b| {
        b.iter(|| base.ingresses.clone())
    });
    let unversioned = |objects: &Objects| {
        let mut objects = objects.clone();
        // Each a copy of its own: compared field by field, never by pointer.
        for ingress in &mut objects.ingresses {
            Arc::make_mut(ingress).metadata.resource_version = None;
        }
        objects
    };
    let (base, changed) = (unversioned(&base), unversioned(&changed));
    incremental.update(&base).expect("compiles");
    group.bench_function("incremental_no_versions", |b| {
        b.iter(|| {
            turn += 1;
            let objects = if turn % 2 == 0 { &changed } else { &base };
            incremental.update(objects).expect("compiles")
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
