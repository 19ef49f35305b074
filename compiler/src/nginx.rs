//! NGINX's VirtualServer syntax in the table's terms (ROUTING.md §6): locations (`/x`, `=/x`, `~re`,
//! `~*re`, `^~/x`), match condition values (plain, `!`, `~re`, `~*re`, `""`), the order NGINX
//! picks locations and matches in ([`NginxRank`]), and its times and sizes ([`time_ms`], [`size_bytes`]). A leaf: it reads the CRD types and the table's
//! format, nothing else; [`crate::virtualserver`] uses it.

use std::cmp::Reverse;

use switchyard_table::{ConditionSource, ConditionSpec, MatchOp, PathSpec, RuleSpec};

use crate::objects::nginx::MatchCondition;

/// A route's `path`, parsed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Location {
    /// `=/x`: the path equals `/x`.
    Exact(String),
    /// `^~/x`: a string prefix that outranks the resource's regexes.
    CaretPrefix(String),
    /// `/x`: a string prefix.
    Prefix(String),
    /// `~re` (`case_insensitive`: `~*re`): a regex searched anywhere in the path.
    Regex {
        /// The regex as written, without `~` or `~*`.
        pattern: String,
        /// `~*`.
        case_insensitive: bool,
    },
}

/// The tier of a location in NGINX's order: exact, then `^~` prefixes, then regexes, then prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// The server block's own `if`, before any location (§8.6's redirect to https).
    Server,
    /// `=/x`.
    Exact,
    /// `^~/x`.
    CaretPrefix,
    /// `~re`, `~*re`.
    Regex,
    /// `/x`.
    Prefix,
    /// The VirtualServer's own 404 for paths no route matches: last.
    Unmatched,
}

impl Location {
    /// Parses a route's path; `Err` says why it is not a location. White space between a modifier
    /// and its path is not part of the path (`~ ^/coffee` is `~^/coffee`, `= /tea` is `=/tea`), as
    /// NGINX's `location` directive reads it and as NGINX Ingress Controller normalises it
    /// (`NormalizePath`): its documentation writes regex paths with that space.
    pub fn parse(path: &str) -> Result<Location, String> {
        let absolute = |p: &str, what: &str| {
            if p.starts_with('/') {
                Ok(p.to_owned())
            } else {
                Err(format!("{what} {path:?} must start with '/'"))
            }
        };
        if let Some(rest) = after_modifier(path, "^~") {
            return absolute(rest, "the prefix of").map(Location::CaretPrefix);
        }
        if let Some(rest) = after_modifier(path, "=") {
            return absolute(rest, "the exact path of").map(Location::Exact);
        }
        if let Some(rest) = after_modifier(path, "~*") {
            return regex(rest, true);
        }
        if let Some(rest) = after_modifier(path, "~") {
            return regex(rest, false);
        }
        absolute(path, "the path").map(Location::Prefix)
    }

    /// The tier of this location.
    pub fn tier(&self) -> Tier {
        match self {
            Location::Exact(_) => Tier::Exact,
            Location::CaretPrefix(_) => Tier::CaretPrefix,
            Location::Regex { .. } => Tier::Regex,
            Location::Prefix(_) => Tier::Prefix,
        }
    }

    /// The table path: prefixes are string prefixes; a regex searches anywhere (`.*(?:re).*`, with
    /// `(?i)` for `~*`), as NGINX's `location ~` does.
    pub fn path_spec(&self) -> PathSpec {
        match self {
            Location::Exact(p) => PathSpec::Exact(p.clone()),
            Location::CaretPrefix(p) | Location::Prefix(p) => PathSpec::Prefix(p.clone()),
            Location::Regex {
                pattern,
                case_insensitive,
            } => PathSpec::Regex(search(pattern, *case_insensitive)),
        }
    }

    /// The regex whose groups `$1`…`$9` a `rewritePath` names, for a regex location (`None` for
    /// the others): the pattern as the user wrote it (with `(?i)` for `~*`), searched in the path
    /// as NGINX matches the location, so its groups are numbered as the user numbered them.
    pub fn capture_pattern(&self) -> Option<String> {
        match self {
            Location::Regex {
                pattern,
                case_insensitive,
            } => Some(format!("{}{pattern}", if *case_insensitive { "(?i)" } else { "" })),
            _ => None,
        }
    }

