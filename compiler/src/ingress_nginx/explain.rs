//! `switchyard explain` in ingress-nginx's terms (ROUTING.md §7), from the table alone: what a
//! winning rule of a server is (a location, the implicit root with whose annotations, a
//! redirect) and which annotations it applies, and why another rule of the same server lost.
//! It reads what [`super::layout`] writes: the rule names and the regex-mode path form.

use switchyard_table::{ActionSpec, PathSpec, RuleSpec};

/// What a rule of a server is, from its name (`Ingress/ns/name#what[.redirect][@host]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A path of its Ingress.
    Location,
    /// The implicit root.
    Root,
    /// The catch-all server's default backend.
    Default,
    /// `app-root`.
    AppRoot,
    /// `from-to-www-redirect`.
    WwwRedirect,
    /// The trailing-slash 301 before a location.
    SlashRedirect,
    /// The HTTPS redirect before a location.
    HttpsRedirect,
}

/// A rule read as [`super::layout`] names it.
struct Read<'r> {
    /// `Ingress/ns/name`.
    ingress: &'r str,
    /// The name without its host part and redirect suffix: one location's rules share it.
    stem: &'r str,
    role: Role,
    /// `P` of a regex-mode path `(?i)(?:P).*`.
    regex_mode_path: Option<&'r str>,
}

fn read(rule: &RuleSpec) -> Option<Read<'_>> {
    let name = rule.name.as_str();
    let ingress_name = name.strip_prefix("Ingress/")?;
    let (_, what) = ingress_name.split_once('#')?;
    let ingress = &name[..name.len() - what.len() - 1];
    let what = what.split('@').next().unwrap_or_default();
    let (what, redirect) = match what.split_once('.') {
        Some((what, redirect)) => (what, Some(redirect)),
        None => (what, None),
    };
    let stem = &name[..ingress.len() + 1 + what.len()];
    let role = match (what, redirect) {
        (_, Some("slash-redirect")) => Role::SlashRedirect,
        (_, Some("https-redirect")) => Role::HttpsRedirect,
        (_, Some(_)) => return None,
        ("root", None) => Role::Root,
        ("default", None) => Role::Default,
        ("app-root", None) => Role::AppRoot,
        ("www-redirect", None) => Role::WwwRedirect,
        (n, None) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => Role::Location,
        _ => return None,
    };
    let regex_mode_path = match &rule.path {
        PathSpec::Regex(p) => p.strip_prefix("(?i)(?:").and_then(|p| p.strip_suffix(").*")),
        _ => None,
    };
    Some(Read {
        ingress,
        stem,
        role,
        regex_mode_path,
    })
}

/// Whether a read rule is surely ingress-nginx's: a Switchyard Ingress's rules are named
/// `Ingress/ns/name#n` too, but never have these roles or a regex path.
fn surely_ingress_nginx(read: &Read<'_>) -> bool {
    read.role != Role::Location || read.regex_mode_path.is_some()
}

/// The winner in ingress-nginx's terms, with the annotations it applies; `None` for a rule that is
/// not surely ingress-nginx's.
pub fn describe_winner(rule: &RuleSpec) -> Option<String> {
    let read = read(rule)?;
    if !surely_ingress_nginx(&read) {
        return None;
    }
    let ingress = read.ingress;
    let what = match read.role {
        Role::Location => format!("a location of {ingress}"),
        Role::Root => format!(
            "answered by the implicit root with the annotations of {ingress}, the server's first Ingress (ROUTING.md §7.2)"
        ),
        Role::Default => format!("the catch-all server's default backend, of {ingress} (ROUTING.md §7.2)"),
        Role::AppRoot => format!("app-root redirect of {ingress} (ROUTING.md §7.7.2)"),
        Role::WwwRedirect => format!("from-to-www redirect of {ingress} (ROUTING.md §7.7.1)"),
        Role::SlashRedirect => format!("trailing-slash redirect of a location of {ingress} (ROUTING.md §7.3)"),
        Role::HttpsRedirect => format!("HTTPS redirect before a location of {ingress} (ROUTING.md §7.7.6)"),
    };
    let mut applied = Vec::new();
    if let ActionSpec::Route(route) = &rule.action {
        if let Some(rewrite) = &route.rewrite_regex {
            applied.push(format!("rewrite-target {}", rewrite.path));
            applied.extend(rewrite.headers.iter().map(|h| format!("{} {}", h.name, h.value)));
        }
        applied.extend(
            (route.set_headers.iter())
                .filter(|h| h.name == ":authority")
                .map(|h| format!("upstream-vhost {}", h.value)),
        );
    }
    let mode = match read.regex_mode_path {
        Some(_) => "; regex mode on this host (ROUTING.md §7.4)",
        None => "",
    };
    let applied = match applied.is_empty() {
        true => String::new(),
        false => format!("; applied: {}", applied.join(", ")),
    };
    Some(format!("{what}{mode}{applied}"))
}

