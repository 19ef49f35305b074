//! The native dynamic module (`libswitchyard_module.so`, issue 29) in a real Envoy, with real
//! backends, through the same harness, listener, routes and ECDS file as the wasm filter's tests
//! (tests/envoy.rs): the same table and the same answers. What is the module's own is here: its
//! load, one table for every worker, its refusals under its metric names; the actions, local replies,
//! route cache and weights are the wasm filter's suites, which `make test-module` runs through it
//! (`SWITCHYARD_FILTER_FORM=module`). Needs `ENVOY_BIN` and
//! `SWITCHYARD_MODULE` (`make test-envoy` and `make test-module` set them); fails without them.

use serde_json::json;
use switchyard_cases::rule;
use switchyard_e2e::table::table;
use switchyard_e2e::{get, ConfigForm, Envoy, FilterForm};

const SERVICE1: &str = "production/service1:80";
const SERVICE2: &str = "production/service2:80";

fn start(table: &str, clusters: &[&str], workers: usize) -> Envoy {
    Envoy::start_filter(table, clusters, ConfigForm::StringValue, workers, FilterForm::Module)
}

/// Envoy loads the module and finds the ABI version it expects (no mismatch warning), and the
/// table is accepted with the wasm filter's log line.
#[test]
fn the_module_loads_with_envoys_abi_version_and_accepts_the_table() {
    let rules = vec![rule("Ingress/production/one#0")
        .host("example.net")
        .segment_prefix("/bar")
        .to(SERVICE1)];
    let envoy = start(&table("load", rules), &[SERVICE1], 1);
    let log = envoy.log();
    assert!(log.contains("Dynamic module ABI version v0.2.0 matched."), "{log}");
    assert!(
        log.contains("table accepted: generation \"load\", 2 rules, 2 hosts"),
        "{log}"
    );
    assert_eq!(
        envoy.backend_for(&get("example.net", "/bar")).as_deref(),
        Some("service1")
    );
}

/// One table for every worker: with two workers, the module's metrics count one accepted table and
/// its rules once (the wasm filter counts one per worker VM and one on the main thread). The actions,
/// local replies and metrics themselves are tests/envoy.rs's `actions_local_replies_and_metrics`,
/// which `make test-module` runs through the module.
#[test]
fn one_table_is_decoded_for_every_worker() {
    let rules = vec![
        rule("Ingress/production/one#0")
            .host("example.net")
            .segment_prefix("/bar")
            .to(SERVICE1),
        rule("Ingress/production/two#0")
            .host("example.net")
            .segment_prefix("/baz")
            .to(SERVICE2),
    ];
    let envoy = start(&table("workers", rules), &[SERVICE1, SERVICE2], 2);
    assert_eq!(envoy.send(&get("example.net", "/baz")).backend(), Some("service2"));
    assert_eq!(
        envoy.filter_stat("switchyard_rules"),
        Some(3),
        "2 rules and the harness's probe"
    );
    assert_eq!(envoy.filter_stat("switchyard_tables_accepted"), Some(1));
}

