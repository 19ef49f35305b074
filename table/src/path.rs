//! Paths: the four ways a rule matches the request path, and the prefix rewrite.
//!
//! ROUTING.md §4 key 2. The query string is never part of the path; [`request_path`] cuts it off.

use regex_lite::Regex;

use crate::error::Problem;
use crate::format::PathSpec;
use crate::simple::{SimpleBody, SPECIAL};

/// A rule's path, validated (and its regex compiled).
#[derive(Debug, Clone)]
pub enum PathPattern {
    /// The path equals this.
    Exact(String),
    /// Kubernetes `Prefix`, element-wise. Holds the value without its trailing `/`
    /// (so `/` is held as the empty string and matches every path).
    SegmentPrefix(String),
    /// A plain string prefix.
    Prefix(String),
    /// A regex over the whole path; boxed, as few rules have one (a rule's size is paid by every
    /// rule of a table, in every VM).
    Regex(Box<RegexPath>),
}

/// A regex path, compiled.
#[derive(Debug, Clone)]
pub struct RegexPath {
    /// The regex, anchored over the whole path.
    whole: Regex,
    /// What every match starts with (a cheap first test).
    start: Start,
    /// For the regex-mode form `(?i)(?:BODY).*`, the regex `^(?i)(?:BODY)`, which answers the same
    /// for a path without line feed and stops at the end of BODY's match, not of the path.
    early: Option<Regex>,
}

/// What every path a regex matches starts with: tested before the regex, and for ingress-nginx's
/// usual regex-mode locations (`(?i)(?:/api).*`, `(?i)(?:/api(/|$)(.*)).*`) instead of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// This text, case-sensitively (maybe empty).
    Text(String),
    /// This text in any ASCII case: the pattern is `(?i)(?:BODY).*` and the text is BODY's literal start.
    TextNoCase(String),
    /// The pattern is `(?i)(?:P).*` with `P` plain text, or plain text followed by ingress-nginx's
    /// rewrite groups (`/something(/|$)(.*)`): matched, and its groups found, without the regex
    /// ([`SimpleBody`]).
    Simple(SimpleBody),
}

impl RegexPath {
    /// What every match starts with.
    pub(crate) fn start(&self) -> &Start {
        &self.start
    }
}

impl PathPattern {
    /// Validates a path from the table.
    pub fn compile(spec: &PathSpec) -> Result<PathPattern, Problem> {
        let absolute = |path: &str| {
            if path.starts_with('/') {
                Ok(())
            } else {
                Err(Problem::PathNotAbsolute { path: path.to_owned() })
            }
        };
        Ok(match spec {
            PathSpec::Exact(path) => {
                absolute(path)?;
                PathPattern::Exact(path.clone())
            }
            PathSpec::SegmentPrefix(path) => {
                absolute(path)?;
                PathPattern::SegmentPrefix(path.trim_end_matches('/').to_owned())
            }
            PathSpec::Prefix(path) => {
                absolute(path)?;
                PathPattern::Prefix(path.clone())
            }
            // A regex need not start with `/`: NGINX's search-anywhere locations compile to
            // `.*(?:re).*` (ROUTING.md §6), and every request path starts with `/` anyway.
            PathSpec::Regex(pattern) => {
                let whole = anchored_regex(pattern)?;
                let start = Start::of(pattern);
                let early = match (&start, regex_mode_body(pattern)) {
                    (Start::TextNoCase(_), Some(body)) => Regex::new(&format!("^(?i)(?:{body})")).ok(),
                    _ => None,
                };
                PathPattern::Regex(Box::new(RegexPath { whole, start, early }))
            }
        })
    }

