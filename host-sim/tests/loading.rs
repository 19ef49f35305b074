//! How host-sim refuses modules it cannot run: each failure is an error naming the file and the
//! reason (every missing import listed), never a panic; and the `host-sim` command's exit status
//! and JSON.

mod common;

use std::process::Command;
use switchyard_host_sim::{Sim, SimError};

#[test]
fn every_missing_import_is_listed() {
    let bytes = common::tiny_module(
        &[("env", "proxy_log_v9"), ("env", "proxy_done"), ("wasi_snapshot_preview1", "path_open")],
        Some("proxy_abi_version_0_2_1"),
    );
    let err = Sim::load(common::temp_file("missing.wasm", &bytes)).unwrap_err();
    let SimError::MissingImports { missing, .. } = &err else { panic!("not a missing-import error: {err}") };
    assert_eq!(missing, &vec!["env::proxy_log_v9".to_string(), "wasi_snapshot_preview1::path_open".to_string()]);
    assert!(err.to_string().contains("imports 2 function(s) host-sim does not provide: env::proxy_log_v9, wasi_snapshot_preview1::path_open"), "{err}");
}

#[test]
fn an_import_of_the_wrong_type_fails_to_link() {
    // proxy_log takes three i32 and returns one; this module imports it as () -> ().
    let bytes = common::tiny_module(&[("env", "proxy_log")], Some("proxy_abi_version_0_2_1"));
    let err = Sim::load(common::temp_file("mistyped.wasm", &bytes)).unwrap_err();
    assert!(matches!(err, SimError::Link { .. }), "{err}");
}

#[test]
fn a_module_without_the_abi_marker_is_not_proxy_wasm() {
    let err = Sim::load(common::temp_file("plain.wasm", &common::tiny_module(&[], None))).unwrap_err();
    assert!(matches!(err, SimError::NotProxyWasm { .. }), "{err}");
    let old = common::tiny_module(&[], Some("proxy_abi_version_0_1_0"));
    let err = Sim::load(common::temp_file("old.wasm", &old)).unwrap_err();
    assert!(err.to_string().contains("(it exports proxy_abi_version_0_1_0)"), "{err}");
}

#[test]
fn a_module_without_an_allocator_is_refused() {
    let err = Sim::load(common::temp_file("noalloc.wasm", &common::tiny_module(&[], Some("proxy_abi_version_0_2_1")))).unwrap_err();
    assert!(matches!(err, SimError::BadExport { .. }), "{err}");
    assert!(err.to_string().contains("proxy_on_memory_allocate"), "{err}");
}

fn host_sim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_host-sim"))
}

#[test]
fn the_command_prints_one_json_object() {
    let config = common::temp_file("config", b"from-the-command");
    let out = host_sim()
        .args(["--wasm"])
        .arg(common::probe_wasm())
        .arg("--config")
        .arg(&config)
        .args(["request", "http://example.net/cli?x=1", "-X", "POST", "-H", "X-Probe-Clear: yes", "--cookie", "a=1", "--cookie", "b=2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(json["configured"], true);
    assert_eq!(json["action"], "continue");
    assert_eq!(json["local_response"], serde_json::Value::Null);
    let headers = json["request_headers"].as_array().unwrap();
    assert!(headers.contains(&serde_json::json!([":method", "POST"])));
    assert!(headers.contains(&serde_json::json!(["cookie", "a=1; b=2"])));
    assert!(headers.contains(&serde_json::json!(["x-probe-path", "/cli?x=1"])));
    assert!(json["logs"].as_array().unwrap().iter().any(|l| l["message"] == "probe: configured with from-the-command"));
    assert_eq!(json["route_cache_clears"]["foreign_function"], 1);
}

#[test]
fn a_refused_configuration_still_exits_zero() {
    let config = common::temp_file("config", b"refuse");
    let out = host_sim().arg("--wasm").arg(common::probe_wasm()).arg("--config").arg(&config).args(["request", "http://x/"]).output().unwrap();
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["configured"], false);
}

#[test]
fn the_command_fails_clearly_when_the_module_cannot_load() {
    let bytes = common::tiny_module(&[("env", "nope")], Some("proxy_abi_version_0_2_1"));
    let wasm = common::temp_file("bad.wasm", &bytes);
    let config = common::temp_file("config", b"");
    let out = host_sim().arg("--wasm").arg(&wasm).arg("--config").arg(&config).args(["request", "http://x/"]).output().unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("env::nope"), "{stderr}");
}

#[test]
fn bench_reports_nanoseconds_per_request() {
    let config = common::temp_file("config", b"bench");
    let out = host_sim()
        .arg("--wasm")
        .arg(common::probe_wasm())
        .arg("--config")
        .arg(&config)
        .args(["bench", "--requests", "100", "http://example.net/"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["requests"], 100);
    assert!(json["ns_per_request"].as_f64().unwrap() > 0.0);
}
