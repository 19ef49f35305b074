//! The sharded table form (`{"table_shards": …}`, what `switchyard watch` writes) through the real
//! filter in host-sim: a VM that is pushed table after table, each built by one encoder kept from
//! push to push as the sidecar keeps one, routes every request as a VM that loaded the same table
//! whole from its JSON (the oracle), while decoding only the shards it had not seen; a bad shard is
//! refused and the table before keeps serving whole.

mod common;

use serde_json::json;
use switchyard_cases::rule;
use switchyard_host_sim::{Outcome, Request, Sim};
use switchyard_table::shards::edits::Pushes;
use switchyard_table::shards::ShardEncoder;
use switchyard_table::TableSpec;

fn sim() -> Sim {
    Sim::load(common::filter_wasm()).expect("the filter loads")
}

/// What a request came to: the cluster chosen, the rule named by the debug header, a local reply.
fn decision(outcome: &Outcome) -> (Option<String>, Option<String>, Option<u32>) {
    assert!(outcome.error.is_none(), "the filter failed: {:?}", outcome.error);
    (
        outcome.request_header("x-route-cluster").map(str::to_owned),
        outcome.response_header("x-switchyard-rule").map(str::to_owned),
        outcome.local_response.as_ref().map(|r| r.status),
    )
}

/// The filter's log line that accepted the last table: `(shards, new decoded)`.
fn shards_logged(sim: &mut Sim) -> (usize, usize) {
    let (shards, decoded, _) = shard_counts_logged(sim);
    (shards, decoded)
}

/// The filter's log line that accepted the last table: `(shards, new decoded, new from the
/// catalogue)`.
fn shard_counts_logged(sim: &mut Sim) -> (usize, usize, usize) {
    let logs: Vec<String> = sim.take_logs().iter().map(ToString::to_string).collect();
    let line = logs
        .iter()
        .rev()
        .find(|l| l.contains("table accepted"))
        .unwrap_or_else(|| panic!("no table accepted: {logs:?}"));
    let (_, tail) = line
        .rsplit_once(" (")
        .unwrap_or_else(|| panic!("no shard counts: {line}"));
    let numbers: Vec<usize> = tail
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    (numbers[0], numbers[1], numbers[2])
}

/// A small generator (xorshift) with a fixed seed per run.
fn chooser(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed | 1;
    move |bound| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound.max(1) as u64) as usize
    }
}

