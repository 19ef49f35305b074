//! NGINX's `Policy` references (`spec.policies`, a route's or a subroute's `policies`) read as NGINX
//! Ingress Controller reads them (`internal/configs/policy.go`, `generatePolicies`; validation as
//! `pkg/apis/configuration/validation/policy.go`), into what the rules' table policy enforces
//! ([`Asked`]):
//! - `accessControl`: the `allow` or `deny` ranges of every such Policy of the list, accumulated;
//!   when both kinds are present the `allow` lines win (`allow …; deny all;` comes first), as NGINX
//!   warns.
//! - `rateLimit`: the first of the list, counted per client address (key `${binary_remote_addr}`),
//!   answered with its `rejectCode` (503); what cannot be counted as NGINX counts (another key, a
//!   `condition`) is not applied, with a warning; a `dryRun` limits nothing.
//! - `basicAuth`: the first of the list (NGINX ignores the others, with a warning), its users from
//!   the Secret of type `nginx.org/htpasswd` (entry `htpasswd`) in the Policy's namespace.
//!
//! A reference that cannot be enforced — a Policy that does not exist or fails NGINX's validation,
//! a `basicAuth` Secret that is missing or of the wrong type, a kind the gateway does not enforce
//! (`jwt`, `oidc`, `ingressMTLS`, `apiKey`, `waf`, `externalAuth`, …) — is listed in
//! [`Resolved::unenforced`]: the list stays a ROUTING.md §9 field that denies (NGINX answers 500).
//! nginx inherits each kind's directives from the server into a location that has none of that
//! kind ([`Asked::over`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use switchyard_table::basic_auth::BasicAuth;
use switchyard_table::{IpRange, Policy, Rate, RateLimit};

use super::scope::Note;
use crate::access::is_set;
use crate::https::secrets::Secrets;
use crate::ingress_nginx::basic_auth::htpasswd;
use crate::objects::policy::{AccessControl, BasicAuthPolicy, Policy as NginxPolicy, RateLimitPolicy};
use crate::objects::secret::{Secret, NGINX_HTPASSWD, NGINX_HTPASSWD_TYPE};
use crate::objects::ResourceKey;
use crate::status::Reason;

/// The status of a request over a `rateLimit` without `rejectCode`.
const DEFAULT_REJECT_CODE: u16 = 503;

/// The spec fields that are no kind of policy.
const NOT_A_KIND: &[&str] = &["ingressClassName"];

/// The Policies of the input by namespace and name, and the Secrets `basicAuth` reads.
pub(super) struct PolicyBook<'a> {
    policies: BTreeMap<(&'a str, &'a str), &'a NginxPolicy>,
    secrets: Secrets<'a>,
}

/// What a `policies` list asks of the rules it reaches, per kind of policy: `None` when the list
/// has no policy of that kind (the server's then applies, [`Asked::over`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Asked {
    /// The address ranges of its `accessControl` policies.
    ranges: Option<Ranges>,
    /// Its `rateLimit`: `Some(None)` when the list has one that limits nothing here (a dry run, or
    /// one not honoured), which still replaces the server's, as its `limit_req` lines would.
    rate_limit: Option<Option<RateLimit>>,
    /// Its `basicAuth` users.
    basic_auth: Option<Arc<BasicAuth>>,
}

/// `allow` and `deny` ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Ranges {
    allow: Vec<IpRange>,
    deny: Vec<IpRange>,
}

/// What one list resolves to.
#[derive(Debug, Default)]
pub(super) struct Resolved {
    /// What its enforceable references ask.
    pub(super) asked: Asked,
    /// Why references cannot be enforced: while any is here, the list denies (ROUTING.md §9).
    pub(super) unenforced: Vec<String>,
    /// Warnings for the resource that holds the list.
    pub(super) notes: Vec<Note>,
}

