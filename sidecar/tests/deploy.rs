//! The manifests in deploy/ agree with the code: the Deployment's arguments are accepted by
//! `switchyard watch`, the Istio examples have the shape the sinks apply, and the RBAC grants what
//! the Kubernetes mode uses (on Istio objects: get/list/watch/patch by name, and create).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use switchyard::flags::TableEncoding;
use switchyard::watch::sink::istio::{manifest, IstioKind, IstioSettings};
use switchyard_table::TableSpec;

fn deploy(file: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.split("\n---\n")
        .map(|doc| serde_yaml::from_str(doc).unwrap_or_else(|e| panic!("{file}: {e}")))
        .collect()
}

fn settings() -> IstioSettings {
    IstioSettings {
        selector: BTreeMap::from([("istio".to_owned(), "ingressgateway".to_owned())]),
        wasm_url: "oci://registry.example/switchyard-filter:0.1.0".into(),
        wasm_path: "/var/lib/switchyard/switchyard_filter.wasm".into(),
        filter_name: "switchyard".into(),
        runtime: "envoy.wasm.runtime.v8".into(),
    }
}

#[test]
fn the_deployment_arguments_are_accepted_by_switchyard_watch() {
    let deployment = &deploy("deployment.yaml")[0];
    let args: Vec<String> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(args[0], "watch");
    // No cluster here: the arguments parse (a usage error would exit 2), then the client fails.
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(&args)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot reach Kubernetes"), "{stderr}");
}

#[test]
fn the_wasmplugin_example_has_the_shape_switchyard_applies() {
    let example = &deploy("istio/wasmplugin/wasmplugin.yaml")[0];
    let table = TableSpec::from_value(example["spec"]["pluginConfig"].clone()).unwrap();
    let config = TableEncoding::Compact.plugin_config(&table).unwrap();
    let applied = manifest(
        IstioKind::WasmPlugin,
        "istio-system",
        "switchyard",
        &settings(),
        &config,
    )
    .unwrap();
    assert_eq!(example["apiVersion"], applied["apiVersion"]);
    assert_eq!(example["metadata"], applied["metadata"]);
    for field in ["selector", "url", "pluginName"] {
        assert_eq!(example["spec"][field], applied["spec"][field], "spec.{field}");
    }
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&example["spec"]), keys(&applied["spec"]));
}

#[test]
fn the_envoyfilter_example_has_the_shape_switchyard_applies() {
    let example = &deploy("istio/envoyfilter/envoyfilter.yaml")[0];
    let table = TableSpec {
        version: 1,
        ..TableSpec::default()
    };
    let mut applied = manifest(
        IstioKind::EnvoyFilter,
        "istio-system",
        "switchyard",
        &settings(),
        &TableEncoding::Compact.plugin_config(&table).unwrap(),
    )
    .unwrap();
    // Only the table differs.
    let path = "/spec/configPatches/0/patch/value/typed_config/config/configuration/value";
    *applied.pointer_mut(path).unwrap() = example.pointer(path).unwrap().clone();
    assert_eq!(example, &applied);
}

