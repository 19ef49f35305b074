//! Policies beyond the route (issue "Policies beyond the route") as the compiler writes them into
//! the table: ingress-nginx's body limit, `proxy-body-size` or the ConfigMap's (1 MiB by default),
//! on the rules that send upstream; the gateway route of each rule's timeouts and retries
//! (ingress-nginx's, HTTPProxy's, a VirtualServer upstream's).

mod common;

use common::*;
use switchyard_compiler::ingress_nginx::configmap::ControllerConfig;
use switchyard_compiler::route_config::{RetryOn, RouteSettings};
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

/// The rule of Ingress shop/api that sends upstream.
fn routed_rule(compiled: &switchyard_compiler::Compiled) -> &switchyard_table::RuleSpec {
    (compiled.table.rules.iter())
        .find(|r| r.name.starts_with("Ingress/shop/api") && matches!(r.action, ActionSpec::Route(_)))
        .expect("a routed rule of Ingress shop/api")
}

/// The body limit of the routed rule of Ingress shop/api, under `options`.
fn limit(yaml: &str, options: &switchyard_compiler::Options) -> (Option<u64>, switchyard_compiler::Compiled) {
    let compiled = compile_yaml(yaml, options);
    let limit = routed_rule(&compiled)
        .policy
        .as_deref()
        .and_then(|p: &Policy| p.max_body_bytes);
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
    assert_invalid_naming(&compiled, ("VirtualServer", "shop", "v"), "client-max-body-size");
}

/// The route names of the rules of `kind/shop/name` that send upstream, compiled with `options`
/// on a gateway whose routes are Switchyard's.
fn routes_of(yaml: &str, options: &switchyard_compiler::Options, resource: &str) -> Vec<Option<String>> {
    let compiled = compile_with_gateway_routes(yaml, options);
    (compiled.table.rules.iter())
        .filter(|r| r.name.starts_with(resource) && matches!(r.action, ActionSpec::Route(_)))
        .map(|r| r.policy.as_ref().and_then(|p| p.route.clone()))
        .collect()
}

/// `yaml` compiled with `options` on a gateway whose routes are Switchyard's.
fn compile_with_gateway_routes(yaml: &str, options: &switchyard_compiler::Options) -> switchyard_compiler::Compiled {
    let options = switchyard_compiler::Options {
        gateway_routes: true,
        ..options.clone()
    };
    compile_yaml(yaml, &options)
}

/// The settings of a route name.
fn settings(name: &Option<String>) -> RouteSettings {
    RouteSettings::of_name(name.as_deref().unwrap()).unwrap()
}

#[test]
fn every_ingress_nginx_location_names_a_route_without_envoys_15s_timeout() {
    let routes = routes_of(&api(""), &nginx_options(), "Ingress/shop/api");
    let route = settings(&routes[0]);
    assert_eq!(route.timeout_ms, Some(0), "no total timeout");
    assert_eq!(
        (route.idle_timeout_ms, route.upstream_idle_timeout_ms),
        (Some(60_000), Some(60_000))
    );
    assert_eq!(route.retry.unwrap().retries, 2);
}

#[test]
fn proxy_timeouts_and_next_upstream_shape_the_route_and_the_configmap_sets_the_defaults() {
    let annotations = "    nginx.ingress.kubernetes.io/proxy-read-timeout: \"3600\"\n    nginx.ingress.kubernetes.io/proxy-next-upstream: \"off\"\n";
    let route = settings(&routes_of(&api(annotations), &nginx_options(), "Ingress/shop/api")[0]);
    assert_eq!(route.upstream_idle_timeout_ms, Some(3_600_000));
    assert_eq!(route.retry, None);
    let mut options = nginx_options();
    let data = [("proxy-read-timeout".to_owned(), "120".to_owned())]
        .into_iter()
        .collect();
    options.ingress_nginx_config = ControllerConfig::from_data(&data);
    let route = settings(&routes_of(&api(""), &options, "Ingress/shop/api")[0]);
    assert_eq!(route.upstream_idle_timeout_ms, Some(120_000));
}

