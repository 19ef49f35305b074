//! ROUTING.md §1, class eligibility (seeds 000 and 001): every accept rule with and without
//! `--ingress-class`, several default classes, and the status that says why.

mod common;

use common::*;
use switchyard::status::{Reason, Status};
use switchyard::Options;

const OURS: &str = "switchyard.io/ingress-controller";
const OURS_PROD: &str = "switchyard.io/ingress-controller/prod";
const OTHER: &str = "traefik.io/ingress-controller";

/// Compiles `classes` plus one Ingress `web` (with `meta` lines and `class_name`) and says whether
/// it was accepted.
fn accepted(classes: &str, meta: &str, class_name: Option<&str>, options: &Options) -> bool {
    let yaml = format!(
        "{classes}{}",
        simple_ingress("web", "web.example.com", "/", "web", meta, class_name)
    );
    let compiled = compile_yaml(&yaml, options);
    let st = status(&compiled, "Ingress", "default", "web");
    let routed = !compiled.table.rules.is_empty();
    assert_eq!(
        st == Status::Accepted,
        routed,
        "status and table disagree: {:#?}",
        compiled.statuses
    );
    st == Status::Accepted
}

fn annotated(key: &str, value: &str) -> String {
    format!("  annotations:\n    {key}: \"{value}\"\n")
}

// ---- --ingress-class empty ----------------------------------------------------------------------

#[test]
fn classless_resource_is_accepted_when_no_class_is_marked_default() {
    assert!(accepted("", "", None, &Options::default()));
    // Classes exist, but none is the default.
    assert!(accepted(
        &ingress_class("traefik", OTHER, false, ""),
        "",
        None,
        &Options::default()
    ));
}

#[test]
fn classless_resource_is_accepted_when_the_default_class_is_ours() {
    assert!(accepted(
        &ingress_class("sy", OURS, true, ""),
        "",
        None,
        &Options::default()
    ));
}

#[test]
fn classless_resource_is_ignored_when_the_default_class_belongs_to_another_controller() {
    // Seed 001: traefik is the default, so an Ingress without a class is not ours.
    let classes = format!(
        "{}{}",
        ingress_class("nginx", "k8s.io/ingress-nginx", false, ""),
        ingress_class("traefik", OTHER, true, "")
    );
    assert!(!accepted(&classes, "", None, &Options::default()));
}

#[test]
fn resource_naming_a_matching_class_is_accepted() {
    assert!(accepted(
        &ingress_class("sy", OURS, false, ""),
        "",
        Some("sy"),
        &Options::default()
    ));
    // Even when another controller's class is the default.
    let classes = format!(
        "{}{}",
        ingress_class("sy", OURS, false, ""),
        ingress_class("traefik", OTHER, true, "")
    );
    assert!(accepted(&classes, "", Some("sy"), &Options::default()));
}

#[test]
fn resource_naming_another_controllers_class_is_ignored() {
    assert!(!accepted(
        &ingress_class("traefik", OTHER, false, ""),
        "",
        Some("traefik"),
        &Options::default()
    ));
}

#[test]
fn resource_naming_a_class_that_does_not_exist_is_ignored() {
    assert!(!accepted("", "", Some("missing"), &Options::default()));
}

#[test]
fn class_annotation_is_ignored_when_ingress_class_flag_is_empty() {
    // Rule 3 needs "no class annotation": the annotation alone makes it not ours.
    let classes = ingress_class("sy", OURS, false, "");
    assert!(!accepted(
        &classes,
        &annotated("kubernetes.io/ingress.class", "sy"),
        Some("sy"),
        &Options::default()
    ));
    assert!(!accepted(
        "",
        &annotated("kubernetes.io/ingress.class", "sy"),
        None,
        &Options::default()
    ));
}

// ---- --ingress-class set ------------------------------------------------------------------------

#[test]
fn annotation_equal_to_ingress_class_is_accepted_whatever_ingress_class_name_says() {
    let prod = with_class("prod");
    assert!(accepted(
        "",
        &annotated("kubernetes.io/ingress.class", "prod"),
        None,
        &prod
    ));
    let other = ingress_class("traefik", OTHER, false, "");
    assert!(accepted(
        &other,
        &annotated("kubernetes.io/ingress.class", "prod"),
        Some("traefik"),
        &prod
    ));
}

