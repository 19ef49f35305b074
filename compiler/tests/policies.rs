//! Policies beyond the route (issue "Policies beyond the route") as the compiler writes them into
//! the table: ingress-nginx's body limit, `proxy-body-size` or the ConfigMap's (1 MiB by default),
//! on the rules that send upstream.

mod common;

use common::*;
use switchyard_compiler::ingress_nginx::configmap::ControllerConfig;
use switchyard_compiler::status::Reason;
use switchyard_table::{ActionSpec, Policy};

/// An ingress-nginx Ingress `api` (`/` to `api:80`) with
/// `annotations` (YAML lines).
fn api(annotations: &str) -> String {
    format!(
        "{}apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: api\n  namespace: shop\n  annotations:\n    x: y\n{annotations}spec:\n  ingressClassName: nginx\n  rules:\n  - host: api.example.com\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, backend: {{service: {{name: api, port: {{number: 80}}}}}}}}\n---\n",
        ingress_class("nginx", "k8s.io/ingress-nginx", false, "")
    )
}

/// The body limit of the routed rule of Ingress shop/api, under `options`.
fn limit(yaml: &str, options: &switchyard_compiler::Options) -> (Option<u64>, switchyard_compiler::Compiled) {
    let compiled = compile_yaml(yaml, options);
    let rule = (compiled.table.rules.iter())
        .find(|r| r.name.starts_with("Ingress/shop/api") && matches!(r.action, ActionSpec::Route(_)))
        .unwrap();
    let limit = rule.policy.as_deref().and_then(|p: &Policy| p.max_body_bytes);
    (limit, compiled)
}

#[test]
fn every_ingress_nginx_location_takes_a_one_mebibyte_body_unless_told_otherwise() {
    assert_eq!(limit(&api(""), &nginx_options()).0, Some(1 << 20));
}

#[test]
fn proxy_body_size_sets_the_limit_and_zero_lifts_it() {
    let annotation = |value: &str| format!("    nginx.ingress.kubernetes.io/proxy-body-size: \"{value}\"\n");
    assert_eq!(limit(&api(&annotation("8m")), &nginx_options()).0, Some(8 << 20));
    assert_eq!(limit(&api(&annotation("0")), &nginx_options()).0, None);
    let (size, compiled) = limit(&api(&annotation("8 megabytes")), &nginx_options());
    assert_eq!(size, Some(1 << 20), "invalid: the ConfigMap's stands");
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        message(status, Reason::AnnotationInvalid).contains("proxy-body-size"),
        "{status:?}"
    );
}

#[test]
fn the_configmaps_proxy_body_size_is_every_ingresss_default() {
    let mut options = nginx_options();
    let data = [("proxy-body-size".to_owned(), "20m".to_owned())].into_iter().collect();
    options.ingress_nginx_config = ControllerConfig::from_data(&data);
    assert_eq!(limit(&api(""), &options).0, Some(20 << 20));
    let annotation = "    nginx.ingress.kubernetes.io/proxy-body-size: 1k\n";
    assert_eq!(
        limit(&api(annotation), &options).0,
        Some(1 << 10),
        "the annotation wins"
    );
}

#[test]
fn identical_policies_are_held_once_by_the_table() {
    let two = format!(
        "{}{}",
        api(""),
        api("")
            .replace("name: api\n", "name: web\n")
            .replace("api.example.com", "web.example.com")
    );
    let compiled = compile_yaml(&two, &nginx_options());
    let json = serde_json::to_string(&compiled.table).unwrap();
    let table = switchyard_table::RouteTable::from_json(json.as_bytes()).unwrap();
    let policies: Vec<_> = (table.rules().iter()).filter_map(|r| r.spec().policy.clone()).collect();
    assert!(policies.len() >= 2, "{policies:?}");
    assert!(
        policies.windows(2).all(|w| std::sync::Arc::ptr_eq(&w[0], &w[1])),
        "one shared policy"
    );
}

/// A VirtualServer `v` routing `/` to upstream `api` with `extra` (YAML of the upstream), and `/old`
/// answered with a redirect.
fn virtual_server(extra: &str) -> String {
    format!(
        "apiVersion: k8s.nginx.org/v1\nkind: VirtualServer\nmetadata: {{name: v, namespace: shop}}\nspec:\n  host: v.example.com\n  upstreams:\n  - {{name: api, service: api, port: 80{extra}}}\n  routes:\n  - {{path: /, action: {{pass: api}}}}\n  - {{path: /old, action: {{redirect: {{url: \"https://v.example.com/\"}}}}}}\n"
    )
}

/// The body limit of each rule of VirtualServer shop/v, by rule name.
fn vs_limits(yaml: &str) -> Vec<(String, Option<u64>)> {
    let compiled = compile_yaml(yaml, &switchyard_compiler::Options::default());
    (compiled.table.rules.iter())
        .filter(|r| r.name.starts_with("VirtualServer/shop/v"))
        .map(|r| (r.name.clone(), r.policy.as_deref().and_then(|p| p.max_body_bytes)))
        .collect()
}

#[test]
fn a_virtualserver_upstream_takes_nginxs_one_mebibyte_body_unless_its_client_max_body_size_says() {
    let limits = vs_limits(&virtual_server(""));
    let of = |limits: &[(String, Option<u64>)], suffix: &str| {
        limits
            .iter()
            .find(|(n, _)| n.ends_with(suffix))
            .map(|(_, l)| *l)
            .unwrap()
    };
    assert_eq!(of(&limits, "#0"), Some(1 << 20), "{limits:?}");
    assert_eq!(
        of(&limits, "#1"),
        None,
        "a redirect answers before the body: {limits:?}"
    );
    let limits = vs_limits(&virtual_server(", client-max-body-size: 20m"));
    assert_eq!(of(&limits, "#0"), Some(20 << 20), "{limits:?}");
    let limits = vs_limits(&virtual_server(", client-max-body-size: \"0\""));
    assert_eq!(of(&limits, "#0"), None, "0: no limit");
}

#[test]
fn an_invalid_client_max_body_size_makes_the_virtualserver_invalid() {
    let compiled = compile_yaml(
        &virtual_server(", client-max-body-size: lots"),
        &switchyard_compiler::Options::default(),
    );
    let status = status_of(&compiled, "VirtualServer", "shop", "v");
    assert_eq!(
        status.status,
        switchyard_compiler::status::Status::Invalid,
        "{status:?}"
    );
    assert!(format!("{status:?}").contains("client-max-body-size"), "{status:?}");
}
