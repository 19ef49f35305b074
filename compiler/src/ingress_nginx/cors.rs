//! An Ingress's CORS (issue "Policies beyond the route"): `enable-cors` with `cors-allow-origin`,
//! `-allow-methods`, `-allow-headers`, `-allow-credentials`, `-expose-headers` and `-max-age`,
//! read as ingress-nginx v1.15's `cors` parser reads them (its validators and defaults), into the
//! table's [`Cors`], which the filter answers as its template does ([`switchyard_table::cors`]).
//!
//! A value the parser refuses is `AnnotationInvalid` and its default stands, as there; an origin
//! of a list that is no origin is dropped from the list, as there. *Decision:* an empty entry of the
//! list (`a,,b`) is dropped too, where the template would write an empty alternative that matches
//! every origin.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex_lite::Regex;
use switchyard_table::Cors;

use super::annotations::{parse_bool, Problem};
use crate::status::Reason;

/// The annotations this module reads.
pub const READ: &[&str] = &[
    "enable-cors",
    "cors-allow-origin",
    "cors-allow-methods",
    "cors-allow-headers",
    "cors-allow-credentials",
    "cors-expose-headers",
    "cors-max-age",
];

/// ingress-nginx's defaults.
const DEFAULT_METHODS: &str = "GET, PUT, POST, DELETE, PATCH, OPTIONS";
const DEFAULT_HEADERS: &str =
    "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization";
const DEFAULT_MAX_AGE: u64 = 1_728_000;

/// A validator of ingress-nginx's, compiled once.
fn validator(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

/// Whether `value`, its spaces removed, matches ingress-nginx's validator `pattern` (kept in
/// `cell`), as its `parser.ValidateRegex(…, true)` checks it.
fn valid(cell: &'static OnceLock<Option<Regex>>, pattern: &str, value: &str) -> bool {
    validator(cell, pattern).is_some_and(|regex| regex.is_match(&value.replace(' ', "")))
}

static ORIGINS: OnceLock<Option<Regex>> = OnceLock::new();
static ORIGIN: OnceLock<Option<Regex>> = OnceLock::new();
static METHODS: OnceLock<Option<Regex>> = OnceLock::new();
static HEADERS: OnceLock<Option<Regex>> = OnceLock::new();
static EXPOSE: OnceLock<Option<Regex>> = OnceLock::new();

/// The CORS `mine` (annotation names without the prefix) asks for; `None` without
/// `enable-cors: "true"`. Each refused value is reported in `problems`.
pub fn read(mine: &BTreeMap<&str, &str>, prefix: &str, problems: &mut Vec<Problem>) -> Option<Cors> {
    let mut invalid = |name: &str, value: &str, default: &str| {
        problems.push(Problem {
            name: name.to_owned(),
            reason: Reason::AnnotationInvalid,
            message: format!("{prefix}/{name}: {value:?} is not a value ingress-nginx takes; {default} stands"),
        });
    };
    let enabled = match mine.get("enable-cors") {
        None => false,
        Some(value) => parse_bool(value).unwrap_or_else(|| {
            invalid("enable-cors", value, "false");
            false
        }),
    };
    let allow_origin = match mine.get("cors-allow-origin") {
        None => vec!["*".to_owned()],
        Some(value)
            if !valid(
                &ORIGINS,
                r"^((((([a-z]+://)?(\*\.)?[A-Za-z0-9.-]*(:\d+)?,?)|null)+)|\*)?$",
                value,
            ) =>
        {
            invalid("cors-allow-origin", value, "*");
            vec!["*".to_owned()]
        }
        Some(value) => origins(value),
    };
    let mut text =
        |name: &str, cell: &'static OnceLock<Option<Regex>>, pattern: &str, default: &str| match mine.get(name) {
            Some(value) if valid(cell, pattern, value) => (*value).to_owned(),
            Some(value) => {
                invalid(name, value, &format!("{default:?}"));
                default.to_owned()
            }
            None => default.to_owned(),
        };
    let allow_methods = text("cors-allow-methods", &METHODS, r"^([A-Za-z]+,?\s?)+$", DEFAULT_METHODS);
    let allow_headers = text(
        "cors-allow-headers",
        &HEADERS,
        r"^([A-Za-z0-9_-]+,?\s?)+$",
        DEFAULT_HEADERS,
    );
    let expose_headers = text("cors-expose-headers", &EXPOSE, r"^(([A-Za-z0-9_-]+|\*),?\s?)+$", "");
    let allow_credentials = match mine.get("cors-allow-credentials") {
        None => true,
        Some(value) => parse_bool(value).unwrap_or_else(|| {
            invalid("cors-allow-credentials", value, "true");
            true
        }),
    };
    let max_age = match mine.get("cors-max-age") {
        None => DEFAULT_MAX_AGE,
        Some(value) => value.trim().parse().unwrap_or_else(|_| {
            invalid("cors-max-age", value, "1728000");
            DEFAULT_MAX_AGE
        }),
    };
    enabled.then_some(Cors {
        allow_origin,
        allow_methods,
        allow_headers,
        expose_headers,
        allow_credentials,
        max_age: Some(max_age),
        ..Cors::default()
    })
}

