//! ingress-nginx's buffering annotations (issue "Policies beyond the route"), each decided: Envoy
//! streams request and response bodies with flow control instead of nginx's memory buffers and
//! temporary files, so what a user asks of nginx's buffers is what Envoy's streaming already
//! gives. Each is reported `AnnotationEquivalent` (a note saying why), not as not honoured: the
//! migration report lists only what changes. The one that can change an answer is
//! `proxy-buffer-size`: nginx answers 502 for a response whose headers do not fit it, and Envoy
//! for headers over its own limit, 60 KiB; a value over that is reported `AnnotationNotHonored`.

use std::collections::BTreeMap;

use super::annotations::Problem;
use crate::nginx::size_bytes;
use crate::status::Reason;

/// Envoy's default limit of a response's headers (`max_response_headers_kb`), in bytes.
pub const ENVOY_RESPONSE_HEADERS_LIMIT: u64 = 60 << 10;

/// The annotations this module reads, and why Envoy's streaming is equivalent.
pub const READ: &[(&str, &str)] = &[
    (
        "proxy-buffering",
        "Envoy streams the response to the client as the backend sends it, holding what the client \
         has not taken yet under flow control: what nginx's buffering or not buffering gives the client",
    ),
    (
        "proxy-buffers-number",
        "Envoy streams the response body under flow control; it has no fixed count of buffers",
    ),
    (
        "proxy-busy-buffers-size",
        "Envoy streams the response body under flow control; it has no busy buffers to size",
    ),
    (
        "proxy-max-temp-file-size",
        "Envoy never writes a body to a temporary file: it streams it under flow control",
    ),
    (
        "client-body-buffer-size",
        "Envoy streams the request body to the backend under flow control, in memory, never to a file",
    ),
    (
        "proxy-request-buffering",
        "Envoy streams the request body to the backend as it comes (nginx's \"off\"); a backend gets the \
         same body either way, only sooner",
    ),
    (
        "proxy-buffer-size",
        "Envoy accepts response headers up to 60 KiB (nginx answers 502 for headers over this size)",
    ),
];

/// Whether `name` is one of [`READ`].
pub fn reads(name: &str) -> bool {
    READ.iter().any(|(read, _)| *read == name)
}

/// A note on each buffering annotation of `mine` (names without the prefix): equivalent, or for a
/// `proxy-buffer-size` over Envoy's limit, not honoured.
pub fn report(mine: &BTreeMap<&str, &str>, prefix: &str, problems: &mut Vec<Problem>) {
    for (name, why) in READ {
        let Some(value) = mine.get(name) else { continue };
        let over_envoys = *name == "proxy-buffer-size"
            && size_bytes(value)
                .flatten()
                .is_some_and(|bytes| bytes > ENVOY_RESPONSE_HEADERS_LIMIT);
        problems.push(match over_envoys {
            false => Problem {
                name: (*name).to_owned(),
                reason: Reason::AnnotationEquivalent,
                message: format!("{prefix}/{name}: {value:?}: equivalent: {why}"),
            },
            true => Problem {
                name: (*name).to_owned(),
                reason: Reason::AnnotationNotHonored,
                message: format!(
                    "{prefix}/{name}: {value:?} allows response headers larger than Envoy's limit (60 KiB): a \
                     response with more is answered 502"
                ),
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reported(pairs: &[(&str, &str)]) -> Vec<(String, Reason)> {
        let mine: BTreeMap<&str, &str> = pairs.iter().copied().collect();
        let mut problems = Vec::new();
        report(&mine, "nginx.ingress.kubernetes.io", &mut problems);
        problems.into_iter().map(|p| (p.name, p.reason)).collect()
    }

    #[test]
    fn buffering_annotations_are_equivalent_to_envoys_streaming() {
        let reported = reported(&[
            ("proxy-buffering", "on"),
            ("proxy-buffer-size", "16k"),
            ("proxy-request-buffering", "off"),
            ("client-body-buffer-size", "1m"),
        ]);
        assert_eq!(reported.len(), 4);
        assert!(
            reported
                .iter()
                .all(|(_, reason)| *reason == Reason::AnnotationEquivalent),
            "{reported:?}"
        );
    }

    #[test]
    fn a_proxy_buffer_size_over_envoys_header_limit_is_not_honoured() {
        assert_eq!(
            reported(&[("proxy-buffer-size", "128k")]),
            [("proxy-buffer-size".to_owned(), Reason::AnnotationNotHonored)]
        );
    }
}
