//! External authentication's subrequest ([`AuthCall`]): what the filter sends the auth service of
//! a rule's [`ExternalAuth`], built from the request as ingress-nginx's template builds its
//! `/_external-auth-…` location: the request's headers (its body is not sent: `Content-Length`
//! and `Transfer-Encoding` are dropped, and `X-Forwarded-Proto`, which the template blanks), to the
//! auth URL's host and path, with `X-Original-URL`, `X-Original-Method`, `X-Sent-From`,
//! `X-Real-IP`, `X-Forwarded-For` and `X-Auth-Request-Redirect` (and, with `auth-method`,
//! `X-Original-URI` and `X-Scheme`). The filter sends it over its host (proxy-wasm's HTTP call,
//! the module's callout) and decides on the answer with [`switchyard_table::external_auth::verdict`].

use std::net::IpAddr;
use std::sync::Arc;

use switchyard_table::external_auth::{self, AuthAnswer, AuthVerdict, ExternalAuth};
use switchyard_table::redirect::{forwarded_proto, RequestParts};
use switchyard_table::{normalize_authority, RequestView};

use crate::host::Host;

/// The headers of a request never sent to the auth service: the body's (none is sent), those the
/// template sets itself, hop-by-hop ones, and Switchyard's own.
const NOT_SENT: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "x-forwarded-proto",
    "host",
    "x-original-url",
    "x-original-method",
    "x-original-uri",
    "x-scheme",
    "x-sent-from",
    "x-real-ip",
    "x-forwarded-for",
    "x-auth-request-redirect",
    "connection",
    "keep-alive",
    "te",
    "upgrade",
    "expect",
    "proxy-connection",
];

/// One request's subrequest to its rule's auth service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthCall {
    /// The rule's external authentication.
    pub auth: Arc<ExternalAuth>,
    /// The subrequest's headers, pseudo-headers first.
    pub headers: Vec<(String, String)>,
    /// What this request's sign-in location is built from, with a sign-in page: built only if
    /// the service answers `401` ([`AuthCall::signin`]).
    signin: Option<SigninRequest>,
}

/// The parts of a request a sign-in location names, owned until the service answers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SigninRequest {
    scheme: &'static str,
    forwarded_proto: String,
    host: String,
    request_uri: String,
    http_host: String,
}

impl AuthCall {
    /// The subrequest of `request` (whose own headers are `headers`, the cluster header and
    /// Switchyard's others left out by the caller) from `client`, to `auth`'s service.
    pub fn new<'h>(
        auth: &Arc<ExternalAuth>,
        request: &impl RequestView,
        headers: impl Iterator<Item = (&'h str, &'h str)>,
        client: Option<IpAddr>,
    ) -> AuthCall {
        let scheme = match request.any_header_value(":scheme", &mut |s| s.eq_ignore_ascii_case("https")) {
            true => "https",
            false => "http",
        };
        let (http_host, request_uri, method) = (request.authority(), request.path(), request.method());
        let sent_method = auth.method.as_deref().unwrap_or(method);
        let mut out: Vec<(String, String)> = [
            (":method", sent_method),
            (":path", auth.path.as_str()),
            (":authority", auth.authority.as_str()),
            (":scheme", "http"),
        ]
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
        for (name, value) in headers {
            if !name.starts_with(':') && !NOT_SENT.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                out.push((name.to_ascii_lowercase(), value.to_owned()));
            }
        }
        let mut add = |name: &str, value: String| out.push((name.to_owned(), value));
        add("x-original-url", format!("{scheme}://{http_host}{request_uri}"));
        add("x-original-method", method.to_owned());
        add("x-sent-from", "nginx-ingress-controller".to_owned());
        if let Some(client) = client {
            add("x-real-ip", client.to_string());
            add("x-forwarded-for", client.to_string());
        }
        let redirect = auth.request_redirect.as_deref().unwrap_or(request_uri);
        add("x-auth-request-redirect", redirect.to_owned());
        if auth.method.is_some() {
            add("x-original-uri", request_uri.to_owned());
            add("x-scheme", scheme.to_owned());
        }
        let signin = auth.signin.as_ref().map(|_| SigninRequest {
            scheme,
            forwarded_proto: forwarded_proto(request),
            host: normalize_authority(http_host).into_owned(),
            request_uri: request_uri.to_owned(),
            http_host: http_host.to_owned(),
        });
        AuthCall {
            auth: Arc::clone(auth),
            headers: out,
            signin,
        }
    }

    /// Where a `401` redirects this request: its rule's sign-in page for it; `None` without one.
    pub fn signin(&self) -> Option<String> {
        let request = self.signin.as_ref()?;
        let parts = RequestParts {
            scheme: request.scheme,
            forwarded_proto: &request.forwarded_proto,
            host: &request.host,
            request_uri: &request.request_uri,
        };
        external_auth::signin_location(&self.auth, parts, &request.http_host)
    }

    /// What the service's answer (`status`, `None` when none came; its headers) makes of the
    /// request.
    pub fn verdict(&self, status: Option<u16>, headers: &[(String, String)]) -> AuthVerdict {
        external_auth::verdict(&self.auth, &AuthAnswer { status, headers }, || self.signin())
    }
}

