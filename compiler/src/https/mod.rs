//! HTTPS (ROUTING.md §8): which certificate each host of the table is served with, and what is
//! wrong with the Secrets the resources name.
//!
//! A stage after the compiler ([`plan`]): it reads the compiled table (which hosts route, and
//! which resources own each: the rule names), the statuses (which Ingresses are ingress-nginx's,
//! which HTTPProxy roots are valid) and the Secrets. It changes no rule: what HTTPS changes in
//! routing (the redirects of §8.3, §8.5 and §8.6, the hosts a kind does not serve on HTTPS, an
//! HTTPProxy made invalid by its `tls`) the processors decide, as they decide everything else.
//! Its result, [`Https`], is what the HTTPS listener's filter chains are made of
//! ([`crate::lds`]), what `explain --sni` and the dashboard say, and the findings the statuses
//! carry ([`Https::findings`]).
//!
//! Each kind's choice is its own module: [`ingress`] (§8.3, Switchyard's Ingresses, and §8.4,
//! ingress-nginx's), [`httpproxy`] (§8.5), [`virtualserver`] (§8.6).

pub mod certificate;
pub mod istio;
pub mod listener;
pub mod routing;
pub mod secrets;

pub mod httpproxy;
mod ingress;
mod virtualserver;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::Serialize;
use switchyard_table::TableSpec;

use crate::https::certificate::{Certificate, Expiry};
use crate::https::secrets::Secrets;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::ingress_nginx::annotations::IngressNginxAnnotations;
use crate::model::{normalize_host, Options};
use crate::objects::{Kind, Objects, ResourceKey};
use crate::status::{About, Condition, ConditionKind, NginxStatus, Reason, ResourceStatus, Status};

/// A TLS version a host accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum TlsVersion {
    /// TLS 1.0 (ingress-nginx's `ssl-protocols` may list it).
    #[serde(rename = "1.0")]
    V1_0,
    /// TLS 1.1 (ingress-nginx's `ssl-protocols` may list it).
    #[serde(rename = "1.1")]
    V1_1,
    /// TLS 1.2.
    #[serde(rename = "1.2")]
    V1_2,
    /// TLS 1.3.
    #[serde(rename = "1.3")]
    V1_3,
}

impl TlsVersion {
    /// nginx's `ssl_protocols` word: `TLSv1`, `TLSv1.1`, `TLSv1.2`, `TLSv1.3`.
    pub fn of_nginx(word: &str) -> Option<TlsVersion> {
        match word {
            "TLSv1" => Some(TlsVersion::V1_0),
            "TLSv1.1" => Some(TlsVersion::V1_1),
            "TLSv1.2" => Some(TlsVersion::V1_2),
            "TLSv1.3" => Some(TlsVersion::V1_3),
            _ => None,
        }
    }

    /// `1.2` → 1.2, `1.3` → 1.3 (HTTPProxy's words); anything else is no version (the kind's
    /// default applies).
    pub fn parse(word: &str) -> Option<TlsVersion> {
        match word.trim() {
            "1.2" => Some(TlsVersion::V1_2),
            "1.3" => Some(TlsVersion::V1_3),
            _ => None,
        }
    }

    /// Its number (`1.2`), as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            TlsVersion::V1_0 => "1.0",
            TlsVersion::V1_1 => "1.1",
            TlsVersion::V1_2 => "1.2",
            TlsVersion::V1_3 => "1.3",
        }
    }

    /// The version of number `word` (`1.0` to `1.3`).
    pub fn named(word: &str) -> Option<TlsVersion> {
        [TlsVersion::V1_0, TlsVersion::V1_1, TlsVersion::V1_2, TlsVersion::V1_3]
            .into_iter()
            .find(|v| v.as_str() == word)
    }

    /// Envoy's name for it (`TLSv1_2`).
    pub fn envoy(self) -> &'static str {
        match self {
            TlsVersion::V1_0 => "TLSv1_0",
            TlsVersion::V1_1 => "TLSv1_1",
            TlsVersion::V1_2 => "TLSv1_2",
            TlsVersion::V1_3 => "TLSv1_3",
        }
    }
}

