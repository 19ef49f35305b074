//! `switchyard watch --filter-form module --ecds-file ...` driving a real Envoy that runs the native
//! dynamic module (`libswitchyard_module.so`, issue 29): the ECDS file the watch writes is the
//! module's `DynamicModuleFilter`, Envoy's listener subscribes to that type, and a manifest changed
//! in the watched folder moves the route, seen by a real request. The wasm filter's watch tests are
//! in watch.rs. Needs `ENVOY_BIN`, `SWITCHYARD_MODULE` and `SWITCHYARD_BIN` (`make test-envoy` sets
//! them); fails without them.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use switchyard_e2e::{
    backend_name, envoy_config_for, fresh_dir, get, module_name, required_path, Backend, Envoy, FilterForm,
};
use switchyard_watch_process::{Address, WatchProcess};

const BLUE: &str = "shop/blue:80";
const GREEN: &str = "shop/green:80";

/// How long a manifest change may take to reach routing (the wasm filter's bound is 1 s; a debug
/// sidecar beside a busy build gets some slack).
const FOLLOW_WITHIN: Duration = Duration::from_secs(5);

/// An Ingress routing `a.example` to the service `service` (port 80) in namespace `shop`.
fn ingress(service: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: a, namespace: shop}}\nspec:\n  rules:\n  - host: a.example\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, backend: {{service: {{name: {service}, port: {{number: 80}}}}}}}}\n"
    )
}

/// Starts `switchyard watch --filter-form module` on `<dir>/manifests`, writing
/// `<dir>/ecds/filter.json` under the module's name `module`; returns once the file is written.
fn start_watch(dir: &Path, module: &str) -> WatchProcess {
    let (manifests, ecds) = (dir.join("manifests"), dir.join("ecds/filter.json"));
    let mut args = vec![
        "--manifests",
        manifests.to_str().unwrap(),
        "--ecds-file",
        ecds.to_str().unwrap(),
        "--filter-form",
        "module",
        "--module-name",
        module,
    ];
    args.extend(Address::both_on_free_ports());
    let mut watch = WatchProcess::spawn(required_path("SWITCHYARD_BIN"), &args, &dir.join("watch.log"));
    watch.wait_until("the ECDS file", Duration::from_secs(30), |_| ecds.is_file());
    watch
}

/// Waits until `a.example` is answered by the backend `expected`; fails past [`FOLLOW_WITHIN`].
fn wait_for_backend(envoy: &Envoy, watch: &WatchProcess, expected: &str) -> Duration {
    let started = Instant::now();
    loop {
        if envoy.backend_for(&get("a.example", "/")).as_deref() == Some(expected) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < FOLLOW_WITHIN,
            "a.example not answered by {expected} within {FOLLOW_WITHIN:?}\nwatch:\n{}\nEnvoy:\n{}",
            watch.log(),
            envoy.log()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_watch_writes_the_modules_ecds_file_and_routing_follows_a_manifest_change() {
    let envoy_bin = required_path("ENVOY_BIN");
    let module = required_path("SWITCHYARD_MODULE");
    // Envoy finds the module by name in this folder (the only test of this binary: no race).
    std::env::set_var("ENVOY_DYNAMIC_MODULES_SEARCH_PATH", module.parent().unwrap());
    let dir = fresh_dir("watch-module");
    std::fs::create_dir_all(dir.join("manifests")).unwrap();
    std::fs::create_dir_all(dir.join("ecds")).unwrap();
    std::fs::write(dir.join("manifests/a.yaml"), ingress("blue")).unwrap();
    let backends: Vec<(String, Backend)> = [BLUE, GREEN]
        .iter()
        .map(|c| ((*c).to_owned(), Backend::start(&backend_name(c)).unwrap()))
        .collect();
    let ports: Vec<(&str, u16)> = backends.iter().map(|(c, b)| (c.as_str(), b.addr.port())).collect();
    let config = envoy_config_for(&dir, &ports, 0, 0, FilterForm::Module);
    std::fs::write(dir.join("envoy.yaml"), config).unwrap();

    // The watch writes the ECDS file before Envoy starts: Envoy's listener waits for it.
    let watch = start_watch(&dir, &module_name(&module));
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("ecds/filter.json")).unwrap()).unwrap();
    let typed_config = &written["resources"][0]["typed_config"];
    assert_eq!(typed_config["@type"], FilterForm::Module.type_url(), "{written:#}");
    assert_eq!(typed_config["dynamic_module_config"]["name"], module_name(&module));

    let mut envoy = Envoy::spawn(&envoy_bin, dir.clone(), module, 1);
    envoy.backends = backends.into_iter().collect();
    wait_for_backend(&envoy, &watch, "blue");
    assert!(
        envoy.log().contains("table accepted"),
        "the module logs the table it took:\n{}",
        envoy.log()
    );

    std::fs::write(dir.join("manifests/a.yaml"), ingress("green")).unwrap();
    let took = wait_for_backend(&envoy, &watch, "green");
    eprintln!("module: a.example moved to green {took:?} after the manifest changed");
    let success = "extension_config_discovery.http_filter.switchyard.update_success";
    assert!(
        envoy.stat(success).unwrap_or(0) >= 2,
        "the first table, then the change"
    );
    assert_eq!(envoy.stat("dynamicmodulescustom.switchyard_tables_refused"), Some(0));
}
