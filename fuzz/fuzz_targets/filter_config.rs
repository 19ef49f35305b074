//! The filter's configuration reader on any bytes (JSON text, wrapped tables, protobuf `Struct`
//! bytes): it never panics. The filter is a `cdylib` only (an `rlib` would cost 36 KB of `.wasm`),
//! so its two reader modules are compiled here from their sources, as they are in the filter.
#![no_main]

#[path = "../../filter/src/config.rs"]
#[allow(dead_code)]
mod config;
#[path = "../../filter/src/protobuf.rs"]
#[allow(dead_code)]
mod protobuf;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = config::load_table(data, &switchyard_table::compact::Miniz).map(|table| table.rules().len());
});