/// The random edit sequences of the table crate's oracle (`shards::edits`: rules added, changed,
/// removed, runs moved), each version pushed to one VM in the sharded form and loaded whole from
/// its JSON by another: both answer every request alike, at every push.
#[test]
fn a_table_pushed_shard_by_shard_routes_as_the_same_table_loaded_whole() {
    let mut routed = 0;
    for seed in 1..=20u64 {
        let mut choose = chooser(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut versions = Pushes::new(&mut choose);
        // Small shards, so that an edit leaves most of them as they were.
        let mut encoder = ShardEncoder::with_params(2, 256);
        let (mut sharded, mut whole) = (sim(), sim());
        for push in 0..12 {
            let spec = TableSpec {
                debug_rule_header: true,
                ..versions.next_table(&mut choose)
            };
            let text = encoder.encode(&spec).unwrap();
            assert!(
                whole.configure(serde_json::to_string(&spec).unwrap()),
                "seed {seed} push {push}: JSON"
            );
            assert!(
                sharded.configure(text),
                "seed {seed} push {push}: {:?}",
                sharded.take_logs()
            );
            for _ in 0..24 {
                let request = switchyard_table::oracle::request(&mut choose);
                let mut sent = Request::new(
                    &request.method,
                    &format!("http://{}{}", request.authority, request.path),
                );
                for (name, value) in &request.headers {
                    sent = sent.header(name, value);
                }
                let got = decision(&sharded.request_ref(&sent));
                assert_eq!(
                    got,
                    decision(&whole.request_ref(&sent)),
                    "seed {seed} push {push}: {request:?}"
                );
                routed += usize::from(got.0.is_some());
            }
        }
    }
    assert!(
        routed > 1_000,
        "only {routed} requests routed: the oracle compared little"
    );
}

/// Many shards of one rule each: a push that changes one rule decodes one shard, not the table.
#[test]
fn a_push_of_one_changed_rule_decodes_one_shard() {
    let rules = |backend: &str| {
        let mut rules: Vec<_> = (0..40)
            .map(|i| {
                rule(&format!("Ingress/a/web{i}#0"))
                    .host(&format!("h{i}.example"))
                    .to("a/web:80")
            })
            .collect();
        rules[17] = rule("Ingress/a/web17#0").host("h17.example").to(backend);
        json!({ "version": 1, "generation": backend, "rules": rules })
    };
    let table = |doc: serde_json::Value| TableSpec::from_value(doc).unwrap();
    let mut encoder = ShardEncoder::with_params(1, 64);
    let mut vm = sim();
    assert!(vm.configure(encoder.encode(&table(rules("a/v1:80"))).unwrap()));
    let (shards, decoded) = shards_logged(&mut vm);
    assert!(shards >= 20, "{shards} shards");
    assert_eq!(decoded, shards, "a new VM decodes every shard");
    assert!(vm.configure(encoder.encode(&table(rules("a/v2:80"))).unwrap()));
    assert_eq!(shards_logged(&mut vm), (shards, 1));
    let outcome = vm.request(Request::get("http://h17.example/"));
    assert_eq!(outcome.request_header("x-route-cluster"), Some("a/v2:80"));
    let outcome = vm.request(Request::get("http://h3.example/"));
    assert_eq!(outcome.request_header("x-route-cluster"), Some("a/web:80"));
}

/// The filter reads its configuration by ranges (`proxy_get_buffer_bytes` with a start and a
/// length): a VM holding the table before reads the new one's front (head and index) and the text
/// of the one shard it lacks, not the megabyte around them; a new VM reads every text; the same
/// table in a wrapper (not the encoder's exact bytes) is read whole, and routes alike.
#[test]
fn a_push_reads_only_the_front_and_the_text_of_each_shard_the_vm_lacks() {
    let table = switchyard_table::synthetic::table(20_000);
    let mut changed = table.clone();
    changed.rules[9_000].path = switchyard_table::PathSpec::Prefix("/changed".into());
    let mut encoder = ShardEncoder::new();
    let (first, second) = (encoder.encode(&table).unwrap(), encoder.encode(&changed).unwrap());
    let mut vm = sim();
    assert!(vm.configure(first.clone()));
    assert!(vm.plugin_config_read() >= first.len() - first.find(",\"shards\"").unwrap());
    assert!(vm.configure(second.clone()));
    assert_eq!(shards_logged(&mut vm).1, 1);
    let front = second.find(",\"shards\"").unwrap();
    let read = vm.plugin_config_read();
    assert!(
        read < front + 70_000 && read * 5 < second.len(),
        "read {read} bytes of {} (front {front})",
        second.len()
    );
    let request = switchyard_table::synthetic::typical_request(20_000);
    let routed = decision(&vm.request(Request::get(&format!("http://{}{}", request.authority, request.path))));

    let wrapped = json!({ "value": second }).to_string();
    let mut other = sim();
    assert!(other.configure(wrapped.clone()));
    assert!(other.plugin_config_read() >= wrapped.len());
    let again = decision(&other.request(Request::get(&format!("http://{}{}", request.authority, request.path))));
    assert_eq!(again, routed);
    assert!(routed.0.is_some() || routed.2.is_some(), "{routed:?}");
}

/// A host that says the configuration's size is 0 but hands the buffer over: the filter reads it
/// whole, as before it read by ranges.
#[test]
fn a_host_that_gives_no_configuration_size_still_has_its_table_read() {
    let table = switchyard_table::synthetic::table(2_000);
    let text = ShardEncoder::new().encode(&table).unwrap();
    let mut vm = sim();
    assert!(vm.configure_saying_size(text.clone(), 0));
    let (shards, decoded) = shards_logged(&mut vm);
    assert!(shards > 1 && decoded == shards, "({shards}, {decoded})");
    assert!(vm.plugin_config_read() >= text.len());
}

/// Envoy's VMs of one plugin, as proxy-wasm-cpp-host runs them: a worker's VM kept from push to
/// push, and for each push a canary, a fresh VM of the same module (sharing the worker's shared
/// data) that checks the configuration before any worker takes it. The canary decodes only the
/// shards new to the process, and the worker decodes none, after a push of one changed rule as
/// after one that changes every shard: it takes them from the catalogue the canary published (a
/// shard is decoded at the first request for one of its hosts), and routes as the table loaded
/// whole.
#[test]
fn a_canary_decodes_only_what_is_new_to_the_process_and_the_worker_takes_the_rest_from_it() {
    let base = switchyard_table::synthetic::table(3_000);
    let mut encoder = ShardEncoder::new();
    let mut worker = sim();
    let mut push = |worker: &mut Sim, table: &TableSpec| {
        let text = encoder.encode(table).unwrap();
        let mut canary = worker.sibling().unwrap();
        assert!(canary.configure(text.clone()), "{:?}", canary.take_logs());
        let canary = shard_counts_logged(&mut canary);
        assert!(worker.configure(text), "{:?}", worker.take_logs());
        (canary, shard_counts_logged(worker))
    };
    let ((shards, decoded, _), first) = push(&mut worker, &base);
    assert_eq!(decoded, shards, "the first canary has nothing to take from");
    assert_eq!(
        first,
        (shards, 0, shards),
        "a new worker takes every shard from the catalogue"
    );

    let mut one_changed = base.clone();
    one_changed.rules[1_234].path = switchyard_table::PathSpec::Prefix("/changed".into());
    let (canary, worker_counts) = push(&mut worker, &one_changed);
    assert_eq!(canary, (shards, 1, shards - 1));
    assert_eq!(
        worker_counts,
        (shards, 0, 1),
        "one new shard: taken from the catalogue, not decoded"
    );

    let mut every_rule = base.clone();
    for rule in &mut every_rule.rules {
        rule.name.push_str("~renamed");
        rule.path = switchyard_table::PathSpec::Prefix("/renamed".into());
    }
    let (canary, worker_counts) = push(&mut worker, &every_rule);
    assert_eq!((canary.1, canary.2), (canary.0, 0));
    assert_eq!(worker_counts, (canary.0, 0, canary.0));
    let mut whole = sim();
    assert!(whole.configure(serde_json::to_string(&every_rule).unwrap()));
    for (i, rule) in every_rule.rules.iter().enumerate().step_by(97) {
        let host = rule
            .host
            .clone()
            .unwrap_or_else(|| "any.example".into())
            .replace('*', "w");
        let sent = Request::get(&format!("http://{host}/renamed/{i}"));
        assert_eq!(
            decision(&worker.request_ref(&sent)),
            decision(&whole.request_ref(&sent)),
            "{host}"
        );
    }
}

/// A table with one shard that does not decode (not base64, not zlib, not a table) is refused whole,
/// with a log naming the shard; the table before serves on, every rule of it.
#[test]
fn a_bad_shard_is_refused_and_the_previous_table_keeps_serving_whole() {
    let doc = |backend: &str| {
        let rules: Vec<_> = (0..12)
            .map(|i| {
                rule(&format!("Ingress/a/web{i}#0"))
                    .host(&format!("h{i}.example"))
                    .to(backend)
            })
            .collect();
        TableSpec::from_value(json!({ "version": 1, "generation": backend, "rules": rules })).unwrap()
    };
    let mut encoder = ShardEncoder::with_params(1, 64);
    let mut vm = sim();
    assert!(vm.configure(encoder.encode(&doc("a/v1:80")).unwrap()));
    let next: serde_json::Value = serde_json::from_str(&encoder.encode(&doc("a/v2:80")).unwrap()).unwrap();
    let not_a_table = {
        use base64::Engine as _;
        let z = miniz_oxide::deflate::compress_to_vec_zlib(b"\xff\xfe not a binary document", 6);
        base64::engine::general_purpose::STANDARD.encode(z)
    };
    for bad in ["not base64!".to_owned(), "eJzLSM3JyQcABiwCFQ==".to_owned(), not_a_table] {
        let mut broken = next.clone();
        broken["table_shards"]["shards"][5] = json!(bad);
        assert!(!vm.configure(broken.to_string()), "{bad}");
        let logs: Vec<String> = vm.take_logs().iter().map(ToString::to_string).collect();
        assert!(
            logs.iter().any(|l| l.contains("table refused") && l.contains("shard")),
            "{bad}: {logs:?}"
        );
        for i in 0..12 {
            let outcome = vm.request(Request::get(&format!("http://h{i}.example/")));
            assert_eq!(
                outcome.request_header("x-route-cluster"),
                Some("a/v1:80"),
                "{bad}: h{i}"
            );
        }
    }
    assert!(vm.configure(next.to_string()), "the good table after the bad ones");
    let outcome = vm.request(Request::get("http://h5.example/"));
    assert_eq!(outcome.request_header("x-route-cluster"), Some("a/v2:80"));
}

/// A VM's memory (wasm memory never shrinks: its peak) at 100,000 rules: the first load decodes
/// each shard and keeps it compressed, and pushes that change every rule (every shard new) hold the
/// old table and the new one but never the table decoded whole; a VM that takes the table from the
/// catalogue holds it in less than 9 MiB, and so does the canary of the next push (a fresh VM, 1 MiB
/// before it loads anything: 12.5 MiB when it counted every name and the JSON parser reserved
/// items for a megabyte of text as if it were a table's JSON). (On wasm32 a hash of 32 bits once
/// made rule names collide in the store, which then decoded the whole table to say which: 107 MiB.)
#[test]
fn a_vm_holds_a_100000_rule_table_in_a_few_mib_across_pushes_of_every_shard() {
    let base = switchyard_table::synthetic::table(100_000);
    let mut encoder = ShardEncoder::new();
    let mut vm = sim();
    let mib = |vm: &Sim| vm.memory_bytes() as f64 / f64::from(1 << 20);
    let mut peaks = Vec::new();
    let mut last = base.clone();
    for push in 0..3 {
        let mut table = base.clone();
        table.generation = format!("push-{push}");
        for rule in table.rules.iter_mut().filter(|_| push > 0) {
            rule.name = format!("{}~{push}", rule.name);
        }
        assert!(vm.configure(encoder.encode(&table).unwrap()), "{:?}", vm.take_logs());
        let (shards, decoded) = shards_logged(&mut vm);
        assert_eq!(decoded, shards, "push {push}: every shard is new");
        let request = switchyard_table::synthetic::typical_request(100_000);
        let outcome = vm.request(Request::get(&format!("http://{}{}", request.authority, request.path)));
        assert!(
            outcome.request_header("x-route-cluster").is_some(),
            "push {push}: routed"
        );
        peaks.push(mib(&vm));
        last = table;
    }
    assert!(peaks[0] < 24.0, "the first load: {peaks:?} MiB");
    assert!(peaks[2] < 40.0, "after pushes of every shard: {peaks:?} MiB");
    // A VM of the same process that takes the table from the catalogue (an Envoy worker after the
    // canary) decodes nothing, and holds the table in less.
    let mut worker = vm.sibling().unwrap();
    assert!(worker.configure(encoder.encode(&last).unwrap()));
    let (shards, decoded, taken) = shard_counts_logged(&mut worker);
    assert_eq!((decoded, taken), (0, shards));
    assert!(mib(&worker) < 9.0, "a worker from the catalogue: {} MiB", mib(&worker));
    // Envoy's canary for the next push (of one changed rule): a fresh VM that decodes the new shard
    // and takes the others from the catalogue, counting no name but the new shard's.
    let mut next = last.clone();
    next.rules[50_000].path = switchyard_table::PathSpec::Prefix("/changed".into());
    let mut canary = vm.sibling().unwrap();
    assert!(canary.configure(encoder.encode(&next).unwrap()));
    let (shards, decoded, taken) = shard_counts_logged(&mut canary);
    assert_eq!((decoded, taken), (1, shards - 1));
    assert!(mib(&canary) < 9.0, "a canary: {} MiB", mib(&canary));
}
