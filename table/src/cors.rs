//! A rule's CORS ([`Cors`], issue "Policies beyond the route"), answered with one of two
//! semantics ([`CorsSemantics`]).
//!
//! **ingress-nginx's**, as its template answers (its `CORS` block and `buildCorsOriginRegex`):
//!
//! - The request is a CORS request when the policy allows every origin (`*`, whatever the
//!   request's `Origin`), or its `Origin` ends with one of the allowed origins, compared without
//!   case, a `*` standing for one label (`https://*.example.com`) — nginx's `$http_origin ~*
//!   (…)$`.
//! - A CORS request with the method `OPTIONS` (a preflight) is answered `204` at once, with the
//!   CORS headers and `Content-Type: text/plain charset=UTF-8`; it never reaches the backend.
//! - The response to any other CORS request gets the CORS headers: `Access-Control-Allow-Origin`
//!   (`*`, or the request's `Origin`), `-Allow-Credentials: true` when allowed, `-Allow-Methods`,
//!   `-Allow-Headers`, `-Expose-Headers` when set, and `-Max-Age`, each replacing the backend's.
//! - A request that is not a CORS request is left as it is (a preflight goes to the backend).
//!
//! **Envoy's**, as its CORS filter answers (`source/extensions/filters/http/cors/cors_filter.cc`)
//! the policy Contour gives it:
//!
//! - The request is a CORS request when its `Origin` is not empty and equals (case ignored) an
//!   allowed origin or matches an allowed regex whole; an allowed `*`, or a regex matching `*`,
//!   allows every origin.
//! - A CORS request with the method `OPTIONS` and an `Access-Control-Request-Method` (a
//!   preflight) is answered `200` at once with `Access-Control-Allow-Origin` (its `Origin`),
//!   `-Allow-Credentials: true` when allowed, `-Allow-Methods` and `-Allow-Headers` when set (`*`
//!   echoing the request's `Access-Control-Request-Method` and `-Request-Headers`), `-Max-Age`
//!   when set and `-Allow-Private-Network: true` when allowed and asked for.
//! - The response to any other CORS request gets `Access-Control-Allow-Origin` (its `Origin`),
//!   `-Allow-Credentials: true` when allowed and `-Expose-Headers` when set.
//! - A request from an origin not allowed is left as it is (its preflight goes to the backend:
//!   Envoy's `forward_not_matching_preflights`).

use std::sync::Arc;

use crate::format::{Cors, CorsSemantics};
use crate::request::RequestView;

/// The content type of an ingress-nginx preflight's answer.
const NGINX_PREFLIGHT_CONTENT_TYPE: &str = "text/plain charset=UTF-8";

/// What a rule's CORS does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorsVerdict {
    /// Not a CORS request: nothing.
    None,
    /// A preflight: answered at once with [`CorsHeaders`] ([`CorsHeaders::status`]).
    Preflight(CorsHeaders),
    /// The response gets [`CorsHeaders`].
    Response(CorsHeaders),
}

/// The CORS headers of one response: the policy's, with the origin allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorsHeaders {
    cors: Arc<Cors>,
    /// `*`, or the request's `Origin`.
    origin: String,
    /// What an Envoy preflight asked for; `None` for any other answer.
    asked: Option<Asked>,
}

/// What an Envoy preflight asks for, which its answer may echo.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Asked {
    /// `Access-Control-Request-Method`.
    method: String,
    /// `Access-Control-Request-Headers`.
    headers: String,
    /// `Access-Control-Request-Private-Network: true`, and the policy allows it.
    private_network: bool,
}

