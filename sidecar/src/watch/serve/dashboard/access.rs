//! Who may read the dashboard's address (`--dashboard-listen`): everyone who can reach it, or, with
//! `--dashboard-token-file`, only a client that shows the token.
//!
//! The dashboard, `/table`, `/status` and `POST /explain` show every host, path and backend of the
//! cluster and every resource's errors, so they are served on loopback by default (reached with
//! `kubectl port-forward`), and beyond loopback only with a token. A client shows it either as
//! `Authorization: Bearer TOKEN` (curl, Prometheus-style scrapers) or as the cookie that the login
//! page sets after a person typed the token into it (a browser cannot add a header to a page load).
//! Both are compared in constant time ([`subtle`]), so the time of a refusal says nothing of how
//! much of a guess was right.
//!
//! Without a credential a page load (`GET /`) answers 401 with the login form (no script, so the
//! dashboard's content security policy holds), anything else 401 with a JSON error and
//! `WWW-Authenticate: Bearer`.

use std::path::Path;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

/// The cookie the login page sets: the token, hex-encoded (a token may hold bytes a cookie cannot).
const COOKIE: &str = "switchyard-dashboard";

/// The login form, served with the 401 of a page load.
const LOGIN: &str = include_str!("assets/login.html");

/// The path the login form posts to (and that serves the form).
pub const LOGIN_PATH: &str = "/login";

/// The largest login form body read (a token of a few hundred bytes fits many times over).
const LOGIN_MAX_BODY: usize = 8 * 1024;

/// The dashboard's credential: `None` admits every client of the address.
#[derive(Clone, Default)]
pub struct Access {
    token: Option<Arc<[u8]>>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token itself.
        f.debug_struct("Access")
            .field("token", &self.token.as_ref().map(|_| "…"))
            .finish()
    }
}

impl Access {
    /// Every client admitted (loopback without `--dashboard-token-file`).
    pub fn open() -> Access {
        Access { token: None }
    }

    /// The token read from `path` (`--dashboard-token-file`): the file's content without surrounding
    /// whitespace (a Kubernetes Secret mounted as a file often ends with a newline).
    pub fn from_token_file(path: &Path) -> Result<Access, String> {
        let text = std::fs::read(path).map_err(|e| format!("--dashboard-token-file {}: {e}", path.display()))?;
        let token = text.trim_ascii();
        if token.is_empty() {
            return Err(format!(
                "--dashboard-token-file {}: the file is empty; put the token in it (for example `head -c 32 /dev/urandom | base64`)",
                path.display()
            ));
        }
        Ok(Access::with_token(token))
    }

    /// Admits only clients that show `token`.
    pub fn with_token(token: &[u8]) -> Access {
        Access {
            token: Some(token.into()),
        }
    }

    /// Whether a token is asked for.
    pub fn needs_token(&self) -> bool {
        self.token.is_some()
    }

    /// Whether these request headers carry the token (as a bearer token or the login cookie).
    pub fn admits(&self, headers: &HeaderMap) -> bool {
        let Some(token) = &self.token else { return true };
        let bearer = headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .filter_map(|value| value.as_bytes().strip_prefix(b"Bearer "))
            .any(|shown| same(shown.trim_ascii(), token));
        bearer || cookies(headers).any(|shown| decode_hex(shown).is_some_and(|shown| same(&shown, token)))
    }
}

/// Constant-time equality (the length is not hidden, only which bytes differ).
fn same(shown: &[u8], token: &[u8]) -> bool {
    bool::from(shown.ct_eq(token))
}