#[test]
fn without_the_gateways_routes_timeouts_are_reported_not_honoured_and_no_route_is_named() {
    let annotation = "    nginx.ingress.kubernetes.io/proxy-read-timeout: \"3600\"\n";
    let compiled = compile_yaml(&api(annotation), &nginx_options());
    assert!(compiled
        .table
        .rules
        .iter()
        .all(|r| r.policy.as_ref().is_none_or(|p| p.route.is_none())));
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        message(status, Reason::AnnotationNotHonored).contains("proxy-read-timeout"),
        "{status:?}"
    );
}

/// An HTTPProxy `p` routing `/` to `api:80`, its route with `extra` (YAML fields of the route).
fn proxy(extra: &str) -> String {
    httpproxy(" [{name: api, port: 80}]\n", extra)
}

#[test]
fn an_httpproxy_routes_timeout_and_retry_policies_are_its_route_and_without_them_envoys_defaults_stand() {
    let options = switchyard_compiler::Options::default();
    assert_eq!(routes_of(&proxy(""), &options, "HTTPProxy/shop/p"), [None]);
    let extra = "    timeoutPolicy: {response: 30s, idle: 5m}\n    retryPolicy: {count: 2, retryOn: [gateway-error]}\n";
    let route = settings(&routes_of(&proxy(extra), &options, "HTTPProxy/shop/p")[0]);
    assert_eq!((route.timeout_ms, route.idle_timeout_ms), (Some(30_000), Some(300_000)));
    let retry = route.retry.unwrap();
    assert_eq!((retry.retries, retry.on), (2, [RetryOn::GatewayError].into()));
}

#[test]
fn an_invalid_retry_policy_skips_the_route() {
    let compiled = compile_yaml(
        &proxy("    retryPolicy: {retryOn: [sometimes]}\n"),
        &switchyard_compiler::Options::default(),
    );
    let status = status_of(&compiled, "HTTPProxy", "shop", "p");
    assert!(
        message(status, Reason::RetryPolicyNotValid).contains("retryOn"),
        "{status:?}"
    );
    assert!(!compiled
        .table
        .rules
        .iter()
        .any(|r| r.name.starts_with("HTTPProxy/shop/p")));
}

#[test]
fn a_virtualserver_upstreams_timeouts_and_next_upstream_are_its_route() {
    let options = switchyard_compiler::Options::default();
    let default = settings(&routes_of(&virtual_server(""), &options, "VirtualServer/shop/v")[0]);
    assert_eq!(default.upstream_idle_timeout_ms, Some(60_000));
    assert_eq!(default.retry.unwrap().retries, 5, "next-upstream-tries 0: no limit");
    let extra = ", read-timeout: 2m, send-timeout: 30s, next-upstream: \"error http_503\", next-upstream-tries: 2";
    let route = settings(&routes_of(&virtual_server(extra), &options, "VirtualServer/shop/v")[0]);
    assert_eq!(
        (route.upstream_idle_timeout_ms, route.idle_timeout_ms),
        (Some(120_000), Some(120_000))
    );
    let retry = route.retry.unwrap();
    assert_eq!((retry.retries, retry.status_codes), (1, [503].into()));
    let compiled = compile_yaml(&virtual_server(", read-timeout: soon"), &options);
    assert_invalid_naming(&compiled, ("VirtualServer", "shop", "v"), "read-timeout");
}

#[test]
fn enable_cors_puts_the_ingresss_cors_on_each_of_its_routed_rules() {
    let annotations = "    nginx.ingress.kubernetes.io/enable-cors: \"true\"\n    nginx.ingress.kubernetes.io/cors-allow-origin: \"https://app.example.com, https://*.example.org\"\n    nginx.ingress.kubernetes.io/cors-max-age: \"600\"\n";
    let compiled = compile_yaml(&api(annotations), &nginx_options());
    let rule = routed_rule(&compiled);
    let cors = rule
        .policy
        .as_ref()
        .and_then(|p| p.cors.clone())
        .expect("a CORS policy");
    assert_eq!(cors.allow_origin, ["https://app.example.com", "https://*.example.org"]);
    assert_eq!(cors.max_age, Some(600));
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        !format!("{status:?}").contains("cors"),
        "honoured, not reported: {status:?}"
    );
}

/// The CORS of the routed rule of Ingress shop/api and its route name, compiled on a gateway whose
/// routes are Switchyard's.
fn cors_and_route(annotations: &str) -> (std::sync::Arc<switchyard_table::Cors>, Option<String>) {
    let compiled = compile_with_gateway_routes(&api(annotations), &nginx_options());
    let policy = routed_rule(&compiled).policy.clone().expect("a policy");
    (policy.cors.clone().expect("a CORS policy"), policy.route.clone())
}

