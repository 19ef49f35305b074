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

use serde_json::{json, Value};
use switchyard_table::format::ACCESS_LOG_FORMAT;

use crate::https::{Https, Presented, Served, TlsRange};
use crate::route_config::GatewayRoutes;

/// The SDS name of the default certificate.
pub const DEFAULT_CERTIFICATE: &str = "switchyard-default-certificate";

/// How the HTTPS listener reaches the rest of the gateway's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpsOptions {
    /// The HTTP filter's name (`--filter-name`: the ECDS resource's name).
    pub filter_name: String,
    /// The ECDS file of the HTTP filter (the plain listener's `config_discovery` source).
    pub ecds_path: String,
    /// The filter configuration's type URL (the wasm filter's or the dynamic module's).
    pub filter_type_url: String,
    /// The routes of the HTTP it serves, as the plain listener's: to the cluster the filter names
    /// in the cluster header, with a route per rule's timeouts and retries.
    pub routes: GatewayRoutes,
    /// The folder of the SDS files.
    pub sds_folder: String,
    /// `--reject-unknown-sni` (ROUTING.md §8.1.2): no default chain, so a handshake without SNI or
    /// naming no host fails instead of getting the default certificate.
    pub reject_unknown_sni: bool,
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

/// What the HTTPS listener of an LDS document answers a handshake with (`explain --sni`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SniAnswer {
    /// The filter chain (`https-<first host>`, or `https-default`).
    pub chain: String,
    /// The SDS name of the certificate (`namespace/name`, or [`DEFAULT_CERTIFICATE`]); `None`: the
    /// handshake fails (a VirtualServer's unusable Secret, §8.6).
    pub certificate: Option<String>,
    /// The TLS versions accepted (`TLSv1_2`–`TLSv1_3`).
    pub versions: (String, String),
}

/// The chain and certificate the HTTPS listener of `document` (an LDS document written with
/// `--sds-dir`) gives a handshake naming `sni` (`None`: no SNI), as Envoy chooses: the chain whose
/// `server_names` match, else the default chain. `None` when the document has no HTTPS listener, or
/// `sni` is passed through (a TransportServer's host: [`crate::lds::sni_route`]).
pub fn sni_answer(document: &Value, sni: Option<&str>) -> Option<SniAnswer> {
    let terminates = |c: &Value| {
        c.get("transport_socket").is_some() || c["filters"][0]["name"] == "envoy.filters.network.direct_response"
    };
    if let Some(host) = sni {
        if crate::lds::sni_chain(document, host, crate::lds::proxies_tcp).is_some() {
            return None;
        }
        if let Some((_, chain)) = crate::lds::sni_chain(document, host, terminates) {
            return Some(answer_of(chain));
        }
    }
    let listeners = document["resources"].as_array()?;
    let https = listeners.iter().find(|l| l["name"] == crate::lds::HTTPS_LISTENER)?;
    match https.get("default_filter_chain") {
        Some(chain) => Some(answer_of(chain)),
        // `--reject-unknown-sni`: no chain, the handshake fails.
        None => Some(SniAnswer {
            chain: "none".to_owned(),
            certificate: None,
            versions: (String::new(), String::new()),
        }),
    }
}

