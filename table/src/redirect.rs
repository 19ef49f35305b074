//! Redirect locations: the `url` of a [`crate::format::Redirect`] as a template over variables,
//! parsed once when the table loads and filled in per request: the four NGINX's VirtualServer
//! `redirect` action documents (`${scheme}`, `${http_x_forwarded_proto}`, `${host}`,
//! `${request_uri}`), and those ingress-nginx's redirects are built from (ROUTING.md §7.3, §7.7:
//! `${http_host}`, `${port}`, `${uri}`, `${is_args}`, `${args}`, the path regex's groups `${0}`…
//! `${9}`, and the `%/` suffix that drops one trailing `/`).

use crate::error::Problem;
use crate::field::field_value;
use crate::format::Redirect;
use crate::request::RequestView;

/// A variable a redirect URL may name, as `${name}`; `${name%/}` is its value less one trailing
/// `/` (the shell's `${var%/}`), for ingress-nginx's redirects that drop it.
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
    /// `${http_host}`: the `:authority` as the client sent it, port included (NGINX's `$http_host`).
    HttpHost,
    /// `${port}`: the port the `:authority` names, else the scheme's (443 for `https`, else 80).
    Port,
    /// `${uri}`: the `:path` without its query string (as sent, not decoded).
    Uri,
    /// `${is_args}`: `?` when the query string is not empty, else nothing (NGINX's `$is_args`).
    IsArgs,
    /// `${args}`: the query string, without `?` (NGINX's `$args`).
    Args,
    /// `${escaped_request_uri}`: `${request_uri}` escaped as one URL component, every byte but
    /// letters, digits and `-._~` as `%XX` (ingress-nginx's `set_escape_uri`, for `auth-signin`'s
    /// `rd`).
    EscapedRequestUri,
    /// `${0}`…`${9}`: the groups of the rule's path regex (empty for an unmatched group, a group
    /// the regex does not have, or a path that is not a regex).
    Group(u8),
}

impl Variable {
    const NAMED: [(Variable, &'static str); 10] = [
        (Variable::Scheme, "scheme"),
        (Variable::ForwardedProto, "http_x_forwarded_proto"),
        (Variable::Host, "host"),
        (Variable::RequestUri, "request_uri"),
        (Variable::HttpHost, "http_host"),
        (Variable::Port, "port"),
        (Variable::Uri, "uri"),
        (Variable::IsArgs, "is_args"),
        (Variable::Args, "args"),
        (Variable::EscapedRequestUri, "escaped_request_uri"),
    ];

    fn named(name: &str) -> Option<Variable> {
        if let [digit @ b'0'..=b'9'] = name.as_bytes() {
            return Some(Variable::Group(digit - b'0'));
        }
        Variable::NAMED.iter().find(|(_, n)| *n == name).map(|(v, _)| *v)
    }
}

/// A piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    /// A variable, and whether one trailing `/` is removed from its value.
    Var(Variable, bool),
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

/// What a redirect's location is built from beyond [`RequestParts`].
#[derive(Debug, Clone, Copy, Default)]
pub struct MoreParts<'r> {
    /// The `:authority` as sent (`${http_host}`, `${port}`); [`RequestParts::host`] when empty.
    pub http_host: &'r str,
    /// The path regex's groups, `${0}`…`${9}` (missing ones are empty).
    pub groups: &'r [&'r str],
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
            let (name, trim) = match name.strip_suffix("%/") {
                Some(name) => (name, true),
                None => (name, false),
            };
            let Some(variable) = Variable::named(name) else {
                return Err(bad(unknown_variable(name)));
            };
            pieces.push(Piece::Var(variable, trim));
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

    /// Whether the location names a group of the path regex (`${0}`…`${9}`).
    pub fn uses_groups(&self) -> bool {
        (self.pieces.iter()).any(|piece| matches!(piece, Piece::Var(Variable::Group(_), _)))
    }

    /// The `Location` for one request.
    pub fn location_with(&self, parts: RequestParts<'_>, more: MoreParts<'_>) -> String {
        let http_host = if more.http_host.is_empty() {
            parts.host
        } else {
            more.http_host
        };
        let args = crate::path::query_string(parts.request_uri);
        let mut out = String::new();
        for piece in &self.pieces {
            if let Piece::Var(Variable::EscapedRequestUri, _) = piece {
                let escaped = percent_encoding::utf8_percent_encode(parts.request_uri, URI_COMPONENT);
                out.extend(escaped);
                continue;
            }
            let (value, trim) = match piece {
                Piece::Text(text) => (text.as_str(), false),
                Piece::Var(variable, trim) => (
                    match variable {
                        Variable::Scheme => parts.scheme,
                        Variable::ForwardedProto => parts.forwarded_proto,
                        Variable::Host => parts.host,
                        Variable::RequestUri => parts.request_uri,
                        Variable::HttpHost => http_host,
                        Variable::Port => port(http_host, parts.scheme),
                        Variable::Uri => crate::path::request_path(parts.request_uri),
                        Variable::IsArgs if args.is_empty() => "",
                        Variable::IsArgs => "?",
                        Variable::Args => args,
                        Variable::Group(n) => more.groups.get(usize::from(*n)).copied().unwrap_or(""),
                        // Written above.
                        Variable::EscapedRequestUri => "",
                    },
                    *trim,
                ),
            };
            out.push_str(if trim {
                value.strip_suffix('/').unwrap_or(value)
            } else {
                value
            });
        }
        out
    }
}

/// What `${escaped_request_uri}` escapes: all but the unreserved characters of RFC 3986.
const URI_COMPONENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

#[cold]
fn unknown_variable(name: &str) -> String {
    let names: Vec<String> = Variable::NAMED.iter().map(|(_, n)| format!("${{{n}}}")).collect();
    format!(
        "unknown variable ${{{name}}}; only {}, ${{0}} to ${{9}} are filled in (each may end in %/)",
        names.join(", ")
    )
}

/// The port an authority names (`h:8080`, `[::1]:8080`), else the scheme's default.
fn port<'a>(authority: &'a str, scheme: &str) -> &'a str {
    let named = authority
        .rsplit_once(':')
        .map(|(_, port)| port)
        .filter(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
    match named {
        Some(port) => port,
        None if scheme.eq_ignore_ascii_case("https") => "443",
        None => "80",
    }
}

/// What `${http_x_forwarded_proto}` becomes for `request`: its `X-Forwarded-Proto` values joined by
/// `, ` as NGINX (1.23 and later) joins repeated headers in `$http_` variables; empty when absent.
pub fn forwarded_proto(request: &impl RequestView) -> String {
    request.header_values("x-forwarded-proto").join(", ")
}