#[test]
fn cors_headers_the_same_for_every_response_are_added_by_the_gateways_route() {
    let every = "    nginx.ingress.kubernetes.io/enable-cors: \"true\"\n";
    let (cors, route) = cors_and_route(every);
    assert!(cors.by_route, "allow-origin `*`: the route adds them");
    let headers = cors.every_response_headers().expect("the same for every response");
    let digest = switchyard_compiler::route_config::headers_digest(&headers);
    assert_eq!(settings(&route).response_headers, Some(digest));
    // Other headers, another route; the timeouts and retries are the same.
    let credentials = format!("{every}    nginx.ingress.kubernetes.io/cors-allow-credentials: \"false\"\n");
    let (_, other) = cors_and_route(&credentials);
    assert_ne!(route, other);
    let without = |name: &Option<String>| RouteSettings {
        response_headers: None,
        ..settings(name)
    };
    assert_eq!(without(&route), without(&other));
    // An origin list: the answer echoes the request's `Origin`, so the filter adds them.
    let listed = format!("{every}    nginx.ingress.kubernetes.io/cors-allow-origin: \"https://app.example.com\"\n");
    let (cors, route) = cors_and_route(&listed);
    assert!(!cors.by_route);
    assert_eq!(settings(&route).response_headers, None);
    // Without the gateway's routes the filter adds them too.
    let compiled = compile_yaml(&api(every), &nginx_options());
    let cors = routed_rule(&compiled).policy.as_ref().and_then(|p| p.cors.clone());
    assert!(!cors.expect("a CORS policy").by_route);
}

#[test]
fn the_gateways_route_adds_the_cors_headers_in_place_of_the_backends() {
    let annotations = "    nginx.ingress.kubernetes.io/enable-cors: \"true\"\n    nginx.ingress.kubernetes.io/cors-max-age: \"600\"\n";
    let compiled = compile_with_gateway_routes(&api(annotations), &nginx_options());
    let name = routed_rule(&compiled).policy.as_ref().and_then(|p| p.route.clone());
    let routes = switchyard_compiler::route_config::GatewayRoutes::of(&compiled.table).routes();
    let route = (routes.iter())
        .find(|route| route["name"].as_str() == name.as_deref())
        .expect("the rule's route");
    let added: Vec<(String, String, String)> = (route["response_headers_to_add"].as_array().expect("headers added"))
        .iter()
        .map(|option| {
            let header = &option["header"];
            let text = |value: &serde_json::Value| value.as_str().unwrap_or_default().to_owned();
            (
                text(&header["key"]),
                text(&header["value"]),
                text(&option["append_action"]),
            )
        })
        .collect();
    let replace = "OVERWRITE_IF_EXISTS_OR_ADD";
    let owned = |(name, value, action): (&str, &str, &str)| (name.to_owned(), value.to_owned(), action.to_owned());
    assert_eq!(
        added,
        [
            ("access-control-allow-origin", "*", replace),
            ("access-control-allow-credentials", "true", replace),
            ("access-control-allow-methods", "GET, PUT, POST, DELETE, PATCH, OPTIONS", replace),
            ("access-control-allow-headers", "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization", replace),
            ("access-control-max-age", "600", replace),
        ]
        .map(owned)
    );
    let others = routes.iter().filter(|route| route["name"].as_str() != name.as_deref());
    assert!(others
        .into_iter()
        .all(|route| route.get("response_headers_to_add").is_none()));
}

#[test]
fn an_ingress_nginx_source_range_is_the_rules_policy_and_denies_nothing_else() {
    let annotation = "    nginx.ingress.kubernetes.io/whitelist-source-range: \"10.0.0.0/8, 192.168.1.7\"\n";
    let compiled = compile_yaml(&api(annotation), &nginx_options());
    let rule = routed_rule(&compiled);
    let policy = rule.policy.as_deref().unwrap();
    let allow: Vec<String> = policy
        .allow
        .iter()
        .map(|r| format!("{}/{}", r.network, r.prefix))
        .collect();
    assert_eq!(allow, ["10.0.0.0/8", "192.168.1.7/32"]);
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        !format!("{status:?}").contains("AccessControlNotEnforced"),
        "{status:?}"
    );
}

