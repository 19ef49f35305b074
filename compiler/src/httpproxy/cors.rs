//! An HTTPProxy's `spec.virtualhost.corsPolicy` (issue "Policies beyond the route"), read as
//! Contour reads it (`toCORSPolicy`, `internal/dag/httpproxy_processor.go`) and answered as the
//! Envoy CORS filter Contour programs with it (`internal/envoy/v3/route.go`'s `corsPolicy`): the
//! table's [`Cors`] with [`CorsSemantics::Envoy`], on every route of the host.
//!
//! - `allowOrigin` (one at least): `*`; an exact origin — what Go's `url.Parse` reads back as its
//!   `scheme://host[:port]` — compared with the request's `Origin` case ignored; anything else a
//!   regex over the whole `Origin` (one that does not compile is refused).
//! - `allowMethods` (one at least), `allowHeaders` and `exposeHeaders`, joined with `,`; each a
//!   token, as the CRD's pattern demands.
//! - `maxAge`: a Go duration in whole seconds, as Contour prints it (`%.0f`); `0s` sends `0`
//!   (no caching), none sends no `Access-Control-Max-Age`; a negative or unreadable one is refused.
//! - `allowCredentials`, `allowPrivateNetwork`.

use switchyard_table::{Cors, CorsSemantics, OriginRegex};

use crate::objects::CorsPolicy;

/// The table's CORS of `policy` (at `at`), or why Contour refuses it.
pub fn read(policy: &CorsPolicy, at: &str) -> Result<Cors, String> {
    if policy.allow_origin.is_empty() {
        return Err(format!("{at}.allowOrigin: no origin (one at least is needed)"));
    }
    let (mut exact, mut regexes) = (Vec::new(), Vec::new());
    for (i, origin) in policy.allow_origin.iter().enumerate() {
        if origin == "*" || is_exact_origin(origin) {
            exact.push(origin.clone());
            continue;
        }
        let regex = OriginRegex::new(origin).ok_or_else(|| {
            format!("{at}.allowOrigin[{i}]: {origin:?} is neither an exact origin nor a regex that compiles")
        })?;
        regexes.push(regex);
    }
    if policy.allow_methods.is_empty() {
        return Err(format!("{at}.allowMethods: no method (one at least is needed)"));
    }
    Ok(Cors {
        allow_origin: exact,
        allow_origin_regex: regexes,
        allow_methods: tokens(&policy.allow_methods, &format!("{at}.allowMethods"))?,
        allow_headers: tokens(&policy.allow_headers, &format!("{at}.allowHeaders"))?,
        expose_headers: tokens(&policy.expose_headers, &format!("{at}.exposeHeaders"))?,
        allow_credentials: policy.allow_credentials,
        max_age: max_age(&policy.max_age, &format!("{at}.maxAge"))?,
        semantics: CorsSemantics::Envoy,
        allow_private_network: policy.allow_private_network,
        by_route: false,
    })
}

/// Whether Go's `url.Parse(text)` gives back `text` as `scheme://host[:port]`: Contour's exact
/// origin. A lowercase scheme, then a host of the characters Go takes in one (no path, query,
/// fragment, user or escape), with a port of digits.
fn is_exact_origin(text: &str) -> bool {
    let Some((scheme, host)) = text.split_once("://") else {
        return false;
    };
    let scheme_char = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+-.".contains(&b);
    let scheme_ok = scheme.bytes().next().is_some_and(|b| b.is_ascii_lowercase()) && scheme.bytes().all(scheme_char);
    let host_char = |b: u8| b >= 0x80 || b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:[]<>\"".contains(&b);
    scheme_ok && !host.is_empty() && host.bytes().all(host_char) && valid_port(host)
}