/// The TLS versions a host accepts: 1.2 to 1.3 unless its kind sets others (§8.1.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct TlsRange {
    /// The lowest.
    pub min: TlsVersion,
    /// The highest.
    pub max: TlsVersion,
}

impl TlsRange {
    /// nginx's `ssl_protocols` list (`TLSv1.2 TLSv1.3`): lowest to highest listed; `None` when it
    /// lists no version nginx knows.
    pub fn of_nginx(list: &str) -> Option<TlsRange> {
        let versions: Vec<TlsVersion> = list.split_whitespace().filter_map(TlsVersion::of_nginx).collect();
        Some(TlsRange {
            min: *versions.iter().min()?,
            max: *versions.iter().max()?,
        })
    }
}

impl Default for TlsRange {
    fn default() -> Self {
        TlsRange {
            min: TlsVersion::V1_2,
            max: TlsVersion::V1_3,
        }
    }
}

/// A Secret named by a resource: `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SecretRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl std::fmt::Display for SecretRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What a host's handshakes are answered with.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Served {
    /// The certificate of this Secret.
    Secret {
        /// The Secret.
        secret: SecretRef,
        /// Its leaf's SHA-256 (hex).
        fingerprint: String,
    },
    /// The default certificate (§8.1.2).
    #[default]
    Default,
    /// No certificate: handshakes naming the host fail (§8.6, a VirtualServer's broken Secret).
    Refused,
}

/// One host's HTTPS: listed only when it differs from the default certificate at the default range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostTls {
    /// The host (`*.example.com` for a wildcard host).
    pub host: String,
    /// Its certificate.
    pub served: Served,
    /// The TLS versions it accepts.
    pub versions: TlsRange,
    /// Whether a connection that got the default certificate (no SNI, or one naming no host) may
    /// not ask for it: 421 (§8.1.5, an HTTPProxy without `enableFallbackCertificate`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub strict_sni: bool,
    /// The resource that decided it.
    pub decided_by: String,
    /// Why, in a sentence (what `explain --sni` and the dashboard say).
    pub why: String,
}

/// A condition the HTTPS stage adds to a resource's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The resource.
    pub key: ResourceKey,
    /// The condition.
    pub condition: Condition,
}

/// The result of the HTTPS stage (`/status` shows it: names and fingerprints, never a key).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Https {
    /// The hosts with a certificate or a range of their own, by host.
    pub hosts: Vec<HostTls>,
    /// The default certificate (§8.1.2): `--default-certificate`'s Secret, or
    /// [`Served::Default`], the one made at start.
    pub default: Served,
    /// Why `--default-certificate` is not used, when it is set but unusable (warned).
    pub default_problem: Option<String>,
    /// The Secrets served with their last good content, not their current one (§8.2: an
    /// ingress-nginx Secret updated to unusable content): the sidecar hands on what it served before.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub kept: BTreeSet<SecretRef>,
    /// What is wrong, or worth knowing, about the certificates the resources name (in the
    /// resources' statuses).
    #[serde(skip)]
    pub findings: Vec<Finding>,
}

impl Https {
    /// The Secrets whose certificates are served, each once, in order: the only ones handed to
    /// the gateway.
    pub fn secrets(&self) -> BTreeSet<&SecretRef> {
        (self.hosts.iter().map(|h| &h.served).chain([&self.default]))
            .filter_map(|served| match served {
                Served::Secret { secret, .. } => Some(secret),
                Served::Default | Served::Refused => None,
            })
            .collect()
    }

    /// What a handshake for `served` is given: `Default` resolved to `--default-certificate`'s
    /// Secret or the made one; `None` for [`Served::Refused`] (the handshake fails).
    pub fn presented<'a>(&'a self, served: &'a Served) -> Option<Presented<'a>> {
        match (served, &self.default) {
            (Served::Secret { secret, .. }, _) | (Served::Default, Served::Secret { secret, .. }) => {
                Some(Presented::Secret(secret))
            }
            (Served::Default, Served::Default | Served::Refused) => Some(Presented::Made),
            (Served::Refused, _) => None,
        }
    }