/// The values of our cookie in every `Cookie` header.
fn cookies(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

fn encode_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

/// The middleware in front of every route of the dashboard's address but the login form.
pub async fn guard(State(access): State<Access>, request: Request, next: Next) -> Response {
    if access.admits(request.headers()) {
        return next.run(request).await;
    }
    if request.method() == Method::GET && request.uri().path() == "/" {
        return login_page(StatusCode::UNAUTHORIZED, "");
    }
    (
        StatusCode::UNAUTHORIZED,
        [
            (header::WWW_AUTHENTICATE, "Bearer realm=\"switchyard dashboard\""),
            (header::CONTENT_TYPE, "application/json"),
        ],
        "{\"error\": \"this address needs the dashboard's token (--dashboard-token-file): send `Authorization: Bearer TOKEN`, or sign in at /login\"}\n",
    )
        .into_response()
}

/// `GET /login`: the form.
pub async fn login_form() -> Response {
    login_page(StatusCode::OK, "")
}

/// `POST /login` (`token=…`, form-encoded): the right token sets the cookie and goes to the page; a
/// wrong one shows the form again with a word on it.
pub async fn login(State(access): State<Access>, body: Bytes) -> Response {
    let shown = form_field(&body, "token").unwrap_or_default();
    let shown = shown.trim_ascii();
    let right = access.token.as_ref().is_some_and(|token| same(shown, token));
    if !right {
        return login_page(StatusCode::UNAUTHORIZED, "That is not the dashboard's token.");
    }
    let cookie = format!("{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict", encode_hex(shown));
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
    match HeaderValue::from_str(&cookie) {
        Ok(value) => {
            response.headers_mut().insert(header::SET_COOKIE, value);
            response
        }
        Err(_) => login_page(StatusCode::BAD_REQUEST, "The token cannot be kept in a cookie."),
    }
}

/// The largest body `POST /login` reads.
pub fn login_body_limit() -> axum::extract::DefaultBodyLimit {
    axum::extract::DefaultBodyLimit::max(LOGIN_MAX_BODY)
}

fn login_page(code: StatusCode, problem: &str) -> Response {
    let page = LOGIN.replace("{problem}", &escape_html(problem));
    let mut response = (code, Body::from(page)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(super::CSP));
    response
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// One field of an `application/x-www-form-urlencoded` body, decoded.
fn form_field(body: &[u8], name: &str) -> Option<Vec<u8>> {
    body.split(|&b| b == b'&').find_map(|pair| {
        let value = pair.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
        let plus_as_space: Vec<u8> = value.iter().map(|&b| if b == b'+' { b' ' } else { b }).collect();
        Some(percent_encoding::percent_decode(&plus_as_space).collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.clone(), HeaderValue::from_str(value).unwrap()))
            .collect()
    }

    #[test]
    fn without_a_token_file_every_client_is_admitted() {
        assert!(Access::open().admits(&HeaderMap::new()));
    }

    #[test]
    fn a_token_is_admitted_as_a_bearer_or_as_the_login_cookie_and_nothing_else() {
        let access = Access::with_token(b"s3cret; =x");
        assert!(!access.admits(&HeaderMap::new()));
        assert!(access.admits(&headers(&[(header::AUTHORIZATION, "Bearer s3cret; =x")])));
        assert!(!access.admits(&headers(&[(header::AUTHORIZATION, "Bearer s3cret")])));
        assert!(!access.admits(&headers(&[(header::AUTHORIZATION, "Basic s3cret; =x")])));
        let cookie = format!("other=1; {COOKIE}={}", encode_hex(b"s3cret; =x"));
        assert!(access.admits(&headers(&[(header::COOKIE, &cookie)])));
        let wrong = format!("{COOKIE}={}", encode_hex(b"s3cret"));
        assert!(!access.admits(&headers(&[(header::COOKIE, &wrong)])));
        assert!(!access.admits(&headers(&[(header::COOKIE, &format!("{COOKIE}=zz"))])));
    }

    #[test]
    fn the_token_file_is_trimmed_and_must_not_be_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "abc\n").unwrap();
        let access = Access::from_token_file(&path).unwrap();
        assert!(access.admits(&headers(&[(header::AUTHORIZATION, "Bearer abc")])));
        std::fs::write(&path, " \n").unwrap();
        assert!(Access::from_token_file(&path).unwrap_err().contains("is empty"));
        assert!(Access::from_token_file(&dir.path().join("missing"))
            .unwrap_err()
            .starts_with("--dashboard-token-file"));
    }

    #[test]
    fn the_login_form_field_is_percent_decoded() {
        assert_eq!(form_field(b"a=1&token=a%2Bb+c", "token").unwrap(), b"a+b c");
        assert_eq!(form_field(b"tokens=1", "token"), None);
    }

    #[test]
    fn the_debug_form_never_shows_the_token() {
        assert!(!format!("{:?}", Access::with_token(b"s3cret")).contains("s3cret"));
    }
}