/// One valid Policy, by the kind it is.
enum Read<'p> {
    AccessControl(Ranges),
    RateLimit(&'p RateLimitPolicy),
    BasicAuth(&'p BasicAuthPolicy),
    /// A kind the gateway does not enforce, by its field name.
    Other(&'p str),
}

/// A period of a `rateLimit`'s `rate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Period {
    Second,
    Minute,
}

impl<'a> PolicyBook<'a> {
    /// The book of `policies`, with `secrets` for `basicAuth`.
    pub(super) fn new(policies: &'a [Arc<NginxPolicy>], secrets: &'a [Arc<Secret>]) -> PolicyBook<'a> {
        let policies = (policies.iter())
            .map(|p| {
                let namespace = p.metadata.namespace.as_deref().unwrap_or("default");
                ((namespace, p.metadata.name.as_deref().unwrap_or_default()), &**p)
            })
            .collect();
        PolicyBook {
            policies,
            secrets: Secrets::new(secrets),
        }
    }

    /// The list `value` (written at `at`), whose references without a namespace are in
    /// `namespace`, on VirtualServer `server` (which names the rate limits' zones, as NGINX names
    /// them after the Policy and the VirtualServer).
    pub(super) fn resolve(&self, value: Option<&Value>, at: &str, namespace: &str, server: &ResourceKey) -> Resolved {
        let mut resolved = Resolved::default();
        if !is_set(value) {
            return resolved;
        }
        let Some(items) = value.and_then(Value::as_array) else {
            resolved
                .unenforced
                .push(format!("{at} is not a list of Policy references"));
            return resolved;
        };
        for (i, item) in items.iter().enumerate() {
            let Some((ns, name)) = reference(item, namespace) else {
                resolved.unenforced.push(format!("{at}[{i}] names no Policy"));
                continue;
            };
            let named = format!("Policy {ns}/{name}");
            let Some(policy) = self.policies.get(&(ns, name)) else {
                resolved.unenforced.push(format!("{named} does not exist"));
                continue;
            };
            match read(policy) {
                Err(why) => resolved.unenforced.push(format!("{named} is invalid: {why}")),
                Ok(Read::AccessControl(ranges)) => resolved.add_ranges(ranges),
                Ok(Read::RateLimit(limit)) => {
                    let zone = format!("{ns}/{name}@{}", server.display());
                    resolved.add_rate_limit(&named, limit, zone);
                }
                Ok(Read::BasicAuth(basic)) => self.add_basic_auth(&mut resolved, &named, ns, basic),
                Ok(Read::Other(kind)) => resolved.unenforced.push(format!(
                    "{named} is a {kind} policy, which this gateway does not enforce"
                )),
            }
        }
        resolved
    }

    /// A `basicAuth` policy: the list's first (the others ignored, as NGINX ignores them), its
    /// users from its Secret.
    fn add_basic_auth(&self, resolved: &mut Resolved, named: &str, namespace: &str, basic: &BasicAuthPolicy) {
        if resolved.asked.basic_auth.is_some() {
            resolved.notes.push((
                Reason::PolicyIgnored,
                format!("Multiple basic auth policies in the same context is not valid. Basic auth policy {named} will be ignored"),
            ));
            return;
        }
        match self.users(namespace, &basic.secret) {
            Err(why) => resolved.unenforced.push(format!("{named}: {why}")),
            Ok((source, users)) => {
                let realm = realm(basic.realm.as_deref().unwrap_or_default());
                let auth = BasicAuth { realm, source, users };
                let unusable = auth.unusable_users();
                if !unusable.is_empty() {
                    resolved.notes.push((
                        Reason::BasicAuthUserUnusable,
                        format!(
                            "{named}: the password hash of {} is of no scheme nginx checks: they never get in",
                            unusable.join(", ")
                        ),
                    ));
                }
                resolved.asked.basic_auth = Some(Arc::new(auth));
            }
        }
    }

    /// The Secret `namespace/name`'s description and users, as NGINX reads an htpasswd Secret.
    fn users(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<(String, Vec<switchyard_table::basic_auth::Credential>), String> {
        let source = format!("Secret {namespace}/{name}");
        let secret = (self.secrets.get(namespace, name)).ok_or_else(|| format!("{source} does not exist"))?;
        if secret.type_name() != NGINX_HTPASSWD_TYPE {
            return Err(format!(
                "{source} is of type {:?}, not {NGINX_HTPASSWD_TYPE:?}",
                secret.type_name()
            ));
        }
        let file = (secret.entry(NGINX_HTPASSWD)).ok_or_else(|| format!("{source} has no entry {NGINX_HTPASSWD:?}"))?;
        Ok((source, htpasswd(&String::from_utf8_lossy(file))))
    }
}

impl Resolved {
    /// An `accessControl` policy's ranges, added to the list's; when the list has both kinds, the
    /// `allow` lines decide (nginx's `deny all` after them answers every other address).
    fn add_ranges(&mut self, add: Ranges) {
        let ranges = self.asked.ranges.get_or_insert_with(Ranges::default);
        ranges.allow.extend(add.allow);
        ranges.deny.extend(add.deny);
        let overridden = !ranges.allow.is_empty() && !ranges.deny.is_empty();
        if overridden && !self.notes.iter().any(|(reason, _)| *reason == Reason::PolicyOverridden) {
            self.notes.push((
                Reason::PolicyOverridden,
                "AccessControl policy (or policies) with deny rules is overridden by policy (or policies) with allow rules"
                    .to_owned(),
            ));
        }
    }

    /// A `rateLimit` policy: the list's first applies; a later one is noted as not applied.
    fn add_rate_limit(&mut self, named: &str, limit: &RateLimitPolicy, zone: String) {
        if self.asked.rate_limit.is_some() {
            self.notes.push((
                Reason::PolicySettingNotHonored,
                format!(
                    "{named}: only the first rateLimit policy of a list is applied by this gateway (NGINX applies each); this one is not"
                ),
            ));
            return;
        }
        let applied = match honoured(limit) {
            Err(why) => {
                self.notes.push((
                    Reason::PolicySettingNotHonored,
                    format!("{named}: {why}; its rate limit is not applied"),
                ));
                None
            }
            Ok(()) if limit.dry_run == Some(true) => None,
            Ok(()) => {
                if limit.scale {
                    self.notes.push((
                        Reason::PolicySettingNotHonored,
                        format!("{named}: scale is not applied: each gateway replica counts the whole rate"),
                    ));
                }
                rate_limit(limit, zone)
            }
        };
        self.asked.rate_limit = Some(applied);
    }
}

impl Asked {
    /// These, with `inherited`'s for each kind these do not have (nginx's inheritance of a
    /// server's directives into a location without its own).
    pub(super) fn over(&self, inherited: &Asked) -> Asked {
        Asked {
            ranges: self.ranges.clone().or_else(|| inherited.ranges.clone()),
            rate_limit: self.rate_limit.clone().or_else(|| inherited.rate_limit.clone()),
            basic_auth: self.basic_auth.clone().or_else(|| inherited.basic_auth.clone()),
        }
    }

    /// `policy` (a proxying rule's) with what these ask.
    pub(super) fn apply(&self, policy: Option<Arc<Policy>>) -> Option<Arc<Policy>> {
        if *self == Asked::default() {
            return policy;
        }
        let mut policy = policy.map(|p| (*p).clone()).unwrap_or_default();
        if let Some(ranges) = &self.ranges {
            // With `allow` lines, nginx's `deny all` answers every other address: no `deny` matters.
            policy.deny = if ranges.allow.is_empty() {
                ranges.deny.clone()
            } else {
                Vec::new()
            };
            policy.allow = ranges.allow.clone();
        }
        if let Some(limit) = &self.rate_limit {
            policy.rate_limit = limit.clone();
        }
        if let Some(auth) = &self.basic_auth {
            policy.basic_auth = Some(auth.clone());
        }
        Some(Arc::new(policy))
    }
}

/// A reference's namespace (`namespace`, else the holder's) and name; `None` without a name.
fn reference<'v>(item: &'v Value, namespace: &'v str) -> Option<(&'v str, &'v str)> {
    let name = item.get("name").and_then(Value::as_str).filter(|n| !n.is_empty())?;
    let namespace = (item.get("namespace").and_then(Value::as_str))
        .filter(|n| !n.is_empty())
        .unwrap_or(namespace);
    Some((namespace, name))
}