    /// The terminated hosts (those of `taken`, passed through, left out) grouped by what their
    /// handshakes are given and their TLS range, in order: a gateway's filter chain or server each.
    pub fn groups(&self, taken: &[&str]) -> BTreeMap<(Option<Presented<'_>>, TlsRange), Vec<&str>> {
        let mut groups: BTreeMap<(Option<Presented<'_>>, TlsRange), Vec<&str>> = BTreeMap::new();
        for host in self.hosts.iter().filter(|h| !taken.contains(&h.host.as_str())) {
            groups
                .entry((self.presented(&host.served), host.versions))
                .or_default()
                .push(&host.host);
        }
        groups
    }

    /// The host `sni` selects (§8.1.1): the same host, else the `*.` host one label above it;
    /// `None`: the default certificate.
    pub fn select(&self, sni: &str) -> Option<&HostTls> {
        let sni = sni.to_ascii_lowercase();
        let find =
            |host: &str| (self.hosts.binary_search_by(|h| h.host.as_str().cmp(host)).ok()).map(|i| &self.hosts[i]);
        find(&sni).or_else(|| {
            let (_, parent) = sni.split_once('.')?;
            find(&format!("*.{parent}"))
        })
    }

    /// `statuses` with the findings added (each resource keeps its status; a finding on a resource
    /// without a status entry is dropped: it is not ours).
    pub fn annotate(&self, statuses: &mut [ResourceStatus]) {
        for finding in &self.findings {
            let key = &finding.key;
            let found =
                statuses.binary_search_by(|s| crate::status::report_order(s).cmp(&crate::status::key_order(key)));
            let Ok(i) = found else { continue };
            let status = &mut statuses[i];
            if !status.conditions.contains(&finding.condition) {
                status.conditions.push(finding.condition.clone());
                let (kind, ns, name) = (status.kind, status.namespace.as_str(), status.name.as_str());
                status.nginx = NginxStatus::of(kind, ns, name, status.status, &status.conditions);
            }
        }
    }
}

/// The certificate a handshake is given ([`Https::presented`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Presented<'a> {
    /// This Secret's.
    Secret(&'a SecretRef),
    /// The default certificate made at start (§8.1.2).
    Made,
}

/// The owners of every host of the table: the resources whose rules route it (`Kind/ns/name`, the
/// prefix of a rule's name).
pub(crate) type Owners = BTreeMap<String, BTreeSet<ResourceKey>>;

/// The Secrets served by the previous plan, by name: what an ingress-nginx Secret updated to
/// unusable content falls back to (§8.2).
pub type LastServed = BTreeMap<SecretRef, Arc<crate::objects::secret::Secret>>;

/// What the kinds' choices share while the stage runs.
pub(crate) struct Stage<'o> {
    /// The Secrets, read once each.
    pub secrets: Secrets<'o>,
    /// The Secrets served last time.
    pub previous: &'o LastServed,
    /// Seconds since the epoch, for expiry.
    pub now: i64,
    /// What the stage found so far.
    pub out: Https,
}