/// A bad table pushed through ECDS is refused by Envoy (the module answers no configuration, and
/// logs one line naming rule and field, as the wasm filter does); the previous table keeps routing.
/// A good one after it is taken in every form: Istio's `Struct`, the compact form, a wrapper.
#[test]
fn bad_table_is_refused_by_envoy_and_the_previous_one_keeps_serving() {
    let good = table(
        "good-1",
        vec![rule("Ingress/production/one#0")
            .host("example.net")
            .segment_prefix("/bar")
            .to(SERVICE1)],
    );
    let envoy = start(&good, &[SERVICE1, SERVICE2], 2);
    assert_eq!(
        envoy.backend_for(&get("example.net", "/bar")).as_deref(),
        Some("service1")
    );

    let bad = table(
        "bad",
        vec![
            rule("Ingress/production/one#0")
                .host("example.net")
                .segment_prefix("/bar")
                .to(SERVICE2),
            rule("Ingress/production/broken#0")
                .host("example.net")
                .segment_prefix("baz")
                .to(SERVICE2),
        ],
    );
    assert!(
        !envoy.update_table(&bad, ConfigForm::StringValue),
        "Envoy accepted a bad table"
    );
    let log = envoy.log();
    assert!(
        log.lines().any(|l| l.contains(
            "table refused (the table serving before, if any, keeps serving): \
             rule \"Ingress/production/broken#0\": field `path.value`"
        )),
        "{log}"
    );
    assert!(
        !envoy.update_table("not a table", ConfigForm::StringValue),
        "Envoy accepted text that is no table"
    );
    for _ in 0..5 {
        assert_eq!(
            envoy.backend_for(&get("example.net", "/bar")).as_deref(),
            Some("service1")
        );
    }

    let to = |generation: &str, cluster: &str| {
        table(
            generation,
            vec![rule("Ingress/production/one#0")
                .host("example.net")
                .segment_prefix("/bar")
                .to(cluster)],
        )
    };
    assert!(envoy.update_table(&to("good-2", SERVICE2), ConfigForm::Struct));
    assert_eq!(
        envoy.backend_for(&get("example.net", "/bar")).as_deref(),
        Some("service2")
    );

    let doc: serde_json::Value = serde_json::from_str(&to("good-3", SERVICE1)).unwrap();
    let compact = switchyard_table::compact::to_text(&doc).unwrap();
    assert!(
        envoy.update_table(&compact, ConfigForm::StringValue),
        "the compact form was refused"
    );
    assert_eq!(
        envoy.backend_for(&get("example.net", "/bar")).as_deref(),
        Some("service1")
    );

    let wrapped = json!({ "value": to("good-4", SERVICE2) }).to_string();
    assert!(
        envoy.update_table(&wrapped, ConfigForm::StringValue),
        "a wrapped table was refused"
    );
    let mut routed = false;
    for _ in 0..100 {
        if envoy.backend_for(&get("example.net", "/bar")).as_deref() == Some("service2") {
            routed = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(routed, "the wrapped table never served");
}

/// A bad table in Envoy's bootstrap (the filter configured statically, not through ECDS): Envoy
/// refuses the configuration and does not start, after the module's one refusal line.
#[test]
fn a_bad_table_in_the_bootstrap_stops_envoy_from_starting() {
    let envoy_bin = switchyard_e2e::required_path("ENVOY_BIN");
    let module = switchyard_e2e::required_path("SWITCHYARD_MODULE");
    let dir = switchyard_e2e::fresh_dir("module-bad");
    let bad = table(
        "bad",
        vec![rule("Ingress/p/a#0")
            .host("example.net")
            .segment_prefix("a")
            .to(SERVICE1)],
    );
    let filter = switchyard_e2e::module_filter_config(&module, &bad, ConfigForm::StringValue);
    let bootstrap = json!({
        "admin": { "address": { "socket_address": { "address": "127.0.0.1", "port_value": 0 } } },
        "static_resources": { "listeners": [{
            "name": "ingress",
            "address": { "socket_address": { "address": "127.0.0.1", "port_value": 0 } },
            "filter_chains": [{ "filters": [{
                "name": "envoy.filters.network.http_connection_manager",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                    "stat_prefix": "ingress",
                    "route_config": { "virtual_hosts": [{ "name": "all", "domains": ["*"], "routes": [
                        { "match": { "prefix": "/" }, "route": { "cluster_header": "x-route-cluster" } }
                    ] }] },
                    "http_filters": [
                        { "name": "switchyard", "typed_config": filter },
                        { "name": "envoy.filters.http.router", "typed_config": {
                            "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router" } }
                    ]
                }
            }] }]
        }] }
    });
    let config = dir.join("envoy.json");
    switchyard_e2e::write_file(&config, &bootstrap.to_string());
    let output = std::process::Command::new(&envoy_bin)
        .arg("-c")
        .arg(&config)
        .args(["--concurrency", "1", "--disable-hot-restart", "--log-level", "info"])
        .env("ENVOY_DYNAMIC_MODULES_SEARCH_PATH", module.parent().unwrap())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "Envoy started with a bad table:\n{log}");
    assert!(
        log.contains("table refused (the table serving before, if any, keeps serving): rule \"Ingress/p/a#0\": field `path.value`"),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
