//! A rule's CORS ([`Cors`], issue "Policies beyond the route"), answered as ingress-nginx's
//! template answers it (its `CORS` block and `buildCorsOriginRegex`):
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

use std::sync::Arc;

use crate::format::Cors;
use crate::request::RequestView;

/// The status a preflight is answered with.
pub const PREFLIGHT: u16 = 204;
/// The content type of a preflight's answer, as ingress-nginx writes it.
pub const PREFLIGHT_CONTENT_TYPE: &str = "text/plain charset=UTF-8";

/// What a rule's CORS does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorsVerdict {
    /// Not a CORS request: nothing.
    None,
    /// A preflight: answered at once with [`CorsHeaders`].
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
}

impl CorsHeaders {
    /// Calls `set` with each header's name and value, in the template's order.
    pub fn each(&self, mut set: impl FnMut(&'static str, &str)) {
        let cors = &self.cors;
        set("access-control-allow-origin", &self.origin);
        if cors.allow_credentials {
            set("access-control-allow-credentials", "true");
        }
        set("access-control-allow-methods", &cors.allow_methods);
        set("access-control-allow-headers", &cors.allow_headers);
        if !cors.expose_headers.is_empty() {
            set("access-control-expose-headers", &cors.expose_headers);
        }
        set("access-control-max-age", &cors.max_age.to_string());
    }
}

/// What `cors` does with `request`.
pub fn check(cors: &Arc<Cors>, request: &impl RequestView) -> CorsVerdict {
    let origin = match cors.allow_origin.iter().any(|o| o == "*") {
        true => Some("*".to_owned()),
        false => {
            let mut matched = None;
            request.any_header_value("origin", &mut |origin| {
                let allowed = cors.allow_origin.iter().any(|pattern| origin_matches(pattern, origin));
                if allowed {
                    matched = Some(origin.to_owned());
                }
                allowed
            });
            matched
        }
    };
    let Some(origin) = origin else {
        return CorsVerdict::None;
    };
    let headers = CorsHeaders {
        cors: cors.clone(),
        origin,
    };
    match request.method() == "OPTIONS" {
        true => CorsVerdict::Preflight(headers),
        false => CorsVerdict::Response(headers),
    }
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
            max_age: 1_728_000,
        })
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
