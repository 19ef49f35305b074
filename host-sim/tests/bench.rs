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
    assert!(against.cpu_ns_per_request.is_some_and(|ns| ns > 0.0), "{against:?}");
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

/// A bench whose requests stop being answered alike (a rate limit of 50 requests a second, burst
/// 200, filling up) is an error naming both answers, not a figure of two answers mixed.
#[test]
fn a_bench_whose_answer_changes_is_an_error_not_a_figure() {
    let table = json!({ "version": 1, "rules": [{
        "name": "Ingress/shop/api#0", "host": "shop.example",
        "path": {"type": "prefix", "value": "/"},
        "policy": {"rate_limit": {"zone": "shop/api", "per_second": {"requests": 50, "burst": 200}}},
        "action": {"route": {"backends": [{"cluster": "shop/api:80"}]}}
    }] })
    .to_string();
    let request = Request::get("http://shop.example/cart");
    let runner = configured(common::filter_wasm(), &table);
    // The warm-up's thousand requests fill it.
    let error = bench::alone(runner, &request, 10).unwrap_err();
    assert!(error.contains("the answer changed during the run"), "{error}");
    assert!(error.contains("answered upstream"), "{error}");
    assert!(error.contains("locally with 503"), "{error}");
}

/// The command line: `--against` with `--against-config` runs the same module on two tables, and
/// the report names the second; `--against-config` alone is refused by the parser.
#[test]
fn the_bench_command_compares_one_module_on_two_tables() {
    let dir = std::env::temp_dir().join(format!("host-sim-bench-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rule = |policy: serde_json::Value| {
        json!({ "version": 1, "rules": [{
            "name": "Ingress/shop/api#0", "host": "shop.example",
            "path": {"type": "prefix", "value": "/"},
            "action": {"route": {"backends": [{"cluster": "shop/api:80"}]}},
            "policy": policy
        }] })
    };
    let (plain, limited) = (dir.join("plain.json"), dir.join("limited.json"));
    std::fs::write(&plain, rule(json!({})).to_string()).unwrap();
    std::fs::write(&limited, rule(json!({"max_body_bytes": 1024})).to_string()).unwrap();
    let wasm = common::filter_wasm();
    let host_sim = env!("CARGO_BIN_EXE_host-sim");
    let args = |extra: &[&std::ffi::OsStr]| -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = ["--wasm".into(), wasm.clone().into_os_string()].into();
        args.extend(["--config".into(), limited.clone().into_os_string()]);
        args.extend(["bench", "--requests", "400"].map(std::ffi::OsString::from));
        args.extend(extra.iter().map(|arg| arg.to_os_string()));
        args.push("http://shop.example/cart".into());
        args
    };
    let run = std::process::Command::new(host_sim)
        .args(args(&[
            "--batch".as_ref(),
            "100".as_ref(),
            "--against".as_ref(),
            wasm.as_os_str(),
            "--against-config".as_ref(),
            plain.as_os_str(),
        ]))
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(report["requests"], 400);
    assert_eq!(report["against"]["requests"], 400);
    assert_eq!(report["against"]["batch"], 100);
    let name = report["against"]["wasm"].as_str().unwrap();
    assert!(name.ends_with(&format!(" on {}", plain.display())), "{name}");
    let refused = std::process::Command::new(host_sim)
        .args(args(&["--against-config".as_ref(), plain.as_os_str()]))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--against"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}