impl CorsHeaders {
    /// Calls `set` with each header's name and value, in the order ingress-nginx's template or
    /// Envoy's filter writes them.
    pub fn each(&self, mut set: impl FnMut(&'static str, &str)) {
        let cors = &self.cors;
        set("access-control-allow-origin", &self.origin);
        if cors.allow_credentials {
            set("access-control-allow-credentials", "true");
        }
        match (cors.semantics, &self.asked) {
            (CorsSemantics::Nginx, _) => {
                set("access-control-allow-methods", &cors.allow_methods);
                set("access-control-allow-headers", &cors.allow_headers);
                expose_headers(cors, &mut set);
                max_age(cors, &mut set);
            }
            (CorsSemantics::Envoy, None) => expose_headers(cors, &mut set),
            (CorsSemantics::Envoy, Some(asked)) => {
                let echoed = |value: &str, echo: &str| (value == "*").then(|| echo.to_owned());
                for (name, value, echo) in [
                    ("access-control-allow-methods", &cors.allow_methods, &asked.method),
                    ("access-control-allow-headers", &cors.allow_headers, &asked.headers),
                ] {
                    if !value.is_empty() {
                        set(name, echoed(value, echo).as_deref().unwrap_or(value));
                    }
                }
                max_age(cors, &mut set);
                if asked.private_network {
                    set("access-control-allow-private-network", "true");
                }
            }
        }
    }

    /// The status a preflight is answered with: `204` (ingress-nginx), `200` (Envoy).
    pub fn status(&self) -> u16 {
        match self.cors.semantics {
            CorsSemantics::Nginx => 204,
            CorsSemantics::Envoy => 200,
        }
    }

    /// The content type of a preflight's answer: ingress-nginx's `text/plain charset=UTF-8`;
    /// none for Envoy's.
    pub fn content_type(&self) -> Option<&'static str> {
        self.cors.semantics.is_nginx().then_some(NGINX_PREFLIGHT_CONTENT_TYPE)
    }
}

impl Cors {
    /// Whether every response but a preflight's gets the same headers: ingress-nginx's semantics
    /// with every origin allowed (`*`: the request's `Origin` is never read).
    pub fn same_for_every_response(&self) -> bool {
        self.semantics.is_nginx() && self.allow_origin.iter().any(|origin| origin == "*")
    }

    /// The headers of every response but a preflight's, in order, when they are the same for all
    /// ([`Cors::same_for_every_response`]).
    pub fn every_response_headers(self: &Arc<Cors>) -> Option<Vec<(&'static str, String)>> {
        if !self.same_for_every_response() {
            return None;
        }
        let headers = CorsHeaders {
            cors: self.clone(),
            origin: "*".to_owned(),
            asked: None,
        };
        let mut pairs = Vec::new();
        headers.each(|name, value| pairs.push((name, value.to_owned())));
        Some(pairs)
    }
}

impl CorsHeaders {
    /// Whether the gateway's route adds these to the response ([`Cors::by_route`]): the filter
    /// adds them only to its own answers.
    pub fn added_by_route(&self) -> bool {
        self.cors.by_route
    }
}

