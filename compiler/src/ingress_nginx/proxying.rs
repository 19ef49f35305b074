//! An Ingress's timeouts and retries (issue "Policies beyond the route"; docs/routing.md, "Timeouts
//! and retries"): `proxy-read-timeout`, `proxy-send-timeout`, `proxy-next-upstream`,
//! `proxy-next-upstream-tries` and `proxy-next-upstream-timeout`, over the ConfigMap's keys of the
//! same names, read as ingress-nginx v1.15 reads them (whole seconds; a value it refuses leaves the
//! ConfigMap's). They become the gateway route of the Ingress's locations
//! ([`crate::route_config::RouteSettings`]):
//!
//! - nginx's read and send timeouts are the longest wait between two reads from, or two writes to,
//!   the backend. Each try's idle timeout is the read timeout: the longest the backend may stay
//!   silent, from the request sent on (Envoy's also counts the request's own bytes, so an upload
//!   that pauses longer than the read timeout is cut where nginx waits for the send timeout). The
//!   route's idle timeout, which watches the client's side as well and replaces the connection
//!   manager's 5 minutes, is the longer of the two; the route has no total timeout (Envoy's 15 s
//!   default would cut a long poll nginx keeps).
//! - `proxy-next-upstream`'s cases are Envoy's retry conditions: `error` a connect failure, a reset
//!   or a refused stream; `timeout` a connect failure (a connect timeout is one); `invalid_header` a
//!   reset; `http_NNN` that status. Each retry goes to another endpoint than the ones tried, and
//!   only for a method nginx retries (not POST, LOCK or PATCH) unless `non_idempotent` (or the
//!   ConfigMap's `retry-non-idempotent`). `off` retries nothing.
//! - `proxy-next-upstream-tries` counts the first try (`3`: two retries); `0`, nginx's "no limit",
//!   is [`UNLIMITED_RETRIES`].

use std::collections::{BTreeMap, BTreeSet};

use super::annotations::Problem;
use crate::route_config::{Retry, RetryOn, RouteSettings};
use crate::status::Reason;

/// The annotations this module reads.
pub const READ: &[&str] = &[
    "proxy-read-timeout",
    "proxy-send-timeout",
    "proxy-next-upstream",
    "proxy-next-upstream-tries",
    "proxy-next-upstream-timeout",
];

/// The retries of `proxy-next-upstream-tries: 0` (nginx: as many as the upstream has servers).
pub const UNLIMITED_RETRIES: u32 = 5;

/// When nginx passes a request to the next server (`proxy_next_upstream`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextUpstream {
    /// `error`.
    pub error: bool,
    /// `timeout`.
    pub timeout: bool,
    /// `invalid_header`.
    pub invalid_header: bool,
    /// The `http_NNN` cases.
    pub statuses: BTreeSet<u16>,
    /// `non_idempotent`: POST, LOCK and PATCH retried too.
    pub non_idempotent: bool,
    /// `off`: never.
    pub off: bool,
}

impl Default for NextUpstream {
    /// ingress-nginx's default, `error timeout`.
    fn default() -> Self {
        NextUpstream {
            error: true,
            timeout: true,
            invalid_header: false,
            statuses: BTreeSet::new(),
            non_idempotent: false,
            off: false,
        }
    }
}

impl NextUpstream {
    /// Reads a value (cases separated by spaces); `None` for a word ingress-nginx refuses.
    pub fn parse(value: &str) -> Option<NextUpstream> {
        let mut out = NextUpstream {
            error: false,
            timeout: false,
            ..NextUpstream::default()
        };
        let mut words = value.split_ascii_whitespace().peekable();
        words.peek()?;
        for word in words {
            match word {
                "error" => out.error = true,
                "timeout" => out.timeout = true,
                "invalid_header" => out.invalid_header = true,
                "non_idempotent" => out.non_idempotent = true,
                "off" => out.off = true,
                "http_500" | "http_502" | "http_503" | "http_504" | "http_403" | "http_404" | "http_429" => {
                    out.statuses.insert(word.strip_prefix("http_")?.parse().ok()?);
                }
                _ => return None,
            }
        }
        Some(out)
    }

    /// Envoy's retries for these cases, `tries` tries in all; `None` when nothing is retried.
    fn retry(&self, tries: u32, retry_non_idempotent: bool) -> Option<Retry> {
        let mut on = BTreeSet::new();
        if self.error {
            on.extend([RetryOn::ConnectFailure, RetryOn::Reset, RetryOn::RefusedStream]);
        }
        if self.timeout {
            on.insert(RetryOn::ConnectFailure);
        }
        if self.invalid_header {
            on.insert(RetryOn::Reset);
        }
        if !self.statuses.is_empty() {
            on.insert(RetryOn::RetriableStatusCodes);
        }
        let retries = match tries {
            0 => UNLIMITED_RETRIES,
            tries => tries - 1,
        };
        (!self.off && !on.is_empty() && retries > 0).then(|| Retry {
            on,
            status_codes: self.statuses.clone(),
            retries,
            per_try_timeout_ms: None,
            idempotent_only: !(self.non_idempotent || retry_non_idempotent),
            other_host: true,
        })
    }
}

