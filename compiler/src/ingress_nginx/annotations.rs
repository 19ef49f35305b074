//! ROUTING.md §7.5, §7.7, §7.9: an Ingress's ingress-nginx annotations read once into a typed
//! value. Each annotation is valid or listed as `AnnotationInvalid` (ignored, as ingress-nginx
//! ignores a value it refuses); every other annotation with the prefix is listed as
//! `AnnotationNotHonored`, one per annotation, but an access control (§9, [`super::access`]), which
//! is never merely not honoured; the canary's (§7.6) are kept raw for [`super::canary::read`].

use std::collections::BTreeMap;

use super::access::{is_access_annotation, ENABLE_GLOBAL_AUTH};
use super::proxying::{self, Setting};
use super::upstream::{self, IngressAffinity, ProxySsl};
use super::{buffering, cors, ratelimit};
use crate::status::{ConditionKind, Reason};
use crate::upstream::variant::{Balance, UpstreamProtocol};
use switchyard_table::{Cors, RateLimit};

/// One annotation reported on its Ingress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The annotation's name without the prefix (`auth-url`).
    pub name: String,
    /// `AnnotationInvalid` or `AnnotationNotHonored`.
    pub reason: Reason,
    /// Why, for the status message.
    pub message: String,
}

/// `rewrite-target`: a path with `$1`…`$9`, or an absolute URL answered with a 302 (§7.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RewriteTarget {
    /// The new path.
    Path(String),
    /// `http://…` or `https://…`: a 302 there, the query appended.
    Url(String),
}

/// A redirect annotation with its code (§7.7.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectTo {
    /// The URL as written (relative when it starts with `/`).
    pub url: String,
    /// The status.
    pub code: u16,
}

/// The annotations §7 routes by, each `None` when absent or invalid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngressNginxAnnotations {
    /// `use-regex`.
    pub use_regex: Option<bool>,
    /// `rewrite-target`.
    pub rewrite_target: Option<RewriteTarget>,
    /// `x-forwarded-prefix` (an empty value is absent).
    pub x_forwarded_prefix: Option<String>,
    /// `upstream-vhost`.
    pub upstream_vhost: Option<String>,
    /// `from-to-www-redirect`.
    pub from_to_www_redirect: Option<bool>,
    /// `app-root`.
    pub app_root: Option<String>,
    /// `temporal-redirect` with `temporal-redirect-code`.
    pub temporal_redirect: Option<RedirectTo>,
    /// `permanent-redirect` with `permanent-redirect-code`.
    pub permanent_redirect: Option<RedirectTo>,
    /// `ssl-redirect`.
    pub ssl_redirect: Option<bool>,
    /// `force-ssl-redirect`.
    pub force_ssl_redirect: Option<bool>,
    /// `preserve-trailing-slash`.
    pub preserve_trailing_slash: Option<bool>,
    /// `ssl-passthrough` (ROUTING.md §8.4; honoured with `--ingress-nginx-enable-ssl-passthrough`).
    pub ssl_passthrough: Option<bool>,
    /// `server-alias`, split on `,`, trimmed, lowercase.
    pub server_alias: Vec<String>,
    /// `backend-protocol` (HTTP when absent, invalid or not honoured).
    pub backend_protocol: UpstreamProtocol,
    /// `proxy-connect-timeout` in milliseconds (the ConfigMap's when absent or invalid).
    pub proxy_connect_timeout_ms: Option<u32>,
    /// `service-upstream`: the Service's cluster IP as the backend, not its endpoints.
    pub service_upstream: Option<bool>,
    /// The `proxy-ssl-*` annotations: the check of an HTTPS backend's certificate.
    pub proxy_ssl: ProxySsl,
    /// `load-balance`.
    pub load_balance: Balance,
    /// `proxy-body-size` in bytes, `Some(None)` for `0` (no limit); `None` when absent or invalid
    /// (the ConfigMap's stands).
    pub proxy_body_size: Option<Option<u64>>,
    /// `enable-cors` with the `cors-*` annotations.
    pub cors: Option<Cors>,
    /// `limit-rps`, `limit-rpm` with `limit-burst-multiplier`, `limit-connections` and
    /// `limit-whitelist` (its zone and statuses are the processor's: the Ingress, the ConfigMap's
    /// `limit-req-status-code` and `limit-conn-status-code`).
    pub rate_limit: Option<RateLimit>,
    /// The timeouts and retries set (`proxy-read-timeout`, …), over the ConfigMap's.
    pub proxying: Vec<Setting>,
    /// `affinity: cookie` with `session-cookie-*`, or `upstream-hash-by`.
    pub affinity: Option<IngressAffinity>,
    /// The canary's annotations (§7.6, read by [`super::canary::read`]), name without prefix → value.
    pub canary: BTreeMap<String, String>,
    /// Every annotation reported, in name order.
    pub problems: Vec<Problem>,
}

