//! The filter's configuration reader on any bytes (JSON text, wrapped tables, protobuf `Struct`
//! bytes), and the sharded form's reader by ranges with a store loading what it reads: they never
//! panic. The filter is a `cdylib` only (an `rlib` would cost 36 KB of `.wasm`),
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
    use switchyard_table::compact::Miniz;
    use switchyard_table::shards::{read_ranged, ShardStore};
    let _ = config::load_table(data, &Miniz).map(|table| table.rules().len());
    if let Some(parts) = read_ranged(&data) {
        let _ = ShardStore::new().load(parts, &Miniz).map(|(table, _)| table.rule_count());
    }
});
