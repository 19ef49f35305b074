//! Shared by host-sim's integration tests: where the `.wasm` files are, building the probe module
//! when needed. A missing `.wasm` fails the test; it is never skipped.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The probe module (`tests/probe-module`), built for wasm32-wasip1 once per test process, or
/// taken from `HOST_SIM_PROBE_WASM`.
pub fn probe_wasm() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        if let Some(path) = std::env::var_os("HOST_SIM_PROBE_WASM") {
            return PathBuf::from(path);
        }
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/probe-module/Cargo.toml");
        let target_dir = workspace().join("target/host-sim-probe");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let status = Command::new(cargo)
            .args([
                "build",
                "--quiet",
                "--locked",
                "--release",
                "--target",
                "wasm32-wasip1",
                "--manifest-path",
            ])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target_dir)
            .status()
            .unwrap_or_else(|e| panic!("cannot run cargo to build the probe module: {e}"));
        assert!(
            status.success(),
            "building the probe module failed ({status}); run `make test-host-sim`"
        );
        target_dir.join("wasm32-wasip1/release/host_sim_probe.wasm")
    })
    .clone()
}

/// Our filter's `.wasm`: `SWITCHYARD_WASM`, else `make build-wasm`'s output. Panics (the test
/// fails) when it is missing.
pub fn filter_wasm() -> PathBuf {
    let path = std::env::var_os("SWITCHYARD_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/wasm32-wasip1/release/switchyard_filter.wasm"));
    assert!(
        path.is_file(),
        "the filter's wasm {} is missing: run `make build-wasm` (or `make test-host-sim`), or set SWITCHYARD_WASM",
        path.display()
    );
    path
}

/// A minimal module, encoded by hand: it imports `imports` (each a `() -> ()` function), exports
/// its memory, and exports `abi_export` (a `() -> ()` function) when given. Enough to test how
/// host-sim refuses modules.
pub fn tiny_module(imports: &[(&str, &str)], abi_export: Option<&str>) -> Vec<u8> {
    fn name(out: &mut Vec<u8>, s: &str) {
        out.push(s.len() as u8);
        out.extend_from_slice(s.as_bytes());
    }
    fn section(out: &mut Vec<u8>, id: u8, body: Vec<u8>) {
        out.push(id);
        out.push(body.len() as u8);
        out.extend(body);
    }
    let mut m = b"\0asm\x01\0\0\0".to_vec();
    section(&mut m, 1, vec![1, 0x60, 0, 0]);
    let mut imp = vec![imports.len() as u8];
    for (module, field) in imports {
        name(&mut imp, module);
        name(&mut imp, field);
        imp.extend([0, 0]);
    }
    section(&mut m, 2, imp);
    section(&mut m, 3, vec![1, 0]);
    section(&mut m, 5, vec![1, 0, 1]);
    let mut exp = vec![if abi_export.is_some() { 2 } else { 1 }];
    name(&mut exp, "memory");
    exp.extend([2, 0]);
    if let Some(abi) = abi_export {
        name(&mut exp, abi);
        exp.extend([0, imports.len() as u8]);
    }
    section(&mut m, 7, exp);
    section(&mut m, 10, vec![1, 2, 0, 0x0b]);
    m
}

/// Writes `bytes` to a fresh file in the temp directory and returns its path.
pub fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "host-sim-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}