/// The annotations this module reads (the canary's aside).
const READ: &[&str] = &[
    "use-regex",
    "rewrite-target",
    "x-forwarded-prefix",
    "upstream-vhost",
    "from-to-www-redirect",
    "app-root",
    "temporal-redirect",
    "temporal-redirect-code",
    "permanent-redirect",
    "permanent-redirect-code",
    "ssl-redirect",
    "force-ssl-redirect",
    "preserve-trailing-slash",
    "server-alias",
    "ssl-passthrough",
    "backend-protocol",
    "proxy-connect-timeout",
    "service-upstream",
    "proxy-body-size",
];

/// ROUTING.md §7.9: annotations ingress-nginx v1.15 itself does not read: removed from it
/// (`grpc-backend`, `secure-backends`, `session-cookie-hash`, InfluxDB, OpenTracing, …), or ConfigMap
/// keys written as annotations (`ssl-protocols`, `hsts`, `use-forwarded-headers`, …). Not its access
/// controls: every `auth-*` is read by it (§9).
const NOT_READ_BY_INGRESS_NGINX: &[&str] = &[
    "add-base-url",
    "base-url-scheme",
    "enable-influxdb",
    "enable-opentracing",
    "enable-real-ip",
    "enable-websockets",
    "forwarded-for-header",
    "grpc-backend",
    "health-check-interval",
    "health-check-path",
    "health-check-timeout",
    "hsts",
    "hsts-include-subdomains",
    "hsts-max-age",
    "hsts-preload",
    "influxdb-host",
    "influxdb-measurement",
    "influxdb-port",
    "influxdb-server-name",
    "ingress.class",
    "opentracing-trust-incoming-span",
    "proxy-cache-key",
    "proxy-cache-valid",
    "rate-limit",
    "rate-limit-connections",
    "rate-limit-window",
    "secure-backends",
    "secure-verify-ca-secret",
    "session-cookie-hash",
    "single-spa-support",
    "ssl-protocols",
    "use-forwarded-headers",
    "websocket-services",
];

impl Problem {
    /// The condition's type: a note for an annotation ingress-nginx itself does not read, a warning
    /// otherwise.
    pub fn kind(&self) -> ConditionKind {
        match self.reason {
            Reason::AnnotationNotRead | Reason::AnnotationEquivalent => ConditionKind::Info,
            _ => ConditionKind::Warning,
        }
    }
}