/// The rules of the Role in istio-system, one line each: `group/resource [name] verbs`.
fn role_rules(role: &Value) -> Vec<String> {
    let text = |v: &Value| {
        (v.as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(",")
    };
    (role["rules"].as_array().unwrap().iter())
        .map(|rule| {
            let named = text(&rule["resourceNames"]);
            let named = if named.is_empty() {
                String::new()
            } else {
                format!(" [{named}]")
            };
            format!(
                "{}/{}{named} {}",
                text(&rule["apiGroups"]),
                text(&rule["resources"]),
                text(&rule["verbs"])
            )
        })
        .collect()
}

#[test]
fn rbac_grants_reads_status_writes_events_named_istio_patches_and_istio_creates() {
    let documents = deploy("rbac.yaml");
    let role = |kind: &str| documents.iter().find(|d| d["kind"] == kind).unwrap();
    let grants = |doc: &Value| -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        for rule in doc["rules"].as_array().unwrap() {
            for group in rule["apiGroups"].as_array().unwrap() {
                for resource in rule["resources"].as_array().unwrap() {
                    for verb in rule["verbs"].as_array().unwrap() {
                        out.push((
                            group.as_str().unwrap().to_owned(),
                            resource.as_str().unwrap().to_owned(),
                            verb.as_str().unwrap().to_owned(),
                        ));
                    }
                }
            }
        }
        out
    };
    let cluster = grants(role("ClusterRole"));
    let has = |g: &str, r: &str, v: &str| cluster.contains(&(g.to_owned(), r.to_owned(), v.to_owned()));
    for (group, resource) in [
        ("networking.k8s.io", "ingresses"),
        ("networking.k8s.io", "ingressclasses"),
        ("", "services"),
        ("projectcontour.io", "httpproxies"),
        ("k8s.nginx.org", "virtualservers"),
        ("k8s.nginx.org", "virtualserverroutes"),
        ("k8s.nginx.org", "transportservers"),
        ("k8s.nginx.org", "globalconfigurations"),
        ("k8s.nginx.org", "policies"),
        ("discovery.k8s.io", "endpointslices"),
    ] {
        for verb in ["list", "watch"] {
            assert!(has(group, resource, verb), "{verb} {group}/{resource}");
        }
        assert!(
            !has(group, resource, "patch") && !has(group, resource, "update"),
            "no write to {resource} itself"
        );
    }
    assert!(has("networking.k8s.io", "ingresses/status", "patch"));
    assert!(has("projectcontour.io", "httpproxies/status", "patch"));
    assert!(has("k8s.nginx.org", "virtualservers/status", "patch"));
    assert!(has("k8s.nginx.org", "virtualserverroutes/status", "patch"));
    assert!(has("k8s.nginx.org", "transportservers/status", "patch"));
    assert!(has("events.k8s.io", "events", "create"));
    // In istio-system: the Istio objects we are told to manage, by name (create cannot be limited
    // by name: the table's EnvoyFilter and --istio-clusters's), and the certificate copies of
    // --istio-gateway (Secrets: create, patch, delete).
    assert_eq!(
        role_rules(role("Role")),
        [
            "networking.istio.io/envoyfilters [switchyard,switchyard-clusters] get,list,watch,patch",
            "extensions.istio.io/wasmplugins [switchyard] get,list,watch,patch",
            "networking.istio.io/gateways,virtualservices [switchyard] get,list,watch,patch,delete",
            "networking.istio.io/envoyfilters create",
            "extensions.istio.io/wasmplugins create",
            "networking.istio.io/gateways,virtualservices create",
            "/secrets create,patch,delete",
        ]
    );
}

/// The Istio path normalisation asked of the installation (deploy/istio/mesh-config/: the MeshConfig
/// keys, and the same keys as an IstioOperator overlay) is what envoy.yaml sets: dot segments, merged
/// slashes and decoded `%2F` (Istio's DECODE_AND_MERGE_SLASHES), and envoy.yaml does set all three.
/// (tests/istio runs a real istiod with mesh.yaml and checks the gateway's connection managers.)
#[test]
fn istio_and_envoy_normalise_paths_the_same_way() {
    let mesh = &deploy("istio/mesh-config/mesh.yaml")[0];
    assert_eq!(mesh["pathNormalization"]["normalization"], "DECODE_AND_MERGE_SLASHES");
    let operator = &deploy("istio/mesh-config/istiooperator.yaml")[0];
    assert_eq!(operator["kind"], "IstioOperator");
    assert_eq!(&operator["spec"]["meshConfig"], mesh);
    let envoy = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../envoy.yaml")).unwrap();
    let envoy: Value = serde_yaml::from_str(&envoy).unwrap();
    let hcm = &envoy["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"];
    assert_eq!(hcm["normalize_path"], true);
    assert_eq!(hcm["merge_slashes"], true);
    assert_eq!(hcm["path_with_escaped_slashes_action"], "UNESCAPE_AND_FORWARD");
}