    /// Whether a VirtualServerRoute's subroute may live under this route (ROUTING.md §6): the same
    /// kind of location; under a prefix its path starts with the route's; under an exact path or a
    /// regex it is the route's.
    pub fn admits(&self, subroute: &Location) -> bool {
        match (self, subroute) {
            (Location::Prefix(p), Location::Prefix(s)) | (Location::CaretPrefix(p), Location::CaretPrefix(s)) => {
                s.starts_with(p.as_str())
            }
            _ => self == subroute,
        }
    }
}

/// What follows `modifier` at the start of `path`, the white space after the modifier skipped
/// (Go's `unicode.IsSpace`, which NGINX Ingress Controller trims, is Rust's `char::is_whitespace`).
fn after_modifier<'p>(path: &'p str, modifier: &str) -> Option<&'p str> {
    path.strip_prefix(modifier).map(str::trim_start)
}

/// A regex location; whether it compiles is checked with the rule ([`crate::model::RuleValidator`]).
fn regex(pattern: &str, case_insensitive: bool) -> Result<Location, String> {
    if pattern.is_empty() {
        return Err("a regex location needs a pattern after '~'".to_owned());
    }
    Ok(Location::Regex {
        pattern: pattern.to_owned(),
        case_insensitive,
    })
}

/// Whether `name` can follow `$cookie_` or `$arg_` in an NGINX variable: `[_A-Za-z0-9]+`, as NGINX
/// Ingress Controller validates cookie and argument names of match conditions.
fn is_variable_suffix(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b == b'_' || b.is_ascii_alphanumeric())
}

/// A regex that searches anywhere in the value, once the table anchors it to the whole value.
fn search(pattern: &str, case_insensitive: bool) -> String {
    let flags = if case_insensitive { "(?i)" } else { "" };
    format!("{flags}.*(?:{pattern}).*")
}

/// Why a match condition cannot be routed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConditionFault {
    /// Malformed (none or several of header/cookie/argument/variable, a bad regex): the resource
    /// is invalid.
    Invalid(String),
    /// A variable other than `$request_method`: valid for NGINX, not expressible here; the route
    /// is refused with a warning.
    Unsupported(String),
}

/// One match condition in the table's terms. A plain value compares in any case (NGINX's `map`);
/// `~re` and `~*re` search; a leading `!` negates; `""` holds for an empty or absent value.
pub fn condition(c: &MatchCondition) -> Result<ConditionSpec, ConditionFault> {
    let named = [
        c.header.as_deref().map(|n| (ConditionSource::Header, n)),
        c.cookie.as_deref().map(|n| (ConditionSource::Cookie, n)),
        c.argument.as_deref().map(|n| (ConditionSource::Query, n)),
        c.variable.as_deref().map(|n| (ConditionSource::Method, n)),
    ];
    let mut found = named.into_iter().flatten();
    let (Some((on, name)), None) = (found.next(), found.next()) else {
        return Err(ConditionFault::Invalid(
            "a condition needs exactly one of header, cookie, argument or variable".to_owned(),
        ));
    };
    let name = match on {
        ConditionSource::Method if name == "$request_method" => None,
        ConditionSource::Method => {
            return Err(ConditionFault::Unsupported(format!(
                "variable {name:?} cannot be routed on here (only $request_method)"
            )))
        }
        ConditionSource::Header => Some(name.to_ascii_lowercase()),
        ConditionSource::Cookie | ConditionSource::Query if !is_variable_suffix(name) => {
            let what = if on == ConditionSource::Cookie {
                "cookie"
            } else {
                "argument"
            };
            return Err(ConditionFault::Invalid(format!(
                "{what} name {name:?} is not one NGINX can read ($cookie_/$arg_ variable): it must consist of letters, digits or '_' ([_A-Za-z0-9]+)"
            )));
        }
        _ => Some(name.to_owned()),
    };
    let (invert, value) = match c.value.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, c.value.as_str()),
    };
    let spec = |op, value: Option<String>, invert, ignore_case| ConditionSpec {
        on,
        name: name.clone(),
        op,
        value,
        invert,
        ignore_case,
    };
    // Whether a regex compiles is checked with the rule ([`crate::model::RuleValidator`]).
    Ok(if value.is_empty() {
        // `""`: empty or absent, i.e. no value holds a character; `!""` the opposite.
        spec(MatchOp::Regex, Some(".+".to_owned()), !invert, false)
    } else if let Some(pattern) = value.strip_prefix("~*") {
        spec(MatchOp::Regex, Some(search(pattern, true)), invert, false)
    } else if let Some(pattern) = value.strip_prefix('~') {
        spec(MatchOp::Regex, Some(search(pattern, false)), invert, false)
    } else {
        spec(MatchOp::Exact, Some(value.to_owned()), invert, true)
    })
}

