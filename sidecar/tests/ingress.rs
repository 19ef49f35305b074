//! The Ingress processor: path types, `defaultBackend`, named ports, router annotations, old API
//! versions, TLS, rule names and cluster names.

mod common;

use common::*;
use switchyard::status::{Reason, Status};
use switchyard::Options;
use switchyard_table::{ConditionSource, MatchOp, PathSpec};

fn ingress_with_paths(paths: &str) -> String {
    format!("apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  rules:\n    - host: web.example.com\n      http:\n        paths:\n{paths}")
}

fn path(path: &str, path_type: &str, service: &str) -> String {
    format!("          - path: {path}\n            pathType: {path_type}\n            backend: {{service: {{name: {service}, port: {{number: 80}}}}}}\n")
}

#[test]
fn prefix_path_type_is_a_segment_prefix() {
    let c = compile_default(&ingress_with_paths(&path("/foo", "Prefix", "foo")));
    assert_eq!(c.table.rules[0].path, PathSpec::SegmentPrefix("/foo".into()));
    for matching in ["/foo", "/foo/", "/foo/bar"] {
        assert_eq!(
            cluster_for(&c, &get(&format!("http://web.example.com{matching}"))).as_deref(),
            Some("shop/foo:80"),
            "{matching}"
        );
    }
    assert_eq!(rule_for(&c, &get("http://web.example.com/foobar")), None);
}

#[test]
fn implementation_specific_path_type_is_a_segment_prefix() {
    let c = compile_default(&ingress_with_paths(&path("/foo/", "ImplementationSpecific", "foo")));
    assert_eq!(c.table.rules[0].path, PathSpec::SegmentPrefix("/foo/".into()));
    assert_eq!(
        cluster_for(&c, &get("http://web.example.com/foo")).as_deref(),
        Some("shop/foo:80")
    );
    assert_eq!(rule_for(&c, &get("http://web.example.com/foobar")), None);
}

#[test]
fn a_regex_looking_implementation_specific_path_stays_literal_with_a_warning() {
    let c = compile_default(&ingress_with_paths(&format!(
        "{}{}",
        path("/api/v[0-9]+(/.*)?", "ImplementationSpecific", "api"),
        path("/plain", "ImplementationSpecific", "plain")
    )));
    assert_eq!(
        c.table
            .rules
            .iter()
            .find(|r| r.name == "Ingress/shop/web#0")
            .unwrap()
            .path,
        PathSpec::SegmentPrefix("/api/v[0-9]+(/.*)?".into())
    );
    assert_eq!(rule_for(&c, &get("http://web.example.com/api/v1/users")), None);
    let web = status_of(&c, "Ingress", "shop", "web");
    assert_eq!(web.status, Status::Accepted);
    let warning = message(web, Reason::PathLooksLikeRegex);
    assert!(
        warning.contains("spec.rules[0].http.paths[0]") && warning.contains("literal"),
        "{warning}"
    );
    assert_eq!(
        web.conditions
            .iter()
            .filter(|c| c.reason == Reason::PathLooksLikeRegex)
            .count(),
        1
    );
}

#[test]
fn exact_path_type_must_equal_the_path() {
    let c = compile_default(&ingress_with_paths(&path("/foo", "Exact", "foo")));
    assert_eq!(
        cluster_for(&c, &get("http://web.example.com/foo?x=1")).as_deref(),
        Some("shop/foo:80")
    );
    assert_eq!(rule_for(&c, &get("http://web.example.com/foo/")), None);
    assert_eq!(rule_for(&c, &get("http://web.example.com/FOO")), None);
}

#[test]
fn missing_path_is_the_segment_prefix_root() {
    let yaml = ingress_with_paths(
        "          - pathType: Prefix\n            backend: {service: {name: all, port: {number: 80}}}\n",
    );
    let c = compile_default(&yaml);
    assert_eq!(c.table.rules[0].path, PathSpec::SegmentPrefix("/".into()));
    assert_eq!(
        cluster_for(&c, &get("http://web.example.com/anything")).as_deref(),
        Some("shop/all:80")
    );
}

