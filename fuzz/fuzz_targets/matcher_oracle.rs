//! The matcher against its definition: on tables and requests drawn from the fuzzer's bytes (through
//! `switchyard_table::oracle`, the vocabularies the table's tests use too), the index picks the same
//! rule as a plain scan of every rule in table order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_table::oracle;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.iter().copied();
    // Each choice reads one byte; past the end, always the first option.
    let mut choose = |n: usize| usize::from(bytes.next().unwrap_or(0)) % n.max(1);
    let Ok(table) = oracle::table(&mut choose, 48) else {
        panic!("the oracle's vocabularies make valid tables")
    };
    for _ in 0..8 {
        let request = oracle::request(&mut choose);
        if let Err(why) = oracle::agree(&table, &request) {
            panic!("{why}");
        }
    }
});
