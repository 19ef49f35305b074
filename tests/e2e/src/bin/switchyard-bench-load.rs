//! `make bench-load`: how long the filter takes to load a table in Envoy (V8), per form.
//!
//! Envoy (one worker) starts with a small table; then each table file given on the command line is
//! pushed through the ECDS file in turn, for `LOAD_ROUNDS` rounds (default 5), and the filter's own
//! measure is read from Envoy's log: `table accepted: … loaded in N us`, one line per thread that
//! loads it (the main thread and the worker). Prints, per file, its size and every load time, then
//! the median.
//!
//! Environment: ENVOY_BIN, SWITCHYARD_WASM (set by the Makefile).

use switchyard_e2e::{ConfigForm, Envoy};

fn loaded_micros(log: &str) -> Vec<u64> {
    log.lines()
        .filter_map(|l| l.split_once("loaded in ")?.1.strip_suffix(" us")?.trim().parse().ok())
        .collect()
}

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    assert!(!files.is_empty(), "usage: switchyard-bench-load TABLE_FILE...");
    let rounds: usize = std::env::var("LOAD_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let tables: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            (
                f.clone(),
                std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{f}: {e}")),
            )
        })
        .collect();
    let small = r#"{"version":1,"rules":[]}"#;
    let envoy = Envoy::start_with(small, &["default/backend:80"], ConfigForm::StringValue, 1);
    let mut times: Vec<Vec<u64>> = vec![Vec::new(); tables.len()];
    for _ in 0..rounds {
        for (i, (name, text)) in tables.iter().enumerate() {
            let before = loaded_micros(&envoy.log()).len();
            assert!(envoy.update_table(text, ConfigForm::StringValue), "{name} refused");
            // Both threads log once; wait (briefly) for the second line.
            for _ in 0..100 {
                if loaded_micros(&envoy.log()).len() >= before + 2 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            times[i].extend(&loaded_micros(&envoy.log())[before..]);
        }
    }
    for ((name, text), mut t) in tables.iter().zip(times) {
        t.sort_unstable();
        let median = t.get(t.len() / 2).copied().unwrap_or(0);
        println!(
            "{name}: {} bytes; loaded in (us, sorted) {t:?}; median {:.1} ms",
            text.len(),
            median as f64 / 1000.0
        );
    }
}