#[test]
fn a_source_range_on_an_ingress_of_switchyards_own_semantics_still_denies() {
    let yaml = api("    nginx.ingress.kubernetes.io/whitelist-source-range: 10.0.0.0/8\n")
        .replace("  ingressClassName: nginx\n", "");
    let compiled = compile_yaml(&yaml, &switchyard_compiler::Options::default());
    let rule = (compiled.table.rules.iter())
        .find(|r| r.name.starts_with("Ingress/shop/api"))
        .unwrap();
    assert!(
        matches!(&rule.action, ActionSpec::DirectResponse(d) if d.status == 403),
        "{rule:?}"
    );
}

#[test]
fn limit_rps_is_the_ingresss_rate_limit_answered_with_the_configmaps_status() {
    let annotations = "    nginx.ingress.kubernetes.io/limit-rps: \"5\"\n    nginx.ingress.kubernetes.io/limit-whitelist: 10.0.0.0/8\n";
    let mut options = nginx_options();
    let data = [("limit-req-status-code".to_owned(), "429".to_owned())]
        .into_iter()
        .collect();
    options.ingress_nginx_config = ControllerConfig::from_data(&data);
    let compiled = compile_yaml(&api(annotations), &options);
    let rule = routed_rule(&compiled);
    let limit = rule
        .policy
        .as_ref()
        .and_then(|p| p.rate_limit.clone())
        .expect("a rate limit");
    assert_eq!((limit.zone.as_str(), limit.status), ("shop/api", 429));
    assert_eq!(limit.per_second.map(|r| (r.requests, r.burst)), Some((5, 25)));
    assert_eq!(limit.exempt.len(), 1);
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(!format!("{status:?}").contains("limit-rps"), "honoured: {status:?}");
}

#[test]
fn an_httpproxy_local_rate_limit_is_shared_by_the_hosts_routes_unless_a_route_has_its_own() {
    let options = switchyard_compiler::Options::default();
    let yaml = httpproxy(" [{name: api, port: 80}]\n", "  - conditions: [{prefix: /own}]\n    services: [{name: api, port: 80}]\n    rateLimitPolicy: {local: {requests: 2, unit: second}}\n")
        .replace(
            "virtualhost: {fqdn: p.example.com}",
            "virtualhost:\n    fqdn: p.example.com\n    rateLimitPolicy: {local: {requests: 100, unit: minute, burst: 20}}",
        );
    let compiled = compile_yaml(&yaml, &options);
    let limits: Vec<switchyard_table::RateLimit> = (compiled.table.rules.iter())
        .filter(|r| r.name.starts_with("HTTPProxy/shop/p") && matches!(r.action, ActionSpec::Route(_)))
        .filter_map(|r| r.policy.as_ref()?.rate_limit.clone())
        .collect();
    assert_eq!(limits.len(), 2, "{:?}", compiled.statuses);
    let host = limits
        .iter()
        .find(|l| l.zone.ends_with("/virtualhost"))
        .expect("the host's bucket");
    assert_eq!(host.per_minute.map(|r| (r.requests, r.burst)), Some((100, 119)));
    assert!(!host.per_client);
    assert_eq!(host.status, 429);
    let own = limits
        .iter()
        .find(|l| l.zone.ends_with("spec.routes[1]"))
        .expect("the route's own");
    assert_eq!(own.per_second.map(|r| r.requests), Some(2));
}

#[test]
fn an_invalid_local_rate_limit_skips_its_route_or_its_whole_proxy() {
    let options = switchyard_compiler::Options::default();
    let compiled = compile_yaml(
        &proxy("    rateLimitPolicy: {local: {requests: 0, unit: second}}\n"),
        &options,
    );
    let status = status_of(&compiled, "HTTPProxy", "shop", "p");
    assert!(
        message(status, Reason::RateLimitPolicyNotValid).contains("requests"),
        "{status:?}"
    );
    let yaml = proxy("").replace(
        "virtualhost: {fqdn: p.example.com}",
        "virtualhost:\n    fqdn: p.example.com\n    rateLimitPolicy: {local: {requests: 1, unit: fortnight}}",
    );
    let compiled = compile_yaml(&yaml, &options);
    assert!(!compiled
        .table
        .rules
        .iter()
        .any(|r| r.name.starts_with("HTTPProxy/shop/p")));
}

