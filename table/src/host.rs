//! Hosts: normalising a request's authority and the host patterns rules are written with.
//!
//! ROUTING.md §4 key 1: matching is case-insensitive, the port and a trailing dot are ignored, and a
//! wildcard `*.example.net` stands for exactly one extra label.

use std::borrow::Cow;

use crate::error::Problem;

/// The host part of a rule, validated and lowercased.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostPattern {
    /// One hostname.
    Exact(String),
    /// `*.<suffix>`: any single label followed by `.<suffix>`; holds the suffix.
    Wildcard(String),
    /// No host: every request.
    Any,
}

impl HostPattern {
    /// Validates a host as written in a table rule (`None` is the catch-all).
    pub fn parse(host: Option<&str>) -> Result<HostPattern, Problem> {
        let Some(written) = host else {
            return Ok(HostPattern::Any);
        };
        let bad = |why| Problem::BadHost {
            host: written.to_owned(),
            why,
        };
        let host = written.strip_suffix('.').unwrap_or(written).to_ascii_lowercase();
        if host.is_empty() {
            return Err(bad("it is empty (leave the host out to match every host)"));
        }
        let (pattern, name) = match host.strip_prefix("*.") {
            Some(suffix) => (HostPattern::Wildcard(suffix.to_owned()), suffix),
            None => (HostPattern::Exact(host.clone()), host.as_str()),
        };
        if name.contains('*') {
            return Err(bad("a wildcard must be a whole first label, as in *.example.net"));
        }
        if name.contains(':') {
            return Err(bad("a host has no port"));
        }
        if name.split('.').any(str::is_empty) {
            return Err(bad("it has an empty label"));
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_')
        {
            return Err(bad("only letters, digits, '-', '_' and '.' are allowed"));
        }
        Ok(pattern)
    }

    /// Whether this pattern matches an already [normalised](normalize_authority) request host.
    pub fn matches(&self, host: &str) -> bool {
        match self {
            HostPattern::Exact(name) => name == host,
            HostPattern::Wildcard(suffix) => wildcard_suffix(host) == Some(suffix.as_str()),
            HostPattern::Any => true,
        }
    }
}

/// The suffix a single-label wildcard would need to match `host`: everything after the first label.
/// `a.example.net` gives `example.net`; a host with one label gives `None`.
pub fn wildcard_suffix(host: &str) -> Option<&str> {
    let (first, rest) = host.split_once('.')?;
    (!first.is_empty() && !rest.is_empty()).then_some(rest)
}

/// Lowercases a request authority and strips its port and a trailing dot; borrows when it can.
pub fn normalize_authority(authority: &str) -> Cow<'_, str> {
    let host = strip_port(authority);
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(host.to_ascii_lowercase())
    } else {
        Cow::Borrowed(host)
    }
}

fn strip_port(authority: &str) -> &str {
    if authority.starts_with('[') {
        // An IPv6 literal keeps its brackets; only a port after `]` goes.
        return match authority.find(']') {
            Some(end) => &authority[..=end],
            None => authority,
        };
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn authority_loses_port_trailing_dot_and_case() {
        assert_eq!(normalize_authority("Example.NET.:8080"), "example.net");
        assert_eq!(normalize_authority("example.net"), "example.net");
        assert_eq!(normalize_authority("[::1]:80"), "[::1]");
    }

    /// The compiler normalises manifest hosts with this same function, so an IPv6 literal with or
    /// without a port (or with an empty one) reads the same on both sides.
    #[test]
    fn ipv6_literals_keep_their_brackets_and_lose_the_port() {
        assert_eq!(normalize_authority("[::1]:8080"), "[::1]");
        assert_eq!(normalize_authority("[::1]"), "[::1]");
        assert_eq!(normalize_authority("[::1]:"), "[::1]");
        assert_eq!(normalize_authority("[FE80::1]:8080"), "[fe80::1]");
    }

    #[test]
    fn wildcard_suffix_strips_exactly_one_label() {
        assert_eq!(wildcard_suffix("a.example.net"), Some("example.net"));
        assert_eq!(wildcard_suffix("example.net"), Some("net"));
        assert_eq!(wildcard_suffix("localhost"), None);
        assert_eq!(wildcard_suffix(".net"), None);
    }

    #[test]
    fn host_patterns_are_validated() {
        assert_eq!(
            HostPattern::parse(Some("Shop.Example.net.")),
            Ok(HostPattern::Exact("shop.example.net".into()))
        );
        assert_eq!(
            HostPattern::parse(Some("*.example.net")),
            Ok(HostPattern::Wildcard("example.net".into()))
        );
        for bad in ["", "a.*.net", "**.net", "example.net:80", "a..net", "exa mple.net", "*"] {
            assert!(HostPattern::parse(Some(bad)).is_err(), "{bad:?} should be refused");
        }
    }
}