/// The timeouts and retries of a location: an Ingress's annotations over the ConfigMap's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxying {
    /// `proxy-read-timeout`, in milliseconds.
    pub read_timeout_ms: u64,
    /// `proxy-send-timeout`, in milliseconds.
    pub send_timeout_ms: u64,
    /// `proxy-next-upstream`.
    pub next_upstream: NextUpstream,
    /// `proxy-next-upstream-tries`.
    pub next_upstream_tries: u32,
    /// `proxy-next-upstream-timeout`, in seconds (`0`: no limit). Not reproduced: Envoy's router
    /// bounds each try, not the time spent retrying.
    pub next_upstream_timeout: u32,
    /// The ConfigMap's `retry-non-idempotent`.
    pub retry_non_idempotent: bool,
}

impl Default for Proxying {
    /// ingress-nginx's defaults.
    fn default() -> Self {
        Proxying {
            read_timeout_ms: 60_000,
            send_timeout_ms: 60_000,
            next_upstream: NextUpstream::default(),
            next_upstream_tries: 3,
            next_upstream_timeout: 0,
            retry_non_idempotent: false,
        }
    }
}

/// One setting of [`READ`], valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting {
    /// `proxy-read-timeout`, in milliseconds.
    ReadTimeout(u64),
    /// `proxy-send-timeout`, in milliseconds.
    SendTimeout(u64),
    /// `proxy-next-upstream`.
    NextUpstream(NextUpstream),
    /// `proxy-next-upstream-tries`.
    NextUpstreamTries(u32),
    /// `proxy-next-upstream-timeout`, in seconds.
    NextUpstreamTimeout(u32),
}

impl Setting {
    /// Its annotation's (and ConfigMap key's) name.
    pub fn name(&self) -> &'static str {
        match self {
            Setting::ReadTimeout(_) => "proxy-read-timeout",
            Setting::SendTimeout(_) => "proxy-send-timeout",
            Setting::NextUpstream(_) => "proxy-next-upstream",
            Setting::NextUpstreamTries(_) => "proxy-next-upstream-tries",
            Setting::NextUpstreamTimeout(_) => "proxy-next-upstream-timeout",
        }
    }

    /// The setting `name: value`; `None` when ingress-nginx refuses `value` (or `name` is not one
    /// of [`READ`]).
    pub fn parse(name: &str, value: &str) -> Option<Setting> {
        let number = || value.trim().parse::<u32>().ok();
        let ms = || number().map(|s| u64::from(s) * 1000).filter(|ms| *ms > 0);
        match name {
            "proxy-read-timeout" => ms().map(Setting::ReadTimeout),
            "proxy-send-timeout" => ms().map(Setting::SendTimeout),
            "proxy-next-upstream" => NextUpstream::parse(value).map(Setting::NextUpstream),
            "proxy-next-upstream-tries" => number().map(Setting::NextUpstreamTries),
            "proxy-next-upstream-timeout" => number().map(Setting::NextUpstreamTimeout),
            _ => None,
        }
    }

    /// An Ingress's settings from `mine` (annotation names without the prefix), in [`READ`]'s
    /// order: each refused value reported `AnnotationInvalid` (the ConfigMap's stands), and a
    /// `proxy-next-upstream-timeout` `AnnotationNotHonored`.
    pub fn annotations(mine: &BTreeMap<&str, &str>, prefix: &str, problems: &mut Vec<Problem>) -> Vec<Setting> {
        let mut settings = Vec::new();
        for name in READ {
            let Some(value) = mine.get(name) else { continue };
            match Setting::parse(name, value) {
                Some(Setting::NextUpstreamTimeout(0)) => settings.push(Setting::NextUpstreamTimeout(0)),
                Some(Setting::NextUpstreamTimeout(_)) => problems.push(Problem {
                    name: (*name).to_owned(),
                    reason: Reason::AnnotationNotHonored,
                    message: format!(
                        "{prefix}/{name}: Envoy's router bounds each try, not the time spent retrying; the \
                         retries are bounded by proxy-next-upstream-tries alone"
                    ),
                }),
                Some(setting) => settings.push(setting),
                None => problems.push(Problem {
                    name: (*name).to_owned(),
                    reason: Reason::AnnotationInvalid,
                    message: format!(
                        "{prefix}/{name}: {value:?} is not a value ingress-nginx takes; the ConfigMap's stands"
                    ),
                }),
            }
        }
        settings
    }
}

impl Proxying {
    /// Takes a ConfigMap key; `None` when the key is not one of [`READ`] or
    /// `retry-non-idempotent`, `Some(false)` when its value is refused (the default stands).
    pub fn read_key(&mut self, key: &str, value: &str) -> Option<bool> {
        if key == "retry-non-idempotent" {
            return Some(value.trim().parse().map(|v| self.retry_non_idempotent = v).is_ok());
        }
        READ.contains(&key)
            .then(|| Setting::parse(key, value).map(|s| self.take(s)).is_some())
    }

