//! The certificates of VirtualServer hosts (ROUTING.md §8.6): `tls.secret` in the VirtualServer's
//! namespace, of type `kubernetes.io/tls` only; a missing or unusable one makes handshakes naming
//! the host fail (NGINX "will break any attempt to establish a TLS connection"), and the
//! VirtualServer routes on port 80 with a warning; `tls` without `secret`: the default.

use std::sync::Arc;

use crate::https::secrets::TLS_ONLY;
use crate::https::{Owners, SecretRef, Served, Stage, TlsRange};
use crate::model::normalize_host;
use crate::objects::nginx::VirtualServer;
use crate::objects::{key_of, Kind};
use crate::status::{ConditionKind, Reason};

/// Every VirtualServer host's certificate.
pub(super) fn choose(servers: &[Arc<VirtualServer>], owners: &Owners, stage: &mut Stage<'_>) {
    for server in servers {
        let key = key_of(Kind::VirtualServer, &server.metadata);
        let host = normalize_host(&server.spec.host);
        // The host's owner: its rules are the VirtualServer's or its VirtualServerRoutes'.
        let owns = owners
            .get(&host)
            .is_some_and(|keys| keys.iter().any(|k| *k == key || k.kind == Kind::VirtualServerRoute));
        let Some(tls) = server.spec.tls.as_ref().filter(|_| owns) else {
            continue;
        };
        let name = tls.secret.as_deref().unwrap_or_default();
        if name.is_empty() {
            continue;
        }
        let secret = SecretRef {
            namespace: key.namespace.clone(),
            name: name.to_owned(),
        };
        let field = "spec.tls.secret";
        match stage.secrets.certificate(&secret.namespace, &secret.name, TLS_ONLY) {
            Ok(cert) => {
                stage.check_served(&key, field, &secret, &cert, &host);
                let why = format!("{field} of {}", key.display());
                stage.serve(&host, Stage::served(&secret, &cert), TlsRange::default(), &key, why);
            }
            Err(problem) => {
                stage.find(
                    &key,
                    (ConditionKind::Warning, Reason::TLSSecretNotValid),
                    field,
                    format!(
                        "TLS secret {} is invalid: {problem}; handshakes naming {host} fail, port 80 still routes",
                        secret.name
                    ),
                );
                let why = format!("{field} of {} names an unusable Secret", key.display());
                stage.serve(&host, Served::Refused, TlsRange::default(), &key, why);
            }
        }
    }
}
