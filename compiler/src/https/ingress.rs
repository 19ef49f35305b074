//! The certificates of Ingress hosts: Switchyard's own Ingresses (ROUTING.md §8.3) and
//! ingress-nginx's (§8.4). A host's members are the Ingresses whose rules route it, oldest first
//! (§2's age order; ingress-nginx's 7.2 order is the same).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::networking::v1::{Ingress, IngressTLS};

use crate::https::certificate::Certificate;
use crate::https::secrets::{SecretProblem, TLS_OR_OPAQUE};
use crate::https::{Owners, SecretRef, Served, Stage, TlsRange};
use crate::model::normalize_host;
use crate::objects::{key_of, Age, Kind, ResourceKey};
use crate::status::{ConditionKind, Reason};

/// The annotations that put an Ingress's Secrets in another namespace (§8.3).
const CERT_NAMESPACE: [&str; 2] = [
    "projectcontour.io/tls-cert-namespace",
    "switchyard.io/tls-cert-namespace",
];

/// Every Ingress host's certificate.
/// `nginx` is the set of ingress-nginx's Ingresses and the TLS range of its ConfigMap's
/// `ssl-protocols`.
pub(super) fn choose(
    ingresses: &[Arc<Ingress>],
    owners: &Owners,
    (nginx, nginx_range): (&BTreeSet<(&str, &str)>, TlsRange),
    stage: &mut Stage<'_>,
) {
    let by_key: BTreeMap<ResourceKey, &Ingress> = (ingresses.iter())
        .map(|i| (key_of(Kind::Ingress, &i.metadata), &**i))
        .collect();
    let is_nginx = |key: &ResourceKey| nginx.contains(&(key.namespace.as_str(), key.name.as_str()));
    let mut routed_own = BTreeSet::new();
    for (host, keys) in owners {
        let mut members: Vec<(Age, &Ingress)> = (keys.iter())
            .filter_map(|k| by_key.get(k))
            .map(|i| (Age::of(Kind::Ingress, &i.metadata), *i))
            .collect();
        if members.is_empty() {
            continue;
        }
        members.sort_by(|a, b| a.0.cmp(&b.0));
        if members.iter().any(|(age, _)| is_nginx(&age.key)) {
            members.retain(|(age, _)| is_nginx(&age.key));
            ingress_nginx_host(host, &members, nginx_range, stage);
        } else {
            routed_own.extend(members.iter().map(|(age, _)| age.key.clone()));
            own_host(host, &members, stage);
        }
    }
    for key in &routed_own {
        if let Some(ingress) = by_key.get(key) {
            hosts_without_rules(key, ingress, stage);
        }
    }
}

/// The TLS entries of an Ingress, with their field paths.
fn entries(ingress: &Ingress) -> impl Iterator<Item = (String, &IngressTLS)> {
    (ingress.spec.iter().flat_map(|s| s.tls.iter().flatten()))
        .enumerate()
        .map(|(i, entry)| (format!("spec.tls[{i}]"), entry))
}

/// An entry's listed hosts, as §2 compares them.
fn listed(entry: &IngressTLS) -> Vec<String> {
    entry.hosts.iter().flatten().map(|h| normalize_host(h)).collect()
}

/// Whether a listed host applies to `host`: the same, or a `*.` host one label above it.
fn lists(listed: &[String], host: &str) -> bool {
    listed.iter().any(|l| {
        l == host
            || l.strip_prefix("*.").is_some_and(|parent| {
                host.split_once('.')
                    .is_some_and(|(label, rest)| rest == parent && label != "*")
            })
    })
}

/// §8.3: the oldest member with an applying entry whose Secret is usable sets the certificate.
fn own_host(host: &str, members: &[(Age, &Ingress)], stage: &mut Stage<'_>) {
    let mut chosen: Option<(Served, ResourceKey, String)> = None;
    for (age, ingress) in members {
        let key = &age.key;
        let cert_namespace = CERT_NAMESPACE
            .iter()
            .find_map(|a| ingress.metadata.annotations.as_ref()?.get(*a));
        for (field, entry) in entries(ingress) {
            let listed = listed(entry);
            let name = entry.secret_name.as_deref().unwrap_or_default();
            if name.is_empty() {
                if lists(&listed, host) && chosen.is_none() {
                    let why = format!("{field} of {} lists {host} without a secretName", key.display());
                    chosen = Some((Served::Default, key.clone(), why));
                }
                continue;
            }
            let secret = SecretRef {
                namespace: cert_namespace.cloned().unwrap_or_else(|| key.namespace.clone()),
                name: name.to_owned(),
            };
            if secret.namespace != key.namespace {
                if listed.is_empty() || lists(&listed, host) {
                    stage.find(
                        key,
                        (ConditionKind::Warning, Reason::TLSDelegationNotPermitted),
                        &format!("{field}.secretName"),
                        format!("Secret {secret} is in another namespace and no TLSCertificateDelegation is read; {host} is not served with it"),
                    );
                }
                continue;
            }
            let certificate = stage
                .secrets
                .certificate(&secret.namespace, &secret.name, TLS_OR_OPAQUE);
            let applies = match (&certificate, listed.is_empty()) {
                (_, false) => lists(&listed, host),
                (Ok(cert), true) => cert.covers(host),
                (Err(_), true) => false,
            };
            if !applies {
                continue;
            }
            let secret_field = format!("{field}.secretName");
            match certificate {
                Err(problem) => stage.find(
                    key,
                    (ConditionKind::Warning, Reason::TLSSecretNotValid),
                    &secret_field,
                    format!("Secret {secret} cannot be served for {host}: {problem}"),
                ),
                Ok(cert) => match &chosen {
                    None => {
                        stage.check_served(key, &secret_field, &secret, &cert, host);
                        let why = format!("{field} of {} (the oldest Ingress of the host with a usable certificate for it)", key.display());
                        chosen = Some((Stage::served(&secret, &cert), key.clone(), why));
                    }
                    Some((served, winner, _)) if *served != Stage::served(&secret, &cert) => stage.find(
                        key,
                        (ConditionKind::Warning, Reason::TLSSecretIgnored),
                        &secret_field,
                        format!("{host} is served with the certificate {} chose, an older Ingress of the same host; Secret {secret} is not used for it", winner.display()),
                    ),
                    Some(_) => {}
                },
            }
        }
    }
    if let Some((served, by, why)) = chosen {
        stage.serve(host, served, TlsRange::default(), &by, why);
    }
}

