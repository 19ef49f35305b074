//! The protobuf messages, declared by hand with `prost`'s derive: only the fields Switchyard sets,
//! under the field numbers of Envoy's API (`api/envoy/...` in the Envoy repository) and of
//! protobuf's well-known types. A `oneof` of which Switchyard sets one member is declared as that
//! member alone: the bytes are the same.

/// `google.protobuf.Any`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Any {
    #[prost(string, tag = "1")]
    pub type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// `google.protobuf.StringValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringValue {
    #[prost(string, tag = "1")]
    pub value: String,
}

/// `envoy.service.discovery.v3.DiscoveryResponse`: what a `path_config_source` file holds, and
/// what the ADS server sends (with a nonce).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DiscoveryResponse {
    #[prost(string, tag = "1")]
    pub version_info: String,
    #[prost(message, repeated, tag = "2")]
    pub resources: Vec<Any>,
    #[prost(string, tag = "4")]
    pub type_url: String,
    #[prost(string, tag = "5")]
    pub nonce: String,
}

/// `envoy.service.discovery.v3.DiscoveryRequest`: what Envoy asks an ADS server for, and its ACK
/// (the version and nonce it applied) or NACK (`error_detail`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DiscoveryRequest {
    #[prost(string, tag = "1")]
    pub version_info: String,
    #[prost(message, optional, tag = "2")]
    pub node: Option<Node>,
    #[prost(string, repeated, tag = "3")]
    pub resource_names: Vec<String>,
    #[prost(string, tag = "4")]
    pub type_url: String,
    #[prost(string, tag = "5")]
    pub response_nonce: String,
    #[prost(message, optional, tag = "6")]
    pub error_detail: Option<Status>,
}

/// `envoy.config.core.v3.Node`: who asks (its id and cluster only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Node {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, tag = "2")]
    pub cluster: String,
}

/// `google.rpc.Status`: why Envoy refused an update (its code and message only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}

/// `envoy.config.endpoint.v3.ClusterLoadAssignment`: a cluster's endpoints (EDS).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClusterLoadAssignment {
    #[prost(string, tag = "1")]
    pub cluster_name: String,
    #[prost(message, repeated, tag = "2")]
    pub endpoints: Vec<LocalityLbEndpoints>,
}

/// `envoy.config.endpoint.v3.LocalityLbEndpoints` (no locality).
#[derive(Clone, PartialEq, prost::Message)]
pub struct LocalityLbEndpoints {
    #[prost(message, repeated, tag = "2")]
    pub lb_endpoints: Vec<LbEndpoint>,
}

/// `envoy.config.endpoint.v3.LbEndpoint` (`host_identifier` is its `endpoint`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct LbEndpoint {
    #[prost(message, optional, tag = "1")]
    pub endpoint: Option<Endpoint>,
}

/// `envoy.config.endpoint.v3.Endpoint`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Endpoint {
    #[prost(message, optional, tag = "1")]
    pub address: Option<Address>,
}

/// `envoy.config.core.v3.Address` (its `socket_address`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Address {
    #[prost(message, optional, tag = "1")]
    pub socket_address: Option<SocketAddress>,
}

/// `envoy.config.core.v3.SocketAddress` (TCP; `port_specifier` is its `port_value`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SocketAddress {
    #[prost(string, tag = "2")]
    pub address: String,
    #[prost(uint32, tag = "3")]
    pub port_value: u32,
}

/// `envoy.config.core.v3.TypedExtensionConfig`: an ECDS resource.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypedExtensionConfig {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub typed_config: Option<Any>,
}

/// `envoy.config.core.v3.DataSource`, its `filename` member.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DataSource {
    #[prost(string, tag = "1")]
    pub filename: String,
}

/// `envoy.config.core.v3.AsyncDataSource`, its `local` member.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AsyncDataSource {
    #[prost(message, optional, tag = "1")]
    pub local: Option<DataSource>,
}

/// `envoy.extensions.wasm.v3.VmConfig`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct VmConfig {
    #[prost(string, tag = "1")]
    pub vm_id: String,
    #[prost(string, tag = "2")]
    pub runtime: String,
    #[prost(message, optional, tag = "3")]
    pub code: Option<AsyncDataSource>,
}

/// `envoy.extensions.wasm.v3.PluginConfig`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PluginConfig {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub root_id: String,
    /// The `vm` oneof's `vm_config`.
    #[prost(message, optional, tag = "3")]
    pub vm_config: Option<VmConfig>,
    #[prost(message, optional, tag = "4")]
    pub configuration: Option<Any>,
}

/// `envoy.extensions.filters.http.wasm.v3.Wasm`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Wasm {
    #[prost(message, optional, tag = "1")]
    pub config: Option<PluginConfig>,
}

/// `envoy.extensions.dynamic_modules.v3.DynamicModuleConfig`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DynamicModuleConfig {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(bool, tag = "3")]
    pub do_not_close: bool,
}

/// `envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DynamicModuleFilter {
    #[prost(message, optional, tag = "1")]
    pub dynamic_module_config: Option<DynamicModuleConfig>,
    #[prost(string, tag = "2")]
    pub filter_name: String,
    #[prost(message, optional, tag = "3")]
    pub filter_config: Option<Any>,
}