/// The options of a gateway whose clusters come from the sidecar (`--clusters-dir`), with
/// ingress-nginx's ConfigMap `data`.
fn with_clusters(data: &[(&str, &str)]) -> switchyard_compiler::Options {
    let mut options = nginx_options();
    options.upstream_variants = true;
    let data = data.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    options.ingress_nginx_config = ControllerConfig::from_data(&data);
    options
}

/// The auth URL of Ingress shop/api's routed rule, if it asks a service.
fn auth_url(compiled: &switchyard_compiler::Compiled) -> Option<String> {
    let policy = routed_rule(compiled).policy.as_deref()?;
    policy.external_auth.as_ref().map(|auth| auth.url.clone())
}

#[test]
fn the_configmaps_global_auth_url_asks_its_service_unless_the_ingress_has_its_own_or_turns_it_off() {
    let options = with_clusters(&[
        ("global-auth-url", "http://auth.global/check"),
        ("global-auth-method", "GET"),
    ]);
    let compiled = compile_yaml(&api(""), &options);
    assert_eq!(auth_url(&compiled).as_deref(), Some("http://auth.global/check"));
    let method = routed_rule(&compiled)
        .policy
        .as_deref()
        .and_then(|p| p.external_auth.clone());
    assert_eq!(
        method.and_then(|a| a.method.clone()).as_deref(),
        Some("GET"),
        "global-auth-method"
    );
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        !format!("{status:?}").contains("AccessControlNotEnforced"),
        "{status:?}"
    );
    let own = api("    nginx.ingress.kubernetes.io/auth-url: http://own.auth/check\n");
    assert_eq!(
        auth_url(&compile_yaml(&own, &options)).as_deref(),
        Some("http://own.auth/check")
    );
    let off = api("    nginx.ingress.kubernetes.io/enable-global-auth: \"false\"\n");
    assert_eq!(auth_url(&compile_yaml(&off, &options)), None);
}

#[test]
fn an_unusable_global_auth_url_denies_every_ingress_it_covers() {
    let options = with_clusters(&[("global-auth-url", "auth.global/check")]);
    let compiled = compile_yaml(&api(""), &options);
    let rule = routed_rule_or_denied(&compiled);
    assert!(
        matches!(&rule.action, ActionSpec::DirectResponse(d) if d.status == 403),
        "{rule:?}"
    );
    let status = status_of(&compiled, "Ingress", "shop", "api");
    assert!(
        message(status, Reason::AccessControlNotEnforced).contains("no scheme"),
        "{status:?}"
    );
}

#[test]
fn no_auth_locations_are_authenticated_by_nothing() {
    let yaml = api("    nginx.ingress.kubernetes.io/auth-url: http://own.auth/check\n").replace(
        "      - {path: /, pathType: Prefix",
        "      - {path: /.well-known/acme-challenge/x, pathType: Prefix, backend: {service: {name: api, port: {number: 80}}}}\n      - {path: /, pathType: Prefix",
    );
    let compiled = compile_yaml(&yaml, &with_clusters(&[]));
    let asks = |path: &str| {
        let rule = (compiled.table.rules.iter())
            .find(|r| matches!(&r.path, switchyard_table::PathSpec::SegmentPrefix(p) if p == path))
            .unwrap_or_else(|| panic!("a rule for {path}: {:?}", compiled.table.rules));
        rule.policy.as_deref().is_some_and(|p| p.external_auth.is_some())
    };
    assert!(asks("/"));
    assert!(
        !asks("/.well-known/acme-challenge/x"),
        "the ConfigMap's default no-auth-locations"
    );
}

/// The first rule of Ingress shop/api, routed or denied.
fn routed_rule_or_denied(compiled: &switchyard_compiler::Compiled) -> &switchyard_table::RuleSpec {
    (compiled.table.rules.iter())
        .find(|r| r.name.starts_with("Ingress/shop/api"))
        .expect("a rule of Ingress shop/api")
}

/// `shop/p` for `p.example.com` with the virtual host's `corsPolicy` (YAML flow), routing `/` and
/// including `shop/child`, which routes `/child`.
fn proxy_with_cors(cors: &str) -> String {
    let root = httpproxy(
        " [{name: api, port: 80}]\n",
        "  includes: [{name: child, conditions: [{prefix: /child}]}]\n",
    )
    .replace(
        "virtualhost: {fqdn: p.example.com}",
        &format!("virtualhost:\n    fqdn: p.example.com\n    corsPolicy: {cors}"),
    );
    let child = "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: child, namespace: shop}\nspec:\n  routes:\n  - services: [{name: api, port: 80}]\n---\n";
    format!("{root}{child}")
}