impl Stage<'_> {
    /// Records `condition` (kind, reason) about `field` on `key`.
    pub fn find(&mut self, key: &ResourceKey, why: (ConditionKind, Reason), field: &str, message: String) {
        let condition = Condition::new(why, Some(About::Field(field.to_owned())), message);
        let finding = Finding {
            key: key.clone(),
            condition,
        };
        if !self.out.findings.contains(&finding) {
            self.out.findings.push(finding);
        }
    }

    /// Records what a served certificate's owner should know (§8.2): its expiry, and whether it
    /// names `host` (unless the kind checked that already).
    pub fn check_served(&mut self, key: &ResourceKey, field: &str, secret: &SecretRef, cert: &Certificate, host: &str) {
        match cert.expiry(self.now) {
            Expiry::Fine => {}
            Expiry::Soon(days) => self.find(
                key,
                (ConditionKind::Warning, Reason::CertificateExpiresSoon),
                field,
                format!("the certificate of Secret {secret} ends in {days} day(s); it is still served"),
            ),
            Expiry::Expired => self.find(
                key,
                (ConditionKind::Warning, Reason::CertificateExpired),
                field,
                format!(
                    "the certificate of Secret {secret} has expired; it is still served, and clients will refuse it"
                ),
            ),
        }
        if !cert.covers(host) {
            self.find(
                key,
                (ConditionKind::Warning, Reason::CertificateHostMismatch),
                field,
                format!(
                    "the certificate of Secret {secret} does not name {host} (it names {}); it is served for it anyway",
                    cert.names.join(", ")
                ),
            );
        }
    }

    /// Adds a host's choice; `None` when it is the default certificate at the default range (not
    /// listed).
    pub fn serve(
        &mut self,
        host: &str,
        served: Served,
        versions: TlsRange,
        decided_by: &ResourceKey,
        why: String,
    ) -> Option<&mut HostTls> {
        if served == Served::Default && versions == TlsRange::default() {
            return None;
        }
        self.out.hosts.push(HostTls {
            host: host.to_owned(),
            served,
            versions,
            strict_sni: false,
            decided_by: decided_by.display(),
            why,
        });
        self.out.hosts.last_mut()
    }

    /// `Served::Secret` of a certificate.
    pub fn served(secret: &SecretRef, cert: &Certificate) -> Served {
        Served::Secret {
            secret: secret.clone(),
            fingerprint: cert.fingerprint.clone(),
        }
    }
}

/// The HTTPS stage: every host of `table` with its certificate, from the Secrets of `objects`;
/// `statuses` are the compiler's; `now` is the time in seconds since the epoch (for §8.2's
/// expiry); `options` give `--default-certificate` and ingress-nginx's ConfigMap (`ssl-protocols`);
/// `previous` are the Secrets the last plan served ([`LastServed`]).
pub fn plan(
    objects: &Objects,
    table: &TableSpec,
    statuses: &[ResourceStatus],
    (now, options): (i64, &Options),
    previous: &LastServed,
) -> Https {
    let nginx: BTreeSet<(&str, &str)> = (statuses.iter())
        .filter(|s| s.kind == Kind::Ingress && s.conditions.iter().any(|c| c.about == Some(About::IngressNginx)))
        .map(|s| (s.namespace.as_str(), s.name.as_str()))
        .collect();
    let nginx_range = options.ingress_nginx_config.ssl_protocols;
    let mut wanted = tls_hosts(objects);
    // §8.4: an ingress-nginx server's aliases get its certificate when it covers them.
    let prefix = &options.ingress_nginx.annotations_prefix;
    let with_tls = |i: &&Arc<Ingress>| {
        i.spec
            .as_ref()
            .and_then(|s| s.tls.as_ref())
            .is_some_and(|t| !t.is_empty())
    };
    for ingress in objects.ingresses.iter().filter(with_tls) {
        if let Some(annotations) = &ingress.metadata.annotations {
            wanted.extend(IngressNginxAnnotations::parse(annotations, prefix).server_alias);
        }
    }
    if nginx_range != TlsRange::default() {
        // `ssl-protocols` sets the range of every server of ingress-nginx's, with a Secret or not.
        let of_nginx = |i: &&Arc<Ingress>| nginx.contains(&(namespace_of(&i.metadata), name_of(&i.metadata)));
        wanted.extend(objects.ingresses.iter().filter(of_nginx).flat_map(|i| rule_hosts(i)));
    }
    let owners = owners(table, &wanted);
    let valid_roots: BTreeSet<(&str, &str)> = (statuses.iter())
        .filter(|s| s.kind == Kind::HTTPProxy && s.status == Status::Valid)
        .map(|s| (s.namespace.as_str(), s.name.as_str()))
        .collect();
    let mut stage = Stage {
        secrets: Secrets::new(&objects.secrets),
        previous,
        now,
        out: Https::default(),
    };
    default(options.default_certificate.as_deref(), &mut stage);
    ingress::choose(&objects.ingresses, &owners, (&nginx, nginx_range), &mut stage);
    httpproxy::choose(&objects.http_proxies, &owners, &valid_roots, &mut stage);
    virtualserver::choose(&objects.virtual_servers, &owners, &mut stage);
    let mut out = stage.out;
    out.hosts.sort_by(|a, b| a.host.cmp(&b.host));
    out.hosts.dedup_by(|b, a| a.host == b.host);
    out.findings.sort_by(|a, b| {
        let order = |f: &Finding| (f.key.clone(), f.condition.reason.as_str(), f.condition.message.clone());
        order(a).cmp(&order(b))
    });
    out
}