/// The kind a Policy is, as NGINX's validation accepts it (exactly one kind, each valid).
fn read(policy: &NginxPolicy) -> Result<Read<'_>, String> {
    let spec = &policy.spec;
    let others: Vec<&str> = (spec.others.iter())
        .filter(|(key, value)| !value.is_null() && !NOT_A_KIND.contains(&key.as_str()))
        .map(|(key, _)| key.as_str())
        .collect();
    let known = [
        spec.access_control.is_some(),
        spec.rate_limit.is_some(),
        spec.basic_auth.is_some(),
    ];
    let count = known.iter().filter(|k| **k).count() + others.len();
    if count != 1 {
        return Err(format!(
            "spec must specify exactly one kind of policy (accessControl, rateLimit, basicAuth, …), not {count}"
        ));
    }
    if let Some(access) = &spec.access_control {
        return access_ranges(access).map(Read::AccessControl);
    }
    if let Some(limit) = &spec.rate_limit {
        return check_rate_limit(limit).map(|()| Read::RateLimit(limit));
    }
    if let Some(basic) = &spec.basic_auth {
        return check_basic_auth(basic).map(|()| Read::BasicAuth(basic));
    }
    Ok(Read::Other(others.first().copied().unwrap_or_default()))
}

/// `accessControl`: exactly one of `allow` and `deny`, each entry an IP or a CIDR range.
fn access_ranges(access: &AccessControl) -> Result<Ranges, String> {
    let parse = |entries: &[String], field: &str| -> Result<Vec<IpRange>, String> {
        (entries.iter().enumerate())
            .map(|(i, entry)| {
                IpRange::parse(entry)
                    .filter(|_| entry.trim() == entry)
                    .ok_or_else(|| format!("spec.accessControl.{field}[{i}]: {entry:?} must be a CIDR or IP"))
            })
            .collect()
    };
    match (&access.allow, &access.deny) {
        (Some(allow), None) => Ok(Ranges {
            allow: parse(allow, "allow")?,
            deny: Vec::new(),
        }),
        (None, Some(deny)) => Ok(Ranges {
            allow: Vec::new(),
            deny: parse(deny, "deny")?,
        }),
        _ => Err("spec.accessControl: must specify exactly one of: `allow` or `deny`".to_owned()),
    }
}

