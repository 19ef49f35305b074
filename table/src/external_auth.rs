//! A rule's external authentication ([`ExternalAuth`], issue "Policies beyond the route"), as
//! ingress-nginx's `auth-url` asks nginx's `auth_request` for it: before a request goes upstream,
//! the gateway asks the auth service (a subrequest of the request's headers, without its body, to
//! the service's cluster) and:
//!
//! - a `2xx` answer lets the request go on, with the answer's `auth-response-headers` copied into
//!   it (one the answer lacks is removed: the client cannot set it); the answer's `Set-Cookie`
//!   goes on the response (on a `2xx` or `3xx` one unless `always_set_cookie`);
//! - `401` is answered `401` with the service's `WWW-Authenticate`, or, with a sign-in page, a
//!   `302` to it (its `rd` naming the request's URL);
//! - `403` is answered `403`;
//! - anything else — another status, no answer, a timeout, a refused connection — is answered
//!   `500`: the service decides, or nobody gets through.
//!
//! This module holds the policy's vocabulary and the decision on the service's answer; the
//! subrequest's headers and the call itself are the filter's (`switchyard_request::auth`).

use crate::format::Redirect;
use crate::redirect::{MoreParts, RedirectTemplate, RequestParts};

/// The status an unusable answer (or none) of the auth service is answered with.
pub const AUTH_FAILED: u16 = 500;

/// How a rule's requests are checked by an auth service.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ExternalAuth {
    /// The cluster the auth service is reached through, which the gateway's sink provides
    /// (`external-auth|http|auth.example.com|80`).
    pub cluster: String,
    /// The auth URL, for people.
    pub url: String,
    /// The subrequest's `:authority` (the auth URL's host, with its port when not the scheme's).
    pub authority: String,
    /// The subrequest's `:path` (the auth URL's path and query).
    pub path: String,
    /// The subrequest's method (`auth-method`); `None`: the request's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The sign-in page a `401` redirects to (`auth-signin`, its redirect parameter appended), as
    /// a redirect template (`${escaped_request_uri}`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signin: Option<String>,
    /// The headers of the service's `2xx` answer copied into the request (lowercase).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub response_headers: Vec<String>,
    /// The subrequest's `X-Auth-Request-Redirect` (`auth-request-redirect`); `None`: the
    /// request's URI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_redirect: Option<String>,
    /// Whether the service's `Set-Cookie` goes on every response, not only a `2xx` or `3xx` one
    /// (`auth-always-set-cookie`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub always_set_cookie: bool,
    /// How long the service may take to answer, in milliseconds.
    pub timeout_ms: u64,
}

/// What the auth service's answer makes of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthVerdict {
    /// It goes on, with these headers set (an empty value: removed).
    Allow {
        /// The `auth-response-headers`, with the answer's values.
        headers: Vec<(String, String)>,
        /// The answer's `Set-Cookie` values.
        cookies: Vec<String>,
    },
    /// It is answered locally.
    Deny {
        /// The status.
        status: u16,
        /// The headers (`WWW-Authenticate`, `Location`, `Set-Cookie`).
        headers: Vec<(String, String)>,
    },
}

/// The service's answer: its status (`None`: none came) and its headers (lowercase names).
pub struct AuthAnswer<'a> {
    /// The status.
    pub status: Option<u16>,
    /// The headers.
    pub headers: &'a [(String, String)],
}

impl AuthAnswer<'_> {
    fn values<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s str> + 's {
        (self.headers.iter())
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What `auth`'s service answering `answer` makes of the request; `signin` gives its sign-in
/// location for this request ([`signin_location`]), asked only of a `401`.
pub fn verdict(auth: &ExternalAuth, answer: &AuthAnswer<'_>, signin: impl FnOnce() -> Option<String>) -> AuthVerdict {
    let cookies: Vec<String> = answer.values("set-cookie").map(str::to_owned).collect();
    match answer.status {
        Some(200..=299) => AuthVerdict::Allow {
            headers: (auth.response_headers.iter())
                .map(|name| {
                    let value = answer.values(name).next().unwrap_or_default();
                    (name.clone(), value.to_owned())
                })
                .collect(),
            cookies,
        },
        Some(401) => match signin() {
            Some(location) => {
                let mut headers = vec![("location".to_owned(), location)];
                headers.extend(cookies.into_iter().map(|c| ("set-cookie".to_owned(), c)));
                AuthVerdict::Deny { status: 302, headers }
            }
            None => AuthVerdict::Deny {
                status: 401,
                headers: (answer.values("www-authenticate"))
                    .map(|v| ("www-authenticate".to_owned(), v.to_owned()))
                    .collect(),
            },
        },
        Some(403) => AuthVerdict::Deny {
            status: 403,
            headers: Vec::new(),
        },
        _ => AuthVerdict::Deny {
            status: AUTH_FAILED,
            headers: Vec::new(),
        },
    }
}