#[test]
fn unknown_path_type_is_a_status_error() {
    let c = compile_default(&ingress_with_paths(&format!(
        "{}{}",
        path("/a", "Glob", "a"),
        path("/b", "Prefix", "b")
    )));
    let web = status_of(&c, "Ingress", "shop", "web");
    assert_eq!(web.status, Status::Accepted);
    assert!(message(web, Reason::UnknownPathType).contains("spec.rules[0].http.paths[0]"));
    assert_eq!(rule_names(&c), ["Ingress/shop/web#1"]);
}

#[test]
fn default_backend_is_a_catch_all_below_every_host_rule() {
    let yaml = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\nspec:\n  defaultBackend: {service: {name: fallback, port: {number: 80}}}\n  rules:\n    - host: web.example.com\n      http: {paths: [{path: /app, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}]}\n";
    let c = compile_default(yaml);
    let last = c.table.rules.last().unwrap();
    assert_eq!(
        (last.host.as_deref(), &last.path),
        (None, &PathSpec::SegmentPrefix("/".into()))
    );
    assert_eq!(
        cluster_for(&c, &get("http://web.example.com/app")).as_deref(),
        Some("default/app:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://web.example.com/other")).as_deref(),
        Some("default/fallback:80")
    );
    assert_eq!(
        cluster_for(&c, &get("http://unknown.example.org/")).as_deref(),
        Some("default/fallback:80")
    );
}

#[test]
fn named_service_port_resolves_through_the_service() {
    let yaml = "apiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: shop}\nspec:\n  ports: [{name: http, port: 8080}, {name: grpc, port: 9090}]\n---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec:\n  rules:\n    - host: web.example.com\n      http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: api, port: {name: grpc}}}}]}\n";
    let c = compile_default(yaml);
    assert_eq!(
        cluster_for(&c, &get("http://web.example.com/")).as_deref(),
        Some("shop/api:9090")
    );
}

/// An Ingress `shop/web` on web.example.com: `/` to `web` port 80, `/api` to `api` port `{api_port}`.
fn api_and_web(api_port: &str) -> String {
    format!("apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: web, namespace: shop}}\nspec:\n  rules:\n    - host: web.example.com\n      http:\n        paths:\n          - {{path: /, pathType: Prefix, backend: {{service: {{name: web, port: {{number: 80}}}}}}}}\n          - {{path: /api, pathType: Prefix, backend: {{service: {{name: api, port: {api_port}}}}}}}\n")
}

#[test]
fn unresolvable_service_port_answers_503_not_a_shorter_prefix() {
    let service = "apiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: shop}\nspec:\n  ports: [{name: grpc, port: 9090}]\n---\n";
    let cases = [
        // A named port and no Service to name it.
        (
            api_and_web("{name: http}"),
            "names port \"http\" of Service shop/api, which is not in the input",
        ),
        // A Service without a port of that name, or of that number.
        (
            format!("{service}{}", api_and_web("{name: http}")),
            "Service shop/api has no port named \"http\" (its ports: [grpc=9090])",
        ),
        (
            format!("{service}{}", api_and_web("{number: 8080}")),
            "Service shop/api has no port 8080 (its ports: [grpc=9090])",
        ),
    ];
    for (yaml, why) in cases {
        let c = compile_default(&yaml);
        let web = status_of(&c, "Ingress", "shop", "web");
        assert_eq!(web.status, Status::Accepted, "{why}");
        let said = message(web, Reason::ServicePortNotFound);
        assert!(
            said.starts_with("spec.rules[0].http.paths[1]: ") && said.contains(why),
            "{said}"
        );
        assert!(said.ends_with("requests for this path get 503"), "{said}");
        // The rule stays: /api answers 503 instead of falling through to `/`.
        assert_eq!(
            direct_status(&c, &get("http://web.example.com/api/users")),
            Some(503),
            "{why}"
        );
        assert_eq!(
            rule_for(&c, &get("http://web.example.com/api")).as_deref(),
            Some("Ingress/shop/web#1")
        );
        assert_eq!(
            cluster_for(&c, &get("http://web.example.com/other")).as_deref(),
            Some("shop/web:80")
        );
    }
}

