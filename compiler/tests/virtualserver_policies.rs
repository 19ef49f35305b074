//! NGINX's Policy resource referenced from a VirtualServer (`spec.policies`, a route's `policies`)
//! and a VirtualServerRoute's subroutes, as NGINX Ingress Controller applies it
//! (`internal/configs/policy.go`): `accessControl`, `rateLimit` and `basicAuth` enforced through the
//! rules' table policy (docs/routing.md, "Policies beyond the route"); every other kind, a missing
//! or an invalid Policy denies as ROUTING.md §9 says.

mod common;

use common::{compile_default, direct_status, get, has_reason, message, status_of};
use switchyard_compiler::status::Reason;
use switchyard_compiler::Compiled;
use switchyard_table::{ActionSpec, IpRange, Policy};

/// A Policy `name` in `default` whose spec is `spec` (YAML under `spec:`, indented by two).
fn policy(name: &str, spec: &str) -> String {
    format!("apiVersion: k8s.nginx.org/v1\nkind: Policy\nmetadata: {{name: {name}, namespace: default}}\nspec:\n{spec}---\n")
}

/// VirtualServer default/shop on shop.example with `policies` (a YAML flow list) on the server
/// and `route` on its route `/admin` (`/` has none).
fn shop(spec_policies: &str, route_policies: &str) -> String {
    format!(
        "apiVersion: k8s.nginx.org/v1\nkind: VirtualServer\nmetadata: {{name: shop, namespace: default}}\nspec:\n  host: shop.example\n  policies: {spec_policies}\n  upstreams:\n  - {{name: web, service: web, port: 80}}\n  routes:\n  - path: /\n    action: {{pass: web}}\n  - path: /admin\n    action: {{pass: web}}\n    policies: {route_policies}\n---\n"
    )
}

const ALLOW_OFFICE: &str = "  accessControl:\n    allow: [10.0.0.0/8, 192.168.1.1]\n";
const DENY_BAD: &str = "  accessControl:\n    deny: [203.0.113.0/24]\n";
const RATE: &str = "  rateLimit:\n    rate: 10r/s\n    key: ${binary_remote_addr}\n    zoneSize: 10M\n    burst: 5\n    rejectCode: 429\n";

/// An htpasswd Secret default/users (`foo`, a bcrypt hash) of `type_`.
fn users(type_: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: users, namespace: default}}\ntype: {type_}\nstringData:\n  htpasswd: |\n    foo:$2y$05$abcdefghijklmnopqrstuuUq7qXkDOZJ5Q8HA9wCOH0FErWp6q0b6\n---\n"
    )
}

const BASIC: &str = "  basicAuth:\n    secret: users\n    realm: Staff only\n";

/// The table policy of the rule of VirtualServer default/shop that serves `path`.
fn policy_at<'c>(compiled: &'c Compiled, path: &str) -> Option<&'c Policy> {
    let rule = (compiled.table.rules.iter())
        .filter(|r| r.name.starts_with("VirtualServer/default/shop#") && matches!(r.action, ActionSpec::Route(_)))
        .find(|r| match &r.path {
            switchyard_table::PathSpec::Prefix(p) => p == path,
            _ => false,
        })
        .expect("a routed rule");
    rule.policy.as_deref()
}

fn ranges(texts: &[&str]) -> Vec<IpRange> {
    texts.iter().map(|t| IpRange::parse(t).unwrap()).collect()
}

#[test]
fn an_access_control_policy_allows_only_its_ranges() {
    let yaml = policy("office", ALLOW_OFFICE) + &shop("[{name: office}]", "[]");
    let compiled = compile_default(&yaml);
    let policy = policy_at(&compiled, "/").unwrap();
    assert_eq!(policy.allow, ranges(&["10.0.0.0/8", "192.168.1.1"]));
    assert!(policy.deny.is_empty());
    let status = status_of(&compiled, "VirtualServer", "default", "shop");
    assert!(!has_reason(status, Reason::AccessControlNotEnforced), "{status:?}");
    assert_eq!(
        direct_status(&compiled, &get("http://shop.example/")),
        None,
        "routed, not a 403"
    );
}

