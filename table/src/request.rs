//! The matcher's view of a request, and the cookie and query parsing it needs.
//!
//! The filter implements [`RequestView`] over proxy-wasm host calls, fetching only what a candidate
//! rule asks for; tests and `switchyard explain` use [`SimpleRequest`]. Cookies and the query string
//! are parsed only when a condition reads them.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

use crate::path::query_string;

/// What the matcher reads from a request. Only `authority` and `path` are read for every request.
pub trait RequestView {
    /// The `:authority` (or `Host`), as the client sent it.
    fn authority(&self) -> &str;
    /// The `:path`, query string included.
    fn path(&self) -> &str;
    /// The `:method`.
    fn method(&self) -> &str;
    /// Every value of the header `name` (given in lowercase), in the order received.
    fn header_values(&self, name: &str) -> Vec<Cow<'_, str>>;

    /// Whether `test` accepts any value of the header `name` (lowercase). The default calls
    /// [`header_values`](Self::header_values); a view that can walk its values without collecting
    /// them overrides it.
    fn any_header_value(&self, name: &str, test: &mut dyn FnMut(&str) -> bool) -> bool {
        self.header_values(name).iter().any(|value| test(value))
    }

    /// Whether `test` accepts any value of the cookie `name` (case-sensitive) in any `Cookie` header.
    fn any_cookie_value(&self, name: &str, test: &mut dyn FnMut(&str) -> bool) -> bool {
        self.any_header_value("cookie", &mut |header| {
            cookie_pairs(header).any(|(key, value)| key == name && test(value))
        })
    }

    /// Whether `test` accepts any percent-decoded value of the query parameter `name`
    /// (case-sensitive, decoded too).
    fn any_query_value(&self, name: &str, test: &mut dyn FnMut(&str) -> bool) -> bool {
        query_pairs(query_string(self.path())).any(|(key, value)| key == name && test(&value))
    }

    /// Every value of the cookie `name`, in order (for tests and `switchyard explain`).
    fn cookie_values(&self, name: &str) -> Vec<String> {
        let mut found = Vec::new();
        self.any_cookie_value(name, &mut |value| {
            found.push(value.to_owned());
            false
        });
        found
    }

    /// Every decoded value of the query parameter `name`, in order.
    fn query_values(&self, name: &str) -> Vec<String> {
        let mut found = Vec::new();
        self.any_query_value(name, &mut |value| {
            found.push(value.to_owned());
            false
        });
        found
    }
}

/// The white space RFC 6265 allows around cookie pairs.
const COOKIE_SPACE: [char; 2] = [' ', '\t'];

/// The `name=value` pairs of one `Cookie` header (`a=1; b="2"`), quotes around a value removed.
pub fn cookie_pairs(header: &str) -> impl Iterator<Item = (&str, &str)> {
    header.split(';').filter_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        let value = value.trim_matches(COOKIE_SPACE);
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        Some((name.trim_matches(COOKIE_SPACE), value))
    })
}

/// The percent-decoded `name=value` pairs of a query string; a bare `name` has the value `""`.
/// Only `%XX` escapes are decoded (a `+` stays a `+`, as Envoy's query matchers see it).
pub fn query_pairs(query: &str) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    query.split('&').filter(|pair| !pair.is_empty()).map(|pair| {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        (decode(name), decode(value))
    })
}

fn decode(text: &str) -> Cow<'_, str> {
    percent_decode_str(text).decode_utf8_lossy()
}

/// A request held in plain values: for tests, benchmarks and `switchyard explain`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleRequest {
    /// `:scheme` (`http` unless the URL says `https`): what a redirect's `${scheme}` becomes.
    pub scheme: String,
    /// `:authority`.
    pub authority: String,
    /// `:path` with query.
    pub path: String,
    /// `:method`.
    pub method: String,
    /// Headers in order; names are matched case-insensitively.
    pub headers: Vec<(String, String)>,
}

impl SimpleRequest {
    /// A GET for `authority` and `path`.
    pub fn get(authority: &str, path: &str) -> Self {
        SimpleRequest {
            scheme: "http".to_owned(),
            authority: authority.to_owned(),
            path: path.to_owned(),
            method: "GET".to_owned(),
            headers: Vec::new(),
        }
    }

    /// Parses `http://host[:port]/path?query` (or `host/path`).
    pub fn from_url(url: &str) -> Self {
        let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
        let (authority, path) = match rest.find(['/', '?']) {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_owned()
        };
        SimpleRequest {
            scheme: scheme.to_ascii_lowercase(),
            path,
            ..SimpleRequest::get(authority, "")
        }
    }

    /// With another method.
    pub fn method(mut self, method: &str) -> Self {
        self.method = method.to_owned();
        self
    }

    /// With one more header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// With one more `Cookie` header holding `name=value`.
    pub fn cookie(self, name: &str, value: &str) -> Self {
        self.header("cookie", &format!("{name}={value}"))
    }
}

impl RequestView for SimpleRequest {
    fn authority(&self) -> &str {
        &self.authority
    }

    fn path(&self) -> &str {
        &self.path
    }

    fn method(&self) -> &str {
        &self.method
    }

    // `:scheme` is the `scheme` field (as a proxy's header map holds it among the others).
    fn header_values(&self, name: &str) -> Vec<Cow<'_, str>> {
        if name == ":scheme" {
            return vec![Cow::Borrowed(self.scheme.as_str())];
        }
        self.headers
            .iter()
            .filter(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| Cow::Borrowed(value.as_str()))
            .collect()
    }

    fn any_header_value(&self, name: &str, test: &mut dyn FnMut(&str) -> bool) -> bool {
        if name == ":scheme" {
            return test(&self.scheme);
        }
        self.headers
            .iter()
            .any(|(key, value)| key.eq_ignore_ascii_case(name) && test(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn cookies_come_from_every_cookie_header() {
        let req = SimpleRequest::get("h", "/")
            .header("Cookie", "a=1; b=\"2\"")
            .header("cookie", "a=3");
        assert_eq!(req.cookie_values("a"), ["1", "3"]);
        assert_eq!(req.cookie_values("b"), ["2"]);
        assert!(req.cookie_values("A").is_empty());
    }

    #[test]
    fn query_values_are_percent_decoded() {
        let req = SimpleRequest::get("h", "/p?na%6De=a%20b&flag&name=c+d");
        assert_eq!(req.query_values("name"), ["a b", "c+d"]);
        assert_eq!(req.query_values("flag"), [""]);
    }

    #[test]
    fn url_splits_into_authority_and_path() {
        let req = SimpleRequest::from_url("http://example.net:8080/bar?x=1");
        assert_eq!(
            (req.authority.as_str(), req.path.as_str()),
            ("example.net:8080", "/bar?x=1")
        );
        assert_eq!(SimpleRequest::from_url("example.net").path, "/");
        assert_eq!(SimpleRequest::from_url("example.net?q").path, "/?q");
    }
}