fn answer_of(chain: &Value) -> SniAnswer {
    let context = &chain["transport_socket"]["typed_config"]["common_tls_context"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    SniAnswer {
        chain: text(&chain["name"]),
        certificate: context["tls_certificate_sds_secret_configs"][0]["name"]
            .as_str()
            .map(str::to_owned),
        versions: (
            text(&context["tls_params"]["tls_minimum_protocol_version"]),
            text(&context["tls_params"]["tls_maximum_protocol_version"]),
        ),
    }
}

/// The SDS name of a certificate presented (`None`: no certificate, the handshake fails).
fn sds_name(presented: Option<Presented<'_>>) -> Option<String> {
    presented.map(|presented| match presented {
        Presented::Secret(secret) => secret.to_string(),
        Presented::Made => DEFAULT_CERTIFICATE.to_owned(),
    })
}

/// The filter chains of the terminated hosts of `https` (passthrough hosts excluded: `taken`),
/// and the default chain.
pub fn chains(https: &Https, taken: &[&str], options: &HttpsOptions) -> (Vec<Value>, Value) {
    let default_name = sds_name(https.presented(&Served::Default)).unwrap_or_else(|| DEFAULT_CERTIFICATE.to_owned());
    // §8.1.5: the hosts a connection that got the default certificate may not ask for.
    let strict: Vec<&str> = (https.hosts.iter())
        .filter(|h| h.strict_sni && !taken.contains(&h.host.as_str()))
        .map(|h| h.host.as_str())
        .collect();
    let chains = (https.groups(taken).into_iter())
        .map(|((presented, range), hosts)| {
            let mut chain = match sds_name(presented) {
                // A connection that got a host's own certificate asks only for the hosts served
                // with the same certificate; the default certificate's chains are as the default.
                Some(name) if name != default_name => {
                    let served = same_certificate(https, &name);
                    terminating_chain(&name, range, Misdirected::AllBut(&served), options)
                }
                Some(name) => terminating_chain(&name, range, Misdirected::Only(&strict), options),
                None => refusing_chain(),
            };
            chain["name"] = json!(format!("https-{}", hosts[0]));
            chain["filter_chain_match"] = json!({ "server_names": hosts });
            chain
        })
        .collect();
    let mut default = terminating_chain(&default_name, TlsRange::default(), Misdirected::Only(&strict), options);
    default["name"] = json!("https-default");
    (chains, default)
}

/// The hosts served with certificate `sds_name`, whatever their range.
fn same_certificate<'h>(https: &'h Https, sds_name: &str) -> Vec<&'h str> {
    (https.hosts.iter())
        .filter(|h| self::sds_name(https.presented(&h.served)).as_deref() == Some(sds_name))
        .map(|h| h.host.as_str())
        .collect()
}

/// Which `:authority` a chain's connections answer 421 to (ROUTING.md §8.1.5).
#[derive(Debug, Clone, Copy)]
enum Misdirected<'h> {
    /// Every host but these (served with the chain's certificate).
    AllBut(&'h [&'h str]),
    /// Only these (HTTPProxy hosts without `enableFallbackCertificate`, on the default certificate).
    Only(&'h [&'h str]),
}

/// The answer to a misdirected request: Contour's (`FilterMisdirectedRequests`).
fn misdirected_host(domains: &[&str]) -> Value {
    json!({
        "name": "misdirected",
        "domains": domains,
        "routes": [{
            "match": { "prefix": "/" },
            "direct_response": { "status": 421, "body": { "inline_string": "misdirected request: this connection's certificate is not this host's\n" } }
        }]
    })
}

/// The route configuration of a terminating chain: the filter's routes for the hosts its
/// connections may ask for, 421 for the others.
fn route_config(misdirected: Misdirected<'_>, routes: &GatewayRoutes) -> Value {
    let routed = |name: &str, domains: &[&str]| json!({ "name": name, "domains": domains, "routes": routes.routes() });
    let virtual_hosts = match misdirected {
        Misdirected::AllBut(served) => vec![routed("served", served), misdirected_host(&["*"])],
        Misdirected::Only([]) => vec![routed("all", &["*"])],
        Misdirected::Only(refused) => vec![misdirected_host(refused), routed("all", &["*"])],
    };
    json!({ "name": "switchyard", "virtual_hosts": virtual_hosts })
}

/// A chain terminating TLS with certificate `name` at `range`, then HTTP as the plain listener
/// (but a misdirected request's 421).
fn terminating_chain(name: &str, range: TlsRange, misdirected: Misdirected<'_>, options: &HttpsOptions) -> Value {
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
        "filters": [http_connection_manager(options, route_config(misdirected, &options.routes))],
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

/// The access log every listener of the gateway writes to Envoy's standard output: the request,
/// its answer and the rule and resource that won it ([`ACCESS_LOG_FORMAT`]).
pub fn stdout_access_log() -> Value {
    json!({
        "name": "envoy.access_loggers.stdout",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog",
            "log_format": { "text_format_source": { "inline_string": ACCESS_LOG_FORMAT } },
        }
    })
}

