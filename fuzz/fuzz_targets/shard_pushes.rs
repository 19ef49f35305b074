//! The sharded form over pushes: table versions edited at random from the fuzzer's bytes (through
//! `switchyard_table::shards::edits`), each encoded by one kept encoder and loaded into one kept
//! store, route every request as the same version built whole; the encoder's text is a fresh one's.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_table::shards::edits;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.iter().copied();
    // Each choice reads one byte; past the end, always the first option.
    let mut choose = |n: usize| usize::from(bytes.next().unwrap_or(0)) % n.max(1);
    if let Err(why) = edits::check_pushes(&mut choose, 6) {
        panic!("{why}");
    }
});