#[test]
fn router_header_annotation_adds_one_exact_header_condition() {
    let meta = "  annotations:\n    bfe.ingress.kubernetes.io/router.header: \"Key: value\"\n";
    let c = compile_default(&simple_ingress("web", "web.example.com", "/", "web", meta, None));
    let condition = &c.table.rules[0].conditions[0];
    assert_eq!(
        (
            condition.on,
            condition.name.as_deref(),
            condition.op,
            condition.value.as_deref()
        ),
        (ConditionSource::Header, Some("key"), MatchOp::Exact, Some("value"))
    );
    assert_eq!(
        cluster_for(&c, &get("http://web.example.com/").header("KEY", "value")).as_deref(),
        Some("default/web:80")
    );
    assert_eq!(
        rule_for(&c, &get("http://web.example.com/").header("Key", "Value")),
        None
    );
}

#[test]
fn router_cookie_annotation_adds_one_exact_cookie_condition() {
    let meta = "  annotations:\n    bfe.ingress.kubernetes.io/router.cookie: \"Session: abc\"\n";
    let c = compile_default(&simple_ingress("web", "web.example.com", "/", "web", meta, None));
    assert_eq!(c.table.rules[0].conditions[0].on, ConditionSource::Cookie);
    assert_eq!(
        cluster_for(&c, &get("http://web.example.com/").cookie("Session", "abc")).as_deref(),
        Some("default/web:80")
    );
    assert_eq!(
        rule_for(&c, &get("http://web.example.com/").cookie("session", "abc")),
        None
    );
}

#[test]
fn router_annotation_alternatives_mean_any_of_them() {
    let meta = "  annotations:\n    switchyard.io/router.header: \"x-env: a.b|c\"\n";
    let c = compile_default(&simple_ingress("web", "web.example.com", "/", "web", meta, None));
    let condition = &c.table.rules[0].conditions[0];
    assert_eq!(
        (condition.op, condition.value.as_deref()),
        (MatchOp::Regex, Some("a\\.b|c"))
    );
    for value in ["a.b", "c"] {
        assert!(
            rule_for(&c, &get("http://web.example.com/").header("x-env", value)).is_some(),
            "{value}"
        );
    }
    for value in ["axb", "a.b|c", "cc"] {
        assert!(
            rule_for(&c, &get("http://web.example.com/").header("x-env", value)).is_none(),
            "{value}"
        );
    }
}

#[test]
fn switchyard_router_annotations_are_read_like_bfes() {
    let meta = "  annotations:\n    switchyard.io/router.cookie: \"k: v\"\n    switchyard.io/router.header: \"h: v\"\n";
    let c = compile_default(&simple_ingress("web", "web.example.com", "/", "web", meta, None));
    let sources: Vec<ConditionSource> = c.table.rules[0].conditions.iter().map(|c| c.on).collect();
    assert_eq!(sources, [ConditionSource::Cookie, ConditionSource::Header]);
}

#[test]
fn malformed_router_annotation_rejects_the_ingress() {
    let meta = "  annotations:\n    bfe.ingress.kubernetes.io/router.header: \"no colon\"\n";
    let c = compile_default(&simple_ingress("web", "web.example.com", "/", "web", meta, None));
    assert_eq!(status(&c, "Ingress", "default", "web"), Status::Rejected);
    assert!(c.table.rules.is_empty(), "dropping the condition would widen the rule");
}

