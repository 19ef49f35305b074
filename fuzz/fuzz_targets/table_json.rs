//! The table parser on any bytes: `RouteTable::from_json` never panics, and a table it accepts
//! routes a request (built from the same bytes) without panicking and as its definition says.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_table::{oracle, RouteTable, SimpleRequest};

fuzz_target!(|data: &[u8]| {
    let Ok(table) = RouteTable::from_json(data) else { return };
    let text = String::from_utf8_lossy(data);
    let path: String = text.chars().filter(|c| !c.is_control()).take(64).collect();
    let request = SimpleRequest::get("example.net", &format!("/{path}"));
    if let Err(why) = oracle::agree(&table, &request) {
        panic!("{why}");
    }
});
