//! host-sim's errors: what can go wrong loading a module, with the file and the reason.

use std::path::PathBuf;

/// Why a module cannot be simulated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },

    #[error("{path} is not a valid WebAssembly module: {message}")]
    Compile { path: PathBuf, message: String },

    #[error("{path} is not a proxy-wasm module for ABI 0.2.x: it exports neither proxy_abi_version_0_2_1 nor proxy_abi_version_0_2_0{found}")]
    NotProxyWasm { path: PathBuf, found: String },

    #[error("{path} imports {} function(s) host-sim does not provide: {}", missing.len(), missing.join(", "))]
    MissingImports { path: PathBuf, missing: Vec<String> },

    #[error("{path}: cannot link the module: {message}")]
    Link { path: PathBuf, message: String },

    #[error("{path}: export {name} {problem}")]
    BadExport {
        path: PathBuf,
        name: String,
        problem: String,
    },

    #[error("{path}: the module failed in {call}: {message}")]
    Trap {
        path: PathBuf,
        call: String,
        message: String,
    },
}
