//! Regex rewrites: NGINX's `rewritePath` on a regex location (`action.route.rewrite_regex`). The
//! regex is searched in the path as NGINX matches a `location ~` (leftmost match, query string left
//! out); when found, the whole path becomes the template with `$0`…`$9` replaced by the groups, and
//! the query string is kept (NGINX's `rewrite` appends the request's arguments). Compiled once when
//! the table loads, applied per request.

use regex_lite::Regex;

use crate::error::Problem;
use crate::field::field_value;
use crate::format::RegexRewrite;
use crate::path::query_string;

/// A piece of the path template.
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
    pieces: Vec<Piece>,
}

impl RegexRewriter {
    /// Validates a rewrite; the `&'static str` names the failing field inside `rewrite_regex`.
    pub fn compile(spec: &RegexRewrite) -> Result<RegexRewriter, (&'static str, Problem)> {
        let regex = Regex::new(&spec.pattern).map_err(|error| {
            (
                "pattern",
                Problem::BadRegex {
                    pattern: spec.pattern.clone(),
                    error: error.to_string(),
                },
            )
        })?;
        let bad = |why| {
            (
                "path",
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
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut chars = spec.path.chars().peekable();
        while let Some(c) = chars.next() {
            let group = chars.peek().and_then(|d| d.to_digit(10));
            match (c, group) {
                ('$', Some(n)) => {
                    chars.next();
                    if !text.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    pieces.push(Piece::Group(n as usize));
                }
                ('$', None) => return Err(bad("'$' may only be followed by a digit ($0 to $9)")),
                _ => text.push(c),
            }
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(RegexRewriter { regex, pieces })
    }

    /// The `:path` to send upstream for `full_path` (query included), or `None` when the regex is
    /// not found in its path.
    pub fn rewrite(&self, full_path: &str) -> Option<String> {
        let path = crate::path::request_path(full_path);
        let groups = self.regex.captures(path)?;
        let mut out = String::with_capacity(full_path.len());
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Group(n) => out.push_str(groups.get(*n).map_or("", |m| m.as_str())),
            }
        }
        let query = query_string(full_path);
        if full_path.contains('?') {
            // NGINX's `rewrite`: the request's arguments follow the new ones, if the path has any.
            out.push(if out.contains('?') { '&' } else { '?' });
            out.push_str(query);
        }
        Some(out)
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
        })
        .unwrap()
    }

    #[test]
    fn groups_fill_the_template_and_the_query_is_kept() {
        // NGINX Ingress Controller's tests/data/rewrites: `~ /regex1/?(.*)` → `/$1`.
        let r = rewriter("/regex1/?(.*)", "/$1");
        assert_eq!(r.rewrite("/regex1/?arg=value").as_deref(), Some("/?arg=value"));
        // NGINX merges the slashes of `/regex1//` before matching (`merge_slashes`); the filter
        // sees the path as Envoy hands it over (Envoy's own `merge_slashes` does the same).
        assert_eq!(r.rewrite("/regex1//?arg=value").as_deref(), Some("//?arg=value"));
        assert_eq!(r.rewrite("/regex1/abc").as_deref(), Some("/abc"));
        assert_eq!(r.rewrite("/other").as_deref(), None);
        let r = rewriter("^/(\\w+)/(\\w+)$", "/$2/$1?from=$0");
        assert_eq!(r.rewrite("/a/b?x=1").as_deref(), Some("/b/a?from=/a/b&x=1"));
        assert_eq!(rewriter("/x(y)?", "/$1$9").rewrite("/x").as_deref(), Some("/"));
    }

    #[test]
    fn templates_are_checked() {
        let bad = |pattern: &str, path: &str| {
            RegexRewriter::compile(&RegexRewrite {
                pattern: pattern.into(),
                path: path.into(),
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
