//! ROUTING.md §7.2–7.4: ingress-nginx's Ingress order, path normalisation, the order locations are
//! tried in, the trailing-slash redirect, and each location's table path. (`PathTaken` and the
//! regex-mode decision are [`super::server`]'s, over a server's locations.)

use std::cmp::Ordering;

use switchyard_table::PathSpec;

use crate::status::Reason;

/// A location's pathType after normalisation (§7.2: `ImplementationSpecific` or none is `Prefix`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PathType {
    /// `Exact`.
    Exact,
    /// `Prefix` (and `ImplementationSpecific`, and none).
    Prefix,
}

/// §7.2: an empty path is `/`; `ImplementationSpecific` or no `pathType` is `Prefix`.
pub fn normalize(path: Option<&str>, path_type: Option<&str>) -> (String, PathType) {
    let path = match path {
        None | Some("") => "/".to_owned(),
        Some(p) => p.to_owned(),
    };
    let kind = match path_type {
        Some("Exact") => PathType::Exact,
        _ => PathType::Prefix,
    };
    (path, kind)
}

/// An Ingress's place in ingress-nginx's order: `creationTimestamp` (seconds, nanoseconds; `None`
/// when absent), namespace and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngressAge<'a> {
    /// `creationTimestamp`.
    pub created: Option<(i64, i32)>,
    /// `metadata.namespace`.
    pub namespace: &'a str,
    /// `metadata.name`.
    pub name: &'a str,
}

/// §7.2: oldest first; on equal timestamps the one string `namespace/name` **descending**
/// (ingress-nginx's `sortIngressSlice` compares `fmt.Sprintf("%v/%v", Namespace, Name)`, so `team/api`
/// sorts above `team-b/api`: `/` is 0x2f, `-` 0x2d). An Ingress without a timestamp counts as the
/// oldest (as Go's zero time).
pub fn ingress_order(a: &IngressAge<'_>, b: &IngressAge<'_>) -> Ordering {
    let stamp = |x: &IngressAge<'_>| x.created.unwrap_or((i64::MIN, 0));
    stamp(a).cmp(&stamp(b)).then_with(|| joined(b).cmp(joined(a)))
}

/// The bytes of `namespace/name`, without building the string.
fn joined<'a>(age: &IngressAge<'a>) -> impl Iterator<Item = u8> + 'a {
    let (namespace, name) = (age.namespace.bytes(), age.name.bytes());
    namespace.chain(std::iter::once(b'/')).chain(name)
}

/// §7.4: the order locations are tried in regex mode: longest path string first, equal lengths in
/// descending byte order; the first that matches wins.
pub fn regex_location_order(a: &str, b: &str) -> Ordering {
    b.len().cmp(&a.len()).then_with(|| b.as_bytes().cmp(a.as_bytes()))
}

/// §7.3: outside regex mode, an exact path beats a prefix and a longer prefix a shorter one (the
/// matcher's order for `Exact` and segment prefixes: the table index finds both, in table order).
pub fn plain_location_order(a: (&str, PathType), b: (&str, PathType)) -> Ordering {
    (a.1 != PathType::Exact)
        .cmp(&(b.1 != PathType::Exact))
        .then_with(|| b.0.len().cmp(&a.0.len()))
        .then_with(|| a.0.cmp(b.0))
}

/// The table path of a location: in regex mode `(?i)(?:P).*` (ingress-nginx's `~* "^P"`, see
/// table/README.md), else `Exact` or a segment prefix. `Err(PathRegexUnsupported)` when regex-lite
/// cannot compile `P` (look-around, back-references): that path alone is refused.
pub fn table_path(path: &str, kind: PathType, regex_mode: bool) -> Result<PathSpec, (Reason, String)> {
    let spec = location_path(path, kind, regex_mode);
    if let PathSpec::Regex(pattern) = &spec {
        if let Err(error) = regex_lite::Regex::new(&format!("^(?:{pattern})$")) {
            return Err((
                Reason::PathRegexUnsupported,
                format!("path {path:?} is not a regex regex-lite compiles: {error}"),
            ));
        }
    }
    Ok(spec)
}

/// [`table_path`] of a location already checked by it (the server was gathered): no regex compiled
/// again.
pub fn location_path(path: &str, kind: PathType, regex_mode: bool) -> PathSpec {
    match (regex_mode, kind) {
        (true, _) => PathSpec::Regex(format!("(?i)(?:{path}).*")),
        (false, PathType::Exact) => PathSpec::Exact(path.to_owned()),
        (false, PathType::Prefix) => PathSpec::SegmentPrefix(path.to_owned()),
    }
}