#[test]
fn annotation_different_from_ingress_class_is_ignored() {
    // Even when ingressClassName names a matching class: the annotation decides.
    let classes = ingress_class("sy-prod", OURS_PROD, false, "");
    assert!(!accepted(
        &classes,
        &annotated("kubernetes.io/ingress.class", "nginx"),
        Some("sy-prod"),
        &with_class("prod")
    ));
}

#[test]
fn classless_resource_is_accepted_with_empty_ingress_class_flag() {
    let options = Options {
        empty_ingress_class: true,
        ..with_class("prod")
    };
    assert!(accepted("", "", None, &options));
    // But not when it names a class that is not ours.
    assert!(!accepted(
        &ingress_class("traefik", OTHER, false, ""),
        "",
        Some("traefik"),
        &options
    ));
}

#[test]
fn classless_resource_is_ignored_with_ingress_class_set_and_no_default_or_empty_flag() {
    assert!(!accepted("", "", None, &with_class("prod")));
}

#[test]
fn classless_resource_is_accepted_when_the_default_class_is_ours_with_ingress_class_set() {
    assert!(accepted(
        &ingress_class("sy-prod", OURS_PROD, true, ""),
        "",
        None,
        &with_class("prod")
    ));
    // With --ingress-class prod, a class of the bare controller name is not valid.
    assert!(!accepted(
        &ingress_class("sy", OURS, true, ""),
        "",
        None,
        &with_class("prod")
    ));
}

#[test]
fn matching_class_with_ingress_class_set_needs_controller_slash_class() {
    // Seed 000: `--ingress.class prod` pairs with controller haproxy.org/ingress-controller/prod.
    let classes = format!(
        "{}{}",
        ingress_class("sy-prod", OURS_PROD, false, ""),
        ingress_class("sy", OURS, false, "")
    );
    assert!(accepted(&classes, "", Some("sy-prod"), &with_class("prod")));
    assert!(!accepted(&classes, "", Some("sy"), &with_class("prod")));
}

#[test]
fn controller_name_flag_changes_which_classes_are_valid() {
    let options = Options {
        controller_name: "haproxy.org/ingress-controller".into(),
        ..Options::default()
    };
    let classes = ingress_class("haproxy", "haproxy.org/ingress-controller", false, "");
    assert!(accepted(&classes, "", Some("haproxy"), &options));
    assert!(!accepted(&classes, "", Some("haproxy"), &Options::default()));
}

// ---- annotations ----------------------------------------------------------------------------------

#[test]
fn legacy_ingress_class_annotation_is_read() {
    assert!(accepted(
        "",
        &annotated("ingress.class", "haproxy"),
        None,
        &with_class("haproxy")
    ));
    assert!(!accepted(
        "",
        &annotated("ingress.class", "nginx"),
        None,
        &with_class("haproxy")
    ));
}

#[test]
fn long_class_annotation_wins_over_the_legacy_one() {
    let both = "  annotations:\n    kubernetes.io/ingress.class: haproxy\n    ingress.class: nginx\n";
    assert!(accepted("", both, None, &with_class("haproxy")));
    let both = "  annotations:\n    kubernetes.io/ingress.class: nginx\n    ingress.class: haproxy\n";
    assert!(!accepted("", both, None, &with_class("haproxy")));
}

// ---- the effective default class ------------------------------------------------------------------

#[test]
fn newest_default_class_is_the_effective_default() {
    let ours_newer = format!(
        "{}{}",
        ingress_class("old-other", OTHER, true, "2024-01-01T00:00:00Z"),
        ingress_class("new-ours", OURS, true, "2024-06-01T00:00:00Z")
    );
    assert!(accepted(&ours_newer, "", None, &Options::default()));
    let ours_older = format!(
        "{}{}",
        ingress_class("old-ours", OURS, true, "2024-01-01T00:00:00Z"),
        ingress_class("new-other", OTHER, true, "2024-06-01T00:00:00Z")
    );
    assert!(!accepted(&ours_older, "", None, &Options::default()));
}

#[test]
fn default_classes_with_equal_timestamps_pick_the_smallest_name() {
    let t = "2024-01-01T00:00:00Z";
    let a_ours = format!(
        "{}{}",
        ingress_class("b-other", OTHER, true, t),
        ingress_class("a-ours", OURS, true, t)
    );
    assert!(accepted(&a_ours, "", None, &Options::default()));
    let a_other = format!(
        "{}{}",
        ingress_class("b-ours", OURS, true, t),
        ingress_class("a-other", OTHER, true, t)
    );
    assert!(!accepted(&a_other, "", None, &Options::default()));
}

