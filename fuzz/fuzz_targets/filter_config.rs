//! The filter's configuration reader on any bytes (JSON text, wrapped tables, protobuf `Struct`
//! bytes), and the sharded form's reader by ranges with a store loading what it reads: they never
//! panic. The reader is `switchyard-request`'s, which the filter and the module are shells over.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_request::config;

fuzz_target!(|data: &[u8]| {
    use switchyard_table::compact::Miniz;
    use switchyard_table::shards::{read_ranged, ShardStore};
    let _ = config::load_table(data, &Miniz).map(|table| table.rules().len());
    if let Some(parts) = read_ranged(&data) {
        let _ = ShardStore::new().load(parts, &Miniz).map(|(table, _)| table.rule_count());
    }
});
