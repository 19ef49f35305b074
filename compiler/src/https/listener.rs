//! The HTTPS listener's filter chains (ROUTING.md §8.1) and the SDS documents of its certificates,
//! for Envoy's LDS and SDS from files ([`crate::lds`] puts the chains in the listener that also
//! passes TLS through).
//!
//! - One filter chain per certificate and TLS range, its `server_names` the hosts served with it,
//!   terminating TLS with the certificate named by SDS, then the same HTTP connection manager as
//!   the plain listener: the HTTP filter from the same ECDS source, the route to the cluster the
//!   filter names.
//! - The default chain: the default certificate (§8.1.2), for a handshake without SNI or with one
//!   no chain names.
//! - A host whose handshakes must fail (§8.6, a VirtualServer's unusable Secret): a chain that
//!   answers its ClientHello by closing the connection.
//!
//! Each certificate is its own SDS file (`<namespace>_<name>.json` in the SDS folder: Envoy's file
//! SDS takes one secret per file), replaced atomically: a renewed Secret reaches new handshakes
//! without the listener changing, so no connection drains.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::https::{Https, Served, TlsRange};

/// The SDS name of the default certificate.
pub const DEFAULT_CERTIFICATE: &str = "switchyard-default-certificate";

/// How the HTTPS listener reaches the rest of the gateway's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpsOptions {
    /// The ECDS file of the HTTP filter (the plain listener's `config_discovery` source).
    pub ecds_path: String,
    /// The filter configuration's type URL (the wasm filter's or the dynamic module's).
    pub filter_type_url: String,
    /// The header the filter sets to the winning cluster.
    pub cluster_header: String,
    /// The folder of the SDS files.
    pub sds_folder: String,
}

/// The SDS file name of a certificate (`namespace_name.json`; Kubernetes names hold no `_`).
pub fn sds_file_name(sds_name: &str) -> String {
    format!("{}.json", sds_name.replace('/', "_"))
}

/// The SDS `DiscoveryResponse` holding one certificate: its PEM chain and key, inline.
pub fn sds_document(sds_name: &str, chain_pem: &[u8], key_pem: &[u8]) -> String {
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let document = json!({
        "resources": [{
            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
            "name": sds_name,
            "tls_certificate": {
                "certificate_chain": { "inline_string": text(chain_pem) },
                "private_key": { "inline_string": text(key_pem) },
            }
        }]
    });
    // A `Value` of strings always serializes.
    serde_json::to_string_pretty(&document).unwrap_or_default() + "\n"
}

/// The SDS name of what a chain is served with (`None`: no certificate, the handshake fails);
/// `default` is what [`Served::Default`] stands for.
fn sds_name(served: &Served, default: &Served) -> Option<String> {
    match served {
        Served::Secret { secret, .. } => Some(secret.to_string()),
        Served::Default => match default {
            Served::Secret { .. } => sds_name(default, &Served::Default),
            Served::Default | Served::Refused => Some(DEFAULT_CERTIFICATE.to_owned()),
        },
        Served::Refused => None,
    }
}

/// The filter chains of the terminated hosts of `https` (passthrough hosts excluded: `taken`),
/// and the default chain.
pub fn chains(https: &Https, taken: &[&str], options: &HttpsOptions) -> (Vec<Value>, Value) {
    let mut groups: BTreeMap<(Option<String>, TlsRange), Vec<&str>> = BTreeMap::new();
    for host in &https.hosts {
        if taken.contains(&host.host.as_str()) {
            continue;
        }
        groups
            .entry((sds_name(&host.served, &https.default), host.versions))
            .or_default()
            .push(&host.host);
    }
    let chains = (groups.into_iter())
        .map(|((name, range), hosts)| {
            let mut chain = match name {
                Some(name) => terminating_chain(&name, range, options),
                None => refusing_chain(),
            };
            chain["name"] = json!(format!("https-{}", hosts[0]));
            chain["filter_chain_match"] = json!({ "server_names": hosts });
            chain
        })
        .collect();
    let default_name = sds_name(&Served::Default, &https.default).unwrap_or_else(|| DEFAULT_CERTIFICATE.to_owned());
    let mut default = terminating_chain(&default_name, TlsRange::default(), options);
    default["name"] = json!("https-default");
    (chains, default)
}

/// A chain terminating TLS with certificate `name` at `range`, then HTTP as the plain listener.
fn terminating_chain(name: &str, range: TlsRange, options: &HttpsOptions) -> Value {
    json!({
        "transport_socket": {
            "name": "envoy.transport_sockets.tls",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
                "common_tls_context": {
                    "alpn_protocols": ["h2", "http/1.1"],
                    "tls_params": {
                        "tls_minimum_protocol_version": range.min.envoy(),
                        "tls_maximum_protocol_version": range.max.envoy(),
                    },
                    "tls_certificate_sds_secret_configs": [{
                        "name": name,
                        "sds_config": {
                            "path_config_source": {
                                "path": format!("{}/{}", options.sds_folder, sds_file_name(name)),
                                "watched_directory": { "path": options.sds_folder },
                            },
                            "resource_api_version": "V3",
                        }
                    }]
                }
            }
        },
        "filters": [http_connection_manager(options)],
    })
}

/// A chain that closes the connection on its ClientHello: no certificate, no answer.
fn refusing_chain() -> Value {
    json!({
        "filters": [{
            "name": "envoy.filters.network.direct_response",
            "typed_config": { "@type": "type.googleapis.com/envoy.extensions.filters.network.direct_response.v3.Config" }
        }]
    })
}

/// The plain listener's HTTP connection manager (`envoy.yaml`, `deploy/`): the same path
/// normalisation, the filter from the same ECDS source, the route to the cluster it names.
pub fn http_connection_manager(options: &HttpsOptions) -> Value {
    let folder = options
        .ecds_path
        .rsplit_once('/')
        .map_or(".", |(folder, _)| folder)
        .to_owned();
    json!({
        "name": "envoy.filters.network.http_connection_manager",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
            "stat_prefix": "ingress_https",
            "normalize_path": true,
            "merge_slashes": true,
            "path_with_escaped_slashes_action": "UNESCAPE_AND_FORWARD",
            "route_config": {
                "name": "switchyard",
                "virtual_hosts": [{
                    "name": "all",
                    "domains": ["*"],
                    "routes": [
                        {
                            "match": { "prefix": "/", "headers": [{ "name": options.cluster_header, "present_match": true }] },
                            "route": { "cluster_header": options.cluster_header }
                        },
                        {
                            "match": { "prefix": "/" },
                            "direct_response": { "status": 404, "body": { "inline_string": "no route\n" } }
                        }
                    ]
                }]
            },
            "http_filters": [
                {
                    "name": "switchyard",
                    "config_discovery": {
                        "config_source": {
                            "path_config_source": {
                                "path": options.ecds_path,
                                "watched_directory": { "path": folder },
                            }
                        },
                        "type_urls": [options.filter_type_url],
                    }
                },
                {
                    "name": "envoy.filters.http.router",
                    "typed_config": { "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router" }
                }
            ]
        }
    })
}
