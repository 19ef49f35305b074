//! ingress-nginx's external authentication (`auth-url` and its family), read as v1.15's
//! `authreq` annotation parser reads it, into the rule's [`ExternalAuth`]:
//!
//! - `auth-url`: an `http` or `https` URL with a host (no `..` in it) and no nginx variable; its
//!   host and port name the auth service's cluster (`AuthService`), which the gateway's sink
//!   makes (a DNS cluster); its host is the subrequest's `Host`, its path and query its `:path`.
//! - `auth-method` (one of nginx's methods), `auth-response-headers` (header names),
//!   `auth-request-redirect`, `auth-always-set-cookie`.
//! - `auth-signin` with `auth-signin-redirect-param` (`rd`): the page a `401` redirects to, the
//!   parameter appended as `buildAuthSignURL` appends it (`?rd=$pass_access_scheme://$http_host
//!   $escaped_request_uri`, or `&rd=…`, or nothing when the URL already carries it); nginx's
//!   variables in it (`$host`, `$escaped_request_uri`, …) become the redirect template's.
//! - `auth-cache-key`, `auth-cache-duration` (an answer cached) and `auth-keepalive*` (connections
//!   kept to the service) change no decision: each request asks the service, over connections
//!   Envoy keeps; they are honoured by asking every time.
//!
//! What cannot be enforced as written is an [`Unenforceable`]: the family stays ROUTING.md §9
//! fields that deny. That is what ingress-nginx itself denies the location for (an invalid URL,
//! method or header list), nginx configuration (`auth-snippet`), headers from a ConfigMap
//! (`auth-proxy-set-headers`), a URL naming an nginx variable, and a gateway without the
//! service's cluster (a sink that makes no clusters).

use std::collections::BTreeMap;

use switchyard_table::external_auth::ExternalAuth;

use super::access::Unenforceable;
use super::configmap::ControllerConfig;
use crate::upstream::auth_service::AuthService;

/// The annotations (without the prefix) external authentication enforces when it is read.
pub const ANNOTATIONS: &[&str] = &[
    "auth-url",
    "auth-method",
    "auth-signin",
    "auth-signin-redirect-param",
    "auth-response-headers",
    "auth-request-redirect",
    "auth-always-set-cookie",
    "auth-cache-key",
    "auth-cache-duration",
    "auth-keepalive",
    "auth-keepalive-requests",
    "auth-keepalive-timeout",
    "auth-keepalive-share-vars",
];

/// The ConfigMap key of the global external authentication's URL, a §9 field of every Ingress.
pub const GLOBAL_URL: &str = "global-auth-url";

/// The methods `auth-method` may name (v1.15's validator).
const METHODS: &[&str] = &[
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE",
];

/// nginx's variables a sign-in URL may name, and the redirect template's for each.
const SIGNIN_VARIABLES: &[(&str, &str)] = &[
    ("$pass_access_scheme", "${scheme}"),
    ("$escaped_request_uri", "${escaped_request_uri}"),
    ("$best_http_host", "${http_host}"),
    ("$request_uri", "${request_uri}"),
    ("$http_host", "${http_host}"),
    ("$scheme", "${scheme}"),
    ("$host", "${host}"),
];

/// The external authentication of an Ingress with `annotations` (under `prefix`); `None` without
/// `auth-url`. `reachable`: whether the gateway's sink makes the service's cluster;
/// `timeout_ms`: how long the service may take.
pub fn read(
    annotations: &BTreeMap<String, String>,
    prefix: &str,
    (reachable, timeout_ms): (bool, u64),
) -> Option<Result<ExternalAuth, Unenforceable>> {
    let annotation = |name: &str| {
        (annotations.get(&format!("{prefix}/{name}")))
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    };
    let url = annotation("auth-url")?;
    let deny = |why: String| Some(Err(Unenforceable(why)));
    for name in ["auth-snippet", "auth-proxy-set-headers"] {
        if annotation(name).is_some() {
            return deny(format!(
                "{name} asks for nginx configuration or a ConfigMap's headers, which this gateway does not send"
            ));
        }
    }
    let (service, path) = match parse_url(url) {
        Ok(parsed) => parsed,
        Err(why) => return deny(format!("auth-url {url:?} {why}")),
    };
    if !reachable {
        return deny(
            "auth-url needs a cluster for the auth service, which only a gateway whose clusters come from switchyard \
             watch --clusters-dir or --istio-clusters has"
                .to_owned(),
        );
    }
    let method = match annotation("auth-method") {
        Some(method) if !METHODS.contains(&method) => {
            return deny(format!(
                "auth-method {method:?} is not an HTTP method ingress-nginx accepts"
            ))
        }
        method => method.map(str::to_owned),
    };
    let response_headers = match annotation("auth-response-headers").map(header_names) {
        Some(Err(why)) => return deny(why),
        Some(Ok(names)) => names,
        None => Vec::new(),
    };
    let signin = match annotation("auth-signin") {
        None => None,
        Some(signin) => {
            let param = annotation("auth-signin-redirect-param").unwrap_or("rd");
            match signin_template(signin, param) {
                Ok(template) => Some(template),
                Err(why) => return deny(format!("auth-signin {signin:?} {why}")),
            }
        }
    };
    let default_port = if service.tls { 443 } else { 80 };
    let authority = match service.port == default_port {
        true => service.host.clone(),
        false => format!("{}:{}", service.host, service.port),
    };
    Some(Ok(ExternalAuth {
        cluster: service.cluster_name(),
        url: url.to_owned(),
        authority,
        path,
        method,
        signin,
        response_headers,
        request_redirect: annotation("auth-request-redirect").map(str::to_owned),
        always_set_cookie: annotation("auth-always-set-cookie") == Some("true"),
        timeout_ms,
    }))
}