/// The HTTP listener of `make run`'s envoy.yaml, and of deploy/envoy/'s bootstrap (a ConfigMap's
/// text), write the access log that names each request's rule and resource (issue "Which Ingress
/// served this request"; the HTTPS listener the sidecar writes carries the same): one format,
/// `switchyard_table::format::ACCESS_LOG_FORMAT`, which `tests/e2e/tests/observability.rs` runs.
#[test]
fn envoy_yaml_and_the_envoy_deployment_log_the_winning_rule_in_one_format() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let quoted = serde_json::to_string(switchyard_table::format::ACCESS_LOG_FORMAT).unwrap();
    let envoy: Value = serde_yaml::from_str(&std::fs::read_to_string(root.join("envoy.yaml")).unwrap()).unwrap();
    let hcm = &envoy["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"];
    let format = &hcm["access_log"][0]["typed_config"]["log_format"]["text_format_source"]["inline_string"];
    assert_eq!(format, switchyard_table::format::ACCESS_LOG_FORMAT);
    let deployed = std::fs::read_to_string(root.join("deploy/envoy/envoy-config.yaml")).unwrap();
    assert!(
        deployed.contains(&format!("inline_string: {quoted}")),
        "deploy/envoy/envoy-config.yaml"
    );
}

/// `make run`'s envoy.yaml and deploy/envoy/'s bootstrap take the per-resource request metrics'
/// labels out of the wasm filter's stat names with the tags the code defines
/// (`switchyard_table::metrics::stats_tags`), which the e2e harness uses too.
#[test]
fn envoy_yaml_and_the_envoy_deployment_tag_the_per_resource_metrics() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let expected: Vec<(String, String)> = (switchyard_table::metrics::stats_tags().into_iter())
        .map(|(name, regex)| (name.to_owned(), regex))
        .collect();
    let tags_of = |bootstrap: &Value| -> Vec<(String, String)> {
        let tags = bootstrap["stats_config"]["stats_tags"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        (tags.iter())
            .map(|t| {
                (
                    t["tag_name"].as_str().unwrap().to_owned(),
                    t["regex"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let envoy: Value = serde_yaml::from_str(&std::fs::read_to_string(root.join("envoy.yaml")).unwrap()).unwrap();
    assert_eq!(tags_of(&envoy), expected, "envoy.yaml");
    let config_map = &deploy("envoy/envoy-config.yaml")[0];
    let deployed: Value = serde_yaml::from_str(config_map["data"]["envoy.yaml"].as_str().unwrap()).unwrap();
    assert_eq!(tags_of(&deployed), expected, "deploy/envoy/envoy-config.yaml");
    let strips = |bootstrap: &Value| {
        let flag = "envoy.reloadable_features.dynamic_modules_strip_custom_stat_prefix";
        bootstrap["layered_runtime"]["layers"][0]["static_layer"][flag] == true
    };
    assert!(
        strips(&envoy) && strips(&deployed),
        "the module's metrics are named as the wasm filter's"
    );
}

/// Istio's mesh config (deploy/istio/mesh-config, both forms) asks every proxy for the per-resource
/// metrics' tags: Istio writes `(TAG=\.=(.*?);\.;)` for each, the regex of
/// `switchyard_table::metrics::stats_tags`.
#[test]
fn the_istio_mesh_config_asks_for_the_per_resource_metrics_tags() {
    let expected: Vec<Value> = (switchyard_table::metrics::TAGS.iter())
        .map(|l| Value::from(*l))
        .collect();
    let mesh = &deploy("istio/mesh-config/mesh.yaml")[0];
    assert_eq!(mesh["defaultConfig"]["extraStatTags"], Value::from(expected.clone()));
    let operator = &deploy("istio/mesh-config/istiooperator.yaml")[0];
    assert_eq!(
        operator["spec"]["meshConfig"]["defaultConfig"]["extraStatTags"],
        Value::from(expected)
    );
    for (label, regex) in switchyard_table::metrics::stats_tags() {
        assert_eq!(regex, format!(r"({label}=\.=(.*?);\.;)"), "Istio's form for {label}");
    }
}

/// The manifest files `kubectl apply -f FOLDER` reads in deploy/FOLDER (not its subfolders).
fn kubectl_files(folder: &str) -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy").join(folder);
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "yaml" || x == "yml" || x == "json"))
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    out.sort();
    out
}

/// deploy/istio/ is laid out so that every folder of objects applies as it is: one folder per
/// variant (the filter and the route, never both filters), nothing at deploy/istio/ itself, and the
/// mesh settings (operator input, no cluster object) apart in mesh-config/. The route is the same
/// file in both folders. (tests/istio applies each folder to a real API server and istiod.)
#[test]
fn each_istio_folder_is_one_complete_variant() {
    assert!(kubectl_files("istio").is_empty(), "{:?}", kubectl_files("istio"));
    assert_eq!(kubectl_files("istio/wasmplugin"), ["route.yaml", "wasmplugin.yaml"]);
    assert_eq!(kubectl_files("istio/envoyfilter"), ["envoyfilter.yaml", "route.yaml"]);
    assert_eq!(kubectl_files("istio/mesh-config"), ["istiooperator.yaml", "mesh.yaml"]);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/istio");
    let text = |f: &str| std::fs::read_to_string(root.join(f)).unwrap();
    assert_eq!(
        text("wasmplugin/route.yaml"),
        text("envoyfilter/route.yaml"),
        "one route.yaml, copied"
    );
}

/// The route applies to every virtual host of every route configuration of the selected gateways
/// (issue 23 item 7: named `*:80`, it missed every Gateway with hosts or another port), first, and
/// sends by the header the filter sets.
#[test]
fn the_route_is_first_in_every_virtual_host_of_the_gateway() {
    let route = &deploy("istio/wasmplugin/route.yaml")[0];
    assert_eq!(route["kind"], "EnvoyFilter");
    assert_eq!(route["spec"]["workloadSelector"]["labels"]["istio"], "ingressgateway");
    let patches = route["spec"]["configPatches"].as_array().unwrap();
    assert_eq!(patches.len(), 1);
    let patch = &patches[0];
    assert_eq!(patch["applyTo"], "HTTP_ROUTE");
    assert_eq!(patch["match"]["context"], "GATEWAY");
    let config = patch["match"]["routeConfiguration"].as_object().unwrap();
    assert_eq!(
        config.keys().collect::<Vec<_>>(),
        ["vhost"],
        "no port, name or gateway: {config:?}"
    );
    assert_eq!(config["vhost"], serde_json::json!({}), "no virtual host name");
    assert_eq!(patch["patch"]["operation"], "INSERT_FIRST");
    let value = &patch["patch"]["value"];
    let header = switchyard_table::format::DEFAULT_CLUSTER_HEADER;
    assert_eq!(value["route"]["cluster_header"], header);
    assert_eq!(value["match"]["headers"][0]["name"], header);
    // The header the filter sets by default, and the one deployment.yaml leaves it at.
    let deployment = &deploy("deployment.yaml")[0];
    let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap();
    assert!(
        !args.iter().any(|a| a.as_str().unwrap().starts_with("--cluster-header")),
        "{args:?}"
    );
}

/// deployment.yaml's --wasm-url is the WasmPlugin's url (the sidecar owns the field: they must agree).
#[test]
fn the_deployment_pushes_the_wasmplugin_of_deploy_istio() {
    let deployment = &deploy("deployment.yaml")[0];
    let args: Vec<&str> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let plugin = &deploy("istio/wasmplugin/wasmplugin.yaml")[0];
    let target = format!(
        "--wasmplugin={}/{}",
        plugin["metadata"]["namespace"].as_str().unwrap(),
        plugin["metadata"]["name"].as_str().unwrap()
    );
    assert!(args.contains(&target.as_str()), "{args:?}");
    assert!(args.contains(&format!("--wasm-url={}", plugin["spec"]["url"].as_str().unwrap()).as_str()));
}

#[test]
fn the_shipped_ingressclass_is_the_one_the_deployment_flags_serve() {
    let deployment = &deploy("deployment.yaml")[0];
    let args: Vec<&str> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let flag = |name: &str| args.iter().find_map(|a| a.strip_prefix(&format!("--{name}=")));
    let class = flag("ingress-class").expect("the Deployment names its class");
    let controller = flag("controller-name").unwrap_or(switchyard_compiler::pipeline::DEFAULT_CONTROLLER);
    let shipped = &deploy("ingressclass.yaml")[0];
    assert_eq!(shipped["metadata"]["name"], class);
    // ROUTING.md §1: with --ingress-class set, ours is <controller name>/<ingress-class>.
    assert_eq!(shipped["spec"]["controller"], format!("{controller}/{class}"));
}

/// `--leader-elect` as shipped: two replicas, and a Role letting them create the Lease and read,
/// watch and update only the one they elect with (by default named `switchyard`, in the
/// Deployment's namespace, which is where the pods' ServiceAccount namespace puts it).
#[test]
fn two_replicas_elect_a_leader_through_the_lease_the_rbac_grants() {
    let deployment = &deploy("deployment.yaml")[0];
    assert_eq!(deployment["spec"]["replicas"], 2);
    let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap();
    assert!(args.iter().any(|a| a == "--leader-elect"), "{args:?}");
    assert!(!args
        .iter()
        .any(|a| a.as_str().unwrap().starts_with("--leader-elect-lease-name")));
    let documents = deploy("rbac.yaml");
    let role = documents
        .iter()
        .find(|d| d["kind"] == "Role" && d["metadata"]["name"] == "switchyard-leader-election")
        .expect("a Role for the Lease");
    assert_eq!(role["metadata"]["namespace"], deployment["metadata"]["namespace"]);
    for rule in role["rules"].as_array().unwrap() {
        assert_eq!(rule["apiGroups"], serde_json::json!(["coordination.k8s.io"]));
        assert_eq!(rule["resources"], serde_json::json!(["leases"]));
    }
    // `switchyard`: the default of --leader-elect-lease-name.
    assert_eq!(
        role_rules(role),
        [
            "coordination.k8s.io/leases [switchyard] get,list,watch,update",
            "coordination.k8s.io/leases create"
        ]
    );
    let binding = documents
        .iter()
        .find(|d| d["kind"] == "RoleBinding" && d["roleRef"]["name"] == "switchyard-leader-election")
        .expect("its RoleBinding");
    assert_eq!(binding["subjects"][0]["name"], "switchyard");
}

/// deploy/envoy/ (the gateway without Istio) reads and writes what deploy/ does: the same
/// ClusterRole rules and the same IngressClass, so the two installs cannot drift apart; and every
/// namespaced object of it is in its own namespace, created by the first file `kubectl apply`
/// takes.
#[test]
fn the_envoy_gateway_has_deploys_reads_and_class_in_a_namespace_of_its_own() {
    let cluster_role = |file: &str| -> Value {
        let documents = deploy(file);
        documents.into_iter().find(|d| d["kind"] == "ClusterRole").unwrap()["rules"].clone()
    };
    assert_eq!(cluster_role("envoy/rbac.yaml"), cluster_role("rbac.yaml"));
    assert_eq!(
        deploy("envoy/ingressclass.yaml")[0]["spec"],
        deploy("ingressclass.yaml")[0]["spec"]
    );
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/envoy");
    let mut files: Vec<String> = (std::fs::read_dir(&dir).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".yaml"))
        .collect();
    files.sort();
    assert_eq!(deploy(&format!("envoy/{}", files[0]))[0]["kind"], "Namespace");
    for file in &files[1..] {
        for document in deploy(&format!("envoy/{file}")) {
            let namespaced = !matches!(
                document["kind"].as_str(),
                Some("ClusterRole" | "ClusterRoleBinding" | "IngressClass")
            );
            if namespaced {
                assert_eq!(
                    document["metadata"]["namespace"], "switchyard",
                    "{file}: {}",
                    document["kind"]
                );
            }
        }
    }
}
