//! ROUTING.md §2, who owns a host (seed 003): merging, per-host winners by age then uid, HTTPProxy
//! roots owning their host alone, `PathTaken`, host normalisation.

mod common;

use common::*;
use switchyard_compiler::status::{Reason, Status};
use switchyard_compiler::{HostCollision, Options};

fn meta(created: &str, uid: &str) -> String {
    format!("  creationTimestamp: \"{created}\"\n  uid: \"{uid}\"\n")
}

fn root(name: &str, fqdn: &str, service: &str, created: &str, uid: &str) -> String {
    format!(
        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata:\n  name: {name}\n  namespace: default\n{}spec:\n  virtualhost:\n    fqdn: \"{fqdn}\"\n  routes:\n    - services:\n        - name: {service}\n          port: 80\n---\n",
        meta(created, uid)
    )
}

const T1: &str = "2024-01-01T00:00:00Z";
const T2: &str = "2024-02-01T00:00:00Z";
const T3: &str = "2024-03-01T00:00:00Z";

#[test]
fn ingresses_naming_the_same_host_merge() {
    let yaml = format!(
        "{}{}",
        simple_ingress("a", "shop.example.com", "/a", "sa", &meta(T1, "1"), None),
        simple_ingress("b", "shop.example.com", "/b", "sb", &meta(T2, "2"), None)
    );
    let c = compile_default(&yaml);
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/a")).as_deref(),
        Some("default/sa:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/b")).as_deref(),
        Some("default/sb:80")
    );
    assert_eq!(status(&c, "Ingress", "default", "a"), Status::Accepted);
    assert_eq!(status(&c, "Ingress", "default", "b"), Status::Accepted);
}

#[test]
fn merged_ingresses_with_an_identical_path_keep_the_older_rule() {
    let yaml = format!(
        "{}{}",
        simple_ingress("newer", "shop.example.com", "/", "new", &meta(T2, "1"), None),
        simple_ingress("older", "shop.example.com", "/", "old", &meta(T1, "2"), None)
    );
    let c = compile_default(&yaml);
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/")).as_deref(),
        Some("default/old:80")
    );
    assert_eq!(c.table.rules.len(), 1);
    let newer = status_of(&c, "Ingress", "default", "newer");
    // Only the rule is dropped, never the whole resource.
    assert_eq!(newer.status, Status::Accepted);
    let why = message(newer, Reason::PathTaken);
    assert!(why.contains("Ingress/default/older#0"), "{why}");
}

#[test]
fn identical_path_with_equal_timestamps_keeps_the_smallest_uid() {
    let yaml = format!(
        "{}{}",
        simple_ingress("a", "shop.example.com", "/", "sa", &meta(T1, "bbbb"), None),
        simple_ingress("b", "shop.example.com", "/", "sb", &meta(T1, "aaaa"), None)
    );
    let c = compile_default(&yaml);
    // NGINX's code picks the larger uid; the document (and we) pick the smaller.
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/")).as_deref(),
        Some("default/sb:80")
    );
    assert!(has_reason(status_of(&c, "Ingress", "default", "a"), Reason::PathTaken));
}

#[test]
fn path_taken_drops_only_the_identical_rule() {
    let newer = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: newer\n  creationTimestamp: \"2024-02-01T00:00:00Z\"\nspec:\n  rules:\n    - host: shop.example.com\n      http:\n        paths:\n          - path: /\n            pathType: Prefix\n            backend: {service: {name: new, port: {number: 80}}}\n          - path: /new\n            pathType: Prefix\n            backend: {service: {name: new, port: {number: 80}}}\n---\n";
    let yaml = format!(
        "{}{newer}",
        simple_ingress("older", "shop.example.com", "/", "old", &meta(T1, "1"), None)
    );
    let c = compile_default(&yaml);
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/new/x")).as_deref(),
        Some("default/new:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/x")).as_deref(),
        Some("default/old:80")
    );
}

#[test]
fn same_path_with_different_conditions_is_not_a_collision() {
    let header = "  annotations:\n    switchyard.io/router.header: \"x-canary: 1\"\n";
    let yaml = format!(
        "{}{}",
        simple_ingress("plain", "shop.example.com", "/", "plain", &meta(T1, "1"), None),
        simple_ingress(
            "canary",
            "shop.example.com",
            "/",
            "canary",
            &format!("{}{header}", meta(T2, "2")),
            None
        )
    );
    let c = compile_default(&yaml);
    assert_eq!(c.table.rules.len(), 2);
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/").header("X-Canary", "1")).as_deref(),
        Some("default/canary:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/")).as_deref(),
        Some("default/plain:80")
    );
}