/// The origins of a valid `cors-allow-origin`: `*` alone once any entry is `*`; the others that
/// are origins, in order.
fn origins(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    for origin in value.split(',').map(str::trim) {
        if origin == "*" {
            return vec!["*".to_owned()];
        }
        if !origin.is_empty() && valid(&ORIGIN, r"^([a-z]+://(\*\.)?[A-Za-z0-9.-]*(:\d+)?|\*|null)?$", origin) {
            out.push(origin.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cors(pairs: &[(&str, &str)]) -> (Option<Cors>, Vec<Problem>) {
        let mine: BTreeMap<&str, &str> = pairs.iter().copied().collect();
        let mut problems = Vec::new();
        (read(&mine, "nginx.ingress.kubernetes.io", &mut problems), problems)
    }

    #[test]
    fn enable_cors_alone_allows_every_origin_with_ingress_nginxs_defaults() {
        let (cors, problems) = cors(&[("enable-cors", "true")]);
        let cors = cors.unwrap();
        assert!(problems.is_empty());
        assert_eq!(cors.allow_origin, ["*"]);
        assert_eq!(cors.allow_methods, DEFAULT_METHODS);
        assert_eq!(cors.allow_headers, DEFAULT_HEADERS);
        assert!(cors.allow_credentials);
        assert_eq!(cors.max_age, Some(1_728_000));
        assert_eq!(self::cors(&[("cors-allow-origin", "*")]).0, None, "not enabled");
    }

    #[test]
    fn an_origin_list_keeps_its_origins_and_drops_what_is_no_origin() {
        let (cors, _) = cors(&[
            ("enable-cors", "true"),
            (
                "cors-allow-origin",
                "https://app.example.com, https://*.example.org:8443,null",
            ),
        ]);
        assert_eq!(
            cors.unwrap().allow_origin,
            ["https://app.example.com", "https://*.example.org:8443", "null"]
        );
        let (cors, _) = self::cors(&[("enable-cors", "true"), ("cors-allow-origin", "https://a.com, *")]);
        assert_eq!(cors.unwrap().allow_origin, ["*"]);
    }

    #[test]
    fn a_refused_value_is_invalid_and_its_default_stands() {
        let (cors, problems) = cors(&[
            ("enable-cors", "true"),
            ("cors-allow-origin", "https://a.com/path"),
            ("cors-allow-methods", "GET;DROP"),
            ("cors-max-age", "a day"),
        ]);
        let cors = cors.unwrap();
        assert_eq!(cors.allow_origin, ["*"]);
        assert_eq!(cors.allow_methods, DEFAULT_METHODS);
        assert_eq!(cors.max_age, Some(DEFAULT_MAX_AGE));
        let names: Vec<&str> = problems.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["cors-allow-origin", "cors-allow-methods", "cors-max-age"]);
    }
}