/// Whether what follows `host`'s name (after `]` for an IPv6 address, else after its last `:`)
/// is nothing or `:` and digits, as Go's `validOptionalPort` wants.
fn valid_port(host: &str) -> bool {
    let port = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((_, after)) => after,
            None => return false,
        },
        None => host.rfind(':').map_or("", |i| &host[i..]),
    };
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// `values` joined with `,`, each a token (the CRD's `CORSHeaderValue` pattern).
fn tokens(values: &[String], at: &str) -> Result<String, String> {
    let token_char = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+.^_`|~-".contains(&b);
    match values.iter().find(|v| v.is_empty() || !v.bytes().all(token_char)) {
        Some(bad) => Err(format!("{at}: {bad:?} is not a header token")),
        None => Ok(values.join(",")),
    }
}

/// Contour's `ParseMaxAge` printed as its Envoy policy's `max_age`: none when empty, else whole
/// seconds (`%.0f`, ties to even).
fn max_age(text: &str, at: &str) -> Result<Option<u64>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    let ms = super::go_duration(text).ok_or_else(|| format!("{at}: {text:?} is not a duration of 0 or more"))?;
    let seconds = (ms / 1000.0).round_ties_even();
    match seconds < u64::MAX as f64 {
        true => Ok(Some(seconds as u64)),
        false => Err(format!("{at}: {text:?} is too long")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(yaml: &str) -> CorsPolicy {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn an_httpproxy_origin_is_exact_as_scheme_host_and_port_else_a_regex() {
        let cors = read(
            &policy(
                r#"{allowOrigin: ["*", "https://app.example.com", "http://a.b:8080", "https://*.example.com", "https://app.example.com/", 'https://.*\.example\.org', "HTTPS://x.com"], allowMethods: [GET]}"#,
            ),
            "at",
        )
        .unwrap();
        assert_eq!(
            cors.allow_origin,
            [
                "*",
                "https://app.example.com",
                "http://a.b:8080",
                "https://*.example.com"
            ]
        );
        let regexes: Vec<&str> = cors.allow_origin_regex.iter().map(OriginRegex::as_str).collect();
        assert_eq!(
            regexes,
            ["https://app.example.com/", r"https://.*\.example\.org", "HTTPS://x.com"]
        );
        assert_eq!(cors.semantics, CorsSemantics::Envoy);
    }

    #[test]
    fn an_httpproxy_cors_joins_its_lists_and_prints_its_max_age_in_seconds_as_contour_does() {
        let cors = read(
            &policy("{allowOrigin: ['*'], allowMethods: [GET, POST], allowHeaders: [x-a, x-b], exposeHeaders: [x-c], maxAge: 10m, allowCredentials: true, allowPrivateNetwork: true}"),
            "at",
        )
        .unwrap();
        assert_eq!(
            (
                cors.allow_methods.as_str(),
                cors.allow_headers.as_str(),
                cors.expose_headers.as_str()
            ),
            ("GET,POST", "x-a,x-b", "x-c")
        );
        assert_eq!(cors.max_age, Some(600));
        assert!(cors.allow_credentials && cors.allow_private_network);
        let age = |text: &str| max_age(text, "at");
        assert_eq!(
            (age(""), age("0s"), age("1.5s"), age("2.5s")),
            (Ok(None), Ok(Some(0)), Ok(Some(2)), Ok(Some(2)))
        );
        assert!(age("-1s").is_err() && age("soon").is_err());
    }

    #[test]
    fn contour_refuses_a_cors_without_origins_or_methods_or_with_a_bad_regex_value_or_max_age() {
        for bad in [
            "{allowOrigin: [], allowMethods: [GET]}",
            "{allowOrigin: ['*'], allowMethods: []}",
            "{allowOrigin: ['(unclosed'], allowMethods: [GET]}",
            "{allowOrigin: ['*'], allowMethods: ['GET, PUT']}",
            "{allowOrigin: ['*'], allowMethods: [GET], maxAge: -5s}",
        ] {
            assert!(read(&policy(bad), "at").is_err(), "{bad}");
        }
    }
}
