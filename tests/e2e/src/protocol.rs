//! Backends that speak what a backend protocol asks (issue "The upstream side"): a second Envoy in
//! front of a plain [`crate::Backend`], terminating TLS with a given certificate on one port and
//! taking HTTP/2 only on another, telling the backend what it saw.

use crate::https::TestCertificate;
use crate::{required_path, Backend};

/// A second Envoy as the backends a protocol needs: on `tls` it terminates TLS (with `certificate`;
/// ALPN h2 and http/1.1), on `h2c` it takes HTTP/2 only; both hand the request to `backend`
/// with the protocol and TLS version they saw as request headers (`x-seen-protocol`, `x-seen-tls`).
pub fn protocol_backends(
    backend: &Backend,
    (tls, h2c): (u16, u16),
    certificate: &TestCertificate,
) -> crate::process::EnvoyProcess {
    let dir = crate::fresh_dir("protocol-backends");
    let indent = |pem: &str| {
        pem.lines()
            .map(|l| format!("                    {l}\n"))
            .collect::<String>()
    };
    let manager = |codec: &str| {
        format!(
            r#"      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: backend
          codec_type: {codec}
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              request_headers_to_add:
              - header: {{key: x-seen-protocol, value: "%PROTOCOL%"}}
              - header: {{key: x-seen-tls, value: "%DOWNSTREAM_TLS_VERSION%"}}
              routes: [{{match: {{prefix: /}}, route: {{cluster: backend}}}}]
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {{"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}
"#
        )
    };
    let bootstrap = format!(
        r#"admin: {{address: {{socket_address: {{address: 127.0.0.1, port_value: 0}}}}}}
static_resources:
  listeners:
  - name: tls
    address: {{socket_address: {{address: 127.0.0.1, port_value: {tls}}}}}
    filter_chains:
    - transport_socket:
        name: envoy.transport_sockets.tls
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
          common_tls_context:
            alpn_protocols: [h2, http/1.1]
            tls_certificates:
            - certificate_chain:
                inline_string: |
{chain}              private_key:
                inline_string: |
{key}      filters:
{auto}  - name: h2c
    address: {{socket_address: {{address: 127.0.0.1, port_value: {h2c}}}}}
    filter_chains:
    - filters:
{http2}  clusters:
{cluster}"#,
        chain = indent(&certificate.chain_pem),
        key = indent(&certificate.key_pem),
        auto = manager("AUTO"),
        http2 = manager("HTTP2"),
        cluster = crate::static_cluster("backend", backend.addr),
    );
    std::fs::write(dir.join("envoy.yaml"), bootstrap).unwrap();
    let listening = |p: &crate::process::EnvoyProcess| p.stat("listener_manager.total_listeners_active") == Some(2);
    crate::process::EnvoyProcess::start(&required_path("ENVOY_BIN"), dir, 1, listening)
}
