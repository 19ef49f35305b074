//! How host-sim refuses modules it cannot run: each failure is an error naming the file and the
//! reason (every missing import listed), never a panic; and the `host-sim` command's exit status
//! and JSON.

mod common;

use std::process::Command;
use switchyard_host_sim::{Sim, SimError};

#[test]
fn every_missing_import_is_listed() {
    let bytes = common::tiny_module(
        &[
            ("env", "proxy_log_v9"),
            ("env", "proxy_done"),
            ("wasi_snapshot_preview1", "path_open"),
        ],
        Some("proxy_abi_version_0_2_1"),
    );
    let err = Sim::load(common::temp_file("missing.wasm", &bytes)).unwrap_err();
    let SimError::MissingImports { missing, .. } = &err else {
        panic!("not a missing-import error: {err}")
    };
    assert_eq!(
        missing,
        &vec![
            "env::proxy_log_v9".to_string(),
            "wasi_snapshot_preview1::path_open".to_string()
        ]
    );
    assert!(
        err.to_string().contains(
            "imports 2 function(s) host-sim does not provide: env::proxy_log_v9, wasi_snapshot_preview1::path_open"
        ),
        "{err}"
    );
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
    assert!(
        err.to_string().contains("(it exports proxy_abi_version_0_1_0)"),
        "{err}"
    );
}

#[test]
fn a_module_without_an_allocator_is_refused() {
    let err = Sim::load(common::temp_file(
        "noalloc.wasm",
        &common::tiny_module(&[], Some("proxy_abi_version_0_2_1")),
    ))
    .unwrap_err();
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
        .args([
            "request",
            "http://example.net/cli?x=1",
            "-X",
            "POST",
            "-H",
            "X-Probe-Clear: yes",
            "--cookie",
            "a=1",
            "--cookie",
            "b=2",
        ])
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
    assert!(json["logs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l["message"] == "probe: configured with from-the-command"));
    assert_eq!(json["route_cache_clears"]["foreign_function"], 1);
}

#[test]
fn a_refused_configuration_still_exits_zero() {
    let config = common::temp_file("config", b"refuse");
    let out = host_sim()
        .arg("--wasm")
        .arg(common::probe_wasm())
        .arg("--config")
        .arg(&config)
        .args(["request", "http://x/"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["configured"], false);
}

#[test]
fn the_command_fails_clearly_when_the_module_cannot_load() {
    let bytes = common::tiny_module(&[("env", "nope")], Some("proxy_abi_version_0_2_1"));
    let wasm = common::temp_file("bad.wasm", &bytes);
    let config = common::temp_file("config", b"");
    let out = host_sim()
        .arg("--wasm")
        .arg(&wasm)
        .arg("--config")
        .arg(&config)
        .args(["request", "http://x/"])
        .output()
        .unwrap();
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

fn uleb(mut v: u32, out: &mut Vec<u8>) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn sleb(mut v: i32, out: &mut Vec<u8>) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if (v == 0 && byte & 0x40 == 0) || (v == -1 && byte & 0x40 != 0) {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn section(out: &mut Vec<u8>, id: u8, body: &[u8]) {
    out.push(id);
    uleb(body.len() as u32, out);
    out.extend_from_slice(body);
}

fn name(out: &mut Vec<u8>, s: &str) {
    uleb(s.len() as u32, out);
    out.extend_from_slice(s.as_bytes());
}

/// A module whose `proxy_on_vm_start` hands host-sim bad pointers and sizes (a log message past the
/// end of memory, two gigabytes of `random_get`), then reports the two status codes it got through
/// the tick period (`status * 1000 + errno`), so the test can read them back.
fn hostile_module() -> Vec<u8> {
    let mut m = b"\0asm\x01\0\0\0".to_vec();
    // Types: 0 () -> (), 1 (i32 i32 i32) -> i32, 2 (i32 i32) -> i32, 3 (i32) -> i32.
    section(
        &mut m,
        1,
        &[
            4, 0x60, 0, 0, 0x60, 3, 0x7f, 0x7f, 0x7f, 1, 0x7f, 0x60, 2, 0x7f, 0x7f, 1, 0x7f, 0x60, 1, 0x7f, 1, 0x7f,
        ],
    );
    let mut imports = vec![3];
    for (module, field, ty) in [
        ("env", "proxy_log", 1u8),
        ("wasi_snapshot_preview1", "random_get", 2),
        ("env", "proxy_set_tick_period_milliseconds", 3),
    ] {
        name(&mut imports, module);
        name(&mut imports, field);
        imports.extend([0, ty]);
    }
    section(&mut m, 2, &imports);
    section(&mut m, 3, &[3, 3, 2, 0]); // functions 3: allocate, 4: vm start, 5: the ABI marker
    section(&mut m, 5, &[1, 0, 1]);
    let mut exports = vec![4];
    for (field, kind, index) in [
        ("memory", 2u8, 0u8),
        ("proxy_on_memory_allocate", 0, 3),
        ("proxy_on_vm_start", 0, 4),
        ("proxy_abi_version_0_2_1", 0, 5),
    ] {
        name(&mut exports, field);
        exports.extend([kind, index]);
    }
    section(&mut m, 7, &exports);
    let allocate = {
        let mut b = vec![0, 0x41];
        sleb(1024, &mut b);
        b.push(0x0b);
        b
    };
    let vm_start = {
        let mut b = vec![0];
        let konst = |b: &mut Vec<u8>, v: i32| {
            b.push(0x41);
            sleb(v, b);
        };
        konst(&mut b, 2);
        konst(&mut b, 0x7fff_fff0);
        konst(&mut b, 100);
        b.extend([0x10, 0]); // call proxy_log
        konst(&mut b, 1000);
        b.push(0x6c); // i32.mul
        konst(&mut b, 16);
        konst(&mut b, 0x7fff_ffff);
        b.extend([0x10, 1]); // call random_get
        b.push(0x6a); // i32.add
        b.extend([0x10, 2, 0x1a]); // call proxy_set_tick_period_milliseconds, drop
        konst(&mut b, 1);
        b.push(0x0b);
        b
    };
    let mut code = vec![3];
    for body in [allocate, vm_start, vec![0, 0x0b]] {
        uleb(body.len() as u32, &mut code);
        code.extend(body);
    }
    section(&mut m, 10, &code);
    m
}

#[test]
fn bad_pointers_from_the_module_get_error_codes_not_host_panics() {
    let mut sim = Sim::load(common::temp_file("hostile.wasm", &hostile_module())).expect("the module loads");
    assert!(sim.start(), "proxy_on_vm_start ran to its end");
    // InvalidMemoryAccess (6) from proxy_log, EFAULT (21) from random_get.
    assert_eq!(sim.tick_period(), Some(std::time::Duration::from_millis(6021)));
    assert!(sim.error().is_none());
}
