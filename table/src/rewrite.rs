//! Regex rewrites: NGINX's `rewritePath` on a regex location (`action.route.rewrite_regex`). The
//! regex is searched in the path as NGINX matches a `location ~` (leftmost match, query string left
//! out); when found, the whole path becomes the template with `$0`…`$9` replaced by the groups, and
//! the query string is kept (NGINX's `rewrite` appends the request's arguments). Compiled once when
//! the table loads, applied per request.

use regex_lite::Regex;

use crate::error::Problem;
use crate::field::{field_value, is_token};
use crate::format::RegexRewrite;
use crate::path::query_string;
use crate::simple::{Groups, SimpleBody};

/// A piece of a template (the new path, or a header value).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    /// `$0`…`$9`.
    Group(usize),
}

/// A validated regex rewrite.
#[derive(Debug, Clone)]
pub struct RegexRewriter {
    regex: Regex,
    /// `P` when the pattern is ingress-nginx's `(?i)^P` with `P` of [`SimpleBody`]'s forms: its
    /// groups are found without running the regex.
    simple: Option<SimpleBody>,
    pieces: Vec<Piece>,
    /// Request headers set when the regex is found: lowercase name, value template.
    headers: Vec<(String, Vec<Piece>)>,
}

/// What a rewrite does to one request: the new `:path` and the headers it sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten<'r> {
    /// The `:path` to send upstream, query string included.
    pub path: String,
    /// Request headers to set (lowercase names), in the table's order; one whose value came out
    /// empty is left out (nginx's `proxy_set_header` sends no header with an empty value).
    pub headers: Vec<(&'r str, String)>,
}

/// Splits a template into text and `$0`…`$9`; `Err` when a `$` is not followed by a digit.
fn template(text: &str) -> Result<Vec<Piece>, &'static str> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let group = chars.peek().and_then(|d| d.to_digit(10));
        match (c, group) {
            ('$', Some(n)) => {
                chars.next();
                if !literal.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                }
                pieces.push(Piece::Group(n as usize));
            }
            ('$', None) => return Err("'$' may only be followed by a digit ($0 to $9)"),
            _ => literal.push(c),
        }
    }
    if !literal.is_empty() {
        pieces.push(Piece::Text(literal));
    }
    Ok(pieces)
}

/// Appends a template filled with a match's groups (an unmatched group is empty).
fn fill(pieces: &[Piece], groups: &Groups<'_>, out: &mut String) {
    for piece in pieces {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Group(n) => out.push_str(groups.get(*n).copied().unwrap_or("")),
        }
    }
}

impl RegexRewriter {
    /// Validates a rewrite; the `String` names the failing field inside `rewrite_regex`.
    pub fn compile(spec: &RegexRewrite) -> Result<RegexRewriter, (String, Problem)> {
        let regex = Regex::new(&spec.pattern).map_err(|error| {
            (
                "pattern".to_owned(),
                Problem::BadRegex {
                    pattern: spec.pattern.clone(),
                    error: error.to_string(),
                },
            )
        })?;
        let bad = |why| {
            (
                "path".to_owned(),
                Problem::BadRewritePath {
                    path: spec.path.clone(),
                    why,
                },
            )
        };
        if !spec.path.starts_with('/') {
            return Err(bad("the new path must start with '/'"));
        }
        // The result is the `:path` header's value: the template's own text must be one.
        field_value(&spec.path).map_err(|_| bad("the new path is not an HTTP field value"))?;
        let pieces = template(&spec.path).map_err(bad)?;
        let mut headers = Vec::with_capacity(spec.headers.len());
        for (i, header) in spec.headers.iter().enumerate() {
            if !is_token(&header.name) {
                return Err((
                    format!("headers[{i}].name"),
                    Problem::BadHeaderName(header.name.clone()),
                ));
            }
            let bad_value = |why| {
                (
                    format!("headers[{i}].value"),
                    Problem::BadRewritePath {
                        path: header.value.clone(),
                        why,
                    },
                )
            };
            field_value(&header.value).map_err(|_| bad_value("the value is not an HTTP field value"))?;
            headers.push((
                header.name.to_ascii_lowercase(),
                template(&header.value).map_err(bad_value)?,
            ));
        }
        let simple = spec.pattern.strip_prefix("(?i)^").and_then(SimpleBody::parse);
        Ok(RegexRewriter {
            regex,
            simple,
            pieces,
            headers,
        })
    }