impl IngressNginxAnnotations {
    /// Reads the annotations that start with `prefix` + `/` (others are not ingress-nginx's).
    pub fn parse(annotations: &BTreeMap<String, String>, prefix: &str) -> IngressNginxAnnotations {
        let mut out = IngressNginxAnnotations::default();
        let mine: BTreeMap<&str, &str> = annotations
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(prefix)?.strip_prefix('/')?, v.as_str())))
            .collect();
        for (&name, &value) in &mine {
            if name.starts_with("canary") {
                out.canary.insert(name.to_owned(), value.to_owned());
            } else if NOT_READ_BY_INGRESS_NGINX.contains(&name) {
                out.problems.push(Problem {
                    name: name.to_owned(),
                    reason: Reason::AnnotationNotRead,
                    message: format!(
                        "{prefix}/{name} is not read by ingress-nginx v1.15 (removed, or a ConfigMap key written as an \
                         annotation): ignored here as it was there"
                    ),
                });
            } else if !READ.contains(&name)
                && !upstream::READ.contains(&name)
                && !proxying::READ.contains(&name)
                && !cors::READ.contains(&name)
                && !ratelimit::READ.contains(&name)
                && !buffering::reads(name)
                && !is_access_annotation(name)
                && name != ENABLE_GLOBAL_AUTH
            {
                out.problems.push(Problem {
                    name: name.to_owned(),
                    reason: Reason::AnnotationNotHonored,
                    message: not_honored_message(prefix, name),
                });
            }
        }
        let mut invalid = |name: &str, why: &str| {
            out.problems.push(Problem {
                name: name.to_owned(),
                reason: Reason::AnnotationInvalid,
                message: format!("{prefix}/{name}: {why}; ignored"),
            });
        };
        let mut boolean = |name: &str| {
            let value = mine.get(name)?;
            let parsed = parse_bool(value);
            if parsed.is_none() {
                invalid(name, &format!("{value:?} is not a boolean"));
            }
            parsed
        };
        let use_regex = boolean("use-regex");
        let from_to_www_redirect = boolean("from-to-www-redirect");
        let ssl_redirect = boolean("ssl-redirect");
        let force_ssl_redirect = boolean("force-ssl-redirect");
        let preserve_trailing_slash = boolean("preserve-trailing-slash");
        out.ssl_passthrough = boolean("ssl-passthrough");
        out.service_upstream = boolean("service-upstream");
        out.use_regex = use_regex;
        out.from_to_www_redirect = from_to_www_redirect;
        out.ssl_redirect = ssl_redirect;
        out.force_ssl_redirect = force_ssl_redirect;
        out.preserve_trailing_slash = preserve_trailing_slash;
        let mut invalid = |name: &str, why: String| {
            out.problems.push(Problem {
                name: name.to_owned(),
                reason: Reason::AnnotationInvalid,
                message: format!("{prefix}/{name}: {why}; ignored"),
            });
        };
        let rewrite_target = mine.get("rewrite-target").and_then(|t| match rewrite_target(t) {
            Ok(target) => Some(target),
            Err(why) => {
                invalid("rewrite-target", why);
                None
            }
        });
        let upstream_vhost = mine
            .get("upstream-vhost")
            .and_then(|h| match h.contains('$') || h.trim().is_empty() {
                true => {
                    invalid("upstream-vhost", format!("{h:?} holds an nginx variable or is empty"));
                    None
                }
                false => Some(h.trim().to_owned()),
            });
        let app_root =
            mine.get("app-root")
                .and_then(|p| match p.starts_with('/') && !p.contains(char::is_whitespace) {
                    true => Some((*p).to_owned()),
                    false => {
                        invalid("app-root", format!("{p:?} is not an absolute path"));
                        None
                    }
                });
        let mut redirect = |name: &str, code_name: &str, codes: std::ops::RangeInclusive<u16>, default: u16| {
            let url = mine.get(name)?;
            if !valid_redirect_url(url) {
                invalid(name, format!("{url:?} is not a URL"));
                return None;
            }
            // A code outside its range (or not a number) is the default, as ingress-nginx does.
            let code = mine.get(code_name).and_then(|c| c.trim().parse::<u16>().ok());
            let code = code.filter(|c| codes.contains(c)).unwrap_or(default);
            Some(RedirectTo {
                url: (*url).to_owned(),
                code,
            })
        };
        out.temporal_redirect = redirect("temporal-redirect", "temporal-redirect-code", 300..=307, 302);
        out.permanent_redirect = redirect("permanent-redirect", "permanent-redirect-code", 300..=308, 301);
        out.rewrite_target = rewrite_target;
        out.upstream_vhost = upstream_vhost;
        out.app_root = app_root;
        out.x_forwarded_prefix = mine
            .get("x-forwarded-prefix")
            .filter(|v| !v.is_empty())
            .map(|v| (*v).to_owned());
        out.backend_protocol = mine.get("backend-protocol").map_or(UpstreamProtocol::Http, |value| {
            backend_protocol(value).unwrap_or_else(|(reason, why)| {
                out.problems.push(Problem {
                    name: "backend-protocol".to_owned(),
                    reason,
                    message: format!("{prefix}/backend-protocol: {value:?} {why}; the backend is spoken to in HTTP"),
                });
                UpstreamProtocol::Http
            })
        });
        out.proxy_connect_timeout_ms = mine.get("proxy-connect-timeout").and_then(|value| {
            let ms = super::configmap::seconds_ms(value);
            if ms.is_none() {
                out.problems.push(Problem {
                    name: "proxy-connect-timeout".to_owned(),
                    reason: Reason::AnnotationInvalid,
                    message: format!(
                        "{prefix}/proxy-connect-timeout: {value:?} is not a number of seconds; the ConfigMap's (5 by default) stands"
                    ),
                });
            }
            ms
        });
        out.proxy_body_size = mine.get("proxy-body-size").and_then(|value| {
            let size = crate::nginx::size_bytes(value);
            if size.is_none() {
                out.problems.push(Problem {
                    name: "proxy-body-size".to_owned(),
                    reason: Reason::AnnotationInvalid,
                    message: format!(
                        "{prefix}/proxy-body-size: {value:?} is not a size (bytes, or with k, m or g); the ConfigMap's \
                         (1m by default) stands"
                    ),
                });
            }
            size
        });
        out.proxy_ssl = ProxySsl::read(&mine, prefix, &mut out.problems);
        out.proxying = Setting::annotations(&mine, prefix, &mut out.problems);
        out.cors = cors::read(&mine, prefix, &mut out.problems);
        out.rate_limit = ratelimit::read(&mine, (prefix, String::new()), (503, 503), &mut out.problems);
        buffering::report(&mine, prefix, &mut out.problems);
        out.load_balance = upstream::load_balance(&mine, prefix, &mut out.problems);
        out.affinity = IngressAffinity::read(&mine, prefix, &mut out.problems);
        out.server_alias = (mine.get("server-alias").into_iter())
            .flat_map(|v| v.split(','))
            .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        out.problems.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Whether the Ingress is a canary (`canary: "true"`, §7.6): it has no locations of its own.
    pub fn is_canary(&self) -> bool {
        self.canary.get("canary").and_then(|v| parse_bool(v)) == Some(true)
    }

    /// Whether this Ingress's locations turn their server's regex mode on (§7.4): `use-regex`, or
    /// a path `rewrite-target` different from the location's `path`.
    pub fn turns_regex_mode_on(&self, path: &str) -> bool {
        self.use_regex == Some(true)
            || matches!(&self.rewrite_target, Some(RewriteTarget::Path(t)) if t != path)
            || matches!(&self.rewrite_target, Some(RewriteTarget::Url(_)))
    }
}