#[test]
fn default_class_choice_does_not_depend_on_input_order() {
    let t = "2024-01-01T00:00:00Z";
    let one = format!(
        "{}{}",
        ingress_class("b-other", OTHER, true, t),
        ingress_class("a-ours", OURS, true, t)
    );
    let two = format!(
        "{}{}",
        ingress_class("a-ours", OURS, true, t),
        ingress_class("b-other", OTHER, true, t)
    );
    assert_eq!(
        accepted(&one, "", None, &Options::default()),
        accepted(&two, "", None, &Options::default())
    );
}

#[test]
fn is_default_class_must_be_the_string_true() {
    let yaml = "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: other\n  annotations:\n    ingressclass.kubernetes.io/is-default-class: \"True\"\nspec:\n  controller: traefik.io/ingress-controller\n---\n";
    // "True" is not "true": there is no default, so a classless Ingress is ours (rule 1).
    assert!(accepted(yaml, "", None, &Options::default()));
}

// ---- status ------------------------------------------------------------------------------------------

#[test]
fn ignored_resource_status_says_which_rule_failed() {
    let classes = ingress_class("traefik", OTHER, true, "");
    let yaml = format!(
        "{classes}{}",
        simple_ingress("web", "web.example.com", "/", "web", "", None)
    );
    let compiled = compile_default(&yaml);
    let st = status_of(&compiled, "Ingress", "default", "web");
    assert_eq!(st.status, Status::Ignored);
    let why = message(st, Reason::IgnoredByClass);
    assert!(why.contains("default IngressClass \"traefik\""), "{why}");
    assert!(why.contains(OTHER), "{why}");
    assert_eq!(status(&compiled, "IngressClass", "", "traefik"), Status::Ignored);
}

#[test]
fn httpproxy_follows_the_same_class_rules() {
    let proxy = |meta: &str, class: &str| {
        format!(
            "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata:\n  name: root\n  namespace: default\n{meta}spec:\n{class}  virtualhost:\n    fqdn: root.example.com\n  routes:\n    - services:\n        - name: s1\n          port: 80\n"
        )
    };
    let ignored = compile_yaml(
        &proxy(&annotated("kubernetes.io/ingress.class", "nginx"), ""),
        &with_class("prod"),
    );
    assert_eq!(status(&ignored, "HTTPProxy", "default", "root"), Status::Ignored);
    assert!(ignored.table.rules.is_empty());
    let by_annotation = compile_yaml(
        &proxy(&annotated("kubernetes.io/ingress.class", "prod"), ""),
        &with_class("prod"),
    );
    assert_eq!(status(&by_annotation, "HTTPProxy", "default", "root"), Status::Valid);
    let by_field = compile_default(&format!(
        "{}{}",
        ingress_class("sy", OURS, false, ""),
        proxy("", "  ingressClassName: sy\n")
    ));
    assert_eq!(status(&by_field, "HTTPProxy", "default", "root"), Status::Valid);
}

#[test]
fn an_ingress_class_change_re_evaluates_every_resource() {
    // The compiler is a pure function of all objects: adding, removing or moving the default class
    // changes the outcome of every classless resource at once.
    let resources = format!(
        "{}{}",
        simple_ingress("a", "a.example.com", "/", "a", "", None),
        simple_ingress("b", "b.example.com", "/", "b", "", None)
    );
    let before = compile_default(&resources);
    let with_other_default = compile_default(&format!("{}{resources}", ingress_class("traefik", OTHER, true, "")));
    let default_moved = compile_default(&format!(
        "{}{}{resources}",
        ingress_class("traefik", OTHER, true, "2024-01-01T00:00:00Z"),
        ingress_class("sy", OURS, true, "2024-02-01T00:00:00Z")
    ));
    for name in ["a", "b"] {
        assert_eq!(status(&before, "Ingress", "default", name), Status::Accepted);
        assert_eq!(status(&with_other_default, "Ingress", "default", name), Status::Ignored);
        assert_eq!(status(&default_moved, "Ingress", "default", name), Status::Accepted);
    }
}
