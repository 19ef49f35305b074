//! The HTTPS hosts (ROUTING.md §8) on an Istio ingress gateway: the Gateway's HTTPS servers and the
//! Secrets they name.
//!
//! Istio's gateway reads a server's `credentialName` only from its own namespace (istiod's
//! `pilot/pkg/xds/sds.go` refuses a `kubernetes://` Secret of another namespace, and a
//! `kubernetes-gateway://` one needs the Gateway API's ReferenceGrant): the sidecar copies each
//! certificate served into the gateway's namespace under the name [`credential_name`] gives it,
//! and this module writes the servers that name the copies (`docs/deploy-istio.md`, "HTTPS").
//!
//! - One `HTTPS` server per certificate and TLS range (the groups of [`Https::groups`]), its hosts
//!   those served with it, `tls.mode: SIMPLE`, the range as `minProtocolVersion` and
//!   `maxProtocolVersion`.
//! - The default server (hosts `*`, which istiod turns into a filter chain matching any SNI): the
//!   default certificate (§8.1.2), for a handshake without SNI or naming a host no other server
//!   has, and for the hosts served with the default; none with `--reject-unknown-sni`, and none
//!   while no host has a certificate or range of its own (a gateway whose resources ask nothing of
//!   HTTPS gets no HTTPS server from us, so one written by hand keeps its port).
//! - A host whose handshakes must fail (§8.6) has no server of its own: with the default server
//!   its handshake gets the default certificate, which does not name it (Istio's Gateway has no
//!   way to refuse one name; `docs/deploy-istio.md` says so).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::https::{Https, Presented, SecretRef, Served, TlsRange, TlsVersion};
use crate::order::fnv1a;

/// The name of the copy of the default certificate made at start (§8.1.2).
pub const MADE_CREDENTIAL: &str = "switchyard.default-certificate";

/// The longest name Kubernetes gives an object (a DNS subdomain).
const LONGEST_NAME: usize = 253;

/// The name of the copy of `secret` in the gateway's namespace: `switchyard.<namespace>.<name>` (a
/// namespace has no dot, so two Secrets never share a copy), or `switchyard.<hash>` when that is
/// longer than a Secret's name may be.
pub fn credential_name(secret: &SecretRef) -> String {
    let name = format!("switchyard.{}.{}", secret.namespace, secret.name);
    if name.len() <= LONGEST_NAME {
        return name;
    }
    format!("switchyard.{:016x}", fnv1a(secret.to_string().as_bytes()))
}

/// The copy a credential is made of.
fn credential(presented: Presented<'_>) -> String {
    match presented {
        Presented::Secret(secret) => credential_name(secret),
        Presented::Made => MADE_CREDENTIAL.to_owned(),
    }
}

/// Where the HTTPS servers are and whether they have a default one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IstioHttpsOptions {
    /// Their port.
    pub port: u16,
    /// `--reject-unknown-sni`: no default server.
    pub reject_unknown_sni: bool,
}

/// The HTTPS servers for the terminated hosts of `https` (those of `taken`, passed through, left
/// out) and the default server, and the copies they name: each copy's name and what it holds.
pub fn servers<'h>(
    https: &'h Https,
    taken: &[&str],
    options: IstioHttpsOptions,
) -> (Vec<Value>, BTreeMap<String, Presented<'h>>) {
    let mut groups: Vec<(Presented<'h>, TlsRange, Vec<&str>)> = (https.groups(taken).into_iter())
        .filter_map(|((presented, range), hosts)| Some((presented?, range, hosts)))
        .collect();
    if !options.reject_unknown_sni && !https.hosts.is_empty() {
        if let Some(default) = https.presented(&Served::Default) {
            groups.push((default, TlsRange::default(), vec!["*"]));
        }
    }
    let mut copies = BTreeMap::new();
    let mut servers = Vec::new();
    for (presented, range, hosts) in groups {
        let name = credential(presented);
        servers.push(json!({
            "port": { "number": options.port, "name": format!("https-{}", servers.len()), "protocol": "HTTPS" },
            "hosts": hosts,
            "tls": {
                "mode": "SIMPLE",
                "credentialName": name,
                "minProtocolVersion": version(range.min),
                "maxProtocolVersion": version(range.max),
            },
        }));
        copies.insert(name, presented);
    }
    (servers, copies)
}

/// Istio's name of a TLS version.
fn version(version: TlsVersion) -> &'static str {
    match version {
        TlsVersion::V1_0 => "TLSV1_0",
        TlsVersion::V1_1 => "TLSV1_1",
        TlsVersion::V1_2 => "TLSV1_2",
        TlsVersion::V1_3 => "TLSV1_3",
    }
}
