//! The native dynamic module (`libswitchyard_module.so`, issue 29) in a real Envoy, with real
//! backends, through the same harness, listener, routes and ECDS file as the wasm filter's tests
//! (tests/envoy.rs): the same table and the same answers. What is the module's own is here: its
//! load, one table for every worker, a bad table in the bootstrap; the actions, local replies,
//! refusals, route cache and weights are the wasm filter's suites, which `make test-module` runs through it
//! (`SWITCHYARD_FILTER_FORM=module`, and again with `module-cs`: the module as the route's cluster
//! specifier). The cluster specifier's own behaviour is here too: the routing corpus answered as by
//! the filter form, side by side; no cluster header and no second match; pushes; the specifier alone
//! with its filter disabled. Needs `ENVOY_BIN` and
//! `SWITCHYARD_MODULE` (`make test-envoy` and `make test-module` set them); fails without them.

use serde_json::json;
use switchyard_cases::{routing_cases, rule, Case};
use switchyard_e2e::table::table;
use switchyard_e2e::{
    backend_name, cluster_specifier_route, fresh_dir, get, module_name, required_path, set_module_search_path,
    write_file, Backend, ConfigForm, Envoy, FilterForm, Request, Response,
};

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

/// The sharded form (what `switchyard watch` writes) through the module: at start every shard is
/// decoded once for the process, and a push of one changed rule decodes only the changed shards
/// (the process's store keeps the others, decoded, and the new table shares them with the one
/// serving); requests then route as the new table routes.
#[test]
fn a_push_in_the_sharded_form_decodes_only_the_shards_new_to_the_process() {
    use switchyard_e2e::bench::accepted_lines;
    use switchyard_table::shards::ShardEncoder;
    use switchyard_table::{PathSpec, RouteTable, SimpleRequest};
    let mut first = switchyard_table::synthetic::table(3_000);
    first.generation = "module-shards-1".into();
    let changed_at = 1_500;
    let mut second = first.clone();
    second.generation = "module-shards-2".into();
    second.rules[changed_at].path = PathSpec::Prefix("/changed".into());
    // The requests, and the cluster the second table sends each to (Envoy is given those).
    let host = second.rules[changed_at]
        .host
        .clone()
        .unwrap_or_default()
        .replace('*', "w");
    let whole = RouteTable::try_from(second.clone()).unwrap();
    let expected: Vec<(String, Option<String>)> = ["/changed".to_owned(), format!("/{changed_at}/a")]
        .into_iter()
        .map(|path| {
            let decision = whole.route(&SimpleRequest::get(&host, &path), 0);
            (path, decision.and_then(|d| d.backend).map(|b| b.cluster.clone()))
        })
        .collect();
    let clusters: Vec<&str> = expected.iter().filter_map(|(_, c)| c.as_deref()).collect();
    assert!(!clusters.is_empty(), "{expected:?}");

    let mut encoder = ShardEncoder::new();
    let envoy = start(&encoder.encode(&first).unwrap(), &clusters, 2);
    let counts = |generation: &str| {
        let lines: Vec<_> = accepted_lines(&envoy.log())
            .into_iter()
            .filter(|a| a.generation == generation)
            .filter_map(|a| a.shards)
            .map(|c| (c.shards, c.decoded))
            .collect();
        assert_eq!(lines.len(), 1, "one load for every worker: {}", envoy.log());
        lines[0]
    };
    let (shards, decoded) = counts("module-shards-1");
    assert!(shards > 10 && decoded == shards, "({shards}, {decoded})");

    let text = encoder.encode(&second).unwrap();
    let changed = encoder.stats().deflated;
    assert!(envoy.update_table(&text, ConfigForm::StringValue));
    let (_, decoded) = counts("module-shards-2");
    assert!((1..=changed).contains(&decoded), "{decoded} decoded, {changed} changed");
    for (path, cluster) in &expected {
        let answered = envoy.backend_for(&get(&host, path));
        assert_eq!(answered, cluster.as_deref().map(backend_name), "{host}{path}");
    }
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
    let bootstrap = switchyard_e2e::static_bootstrap(
        json!([{ "name": "all", "domains": ["*"], "routes": [
            { "match": { "prefix": "/" }, "route": { "cluster_header": "x-route-cluster" } }
        ] }]),
        vec![json!({ "name": "switchyard", "typed_config": filter })],
        &[],
    );
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

// ---- the cluster specifier ----------------------------------------------------------------------

/// What a client can tell of an answer: status, backend, the rule named in the debug header, a
/// redirect's location, the path the backend received, a local reply's body.
fn answer(response: &Response) -> String {
    format!(
        "{} backend {:?} rule {:?} location {:?} path {:?} body {:?}",
        response.status,
        response.backend(),
        response.header("x-switchyard-rule"),
        response.header("location"),
        response.upstream_path(),
        response.backend().is_none().then_some(&response.body),
    )
}

/// The routing corpus's request of one probe.
fn corpus_request(probe: &switchyard_cases::Probe) -> Request {
    let request = get(probe.authority(), probe.path()).method(&probe.method);
    probe
        .headers
        .iter()
        .fold(request, |request, (name, value)| request.header(name, value))
}

/// The routing corpus (tests/cases/routing.json) answered through the module as the route's cluster
/// specifier (its filter beside it for the local replies and the debug header) exactly as through
/// its filter form, side by side: two Envoys, each case's table pushed to both, every request sent
/// to both.
#[test]
fn the_cluster_specifier_answers_the_routing_corpus_as_the_filter_form_does() {
    let cases = routing_cases();
    let mut clusters: Vec<&str> = cases.iter().flat_map(Case::clusters).collect();
    clusters.sort_unstable();
    clusters.dedup();
    let first = cases[0].table().to_string();
    let forms = [FilterForm::Module, FilterForm::ModuleClusterSpecifier];
    let envoys = forms.map(|form| Envoy::start_filter(&first, &clusters, ConfigForm::StringValue, 1, form));
    let mut differences = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let table = case.table().to_string();
        if i > 0 {
            for envoy in &envoys {
                assert!(envoy.update_table(&table, ConfigForm::StringValue), "{}", case.name);
            }
        }
        for probe in &case.probes {
            let request = corpus_request(probe);
            let [filter, specifier] = [0, 1].map(|i| answer(&envoys[i].send(&request)));
            if filter != specifier {
                differences.push(format!(
                    "{}: {probe}:\n  filter:    {filter}\n  specifier: {specifier}",
                    case.name
                ));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

fn start_specifier(table: &str, clusters: &[&str]) -> Envoy {
    Envoy::start_filter(
        table,
        clusters,
        ConfigForm::StringValue,
        1,
        FilterForm::ModuleClusterSpecifier,
    )
}

/// The cluster specifier picks the cluster during Envoy's route match: no cluster header is set (a
/// client's is removed, and routes nothing), and a rewritten path is not matched again (the
/// rewrite's target, a rule of its own here, does not take the request).
#[test]
fn the_cluster_specifier_routes_without_a_cluster_header_and_matches_once() {
    let rules = vec![
        rule("Ingress/production/old#0")
            .host("example.net")
            .segment_prefix("/old")
            .action(json!({ "route": { "backends": [{ "cluster": SERVICE1 }], "rewrite_prefix": "/new" } })),
        rule("Ingress/production/new#0")
            .host("example.net")
            .segment_prefix("/new")
            .to(SERVICE2),
    ];
    let envoy = start_specifier(&table("specifier", rules), &[SERVICE1, SERVICE2]);
    let sneaky = envoy.send(&get("example.net", "/new/page").header("x-route-cluster", SERVICE1));
    assert_eq!(sneaky.backend(), Some("service2"), "{sneaky:?}");
    assert_eq!(sneaky.upstream_header("x-route-cluster"), Vec::<&str>::new());
    let rewritten = envoy.send(&get("example.net", "/old/page"));
    assert_eq!(rewritten.backend(), Some("service1"), "{rewritten:?}");
    assert_eq!(rewritten.upstream_path(), Some("/new/page"));
    assert_eq!(rewritten.header("x-switchyard-rule"), Some("Ingress/production/old#0"));
    assert_eq!(rewritten.upstream_header("x-route-cluster"), Vec::<&str>::new());
}

/// A table pushed through the filter's ECDS file moves the specifier's routes (the new table is
/// published before the old configuration goes); a refused one leaves the previous table serving.
#[test]
fn a_push_moves_the_cluster_specifiers_routes_and_a_refused_table_does_not() {
    let to = |generation: &str, cluster: &str| {
        table(
            generation,
            vec![rule("Ingress/production/one#0")
                .host("example.net")
                .segment_prefix("/bar")
                .to(cluster)],
        )
    };
    let envoy = start_specifier(&to("one", SERVICE1), &[SERVICE1, SERVICE2]);
    assert_eq!(
        envoy.backend_for(&get("example.net", "/bar")).as_deref(),
        Some("service1")
    );
    assert!(envoy.update_table(&to("two", SERVICE2), ConfigForm::StringValue));
    assert_eq!(
        envoy.backend_for(&get("example.net", "/bar")).as_deref(),
        Some("service2")
    );
    assert!(!envoy.update_table("not a table", ConfigForm::StringValue));
    for _ in 0..5 {
        assert_eq!(
            envoy.backend_for(&get("example.net", "/bar")).as_deref(),
            Some("service2")
        );
    }
}

/// For a table whose winners are plain routes, the specifier routes alone: its filter (holding the
/// table) is in the chain but `disabled`, so no HTTP filter runs; a request no rule matches finds no
/// cluster, answered with the route's `cluster_not_found_response_code`.
#[test]
fn with_its_filter_disabled_the_cluster_specifier_routes_alone() {
    let module = required_path("SWITCHYARD_MODULE");
    set_module_search_path(&module);
    let rules = vec![rule("Ingress/production/one#0")
        .host("example.net")
        .segment_prefix("/bar")
        .to(SERVICE1)];
    let form = FilterForm::ModuleClusterSpecifier;
    let filter = json!({ "name": "switchyard", "disabled": true,
        "typed_config": form.filter_config(&module, &table("alone", rules), ConfigForm::StringValue) });
    let mut route = cluster_specifier_route(&module_name(&module));
    route["route"]["cluster_not_found_response_code"] = "NOT_FOUND".into();
    let backend = Backend::start(&backend_name(SERVICE1)).unwrap();
    let bootstrap = switchyard_e2e::static_bootstrap(
        json!([{ "name": "all", "domains": ["*"], "routes": [route] }]),
        vec![filter],
        &[(SERVICE1, backend.addr.port())],
    );
    let dir = fresh_dir("module-cs-alone");
    // JSON is YAML.
    write_file(&dir.join("envoy.yaml"), &bootstrap.to_string());
    let envoy = Envoy::spawn(&required_path("ENVOY_BIN"), dir, module, 1);
    let routed = envoy.send(&get("example.net", "/bar/x"));
    assert_eq!(routed.backend(), Some("service1"), "{routed:?}");
    assert_eq!(routed.header("x-switchyard-rule"), None, "no filter ran");
    let unmatched = envoy.send(&get("example.net", "/nothing"));
    assert_eq!((unmatched.status, unmatched.backend()), (404, None), "{unmatched:?}");
}