#[test]
fn an_httpproxy_cors_policy_is_envoys_on_every_route_of_its_host_includes_too() {
    let cors = "{allowOrigin: ['https://app.example.com', 'https://.*\\.example\\.org'], allowMethods: [GET, PUT], allowHeaders: [x-a], maxAge: 10m, allowCredentials: true}";
    let compiled = compile_yaml(&proxy_with_cors(cors), &switchyard_compiler::Options::default());
    let routed: Vec<&switchyard_table::RuleSpec> = (compiled.table.rules.iter())
        .filter(|r| r.host.as_deref() == Some("p.example.com") && matches!(r.action, ActionSpec::Route(_)))
        .collect();
    assert_eq!(routed.len(), 2, "{:?}", compiled.statuses);
    for rule in routed {
        let cors = rule
            .policy
            .as_ref()
            .and_then(|p| p.cors.clone())
            .expect("the host's CORS");
        assert_eq!(cors.semantics, switchyard_table::CorsSemantics::Envoy);
        assert_eq!(cors.allow_origin, ["https://app.example.com"]);
        assert_eq!(cors.allow_origin_regex[0].as_str(), r"https://.*\.example\.org");
        assert_eq!((cors.allow_methods.as_str(), cors.max_age), ("GET,PUT", Some(600)));
    }
    let status = status_of(&compiled, "HTTPProxy", "shop", "p");
    assert_eq!(status.status, switchyard_compiler::status::Status::Valid, "{status:?}");
}

#[test]
fn an_invalid_httpproxy_cors_policy_makes_the_proxy_invalid_and_route_nothing() {
    for (cors, field) in [
        ("{allowOrigin: [], allowMethods: [GET]}", "allowOrigin"),
        ("{allowOrigin: ['*'], allowMethods: [GET], maxAge: -1s}", "maxAge"),
    ] {
        let compiled = compile_yaml(&proxy_with_cors(cors), &switchyard_compiler::Options::default());
        let status = status_of(&compiled, "HTTPProxy", "shop", "p");
        assert!(message(status, Reason::PolicyDidNotParse).contains(field), "{status:?}");
        assert_invalid_naming(&compiled, ("HTTPProxy", "shop", "p"), "corsPolicy");
        assert!(!compiled
            .table
            .rules
            .iter()
            .any(|r| r.host.as_deref() == Some("p.example.com")));
    }
}

#[test]
fn an_httpproxys_remote_ip_filter_is_its_routes_address_ranges_and_a_peer_one_still_denies() {
    let remote = httpproxy(" [{name: api, port: 80}]\n", "").replace(
        "virtualhost: {fqdn: p.example.com}",
        "virtualhost: {fqdn: p.example.com, ipAllowPolicy: [{cidr: 10.0.0.0/8, source: Remote}]}",
    );
    let compiled = compile_yaml(&remote, &switchyard_compiler::Options::default());
    let rule = (compiled.table.rules.iter())
        .find(|r| r.name.starts_with("HTTPProxy/shop/p"))
        .unwrap();
    let allow: Vec<String> = (rule.policy.as_deref().unwrap().allow.iter())
        .map(|r| format!("{}/{}", r.network, r.prefix))
        .collect();
    assert_eq!(allow, ["10.0.0.0/8"], "{rule:?}");
    assert!(matches!(rule.action, ActionSpec::Route(_)), "{rule:?}");
    let peer = remote.replace("source: Remote", "source: Peer");
    let compiled = compile_yaml(&peer, &switchyard_compiler::Options::default());
    let rule = (compiled.table.rules.iter())
        .find(|r| r.name.starts_with("HTTPProxy/shop/p"))
        .unwrap();
    assert!(
        matches!(&rule.action, ActionSpec::DirectResponse(d) if d.status == 403),
        "{rule:?}"
    );
    let status = status_of(&compiled, "HTTPProxy", "shop", "p");
    assert!(
        message(status, Reason::AccessControlNotEnforced).contains("source Peer"),
        "{status:?}"
    );
}