/// `rateLimit` as NGINX validates it.
fn check_rate_limit(limit: &RateLimitPolicy) -> Result<(), String> {
    parse_rate(&limit.rate).ok_or_else(|| {
        format!(
            "spec.rateLimit.rate: {:?} must be a number of requests followed by r/s or r/m",
            limit.rate
        )
    })?;
    if limit.key.is_empty() {
        return Err("spec.rateLimit.key is required".to_owned());
    }
    if !zone_size_valid(&limit.zone_size) {
        return Err(format!(
            "spec.rateLimit.zoneSize: {:?} must be a size of at least 32k",
            limit.zone_size
        ));
    }
    for (field, value) in [("burst", limit.burst), ("delay", limit.delay)] {
        if value.is_some_and(|v| v <= 0) {
            return Err(format!("spec.rateLimit.{field}: must be positive"));
        }
    }
    if limit.reject_code.is_some_and(|code| !(400..=599).contains(&code)) {
        return Err("spec.rateLimit.rejectCode: must be within the range [400-599]".to_owned());
    }
    let levels = ["info", "notice", "warn", "error"];
    if (limit.log_level.as_deref()).is_some_and(|level| !level.is_empty() && !levels.contains(&level)) {
        return Err("spec.rateLimit.logLevel: must be info, notice, warn or error".to_owned());
    }
    Ok(())
}

