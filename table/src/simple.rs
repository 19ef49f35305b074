//! ingress-nginx's usual regex-mode locations, matched without a regex engine.
//!
//! In regex mode every location `P` of a host becomes the path regex `(?i)(?:P).*`, and a
//! `rewrite-target` the rewrite pattern `(?i)^P` (ROUTING.md §7.4, §7.5). Most `P` are plain text
//! (`/api/v1`) or plain text followed by ingress-nginx's documented rewrite groups
//! (`/something(/|$)(.*)`). For those forms, [`SimpleBody`] answers exactly what `regex-lite`
//! answers, in one pass over the path and with no allocation:
//!
//! `P` = TEXT \[`(/|$)`\] \[`(.*)` | `.*`\]
//!
//! - TEXT: characters without a meaning in regex syntax, or `\` before ASCII punctuation (a literal,
//!   as `regex-lite` reads it; `\<` and `\>` are not literals there and are not accepted here).
//!   Compared in any ASCII case: `regex-lite`'s `(?i)` folds ASCII letters only (its documentation:
//!   "Case insensitive searching is limited to ASCII case insensitivity"), so a non-ASCII byte must
//!   be equal, which comparing bytes with `eq_ignore_ascii_case` does.
//! - `(/|$)`: a `/`, or the end of the path (`$` without the `m` flag is the end of the text only).
//!   The first branch is preferred, as `regex-lite`'s leftmost-first match prefers it.
//! - `(.*)` or `.*`: everything up to the first line feed (`.` matches any character but `\n`),
//!   greedily.
//!
//! No choice made along the way can be undone by a later item (the `$` branch is taken only at the
//! end of the path, where `/` cannot be, and the last item always matches), so the one pass finds
//! the match and the groups a backtracking search would: the leftmost-first ones. The tests check
//! every form against `regex-lite` itself.

/// The characters with a meaning in regex syntax (outside classes, without the `x` flag).
pub(crate) const SPECIAL: &[char] = &['\\', '.', '+', '*', '?', '(', ')', '[', ']', '{', '}', '^', '$', '|'];

/// A regex-mode location body of the form above.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleBody {
    /// TEXT, escapes resolved.
    text: String,
    /// Whether `(/|$)` follows TEXT.
    slash_or_end: bool,
    /// What ends the body.
    rest: Rest,
}

/// The last item of a [`SimpleBody`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rest {
    /// Nothing.
    None,
    /// `.*`
    Any,
    /// `(.*)`: a group.
    Group,
}

/// The groups `$0`…`$9` of a match (an unmatched group is empty).
pub type Groups<'p> = [&'p str; 10];