    /// Whether the path (without its query string) matches.
    pub fn matches(&self, path: &str) -> bool {
        match self {
            PathPattern::Exact(exact) => path == exact,
            PathPattern::SegmentPrefix(prefix) => segment_prefix_matches(prefix, path),
            PathPattern::Prefix(prefix) => path.starts_with(prefix.as_str()),
            // The literal start is a cheap first test; most paths fail it.
            PathPattern::Regex(regex) => match &regex.start {
                Start::Text(text) => path.starts_with(text.as_str()) && regex.whole.is_match(path),
                Start::TextNoCase(text) => {
                    starts_with_no_case(path, text)
                        && match &regex.early {
                            Some(early) if !path.contains('\n') => early.is_match(path),
                            _ => regex.whole.is_match(path),
                        }
                }
                Start::Simple(simple) => simple.matches_whole(path),
            },
        }
    }

    /// The groups `${0}`…`${9}` of a regex path's match of `path` (an unmatched group is empty);
    /// nothing for another kind or when the regex does not match.
    pub fn groups<'p>(&self, path: &'p str) -> Vec<&'p str> {
        let PathPattern::Regex(regex) = self else {
            return Vec::new();
        };
        if let Start::Simple(simple) = &regex.start {
            // The whole path is the regex's match (`${0}`); `P`'s groups are its search's.
            return match simple.matches_whole(path).then(|| simple.captures(path)).flatten() {
                Some(mut groups) => {
                    groups[0] = path;
                    groups.to_vec()
                }
                None => Vec::new(),
            };
        }
        let Some(found) = regex.whole.captures(path) else {
            return Vec::new();
        };
        (0..10).map(|n| found.get(n).map_or("", |m| m.as_str())).collect()
    }

    /// The part of the table's path value that a prefix rewrite replaces, if this kind has one.
    fn rewritable_prefix(&self) -> Option<&str> {
        match self {
            PathPattern::Exact(prefix) | PathPattern::SegmentPrefix(prefix) | PathPattern::Prefix(prefix) => {
                Some(prefix)
            }
            PathPattern::Regex(..) => None,
        }
    }

    /// Whether a prefix rewrite can apply to this path kind.
    pub fn can_rewrite(&self) -> bool {
        self.rewritable_prefix().is_some()
    }

    /// The `:path` sent upstream when `replacement` replaces the matched prefix of `full_path`
    /// (which may carry a query string, kept as it is). Where the replacement ends in `/` and the
    /// rest begins with one, the two collapse, so `/app` → `/` turns `/app/x` into `/x`, not `//x`.
    pub fn rewrite(&self, full_path: &str, replacement: &str) -> Option<String> {
        let prefix = self.rewritable_prefix()?;
        let rest = full_path.get(prefix.len()..)?;
        let rest = if replacement.ends_with('/') {
            rest.strip_prefix('/').unwrap_or(rest)
        } else {
            rest
        };
        let mut path = String::with_capacity(replacement.len() + rest.len());
        path.push_str(replacement);
        path.push_str(rest);
        if !path.starts_with('/') {
            path.insert(0, '/');
        }
        Some(path)
    }
}

/// `/foo` (held without trailing slash) matches `/foo`, `/foo/` and `/foo/bar`, never `/foobar`.
pub fn segment_prefix_matches(prefix: &str, path: &str) -> bool {
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}

/// The path without its query string (and fragment, should a client send one).
pub fn request_path(full_path: &str) -> &str {
    match full_path.find(['?', '#']) {
        Some(end) => &full_path[..end],
        None => full_path,
    }
}

/// The query string of a `:path`, without the `?`.
pub fn query_string(full_path: &str) -> &str {
    match full_path.split_once('?') {
        Some((_, query)) => query.split('#').next().unwrap_or(query),
        None => "",
    }
}

/// Whether `path` starts with `text` in any ASCII case (regex-lite's `(?i)` folds ASCII only).
fn starts_with_no_case(path: &str, text: &str) -> bool {
    path.as_bytes()
        .get(..text.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(text.as_bytes()))
}

impl Start {
    /// The text every match starts with, in some ASCII case at least (maybe empty).
    pub(crate) fn text(&self) -> &str {
        match self {
            Start::Text(text) | Start::TextNoCase(text) => text,
            Start::Simple(simple) => simple.text(),
        }
    }