/// `backend-protocol`'s value as ingress-nginx v1.15 reads it (trimmed, upper case, one of
/// `AUTO_HTTP|HTTP|HTTPS|AJP|GRPC|GRPCS|FCGI`), or why it is not used.
fn backend_protocol(value: &str) -> Result<UpstreamProtocol, (Reason, &'static str)> {
    match value.trim().to_ascii_uppercase().as_str() {
        "HTTP" => Ok(UpstreamProtocol::Http),
        "HTTPS" => Ok(UpstreamProtocol::Tls),
        "GRPC" => Ok(UpstreamProtocol::H2c),
        "GRPCS" => Ok(UpstreamProtocol::TlsH2),
        "AUTO_HTTP" => Err((
            Reason::AnnotationNotHonored,
            "(the request's own scheme, per request) is not honoured yet",
        )),
        "FCGI" | "AJP" => Err((Reason::AnnotationNotHonored, "is a protocol Envoy does not speak")),
        _ => Err((
            Reason::AnnotationInvalid,
            "is not one of AUTO_HTTP, HTTP, HTTPS, AJP, GRPC, GRPCS, FCGI (ingress-nginx takes HTTP)",
        )),
    }
}

/// The message of an `AnnotationNotHonored` condition (the condition is about the annotation,
/// [`crate::status::About::Field`], which the migration report counts by).
pub fn not_honored_message(prefix: &str, name: &str) -> String {
    format!("{prefix}/{name} is not honoured; the Ingress routes as if it were absent")
}