/// The plain listener's HTTP connection manager (`envoy.yaml`, `deploy/`): the same path
/// normalisation, the filter from the same ECDS source, `route_config` (the route to the cluster
/// the filter names). A host's port is not part of its match (`strip_any_host_port`).
fn http_connection_manager(options: &HttpsOptions, route_config: Value) -> Value {
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
            "access_log": [stdout_access_log()],
            // The client's address is the connection's peer, never a client's own
            // x-forwarded-for (Envoy's default, false, believes it): address ranges read it.
            "use_remote_address": true,
            "normalize_path": true,
            "merge_slashes": true,
            "path_with_escaped_slashes_action": "UNESCAPE_AND_FORWARD",
            "strip_any_host_port": true,
            "route_config": route_config,
            "http_filters": [
                {
                    "name": options.filter_name,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::https::{HostTls, SecretRef, TlsVersion};
    use crate::l4::{L4Route, L4Routes};
    use crate::lds::{listeners, LdsOptions};

    fn host(name: &str, served: Served, versions: TlsRange) -> HostTls {
        HostTls {
            host: name.to_owned(),
            served,
            versions,
            strict_sni: name == "p.example.com",
            decided_by: "Ingress/default/web".to_owned(),
            why: String::new(),
        }
    }

    fn secret(name: &str) -> Served {
        Served::Secret {
            secret: SecretRef {
                namespace: "default".to_owned(),
                name: name.to_owned(),
            },
            fingerprint: name.to_owned(),
        }
    }

    /// The HTTPS listener's options of these tests.
    fn options(reject_unknown_sni: bool) -> LdsOptions {
        LdsOptions {
            https: Some(HttpsOptions {
                filter_name: "switchyard".to_owned(),
                ecds_path: "/run/ecds/filter.pb".to_owned(),
                filter_type_url: "t".to_owned(),
                routes: GatewayRoutes {
                    cluster_header: "x-route-cluster".to_owned(),
                    ..GatewayRoutes::default()
                },
                sds_folder: "/run/sds".to_owned(),
                reject_unknown_sni,
            }),
            ..LdsOptions::default()
        }
    }

    fn document() -> Value {
        let https = Https {
            hosts: vec![
                host("*.example.com", secret("star"), TlsRange::default()),
                host("a.example.com", secret("a"), TlsRange::default()),
                host("b.example.com", secret("a"), TlsRange::default()),
                host(
                    "new.example.com",
                    secret("a"),
                    TlsRange {
                        min: TlsVersion::V1_3,
                        max: TlsVersion::V1_3,
                    },
                ),
                host("vs.example.com", Served::Refused, TlsRange::default()),
                host("p.example.com", secret("p"), TlsRange::default()),
            ],
            ..Https::default()
        };
        let routes = L4Routes {
            passthrough: vec![L4Route::to_service("default", Some("pass.example.com"), "tls", 443)],
            listeners: vec![],
        };
        listeners(&routes, &https, &options(false))
    }

    #[test]
    fn hosts_sharing_a_certificate_and_range_share_a_chain_and_the_sds_file_is_named_by_the_secret() {
        let document = document();
        let listener = &document["resources"][0];
        assert_eq!(listener["name"], crate::lds::HTTPS_LISTENER);
        let chains = listener["filter_chains"].as_array().unwrap();
        let names: Vec<&Value> = chains
            .iter()
            .map(|c| &c["filter_chain_match"]["server_names"])
            .collect();
        assert!(
            names.contains(&&serde_json::json!(["a.example.com", "b.example.com"])),
            "{names:?}"
        );
        assert!(names.contains(&&serde_json::json!(["new.example.com"])), "{names:?}");
        let a = sni_answer(&document, Some("b.example.com")).unwrap();
        assert_eq!(a.certificate.as_deref(), Some("default/a"));
        let sds = &chains.iter().find(|c| c["name"] == "https-a.example.com").unwrap()["transport_socket"]
            ["typed_config"]["common_tls_context"]["tls_certificate_sds_secret_configs"][0]["sds_config"]
            ["path_config_source"]["path"];
        assert_eq!(sds, "/run/sds/default_a.json");
    }

    #[test]
    fn a_handshake_gets_the_exact_host_then_the_wildcard_then_the_default_chain() {
        let document = document();
        let certificate = |sni: Option<&str>| sni_answer(&document, sni).and_then(|a| a.certificate);
        assert_eq!(certificate(Some("a.example.com")).as_deref(), Some("default/a"));
        assert_eq!(certificate(Some("c.example.com")).as_deref(), Some("default/star"));
        assert_eq!(certificate(Some("other.org")).as_deref(), Some(DEFAULT_CERTIFICATE));
        assert_eq!(certificate(None).as_deref(), Some(DEFAULT_CERTIFICATE));
        let versions = sni_answer(&document, Some("new.example.com")).unwrap().versions;
        assert_eq!(versions, ("TLSv1_3".to_owned(), "TLSv1_3".to_owned()));
    }

    /// The virtual hosts of a chain: (name, domains, status of its last route).
    fn virtual_hosts(chain: &Value) -> Vec<(String, Vec<String>, u64)> {
        let config = &chain["filters"][0]["typed_config"]["route_config"]["virtual_hosts"];
        (config.as_array().unwrap().iter())
            .map(|v| {
                let domains = v["domains"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_str().unwrap().to_owned())
                    .collect();
                let last = v["routes"].as_array().unwrap().last().unwrap();
                (
                    v["name"].as_str().unwrap().to_owned(),
                    domains,
                    last["direct_response"]["status"].as_u64().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn a_connection_with_a_hosts_own_certificate_answers_421_for_hosts_of_another_certificate() {
        let document = document();
        let listener = &document["resources"][0];
        let chain = (listener["filter_chains"].as_array().unwrap().iter())
            .find(|c| c["name"] == "https-a.example.com")
            .unwrap();
        let hosts = virtual_hosts(chain);
        let served = ["a.example.com", "b.example.com", "new.example.com"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(
            hosts,
            [
                ("served".to_owned(), served, 404),
                ("misdirected".to_owned(), vec!["*".to_owned()], 421)
            ]
        );
        assert_eq!(chain["filters"][0]["typed_config"]["strip_any_host_port"], true);
    }

    #[test]
    fn the_default_certificate_answers_421_only_for_hosts_that_refuse_the_fallback() {
        let document = document();
        let hosts = virtual_hosts(&document["resources"][0]["default_filter_chain"]);
        assert_eq!(
            hosts,
            [
                ("misdirected".to_owned(), vec!["p.example.com".to_owned()], 421),
                ("all".to_owned(), vec!["*".to_owned()], 404)
            ]
        );
    }

    #[test]
    fn rejecting_unknown_sni_leaves_no_default_chain() {
        let mut document = document();
        let listener = &mut document["resources"][0];
        assert!(listener.get("default_filter_chain").is_some());
        let https = Https::default();
        let rejecting = listeners(&L4Routes::default(), &https, &options(true));
        assert!(rejecting["resources"][0].get("default_filter_chain").is_none());
        assert_eq!(sni_answer(&rejecting, None).and_then(|a| a.certificate), None);
    }

    #[test]
    fn a_refused_host_has_no_certificate_and_a_passthrough_host_is_not_terminated() {
        let document = document();
        let refused = sni_answer(&document, Some("vs.example.com")).unwrap();
        assert_eq!(refused.certificate, None);
        assert_eq!(sni_answer(&document, Some("pass.example.com")), None);
    }

    #[test]
    fn an_sds_document_holds_one_secret_named_as_the_listener_names_it() {
        let text = sds_document("prod/shop", b"CHAIN", b"KEY");
        let document: Value = serde_json::from_str(&text).unwrap();
        let resources = document["resources"].as_array().unwrap();
        assert_eq!(resources.len(), 1, "Envoy's file SDS takes one secret per file");
        assert_eq!(resources[0]["name"], "prod/shop");
        assert_eq!(resources[0]["tls_certificate"]["private_key"]["inline_string"], "KEY");
        assert_eq!(sds_file_name("prod/shop"), "prod_shop.json");
    }
}