#[test]
fn a_deny_policy_denies_its_ranges_and_allows_the_rest() {
    let compiled = compile_default(&(policy("bad", DENY_BAD) + &shop("[{name: bad}]", "[]")));
    let policy = policy_at(&compiled, "/").unwrap();
    assert_eq!(policy.deny, ranges(&["203.0.113.0/24"]));
    assert!(policy.allow.is_empty());
}

#[test]
fn allow_ranges_override_deny_ranges_of_one_list_with_nginxs_warning() {
    let yaml = policy("office", ALLOW_OFFICE) + &policy("bad", DENY_BAD) + &shop("[{name: bad}, {name: office}]", "[]");
    let compiled = compile_default(&yaml);
    let policy = policy_at(&compiled, "/").unwrap();
    assert_eq!(policy.allow, ranges(&["10.0.0.0/8", "192.168.1.1"]));
    assert!(
        policy.deny.is_empty(),
        "nginx's `deny all` after the allow lines decides"
    );
    let status = status_of(&compiled, "VirtualServer", "default", "shop");
    assert!(message(status, Reason::PolicyOverridden).contains("overridden by policy (or policies) with allow rules"));
}

#[test]
fn a_routes_own_policy_of_a_kind_replaces_the_servers_and_inherits_the_other_kinds() {
    let yaml = policy("office", ALLOW_OFFICE)
        + &policy("bad", DENY_BAD)
        + &policy("rate", RATE)
        + &shop("[{name: office}, {name: rate}]", "[{name: bad}]");
    let compiled = compile_default(&yaml);
    let root = policy_at(&compiled, "/").unwrap();
    assert_eq!(root.allow.len(), 2);
    let admin = policy_at(&compiled, "/admin").unwrap();
    assert!(
        admin.allow.is_empty(),
        "the route's accessControl replaces the server's"
    );
    assert_eq!(admin.deny, ranges(&["203.0.113.0/24"]));
    assert_eq!(
        admin.rate_limit, root.rate_limit,
        "the server's rate limit is inherited"
    );
}

#[test]
fn a_rate_limit_policy_limits_each_client_with_its_burst_and_reject_code() {
    let compiled = compile_default(&(policy("rate", RATE) + &shop("[{name: rate}]", "[]")));
    let limit = policy_at(&compiled, "/").unwrap().rate_limit.clone().unwrap();
    assert!(limit.per_client);
    assert_eq!(limit.per_second.map(|r| (r.requests, r.burst)), Some((10, 5)));
    assert_eq!(limit.per_minute, None);
    assert_eq!(limit.status, 429);
    assert_eq!(limit.zone, "default/rate@VirtualServer/default/shop");
}

#[test]
fn a_rate_limit_keyed_otherwise_is_not_applied_and_says_so() {
    let spec = "  rateLimit:\n    rate: 30r/m\n    key: ${request_uri}\n    zoneSize: 10M\n";
    let compiled = compile_default(&(policy("rate", spec) + &shop("[{name: rate}]", "[]")));
    assert_eq!(policy_at(&compiled, "/").unwrap().rate_limit, None);
    let status = status_of(&compiled, "VirtualServer", "default", "shop");
    assert!(message(status, Reason::PolicySettingNotHonored).contains("${request_uri}"));
    assert!(
        !has_reason(status, Reason::AccessControlNotEnforced),
        "a rate limit is no access control"
    );
}

#[test]
fn a_basic_auth_policy_takes_its_users_from_an_htpasswd_secret() {
    let yaml = users("nginx.org/htpasswd") + &policy("staff", BASIC) + &shop("[]", "[{name: staff}]");
    let compiled = compile_default(&yaml);
    assert!(policy_at(&compiled, "/").unwrap().basic_auth.is_none());
    let auth = policy_at(&compiled, "/admin").unwrap().basic_auth.clone().unwrap();
    assert_eq!(auth.realm, "Staff only");
    assert_eq!(auth.source, "Secret default/users");
    assert_eq!(auth.users.len(), 1);
    let status = status_of(&compiled, "VirtualServer", "default", "shop");
    assert!(!has_reason(status, Reason::AccessControlNotEnforced), "{status:?}");
}