    /// The start of every path `pattern` matches (as a whole-path regex).
    fn of(pattern: &str) -> Start {
        match regex_mode_body(pattern) {
            Some(body) => match SimpleBody::parse(body) {
                Some(simple) => Start::Simple(simple),
                None => Start::TextNoCase(literal_prefix(body).to_owned()),
            },
            None => Start::Text(literal_prefix(pattern).to_owned()),
        }
    }
}

/// BODY when `pattern` is `(?i)(?:BODY).*` with the group closed only by its last `)`: the form the
/// compiler writes for ingress-nginx's regex-mode location `~* "^BODY"` (ROUTING.md §7.4), so
/// every match starts with a match of BODY.
fn regex_mode_body(pattern: &str) -> Option<&str> {
    let body = pattern.strip_prefix("(?i)(?:")?.strip_suffix(").*")?;
    let mut depth = 0usize;
    for c in structure(body) {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1)?,
            _ => {}
        }
    }
    (depth == 0).then_some(body)
}

/// Whether `pattern` has a `|` outside every group (then its matches share no start).
fn alternates_at_top(pattern: &str) -> bool {
    let mut depth = 0usize;
    for c in structure(pattern) {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// The `(`, `)` and `|` of a pattern that are its structure: none escaped, none in a class.
fn structure(pattern: &str) -> impl Iterator<Item = char> + '_ {
    let mut chars = pattern.chars();
    std::iter::from_fn(move || loop {
        match chars.next()? {
            '\\' => {
                chars.next();
            }
            '[' => {
                // A class: `]` right after `[` or `[^` is literal; escapes skip a character.
                let mut first = true;
                loop {
                    match chars.next()? {
                        '^' if first => continue,
                        ']' if !first => break,
                        '\\' => {
                            chars.next();
                        }
                        _ => {}
                    }
                    first = false;
                }
            }
            c @ ('(' | ')' | '|') => return Some(c),
            _ => {}
        }
    })
}

/// The literal text at the start of every string a pattern matches (maybe empty): its leading
/// characters up to the first one with a meaning in regex syntax, less the last one when a
/// quantifier that allows zero follows it. A pattern with `|` outside its groups has none.
fn literal_prefix(pattern: &str) -> &str {
    if alternates_at_top(pattern) {
        return "";
    }
    let end = pattern.find(SPECIAL).unwrap_or(pattern.len());
    let literal = pattern.get(..end).unwrap_or("");
    match pattern.get(end..).and_then(|rest| rest.chars().next()) {
        Some('?' | '*' | '{') => literal
            .char_indices()
            .last()
            .map_or("", |(at, _)| literal.get(..at).unwrap_or("")),
        _ => literal,
    }
}

/// Compiles a `regex-lite` pattern anchored to the whole input.
pub(crate) fn anchored_regex(pattern: &str) -> Result<Regex, Problem> {
    Regex::new(&format!("^(?:{pattern})$")).map_err(|error| Problem::BadRegex {
        pattern: pattern.to_owned(),
        error: error.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn pattern(spec: PathSpec) -> PathPattern {
        PathPattern::compile(&spec).unwrap()
    }

    #[test]
    fn rewrite_replaces_the_matched_prefix_and_keeps_the_query() {
        let p = pattern(PathSpec::Prefix("/api".into()));
        assert_eq!(p.rewrite("/api/users?id=1", "/v2").as_deref(), Some("/v2/users?id=1"));
        assert_eq!(p.rewrite("/api/users", "/").as_deref(), Some("/users"));
        assert_eq!(p.rewrite("/api", "/").as_deref(), Some("/"));
        let s = pattern(PathSpec::SegmentPrefix("/app/".into()));
        assert_eq!(s.rewrite("/app/x", "/").as_deref(), Some("/x"));
        assert!(pattern(PathSpec::Regex("/a.*".into())).rewrite("/ab", "/").is_none());
    }

    #[test]
    fn literal_prefix_is_what_every_match_starts_with() {
        assert_eq!(literal_prefix("/static/.*/main.js"), "/static/");
        assert_eq!(literal_prefix("/api/v[0-9]+"), "/api/v");
        assert_eq!(literal_prefix("/ab?c"), "/a");
        assert_eq!(literal_prefix("/ab*"), "/a");
        assert_eq!(literal_prefix("/ab+"), "/ab");
        assert_eq!(literal_prefix("/a|/b"), "");
        assert_eq!(literal_prefix("/a(/|$)(.*)"), "/a");
        assert_eq!(literal_prefix("/a[|]|/b"), "");
        assert_eq!(literal_prefix("/a\\|b"), "/a");
        assert_eq!(literal_prefix("(?i)/a"), "");
        assert_eq!(literal_prefix("/é\\.x"), "/é");
    }

    /// ingress-nginx's regex-mode form `(?i)(?:BODY).*` is recognised only when the group spans BODY.
    #[test]
    fn regex_mode_start_is_found_only_for_the_whole_group() {
        let text = |s: &str| Start::Text(s.to_owned());
        let simple = |body: &str| Start::Simple(SimpleBody::parse(body).unwrap());
        assert_eq!(Start::of("(?i)(?:/api).*"), simple("/api"));
        assert_eq!(Start::of("(?i)(?:/a(/|$)(.*)).*"), simple("/a(/|$)(.*)"));
        assert_eq!(Start::of("(?i)(?:/a(/|$)(.+)).*"), Start::TextNoCase("/a".into()));
        assert_eq!(Start::of("(?i)(?:/a[)]b).*"), Start::TextNoCase("/a".into()));
        assert_eq!(Start::of("(?i)(?:/a\\)b).*"), simple("/a\\)b"));
        assert_eq!(Start::of("(?i)(?:/a)?(?:/b).*"), text(""));
        assert_eq!(Start::of("(?i)(?:/a|/b).*"), Start::TextNoCase("".into()));
        assert_eq!(Start::of("/api/.*"), text("/api/"));
    }

    /// A regex-mode location matched without its regex answers as the regex would: whether the path
    /// matches, and the groups `${0}`…`${9}` a redirect reads.
    #[test]
    fn simple_regex_mode_locations_match_and_group_as_the_regex() {
        let paths = [
            "/",
            "/r48",
            "/R48/items/42",
            "/r48/",
            "/r48x/y",
            "/r48/a\nb",
            "/r48\n",
            "/api",
            "/API/v1",
            "/apix",
            "/caf\u{e9}",
            "/CAF\u{c9}",
            "/CAF\u{e9}/x",
            "/\u{212a}",
            "",
        ];
        for body in [
            "/r48(/|$)(.*)",
            "/api",
            "/api(.*)",
            "/API(/|$)",
            "/caf\u{e9}(/|$).*",
            "/k",
            "(.*)",
        ] {
            let spec = PathSpec::Regex(format!("(?i)(?:{body}).*"));
            let simple = pattern(spec.clone());
            let PathPattern::Regex(found) = &simple else {
                panic!("{body:?} is a regex: {simple:?}");
            };
            assert!(
                matches!(found.start, Start::Simple(_)) && found.early.is_none(),
                "{body:?} is simple"
            );
            let regex = PathPattern::Regex(Box::new(RegexPath {
                whole: found.whole.clone(),
                start: Start::Text(String::new()),
                early: None,
            }));
            for path in paths {
                assert_eq!(simple.matches(path), regex.matches(path), "{body:?} matching {path:?}");
                assert_eq!(simple.groups(path), regex.groups(path), "{body:?} groups of {path:?}");
            }
        }
    }

    #[test]
    fn query_and_fragment_are_cut_from_the_path() {
        assert_eq!(request_path("/a/b?x=1#f"), "/a/b");
        assert_eq!(query_string("/a/b?x=1&y=2#f"), "x=1&y=2");
        assert_eq!(query_string("/a/b"), "");
    }
}
