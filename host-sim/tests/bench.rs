//! `host-sim bench --against`: two modules timed side by side in one process. What is checked is
//! what the report says of the run (how many requests each module ran, in how many batches, and
//! that each batch pair was compared), never how fast anything was.

mod common;

use serde_json::json;
use switchyard_host_sim::bench::{self, Runner};
use switchyard_host_sim::{Request, Sim};

fn configured(path: std::path::PathBuf, table: &str) -> Runner {
    let mut sim = Sim::load(path).unwrap();
    assert!(sim.configure(table));
    Runner::new(sim)
}

#[test]
fn side_by_side_runs_both_modules_in_alternating_batches_and_compares_each_pair() {
    let table = json!({ "version": 1, "rules": [{
        "name": "Ingress/shop/api#0", "host": "shop.example",
        "path": {"type": "prefix", "value": "/"},
        "action": {"route": {"backends": [{"cluster": "shop/api:80"}]}}
    }] })
    .to_string();
    let request = Request::get("http://shop.example/cart");
    let first = configured(common::filter_wasm(), &table);
    let second = configured(common::probe_wasm(), &table);
    // 1,050 requests in batches of 200: five pairs; the 50 left over are not timed.
    let report = bench::side_by_side(first, second, "probe".into(), &request, 1_050, 200).unwrap();
    assert_eq!(report.requests, 1_000);
    assert!(report.forwarded, "the filter routed the bench request");
    let against = report.against.expect("a side-by-side report names the second module");
    assert_eq!(
        (against.wasm.as_str(), against.requests, against.batch),
        ("probe", 1_000, 200)
    );
    let spread = &against.difference_cpu_ns_per_request;
    assert!(spread.min <= spread.median && spread.median <= spread.max, "{spread:?}");
    assert!(against.ratio.min > 0.0, "{:?}", against.ratio);
}

#[test]
fn a_module_that_fails_under_the_bench_is_an_error_not_a_figure() {
    let table = json!({ "version": 1, "rules": [] }).to_string();
    // The probe traps on a request carrying this header (its `x-probe-panic` switch).
    let request = Request::get("http://shop.example/").header("x-probe-panic", "1");
    let runner = configured(common::probe_wasm(), &table);
    let error = bench::alone(runner, &request, 10).unwrap_err();
    assert!(error.contains("the module failed"), "{error}");
}
