//! The certificates of HTTPProxy roots (ROUTING.md §8.5). Whether a root's `tls` is valid at all
//! is the HTTPProxy processor's decision ([`crate::httpproxy`], through [`check`]): an invalid one
//! routes nothing, so every root that reaches this stage has a usable certificate.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::https::certificate::Certificate;
use crate::https::secrets::{SecretProblem, Secrets, TLS_OR_OPAQUE};
use crate::https::{Owners, SecretRef, Stage, TlsRange, TlsVersion};
use crate::model::normalize_host;
use crate::objects::{key_of, HTTPProxy, Kind, VirtualHostTls};
use crate::status::Reason;

/// What a root's `tls` asks, once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootTls {
    /// No `tls`: the root is not served on HTTPS.
    None,
    /// Terminated with this Secret's certificate, at this range.
    Terminated(SecretRef, Arc<Certificate>, TlsRange),
    /// Passed through undecrypted (`passthrough: true`).
    Passthrough,
}

/// Checks a root's `tls` (§8.5): `Err` is the reason and message that make the proxy invalid.
pub fn check(
    namespace: &str,
    tls: Option<&VirtualHostTls>,
    default_certificate: bool,
    secrets: &mut Secrets<'_>,
) -> Result<RootTls, (Reason, String)> {
    let Some(tls) = tls else { return Ok(RootTls::None) };
    let name = tls.secret_name.as_deref().unwrap_or_default();
    match (name.is_empty(), tls.passthrough) {
        (true, true) => return Ok(RootTls::Passthrough),
        (false, true) => {
            return Err((
                Reason::TLSConfigNotValid,
                "spec.virtualhost.tls: secretName and passthrough cannot both be set".to_owned(),
            ))
        }
        (true, false) => {
            return Err((
                Reason::TLSConfigNotValid,
                "spec.virtualhost.tls: one of secretName or passthrough must be set".to_owned(),
            ))
        }
        (false, false) => {}
    }
    let range = TlsRange {
        min: (tls.minimum_protocol_version.as_deref())
            .and_then(TlsVersion::parse)
            .unwrap_or(TlsVersion::V1_2),
        max: (tls.maximum_protocol_version.as_deref())
            .and_then(TlsVersion::parse)
            .unwrap_or(TlsVersion::V1_3),
    };
    if range.min > range.max {
        return Err((
            Reason::TLSConfigNotValid,
            "spec.virtualhost.tls: minimumProtocolVersion is above maximumProtocolVersion".to_owned(),
        ));
    }
    if tls.enable_fallback_certificate && !default_certificate {
        return Err((
            Reason::FallbackNotPresent,
            "spec.virtualhost.tls.enableFallbackCertificate: no fallback certificate is set (--default-certificate)"
                .to_owned(),
        ));
    }
    let secret = secret_ref(namespace, name);
    if secret.namespace != namespace {
        return Err((
            Reason::DelegationNotPermitted,
            format!("spec.virtualhost.tls.secretName: Secret {secret} is in another namespace and no TLSCertificateDelegation is read"),
        ));
    }
    let cert = (secrets.certificate(&secret.namespace, &secret.name, TLS_OR_OPAQUE)).map_err(|problem| {
        let message = format!(
            "spec.virtualhost.tls.secretName: Secret {secret} {}",
            sentence(&problem)
        );
        (Reason::SecretNotValid, message)
    })?;
    if tls.client_validation.is_some() {
        return Err((
            Reason::ClientValidationNotSupported,
            "spec.virtualhost.tls.clientValidation: client certificates are not verified by this gateway yet, so the proxy is never served unchecked".to_owned(),
        ));
    }
    Ok(RootTls::Terminated(secret, cert, range))
}

/// `… is missing` / `… is not usable: why`.
fn sentence(problem: &SecretProblem) -> String {
    match problem {
        SecretProblem::Missing => "does not exist".to_owned(),
        SecretProblem::Unusable(why) => format!("is not usable: {why}"),
    }
}

/// `name` in the proxy's namespace, or `namespace/name`.
pub fn secret_ref(namespace: &str, written: &str) -> SecretRef {
    match written.split_once('/') {
        Some((ns, name)) => SecretRef {
            namespace: ns.to_owned(),
            name: name.to_owned(),
        },
        None => SecretRef {
            namespace: namespace.to_owned(),
            name: written.to_owned(),
        },
    }
}

/// Every valid root's certificate, for the hosts the table routes.
pub(super) fn choose(
    proxies: &[Arc<HTTPProxy>],
    owners: &Owners,
    valid: &BTreeSet<(&str, &str)>,
    stage: &mut Stage<'_>,
) {
    for proxy in proxies {
        let key = key_of(Kind::HTTPProxy, &proxy.metadata);
        let Some(vhost) = &proxy.spec.virtualhost else { continue };
        let host = normalize_host(&vhost.fqdn);
        if !valid.contains(&(key.namespace.as_str(), key.name.as_str())) || !owners.contains_key(&host) {
            continue;
        }
        // Valid, so `check` passed in the processor: read again here (each Secret is read once).
        let Ok(RootTls::Terminated(secret, cert, range)) =
            check(&key.namespace, vhost.tls.as_ref(), true, &mut stage.secrets)
        else {
            continue;
        };
        stage.check_served(&key, "spec.virtualhost.tls.secretName", &secret, &cert, &host);
        let why = format!("spec.virtualhost.tls.secretName of {}", key.display());
        if let Some(served) = stage.serve(&host, Stage::served(&secret, &cert), range, &key, why) {
            // §8.1.5: a handshake that got the default certificate may reach it only with
            // `enableFallbackCertificate`.
            served.strict_sni = !vhost.tls.as_ref().is_some_and(|t| t.enable_fallback_certificate);
        }
    }
}