/// `basicAuth` as NGINX validates it: a Secret, and a realm nginx can write.
fn check_basic_auth(basic: &BasicAuthPolicy) -> Result<(), String> {
    if basic.secret.is_empty() {
        return Err("spec.basicAuth.secret is required".to_owned());
    }
    match basic.realm.as_deref().filter(|realm| !realm_valid(realm)) {
        Some(realm) => Err(format!(
            "spec.basicAuth.realm: {realm:?} must have all '\"' escaped and must not contain any '$' or end with an unescaped '\\'"
        )),
        None => Ok(()),
    }
}

/// NGINX's realm format, `([^"$\\]|\\[^$])*`.
fn realm_valid(realm: &str) -> bool {
    let mut chars = realm.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' | '$' => return false,
            '\\' if chars.next().is_none_or(|next| next == '$') => return false,
            _ => {}
        }
    }
    true
}

/// The realm as the challenge sends it: escapes undone, quotes and control characters left out
/// (they would break the `WWW-Authenticate` header).
fn realm(written: &str) -> String {
    written
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '"' | '\\'))
        .collect()
}

/// `10r/s` or `300r/M`: the requests (`[1-9][0-9]*`) and the period.
fn parse_rate(text: &str) -> Option<(u32, Period)> {
    let (requests, period) = text.split_once("r/")?;
    let period = match period {
        "s" | "S" => Period::Second,
        "m" | "M" => Period::Minute,
        _ => return None,
    };
    let digits = !requests.is_empty() && requests.bytes().all(|b| b.is_ascii_digit()) && !requests.starts_with('0');
    let requests = requests.parse::<u32>().ok().filter(|_| digits)?;
    Some((requests, period))
}

/// NGINX's zone size: digits with `k`, `m` or `g` (any case) or none, not under 32k, not 0m.
fn zone_size_valid(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let (digits, unit) = match lower.strip_suffix(['k', 'm', 'g']) {
        Some(digits) => (digits, lower.chars().last()),
        None => (lower.as_str(), None),
    };
    let Ok(number) = digits.parse::<u64>() else {
        return false;
    };
    match unit {
        None | Some('k') => number >= 32,
        Some('m') => number > 0,
        _ => true,
    }
}

/// Whether the gateway counts as NGINX would: per client address, without a condition.
fn honoured(limit: &RateLimitPolicy) -> Result<(), String> {
    if limit.condition.is_some() {
        return Err("a tiered rate limit (condition) needs NGINX's maps".to_owned());
    }
    match limit.key.as_str() {
        "${binary_remote_addr}" | "$binary_remote_addr" => Ok(()),
        key => Err(format!(
            "key {key:?}: this gateway counts per client address (${{binary_remote_addr}}) only"
        )),
    }
}

/// The table's rate limit of a valid, honoured `rateLimit`, in `zone`.
fn rate_limit(limit: &RateLimitPolicy, zone: String) -> Option<RateLimit> {
    let (requests, period) = parse_rate(&limit.rate)?;
    let rate = Rate {
        requests,
        burst: limit.burst.map_or(0, |b| u32::try_from(b).unwrap_or(u32::MAX)),
    };
    let status = (limit.reject_code.and_then(|c| u16::try_from(c).ok())).unwrap_or(DEFAULT_REJECT_CODE);
    Some(RateLimit {
        zone,
        per_second: (period == Period::Second).then_some(rate),
        per_minute: (period == Period::Minute).then_some(rate),
        status,
        ..RateLimit::default()
    })
}

#[cfg(test)]
mod tests;
