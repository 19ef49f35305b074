//! The ECDS file in Envoy's binary protobuf encoding, and the EDS resources of the ADS server
//! (`switchyard watch --ads-listen`).
//!
//! Envoy reads a `path_config_source` file by its name: `.pb` as binary protobuf, `.yaml` as YAML,
//! anything else as JSON. A table of 100,000 rules makes the file a megabyte, and at every push
//! Envoy's main thread spent about 45 – 55 ms of its own code on the JSON form, against 6 – 8 ms
//! for the same `DiscoveryResponse` in binary (BENCHMARKS.md, "Table pushes: the ECDS file in
//! binary"). The sidecar writes this form when `--ecds-file` names a `.pb` file; the JSON form
//! stays its default, a file a person can read.
//!
//! [`ecds_response`] builds the document: one `TypedExtensionConfig` resource carrying the filter
//! ([`Filter`]: the wasm filter or the dynamic module) with the table as a
//! `google.protobuf.StringValue`, exactly as the JSON form does. [`messages`] declares the few
//! messages involved.

pub mod messages;

/// The protobuf crate the messages are declared with, for a reader that decodes them.
pub use prost;

use messages::{
    Address, Any, AsyncDataSource, ClusterLoadAssignment, DataSource, DiscoveryResponse, DynamicModuleConfig,
    DynamicModuleFilter, Endpoint, LbEndpoint, LocalityLbEndpoints, PluginConfig, SocketAddress, StringValue,
    TypedExtensionConfig, VmConfig, Wasm,
};
use prost::Message;

/// The type URL of a cluster's endpoints (EDS).
pub const LOAD_ASSIGNMENT: &str = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";

/// The type URL of an ECDS resource.
pub const TYPED_EXTENSION_CONFIG: &str = "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig";
/// The type URL of the wasm HTTP filter's configuration.
pub const WASM_FILTER: &str = "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm";
/// The type URL of the dynamic-module HTTP filter's configuration.
pub const DYNAMIC_MODULE_FILTER: &str =
    "type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter";
/// The type URL the table travels as.
pub const STRING_VALUE: &str = "type.googleapis.com/google.protobuf.StringValue";

/// The filter an ECDS document configures.
#[derive(Debug, Clone, Copy)]
pub enum Filter<'a> {
    /// The proxy-wasm filter: the `.wasm` at `filename` under `runtime`, its plugin, root context
    /// and VM all named `name`.
    Wasm {
        name: &'a str,
        runtime: &'a str,
        filename: &'a str,
    },
    /// The dynamic module loaded by `module` (`lib<module>.so`), kept loaded (`do_not_close`), its
    /// filter `filter_name`.
    Module { module: &'a str, filter_name: &'a str },
}

/// The ECDS `DiscoveryResponse`, in binary, whose one resource is `filter` named `name`, with
/// `table` as its configuration.
pub fn ecds_response(name: &str, filter: Filter<'_>, table: &str) -> Vec<u8> {
    let resource = TypedExtensionConfig {
        name: name.to_owned(),
        typed_config: Some(typed_config(filter, table)),
    };
    DiscoveryResponse {
        resources: vec![any(TYPED_EXTENSION_CONFIG, &resource)],
        ..DiscoveryResponse::default()
    }
    .encode_to_vec()
}

/// Cluster `name`'s endpoints (address, port), as an EDS resource.
pub fn load_assignment(name: &str, endpoints: &[(&str, u16)]) -> Any {
    let lb_endpoints = (endpoints.iter())
        .map(|(address, port)| LbEndpoint {
            endpoint: Some(Endpoint {
                address: Some(Address {
                    socket_address: Some(SocketAddress {
                        address: (*address).to_owned(),
                        port_value: u32::from(*port),
                    }),
                }),
            }),
        })
        .collect();
    let assignment = ClusterLoadAssignment {
        cluster_name: name.to_owned(),
        endpoints: vec![LocalityLbEndpoints { lb_endpoints }],
    };
    any(LOAD_ASSIGNMENT, &assignment)
}