#[test]
fn a_basic_auth_secret_of_another_type_denies_naming_why() {
    let yaml = users("Opaque") + &policy("staff", BASIC) + &shop("[]", "[{name: staff}]");
    let compiled = compile_default(&yaml);
    assert_eq!(direct_status(&compiled, &get("http://shop.example/admin")), Some(403));
    let status = status_of(&compiled, "VirtualServer", "default", "shop");
    assert!(message(status, Reason::AccessControlNotEnforced).contains("not \"nginx.org/htpasswd\""));
}

#[test]
fn a_second_basic_auth_policy_of_a_list_is_ignored_with_nginxs_warning() {
    let yaml = users("nginx.org/htpasswd")
        + &policy("staff", BASIC)
        + &policy("other", "  basicAuth:\n    secret: missing\n")
        + &shop("[{name: staff}, {name: other}]", "[]");
    let compiled = compile_default(&yaml);
    assert_eq!(
        policy_at(&compiled, "/").unwrap().basic_auth.as_ref().unwrap().source,
        "Secret default/users"
    );
    let status = status_of(&compiled, "VirtualServer", "default", "shop");
    assert!(message(status, Reason::PolicyIgnored).contains("Basic auth policy Policy default/other will be ignored"));
}

#[test]
fn a_missing_invalid_or_unenforced_policy_still_denies_naming_why() {
    let jwt = "  jwt:\n    realm: api\n    secret: jwk\n";
    let both = "  accessControl:\n    allow: [10.0.0.0/8]\n    deny: [10.1.0.0/16]\n";
    for (policies, why) in [
        ("[{name: nowhere}]", "Policy default/nowhere does not exist"),
        (
            "[{name: jwt}]",
            "Policy default/jwt is a jwt policy, which this gateway does not enforce",
        ),
        ("[{name: both}]", "exactly one of: `allow` or `deny`"),
    ] {
        let yaml = policy("jwt", jwt) + &policy("both", both) + &shop(policies, "[]");
        let compiled = compile_default(&yaml);
        assert_eq!(
            direct_status(&compiled, &get("http://shop.example/")),
            Some(403),
            "{policies}"
        );
        let status = status_of(&compiled, "VirtualServer", "default", "shop");
        assert!(
            message(status, Reason::AccessControlNotEnforced).contains(why),
            "{status:?}"
        );
    }
}

#[test]
fn a_subroute_without_policies_takes_the_referencing_routes() {
    let yaml = policy("office", ALLOW_OFFICE)
        + "apiVersion: k8s.nginx.org/v1\nkind: VirtualServer\nmetadata: {name: shop, namespace: default}\nspec:\n  host: shop.example\n  upstreams:\n  - {name: web, service: web, port: 80}\n  routes:\n  - path: /\n    action: {pass: web}\n  - path: /api\n    route: api\n    policies: [{name: office}]\n---\n"
        + "apiVersion: k8s.nginx.org/v1\nkind: VirtualServerRoute\nmetadata: {name: api, namespace: default}\nspec:\n  host: shop.example\n  upstreams:\n  - {name: api, service: api, port: 80}\n  subroutes:\n  - path: /api/v1\n    action: {pass: api}\n  - path: /api/v2\n    action: {pass: api}\n    policies: [{name: nowhere}]\n---\n";
    let compiled = compile_default(&yaml);
    let rule = |name: &str| compiled.table.rules.iter().find(|r| r.name == name).unwrap();
    let v1 = rule("VirtualServerRoute/default/api#0");
    assert_eq!(v1.policy.as_deref().unwrap().allow.len(), 2);
    assert_eq!(direct_status(&compiled, &get("http://shop.example/api/v2")), Some(403));
    let status = status_of(&compiled, "VirtualServerRoute", "default", "api");
    assert!(message(status, Reason::AccessControlNotEnforced).contains("Policy default/nowhere does not exist"));
    assert!(rule("VirtualServer/default/shop#0")
        .policy
        .as_deref()
        .unwrap()
        .allow
        .is_empty());
}