#[test]
fn host_collision_winner_turns_merging_off() {
    let yaml = format!(
        "{}{}",
        simple_ingress("a", "shop.example.com", "/a", "sa", &meta(T1, "1"), None),
        simple_ingress("b", "shop.example.com", "/b", "sb", &meta(T2, "2"), None)
    );
    let options = Options {
        host_collision: HostCollision::Winner,
        ..Options::default()
    };
    let c = compile_yaml(&yaml, &options);
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/a")).as_deref(),
        Some("default/sa:80")
    );
    assert_eq!(rule_for(&c, &get("http://shop.example.com/b")), None);
    let b = status_of(&c, "Ingress", "default", "b");
    assert_eq!(b.status, Status::Rejected);
    assert_eq!(
        message(b, Reason::HostTaken),
        "host shop.example.com is taken by Ingress/default/a"
    );
    assert_eq!(message(b, Reason::Rejected), "All hosts are taken by other resources");
}

#[test]
fn httpproxy_root_owns_its_host_alone_when_older() {
    let yaml = format!(
        "{}{}",
        root("proxy", "shop.example.com", "p", T1, "1"),
        simple_ingress("ing", "shop.example.com", "/x", "i", &meta(T2, "2"), None)
    );
    let c = compile_default(&yaml);
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/x")).as_deref(),
        Some("default/p:80")
    );
    let ing = status_of(&c, "Ingress", "default", "ing");
    assert_eq!(ing.status, Status::Rejected);
    assert_eq!(
        message(ing, Reason::HostTaken),
        "host shop.example.com is taken by HTTPProxy/default/proxy"
    );
}

#[test]
fn older_ingress_takes_the_host_from_an_httpproxy_root() {
    let yaml = format!(
        "{}{}",
        root("proxy", "shop.example.com", "p", T2, "1"),
        simple_ingress("ing", "shop.example.com", "/x", "i", &meta(T1, "2"), None)
    );
    let c = compile_default(&yaml);
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/x")).as_deref(),
        Some("default/i:80")
    );
    assert_eq!(rule_for(&c, &get("http://shop.example.com/")), None);
    let proxy = status_of(&c, "HTTPProxy", "default", "proxy");
    assert_eq!(proxy.status, Status::Invalid);
    assert_eq!(
        message(proxy, Reason::HostTaken),
        "host shop.example.com is taken by Ingress/default/ing"
    );
}

#[test]
fn merged_ingresses_compete_as_their_oldest_member() {
    let yaml = format!(
        "{}{}{}",
        simple_ingress("old", "shop.example.com", "/old", "old", &meta(T1, "1"), None),
        root("proxy", "shop.example.com", "p", T2, "2"),
        simple_ingress("new", "shop.example.com", "/new", "new", &meta(T3, "3"), None)
    );
    let c = compile_default(&yaml);
    // The group {old, new} is as old as `old`: it beats the proxy, and `new` shares the host.
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/new")).as_deref(),
        Some("default/new:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/old")).as_deref(),
        Some("default/old:80")
    );
    assert_eq!(status(&c, "Ingress", "default", "new"), Status::Accepted);
    assert_eq!(
        message(status_of(&c, "HTTPProxy", "default", "proxy"), Reason::HostTaken),
        "host shop.example.com is taken by Ingress/default/old"
    );
}

#[test]
fn two_roots_with_one_fqdn_and_equal_timestamps_pick_the_smallest_uid() {
    let yaml = format!(
        "{}{}",
        root("z", "shop.example.com", "z", T1, "aaa"),
        root("a", "shop.example.com", "a", T1, "bbb")
    );
    let c = compile_default(&yaml);
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/")).as_deref(),
        Some("default/z:80")
    );
    assert_eq!(status(&c, "HTTPProxy", "default", "a"), Status::Invalid);
    assert_eq!(status(&c, "HTTPProxy", "default", "z"), Status::Valid);
}