/// Where a rule of a VirtualServer ranks on its host, in NGINX's order: exact locations; `^~`
/// prefixes, longest first; regexes by position; prefixes, longest first; the VirtualServer's own
/// 404 last. Within one route, its matches in list order, then its own action. Every rule of a
/// VirtualServer's host comes from that VirtualServer (it owns the host alone), so this order is
/// applied among those rules only ([`crate::order`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NginxRank {
    tier: Tier,
    /// Prefix length, longest first (0 for other tiers).
    length: Reverse<usize>,
    /// The regex's position (0 for other tiers).
    regex_position: usize,
    /// The path as written, so that two locations of one tier never tie.
    path: String,
    /// The route's position: the VirtualServer's routes in order, a VirtualServerRoute's subroutes
    /// in place of the route that references it.
    position: usize,
    /// The match's index; the route's own action is `usize::MAX`, after every match.
    branch: usize,
}

impl NginxRank {
    /// The rank of a rule of the route at `position` (its `branch`: a match index, or `None` for
    /// the route's own action).
    pub fn of(location: &Location, position: usize, branch: Option<usize>) -> NginxRank {
        let (length, regex_position, path) = match location {
            Location::Exact(p) => (0, 0, p.clone()),
            Location::CaretPrefix(p) | Location::Prefix(p) => (p.len(), 0, p.clone()),
            Location::Regex { .. } => (0, position, String::new()),
        };
        NginxRank {
            tier: location.tier(),
            length: Reverse(length),
            regex_position,
            path,
            position,
            branch: branch.unwrap_or(usize::MAX),
        }
    }

    /// The rank of a rule of the server block itself, before every location.
    pub fn server() -> NginxRank {
        NginxRank {
            tier: Tier::Server,
            length: Reverse(0),
            regex_position: 0,
            path: String::new(),
            position: 0,
            branch: 0,
        }
    }

    /// The rank of the VirtualServer's 404 for unmatched paths.
    pub fn unmatched() -> NginxRank {
        NginxRank {
            tier: Tier::Unmatched,
            length: Reverse(0),
            regex_position: 0,
            path: String::new(),
            position: usize::MAX,
            branch: usize::MAX,
        }
    }
}

/// The suffix of a match's rule name: `VirtualServer/ns/name#2/match0`.
pub const MATCH_SUFFIX: &str = "/match";
/// The suffix of a VirtualServer's 404 rule: `VirtualServer/ns/name#unmatched`.
pub const UNMATCHED_SUFFIX: &str = "#unmatched";

/// Why `winner` ranks above `loser` when both are rules of one VirtualServer's host (named as
/// [`MATCH_SUFFIX`] and [`UNMATCHED_SUFFIX`] say), from their names and paths; `None` when either
/// is not such a rule, or their hosts differ. `explain` uses it, as it reads only the table.
pub fn why_ranked_lower(winner: &RuleSpec, loser: &RuleSpec) -> Option<&'static str> {
    let nginx = |name: &str| name.starts_with("VirtualServer/") || name.starts_with("VirtualServerRoute/");
    if !nginx(&winner.name) || !nginx(&loser.name) || winner.host != loser.host {
        return None;
    }
    let (winner, loser) = ((winner.name.as_str(), &winner.path), (loser.name.as_str(), &loser.path));
    let route = |name: &'_ str| -> String {
        match name.rfind(MATCH_SUFFIX) {
            Some(at) => name[..at].to_owned(),
            None => name.to_owned(),
        }
    };
    if loser.0.ends_with(UNMATCHED_SUFFIX) {
        return Some("the VirtualServer's 404 for paths no route matches comes after every route");
    }
    if route(winner.0) == route(loser.0) {
        return Some(if loser.0.contains(MATCH_SUFFIX) {
            "earlier match in the same route (NGINX: the first match in list order wins)"
        } else {
            "earlier match in the same route (the route's own action serves only when no match holds)"
        });
    }
    Some(match (winner.1, loser.1) {
        (PathSpec::Exact(_), _) => "an exact location (=) is chosen before any other",
        (PathSpec::Regex(_), PathSpec::Regex(_)) => "earlier regex location (NGINX tries regex locations in order)",
        (PathSpec::Regex(_), _) => "a regex location outranks plain prefix locations",
        (_, PathSpec::Regex(_)) => "a ^~ prefix location outranks regex locations",
        _ => "longer prefix location",
    })
}