/// The ConfigMap's global external authentication (`global-auth-url` with its `global-auth-*`
/// keys, read as the annotations without `global-`); `None` without `global-auth-url`.
/// *Decision:* a key ingress-nginx would drop with a warning (an invalid URL, which turns global
/// authentication off there) is not enforceable here: every Ingress it covers denies.
pub fn read_global(config: &ControllerConfig, reach: (bool, u64)) -> Option<Result<ExternalAuth, Unenforceable>> {
    let url = (config.access.iter()).find(|(key, _)| key == GLOBAL_URL)?;
    let global = std::iter::once((&url.0, &url.1)).chain(config.global_auth.iter());
    let annotations: BTreeMap<String, String> = global
        .filter_map(|(key, value)| Some((format!("{GLOBAL}/{}", key.strip_prefix("global-")?), value.clone())))
        .collect();
    read(&annotations, GLOBAL, reach)
}

/// The prefix [`read_global`] reads the ConfigMap's keys under.
const GLOBAL: &str = "configmap";

/// An `auth-url`'s service and its path with the query (`/` when it has none).
fn parse_url(url: &str) -> Result<(AuthService, String), &'static str> {
    if url.contains('$') {
        return Err("names an nginx variable, which this gateway does not fill in");
    }
    let (tls, rest) = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (true, rest),
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => (false, rest),
        Some(_) => return Err("is not an http or https URL"),
        None => return Err("has no scheme (url scheme is empty)"),
    };
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    let path = match path {
        "" => "/".to_owned(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_owned(),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
            let port = port.parse::<u16>().map_err(|_| "has a port that is no number")?;
            (host, port)
        }
        _ => (authority, if tls { 443 } else { 80 }),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err("has no host (url host is empty)");
    }
    if host.contains("..") || host.contains('@') {
        return Err("has an invalid host");
    }
    let service = AuthService {
        tls,
        host: host.to_ascii_lowercase(),
        port,
    };
    Ok((service, path))
}