/// The sign-in location of `auth` for a request of these parts; `None` without a sign-in page or
/// with one that is no template.
pub fn signin_location(auth: &ExternalAuth, parts: RequestParts<'_>, http_host: &str) -> Option<String> {
    let redirect = Redirect {
        status: 302,
        url: auth.signin.clone()?,
    };
    let template = RedirectTemplate::compile(&redirect).ok()?;
    let more = MoreParts { http_host, groups: &[] };
    Some(template.location_with(parts, more))
}

/// Whether a response of `status` gets the service's cookies: a `2xx` or `3xx` one (nginx's
/// `add_header` without `always`), or any with `always_set_cookie`.
pub fn response_gets_cookies(auth: &ExternalAuth, status: u16) -> bool {
    auth.always_set_cookie || matches!(status, 200 | 201 | 204 | 206 | 301 | 302 | 303 | 304 | 307 | 308)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> ExternalAuth {
        ExternalAuth {
            cluster: "external-auth|http|auth.example|80".to_owned(),
            url: "http://auth.example/check".to_owned(),
            authority: "auth.example".to_owned(),
            path: "/check".to_owned(),
            response_headers: vec!["x-user".to_owned(), "x-groups".to_owned()],
            timeout_ms: 5000,
            ..ExternalAuth::default()
        }
    }

    fn pairs(headers: &[(&str, &str)]) -> Vec<(String, String)> {
        headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_2xx_answer_lets_the_request_on_with_the_response_headers_and_removes_those_missing() {
        let headers = pairs(&[("X-User", "alice"), ("set-cookie", "s=1")]);
        let verdict = verdict(
            &auth(),
            &AuthAnswer {
                status: Some(204),
                headers: &headers,
            },
            || None,
        );
        assert_eq!(
            verdict,
            AuthVerdict::Allow {
                headers: vec![("x-user".into(), "alice".into()), ("x-groups".into(), String::new())],
                cookies: vec!["s=1".into()],
            }
        );
    }

    #[test]
    fn a_401_is_passed_on_with_its_challenge_or_redirected_to_the_signin_page() {
        let headers = pairs(&[("www-authenticate", "Bearer")]);
        let refused = AuthAnswer {
            status: Some(401),
            headers: &headers,
        };
        assert_eq!(
            verdict(&auth(), &refused, || None),
            AuthVerdict::Deny {
                status: 401,
                headers: vec![("www-authenticate".into(), "Bearer".into())]
            }
        );
        let to = "https://login.example/start?rd=http://a.example%2Fx%3Fy%3D1";
        assert_eq!(
            verdict(&auth(), &refused, || Some(to.to_owned())),
            AuthVerdict::Deny {
                status: 302,
                headers: vec![("location".into(), to.into())]
            }
        );
    }

    #[test]
    fn a_403_is_403_and_anything_else_or_no_answer_is_500() {
        let none: Vec<(String, String)> = Vec::new();
        let of = |status| verdict(&auth(), &AuthAnswer { status, headers: &none }, || Some("x".to_owned()));
        assert_eq!(
            of(Some(403)),
            AuthVerdict::Deny {
                status: 403,
                headers: vec![]
            }
        );
        for status in [Some(302), Some(404), Some(503), Some(504), None] {
            assert_eq!(
                of(status),
                AuthVerdict::Deny {
                    status: 500,
                    headers: vec![]
                },
                "{status:?}"
            );
        }
    }

    #[test]
    fn the_signin_location_escapes_the_request_uri_as_ingress_nginx_does() {
        let mut auth = auth();
        auth.signin = Some("http://auth/auth/start?rd=${scheme}://${http_host}${escaped_request_uri}".to_owned());
        let parts = RequestParts {
            scheme: "http",
            forwarded_proto: "",
            host: "auth",
            request_uri: "/?a=b&c=d",
        };
        // ingress-nginx's e2e expectation (test/e2e/annotations/auth.go).
        assert_eq!(
            signin_location(&auth, parts, "auth").as_deref(),
            Some("http://auth/auth/start?rd=http://auth%2F%3Fa%3Db%26c%3Dd")
        );
    }

    #[test]
    fn cookies_go_on_2xx_and_3xx_responses_unless_always() {
        let mut auth = auth();
        assert!(response_gets_cookies(&auth, 200) && response_gets_cookies(&auth, 302));
        assert!(!response_gets_cookies(&auth, 503));
        auth.always_set_cookie = true;
        assert!(response_gets_cookies(&auth, 503));
    }
}