/// An nginx size (`client_max_body_size`): bytes, or a number with `k`, `m` or `g` (any case);
/// `Some(None)` for `0`, no limit; `None` when it is no size.
pub fn size_bytes(text: &str) -> Option<Option<u64>> {
    let text = text.trim();
    let (number, scale) = match text.char_indices().last()? {
        (at, 'k' | 'K') => (&text[..at], 1u64 << 10),
        (at, 'm' | 'M') => (&text[..at], 1 << 20),
        (at, 'g' | 'G') => (&text[..at], 1 << 30),
        _ => (text, 1),
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let bytes = number.parse::<u64>().ok()?.checked_mul(scale)?;
    Some((bytes > 0).then_some(bytes))
}

/// An nginx time (`500ms`, `30s`, `1m30s`, `2h`; a bare number is seconds) in milliseconds;
/// `None` when it is not one, is zero, or exceeds `u32` milliseconds.
pub fn time_ms(text: &str) -> Option<u32> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<u64>() {
        return u32::try_from(seconds.checked_mul(1000)?).ok().filter(|ms| *ms > 0);
    }
    let mut total: u64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        let number: u64 = rest[..digits].parse().ok()?;
        let unit_len = rest[digits..]
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len() - digits);
        let scale: u64 = match &rest[digits..digits + unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return None,
        };
        total = total.checked_add(number.checked_mul(scale)?)?;
        rest = &rest[digits + unit_len..];
    }
    u32::try_from(total).ok().filter(|ms| *ms > 0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn nginx_sizes_are_bytes_kibibytes_mebibytes_or_gibibytes_and_zero_is_no_limit() {
        use super::size_bytes;
        for (text, size) in [
            ("512", Some(512)),
            ("64k", Some(64 << 10)),
            ("8m", Some(8 << 20)),
            ("2G", Some(2 << 30)),
            ("0m", None),
        ] {
            assert_eq!(size_bytes(text), Some(size), "{text}");
        }
        for text in ["", "m", "1.5m", "-1", "10mb"] {
            assert_eq!(size_bytes(text), None, "{text}");
        }
    }

    #[test]
    fn nginx_times_are_milliseconds_seconds_minutes_hours_and_days_combined() {
        use super::time_ms;
        assert_eq!(time_ms("30"), Some(30_000), "a bare number is seconds");
        assert_eq!(time_ms("500ms"), Some(500));
        assert_eq!(time_ms("1m30s"), Some(90_000));
        assert_eq!(time_ms("2h"), Some(7_200_000));
        for bad in ["", "0", "soon", "5x", "s", "1.5s", "100d"] {
            assert_eq!(time_ms(bad), None, "{bad:?}");
        }
    }

    use super::*;

    #[test]
    fn locations_parse_as_nginx_writes_them() {
        assert_eq!(Location::parse("/tea"), Ok(Location::Prefix("/tea".into())));
        assert_eq!(Location::parse("=/tea"), Ok(Location::Exact("/tea".into())));
        assert_eq!(Location::parse("^~/tea"), Ok(Location::CaretPrefix("/tea".into())));
        assert_eq!(
            Location::parse("~*\\.JPG$").map(|l| l.path_spec()),
            Ok(PathSpec::Regex("(?i).*(?:\\.JPG$).*".into()))
        );
        assert!(Location::parse("tea").is_err());
        assert!(Location::parse("=tea").is_err());
        assert!(Location::parse("~").is_err());
    }

    #[test]
    fn ranks_follow_nginx_order() {
        let rank = |p: &str, pos, branch| NginxRank::of(&Location::parse(p).unwrap(), pos, branch);
        let mut ranks = vec![
            NginxRank::unmatched(),
            rank("/", 0, None),
            rank("/tea/green", 1, None),
            rank("~b", 3, None),
            rank("~a", 2, None),
            rank("^~/x", 4, None),
            rank("=/tea", 5, None),
            rank("/tea", 6, Some(1)),
            rank("/tea", 6, Some(0)),
            rank("/tea", 6, None),
        ];
        ranks.sort();
        let order: Vec<(Tier, usize, usize)> = ranks.iter().map(|r| (r.tier, r.position, r.branch)).collect();
        assert_eq!(
            order,
            vec![
                (Tier::Exact, 5, usize::MAX),
                (Tier::CaretPrefix, 4, usize::MAX),
                (Tier::Regex, 2, usize::MAX),
                (Tier::Regex, 3, usize::MAX),
                (Tier::Prefix, 1, usize::MAX),
                (Tier::Prefix, 6, 0),
                (Tier::Prefix, 6, 1),
                (Tier::Prefix, 6, usize::MAX),
                (Tier::Prefix, 0, usize::MAX),
                (Tier::Unmatched, usize::MAX, usize::MAX),
            ]
        );
    }
}
