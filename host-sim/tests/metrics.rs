//! The per-resource request metrics (`switchyard_table::metrics`, docs/operations.md) through the
//! real filter in host-sim: each request counted once in its resource's series by status class,
//! with its duration; past the table's fold, counted as `folded`; and what a VM holds for them at
//! 10,000 resources (BENCHMARKS.md, "Per-resource request metrics").

mod common;

use serde_json::{json, Value};
use switchyard_host_sim::{MetricValue, Request, Sim};
use switchyard_table::metrics::{wasm_stat_name, DURATION, REQUESTS};

/// A table of `n` resources `Ingress/ns/svc<i>`, each one rule for host `svc<i>.example`.
fn table(n: usize, fold: Option<Value>) -> Vec<u8> {
    let rules: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "name": format!("Ingress/ns/svc{i:05}#0"),
                "host": format!("svc{i}.example"),
                "path": { "type": "prefix", "value": "/" },
                "action": { "route": { "backends": [{ "cluster": format!("ns/svc{i}:80") }] } }
            })
        })
        .collect();
    let mut table = json!({ "version": 1, "generation": "metrics", "rules": rules });
    if let Some(fold) = fold {
        table["metrics_fold"] = fold;
    }
    table.to_string().into_bytes()
}

fn sim(table: Vec<u8>) -> Sim {
    let mut sim = Sim::load(common::filter_wasm()).expect("the filter loads");
    assert!(sim.configure(table), "{:?}", sim.take_logs());
    sim
}

/// The name the filter defines `svc<i>`'s requests of `class` under.
fn requests_of(i: usize, class: &str) -> String {
    let (resource, backend) = (format!("svc{i:05}"), format!("ns/svc{i}:80"));
    let labels = [
        ("kind", "Ingress"),
        ("namespace", "ns"),
        ("resource", resource.as_str()),
        ("backend", backend.as_str()),
        ("status_class", class),
    ];
    wasm_stat_name(REQUESTS, &labels)
}

#[test]
fn each_request_counts_once_in_its_resources_series_by_status_class_with_its_duration() {
    let mut sim = sim(table(3, None));
    for _ in 0..2 {
        sim.request(Request::get("http://svc1.example/a"));
    }
    let nobody = sim.request(Request::get("http://nowhere.example/"));
    assert_eq!(nobody.local_status(), Some(404));
    assert_eq!(
        sim.metric(&requests_of(1, "2xx")),
        None,
        "counted in the VM until a tick"
    );
    sim.tick();
    assert_eq!(sim.metric(&requests_of(1, "2xx")), Some(MetricValue::Counter(2)));
    assert_eq!(sim.metric(&requests_of(0, "2xx")), None, "no request, no series");
    let none = [
        ("kind", "none"),
        ("namespace", "none"),
        ("resource", "none"),
        ("backend", "none"),
    ];
    let unrouted = wasm_stat_name(REQUESTS, &[&none[..], &[("status_class", "4xx")]].concat());
    assert_eq!(sim.metric(&unrouted), Some(MetricValue::Counter(1)));
    let svc1 = [("kind", "Ingress"), ("namespace", "ns"), ("resource", "svc00001")];
    let count = wasm_stat_name(&format!("{DURATION}_count"), &svc1);
    assert_eq!(sim.metric(&count), Some(MetricValue::Counter(2)));
    // host-sim's clock stands still: every duration is 0 ms, in the first bucket and every one after.
    let bucket = |le: &str| wasm_stat_name(&format!("{DURATION}_bucket"), &[&svc1[..], &[("le", le)]].concat());
    assert_eq!(sim.metric(&bucket("0.5")), Some(MetricValue::Counter(2)));
    assert_eq!(sim.metric(&bucket("+Inf")), Some(MetricValue::Counter(2)));
    // A tick with nothing new adds nothing.
    sim.tick();
    assert_eq!(sim.metric(&requests_of(1, "2xx")), Some(MetricValue::Counter(2)));
}

#[test]
fn resources_past_the_fold_count_as_folded() {
    let fold = json!({ "last_own": "Ingress/ns/svc00000", "folded": 1 });
    let mut sim = sim(table(2, Some(fold)));
    sim.request(Request::get("http://svc0.example/"));
    sim.request(Request::get("http://svc1.example/"));
    sim.tick();
    let folded = wasm_stat_name(
        REQUESTS,
        &[
            ("kind", "folded"),
            ("namespace", "folded"),
            ("resource", "folded"),
            ("backend", "folded"),
            ("status_class", "2xx"),
        ],
    );
    assert_eq!(sim.metric(&folded), Some(MetricValue::Counter(1)));
    assert_eq!(sim.metric(&requests_of(0, "2xx")), Some(MetricValue::Counter(1)));
    assert_eq!(sim.metric(&requests_of(1, "2xx")), None);
    assert_eq!(sim.metric("switchyard_resources_folded"), Some(MetricValue::Gauge(1)));
}

/// What a VM holds for the series of 10,000 resources, each of which a request reached: the
/// growth of its memory over the same requests to one resource (printed for BENCHMARKS.md, and
/// bounded: the series book and the stat ids, never the requests).
#[test]
fn a_vm_holds_the_series_of_10000_resources_in_a_few_mib() {
    const N: usize = 10_000;
    let mut one = sim(table(N, None));
    let mut all = sim(table(N, None));
    one.without_metrics_in_outcomes();
    all.without_metrics_in_outcomes();
    for i in 0..N {
        one.request(Request::get("http://svc0.example/"));
        all.request(Request::get(&format!("http://svc{i}.example/")));
    }
    let grown = all.memory_bytes().saturating_sub(one.memory_bytes());
    eprintln!(
        "per-resource metrics, {N} resources with a series each: +{:.1} MiB of wasm memory per VM \
         ({} bytes against one resource's series)",
        grown as f64 / (1 << 20) as f64,
        grown
    );
    assert!(grown < 8 << 20, "{grown} bytes for {N} resources' series");
    all.request(Request::get("http://svc9999.example/"));
    all.tick();
    assert_eq!(all.metric(&requests_of(9999, "2xx")), Some(MetricValue::Counter(2)));
}