/// §8.3: a listed host that no rule of the Ingress names is ignored, and said.
fn hosts_without_rules(key: &ResourceKey, ingress: &Ingress, stage: &mut Stage<'_>) {
    let rule_hosts: Vec<String> = (ingress.spec.iter().flat_map(|s| s.rules.iter().flatten()))
        .filter_map(|r| r.host.as_deref())
        .map(normalize_host)
        .collect();
    for (field, entry) in entries(ingress) {
        for listed_host in listed(entry) {
            let named = rule_hosts.iter().any(|h| lists(std::slice::from_ref(&listed_host), h));
            if !named {
                stage.find(
                    key,
                    (ConditionKind::Warning, Reason::TLSHostWithoutRule),
                    &format!("{field}.hosts"),
                    format!("{listed_host} is listed in {field} but no rule of this Ingress names it: ignored"),
                );
            }
        }
    }
}

/// §8.4: the first member whose `tls` lists the host or holds a Secret covering it, if that Secret
/// is usable and its leaf covers the host; else the default. A broken earlier one does not block.
fn ingress_nginx_host(host: &str, members: &[(Age, &Ingress)], range: TlsRange, stage: &mut Stage<'_>) {
    for (age, ingress) in members {
        let key = &age.key;
        for (field, entry) in entries(ingress) {
            let name = entry.secret_name.as_deref().unwrap_or_default();
            if name.is_empty() {
                continue;
            }
            let secret = SecretRef {
                namespace: key.namespace.clone(),
                name: name.to_owned(),
            };
            let listed = lists(&listed(entry), host);
            let secret_field = format!("{field}.secretName");
            match stage.secrets.certificate(&secret.namespace, &secret.name, TLS_OR_OPAQUE) {
                Ok(cert) if cert.covers(host) => {
                    stage.check_served(key, &secret_field, &secret, &cert, host);
                    let why = format!("{field} of {}, the first Ingress of the server whose certificate covers it", key.display());
                    stage.serve(host, Stage::served(&secret, &cert), range, key, why);
                    return;
                }
                Ok(cert) if listed => stage.find(
                    key,
                    (ConditionKind::Warning, Reason::CertificateHostMismatch),
                    &secret_field,
                    format!(
                        "the certificate of Secret {secret} does not name {host} (it names {}): ingress-nginx serves the default certificate for it, and so does Switchyard",
                        cert.names.join(", ")
                    ),
                ),
                Err(SecretProblem::Unusable(problem)) if stage.previous.contains_key(&secret) => {
                    // §8.2: ingress-nginx keeps the last good certificate of a Secret updated to
                    // unusable content (`store/backend_ssl.go` `syncSecret`).
                    let last = stage.previous.get(&secret).and_then(|s| Certificate::of_secret(s, TLS_OR_OPAQUE).ok());
                    let Some(cert) = last.filter(|c| c.covers(host)) else { continue };
                    stage.find(
                        key,
                        (ConditionKind::Warning, Reason::TLSSecretNotValid),
                        &secret_field,
                        format!("Secret {secret} was updated to content that cannot be served ({problem}): its last good certificate is kept for {host}, as ingress-nginx keeps it"),
                    );
                    stage.out.kept.insert(secret.clone());
                    let why = format!("{field} of {}: the last good content of its Secret", key.display());
                    stage.serve(host, Stage::served(&secret, &cert), range, key, why);
                    return;
                }
                Err(problem) if listed => stage.find(
                    key,
                    (ConditionKind::Warning, Reason::TLSSecretNotValid),
                    &secret_field,
                    format!("Secret {secret} cannot be served for {host}: {problem}"),
                ),
                Ok(_) | Err(_) => {}
            }
        }
    }
    // The default certificate, at the ConfigMap's range (listed only when that is not 1.2 – 1.3).
    if let Some((age, _)) = members.first() {
        let why = "no Ingress of the server has a usable Secret covering it: the default certificate".to_owned();
        stage.serve(host, Served::Default, range, &age.key, why);
    }
}