/// The filter's own configuration, as the resource's `typed_config`.
fn typed_config(filter: Filter<'_>, table: &str) -> Any {
    let table = Some(any(
        STRING_VALUE,
        &StringValue {
            value: table.to_owned(),
        },
    ));
    match filter {
        Filter::Wasm {
            name,
            runtime,
            filename,
        } => {
            let vm = VmConfig {
                vm_id: name.to_owned(),
                runtime: runtime.to_owned(),
                code: Some(AsyncDataSource {
                    local: Some(DataSource {
                        filename: filename.to_owned(),
                    }),
                }),
            };
            let plugin = PluginConfig {
                name: name.to_owned(),
                root_id: name.to_owned(),
                vm_config: Some(vm),
                configuration: table,
            };
            any(WASM_FILTER, &Wasm { config: Some(plugin) })
        }
        Filter::Module { module, filter_name } => any(
            DYNAMIC_MODULE_FILTER,
            &DynamicModuleFilter {
                dynamic_module_config: Some(DynamicModuleConfig {
                    name: module.to_owned(),
                    do_not_close: true,
                }),
                filter_name: filter_name.to_owned(),
                filter_config: table,
            },
        ),
    }
}

fn any(type_url: &str, message: &impl Message) -> Any {
    Any {
        type_url: type_url.to_owned(),
        value: message.encode_to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The resource of a document, its filter's `Any` and the table's `StringValue` decoded back.
    fn decoded(document: &[u8]) -> (TypedExtensionConfig, Any) {
        let response = DiscoveryResponse::decode(document).unwrap();
        assert_eq!(response.resources.len(), 1);
        assert_eq!(response.resources[0].type_url, TYPED_EXTENSION_CONFIG);
        let resource = TypedExtensionConfig::decode(&response.resources[0].value[..]).unwrap();
        let typed = resource.typed_config.clone().unwrap();
        (resource, typed)
    }

    fn table_of(any: &Any) -> String {
        assert_eq!(any.type_url, STRING_VALUE);
        StringValue::decode(&any.value[..]).unwrap().value
    }

    #[test]
    fn the_wasm_form_carries_the_vm_the_plugin_and_the_table() {
        let filter = Filter::Wasm {
            name: "switchyard",
            runtime: "envoy.wasm.runtime.v8",
            filename: "/w/f.wasm",
        };
        let (resource, typed) = decoded(&ecds_response("switchyard", filter, "{\"version\":1}"));
        assert_eq!(resource.name, "switchyard");
        assert_eq!(typed.type_url, WASM_FILTER);
        let plugin = Wasm::decode(&typed.value[..]).unwrap().config.unwrap();
        assert_eq!(
            (plugin.name.as_str(), plugin.root_id.as_str()),
            ("switchyard", "switchyard")
        );
        let vm = plugin.vm_config.unwrap();
        assert_eq!(
            (vm.vm_id.as_str(), vm.runtime.as_str()),
            ("switchyard", "envoy.wasm.runtime.v8")
        );
        assert_eq!(vm.code.unwrap().local.unwrap().filename, "/w/f.wasm");
        assert_eq!(table_of(&plugin.configuration.unwrap()), "{\"version\":1}");
    }

    #[test]
    fn the_module_form_carries_the_module_kept_loaded_its_filter_and_the_table() {
        let filter = Filter::Module {
            module: "switchyard_module",
            filter_name: "switchyard",
        };
        let (resource, typed) = decoded(&ecds_response("switchyard", filter, "{}"));
        assert_eq!(resource.name, "switchyard");
        assert_eq!(typed.type_url, DYNAMIC_MODULE_FILTER);
        let config = DynamicModuleFilter::decode(&typed.value[..]).unwrap();
        let module = config.dynamic_module_config.unwrap();
        assert_eq!(module.name, "switchyard_module");
        assert!(module.do_not_close);
        assert_eq!(config.filter_name, "switchyard");
        assert_eq!(table_of(&config.filter_config.unwrap()), "{}");
    }

    #[test]
    fn field_numbers_are_envoys() {
        // `DynamicModuleConfig.do_not_close` is field 3 (2 is reserved): tag (3 << 3 | 0) = 0x18.
        let module = DynamicModuleConfig {
            name: String::new(),
            do_not_close: true,
        };
        assert_eq!(module.encode_to_vec(), [0x18, 1]);
        // `PluginConfig.configuration` is field 4 (length-delimited: 0x22), `vm_config` field 3 (0x1a).
        let plugin = PluginConfig {
            vm_config: Some(VmConfig::default()),
            configuration: Some(Any::default()),
            ..PluginConfig::default()
        };
        assert_eq!(plugin.encode_to_vec(), [0x1a, 0, 0x22, 0]);
    }
}