/// `Access-Control-Expose-Headers`, when set.
fn expose_headers(cors: &Cors, set: &mut impl FnMut(&'static str, &str)) {
    if !cors.expose_headers.is_empty() {
        set("access-control-expose-headers", &cors.expose_headers);
    }
}

/// `Access-Control-Max-Age`, when set.
fn max_age(cors: &Cors, set: &mut impl FnMut(&'static str, &str)) {
    if let Some(age) = cors.max_age {
        set("access-control-max-age", &age.to_string());
    }
}

/// What `cors` does with `request`.
pub fn check(cors: &Arc<Cors>, request: &impl RequestView) -> CorsVerdict {
    match cors.semantics {
        CorsSemantics::Nginx => nginx_check(cors, request),
        CorsSemantics::Envoy => envoy_check(cors, request),
    }
}

/// ingress-nginx's: any `OPTIONS` of a CORS request is a preflight.
fn nginx_check(cors: &Arc<Cors>, request: &impl RequestView) -> CorsVerdict {
    let origin = match cors.allow_origin.iter().any(|o| o == "*") {
        true => Some("*".to_owned()),
        false => allowed_origin(request, |origin| {
            cors.allow_origin.iter().any(|pattern| origin_matches(pattern, origin))
        }),
    };
    let Some(origin) = origin else {
        return CorsVerdict::None;
    };
    let headers = CorsHeaders {
        cors: cors.clone(),
        origin,
        asked: None,
    };
    match request.method() == "OPTIONS" {
        true => CorsVerdict::Preflight(headers),
        false => CorsVerdict::Response(headers),
    }
}

/// Envoy's: the first `Origin`, not empty, allowed; a preflight is an `OPTIONS` with an
/// `Access-Control-Request-Method`.
fn envoy_check(cors: &Arc<Cors>, request: &impl RequestView) -> CorsVerdict {
    let origin = header(request, "origin");
    if origin.is_empty() || !envoy_allows(cors, &origin) {
        return CorsVerdict::None;
    }
    let method = header(request, "access-control-request-method");
    let asked = (request.method() == "OPTIONS" && !method.is_empty()).then(|| Asked {
        method,
        headers: header(request, "access-control-request-headers"),
        private_network: cors.allow_private_network
            && header(request, "access-control-request-private-network") == "true",
    });
    let preflight = asked.is_some();
    let headers = CorsHeaders {
        cors: cors.clone(),
        origin,
        asked,
    };
    match preflight {
        true => CorsVerdict::Preflight(headers),
        false => CorsVerdict::Response(headers),
    }
}

/// Whether Envoy's filter allows `origin`: a matcher that matches `*` allows every origin.
fn envoy_allows(cors: &Cors, origin: &str) -> bool {
    let exact = |o: &String| o == "*" || o.eq_ignore_ascii_case(origin);
    let regex = |r: &crate::OriginRegex| r.is_match("*") || r.is_match(origin);
    cors.allow_origin.iter().any(exact) || cors.allow_origin_regex.iter().any(regex)
}

/// The request's first value of `name`, or empty.
fn header(request: &impl RequestView, name: &str) -> String {
    let mut first = String::new();
    request.any_header_value(name, &mut |value| {
        first = value.to_owned();
        true
    });
    first
}

/// The request's first `Origin` that `allowed` allows.
fn allowed_origin(request: &impl RequestView, allowed: impl Fn(&str) -> bool) -> Option<String> {
    let mut matched = None;
    request.any_header_value("origin", &mut |origin| {
        let yes = allowed(origin);
        if yes {
            matched = Some(origin.to_owned());
        }
        yes
    });
    matched
}

/// Whether `origin` ends with `pattern` (ASCII case ignored), its first `*` one or more of
/// `[A-Za-z0-9-]`: nginx's `(pattern)$` under `~*`.
fn origin_matches(pattern: &str, origin: &str) -> bool {
    let ends_with = |text: &str, suffix: &str| {
        text.len() >= suffix.len()
            && text.is_char_boundary(text.len() - suffix.len())
            && text[text.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
    };
    let Some((before, after)) = pattern.split_once('*') else {
        return ends_with(origin, pattern);
    };
    if !ends_with(origin, after) {
        return false;
    }
    let rest = &origin[..origin.len() - after.len()];
    let label_len = rest
        .bytes()
        .rev()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'-')
        .count();
    // The label takes one or more characters; any shorter split leaves `before` to end there.
    (1..=label_len).any(|len| ends_with(&rest[..rest.len() - len], before))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::SimpleRequest;

    fn cors(origins: &[&str]) -> Arc<Cors> {
        Arc::new(Cors {
            allow_origin: origins.iter().map(|o| (*o).to_owned()).collect(),
            allow_methods: "GET, PUT, POST, DELETE, PATCH, OPTIONS".to_owned(),
            allow_headers: "DNT,Keep-Alive".to_owned(),
            expose_headers: String::new(),
            allow_credentials: true,
            max_age: Some(1_728_000),
            ..Cors::default()
        })
    }

    /// Contour's kind of policy: `origins` exact, `regexes`, `GET,PUT`, `X-A`, exposing `X-B`, 600 s.
    fn envoy(origins: &[&str], regexes: &[&str]) -> Arc<Cors> {
        Arc::new(Cors {
            allow_origin: origins.iter().map(|o| (*o).to_owned()).collect(),
            allow_origin_regex: regexes.iter().filter_map(|r| crate::OriginRegex::new(r)).collect(),
            allow_methods: "GET,PUT".to_owned(),
            allow_headers: "X-A".to_owned(),
            expose_headers: "X-B".to_owned(),
            allow_credentials: true,
            max_age: Some(600),
            semantics: CorsSemantics::Envoy,
            allow_private_network: true,
            by_route: false,
        })
    }

    fn preflight(origin: &str) -> SimpleRequest {
        SimpleRequest::get("h", "/")
            .method("OPTIONS")
            .header("origin", origin)
            .header("access-control-request-method", "PUT")
    }

    fn names(verdict: &CorsVerdict) -> Vec<String> {
        headers(verdict).into_iter().map(|(name, _)| name).collect()
    }

    #[test]
    fn an_httpproxy_preflight_from_an_allowed_origin_is_answered_200_with_envoys_headers() {
        let request = preflight("https://App.example.com").header("access-control-request-private-network", "true");
        let verdict = check(&envoy(&["https://app.example.com"], &[]), &request);
        let CorsVerdict::Preflight(answer) = &verdict else {
            panic!("{verdict:?}");
        };
        assert_eq!((answer.status(), answer.content_type()), (200, None));
        let pairs = [
            ("access-control-allow-origin", "https://App.example.com"),
            ("access-control-allow-credentials", "true"),
            ("access-control-allow-methods", "GET,PUT"),
            ("access-control-allow-headers", "X-A"),
            ("access-control-max-age", "600"),
            ("access-control-allow-private-network", "true"),
        ];
        let wanted: Vec<(String, String)> = pairs.iter().map(|(n, v)| ((*n).into(), (*v).into())).collect();
        assert_eq!(headers(&verdict), wanted);
    }

    #[test]
    fn an_httpproxy_options_without_a_request_method_is_no_preflight_and_its_response_gets_the_origin() {
        let request = SimpleRequest::get("h", "/")
            .method("OPTIONS")
            .header("origin", "https://app.example.com");
        let verdict = check(&envoy(&["https://app.example.com"], &[]), &request);
        assert!(matches!(verdict, CorsVerdict::Response(_)), "{verdict:?}");
        assert_eq!(
            names(&verdict),
            [
                "access-control-allow-origin",
                "access-control-allow-credentials",
                "access-control-expose-headers"
            ]
        );
    }

    #[test]
    fn an_httpproxy_preflight_from_a_disallowed_origin_or_without_one_is_passed_on() {
        let policy = envoy(&["https://app.example.com"], &[r"https://[a-z]+\.example\.org"]);
        for request in [
            preflight("https://app.example.com.evil.net"),
            preflight("https://a.b.example.org"),
            preflight(""),
            SimpleRequest::get("h", "/").method("OPTIONS"),
        ] {
            assert_eq!(check(&policy, &request), CorsVerdict::None, "{request:?}");
        }
    }

    #[test]
    fn an_httpproxy_origin_matches_a_regex_whole_and_a_star_echoes_the_origin() {
        let policy = envoy(&[], &[r"https://[a-z]+\.example\.org"]);
        let verdict = check(&policy, &preflight("https://shop.example.org"));
        assert!(matches!(verdict, CorsVerdict::Preflight(_)));
        let every = envoy(&["*"], &[]);
        let verdict = check(&every, &SimpleRequest::get("h", "/").header("origin", "https://x.net"));
        assert_eq!(headers(&verdict)[0].1, "https://x.net");
        assert_eq!(check(&every, &SimpleRequest::get("h", "/")), CorsVerdict::None);
        let regex_star = envoy(&[], &[".*"]);
        assert!(matches!(
            check(&regex_star, &preflight("https://any.net")),
            CorsVerdict::Preflight(_)
        ));
    }

    #[test]
    fn an_httpproxy_star_method_or_headers_echo_what_the_preflight_asks() {
        let mut policy = (*envoy(&["*"], &[])).clone();
        policy.allow_methods = "*".to_owned();
        policy.allow_headers = "*".to_owned();
        policy.max_age = None;
        let request = preflight("https://a.net").header("access-control-request-headers", "x-one, x-two");
        let verdict = check(&Arc::new(policy), &request);
        let got = headers(&verdict);
        assert_eq!(got[2], ("access-control-allow-methods".to_owned(), "PUT".to_owned()));
        assert_eq!(
            got[3],
            ("access-control-allow-headers".to_owned(), "x-one, x-two".to_owned())
        );
        assert_eq!(got.len(), 4, "no max age, no private network not asked: {got:?}");
    }

    /// `cors` in a rule's JSON, read back as the table reads it.
    fn read_back(cors: &Cors) -> Result<Option<Arc<Cors>>, crate::TableError> {
        let rule = serde_json::json!({
            "name": "r", "path": {"type": "prefix", "value": "/"},
            "action": {"route": {"backends": [{"cluster": "c"}]}}, "policy": {"cors": cors},
        });
        Ok(crate::RuleSpec::from_value(rule)?.policy.and_then(|p| p.cors.clone()))
    }

    #[test]
    fn an_ingress_nginx_cors_is_written_as_before_and_an_envoy_one_reads_back_its_regexes() {
        let nginx = serde_json::to_value(&*cors(&["*"])).unwrap();
        let keys: Vec<&String> = nginx.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "allow_credentials",
                "allow_headers",
                "allow_methods",
                "allow_origin",
                "max_age"
            ]
        );
        let envoy = envoy(&["*"], &[r"https://.*\.example\.org"]);
        let back = read_back(&envoy).unwrap().unwrap();
        assert_eq!(back, envoy);
        assert!(back.allow_origin_regex[0].is_match("https://a.example.org"));
        let mut bad = (*cors(&["*"])).clone();
        bad.allow_private_network = true;
        assert!(
            read_back(&bad).is_err(),
            "Envoy's fields under ingress-nginx's semantics"
        );
    }

    #[test]
    fn an_ingress_nginx_preflight_is_answered_204_with_its_content_type() {
        let request = SimpleRequest::get("h", "/").method("OPTIONS");
        let CorsVerdict::Preflight(answer) = check(&cors(&["*"]), &request) else {
            panic!("a preflight");
        };
        assert_eq!(
            (answer.status(), answer.content_type()),
            (204, Some("text/plain charset=UTF-8"))
        );
    }

    fn headers(verdict: &CorsVerdict) -> Vec<(String, String)> {
        let (CorsVerdict::Preflight(h) | CorsVerdict::Response(h)) = verdict else {
            return Vec::new();
        };
        let mut out = Vec::new();
        h.each(|n, v| out.push((n.to_owned(), v.to_owned())));
        out
    }

    #[test]
    fn every_origin_allowed_answers_star_even_without_an_origin() {
        let verdict = check(&cors(&["*"]), &SimpleRequest::get("h", "/"));
        assert_eq!(
            headers(&verdict)[..2],
            [
                ("access-control-allow-origin".to_owned(), "*".to_owned()),
                ("access-control-allow-credentials".to_owned(), "true".to_owned())
            ]
        );
        assert!(matches!(verdict, CorsVerdict::Response(_)));
    }

    #[test]
    fn a_preflight_from_an_allowed_origin_is_answered_and_echoes_the_origin() {
        let request = SimpleRequest::get("h", "/")
            .method("OPTIONS")
            .header("origin", "https://App.Example.com");
        let verdict = check(&cors(&["https://app.example.com"]), &request);
        assert!(matches!(verdict, CorsVerdict::Preflight(_)));
        assert_eq!(headers(&verdict)[0].1, "https://App.Example.com");
        assert_eq!(headers(&verdict).last().unwrap().1, "1728000");
    }

    #[test]
    fn an_origin_not_allowed_is_not_a_cors_request() {
        let request = SimpleRequest::get("h", "/")
            .method("OPTIONS")
            .header("origin", "https://evil.com");
        assert_eq!(check(&cors(&["https://app.example.com"]), &request), CorsVerdict::None);
        assert_eq!(
            check(&cors(&["https://app.example.com"]), &SimpleRequest::get("h", "/")),
            CorsVerdict::None
        );
    }

    #[test]
    fn a_wildcard_origin_stands_for_one_label() {
        let pattern = "https://*.example.com";
        assert!(origin_matches(pattern, "https://shop.example.com"));
        assert!(origin_matches(pattern, "https://a-1.EXAMPLE.com"));
        assert!(!origin_matches(pattern, "https://a.b.example.com"));
        assert!(!origin_matches(pattern, "https://.example.com"));
        assert!(!origin_matches(pattern, "http://shop.example.com"));
        assert!(origin_matches("http://*.bar.foo:8080", "http://x.bar.foo:8080"));
    }

    #[test]
    fn an_origin_matches_at_its_end_as_nginxs_unanchored_regex_does() {
        assert!(origin_matches("https://example.com", "https://example.com"));
        assert!(!origin_matches("https://example.com", "https://example.com.evil.net"));
        assert!(!origin_matches("https://example.com", "https://example.co"));
    }
}
