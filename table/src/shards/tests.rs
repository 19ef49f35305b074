use super::*;
use crate::compact::Miniz;
use crate::format::RuleSpec;
use crate::{synthetic, SimpleRequest};
use std::borrow::Cow;
use std::sync::{Arc, Mutex};

fn split_mix(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed;
    move |n| {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n.max(1) as u64) as usize
    }
}

/// Loads `text` as the filter does: by ranges when it is the writer's exact bytes, else whole.
fn load(store: &mut ShardStore, text: &str) -> Result<(ShardedTable, LoadStats), TableError> {
    match read_ranged(&text.as_bytes()) {
        Some(parts) => store.load(parts, &Miniz),
        None => load_whole(store, text),
    }
}

/// Loads `text` parsed whole, as JSON.
fn load_whole(store: &mut ShardStore, text: &str) -> Result<(ShardedTable, LoadStats), TableError> {
    let doc = crate::json::parse(text.as_bytes()).unwrap();
    store.load(read(&doc, doc.root()).unwrap()?, &Miniz)
}

fn shard_texts(text: &str) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_str(text).unwrap();
    value[WRAPPER_KEY]["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// `text` with other shards, written as the encoder writes (the index says what they are).
fn with_shards(text: &str, shards: &[String]) -> String {
    let value: serde_json::Value = serde_json::from_str(text).unwrap();
    let head = value[WRAPPER_KEY]["head"].to_string();
    let listed: Vec<_> = shards
        .iter()
        .map(|s| (fingerprint::fingerprint(s), s.as_str()))
        .collect();
    layout::write(&head, &listed)
}

fn changed_path(table: &TableSpec, at: usize) -> TableSpec {
    let mut table = table.clone();
    table.rules[at].path = crate::PathSpec::Prefix("/changed-by-a-push".into());
    table.generation.push_str("-next");
    table
}

#[test]
fn the_same_table_is_encoded_byte_for_byte_alike_whatever_was_encoded_before() {
    let table = synthetic::table(3_000);
    let fresh = ShardEncoder::new().encode(&table).unwrap();
    let mut kept = ShardEncoder::new();
    kept.encode(&synthetic::table(500)).unwrap();
    kept.encode(&changed_path(&table, 10)).unwrap();
    assert_eq!(kept.encode(&table).unwrap(), fresh);
    assert!(
        fresh.starts_with(r#"{"table_shards":{"form":2,"front":"0000"#),
        "{}",
        &fresh[..80]
    );
}

#[test]
fn the_sharded_form_decodes_whole_to_the_table_it_was_made_of() {
    let table = synthetic::table(3_000);
    let text = ShardEncoder::new().encode(&table).unwrap();
    assert!(shard_texts(&text).len() > 10, "{} shards", shard_texts(&text).len());
    let whole = RouteTable::from_json(text.as_bytes()).unwrap();
    let expected = RouteTable::try_from(table.clone()).unwrap();
    assert_eq!(whole.rules().len(), expected.rules().len());
    assert_eq!(whole.generation(), "synthetic-3000");
    for (a, b) in whole.rules().iter().zip(expected.rules()) {
        assert_eq!(a.spec(), b.spec());
    }
}

#[test]
fn a_push_of_one_changed_rule_decodes_one_shard() {
    let table = synthetic::table(10_000);
    let mut encoder = ShardEncoder::new();
    let mut store = ShardStore::new();
    let first = encoder.encode(&table).unwrap();
    let shards = encoder.stats().shards;
    let (first_table, stats) = load(&mut store, &first).unwrap();
    assert_eq!(stats.decoded, shards);
    drop(first_table);
    let next = changed_path(&table, 5_000);
    let second = encoder.encode(&next).unwrap();
    assert_eq!(encoder.stats().deflated, 1, "{:?}", encoder.stats());
    let (sharded, stats) = load(&mut store, &second).unwrap();
    assert_eq!(
        stats,
        LoadStats {
            shards,
            decoded: 1,
            from_catalogue: 0
        }
    );
    let name = &next.rules[5_000].name;
    let host = next.rules[5_000].host.clone().unwrap_or_default().replace('*', "x");
    let request = SimpleRequest::get(&host, "/changed-by-a-push/x");
    let whole = RouteTable::try_from(next.clone()).unwrap();
    let expected = whole.route(&request, 0).map(|d| d.rule.name().to_owned());
    let got = sharded
        .route(&request, 0, &Miniz, |w| w.map(|w| w.decision.rule.name().to_owned()))
        .unwrap();
    assert_eq!(got, expected);
    assert!(expected.as_deref() == Some(name.as_str()) || expected.is_some());
    assert_eq!(
        store.len(),
        shards,
        "the replaced shard is dropped once no table holds it"
    );
}

#[test]
fn random_pushes_route_as_the_final_table_loaded_from_scratch() {
    for seed in 0..300 {
        let mut choose = split_mix(seed);
        if let Err(e) = edits::check_pushes(&mut choose, 12) {
            panic!("seed {seed}: {e}");
        }
    }
}

#[test]
fn a_bad_shard_is_refused_and_the_table_before_keeps_serving_whole() {
    let table = synthetic::table(2_000);
    let mut store = ShardStore::new();
    let text = ShardEncoder::new().encode(&table).unwrap();
    let (serving, _) = load(&mut store, &text).unwrap();
    let held = store.len();
    let whole = RouteTable::try_from(table.clone()).unwrap();

    let mut bad_rule = table.clone();
    bad_rule.rules[700].path = crate::PathSpec::Prefix("no-slash".into());
    let bad = ShardEncoder::new().encode(&bad_rule).unwrap();
    let error = load(&mut store, &bad).unwrap_err().to_string();
    assert!(
        error.starts_with("shard ") && error.contains(&table.rules[700].name) && error.contains("path.value"),
        "{error}"
    );
    let mut shards = shard_texts(&text);
    shards[3] = "not base64!".into();
    let error = load(&mut store, &with_shards(&text, &shards)).unwrap_err().to_string();
    assert!(error.starts_with("shard 3 of `table_shards`"), "{error}");
    shards[3] = crate::compact::to_text(&serde_json::json!({"version": 1, "rules": [{"name": 1}]})).unwrap();
    assert!(load(&mut store, &with_shards(&text, &shards)).is_err());

    assert_eq!(store.len(), held, "nothing of the refused tables is kept");
    let mut choose = split_mix(7);
    edits::agree(&serving, &whole, &mut choose).unwrap();
    let request = synthetic::typical_request(2_000);
    let expected = whole.route(&request, 3).map(|d| d.position);
    assert_eq!(
        serving.route(&request, 3, &Miniz, |w| w.map(|w| w.position)).unwrap(),
        expected
    );
}

#[test]
fn a_name_in_two_shards_is_refused_as_in_a_whole_table() {
    let mut table = synthetic::table(2_000);
    table.rules[1_900].name = table.rules[10].name.clone();
    let text = ShardEncoder::new().encode(&table).unwrap();
    let error = load(&mut ShardStore::new(), &text).unwrap_err().to_string();
    let whole = RouteTable::try_from(table).unwrap_err().to_string();
    assert_eq!(error, whole);
    assert!(error.contains("used by an earlier rule"), "{error}");
}

#[test]
fn the_head_and_the_wrapper_are_validated() {
    let text = ShardEncoder::new().encode(&synthetic::table(20)).unwrap();
    let cases = [
        (text.replace(r#""form":2"#, r#""form":3"#), "unsupported form"),
        (text.replace(r#""version":1"#, r#""version":7"#), "unsupported table version"),
        (text.replace(r#""form":2,"#, r#""form":2,"form":2,"#), "written twice"),
        (
            text.replacen(r#""index":["#, r#""index":[["00000000000000000000000000000000",1],"#, 1),
            "entries for",
        ),
        (text.replacen(r#""index":[[""#, r#""index":[["g"#, 1), "index[0]"),
        (front_as_a_number(&text), "front"),
        (text.replace(r#""head":{"#, r#""extra":0,"head":{"#), "table_shards.extra"),
        (
            text.replace(
                r#""rules":[]"#,
                r#""rules":[{"name":"x","path":{"type":"prefix","value":"/"},"action":{"direct_response":{"status":200}}}]"#,
            ),
            "the head holds no rules",
        ),
        (
            text.replace(r#""cluster_header":"x-route-cluster""#, r#""cluster_header":"bad header""#),
            "cluster_header",
        ),
    ];
    for (bad, expected) in cases {
        let error = load(&mut ShardStore::new(), &bad).unwrap_err().to_string();
        assert!(error.contains(expected), "{expected}: {error}");
        let whole = RouteTable::from_json(bad.as_bytes()).unwrap_err().to_string();
        assert!(whole.contains(expected), "{expected}: {whole}");
    }
}

/// `text` with `front` written as a number.
fn front_as_a_number(text: &str) -> String {
    let at = text.find(r#""front":""#).unwrap() + r#""front":"#.len();
    let mut bad = text.to_owned();
    bad.replace_range(at..at + 12, "7");
    bad
}

#[test]
fn decoded_shards_stay_within_their_bound() {
    let table = synthetic::table(5_000);
    let mut store = ShardStore::with_decoded_rules(300);
    let (sharded, _) = load(&mut store, &ShardEncoder::new().encode(&table).unwrap()).unwrap();
    let whole = RouteTable::try_from(table).unwrap();
    let mut choose = split_mix(1);
    for i in (0..5_000).step_by(37) {
        let rule: &RuleSpec = whole.rules()[i].spec();
        let host = rule
            .host
            .clone()
            .unwrap_or_else(|| "any.example".into())
            .replace('*', "w");
        let request = SimpleRequest::get(&host, "/a/b/c");
        let expected = whole.route(&request, 1).map(|d| d.position);
        assert_eq!(
            sharded.route(&request, 1, &Miniz, |w| w.map(|w| w.position)).unwrap(),
            expected
        );
        let (_, rules) = store.decoded();
        // The bound, or what one request may need when that is more; and the shard just decoded.
        let (bound, largest) = (sharded.widest_request().max(300), 400);
        assert!(rules <= bound + largest, "{rules} rules decoded");
    }
    edits::agree(&sharded, &whole, &mut choose).unwrap();
    assert!(store.decoded_on_demand() > 0);
}

#[test]
fn an_empty_table_has_no_shard_and_routes_nothing() {
    let table = TableSpec::default();
    let text = ShardEncoder::new().encode(&table).unwrap();
    let (sharded, stats) = load(&mut ShardStore::new(), &text).unwrap();
    assert_eq!(stats.shards, 0);
    let request = SimpleRequest::get("a", "/");
    assert!(sharded.route(&request, 0, &Miniz, |w| w.is_none()).unwrap());
    assert_eq!(RouteTable::from_json(text.as_bytes()).unwrap().rules().len(), 0);
}

/// Stores of one process, as Envoy's VMs of one plugin: a worker's and a canary made for each push.
fn sharing(shared: &InMemory) -> ShardStore {
    ShardStore::sharing(shared.clone())
}

#[test]
fn a_store_takes_the_shards_another_store_of_the_process_validated_from_the_catalogue() {
    let table = synthetic::table(10_000);
    let text = ShardEncoder::new().encode(&table).unwrap();
    let shared = InMemory::default();
    let (_, first) = load(&mut sharing(&shared), &text).unwrap();
    assert_eq!(first.decoded, first.shards);
    let mut worker = sharing(&shared);
    let (sharded, stats) = load(&mut worker, &text).unwrap();
    assert_eq!((stats.decoded, stats.from_catalogue), (0, stats.shards));
    assert_eq!(
        worker.decoded(),
        (0, 0),
        "a shard from the catalogue is decoded on demand"
    );
    let whole = RouteTable::try_from(table).unwrap();
    edits::agree(&sharded, &whole, &mut split_mix(3)).unwrap();
    assert!(worker.decoded_on_demand() > 0);
}

#[test]
fn a_canary_decodes_only_the_shards_new_to_the_process() {
    let table = synthetic::table(10_000);
    let mut encoder = ShardEncoder::new();
    let shared = InMemory::default();
    let mut worker = sharing(&shared);
    let _serving = load(&mut worker, &encoder.encode(&table).unwrap()).unwrap();
    let next = encoder.encode(&changed_path(&table, 5_000)).unwrap();
    let (_, canary) = load(&mut sharing(&shared), &next).unwrap();
    assert_eq!((canary.decoded, canary.from_catalogue), (1, canary.shards - 1));
    // The worker takes the one shard it lacks from the catalogue: its first request decodes it.
    let (_, stats) = load(&mut worker, &next).unwrap();
    assert_eq!((stats.decoded, stats.from_catalogue), (0, 1));
}

#[test]
fn after_a_push_that_changes_every_shard_a_worker_decodes_none() {
    let shared = InMemory::default();
    let mut worker = sharing(&shared);
    let _serving = load(
        &mut worker,
        &ShardEncoder::new().encode(&synthetic::table(3_000)).unwrap(),
    )
    .unwrap();
    let mut other = synthetic::table(3_000);
    for rule in &mut other.rules {
        rule.name.push_str("-renamed");
    }
    let text = ShardEncoder::new().encode(&other).unwrap();
    let (_, canary) = load(&mut sharing(&shared), &text).unwrap();
    assert_eq!(canary.decoded, canary.shards);
    let (sharded, stats) = load(&mut worker, &text).unwrap();
    assert_eq!((stats.decoded, stats.from_catalogue), (0, stats.shards));
    edits::agree(&sharded, &RouteTable::try_from(other).unwrap(), &mut split_mix(5)).unwrap();
}

#[test]
fn a_catalogue_that_does_not_read_is_ignored() {
    let table = synthetic::table(3_000);
    let text = ShardEncoder::new().encode(&table).unwrap();
    let shared = InMemory::default();
    let (_, first) = load(&mut sharing(&shared), &text).unwrap();
    let buckets: Vec<(String, Vec<u8>)> = (0..catalogue::BUCKETS)
        .map(|bucket| {
            (
                catalogue::records_key(bucket),
                shared.get(&catalogue::records_key(bucket)).unwrap(),
            )
        })
        .collect();
    let whole = RouteTable::try_from(table).unwrap();
    type Damage = fn(&[u8]) -> Vec<u8>;
    let damages: [Damage; 3] = [
        |_| b"not a catalogue".to_vec(),
        |records| records[..records.len() / 2].to_vec(),
        |records| [&b"SYSC\x09\0\0\0"[..], &records[8..]].concat(),
    ];
    for damage in damages {
        for (key, records) in &buckets {
            shared.set(key, &damage(records));
        }
        let (sharded, stats) = load(&mut sharing(&shared), &text).unwrap();
        // What the damaged records still say (the first half's index) may be taken; what they
        // no longer say is decoded, and the table routes whole either way.
        assert_eq!(stats.decoded + stats.from_catalogue, first.shards);
        assert!(stats.decoded > 0);
        edits::agree(&sharded, &whole, &mut split_mix(9)).unwrap();
    }
}

#[test]
fn a_refused_table_publishes_nothing() {
    let table = synthetic::table(2_000);
    let shared = InMemory::default();
    let good = ShardEncoder::new().encode(&table).unwrap();
    let _ = load(&mut sharing(&shared), &good).unwrap();
    let published = shared.snapshot();
    let mut bad = table.clone();
    bad.rules[1_500].name = bad.rules[3].name.clone();
    assert!(load(&mut sharing(&shared), &ShardEncoder::new().encode(&bad).unwrap()).is_err());
    assert_eq!(shared.snapshot(), published);
}

/// Shared bytes that log which keys were read and written, and refuse to write those it is told.
#[derive(Debug, Clone, Default)]
struct Logged {
    bytes: InMemory,
    log: Arc<Mutex<Vec<(char, String)>>>,
    refused: Arc<Mutex<Vec<String>>>,
}

impl Logged {
    /// The record buckets read (`'g'`) or written (`'s'`) since the last call.
    fn buckets(&self, what: char) -> usize {
        let mut log = self.log.lock().unwrap();
        let count = log
            .iter()
            .filter(|(w, key)| *w == what && key.contains(".records."))
            .count();
        log.retain(|(w, _)| *w != what);
        count
    }
}

impl SharedBytes for Logged {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.log.lock().unwrap().push(('g', key.to_owned()));
        self.bytes.get(key)
    }

    fn set(&self, key: &str, value: &[u8]) -> bool {
        self.log.lock().unwrap().push(('s', key.to_owned()));
        !self.refused.lock().unwrap().iter().any(|k| k == key) && self.bytes.set(key, value)
    }
}

#[test]
fn a_push_rewrites_only_the_record_buckets_of_the_shards_it_adds_and_removes() {
    let table = synthetic::table(10_000);
    let mut encoder = ShardEncoder::new();
    let shared = Logged::default();
    let (_, first) = load(
        &mut ShardStore::sharing(shared.clone()),
        &encoder.encode(&table).unwrap(),
    )
    .unwrap();
    assert_eq!(shared.buckets('s'), catalogue::BUCKETS);
    let next = changed_path(&table, 5_000);
    let (_, canary) = load(
        &mut ShardStore::sharing(shared.clone()),
        &encoder.encode(&next).unwrap(),
    )
    .unwrap();
    assert_eq!(canary.decoded, 1);
    // One shard added, one removed: their buckets, one or two of them.
    assert!((1..=2).contains(&shared.buckets('s')), "{first:?}");
    let (sharded, fresh) = load(
        &mut ShardStore::sharing(shared.clone()),
        &encoder.encode(&next).unwrap(),
    )
    .unwrap();
    assert_eq!((fresh.decoded, fresh.from_catalogue), (0, fresh.shards));
    edits::agree(&sharded, &RouteTable::try_from(next).unwrap(), &mut split_mix(13)).unwrap();
}

#[test]
fn a_store_reads_only_the_record_buckets_of_the_shards_it_lacks() {
    let table = synthetic::table(10_000);
    let mut encoder = ShardEncoder::new();
    let shared = Logged::default();
    let mut worker = ShardStore::sharing(shared.clone());
    let _serving = load(&mut worker, &encoder.encode(&table).unwrap()).unwrap();
    let mut next = table.clone();
    for at in [1_000, 3_000, 5_000, 7_000, 9_000] {
        next = changed_path(&next, at);
    }
    let text = encoder.encode(&next).unwrap();
    let _ = load(&mut ShardStore::sharing(shared.clone()), &text).unwrap();
    shared.buckets('g');
    let (_, stats) = load(&mut worker, &text).unwrap();
    assert_eq!((stats.decoded, stats.from_catalogue), (0, 5));
    assert!((1..=5).contains(&shared.buckets('g')));
}

#[test]
fn a_bucket_the_host_did_not_store_is_written_again_by_the_next_publish() {
    let table = synthetic::table(3_000);
    let mut encoder = ShardEncoder::new();
    let shared = Logged::default();
    *shared.refused.lock().unwrap() = (0..catalogue::BUCKETS).map(catalogue::records_key).collect();
    let _ = load(
        &mut ShardStore::sharing(shared.clone()),
        &encoder.encode(&table).unwrap(),
    )
    .unwrap();
    shared.refused.lock().unwrap().clear();
    shared.buckets('s');
    let next = changed_path(&table, 1_000);
    let _ = load(
        &mut ShardStore::sharing(shared.clone()),
        &encoder.encode(&next).unwrap(),
    )
    .unwrap();
    assert_eq!(shared.buckets('s'), catalogue::BUCKETS);
    let (_, fresh) = load(
        &mut ShardStore::sharing(shared.clone()),
        &encoder.encode(&next).unwrap(),
    )
    .unwrap();
    assert_eq!(fresh.from_catalogue, fresh.shards);
}

#[test]
fn a_store_that_took_a_published_table_unchecked_still_refuses_a_name_in_two_shards_after() {
    let table = synthetic::table(2_000);
    let shared = InMemory::default();
    let text = ShardEncoder::new().encode(&table).unwrap();
    let _ = load(&mut sharing(&shared), &text).unwrap();
    let mut worker = sharing(&shared);
    let _serving = load(&mut worker, &text).unwrap();
    // No canary before this one: the worker counts every name itself.
    let mut bad = table.clone();
    bad.rules[1_900].name = bad.rules[10].name.clone();
    let error = load(&mut worker, &ShardEncoder::new().encode(&bad).unwrap())
        .unwrap_err()
        .to_string();
    assert!(error.contains("used by an earlier rule"), "{error}");
    let (sharded, _) = load(&mut worker, &ShardEncoder::new().encode(&table).unwrap()).unwrap();
    edits::agree(&sharded, &RouteTable::try_from(table).unwrap(), &mut split_mix(11)).unwrap();
}

/// A canary after a published table, with `edit` applied to it: its load's result and stats.
fn canary_after(table: &TableSpec, edit: impl FnOnce(&mut TableSpec)) -> Result<(ShardedTable, LoadStats), TableError> {
    let shared = InMemory::default();
    let mut encoder = ShardEncoder::new();
    let _ = load(&mut sharing(&shared), &encoder.encode(table).unwrap()).unwrap();
    let mut next = table.clone();
    edit(&mut next);
    load(&mut sharing(&shared), &encoder.encode(&next).unwrap())
}

#[test]
fn a_canary_refuses_a_new_rule_named_as_a_rule_of_a_shard_it_took_from_the_catalogue() {
    let table = synthetic::table(3_000);
    let error = canary_after(&table, |t| t.rules[2_500].name = t.rules[40].name.clone())
        .unwrap_err()
        .to_string();
    assert!(error.contains("used by an earlier rule"), "{error}");
}

#[test]
fn a_canary_accepts_a_name_that_moved_out_of_a_shard_the_table_no_longer_holds() {
    let table = synthetic::table(3_000);
    let moved = table.rules[40].name.clone();
    let (sharded, stats) = canary_after(&table, |t| {
        t.rules[40].name.push_str("-renamed");
        t.rules[2_500].name = moved.clone();
    })
    .unwrap();
    assert_eq!((stats.decoded, stats.from_catalogue), (2, stats.shards - 2));
    assert_eq!(sharded.rule_count(), 3_000);
}

/// A [`Source`] that counts the bytes read from it, and the reads.
struct Counted<'t> {
    text: &'t [u8],
    read: std::cell::Cell<usize>,
    reads: std::cell::Cell<usize>,
}

impl<'t> Counted<'t> {
    fn new(text: &'t str) -> Counted<'t> {
        Counted {
            text: text.as_bytes(),
            read: Default::default(),
            reads: Default::default(),
        }
    }
}

impl Source for Counted<'_> {
    fn size(&self) -> usize {
        self.text.len()
    }

    fn read(&self, range: std::ops::Range<usize>) -> Option<Cow<'_, [u8]>> {
        let bytes = self.text.get(range)?;
        self.read.set(self.read.get() + bytes.len());
        self.reads.set(self.reads.get() + 1);
        Some(Cow::Borrowed(bytes))
    }
}

#[test]
fn a_store_reads_only_the_front_and_the_texts_of_the_shards_it_lacks() {
    let table = synthetic::table(5_000);
    let mut encoder = ShardEncoder::new();
    let first = encoder.encode(&table).unwrap();
    let second = encoder.encode(&changed_path(&table, 2_500)).unwrap();
    let mut store = ShardStore::new();
    let fresh = Counted::new(&first);
    let (_, stats) = store.load(read_ranged(&fresh).unwrap(), &Miniz).unwrap();
    assert_eq!(stats.decoded, stats.shards);
    let front = first.find(",\"shards\":[").unwrap();
    assert!(
        fresh.read.get() >= first.len() - front,
        "a fresh store reads every text"
    );

    let next = Counted::new(&second);
    let (sharded, stats) = store.load(read_ranged(&next).unwrap(), &Miniz).unwrap();
    assert_eq!(stats.decoded, 1);
    let front = second.find(",\"shards\":[").unwrap();
    let longest = shard_texts(&second).iter().map(String::len).max().unwrap();
    assert!(
        next.read.get() <= front + 64 + longest,
        "{} bytes read of {} (front {front}, longest text {longest})",
        next.read.get(),
        second.len()
    );
    let whole = RouteTable::try_from(changed_path(&table, 2_500)).unwrap();
    edits::agree(&sharded, &whole, &mut split_mix(3)).unwrap();
}

#[test]
fn a_store_reads_the_adjacent_texts_it_lacks_in_one_range_each_run() {
    let text = ShardEncoder::new().encode(&synthetic::table(20_000)).unwrap();
    let source = Counted::new(&text);
    let (_, stats) = ShardStore::new().load(read_ranged(&source).unwrap(), &Miniz).unwrap();
    assert!(stats.shards > 100, "{} shards", stats.shards);
    let texts = text.len() - text.find(",\"shards\":[").unwrap();
    // The front takes a few reads; each run of adjacent texts one, up to RUN_BYTES.
    let longest = shard_texts(&text).iter().map(String::len).max().unwrap() + 3;
    let most = 8 + texts.div_ceil(texts::RUN_BYTES - longest);
    assert!(
        source.reads.get() <= most,
        "{} reads for {} shards ({texts} bytes of texts; at most {most})",
        source.reads.get(),
        stats.shards
    );
}

#[test]
fn only_a_stores_first_table_keeps_its_shards_in_the_buffers_they_were_read_in() {
    let table = synthetic::table(10_000);
    let mut encoder = ShardEncoder::new();
    let shared = InMemory::default();
    let mut publisher = sharing(&shared);
    let mut canary = sharing(&shared);
    let first = encoder.encode(&table).unwrap();
    load(&mut publisher, &first).unwrap();
    let (first, stats) = load(&mut canary, &first).unwrap();
    assert_eq!(stats.from_catalogue, stats.shards);
    assert!(first
        .shards()
        .iter()
        .all(|s| s.text.shares_a_buffer() && s.names.shares_a_buffer() && s.hosts.shares_a_buffer()));
    // Five shards changed: the store lacks enough to copy the records, and takes them from there.
    let mut next = table.clone();
    for at in [500, 2_500, 4_500, 6_500, 8_500] {
        next = changed_path(&next, at);
    }
    let next = encoder.encode(&next).unwrap();
    load(&mut publisher, &next).unwrap();
    let (second, stats) = load(&mut canary, &next).unwrap();
    assert_eq!((stats.decoded, stats.from_catalogue), (0, 5));
    let held: Vec<u64> = first.shards().iter().map(|s| s.id).collect();
    let new: Vec<_> = second.shards().iter().filter(|s| !held.contains(&s.id)).collect();
    assert_eq!(new.len(), 5);
    assert!(
        new.iter()
            .all(|s| !s.text.shares_a_buffer() && !s.names.shares_a_buffer()),
        "a later push's shards keep no whole run or records alive"
    );
}

#[test]
fn a_table_builds_its_host_index_at_its_first_request_not_at_load() {
    let table = synthetic::table(3_000);
    let mut encoder = ShardEncoder::new();
    let mut store = ShardStore::new();
    let (sharded, _) = load(&mut store, &encoder.encode(&table).unwrap()).unwrap();
    assert!(
        !sharded.hosts_indexed(),
        "a VM that never routes (the canary) never builds it"
    );
    let whole = RouteTable::try_from(table.clone()).unwrap();
    edits::agree(&sharded, &whole, &mut split_mix(5)).unwrap();
    assert!(sharded.hosts_indexed());
    assert_eq!(sharded.host_count(), whole.host_count());
    // The next table's index is built from this one's; the one after from none (its table before
    // never routed): both route as the tables loaded from scratch.
    let next = changed_path(&table, 1_500);
    let (sharded, _) = load(&mut store, &encoder.encode(&next).unwrap()).unwrap();
    edits::agree(
        &sharded,
        &RouteTable::try_from(next.clone()).unwrap(),
        &mut split_mix(6),
    )
    .unwrap();
    let (unrouted, _) = load(&mut store, &encoder.encode(&changed_path(&next, 100)).unwrap()).unwrap();
    let last = changed_path(&changed_path(&next, 100), 2_900);
    let (sharded, _) = load(&mut store, &encoder.encode(&last).unwrap()).unwrap();
    assert!(!unrouted.hosts_indexed());
    edits::agree(&sharded, &RouteTable::try_from(last).unwrap(), &mut split_mix(7)).unwrap();
}

#[test]
fn a_document_read_by_ranges_and_read_whole_gives_the_same_parts() {
    let text = ShardEncoder::new().encode(&synthetic::table(3_000)).unwrap();
    let doc = crate::json::parse(text.as_bytes()).unwrap();
    let whole = read(&doc, doc.root()).unwrap().unwrap();
    let bytes = text.as_bytes();
    let ranged = read_ranged(&bytes).unwrap();
    assert_eq!(ranged.head, whole.head);
    assert_eq!(ranged.fingerprints, whole.fingerprints);
    assert!(whole.fingerprints.len() > 10);
    for i in 0..whole.texts.len() {
        assert_eq!(&*ranged.texts.get(i).unwrap(), &*whole.texts.get(i).unwrap());
        assert_eq!(
            fingerprint::fingerprint(&whole.texts.get(i).unwrap()),
            whole.fingerprints[i]
        );
    }
    let empty = TableSpec {
        rules: Vec::new(),
        ..synthetic::table(1)
    };
    let empty = ShardEncoder::new().encode(&empty).unwrap();
    let bytes = empty.as_bytes();
    let parts = read_ranged(&bytes).unwrap();
    assert!(parts.fingerprints.is_empty() && parts.texts.is_empty());
}

#[test]
fn a_document_not_in_the_writers_exact_bytes_is_read_whole_and_routes_alike() {
    let table = synthetic::table(2_000);
    let text = ShardEncoder::new().encode(&table).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let pretty = serde_json::to_string_pretty(&value).unwrap();
    let longer = format!("{text} ");
    let shorter = text.replacen("\"]}}", "]}}", 1);
    for other in [&pretty, &longer, &shorter] {
        assert!(read_ranged(&other.as_bytes()).is_none(), "{}", &other[..80]);
    }
    let whole = RouteTable::try_from(table).unwrap();
    for other in [&pretty, &longer] {
        let (sharded, _) = load(&mut ShardStore::new(), other).unwrap();
        edits::agree(&sharded, &whole, &mut split_mix(5)).unwrap();
    }
}

#[test]
fn a_text_not_where_the_index_places_it_is_refused() {
    let text = ShardEncoder::new().encode(&synthetic::table(2_000)).unwrap();
    // The first text's closing quote and the comma after it, swapped: the size still agrees.
    let first = text.find(",\"shards\":[\"").unwrap() + 12;
    let close = first + text[first..].find('"').unwrap();
    let mut bad = text.clone();
    bad.replace_range(close..close + 2, ",\"");
    let error = load(&mut ShardStore::new(), &bad).unwrap_err().to_string();
    assert!(error.contains("shard 0") && error.contains("not where"), "{error}");
}

#[test]
fn a_shard_whose_text_is_not_its_indexed_fingerprint_is_refused_by_a_store_that_lacks_it() {
    let table = synthetic::table(2_000);
    let text = ShardEncoder::new().encode(&table).unwrap();
    let shards = shard_texts(&text);
    // The index of shard 4 names shard 5's fingerprint (same length: the layout still agrees).
    let (four, five) = (
        fingerprint::fingerprint(&shards[4]),
        fingerprint::fingerprint(&shards[5]),
    );
    let lying = text.replacen(&layout::fingerprint_hex(four), &layout::fingerprint_hex(five), 1);
    assert_ne!(lying, text);
    let mut store = ShardStore::new();
    let error = load(&mut store, &lying).unwrap_err().to_string();
    assert!(error.contains("index[4]") && error.contains("fingerprint"), "{error}");
    assert!(store.is_empty(), "nothing of a refused table is kept");
    let error = load_whole(&mut ShardStore::new(), &lying).unwrap_err().to_string();
    assert!(error.contains("index[4]"), "{error}");
}

#[test]
fn a_store_takes_a_shard_it_holds_by_the_indexed_fingerprint_without_reading_its_text() {
    let table = synthetic::table(2_000);
    let mut encoder = ShardEncoder::new();
    let text = encoder.encode(&table).unwrap();
    let mut store = ShardStore::new();
    let _serving = load(&mut store, &text).unwrap();
    // Shard 2's text garbled in place: a store holding shard 2 never reads it.
    let mut shards = shard_texts(&text);
    let garbled: String = shards[2].chars().rev().collect();
    let at = text.find(&shards[2]).unwrap();
    let mut unread = text.clone();
    unread.replace_range(at..at + garbled.len(), &garbled);
    let (_, stats) = load(&mut store, &unread).unwrap();
    assert_eq!(stats.decoded, 0);
    // A store that lacks it reads it, and refuses it.
    assert!(load(&mut ShardStore::new(), &unread).is_err());
    shards[2] = garbled;
    assert!(load(&mut ShardStore::new(), &with_shards(&text, &shards)).is_err());
}

#[test]
fn form_1_documents_are_still_read() {
    let table = synthetic::table(2_000);
    let text = ShardEncoder::new().encode(&table).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let form_1 = serde_json::json!({WRAPPER_KEY: {
        "form": 1,
        "head": value[WRAPPER_KEY]["head"],
        "shards": value[WRAPPER_KEY]["shards"],
    }})
    .to_string();
    let mut store = ShardStore::new();
    let (sharded, stats) = load(&mut store, &form_1).unwrap();
    assert_eq!(stats.decoded, stats.shards);
    edits::agree(
        &sharded,
        &RouteTable::try_from(table.clone()).unwrap(),
        &mut split_mix(9),
    )
    .unwrap();
    // The same shards, known by the same fingerprints, in either form.
    let (_, stats) = load(&mut store, &text).unwrap();
    assert_eq!(stats.decoded, 0);
    let with_index = form_1.replacen("\"form\":1", "\"form\":1,\"index\":[]", 1);
    let error = load(&mut ShardStore::new(), &with_index).unwrap_err().to_string();
    assert!(error.contains("not a field of form 1"), "{error}");
}

#[test]
fn a_store_keeping_every_shard_decoded_decodes_each_new_shard_once_and_routes_alike() {
    const fn shared_across_threads<T: Send + Sync>() {}
    shared_across_threads::<ShardedTable>();
    let table = synthetic::table(5_000);
    let mut encoder = ShardEncoder::new();
    let mut store = ShardStore::keeping_every_shard_decoded();
    let (first, stats) = load(&mut store, &encoder.encode(&table).unwrap()).unwrap();
    assert_eq!(stats.decoded, stats.shards);
    let next = changed_path(&table, 2_500);
    let (second, stats) = load(&mut store, &encoder.encode(&next).unwrap()).unwrap();
    assert_eq!(stats.decoded, 1);
    assert!(second.hosts_indexed(), "indexed at load, off the threads that serve it");
    let mut choose = split_mix(11);
    edits::agree(&second, &RouteTable::try_from(next).unwrap(), &mut choose).unwrap();
    edits::agree(&first, &RouteTable::try_from(table).unwrap(), &mut choose).unwrap();
    // Every shard keeps its own rules: none is among the bounded decoded shards, and no request
    // decodes one.
    assert_eq!(store.decoded(), (0, 0));
    assert_eq!(store.decoded_on_demand(), 0);
}

/// One host of 10,000 rules in a few shards: a request for its last rule tries every one of them,
/// more rules than the decoded bound. The bound rises to what one request needs, so each shard is
/// decoded once, not at every request.
#[test]
fn a_host_of_more_rules_than_the_decoded_bound_is_decoded_once_not_at_every_request() {
    let rules: Vec<serde_json::Value> = (0..10_000)
        .map(|i| {
            serde_json::json!({"name": format!("r{i}"), "host": "one.example",
                "path": {"type": "segment_prefix", "value": format!("/p{i}")},
                "action": {"route": {"backends": [{"cluster": format!("c{i}")}]}}})
        })
        .collect();
    let table = TableSpec::from_value(serde_json::json!({"version": 1, "rules": rules})).unwrap();
    let mut store = ShardStore::new();
    let (sharded, _) = load(&mut store, &ShardEncoder::new().encode(&table).unwrap()).unwrap();
    assert!(sharded.shard_count() > 2, "{} shards", sharded.shard_count());
    assert!(sharded.widest_request() >= 10_000);
    let last = SimpleRequest::get("one.example", "/p9999");
    let route = || sharded.route(&last, 0, &Miniz, |w| w.map(|w| w.position)).unwrap();
    assert_eq!(route(), Some(9_999));
    let after_the_first = store.decoded_on_demand();
    for _ in 0..20 {
        assert_eq!(route(), Some(9_999));
    }
    assert_eq!(store.decoded_on_demand(), after_the_first, "no shard decoded again");
    assert!(store.decoded().1 >= 10_000);
}
