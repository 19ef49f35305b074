//! ROUTING.md §7 through the whole compiler: which Ingresses §7 serves (§7.1), a server as one
//! contender in §2's host contest (§7.2), its aliases, its statuses and the migration report's
//! conditions (§7.9), and requests routed by the matcher the filter runs. The routing sentences
//! of §7.3–7.7 are data cases too (tests/cases), run natively and through the filter.

mod common;

use common::{compile_yaml, load, rule_for, table};
use switchyard_compiler::ingress_nginx::flags::Flags;
use switchyard_compiler::status::{Reason, Status};
use switchyard_compiler::{compile, Compiled, Options};
use switchyard_table::{ActionSpec, SimpleRequest};

fn options() -> Options {
    Options {
        ingress_nginx: Flags {
            class: Some("nginx".into()),
            ..Flags::default()
        },
        ..Options::default()
    }
}

const CLASS: &str = "
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
";

/// An Ingress of ingress-nginx's class: name, namespace, creation second, annotations (YAML
/// flow map), host and paths (`path` or `path Exact`) to service `svc` port 80.
fn ingress(name: &str, namespace: &str, created: u32, annotations: &str, host: &str, paths: &[&str]) -> String {
    let paths: String = paths
        .iter()
        .map(|p| {
            let (path, kind) = p.split_once(' ').unwrap_or((p, "Prefix"));
            format!(
                "      - path: {path:?}\n        pathType: {kind}\n        backend: {{service: {{name: {name}, port: {{number: 80}}}}}}\n"
            )
        })
        .collect();
    format!(
        "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: {name}\n  namespace: {namespace}\n  \
         creationTimestamp: \"2026-01-01T00:00:{created:02}Z\"\n  annotations: {annotations}\nspec:\n  \
         ingressClassName: nginx\n  rules:\n  - host: {host}\n    http:\n      paths:\n{paths}"
    )
}

/// Switchyard's own Ingress `team/mine` (no class: ours by §1 with the default options) on
/// `shared.example`, created at second `created` of the day the others are.
fn switchyards_own(created: u32, path: &str) -> String {
    ingress("mine", "team", created, "{}", "shared.example", &[path]).replace("  ingressClassName: nginx\n", "")
}

fn status_of<'c>(
    compiled: &'c Compiled,
    namespace: &str,
    name: &str,
) -> &'c switchyard_compiler::status::ResourceStatus {
    compiled
        .statuses
        .iter()
        .find(|s| s.kind.as_str() == "Ingress" && s.namespace == namespace && s.name == name)
        .unwrap_or_else(|| panic!("no status for {namespace}/{name}"))
}

fn reasons(compiled: &Compiled, namespace: &str, name: &str) -> Vec<Reason> {
    status_of(compiled, namespace, name)
        .conditions
        .iter()
        .map(|c| c.reason)
        .collect()
}

fn get(url: &str) -> SimpleRequest {
    SimpleRequest::from_url(url)
}

#[test]
fn ingress_of_ingress_nginx_class_is_served_by_section_7_not_ignored_by_section_1() {
    let yaml = format!("{CLASS}{}", ingress("a", "shop", 1, "{}", "a.example", &["/api"]));
    let served = compile_yaml(&yaml, &options());
    assert_eq!(status_of(&served, "shop", "a").status, Status::Accepted);
    assert_eq!(
        rule_for(&served, &get("http://a.example/api/x")).as_deref(),
        Some("Ingress/shop/a#0")
    );
    // Without --ingress-nginx-class it is another controller's, as before.
    let without = compile_yaml(&yaml, &Options::default());
    assert_eq!(status_of(&without, "shop", "a").status, Status::Ignored);
    assert!(without.table.rules.is_empty());
}

#[test]
fn server_of_ingresses_in_any_namespace_contends_alone_as_its_first_ingress() {
    // Switchyard's own Ingress (no class, --ingress-class empty) on the same host, younger than the
    // server's first Ingress: the server wins the whole host, the Ingress is HostTaken; they do
    // not merge, as two of Switchyard's Ingresses would.
    let ours = switchyards_own(30, "/mine");
    let yaml = format!(
        "{CLASS}{}{}{ours}",
        ingress("old", "a", 1, "{}", "shared.example", &["/a"]),
        ingress("young", "b", 40, "{}", "shared.example", &["/b"]),
    );
    let compiled = compile_yaml(&yaml, &options());
    assert!(reasons(&compiled, "team", "mine").contains(&Reason::HostTaken));
    assert_eq!(
        rule_for(&compiled, &get("http://shared.example/mine")).as_deref(),
        Some("Ingress/a/old#root@shared.example"),
        "a request for the server's host is decided inside the server"
    );
    assert_eq!(
        rule_for(&compiled, &get("http://shared.example/b")).as_deref(),
        Some("Ingress/b/young#0")
    );
}

