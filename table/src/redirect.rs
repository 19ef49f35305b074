//! Redirect locations: the `url` of a [`crate::format::Redirect`] as a template over the four
//! variables NGINX's VirtualServer `redirect` action documents, `${scheme}`,
//! `${http_x_forwarded_proto}`, `${host}` and `${request_uri}`, parsed once when the table loads and
//! filled in per request.

use crate::error::Problem;
use crate::field::field_value;
use crate::format::Redirect;
use crate::request::RequestView;

/// A variable a redirect URL may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variable {
    /// `${scheme}`: `http` or `https`, the request's `:scheme`.
    Scheme,
    /// `${http_x_forwarded_proto}`: the request's `X-Forwarded-Proto` header (NGINX's
    /// `$http_x_forwarded_proto`): empty when absent, several values joined by `, `.
    ForwardedProto,
    /// `${host}`: the request's host, lowercase, without port or trailing dot (NGINX's `$host`).
    Host,
    /// `${request_uri}`: the whole `:path`, query string included (NGINX's `$request_uri`).
    RequestUri,
}

impl Variable {
    const ALL: [(Variable, &'static str); 4] = [
        (Variable::Scheme, "scheme"),
        (Variable::ForwardedProto, "http_x_forwarded_proto"),
        (Variable::Host, "host"),
        (Variable::RequestUri, "request_uri"),
    ];
}

/// A piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Var(Variable),
}

/// A validated redirect: its status and its location template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectTemplate {
    status: u16,
    pieces: Vec<Piece>,
}

/// What a redirect's location is built from, per request.
#[derive(Debug, Clone, Copy)]
pub struct RequestParts<'r> {
    /// `http` or `https`.
    pub scheme: &'r str,
    /// The `X-Forwarded-Proto` header's values joined by `, ` (empty when absent):
    /// [`forwarded_proto`].
    pub forwarded_proto: &'r str,
    /// The host, normalised (lowercase, no port).
    pub host: &'r str,
    /// The `:path` with its query string.
    pub request_uri: &'r str,
}

impl RedirectTemplate {
    /// Validates a redirect; the `&'static str` names the failing field inside the action.
    pub fn compile(spec: &Redirect) -> Result<RedirectTemplate, (&'static str, Problem)> {
        if !matches!(spec.status, 301 | 302 | 303 | 307 | 308) {
            return Err(("status", Problem::BadRedirectStatus(spec.status)));
        }
        let bad = |why: String| {
            (
                "url",
                Problem::BadRedirectUrl {
                    url: spec.url.clone(),
                    why,
                },
            )
        };
        if spec.url.is_empty() {
            return Err(bad("a redirect needs a url".to_owned()));
        }
        // The location is a header value: the template's own text must be one.
        field_value(&spec.url).map_err(|fault| bad(fault.to_string()))?;
        let mut pieces = Vec::new();
        let mut rest = spec.url.as_str();
        while let Some(start) = rest.find("${") {
            if start > 0 {
                pieces.push(Piece::Text(rest[..start].to_owned()));
            }
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                return Err(bad("a `${` is not closed by `}`".to_owned()));
            };
            let name = &after[..end];
            let Some((variable, _)) = Variable::ALL.iter().find(|(_, n)| *n == name) else {
                return Err(bad(format!(
                    "unknown variable ${{{name}}}; only ${{scheme}}, ${{http_x_forwarded_proto}}, ${{host}} and ${{request_uri}} are filled in"
                )));
            };
            pieces.push(Piece::Var(*variable));
            rest = &after[end + 1..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_owned()));
        }
        Ok(RedirectTemplate {
            status: spec.status,
            pieces,
        })
    }

    /// The status to answer with.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The `Location` for one request.
    pub fn location(&self, parts: RequestParts<'_>) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            out.push_str(match piece {
                Piece::Text(text) => text,
                Piece::Var(Variable::Scheme) => parts.scheme,
                Piece::Var(Variable::ForwardedProto) => parts.forwarded_proto,
                Piece::Var(Variable::Host) => parts.host,
                Piece::Var(Variable::RequestUri) => parts.request_uri,
            });
        }
        out
    }
}

/// What `${http_x_forwarded_proto}` becomes for `request`: its `X-Forwarded-Proto` values joined by
/// `, ` as NGINX (1.23 and later) joins repeated headers in `$http_` variables; empty when absent.
pub fn forwarded_proto(request: &impl RequestView) -> String {
    request.header_values("x-forwarded-proto").join(", ")
}
