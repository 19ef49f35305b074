//! `switchyard watch --filter-form module --ecds-file ...` driving a real Envoy that runs the native
//! dynamic module (`libswitchyard_module.so`, issue 29), in both of its forms: the ECDS file the
//! watch writes is the module's `DynamicModuleFilter`, Envoy's listener subscribes to that type, and
//! a manifest changed in the watched folder moves the route, seen by a real request. Beside the
//! cluster specifier, `--filter-name switchyard-actions` names the filter whose table the specifier
//! routes by. The setup is the wasm filter's watch tests' (watch.rs, `watch_setup`). Needs
//! `ENVOY_BIN`, `SWITCHYARD_MODULE` and `SWITCHYARD_BIN` (`make test-envoy` sets them); fails
//! without them.

mod watch_setup;

use switchyard_e2e::{module_name, required_path, EcdsFile, FilterForm};
use watch_setup::{ingress, Setup};

/// The watch writes the module's ECDS file for `form` (JSON or binary, `file`), Envoy takes it, and
/// routing follows a manifest change.
fn routing_follows_the_watch(form: FilterForm, file: EcdsFile) {
    let setup = match file {
        EcdsFile::Json => Setup::start(form),
        EcdsFile::Binary => Setup::start_binary(form),
    };
    if file == EcdsFile::Json {
        let written: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(setup.ecds_file()).unwrap()).unwrap();
        let resource = &written["resources"][0];
        let typed_config = &resource["typed_config"];
        assert_eq!(typed_config["@type"], form.type_url(), "{written:#}");
        let module = required_path(form.variable());
        assert_eq!(typed_config["dynamic_module_config"]["name"], module_name(&module));
        assert_eq!(resource["name"], form.ecds_name(), "{written:#}");
        assert_eq!(typed_config["filter_name"], form.ecds_name(), "{written:#}");
    }

    let blue = ingress("a", "a.example", "blue");
    setup.change("a.yaml", Some(&blue), "a.example", Some("blue"));
    assert!(
        setup.envoy.log().contains("table accepted"),
        "the module logs the table it took:\n{}",
        setup.envoy.log()
    );
    let green = ingress("a", "a.example", "green");
    let took = setup.change("a.yaml", Some(&green), "a.example", Some("green"));
    eprintln!("{form:?}: a.example moved to green {took:?} after the manifest changed");
    assert!(
        setup.ecds_stat("update_success") >= 2,
        "the first table, then the changes"
    );
    assert_eq!(
        setup.envoy.stat("dynamicmodulescustom.switchyard_tables_refused"),
        Some(0)
    );
}

#[test]
fn the_watch_writes_the_modules_ecds_file_and_routing_follows_a_manifest_change() {
    routing_follows_the_watch(FilterForm::Module, EcdsFile::Json);
}

#[test]
fn beside_the_cluster_specifier_routing_follows_the_watch_through_the_actions_filter() {
    routing_follows_the_watch(FilterForm::ModuleClusterSpecifier, EcdsFile::Json);
}

/// `--ecds-file filter.pb`: the module's `DynamicModuleFilter` in binary protobuf, read by Envoy.
#[test]
fn a_pb_ecds_file_configures_the_module_as_the_json_one_does() {
    routing_follows_the_watch(FilterForm::Module, EcdsFile::Binary);
}