/// Why `loser` was tried after `winner` on one ingress-nginx server; `None` when either is not
/// surely ingress-nginx's, or they answer different hosts.
pub fn why_ranked_lower(winner: &RuleSpec, loser: &RuleSpec) -> Option<String> {
    let (w, l) = (read(winner)?, read(loser)?);
    if winner.host != loser.host || !(surely_ingress_nginx(&w) || surely_ingress_nginx(&l)) {
        return None;
    }
    let why = match (w.role, l.role) {
        (Role::AppRoot, _) => "app-root answers a request for exactly / first (ROUTING.md §7.7.2)".to_owned(),
        (Role::SlashRedirect, _) => {
            "trailing-slash redirect: the bare path of a location ending in / answers 301 before any location (ROUTING.md §7.3)"
                .to_owned()
        }
        (Role::HttpsRedirect, _) if w.stem == l.stem => {
            "the HTTPS redirect comes before its location for a plain-http request (ROUTING.md §7.7.6)".to_owned()
        }
        (_, Role::Root | Role::Default) => "the server's root location / is tried last (ROUTING.md §7.2)".to_owned(),
        _ => match (w.regex_mode_path, l.regex_mode_path) {
            (Some(wp), Some(lp)) if lp.len() < wp.len() => {
                "tried later: shorter path string (regex mode on this host, ROUTING.md §7.4)".to_owned()
            }
            (Some(_), Some(_)) => {
                "tried later: a path string of the same length, lower in byte order (regex mode on this host, ROUTING.md §7.4)"
                    .to_owned()
            }
            _ => match (&winner.path, &loser.path) {
                (PathSpec::Exact(_), PathSpec::Exact(_)) => "the first location with this exact path".to_owned(),
                (PathSpec::Exact(_), _) => "an exact path beats a prefix (ROUTING.md §7.3)".to_owned(),
                _ => "tried later: shorter prefix (ROUTING.md §7.3)".to_owned(),
            },
        },
    };
    Some(why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_table::{DirectResponse, Redirect};

    fn rule(name: &str, path: PathSpec) -> RuleSpec {
        RuleSpec {
            name: name.into(),
            host: Some("h.example".into()),
            path,
            conditions: Vec::new(),
            action: ActionSpec::DirectResponse(DirectResponse {
                status: 404,
                ..DirectResponse::default()
            }),
            hsts: None,
            policy: None,
        }
    }

    fn regex(p: &str) -> PathSpec {
        PathSpec::Regex(format!("(?i)(?:{p}).*"))
    }

    #[test]
    fn explain_says_a_regex_mode_loser_was_tried_later_for_a_shorter_path_string() {
        let w = rule("Ingress/a/x#0", regex("/api/v1"));
        let l = rule("Ingress/b/y#3", regex("/api"));
        assert_eq!(
            why_ranked_lower(&w, &l).as_deref(),
            Some("tried later: shorter path string (regex mode on this host, ROUTING.md §7.4)")
        );
    }

    #[test]
    fn explain_names_the_ingress_whose_annotations_the_implicit_root_took() {
        let root = rule("Ingress/shop/first#root@h.example", regex("/"));
        let about = describe_winner(&root).unwrap();
        assert!(
            about.starts_with("answered by the implicit root with the annotations of Ingress/shop/first"),
            "{about}"
        );
        assert!(about.contains("regex mode on this host"), "{about}");
    }

    #[test]
    fn explain_says_the_trailing_slash_redirect_answers_first() {
        let mut w = rule("Ingress/a/x#1.slash-redirect", PathSpec::Exact("/p".into()));
        w.action = ActionSpec::Redirect(Redirect {
            url: "${scheme}://${host}/p/".into(),
            status: 301,
        });
        let l = rule("Ingress/a/x#root@h.example", PathSpec::SegmentPrefix("/".into()));
        assert!(why_ranked_lower(&w, &l).unwrap().starts_with("trailing-slash redirect"));
    }

    #[test]
    fn switchyards_own_ingress_rules_are_not_explained_in_ingress_nginx_terms() {
        let w = rule("Ingress/a/x#0", PathSpec::Exact("/a".into()));
        let l = rule("Ingress/a/x#1", PathSpec::SegmentPrefix("/".into()));
        assert_eq!(why_ranked_lower(&w, &l), None);
        assert_eq!(describe_winner(&w), None);
    }
}