#[test]
fn old_ingress_api_versions_are_converted_with_a_warning() {
    for version in ["extensions/v1beta1", "networking.k8s.io/v1beta1"] {
        let yaml = format!("apiVersion: {version}\nkind: Ingress\nmetadata: {{name: old}}\nspec:\n  backend: {{serviceName: fallback, servicePort: 80}}\n  rules:\n    - host: old.example.com\n      http:\n        paths:\n          - path: /x\n            backend: {{serviceName: x, servicePort: \"8080\"}}\n");
        let loaded = load(&yaml);
        assert!(
            loaded
                .warnings
                .iter()
                .any(|w| w.contains(&format!("apiVersion {version} is converted"))),
            "{:?}",
            loaded.warnings
        );
        let c = switchyard::compile(&loaded.objects, &Options::default()).expect("compiles");
        assert_eq!(
            cluster_for(&c, &get("http://old.example.com/x/y")).as_deref(),
            Some("default/x:8080")
        );
        // spec.backend is v1beta1's name for defaultBackend.
        assert_eq!(
            cluster_for(&c, &get("http://old.example.com/")).as_deref(),
            Some("default/fallback:80")
        );
    }
}

#[test]
fn old_backend_fields_inside_a_v1_ingress_are_converted_with_a_warning() {
    let yaml = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: mixed}\nspec:\n  rules:\n    - host: m.example.com\n      http:\n        paths:\n          - path: /\n            pathType: Prefix\n            backend: {serviceName: m, servicePort: 81}\n";
    let loaded = load(yaml);
    assert!(
        loaded.warnings.iter().any(|w| w.contains("serviceName/servicePort")),
        "{:?}",
        loaded.warnings
    );
    let c = switchyard::compile(&loaded.objects, &Options::default()).expect("compiles");
    assert_eq!(
        cluster_for(&c, &get("http://m.example.com/")).as_deref(),
        Some("default/m:81")
    );
}

#[test]
fn tls_settings_do_not_affect_routing() {
    let plain = simple_ingress("web", "web.example.com", "/", "web", "", None);
    let with_tls = plain.replace(
        "spec:\n",
        "spec:\n  tls:\n    - hosts: [web.example.com]\n      secretName: web-tls\n",
    );
    assert_ne!(plain, with_tls);
    assert_eq!(compile_default(&plain).table, compile_default(&with_tls).table);
}

#[test]
fn rule_names_are_kind_namespace_name_and_position() {
    let c = compile_default(&ingress_with_paths(&format!(
        "{}{}",
        path("/a", "Prefix", "a"),
        path("/b", "Exact", "b")
    )));
    let mut names = rule_names(&c);
    names.sort();
    assert_eq!(names, ["Ingress/shop/web#0", "Ingress/shop/web#1"]);
}

#[test]
fn cluster_template_names_the_clusters() {
    let options = Options {
        cluster_template: "outbound|{port}||{service}.{namespace}.svc.cluster.local".into(),
        ..Options::default()
    };
    let c = compile_yaml(
        &simple_ingress("web", "web.example.com", "/", "web", "", None),
        &options,
    );
    assert_eq!(
        cluster_for(&c, &get("http://web.example.com/")).as_deref(),
        Some("outbound|80||web.default.svc.cluster.local")
    );
}

#[test]
fn wildcard_host_matches_exactly_one_label() {
    let c = compile_default(&simple_ingress("web", "*.example.net", "/", "web", "", None));
    assert!(rule_for(&c, &get("http://a.example.net/")).is_some());
    assert!(rule_for(&c, &get("http://a.b.example.net/")).is_none());
    assert!(rule_for(&c, &get("http://example.net/")).is_none());
}

#[test]
fn table_settings_come_from_the_options() {
    let options = Options {
        cluster_header: "x-cluster".into(),
        no_route: switchyard_table::NoRoute::Pass,
        debug_rule_header: true,
        ..Options::default()
    };
    let c = compile_yaml(
        &simple_ingress("web", "web.example.com", "/", "web", "", None),
        &options,
    );
    assert_eq!(c.table.cluster_header, "x-cluster");
    assert_eq!(c.table.no_route, switchyard_table::NoRoute::Pass);
    assert!(c.table.debug_rule_header);
}