#[test]
fn server_younger_than_another_resource_loses_the_host_on_every_ingress() {
    let ours = switchyards_own(0, "/");
    let yaml = format!(
        "{CLASS}{}{}{ours}",
        ingress("first", "a", 1, "{}", "shared.example", &["/a"]),
        ingress("second", "b", 2, "{}", "shared.example", &["/b"]),
    );
    let compiled = compile_yaml(&yaml, &options());
    for (namespace, name) in [("a", "first"), ("b", "second")] {
        assert!(
            reasons(&compiled, namespace, name).contains(&Reason::HostTaken),
            "{name}"
        );
        assert_eq!(status_of(&compiled, namespace, name).status, Status::Rejected, "{name}");
    }
    assert_eq!(
        rule_for(&compiled, &get("http://shared.example/a")).as_deref(),
        Some("Ingress/team/mine#0")
    );
}

/// An Ingress that is the first of one server (which loses its host) and a later member of another
/// (which wins) keeps its locations in the winner: it is `Accepted` with `HostTaken` for the lost
/// host, not `Rejected` as if it had lost everything.
#[test]
fn ingress_first_in_a_losing_server_keeps_its_locations_in_a_winning_one() {
    let ours = switchyards_own(0, "/");
    let two_hosts = ingress("both", "b", 2, "{}", "shared.example", &["/lost"]).replace(
        "  rules:\n",
        "  rules:\n  - host: kept.example\n    http:\n      paths:\n      - path: /kept\n        pathType: Prefix\n        \
         backend: {service: {name: both, port: {number: 80}}}\n",
    );
    let yaml = format!(
        "{CLASS}{}{two_hosts}{ours}",
        ingress("older", "a", 1, "{}", "kept.example", &["/a"]),
    );
    let compiled = compile_yaml(&yaml, &options());
    let both = status_of(&compiled, "b", "both");
    assert_eq!(both.status, Status::Accepted, "{both:?}");
    assert!(reasons(&compiled, "b", "both").contains(&Reason::HostTaken));
    assert!(!reasons(&compiled, "b", "both").contains(&Reason::Rejected));
    assert_eq!(
        rule_for(&compiled, &get("http://kept.example/kept")).as_deref(),
        Some("Ingress/b/both#0")
    );
    assert_eq!(
        rule_for(&compiled, &get("http://shared.example/lost")).as_deref(),
        Some("Ingress/team/mine#0")
    );
}

#[test]
fn same_path_and_type_on_a_server_is_path_taken_by_the_first_in_ingress_nginx_order() {
    // Equal timestamps: namespace/name descending, so b/x comes before a/x.
    let yaml = format!(
        "{CLASS}{}{}",
        ingress("x", "a", 5, "{}", "h.example", &["/same"]),
        ingress("x", "b", 5, "{}", "h.example", &["/same"]),
    );
    let compiled = compile_yaml(&yaml, &options());
    assert_eq!(
        rule_for(&compiled, &get("http://h.example/same")).as_deref(),
        Some("Ingress/b/x#0")
    );
    assert!(reasons(&compiled, "a", "x").contains(&Reason::PathTaken));
    assert!(!reasons(&compiled, "b", "x").contains(&Reason::PathTaken));
}

#[test]
fn implicit_root_takes_the_first_ingress_annotations_and_default_backend() {
    let first = ingress(
        "first",
        "a",
        1,
        "{nginx.ingress.kubernetes.io/permanent-redirect: 'https://moved.example/'}",
        "h.example",
        &["/x"],
    );
    let second = ingress("second", "b", 2, "{}", "h.example", &["/y"]);
    let compiled = compile_yaml(&format!("{CLASS}{first}{second}"), &options());
    let t = table(&compiled);
    let decision = t.route(&get("http://h.example/unmatched"), 0).unwrap();
    assert_eq!(decision.rule.name(), "Ingress/a/first#root@h.example");
    match decision.rule.action() {
        ActionSpec::Redirect(r) => assert_eq!((r.status, r.url.as_str()), (301, "https://moved.example/")),
        other => panic!("the implicit root should redirect as the first Ingress does: {other:?}"),
    }
    // The second Ingress's own location keeps its own (absent) annotations.
    assert_eq!(
        rule_for(&compiled, &get("http://h.example/y")).as_deref(),
        Some("Ingress/b/second#0")
    );
}