#[test]
fn winning_is_per_host() {
    let two_hosts = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: two\n  creationTimestamp: \"2024-02-01T00:00:00Z\"\nspec:\n  rules:\n    - host: a.example.com\n      http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: two, port: {number: 80}}}}]}\n    - host: b.example.com\n      http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: two, port: {number: 80}}}}]}\n---\n";
    let yaml = format!("{}{two_hosts}", root("proxy", "a.example.com", "p", T1, "1"));
    let c = compile_default(&yaml);
    assert_eq!(
        cluster_for(&c, &get("http://a.example.com/")).as_deref(),
        Some("default/p:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://b.example.com/")).as_deref(),
        Some("default/two:80")
    );
    let two = status_of(&c, "Ingress", "default", "two");
    assert_eq!(two.status, Status::Accepted);
    assert!(has_reason(two, Reason::HostTaken) && !has_reason(two, Reason::Rejected));
}

#[test]
fn hosts_compare_after_normalisation() {
    let yaml = format!(
        "{}{}",
        root("proxy", "Shop.Example.com.", "p", T1, "1"),
        simple_ingress("ing", "shop.example.COM", "/", "i", &meta(T2, "2"), None)
    );
    let c = compile_default(&yaml);
    assert_eq!(status(&c, "Ingress", "default", "ing"), Status::Rejected);
    assert_eq!(
        cluster_for(&c, &get("http://SHOP.example.com:8080/")).as_deref(),
        Some("default/p:80")
    );
    assert_eq!(c.table.rules[0].host.as_deref(), Some("shop.example.com"));
}

#[test]
fn missing_creation_timestamp_counts_as_oldest() {
    let yaml = format!(
        "{}{}",
        simple_ingress("stamped", "shop.example.com", "/", "stamped", &meta(T1, "1"), None),
        simple_ingress("unstamped", "shop.example.com", "/", "unstamped", "", None)
    );
    let c = compile_default(&yaml);
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/")).as_deref(),
        Some("default/unstamped:80")
    );
}

/// Issue 23, item 6 (§2): NGINX's mergeable master Ingress names its host with a rule without
/// paths. Its Ingress is a member of the host's group and its age counts: the master (oldest), then
/// a VirtualServer, then the minions: the group wins the host, the minions route, the VirtualServer
/// loses. The master itself is not rejected for having no rules.
#[test]
fn ingress_rule_with_a_host_and_no_paths_makes_its_ingress_a_member_of_the_host_group() {
    let c = compile_default(&common::nginx_case("mergeable-master"));
    assert_eq!(
        cluster_for(&c, &get("http://cafe.example.com/coffee")).as_deref(),
        Some("default/coffee-svc:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://cafe.example.com/tea")).as_deref(),
        Some("default/tea-svc:80")
    );
    assert_eq!(rule_for(&c, &get("http://cafe.example.com/")), None);
    for minion in ["cafe-ingress-coffee-minion", "cafe-ingress-tea-minion"] {
        assert_eq!(status(&c, "Ingress", "default", minion), Status::Accepted, "{minion}");
    }
    let master = status_of(&c, "Ingress", "default", "cafe-ingress-master");
    assert_eq!(master.status, Status::Accepted, "{master:?}");
    assert!(!has_reason(master, Reason::NoRules), "{master:?}");
    let vs = status_of(&c, "VirtualServer", "default", "cafe");
    assert_eq!(
        message(vs, Reason::HostTaken),
        "host cafe.example.com is taken by Ingress/default/cafe-ingress-master"
    );
}

/// With `--host-collision=winner` the master competes alone: being the oldest, it owns the host and
/// routes nothing there; a master that loses its host is rejected like any Ingress.
#[test]
fn ingress_rule_without_paths_competes_alone_when_merging_is_off() {
    let options = Options {
        host_collision: HostCollision::Winner,
        ..Options::default()
    };
    let c = compile_yaml(&common::nginx_case("mergeable-master"), &options);
    assert_eq!(rule_for(&c, &get("http://cafe.example.com/coffee")), None);
    assert_eq!(
        status(&c, "Ingress", "default", "cafe-ingress-coffee-minion"),
        Status::Rejected
    );
    let late_master = simple_ingress("shop", "shop.example.com", "/", "shop", &meta(T1, "1"), None)
        + "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: master, namespace: default, creationTimestamp: '2030-01-01T00:00:00Z'}\nspec:\n  rules:\n  - host: shop.example.com\n---\n";
    let c = compile_yaml(&late_master, &options);
    assert_eq!(status(&c, "Ingress", "default", "master"), Status::Rejected);
    assert_eq!(
        cluster_for(&c, &get("http://shop.example.com/")).as_deref(),
        Some("default/shop:80")
    );
}
