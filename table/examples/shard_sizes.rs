//! How the sharded form's cut parameters trade off (`cargo run --release -p switchyard-table
//! --example shard_sizes [RULES]`, default 100,000 rules of `synthetic::table`): for each pair of
//! (rules per cut on average, shard byte bound), the text's size against the one-stream compact
//! form's, the shards, a fresh encoding and one after a changed rule, and a store's first load and
//! its load of the changed table (how many shards it decoded). What `SHARD_RULES` and
//! `MAX_SHARD_BYTES` were chosen by (BENCHMARKS.md, "Table pushes").

use std::time::Instant;
use switchyard_table::compact::Miniz;
use switchyard_table::shards::{read, ShardEncoder, ShardStore};
fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let table = switchyard_table::synthetic::table(n);
    let z = switchyard_table::compact::to_text(&table).unwrap();
    for (rules, bytes) in [
        (16u64, 32usize << 10),
        (32, 32 << 10),
        (64, 32 << 10),
        (128, 64 << 10),
        (256, 64 << 10),
    ] {
        let mut enc = ShardEncoder::with_params(rules, bytes);
        let t = Instant::now();
        let text = enc.encode(&table).unwrap();
        let full = t.elapsed();
        let mut next = table.clone();
        next.rules[n / 2].path = switchyard_table::PathSpec::Prefix("/x".into());
        let t = Instant::now();
        let text2 = enc.encode(&next).unwrap();
        let incr = t.elapsed();
        let mut store = ShardStore::new();
        let doc = switchyard_table::json::parse(text.as_bytes()).unwrap();
        let t = Instant::now();
        let (a, s1) = store.load(read(&doc, doc.root()).unwrap().unwrap(), &Miniz).unwrap();
        let first = t.elapsed();
        let doc2 = switchyard_table::json::parse(text2.as_bytes()).unwrap();
        let t = Instant::now();
        let (b, s2) = store.load(read(&doc2, doc2.root()).unwrap().unwrap(), &Miniz).unwrap();
        let push = t.elapsed();
        println!("shard_rules {rules} max {bytes}: text {} (table_z {}), shards {}, encode {:?} / incr {:?} deflated {}, load first {:?} push {:?} decoded {} / {}", text.len(), z.len(), s1.shards, full, incr, enc.stats().deflated, first, push, s1.decoded, s2.decoded);
        drop((a, b));
    }
}