#[test]
fn regex_mode_matches_paths_in_any_case_from_the_start() {
    let yaml = format!(
        "{CLASS}{}",
        ingress(
            "r",
            "a",
            1,
            "{nginx.ingress.kubernetes.io/use-regex: 'true', nginx.ingress.kubernetes.io/ssl-redirect: 'false'}",
            "r.example",
            &["/something(/|$)(.*)", "/a Exact"]
        )
    );
    let compiled = compile_yaml(&yaml, &options());
    for url in [
        "https://r.example/something/new",
        "https://r.example/SOMETHING/new",
        "http://r.example/SomeThing",
    ] {
        assert_eq!(
            rule_for(&compiled, &get(url)).as_deref(),
            Some("Ingress/a/r#0"),
            "{url}"
        );
    }
    assert_eq!(
        rule_for(&compiled, &get("http://r.example/ABC/d")).as_deref(),
        Some("Ingress/a/r#1")
    );
    assert!(reasons(&compiled, "a", "r").contains(&Reason::RegexMode));
}

#[test]
fn server_alias_is_dropped_with_alias_taken_when_another_resource_owns_the_host() {
    let owner = ingress("owner", "z", 9, "{}", "taken.example", &["/"]);
    let aliased = ingress(
        "aliased",
        "a",
        1,
        "{nginx.ingress.kubernetes.io/server-alias: 'free.example, taken.example'}",
        "main.example",
        &["/app"],
    );
    let compiled = compile_yaml(&format!("{CLASS}{owner}{aliased}"), &options());
    assert_eq!(
        rule_for(&compiled, &get("http://free.example/app")).as_deref(),
        Some("Ingress/a/aliased#0@free.example")
    );
    assert_eq!(
        rule_for(&compiled, &get("http://taken.example/app")).as_deref(),
        Some("Ingress/z/owner#0")
    );
    assert!(reasons(&compiled, "a", "aliased").contains(&Reason::AliasTaken));
    assert!(
        !reasons(&compiled, "z", "owner").contains(&Reason::HostTaken),
        "an alias never takes a host"
    );
}

#[test]
fn every_other_annotation_with_the_prefix_is_reported_once_each_and_the_ingress_routes() {
    let yaml = format!(
        "{CLASS}{}",
        ingress(
            "n",
            "a",
            1,
            "{nginx.ingress.kubernetes.io/proxy-read-timeout: '120', nginx.ingress.kubernetes.io/limit-rate: '100', \
             nginx.ingress.kubernetes.io/configuration-snippet: 'more_set_headers x'}",
            "n.example",
            &["/"]
        )
    );
    let compiled = compile_yaml(&yaml, &options());
    let not_honored = reasons(&compiled, "a", "n")
        .into_iter()
        .filter(|r| *r == Reason::AnnotationNotHonored)
        .count();
    assert_eq!(not_honored, 3);
    assert_eq!(
        rule_for(&compiled, &get("http://n.example/x")).as_deref(),
        Some("Ingress/a/n#0")
    );
}

#[test]
fn the_same_manifests_in_any_order_give_a_byte_identical_table() {
    let docs = [
        ingress(
            "a",
            "x",
            1,
            "{nginx.ingress.kubernetes.io/use-regex: 'true'}",
            "h.example",
            &["/a+", "/b"],
        ),
        ingress(
            "b",
            "y",
            1,
            "{nginx.ingress.kubernetes.io/app-root: /app}",
            "h.example",
            &["/c/"],
        ),
        ingress(
            "c",
            "z",
            2,
            "{nginx.ingress.kubernetes.io/server-alias: w.example}",
            "g.example",
            &["/d/"],
        ),
    ];
    let forward = format!("{CLASS}{}{}{}", docs[0], docs[1], docs[2]);
    let backward = format!("{}{}{}{CLASS}", docs[2], docs[1], docs[0]);
    let a = compile(&load(&forward).objects, &options()).unwrap();
    let b = compile(&load(&backward).objects, &options()).unwrap();
    assert_eq!(
        serde_json::to_string(&a.table).unwrap(),
        serde_json::to_string(&b.table).unwrap()
    );
    assert_eq!(a.statuses, b.statuses);
}

#[test]
fn catch_all_server_is_reached_only_by_a_host_nothing_else_owns() {
    let catch_all = "
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: fallback, namespace: a, creationTimestamp: '2026-01-01T00:00:01Z'}
spec:
  ingressClassName: nginx
  defaultBackend: {service: {name: fallback, port: {number: 80}}}