/// `auth-response-headers`' names, lowercase, validated as v1.15 validates them.
fn header_names(value: &str) -> Result<Vec<String>, String> {
    let names: Vec<&str> = value.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
    let valid = |name: &str| (name.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    match names.iter().find(|name| !valid(name)) {
        Some(bad) => Err(format!("auth-response-headers names {bad:?}, which is no header name")),
        None => Ok(names.into_iter().map(str::to_ascii_lowercase).collect()),
    }
}

/// The redirect template of a sign-in URL with its redirect parameter `param`, as
/// `buildAuthSignURL` appends it; its nginx variables as the template's.
fn signin_template(signin: &str, param: &str) -> Result<String, String> {
    let query = signin.split_once('?').map(|(_, q)| q.split('#').next().unwrap_or(q));
    let has_param = query.is_some_and(|q| {
        q.split('&')
            .any(|pair| pair.split_once('=').is_some_and(|(k, v)| k == param && !v.is_empty()))
    });
    let url = match (query, has_param) {
        (_, true) => signin.to_owned(),
        (Some(q), false) if !q.is_empty() => {
            format!("{signin}&{param}=$pass_access_scheme://$http_host$escaped_request_uri")
        }
        _ => format!("{signin}?{param}=$pass_access_scheme://$http_host$escaped_request_uri"),
    };
    let mut out = String::new();
    let mut rest = url.as_str();
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let Some((variable, template)) = SIGNIN_VARIABLES.iter().find(|(v, _)| {
            after.starts_with(v)
                && !(after[v.len()..].bytes().next()).is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        }) else {
            let name: String = after
                .chars()
                .take_while(|c| *c == '$' || c.is_alphanumeric() || *c == '_')
                .collect();
            return Err(format!("names {name}, an nginx variable this gateway does not fill in"));
        };
        out.push_str(template);
        rest = &after[variable.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "nginx.ingress.kubernetes.io";

    fn read_with(annotations: &[(&str, &str)]) -> Option<Result<ExternalAuth, Unenforceable>> {
        let annotations = (annotations.iter())
            .map(|(k, v)| (format!("{P}/{k}"), (*v).to_owned()))
            .collect();
        read(&annotations, P, (true, 60_000))
    }

    #[test]
    fn an_auth_url_names_its_service_cluster_host_and_path() {
        let auth = read_with(&[("auth-url", "http://auth.auth.svc.cluster.local:8080/verify?x=1")])
            .unwrap()
            .unwrap();
        assert_eq!(auth.cluster, "external-auth|http|auth.auth.svc.cluster.local|8080");
        assert_eq!(auth.authority, "auth.auth.svc.cluster.local:8080");
        assert_eq!(auth.path, "/verify?x=1");
        assert_eq!(
            AuthService::of_cluster(&auth.cluster),
            Some(AuthService {
                tls: false,
                host: "auth.auth.svc.cluster.local".to_owned(),
                port: 8080
            })
        );
        let secure = read_with(&[("auth-url", "https://login.example.com")])
            .unwrap()
            .unwrap();
        assert_eq!(
            (secure.cluster.as_str(), secure.authority.as_str(), secure.path.as_str()),
            ("external-auth|https|login.example.com|443", "login.example.com", "/")
        );
    }

    #[test]
    fn the_signin_url_gets_its_redirect_parameter_as_build_auth_sign_url_appends_it() {
        let signin = |url: &str, param: Option<&str>| {
            let mut annotations = vec![("auth-url", "http://auth/check"), ("auth-signin", url)];
            annotations.extend(param.map(|p| ("auth-signin-redirect-param", p)));
            read_with(&annotations).unwrap().unwrap().signin.unwrap()
        };
        let rd = "${scheme}://${http_host}${escaped_request_uri}";
        assert_eq!(
            signin("http://auth/auth/start", None),
            format!("http://auth/auth/start?rd={rd}")
        );
        assert_eq!(
            signin("https://l/start?a=b", None),
            format!("https://l/start?a=b&rd={rd}")
        );
        assert_eq!(
            signin("https://l/start", Some("orig")),
            format!("https://l/start?orig={rd}")
        );
        assert_eq!(
            signin("https://$host/oauth2/start?rd=$escaped_request_uri", None),
            "https://${host}/oauth2/start?rd=${escaped_request_uri}"
        );
    }

    #[test]
    fn what_ingress_nginx_denies_or_this_gateway_cannot_send_is_unenforceable() {
        let why = |annotations: &[(&str, &str)]| read_with(annotations).unwrap().unwrap_err().0;
        assert!(why(&[("auth-url", "https://invalid..auth.url")]).contains("invalid host"));
        assert!(why(&[("auth-url", "auth.example/check")]).contains("no scheme"));
        assert!(why(&[("auth-url", "http:///check")]).contains("no host"));
        assert!(why(&[("auth-url", "http://$host/check")]).contains("nginx variable"));
        assert!(why(&[("auth-url", "http://a/"), ("auth-method", "FETCH")]).contains("auth-method"));
        assert!(why(&[("auth-url", "http://a/"), ("auth-response-headers", "X-User, X User")]).contains("X User"));
        assert!(why(&[("auth-url", "http://a/"), ("auth-snippet", "proxy_set_header A b;")]).contains("auth-snippet"));
        assert!(
            why(&[("auth-url", "http://a/"), ("auth-signin", "https://l/?u=$remote_user")]).contains("$remote_user")
        );
        let annotations = BTreeMap::from([(format!("{P}/auth-url"), "http://a/".to_owned())]);
        let unreachable = read(&annotations, P, (false, 1)).unwrap().unwrap_err().0;
        assert!(unreachable.contains("--clusters-dir"), "{unreachable}");
        assert_eq!(
            read_with(&[("auth-method", "GET")]),
            None,
            "no auth-url, no external auth"
        );
    }
}