    /// These with `settings` over them.
    pub fn with(&self, settings: &[Setting]) -> Proxying {
        let mut out = self.clone();
        for setting in settings {
            out.take(setting.clone());
        }
        out
    }

    fn take(&mut self, setting: Setting) {
        match setting {
            Setting::ReadTimeout(ms) => self.read_timeout_ms = ms,
            Setting::SendTimeout(ms) => self.send_timeout_ms = ms,
            Setting::NextUpstream(cases) => self.next_upstream = cases,
            Setting::NextUpstreamTries(tries) => self.next_upstream_tries = tries,
            Setting::NextUpstreamTimeout(seconds) => self.next_upstream_timeout = seconds,
        }
    }

    /// The gateway route these make.
    pub fn route(&self) -> RouteSettings {
        RouteSettings {
            timeout_ms: Some(0),
            idle_timeout_ms: Some(self.read_timeout_ms.max(self.send_timeout_ms)),
            upstream_idle_timeout_ms: Some(self.read_timeout_ms),
            retry: (self.next_upstream).retry(self.next_upstream_tries, self.retry_non_idempotent),
            response_headers: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotated(pairs: &[(&str, &str)]) -> (Proxying, Vec<Problem>) {
        let mine: BTreeMap<&str, &str> = pairs.iter().copied().collect();
        let mut problems = Vec::new();
        let settings = Setting::annotations(&mine, "nginx.ingress.kubernetes.io", &mut problems);
        (Proxying::default().with(&settings), problems)
    }

    #[test]
    fn ingress_nginx_defaults_are_a_60s_idle_timeout_no_total_and_two_retries_elsewhere() {
        assert_eq!(
            Proxying::default().route().name().unwrap(),
            "timeout=0ms+idle=60000ms+upstream-idle=60000ms+retry=connect-failure,reset,refused-stream+retries=2+idempotent+other-host"
        );
    }

    #[test]
    fn the_read_timeout_bounds_each_try_and_the_longer_of_read_and_send_the_stream() {
        let (out, problems) = annotated(&[("proxy-read-timeout", "3600"), ("proxy-send-timeout", "120")]);
        assert!(problems.is_empty());
        assert_eq!(out.route().idle_timeout_ms, Some(3_600_000));
        assert_eq!(out.route().upstream_idle_timeout_ms, Some(3_600_000));
        let (out, _) = annotated(&[("proxy-read-timeout", "5")]);
        assert_eq!(
            out.route().upstream_idle_timeout_ms,
            Some(5_000),
            "the read timeout bounds the wait"
        );
        assert_eq!(
            out.route().idle_timeout_ms,
            Some(60_000),
            "the send timeout's 60 s default"
        );
    }

    #[test]
    fn next_upstream_statuses_and_non_idempotent_are_envoys_retry_conditions() {
        let (out, _) = annotated(&[
            ("proxy-next-upstream", "error http_502 http_503 non_idempotent"),
            ("proxy-next-upstream-tries", "4"),
        ]);
        let retry = out.route().retry.unwrap();
        assert!(retry.on.contains(&RetryOn::RetriableStatusCodes));
        assert_eq!(retry.status_codes, [502, 503].into());
        assert_eq!(retry.retries, 3);
        assert!(!retry.idempotent_only);
    }

    #[test]
    fn next_upstream_off_or_one_try_retries_nothing() {
        assert_eq!(annotated(&[("proxy-next-upstream", "off")]).0.route().retry, None);
        assert_eq!(annotated(&[("proxy-next-upstream-tries", "1")]).0.route().retry, None);
        assert_eq!(
            annotated(&[("proxy-next-upstream-tries", "0")])
                .0
                .route()
                .retry
                .unwrap()
                .retries,
            UNLIMITED_RETRIES
        );
    }

    #[test]
    fn a_value_ingress_nginx_refuses_leaves_the_configmaps() {
        let (out, problems) = annotated(&[("proxy-read-timeout", "60s"), ("proxy-next-upstream", "error http_418")]);
        assert_eq!(out, Proxying::default());
        let names: Vec<&str> = problems.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["proxy-read-timeout", "proxy-next-upstream"]);
        assert!(problems.iter().all(|p| p.reason == Reason::AnnotationInvalid));
    }

    #[test]
    fn a_next_upstream_timeout_is_reported_not_honoured() {
        let (_, problems) = annotated(&[("proxy-next-upstream-timeout", "10")]);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].reason, Reason::AnnotationNotHonored);
        assert!(annotated(&[("proxy-next-upstream-timeout", "0")]).1.is_empty());
    }

    #[test]
    fn configmap_keys_set_every_ingresss_defaults() {
        let mut config = Proxying::default();
        assert_eq!(config.read_key("proxy-read-timeout", "300"), Some(true));
        assert_eq!(config.read_key("retry-non-idempotent", "true"), Some(true));
        assert_eq!(config.read_key("proxy-send-timeout", "x"), Some(false));
        assert_eq!(config.read_key("hsts", "true"), None);
        let route = config.route();
        assert_eq!(route.idle_timeout_ms, Some(300_000));
        assert!(!route.retry.unwrap().idempotent_only);
    }
}