/// The service's cookies, for the response of a request it let through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthCookies {
    /// The rule's external authentication.
    pub auth: Arc<ExternalAuth>,
    /// The answer's `Set-Cookie` values.
    pub cookies: Vec<String>,
}

impl AuthCookies {
    /// The cookies a response of `status` gets.
    pub fn for_status(&self, status: u16) -> &[String] {
        match external_auth::response_gets_cookies(&self.auth, status) {
            true => &self.cookies,
            false => &[],
        }
    }
}

/// Acts on `verdict` for a request its host paused: an allowed request gets the answer's headers
/// (an empty value removes the header) and goes on, with the cookies for its response; a denied
/// one is answered. `true` when the request goes on.
pub fn act(host: &mut impl Host, call: &AuthCall, verdict: AuthVerdict) -> (bool, Option<AuthCookies>) {
    match verdict {
        AuthVerdict::Allow { headers, cookies } => {
            for (name, value) in &headers {
                match value.is_empty() {
                    true => host.remove_request_header(name),
                    // Best effort, as the rule's own headers.
                    false => drop(host.set_request_header(name, value)),
                }
            }
            let cookies = (!cookies.is_empty()).then(|| AuthCookies {
                auth: Arc::clone(&call.auth),
                cookies,
            });
            (true, cookies)
        }
        AuthVerdict::Deny { status, headers } => {
            let mut all: Vec<(&str, &str)> = vec![("content-type", "text/plain")];
            all.extend(headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
            host.send_response(status, &all, reply_body(status));
            (false, None)
        }
    }
}

/// The body of a local reply the auth service's answer made: the status's meaning.
pub fn reply_body(status: u16) -> &'static str {
    match status {
        401 => "401 authorization required\n",
        403 => "403 forbidden\n",
        302 => "",
        _ => "500 the auth service did not answer usably\n",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_table::SimpleRequest;

    #[test]
    fn the_subrequest_carries_the_request_headers_without_body_and_the_templates_own() {
        let auth = Arc::new(ExternalAuth {
            cluster: "external-auth|http|auth.example|80".to_owned(),
            authority: "auth.example".to_owned(),
            path: "/check?x=1".to_owned(),
            signin: Some("https://login.example/?rd=${scheme}://${http_host}${escaped_request_uri}".to_owned()),
            timeout_ms: 1000,
            ..ExternalAuth::default()
        });
        let request = SimpleRequest::get("shop.example", "/cart?id=2").method("POST");
        let sent = [
            ("cookie", "s=1"),
            ("content-length", "12"),
            ("X-Forwarded-For", "6.6.6.6"),
            ("authorization", "Bearer t"),
        ];
        let call = AuthCall::new(&auth, &request, sent.into_iter(), "10.1.2.3".parse().ok());
        let get = |name: &str| -> Vec<&str> {
            (call.headers.iter())
                .filter(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
                .collect()
        };
        assert_eq!(get(":method"), ["POST"], "the request's method without auth-method");
        assert_eq!(get(":path"), ["/check?x=1"]);
        assert_eq!(get(":authority"), ["auth.example"]);
        assert_eq!(get("cookie"), ["s=1"]);
        assert_eq!(get("authorization"), ["Bearer t"]);
        assert!(get("content-length").is_empty());
        assert_eq!(
            get("x-forwarded-for"),
            ["10.1.2.3"],
            "the client's, not the one it sent"
        );
        assert_eq!(get("x-original-url"), ["http://shop.example/cart?id=2"]);
        assert_eq!(get("x-original-method"), ["POST"]);
        assert_eq!(get("x-auth-request-redirect"), ["/cart?id=2"]);
        assert_eq!(get("x-sent-from"), ["nginx-ingress-controller"]);
        assert!(get("x-original-uri").is_empty(), "only with auth-method");
        assert_eq!(
            call.signin().as_deref(),
            Some("https://login.example/?rd=http://shop.example%2Fcart%3Fid%3D2")
        );
    }
}