impl SimpleBody {
    /// The body `P`, when it has the form above.
    pub fn parse(body: &str) -> Option<SimpleBody> {
        let (mut rest, mut body) = (Rest::None, body);
        if let Some(head) = body.strip_suffix("(.*)") {
            (rest, body) = (Rest::Group, head);
        } else if let Some(head) = body.strip_suffix(".*") {
            (rest, body) = (Rest::Any, head);
        }
        let (slash_or_end, body) = match body.strip_suffix("(/|$)") {
            Some(head) => (true, head),
            None => (false, body),
        };
        let mut text = String::with_capacity(body.len());
        let mut chars = body.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next()? {
                    escaped @ ('!'..='/' | ':'..='@' | '['..='`' | '{'..='~') if !matches!(escaped, '<' | '>') => {
                        text.push(escaped)
                    }
                    _ => return None,
                },
                c if SPECIAL.contains(&c) => return None,
                c => text.push(c),
            }
        }
        Some(SimpleBody {
            text,
            slash_or_end,
            rest,
        })
    }

    /// TEXT: what every match starts with, in some ASCII case.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Where the match of everything but the last item ends in `path`, when it matches.
    fn head_end(&self, path: &str) -> Option<usize> {
        let at = self.text.len();
        let head = path.as_bytes().get(..at)?;
        if !head.eq_ignore_ascii_case(self.text.as_bytes()) {
            return None;
        }
        if !self.slash_or_end {
            return Some(at);
        }
        match path.as_bytes().get(at) {
            Some(b'/') => Some(at + 1),
            None => Some(at),
            Some(_) => None,
        }
    }

    /// Whether the location's path regex `(?i)(?:P).*` matches the whole `path`.
    pub fn matches_whole(&self, path: &str) -> bool {
        // Whatever the last item takes, `.*` must take the rest up to the end: no line feed.
        self.head_end(path)
            .is_some_and(|end| !path.as_bytes().get(end..).unwrap_or_default().contains(&b'\n'))
    }

    /// The groups of `(?i)^P`'s match in `path` (searched: it need not reach the end), when found.
    pub fn captures<'p>(&self, path: &'p str) -> Option<Groups<'p>> {
        let head = self.head_end(path)?;
        let end = match self.rest {
            Rest::None => head,
            Rest::Any | Rest::Group => {
                let after = path.as_bytes().get(head..).unwrap_or_default();
                head + after.iter().position(|&b| b == b'\n').unwrap_or(after.len())
            }
        };
        let slice = |from: usize, to: usize| path.get(from..to).unwrap_or("");
        // `$0`, then `(/|$)`'s group and `(.*)`'s, each numbered when present.
        let slash = self.slash_or_end.then(|| slice(self.text.len(), head));
        let rest = (self.rest == Rest::Group).then(|| slice(head, end));
        let mut groups: Groups<'p> = [""; 10];
        for (group, found) in groups
            .iter_mut()
            .zip([Some(slice(0, end)), slash, rest].into_iter().flatten())
        {
            *group = found;
        }
        Some(groups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_lite::Regex;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    /// Bodies of every form, with TEXT of letters, digits, escapes and non-ASCII characters.
    const BODIES: &[&str] = &[
        "/",
        "/api",
        "/API/v1",
        "/api/v1/items/list",
        "/something(/|$)(.*)",
        "/r48(/|$)(.*)",
        "/a(/|$)",
        "/a(/|$).*",
        "/a(.*)",
        "/a.*",
        "(.*)",
        ".*",
        "(/|$)(.*)",
        "",
        "/caf\u{e9}(/|$)(.*)",
        "/\u{c9}t\u{e9}",
        "/k",
        "/s(.*)",
        "/a\\.b(/|$)(.*)",
        "/a\\-b\\/c\\~d\\#e\\&f\\%g",
        "/a-b_c~d#e&f%g!h@i=j,k;l'm\"n<o>p",
        "/x y",
    ];

    /// Paths around each body: cases, line feeds, non-ASCII case pairs, Unicode folds of ASCII letters.
    const PATHS: &[&str] = &[
        "",
        "/",
        "/api",
        "/API",
        "/Api/",
        "/apix",
        "/api/v1",
        "/api/V1/items/list",
        "/api/v1/items/list/more",
        "/api/v1/items/lis",
        "/something",
        "/SOMETHING/",
        "/something/new/x",
        "/somethingnew",
        "/something\n",
        "/something/\n/x",
        "/something/a\nb",
        "/r48",
        "/R48/items/42",
        "/r48x",
        "/r4",
        "/a",
        "/A/",
        "/a/b",
        "/ab",
        "/a\n",
        "/a/\n",
        "\n",
        "/\n",
        "/caf\u{e9}",
        "/CAF\u{c9}",
        "/CAF\u{e9}/x",
        "/caf\u{e9}/",
        "/\u{e9}t\u{e9}",
        "/\u{c9}T\u{c9}",
        "/\u{c9}T\u{e9}x",
        "/\u{212a}",
        "/K",
        "/k/",
        "/\u{17f}x",
        "/S",
        "/a.b",
        "/A.B/c",
        "/axb",
        "/a-b/c~d#e&f%g",
        "/A-B/C~D#E&F%G/x",
        "/A-B_C~D#E&F%G!H@I=J,K;L'M\"N<O>P",
        "/x y",
        "/X Y/z",
        "/x  y",
    ];

    #[test]
    fn every_form_agrees_with_regex_lite() {
        for body in BODIES {
            let simple = SimpleBody::parse(body).unwrap_or_else(|| panic!("{body:?} is simple"));
            let whole = Regex::new(&format!("^(?:(?i)(?:{body}).*)$")).unwrap();
            let search = Regex::new(&format!("(?i)^{body}")).unwrap();
            for path in PATHS.iter().copied().chain(BODIES.iter().copied()) {
                assert_eq!(
                    simple.matches_whole(path),
                    whole.is_match(path),
                    "{body:?} matching {path:?}"
                );
                let expected = search.captures(path).map(|found| {
                    let mut groups: Groups<'_> = [""; 10];
                    for (n, group) in groups.iter_mut().enumerate() {
                        *group = found.get(n).map_or("", |m| m.as_str());
                    }
                    groups
                });
                assert_eq!(simple.captures(path), expected, "{body:?} capturing in {path:?}");
            }
        }
    }

    /// `regex-lite`'s `(?i)` folds ASCII only: `é` never matches `É`, the Kelvin sign never matches
    /// `k`, the long s never matches `s`; a byte comparison in any ASCII case agrees.
    #[test]
    fn case_folding_is_ascii_only_as_in_regex_lite() {
        for (pattern, path, folds) in [
            ("(?i)^/caf\u{e9}$", "/CAF\u{c9}", false),
            ("(?i)^/caf\u{e9}$", "/CAF\u{e9}", true),
            ("(?i)^/k$", "/\u{212a}", false),
            ("(?i)^/s$", "/\u{17f}", false),
            ("(?i)^/a$", "/A", true),
        ] {
            assert_eq!(
                Regex::new(pattern).unwrap().is_match(path),
                folds,
                "{pattern} on {path}"
            );
        }
        let cafe = SimpleBody::parse("/caf\u{e9}").unwrap();
        assert!(cafe.matches_whole("/CAF\u{e9}"));
        assert!(!cafe.matches_whole("/CAF\u{c9}"));
        assert!(!SimpleBody::parse("/k").unwrap().matches_whole("/\u{212a}"));
    }

    /// Everything else is left to the regex: classes, quantifiers, other groups, alternation,
    /// anchors, escapes that are not literals, and `(/|$)` or `(.*)` anywhere but at the end.
    #[test]
    fn other_bodies_are_not_simple() {
        for body in [
            "/a[bc]",
            "/a+",
            "/ab?",
            "/a{2}",
            "/a|/b",
            "/(a)",
            "/(?:a)",
            "/a$",
            "^/a",
            "/a\\d",
            "/a\\<",
            "/a\\>",
            "/a\\",
            "/a(.*)/b",
            "/a(/|$)/b",
            "/a(.*)(/|$)",
            "/a(.+)",
            "/a(/|$)(.*)(.*)",
            "/a.b",
            "/a\\\u{e9}",
        ] {
            assert_eq!(SimpleBody::parse(body), None, "{body:?}");
        }
    }
}