    /// The `:path` and the headers to send upstream for `full_path` (query included), or `None`
    /// when the regex is not found in its path.
    pub fn apply(&self, full_path: &str) -> Option<Rewritten<'_>> {
        let path = crate::path::request_path(full_path);
        let groups = match &self.simple {
            Some(simple) => simple.captures(path)?,
            None => {
                let found = self.regex.captures(path)?;
                let mut groups: Groups<'_> = [""; 10];
                for (group, found) in groups.iter_mut().zip(found.iter()) {
                    *group = found.map_or("", |m| m.as_str());
                }
                groups
            }
        };
        let mut out = String::with_capacity(full_path.len());
        fill(&self.pieces, &groups, &mut out);
        let query = query_string(full_path);
        if full_path.contains('?') {
            // NGINX's `rewrite`: the request's arguments follow the new ones, if the path has any.
            out.push(if out.contains('?') { '&' } else { '?' });
            out.push_str(query);
        }
        let headers = (self.headers.iter())
            .filter_map(|(name, pieces)| {
                let mut value = String::new();
                fill(pieces, &groups, &mut value);
                (!value.is_empty()).then_some((name.as_str(), value))
            })
            .collect();
        Some(Rewritten { path: out, headers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn rewriter(pattern: &str, path: &str) -> RegexRewriter {
        RegexRewriter::compile(&RegexRewrite {
            pattern: pattern.into(),
            path: path.into(),
            headers: Vec::new(),
        })
        .unwrap()
    }

    #[test]
    fn groups_fill_the_template_and_the_query_is_kept() {
        // NGINX Ingress Controller's tests/data/rewrites: `~ /regex1/?(.*)` → `/$1`.
        let r = rewriter("/regex1/?(.*)", "/$1");
        assert_eq!(
            r.apply("/regex1/?arg=value").map(|d| d.path).as_deref(),
            Some("/?arg=value")
        );
        // NGINX merges the slashes of `/regex1//` before matching (`merge_slashes`); the filter
        // sees the path as Envoy hands it over (Envoy's own `merge_slashes` does the same).
        assert_eq!(
            r.apply("/regex1//?arg=value").map(|d| d.path).as_deref(),
            Some("//?arg=value")
        );
        assert_eq!(r.apply("/regex1/abc").map(|d| d.path).as_deref(), Some("/abc"));
        assert_eq!(r.apply("/other").map(|d| d.path).as_deref(), None);
        let r = rewriter("^/(\\w+)/(\\w+)$", "/$2/$1?from=$0");
        assert_eq!(
            r.apply("/a/b?x=1").map(|d| d.path).as_deref(),
            Some("/b/a?from=/a/b&x=1")
        );
        assert_eq!(
            rewriter("/x(y)?", "/$1$9").apply("/x").map(|d| d.path).as_deref(),
            Some("/")
        );
    }

    /// ingress-nginx's `(?i)^P` rewrites of [`SimpleBody`]'s forms are applied without the regex,
    /// and give what the regex gives: path, query and headers, for every path.
    #[test]
    fn simple_rewrites_agree_with_the_regex() {
        let paths = [
            "/",
            "/r48",
            "/R48/items/42?id=1",
            "/r48/",
            "/r48?",
            "/r48x/y",
            "/r48/a\nb?q",
            "/R48/\u{e9}?x=1&y",
            "/api",
            "/API/v1?x",
            "/apix",
            "/a",
            "/a/b/c?d=e",
            "/other?x=1",
            "",
        ];
        for (pattern, path) in [
            ("(?i)^/r48(/|$)(.*)", "/$2"),
            ("(?i)^/r48(/|$)(.*)", "/new/$1$2?from=$0&x"),
            ("(?i)^/api(.*)", "/v2$1"),
            ("(?i)^/api", "/$0$1$9"),
            ("(?i)^/a\\.b(/|$).*", "/x$0$1"),
            ("(?i)^(.*)", "/in$1"),
        ] {
            let spec = RegexRewrite {
                pattern: pattern.into(),
                path: path.into(),
                headers: vec![
                    crate::format::HeaderValue {
                        name: "X-Forwarded-Prefix".into(),
                        value: "/r48$1".into(),
                    },
                    crate::format::HeaderValue {
                        name: "x-group".into(),
                        value: "$2".into(),
                    },
                ],
            };
            let simple = RegexRewriter::compile(&spec).unwrap();
            assert!(simple.simple.is_some(), "{pattern} is simple");
            let regex = RegexRewriter {
                simple: None,
                ..simple.clone()
            };
            for full_path in paths {
                assert_eq!(
                    simple.apply(full_path),
                    regex.apply(full_path),
                    "{pattern} -> {path} on {full_path:?}"
                );
            }
        }
        // NGINX's unanchored `~ /regex1/?(.*)` is searched by the regex.
        assert!(rewriter("/regex1/?(.*)", "/$1").simple.is_none());
        assert!(rewriter("(?i)^/a(/|$)(.+)", "/$1").simple.is_none());
    }

    #[test]
    fn templates_are_checked() {
        let bad = |pattern: &str, path: &str| {
            RegexRewriter::compile(&RegexRewrite {
                pattern: pattern.into(),
                path: path.into(),
                headers: Vec::new(),
            })
            .map(|_| ())
            .unwrap_err()
            .0
        };
        assert_eq!(bad("(", "/"), "pattern");
        assert_eq!(bad("a", "x$1"), "path");
        assert_eq!(bad("a", "/$x"), "path");
        assert_eq!(bad("a", "/a\nb"), "path");
    }
}
