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
            .args(["build", "--quiet", "--locked", "--release", "--target", "wasm32-wasip1", "--manifest-path"])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target_dir)
            .status()
            .unwrap_or_else(|e| panic!("cannot run cargo to build the probe module: {e}"));
        assert!(status.success(), "building the probe module failed ({status}); run `make test-host-sim`");
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