/// §8.1.2: `--default-certificate`'s Secret when usable; else the one made at start, and why.
fn default(flag: Option<&str>, stage: &mut Stage<'_>) {
    let Some(flag) = flag else { return };
    let Some((namespace, name)) = flag.split_once('/') else {
        stage.out.default_problem = Some(format!("--default-certificate {flag:?} is not NAMESPACE/NAME"));
        return;
    };
    match stage.secrets.certificate(namespace, name, secrets::TLS_OR_OPAQUE) {
        Ok(cert) => {
            let secret = SecretRef {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            };
            stage.out.default = Stage::served(&secret, &cert);
        }
        Err(problem) => {
            stage.out.default_problem = Some(format!(
                "--default-certificate {flag}: {problem}; the certificate made at start is served instead"
            ))
        }
    }
}

/// The hosts some resource gives TLS settings: only their owners are looked for (a table of
/// 100,000 rules without TLS costs one look at each resource, not at each rule).
fn tls_hosts(objects: &Objects) -> BTreeSet<String> {
    let ingresses = (objects.ingresses.iter())
        .filter(|i| {
            i.spec
                .as_ref()
                .and_then(|s| s.tls.as_ref())
                .is_some_and(|t| !t.is_empty())
        })
        .flat_map(|i| rule_hosts(i));
    let proxies = (objects.http_proxies.iter())
        .filter_map(|p| p.spec.virtualhost.as_ref())
        .filter(|v| v.tls.is_some())
        .map(|v| v.fqdn.as_str());
    let servers = (objects.virtual_servers.iter())
        .filter(|v| v.spec.tls.is_some())
        .map(|v| v.spec.host.as_str());
    ingresses.chain(proxies.chain(servers).map(normalize_host)).collect()
}

/// An Ingress's rule hosts, as §2 compares them.
fn rule_hosts(ingress: &Ingress) -> impl Iterator<Item = String> + '_ {
    (ingress.spec.iter().flat_map(|s| s.rules.iter().flatten()))
        .filter_map(|r| r.host.as_deref())
        .map(normalize_host)
}

fn namespace_of(meta: &ObjectMeta) -> &str {
    meta.namespace.as_deref().unwrap_or("default")
}

fn name_of(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

/// Host → the resources whose rules route it, read from the rules' names, for the hosts `wanted`.
fn owners(table: &TableSpec, wanted: &BTreeSet<String>) -> Owners {
    let mut owners = Owners::new();
    if wanted.is_empty() {
        return owners;
    }
    for rule in &table.rules {
        let Some(host) = rule.host.as_ref().filter(|h| wanted.contains(*h)) else {
            continue;
        };
        let stem = rule.name.split('#').next().unwrap_or_default();
        let mut parts = stem.splitn(3, '/');
        let (Some(kind), Some(namespace), Some(name)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Some(kind) = Kind::named(kind) else { continue };
        owners.entry(host.clone()).or_default().insert(ResourceKey {
            kind,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        });
    }
    owners
}