";
    let named = ingress("named", "a", 2, "{}", "named.example", &["/x"]);
    let compiled = compile_yaml(&format!("{CLASS}{catch_all}{named}"), &options());
    assert_eq!(
        rule_for(&compiled, &get("http://unknown.example/anything")).as_deref(),
        Some("Ingress/a/fallback#default")
    );
    assert_eq!(
        rule_for(&compiled, &get("http://named.example/other")).as_deref(),
        Some("Ingress/a/named#root@named.example"),
        "a server's host never falls to the catch-all server"
    );
}

// ---- §7.6 canary -------------------------------------------------------------------------------

/// A canary Ingress of `service` on `host` `paths`, with its annotations (YAML flow map entries).
fn canary(name: &str, created: u32, annotations: &str, host: &str, paths: &[&str]) -> String {
    let all = format!("{{nginx.ingress.kubernetes.io/canary: 'true'{annotations}}}");
    ingress(name, "a", created, &all, host, paths)
}

fn route_canary(compiled: &Compiled, rule: &str) -> Option<switchyard_table::Canary> {
    let rule = compiled.table.rules.iter().find(|r| r.name == rule)?;
    match &rule.action {
        ActionSpec::Route(route) => route.canary.as_deref().cloned(),
        _ => None,
    }
}

#[test]
fn canary_attaches_to_the_location_with_the_same_host_path_and_path_type() {
    let yaml = format!(
        "{CLASS}{}{}",
        ingress("main", "a", 1, "{}", "c.example", &["/app", "/app Exact"]),
        canary(
            "can",
            2,
            ", nginx.ingress.kubernetes.io/canary-weight: '25'",
            "c.example",
            &["/app Exact"]
        ),
    );
    let compiled = compile_yaml(&yaml, &options());
    let attached = route_canary(&compiled, "Ingress/a/main#1").expect("the Exact /app location has the canary");
    assert_eq!((attached.cluster.as_str(), attached.weight), ("a/can:80", 25));
    assert_eq!(
        route_canary(&compiled, "Ingress/a/main#0"),
        None,
        "the Prefix /app location has none"
    );
    assert!(
        compiled
            .table
            .rules
            .iter()
            .all(|r| !r.name.starts_with("Ingress/a/can")),
        "a canary has no locations"
    );
}

#[test]
fn canary_path_without_a_main_location_does_nothing_and_says_so() {
    let yaml = format!(
        "{CLASS}{}{}",
        ingress("main", "a", 1, "{}", "c.example", &["/app"]),
        canary("can", 2, "", "c.example", &["/other"]),
    );
    let compiled = compile_yaml(&yaml, &options());
    assert!(reasons(&compiled, "a", "can").contains(&Reason::CanaryWithoutMain));
}

#[test]
fn second_canary_of_a_location_is_ignored_with_a_warning() {
    let yaml = format!(
        "{CLASS}{}{}{}",
        ingress("main", "a", 1, "{}", "c.example", &["/app"]),
        canary("first", 2, "", "c.example", &["/app"]),
        canary("second", 3, "", "c.example", &["/app"]),
    );
    let compiled = compile_yaml(&yaml, &options());
    assert_eq!(
        route_canary(&compiled, "Ingress/a/main#0").unwrap().cluster,
        "a/first:80"
    );
    assert!(reasons(&compiled, "a", "second").contains(&Reason::CanaryTaken));
}

#[test]
fn canary_to_the_main_backend_does_nothing() {
    let main = ingress("main", "a", 1, "{}", "c.example", &["/app"]);
    // The canary names the main Ingress's own Service and port.
    let same = canary("can", 2, "", "c.example", &["/app"]).replace("name: can, port", "name: main, port");
    let compiled = compile_yaml(&format!("{CLASS}{main}{same}"), &options());
    assert_eq!(route_canary(&compiled, "Ingress/a/main#0"), None);
    assert!(reasons(&compiled, "a", "can").contains(&Reason::CanaryIsMain));
}

#[test]
fn canary_ingress_own_annotations_are_not_applied_and_do_not_turn_regex_mode_on() {
    let yaml = format!(
        "{CLASS}{}{}",
        ingress("main", "a", 1, "{}", "c.example", &["/app"]),
        canary(
            "can",
            2,
            ", nginx.ingress.kubernetes.io/use-regex: 'true'",
            "c.example",
            &["/app"]
        ),
    );
    let compiled = compile_yaml(&yaml, &options());
    assert!(reasons(&compiled, "a", "can").contains(&Reason::AnnotationNotHonored));
    assert!(!reasons(&compiled, "a", "main").contains(&Reason::RegexMode));
    let t = table(&compiled);
    let always = get("http://c.example/app").header("x-canary", "always");
    assert_eq!(
        t.route(&always, 0).unwrap().backend.unwrap().cluster,
        "a/main:80",
        "no header is set up"
    );
}