/// Go's `strconv.ParseBool`, which ingress-nginx reads booleans with.
pub(super) fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// §7.5: ingress-nginx accepts a `rewrite-target` matching `^/?[-._~a-zA-Z0-9/:$]*$`.
fn rewrite_target(target: &str) -> Result<RewriteTarget, String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~/:$".contains(c);
    if !target.chars().all(allowed) {
        return Err(format!("{target:?} has a character outside [-._~a-zA-Z0-9/:$]"));
    }
    // `$` followed by anything but a digit is an nginx variable, which the table cannot fill in.
    let bytes = target.as_bytes();
    if (bytes.iter().enumerate()).any(|(i, &b)| b == b'$' && !bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
        return Err(format!(
            "{target:?} names an nginx variable; only $1 to $9 are filled in"
        ));
    }
    if target.starts_with("http://") || target.starts_with("https://") {
        return Ok(RewriteTarget::Url(target.to_owned()));
    }
    // `rewrite ... T` with T not starting with `/` is relative to nothing: ingress-nginx's regex
    // allows it (`^/?`); nginx then sends it as written. The table needs a leading `/`.
    Ok(RewriteTarget::Path(match target.starts_with('/') {
        true => target.to_owned(),
        false => format!("/{target}"),
    }))
}

/// A redirect URL: absolute `http(s)://host…`, or relative `/…`; no white space, no `$`.
fn valid_redirect_url(url: &str) -> bool {
    let shaped = url.starts_with('/') || url.starts_with("http://") || url.starts_with("https://");
    shaped && !url.contains(|c: char| c.is_whitespace() || c.is_control() || c == '$')
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "nginx.ingress.kubernetes.io";

    fn parse(pairs: &[(&str, &str)]) -> IngressNginxAnnotations {
        let map = pairs
            .iter()
            .map(|(k, v)| (format!("{P}/{k}"), (*v).to_owned()))
            .collect();
        IngressNginxAnnotations::parse(&map, P)
    }

    fn reasons(a: &IngressNginxAnnotations) -> Vec<(&str, Reason)> {
        a.problems.iter().map(|p| (p.name.as_str(), p.reason)).collect()
    }

    #[test]
    fn rewrite_target_with_groups_is_a_path() {
        let a = parse(&[("rewrite-target", "/$2"), ("use-regex", "true")]);
        assert_eq!(a.rewrite_target, Some(RewriteTarget::Path("/$2".into())));
        assert_eq!(a.use_regex, Some(true));
        assert!(a.problems.is_empty());
    }

    #[test]
    fn rewrite_target_to_an_absolute_url_is_a_redirect() {
        let a = parse(&[("rewrite-target", "https://new.example/$1")]);
        assert_eq!(
            a.rewrite_target,
            Some(RewriteTarget::Url("https://new.example/$1".into()))
        );
    }

    #[test]
    fn rewrite_target_ingress_nginx_would_refuse_is_invalid() {
        for bad in ["/a b", "/a?x=1", "/$host", "/a;b"] {
            let a = parse(&[("rewrite-target", bad)]);
            assert_eq!(a.rewrite_target, None, "{bad}");
            assert_eq!(reasons(&a), [("rewrite-target", Reason::AnnotationInvalid)], "{bad}");
        }
    }

    #[test]
    fn x_forwarded_prefix_empty_is_absent() {
        assert_eq!(parse(&[("x-forwarded-prefix", "")]).x_forwarded_prefix, None);
        assert_eq!(
            parse(&[("x-forwarded-prefix", "/p")]).x_forwarded_prefix.as_deref(),
            Some("/p")
        );
    }

    #[test]
    fn upstream_vhost_with_an_nginx_variable_is_invalid() {
        let a = parse(&[("upstream-vhost", "$host.internal")]);
        assert_eq!(a.upstream_vhost, None);
        assert_eq!(reasons(&a), [("upstream-vhost", Reason::AnnotationInvalid)]);
        assert_eq!(
            parse(&[("upstream-vhost", "b.internal")]).upstream_vhost.as_deref(),
            Some("b.internal")
        );
    }

    #[test]
    fn temporal_redirect_code_outside_300_to_307_is_302() {
        let code = |c: &str| {
            parse(&[("temporal-redirect", "/x"), ("temporal-redirect-code", c)])
                .temporal_redirect
                .unwrap()
                .code
        };
        assert_eq!(code("307"), 307);
        assert_eq!(code("308"), 302);
        assert_eq!(code("abc"), 302);
    }

    #[test]
    fn permanent_redirect_code_outside_300_to_308_is_301() {
        let code = |c: &str| {
            parse(&[
                ("permanent-redirect", "https://x.example/"),
                ("permanent-redirect-code", c),
            ])
            .permanent_redirect
            .unwrap()
            .code
        };
        assert_eq!(code("308"), 308);
        assert_eq!(code("309"), 301);
        assert_eq!(
            parse(&[("permanent-redirect", "https://x.example/")])
                .permanent_redirect
                .unwrap()
                .code,
            301
        );
    }

    #[test]
    fn redirect_url_that_is_not_a_url_is_invalid() {
        let a = parse(&[("permanent-redirect", "not a url")]);
        assert_eq!(a.permanent_redirect, None);
        assert_eq!(reasons(&a), [("permanent-redirect", Reason::AnnotationInvalid)]);
    }

    #[test]
    fn booleans_are_read_as_go_reads_them() {
        let a = parse(&[
            ("ssl-redirect", "False"),
            ("force-ssl-redirect", "1"),
            ("preserve-trailing-slash", "yes"),
        ]);
        assert_eq!(
            (a.ssl_redirect, a.force_ssl_redirect, a.preserve_trailing_slash),
            (Some(false), Some(true), None)
        );
        assert_eq!(reasons(&a), [("preserve-trailing-slash", Reason::AnnotationInvalid)]);
    }

    #[test]
    fn app_root_must_be_an_absolute_path() {
        assert_eq!(parse(&[("app-root", "/app")]).app_root.as_deref(), Some("/app"));
        assert_eq!(
            reasons(&parse(&[("app-root", "app")])),
            [("app-root", Reason::AnnotationInvalid)]
        );
    }

    #[test]
    fn server_alias_is_split_trimmed_and_lowercased() {
        assert_eq!(
            parse(&[("server-alias", "A.example, b.example.,")]).server_alias,
            ["a.example", "b.example"]
        );
    }

    #[test]
    fn every_other_annotation_with_the_prefix_but_access_controls_is_not_honored_one_warning_each() {
        let a = parse(&[
            ("auth-url", "http://auth"),
            ("limit-rate", "100"),
            ("configuration-snippet", "x"),
            ("use-regex", "true"),
        ]);
        assert_eq!(
            reasons(&a),
            [
                ("configuration-snippet", Reason::AnnotationNotHonored),
                ("limit-rate", Reason::AnnotationNotHonored),
            ]
        );
    }

    #[test]
    fn an_annotation_ingress_nginx_does_not_read_is_a_note_not_a_warning() {
        let a = parse(&[
            ("grpc-backend", "true"),
            ("ssl-protocols", "TLSv1.3"),
            ("limit-rate", "100"),
        ]);
        assert_eq!(
            reasons(&a),
            [
                ("grpc-backend", Reason::AnnotationNotRead),
                ("limit-rate", Reason::AnnotationNotHonored),
                ("ssl-protocols", Reason::AnnotationNotRead),
            ]
        );
        let kinds: Vec<ConditionKind> = a.problems.iter().map(Problem::kind).collect();
        assert_eq!(
            kinds,
            [ConditionKind::Info, ConditionKind::Warning, ConditionKind::Info]
        );
    }

    #[test]
    fn canary_annotations_are_kept_for_the_canary_and_not_reported() {
        let a = parse(&[("canary", "true"), ("canary-weight", "10")]);
        assert!(a.problems.is_empty());
        assert_eq!(a.canary.get("canary-weight").map(String::as_str), Some("10"));
    }

    #[test]
    fn the_prefix_is_configurable_and_others_are_not_read() {
        let map: BTreeMap<String, String> = [
            ("custom.io/use-regex".to_owned(), "true".to_owned()),
            (format!("{P}/auth-url"), "x".to_owned()),
        ]
        .into();
        let a = IngressNginxAnnotations::parse(&map, "custom.io");
        assert_eq!(a.use_regex, Some(true));
        assert!(a.problems.is_empty());
    }

    #[test]
    fn regex_mode_is_turned_on_by_use_regex_or_a_rewrite_target_other_than_the_path() {
        assert!(parse(&[("use-regex", "true")]).turns_regex_mode_on("/a"));
        assert!(parse(&[("rewrite-target", "/")]).turns_regex_mode_on("/a"));
        assert!(!parse(&[("rewrite-target", "/a")]).turns_regex_mode_on("/a"));
        assert!(!parse(&[("use-regex", "false")]).turns_regex_mode_on("/a"));
    }
}