/// §7.3: the bare path a location ending in `/` answers a 301 for (`/p/` → `/p`), outside regex
/// mode; `None` for `/` and for paths without the trailing `/`.
pub fn trailing_slash_redirect(path: &str, regex_mode: bool) -> Option<&str> {
    if regex_mode || path == "/" {
        return None;
    }
    path.strip_suffix('/').filter(|bare| !bare.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_path_is_root_and_implementation_specific_is_prefix() {
        assert_eq!(
            normalize(Some(""), Some("ImplementationSpecific")),
            ("/".into(), PathType::Prefix)
        );
        assert_eq!(normalize(None, None), ("/".into(), PathType::Prefix));
        assert_eq!(normalize(Some("/a"), Some("Exact")), ("/a".into(), PathType::Exact));
    }

    #[test]
    fn ingresses_are_ordered_oldest_first_then_namespace_name_descending() {
        let age = |t: i64, ns: &'static str, n: &'static str| IngressAge {
            created: Some((t, 0)),
            namespace: ns,
            name: n,
        };
        let mut list = [age(2, "a", "x"), age(1, "a", "a"), age(1, "b", "a"), age(1, "a", "b")];
        list.sort_by(ingress_order);
        let names: Vec<_> = list.iter().map(|a| format!("{}/{}", a.namespace, a.name)).collect();
        assert_eq!(names, ["b/a", "a/b", "a/a", "a/x"]);
    }

    #[test]
    fn equal_timestamps_compare_namespace_slash_name_as_one_string() {
        let age = |ns: &'static str| IngressAge {
            created: Some((1, 0)),
            namespace: ns,
            name: "api",
        };
        // As a pair, `team` < `team-b`; as strings, `team/api` > `team-b/api` (`/` 0x2f, `-` 0x2d).
        let mut list = [age("team-b"), age("team")];
        list.sort_by(ingress_order);
        assert_eq!(list.map(|a| a.namespace), ["team", "team-b"]);
    }

    #[test]
    fn regex_locations_are_tried_longest_path_string_first_then_descending_bytes() {
        let mut paths = ["/", "/api", "/a/b/c", "/b/a/c", "/api/v1"];
        paths.sort_by(|a, b| regex_location_order(a, b));
        assert_eq!(paths, ["/api/v1", "/b/a/c", "/a/b/c", "/api", "/"]);
    }

    #[test]
    fn exact_beats_prefix_and_longer_prefix_beats_shorter() {
        let mut locations = [
            ("/", PathType::Prefix),
            ("/a/b", PathType::Prefix),
            ("/a", PathType::Exact),
            ("/a", PathType::Prefix),
        ];
        locations.sort_by(|a, b| plain_location_order(*a, *b));
        assert_eq!(
            locations,
            [
                ("/a", PathType::Exact),
                ("/a/b", PathType::Prefix),
                ("/a", PathType::Prefix),
                ("/", PathType::Prefix)
            ]
        );
    }

    #[test]
    fn regex_mode_path_is_a_case_insensitive_start_anchored_regex() {
        assert_eq!(
            table_path("/api", PathType::Exact, true),
            Ok(PathSpec::Regex("(?i)(?:/api).*".into()))
        );
        assert_eq!(
            table_path("/api", PathType::Prefix, false),
            Ok(PathSpec::SegmentPrefix("/api".into()))
        );
        assert_eq!(
            table_path("/api", PathType::Exact, false),
            Ok(PathSpec::Exact("/api".into()))
        );
    }

    #[test]
    fn path_regex_lite_cannot_compile_is_path_regex_unsupported() {
        for path in ["/(?=a)", "/(a)\\1", "/("] {
            assert_eq!(
                table_path(path, PathType::Prefix, true).unwrap_err().0,
                Reason::PathRegexUnsupported,
                "{path}"
            );
        }
    }

    #[test]
    fn path_ending_in_slash_redirects_the_bare_path_outside_regex_mode_only() {
        assert_eq!(trailing_slash_redirect("/p/", false), Some("/p"));
        assert_eq!(trailing_slash_redirect("/p/", true), None);
        assert_eq!(trailing_slash_redirect("/p", false), None);
        assert_eq!(trailing_slash_redirect("/", false), None);
    }
}
