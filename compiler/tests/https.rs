//! ROUTING.md §8 (HTTPS): which certificate each host is served with, per kind, what is said about
//! the Secrets, and what HTTPS changes in routing (the redirects, the hosts served on one port only).
//! Certificates are made here with rcgen; requests are routed by the filter's own matcher.

mod common;

use common::*;
use switchyard_compiler::https::{self, Https, LastServed, SecretRef, Served, TlsRange, TlsVersion};
use switchyard_compiler::status::{Reason, Status};
use switchyard_compiler::{Compiled, Options};
use switchyard_table::SimpleRequest;

/// The clock of these tests (2027-01-15), and a year.
const NOW: i64 = 1_800_000_000;
const DAY: i64 = 86_400;

/// A self-signed certificate for `names`, ending at `not_after`: (chain PEM, key PEM).
fn certificate(names: &[&str], not_after: i64) -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = time::OffsetDateTime::from_unix_timestamp(not_after).unwrap();
    (params.self_signed(&key).unwrap().pem(), key.serialize_pem())
}

/// A Secret manifest of `type_` holding `chain` and `key`.
fn secret_of(namespace: &str, name: &str, type_: &str, (chain, key): (String, String)) -> String {
    let indent = |pem: &str| pem.lines().map(|l| format!("    {l}\n")).collect::<String>();
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {namespace}\ntype: {type_}\nstringData:\n  tls.crt: |\n{}  tls.key: |\n{}---\n",
        indent(&chain),
        indent(&key)
    )
}

/// A `kubernetes.io/tls` Secret for `names`, valid for a year.
fn tls_secret(namespace: &str, name: &str, names: &[&str]) -> String {
    secret_of(
        namespace,
        name,
        "kubernetes.io/tls",
        certificate(names, NOW + 365 * DAY),
    )
}

/// An Ingress with one rule per host (path `/`, Service `web`), `tls` entries as YAML and annotations.
fn ingress(name: &str, created: &str, hosts: &[&str], tls: &str, annotations: &str) -> String {
    let rules: String = hosts
        .iter()
        .map(|h| format!("    - host: \"{h}\"\n      http:\n        paths:\n          - path: /\n            pathType: Prefix\n            backend:\n              service:\n                name: web\n                port:\n                  number: 80\n"))
        .collect();
    let annotations = if annotations.is_empty() {
        String::new()
    } else {
        format!("  annotations:\n{annotations}")
    };
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: {name}\n  namespace: default\n  creationTimestamp: \"{created}\"\n{annotations}spec:\n  tls:\n{tls}  rules:\n{rules}---\n"
    )
}

/// Compiles and plans HTTPS, the findings added to the statuses.
fn plan_with(yaml: &str, options: &Options) -> (Compiled, Https) {
    plan_after(yaml, options, &LastServed::default())
}

/// [`plan_with`], after a plan that served `previous`.
fn plan_after(yaml: &str, options: &Options, previous: &LastServed) -> (Compiled, Https) {
    let loaded = load(yaml);
    let mut compiled = switchyard_compiler::compile(&loaded.objects, options).unwrap();
    let https = https::plan(
        &loaded.objects,
        &compiled.table,
        &compiled.statuses,
        (NOW, options),
        previous,
    );
    https.annotate(&mut compiled.statuses);
    (compiled, https)
}

fn plan(yaml: &str) -> (Compiled, Https) {
    plan_with(yaml, &Options::default())
}

/// The Secret a host is served with (`None`: the default certificate).
fn served(https: &Https, host: &str) -> Option<String> {
    match https.hosts.iter().find(|h| h.host == host).map(|h| &h.served) {
        Some(Served::Secret { secret, .. }) => Some(secret.to_string()),
        Some(Served::Refused) => Some("refused".to_owned()),
        Some(Served::Default) | None => None,
    }
}

fn http(url: &str) -> SimpleRequest {
    get(url).header(":scheme", "http")
}

fn https_request(url: &str) -> SimpleRequest {
    get(url).header(":scheme", "https")
}

/// What a request gets: the cluster, or the local status with its `Location`.
fn answer(compiled: &Compiled, request: &SimpleRequest) -> String {
    let table = table(compiled);
    let Some(decision) = table.route(request, 0) else {
        return "404".to_owned();
    };
    match decision.rule.action() {
        switchyard_table::ActionSpec::Route(_) => decision.backend.map(|b| b.cluster.clone()).unwrap_or_default(),
        switchyard_table::ActionSpec::Redirect(r) => format!("{} {}", r.status, r.url),
        switchyard_table::ActionSpec::DirectResponse(d) => d.status.to_string(),
    }
}

const ENTRY_A: &str = "    - hosts: [a.example.com]\n      secretName: a-tls\n";

/// `secret` (YAML) and the Ingress `default/web` routing `a.example.com` with [`ENTRY_A`].
fn web_with(secret: &str) -> String {
    format!(
        "{secret}{}",
        ingress("web", "2024-01-01T00:00:00Z", &["a.example.com"], ENTRY_A, "")
    )
}

/// The status of the Ingress `default/web` has a condition of `reason`.
fn web_has(compiled: &Compiled, reason: Reason) -> bool {
    has_reason(status_of(compiled, "Ingress", "default", "web"), reason)
}

// §8.1.1

#[test]
fn sni_selects_its_own_host_then_a_wildcard_one_label_above_then_the_default() {
    let yaml = format!(
        "{}{}{}",
        tls_secret("default", "a-tls", &["a.example.com"]),
        tls_secret("default", "star-tls", &["*.example.com"]),
        ingress(
            "web",
            "2024-01-01T00:00:00Z",
            &["a.example.com", "*.example.com"],
            "    - hosts: [a.example.com]\n      secretName: a-tls\n    - hosts: [\"*.example.com\"]\n      secretName: star-tls\n",
            ""
        )
    );
    let (_, https) = plan(&yaml);
    let chosen = |sni: &str| https.select(sni).map(|h| served(&https, &h.host));
    assert_eq!(chosen("a.example.com"), Some(Some("default/a-tls".into())));
    assert_eq!(chosen("B.example.com"), Some(Some("default/star-tls".into())));
    assert_eq!(chosen("x.b.example.com"), None, "one label only");
    assert_eq!(chosen("other.org"), None);
}

// §8.2

#[test]
fn a_secret_whose_key_is_not_its_leafs_is_not_served_and_its_ingress_is_told() {
    let (chain, _) = certificate(&["a.example.com"], NOW + 365 * DAY);
    let (_, other_key) = certificate(&["a.example.com"], NOW + 365 * DAY);
    let (compiled, https) = plan(&web_with(&secret_of(
        "default",
        "a-tls",
        "kubernetes.io/tls",
        (chain, other_key),
    )));
    assert_eq!(served(&https, "a.example.com"), None, "the default certificate");
    let status = status_of(&compiled, "Ingress", "default", "web");
    assert!(message(status, Reason::TLSSecretNotValid).contains("is not the key of the leaf certificate"));
    assert_eq!(status.status, Status::Accepted, "it still routes");
}

#[test]
fn a_missing_secret_is_said_and_the_host_gets_the_default() {
    let (compiled, https) = plan(&web_with(""));
    assert_eq!(served(&https, "a.example.com"), None);
    let status = status_of(&compiled, "Ingress", "default", "web");
    assert!(message(status, Reason::TLSSecretNotValid).contains("default/a-tls"));
}

/// A `kubernetes.io/tls` Secret `default/a-tls` for `a.example.com` ending at `not_after`.
fn a_tls_ending(not_after: i64) -> String {
    secret_of(
        "default",
        "a-tls",
        "kubernetes.io/tls",
        certificate(&["a.example.com"], not_after),
    )
}

#[test]
fn an_expired_certificate_is_served_and_reported_expired() {
    let (compiled, https) = plan(&web_with(&a_tls_ending(NOW - DAY)));
    assert_eq!(served(&https, "a.example.com").as_deref(), Some("default/a-tls"));
    assert!(web_has(&compiled, Reason::CertificateExpired));
}

#[test]
fn a_certificate_ending_within_ten_days_is_reported_expiring_soon() {
    let (compiled, _) = plan(&web_with(&a_tls_ending(NOW + 5 * DAY)));
    let status = status_of(&compiled, "Ingress", "default", "web");
    assert!(message(status, Reason::CertificateExpiresSoon).contains("ends in 5 day(s)"));
    let (later, _) = plan(&web_with(&a_tls_ending(NOW + 11 * DAY)));
    assert!(!web_has(&later, Reason::CertificateExpiresSoon));
}

#[test]
fn a_leaf_not_naming_its_host_is_served_with_a_mismatch_warning() {
    let (compiled, https) = plan(&web_with(&tls_secret("default", "a-tls", &["other.example.com"])));
    assert_eq!(served(&https, "a.example.com").as_deref(), Some("default/a-tls"));
    assert!(web_has(&compiled, Reason::CertificateHostMismatch));
}

#[test]
fn an_opaque_secret_serves_an_ingress_but_not_a_virtualserver() {
    let pair = certificate(&["a.example.com", "v.example.com"], NOW + 365 * DAY);
    let yaml = format!(
        "{}{}apiVersion: k8s.nginx.org/v1\nkind: VirtualServer\nmetadata:\n  name: v\n  namespace: default\nspec:\n  host: v.example.com\n  tls:\n    secret: opaque\n  upstreams:\n    - name: web\n      service: web\n      port: 80\n  routes:\n    - path: /\n      action:\n        pass: web\n",
        secret_of("default", "opaque", "Opaque", pair),
        ingress("web", "2024-01-01T00:00:00Z", &["a.example.com"], "    - hosts: [a.example.com]\n      secretName: opaque\n", "")
    );
    let (compiled, https) = plan(&yaml);
    assert_eq!(served(&https, "a.example.com").as_deref(), Some("default/opaque"));
    assert_eq!(served(&https, "v.example.com").as_deref(), Some("refused"));
    let vs = status_of(&compiled, "VirtualServer", "default", "v");
    assert!(message(vs, Reason::TLSSecretNotValid).contains("its type is Opaque, not kubernetes.io/tls"));
}

// §8.3

#[test]
fn an_ingress_tls_entry_applies_to_the_rule_hosts_it_lists_and_one_label_under_a_listed_wildcard() {
    let yaml = format!(
        "{}{}",
        tls_secret("default", "star", &["*.example.com"]),
        ingress(
            "web",
            "2024-01-01T00:00:00Z",
            &["a.example.com", "b.c.example.com", "other.org"],
            "    - hosts: [\"*.example.com\"]\n      secretName: star\n",
            ""
        )
    );
    let (_, https) = plan(&yaml);
    assert_eq!(served(&https, "a.example.com").as_deref(), Some("default/star"));
    assert_eq!(served(&https, "b.c.example.com"), None);
    assert_eq!(served(&https, "other.org"), None);
}

#[test]
fn an_entry_without_hosts_applies_to_the_rule_hosts_its_certificate_covers() {
    let yaml = format!(
        "{}{}",
        tls_secret("default", "a-tls", &["a.example.com"]),
        ingress(
            "web",
            "2024-01-01T00:00:00Z",
            &["a.example.com", "b.example.com"],
            "    - secretName: a-tls\n",
            ""
        )
    );
    let (_, https) = plan(&yaml);
    assert_eq!(served(&https, "a.example.com").as_deref(), Some("default/a-tls"));
    assert_eq!(served(&https, "b.example.com"), None);
}

#[test]
fn an_entry_without_a_secret_name_serves_its_hosts_the_default_and_says_nothing() {
    let (compiled, https) = plan(&ingress(
        "web",
        "2024-01-01T00:00:00Z",
        &["a.example.com"],
        "    - hosts: [a.example.com]\n",
        "",
    ));
    assert_eq!(served(&https, "a.example.com"), None);
    let status = status_of(&compiled, "Ingress", "default", "web");
    assert!(
        status.conditions.iter().all(|c| !c.reason.as_str().starts_with("TLS")),
        "{status:?}"
    );
}

#[test]
fn every_rule_host_and_the_catch_all_of_an_ingress_are_served_on_https() {
    let catch_all = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: all, namespace: default}\nspec:\n  defaultBackend: {service: {name: fallback, port: {number: 80}}}\n";
    let (compiled, _) = plan(&(ingress("web", "2024-01-01T00:00:00Z", &["a.example.com"], "", "") + catch_all));
    assert_eq!(
        answer(&compiled, &https_request("https://a.example.com/")),
        "default/web:80"
    );
    assert_eq!(
        answer(&compiled, &https_request("https://anything.org/")),
        "default/fallback:80"
    );
}

#[test]
fn an_opaque_secret_serves_an_httpproxy_root() {
    let pair = certificate(&["p.example.com"], NOW + 365 * DAY);
    let yaml = format!(
        "{}{}",
        secret_of("default", "p-tls", "Opaque", pair),
        proxy("p", "    tls:\n      secretName: p-tls\n", "")
    );
    let (compiled, https) = plan(&yaml);
    assert_eq!(served(&https, "p.example.com").as_deref(), Some("default/p-tls"));
    assert_eq!(status(&compiled, "HTTPProxy", "default", "p"), Status::Valid);
}

#[test]
fn a_listed_host_that_no_rule_names_is_ignored_and_said() {
    let yaml = format!(
        "{}{}",
        tls_secret("default", "a-tls", &["a.example.com", "z.example.com"]),
        ingress(
            "web",
            "2024-01-01T00:00:00Z",
            &["a.example.com"],
            "    - hosts: [a.example.com, z.example.com]\n      secretName: a-tls\n",
            ""
        )
    );
    let (compiled, https) = plan(&yaml);
    assert_eq!(served(&https, "z.example.com"), None);
    let status = status_of(&compiled, "Ingress", "default", "web");
    assert!(message(status, Reason::TLSHostWithoutRule).contains("z.example.com"));
}

#[test]
fn a_secret_in_another_namespace_is_not_used_without_a_delegation() {
    let yaml = format!(
        "{}{}",
        tls_secret("certs", "a-tls", &["a.example.com"]),
        ingress(
            "web",
            "2024-01-01T00:00:00Z",
            &["a.example.com"],
            ENTRY_A,
            "    projectcontour.io/tls-cert-namespace: certs\n"
        )
    );
    let (compiled, https) = plan(&yaml);
    assert_eq!(served(&https, "a.example.com"), None);
    assert!(has_reason(
        status_of(&compiled, "Ingress", "default", "web"),
        Reason::TLSDelegationNotPermitted
    ));
}

/// `secrets` (YAML), the Ingress `young` (2024-06) naming `b-tls` for `a.example.com`, and `old`
/// (2024-01, path `/old`) naming `a-tls` for it: a merged host.
fn young_and_old(secrets: &str) -> String {
    let young_tls = "    - hosts: [a.example.com]\n      secretName: b-tls\n";
    let young = ingress("young", "2024-06-01T00:00:00Z", &["a.example.com"], young_tls, "");
    let old =
        ingress("old", "2024-01-01T00:00:00Z", &["a.example.com"], ENTRY_A, "").replace("path: /\n", "path: /old\n");
    format!("{secrets}{young}{old}")
}

#[test]
fn the_oldest_ingress_of_a_merged_host_sets_its_certificate_and_a_younger_one_is_told() {
    let secrets =
        tls_secret("default", "a-tls", &["a.example.com"]) + &tls_secret("default", "b-tls", &["a.example.com"]);
    let (compiled, https) = plan(&young_and_old(&secrets));
    assert_eq!(served(&https, "a.example.com").as_deref(), Some("default/a-tls"));
    let young = status_of(&compiled, "Ingress", "default", "young");
    assert!(message(young, Reason::TLSSecretIgnored).contains("Ingress/default/old"));
}

#[test]
fn a_broken_secret_of_an_older_ingress_does_not_block_a_younger_usable_one() {
    let (compiled, https) = plan(&young_and_old(&tls_secret("default", "b-tls", &["a.example.com"])));
    assert_eq!(served(&https, "a.example.com").as_deref(), Some("default/b-tls"));
    assert!(has_reason(
        status_of(&compiled, "Ingress", "default", "old"),
        Reason::TLSSecretNotValid
    ));
}

#[test]
fn force_ssl_redirect_answers_plain_http_with_a_301_to_https_and_https_routes() {
    let yaml = ingress(
        "web",
        "2024-01-01T00:00:00Z",
        &["a.example.com"],
        ENTRY_A,
        "    ingress.kubernetes.io/force-ssl-redirect: \"true\"\n",
    );
    let (compiled, _) = plan(&yaml);
    assert_eq!(
        answer(&compiled, &http("http://a.example.com:8080/x?y=1")),
        "301 https://${host}${request_uri}"
    );
    assert_eq!(
        answer(&compiled, &https_request("https://a.example.com/x")),
        "default/web:80"
    );
}

#[test]
fn allow_http_false_takes_an_ingress_off_port_80() {
    let yaml = ingress(
        "web",
        "2024-01-01T00:00:00Z",
        &["a.example.com"],
        ENTRY_A,
        "    kubernetes.io/ingress.allow-http: \"false\"\n",
    );
    let (compiled, _) = plan(&yaml);
    assert_eq!(answer(&compiled, &http("http://a.example.com/")), "404");
    assert_eq!(
        answer(&compiled, &https_request("https://a.example.com/")),
        "default/web:80"
    );
}

#[test]
fn an_ingress_without_annotations_routes_both_ports() {
    let yaml = ingress("web", "2024-01-01T00:00:00Z", &["a.example.com"], ENTRY_A, "");
    let (compiled, _) = plan(&yaml);
    assert_eq!(answer(&compiled, &http("http://a.example.com/")), "default/web:80");
    assert_eq!(
        answer(&compiled, &https_request("https://a.example.com/")),
        "default/web:80"
    );
}

// §8.4

fn nginx_ingress(name: &str, created: &str, host: &str, tls: &str) -> String {
    let class = ingress_class("nginx", "k8s.io/ingress-nginx", false, "");
    class + &ingress(name, created, &[host], tls, "").replace("spec:\n", "spec:\n  ingressClassName: nginx\n")
}

#[test]
fn ingress_nginx_serves_the_first_ingress_whose_secret_covers_the_host() {
    let yaml = format!(
        "{}{}{}{}",
        tls_secret("default", "wrong", &["elsewhere.org"]),
        tls_secret("default", "right", &["a.example.com"]),
        nginx_ingress(
            "first",
            "2024-01-01T00:00:00Z",
            "a.example.com",
            "    - hosts: [a.example.com]\n      secretName: wrong\n"
        ),
        nginx_ingress(
            "second",
            "2024-02-01T00:00:00Z",
            "a.example.com",
            "    - secretName: right\n"
        )
        .replace("path: /\n", "path: /b\n"),
    );
    let (compiled, https) = plan_with(&yaml, &nginx_options());
    assert_eq!(served(&https, "a.example.com").as_deref(), Some("default/right"));
    assert!(has_reason(
        status_of(&compiled, "Ingress", "default", "first"),
        Reason::CertificateHostMismatch
    ));
}

#[test]
fn ingress_nginx_keeps_the_last_good_certificate_of_a_secret_updated_to_unusable_content() {
    let good = certificate(&["a.example.com"], NOW + 365 * DAY);
    let ingress = nginx_ingress(
        "first",
        "2024-01-01T00:00:00Z",
        "a.example.com",
        "    - hosts: [a.example.com]\n      secretName: s\n",
    );
    let before = load(&(secret_of("default", "s", "kubernetes.io/tls", good.clone()) + &ingress));
    let previous: LastServed = (before.objects.secrets.iter())
        .map(|s| {
            (
                SecretRef {
                    namespace: "default".into(),
                    name: "s".into(),
                },
                s.clone(),
            )
        })
        .collect();
    let broken = secret_of(
        "default",
        "s",
        "kubernetes.io/tls",
        (good.0.clone(), "not a key".to_owned()),
    );
    let (compiled, https) = plan_after(&(broken.clone() + &ingress), &nginx_options(), &previous);
    assert_eq!(
        served(&https, "a.example.com").as_deref(),
        Some("default/s"),
        "the last good one"
    );
    assert!(https.kept.iter().any(|s| s.name == "s"));
    let status = status_of(&compiled, "Ingress", "default", "first");
    assert!(message(status, Reason::TLSSecretNotValid).contains("last good certificate is kept"));
    let (_, fresh) = plan_after(&(broken + &ingress), &nginx_options(), &LastServed::default());
    assert_eq!(
        served(&fresh, "a.example.com"),
        None,
        "nothing good was served before: the default"
    );
    let (_, deleted) = plan_after(&ingress, &nginx_options(), &previous);
    assert_eq!(
        served(&deleted, "a.example.com"),
        None,
        "a deleted Secret is missing, not kept"
    );
}

#[test]
fn ingress_nginx_serves_the_default_when_no_secret_covers_the_host() {
    let yaml = format!(
        "{}{}",
        tls_secret("default", "wrong", &["elsewhere.org"]),
        nginx_ingress(
            "first",
            "2024-01-01T00:00:00Z",
            "a.example.com",
            "    - hosts: [a.example.com]\n      secretName: wrong\n"
        ),
    );
    let (_, https) = plan_with(&yaml, &nginx_options());
    assert_eq!(served(&https, "a.example.com"), None);
}

#[test]
fn an_ingress_nginx_alias_gets_the_servers_certificate_only_if_it_covers_it() {
    let aliased = |tls: &str| {
        nginx_ingress("first", "2024-01-01T00:00:00Z", "a.example.com", tls).replace(
            "  creationTimestamp:",
            "  annotations:\n    nginx.ingress.kubernetes.io/server-alias: \"alias.example.com, other.org\"\n  creationTimestamp:",
        )
    };
    let yaml = format!(
        "{}{}",
        tls_secret("default", "both", &["a.example.com", "alias.example.com"]),
        aliased("    - hosts: [a.example.com]\n      secretName: both\n")
    );
    let (_, https) = plan_with(&yaml, &nginx_options());
    assert_eq!(served(&https, "a.example.com").as_deref(), Some("default/both"));
    assert_eq!(
        served(&https, "alias.example.com").as_deref(),
        Some("default/both"),
        "covered"
    );
    assert_eq!(served(&https, "other.org"), None, "not covered: the default");
}

#[test]
fn ingress_nginx_ssl_protocols_set_the_range_of_every_server_with_a_secret_or_not() {
    let yaml = format!(
        "{}{}{}",
        tls_secret("default", "right", &["a.example.com"]),
        nginx_ingress(
            "first",
            "2024-01-01T00:00:00Z",
            "a.example.com",
            "    - secretName: right\n"
        ),
        nginx_ingress("plain", "2024-01-01T00:00:00Z", "b.example.com", ""),
    );
    let mut options = nginx_options();
    options.ingress_nginx_config.ssl_protocols = TlsRange {
        min: TlsVersion::V1_3,
        max: TlsVersion::V1_3,
    };
    let (_, https) = plan_with(&yaml, &options);
    let range = |host: &str| {
        https
            .hosts
            .iter()
            .find(|h| h.host == host)
            .map(|h| (h.versions, h.served.clone()))
    };
    let only_1_3 = TlsRange {
        min: TlsVersion::V1_3,
        max: TlsVersion::V1_3,
    };
    assert_eq!(range("a.example.com").map(|r| r.0), Some(only_1_3));
    assert_eq!(
        range("b.example.com"),
        Some((only_1_3, Served::Default)),
        "the default certificate at that range"
    );
    let (_, default) = plan_with(&yaml, &nginx_options());
    assert!(
        default.hosts.iter().all(|h| h.host != "b.example.com"),
        "at 1.2 – 1.3 nothing to list"
    );
}

// §8.5

fn proxy(name: &str, tls: &str, route_extra: &str) -> String {
    format!(
        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  virtualhost:\n    fqdn: {name}.example.com\n{tls}  routes:\n    - conditions:\n        - prefix: /\n{route_extra}      services:\n        - name: web\n          port: 80\n---\n"
    )
}

#[test]
fn an_httpproxy_tls_root_is_served_with_its_secret_and_redirects_plain_http_with_a_301() {
    let yaml = format!(
        "{}{}",
        tls_secret("default", "p-tls", &["p.example.com"]),
        proxy("p", "    tls:\n      secretName: p-tls\n", "")
    );
    let (compiled, https) = plan(&yaml);
    assert_eq!(served(&https, "p.example.com").as_deref(), Some("default/p-tls"));
    assert_eq!(
        answer(&compiled, &http("http://p.example.com/a?b")),
        "301 https://${host}${request_uri}"
    );
    assert_eq!(
        answer(&compiled, &https_request("https://p.example.com/a")),
        "default/web:80"
    );
}

#[test]
fn an_httpproxy_route_that_permits_insecure_serves_plain_http() {
    let yaml = format!(
        "{}{}",
        tls_secret("default", "p-tls", &["p.example.com"]),
        proxy(
            "p",
            "    tls:\n      secretName: p-tls\n",
            "      permitInsecure: true\n"
        )
    );
    let (compiled, _) = plan(&yaml);
    assert_eq!(answer(&compiled, &http("http://p.example.com/a")), "default/web:80");
}

#[test]
fn an_httpproxy_root_without_tls_is_not_served_on_https() {
    let (compiled, https) = plan(&proxy("p", "", ""));
    assert_eq!(answer(&compiled, &http("http://p.example.com/a")), "default/web:80");
    assert_eq!(answer(&compiled, &https_request("https://p.example.com/a")), "404");
    assert!(https.hosts.is_empty());
}

#[test]
fn an_httpproxy_whose_secret_is_missing_is_invalid_and_routes_nothing() {
    let (compiled, _) = plan(&proxy("p", "    tls:\n      secretName: p-tls\n", ""));
    let status = status_of(&compiled, "HTTPProxy", "default", "p");
    assert_eq!(status.status, Status::Invalid);
    assert!(message(status, Reason::SecretNotValid).contains("default/p-tls does not exist"));
    assert_eq!(answer(&compiled, &http("http://p.example.com/a")), "404");
}

#[test]
fn an_httpproxy_secret_in_another_namespace_is_not_permitted() {
    let yaml = format!(
        "{}{}",
        tls_secret("certs", "p-tls", &["p.example.com"]),
        proxy("p", "    tls:\n      secretName: certs/p-tls\n", "")
    );
    let (compiled, _) = plan(&yaml);
    assert!(has_reason(
        status_of(&compiled, "HTTPProxy", "default", "p"),
        Reason::DelegationNotPermitted
    ));
}

#[test]
fn an_httpproxy_tls_with_both_or_neither_of_secret_and_passthrough_is_invalid() {
    for tls in [
        "    tls:\n      secretName: p-tls\n      passthrough: true\n",
        "    tls:\n      minimumProtocolVersion: \"1.3\"\n",
    ] {
        let yaml = format!(
            "{}{}",
            tls_secret("default", "p-tls", &["p.example.com"]),
            proxy("p", tls, "")
        );
        let (compiled, _) = plan(&yaml);
        assert!(
            has_reason(
                status_of(&compiled, "HTTPProxy", "default", "p"),
                Reason::TLSConfigNotValid
            ),
            "{tls}"
        );
    }
}

#[test]
fn an_httpproxy_tls_range_is_its_versions_and_a_minimum_above_the_maximum_is_invalid() {
    let secret = tls_secret("default", "p-tls", &["p.example.com"]);
    let yaml = format!(
        "{secret}{}",
        proxy(
            "p",
            "    tls:\n      secretName: p-tls\n      minimumProtocolVersion: \"1.3\"\n",
            ""
        )
    );
    let (_, https) = plan(&yaml);
    let versions = https
        .hosts
        .iter()
        .find(|h| h.host == "p.example.com")
        .map(|h| h.versions);
    assert_eq!(
        versions,
        Some(TlsRange {
            min: TlsVersion::V1_3,
            max: TlsVersion::V1_3
        })
    );
    let other = format!(
        "{secret}{}",
        proxy(
            "p",
            "    tls:\n      secretName: p-tls\n      minimumProtocolVersion: \"9\"\n",
            ""
        )
    );
    let versions = plan(&other)
        .1
        .hosts
        .iter()
        .find(|h| h.host == "p.example.com")
        .map(|h| h.versions);
    assert_eq!(
        versions,
        Some(TlsRange::default()),
        "an unknown version takes the default"
    );
    let bad = format!("{secret}{}", proxy("p", "    tls:\n      secretName: p-tls\n      minimumProtocolVersion: \"1.3\"\n      maximumProtocolVersion: \"1.2\"\n", ""));
    assert!(has_reason(
        status_of(&plan(&bad).0, "HTTPProxy", "default", "p"),
        Reason::TLSConfigNotValid
    ));
}

#[test]
fn an_httpproxy_asking_for_client_validation_is_invalid_never_served_unchecked() {
    let yaml = format!(
        "{}{}",
        tls_secret("default", "p-tls", &["p.example.com"]),
        proxy(
            "p",
            "    tls:\n      secretName: p-tls\n      clientValidation: {caSecret: ca}\n",
            ""
        )
    );
    let (compiled, _) = plan(&yaml);
    let status = status_of(&compiled, "HTTPProxy", "default", "p");
    assert_eq!(status.status, Status::Invalid);
    assert!(has_reason(status, Reason::ClientValidationNotSupported));
    assert_eq!(answer(&compiled, &https_request("https://p.example.com/")), "404");
}

#[test]
fn an_httpproxy_passing_tls_through_sends_its_fqdn_to_its_tcpproxy_service_undecrypted() {
    let passthrough = "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata:\n  name: p\n  namespace: default\nspec:\n  virtualhost:\n    fqdn: p.example.com\n    tls: {passthrough: true}\n  tcpproxy:\n    services: [{name: tls-app, port: 8443}]\n";
    let (compiled, https) = plan(passthrough);
    let routes: Vec<(Option<&str>, &str, &str)> = (compiled.l4.passthrough.iter())
        .map(|r| (r.host.as_deref(), r.cluster.as_str(), r.resource.as_str()))
        .collect();
    assert_eq!(
        routes,
        [(Some("p.example.com"), "default/tls-app:8443", "HTTPProxy/default/p")]
    );
    assert!(https.hosts.is_empty(), "never terminated");
    assert_eq!(status(&compiled, "HTTPProxy", "default", "p"), Status::Valid);
    let without = passthrough.split("  tcpproxy:").next().unwrap();
    let (compiled, _) = plan(without);
    assert!(compiled.l4.passthrough.is_empty());
    let status = status_of(&compiled, "HTTPProxy", "default", "p");
    assert!(message(status, Reason::TLSConfigNotValid).contains("needs spec.tcpproxy"));
}

#[test]
fn an_httpproxy_fallback_certificate_needs_the_default_certificate_flag() {
    let yaml = format!(
        "{}{}",
        tls_secret("default", "p-tls", &["p.example.com"]),
        proxy(
            "p",
            "    tls:\n      secretName: p-tls\n      enableFallbackCertificate: true\n",
            ""
        )
    );
    assert!(has_reason(
        status_of(&plan(&yaml).0, "HTTPProxy", "default", "p"),
        Reason::FallbackNotPresent
    ));
    let options = Options {
        default_certificate: Some("default/p-tls".into()),
        ..Options::default()
    };
    assert_eq!(
        status_of(&plan_with(&yaml, &options).0, "HTTPProxy", "default", "p").status,
        Status::Valid
    );
}

// §8.6

fn virtual_server(tls: &str) -> String {
    format!(
        "apiVersion: k8s.nginx.org/v1\nkind: VirtualServer\nmetadata:\n  name: v\n  namespace: default\nspec:\n  host: v.example.com\n{tls}  upstreams:\n    - name: web\n      service: web\n      port: 80\n  routes:\n    - path: =/exact\n      action:\n        pass: web\n    - path: /\n      action:\n        pass: web\n---\n"
    )
}

#[test]
fn a_virtualserver_with_a_usable_secret_is_served_with_it() {
    let yaml = format!(
        "{}{}",
        tls_secret("default", "v-tls", &["v.example.com"]),
        virtual_server("  tls:\n    secret: v-tls\n")
    );
    let (compiled, https) = plan(&yaml);
    assert_eq!(served(&https, "v.example.com").as_deref(), Some("default/v-tls"));
    assert_eq!(
        answer(&compiled, &https_request("https://v.example.com/exact")),
        "default/web:80"
    );
}

#[test]
fn a_virtualserver_with_a_missing_secret_refuses_handshakes_warns_and_routes_port_80() {
    let (compiled, https) = plan(&virtual_server("  tls:\n    secret: v-tls\n"));
    assert_eq!(served(&https, "v.example.com").as_deref(), Some("refused"));
    let status = status_of(&compiled, "VirtualServer", "default", "v");
    assert!(message(status, Reason::TLSSecretNotValid).starts_with("TLS secret v-tls is invalid"));
    let nginx = status.nginx.as_ref().unwrap();
    assert_eq!(nginx.reason.as_str(), "AddedOrUpdatedWithWarning");
    assert_eq!(answer(&compiled, &http("http://v.example.com/exact")), "default/web:80");
}

#[test]
fn a_virtualserver_tls_without_secret_is_served_with_the_default() {
    let (compiled, https) = plan(&virtual_server("  tls: {}\n"));
    assert!(https.hosts.is_empty());
    assert_eq!(
        answer(&compiled, &https_request("https://v.example.com/")),
        "default/web:80"
    );
}

#[test]
fn a_virtualserver_without_tls_is_not_served_on_https() {
    let (compiled, _) = plan(&virtual_server(""));
    assert_eq!(answer(&compiled, &https_request("https://v.example.com/exact")), "404");
    assert_eq!(answer(&compiled, &http("http://v.example.com/exact")), "default/web:80");
}

#[test]
fn a_virtualserver_redirect_comes_before_any_route_whatever_its_secret() {
    let (compiled, _) = plan(&virtual_server(
        "  tls:\n    secret: v-tls\n    redirect:\n      enable: true\n      code: 308\n",
    ));
    assert_eq!(
        answer(&compiled, &http("http://v.example.com/exact")),
        "308 https://${host}${request_uri}"
    );
    assert_eq!(
        answer(&compiled, &http("http://v.example.com/nothing")),
        "308 https://${host}${request_uri}"
    );
    assert_eq!(
        answer(&compiled, &https_request("https://v.example.com/exact")),
        "default/web:80"
    );
}

#[test]
fn a_virtualserver_redirect_based_on_x_forwarded_proto_reads_that_header() {
    let (compiled, _) = plan(&virtual_server(
        "  tls:\n    redirect:\n      enable: true\n      basedOn: x-forwarded-proto\n",
    ));
    let forwarded = https_request("https://v.example.com/").header("x-forwarded-proto", "http");
    assert_eq!(answer(&compiled, &forwarded), "301 https://${host}${request_uri}");
    assert_eq!(answer(&compiled, &http("http://v.example.com/")), "default/web:80");
}

#[test]
fn a_virtualserver_redirect_code_outside_301_302_307_308_is_invalid() {
    let (compiled, _) = plan(&virtual_server(
        "  tls:\n    redirect:\n      enable: true\n      code: 303\n",
    ));
    assert_eq!(status(&compiled, "VirtualServer", "default", "v"), Status::Invalid);
}

// §8.1.2

#[test]
fn the_default_certificate_flag_names_a_usable_secret_else_the_made_one_is_served_and_said() {
    let yaml = format!(
        "{}{}",
        tls_secret("ingress", "fallback", &["*.example.com"]),
        proxy("p", "", "")
    );
    let options = Options {
        default_certificate: Some("ingress/fallback".into()),
        ..Options::default()
    };
    let (_, https) = plan_with(&yaml, &options);
    assert!(matches!(&https.default, Served::Secret { secret, .. } if secret.to_string() == "ingress/fallback"));
    assert!(https.secrets().iter().any(|s| s.to_string() == "ingress/fallback"));
    let missing = Options {
        default_certificate: Some("ingress/nothing".into()),
        ..Options::default()
    };
    let (_, https) = plan_with(&yaml, &missing);
    assert_eq!(https.default, Served::Default);
    assert!(https.default_problem.unwrap().contains("does not exist"));
}

#[test]
fn the_same_manifests_give_the_same_https_plan() {
    let yaml = format!(
        "{}{}{}",
        tls_secret("default", "a-tls", &["a.example.com"]),
        ingress(
            "web",
            "2024-01-01T00:00:00Z",
            &["a.example.com", "b.example.com"],
            ENTRY_A,
            ""
        ),
        proxy("p", "", "")
    );
    let (_, first) = plan(&yaml);
    let (_, second) = plan(&yaml);
    assert_eq!(first, second);
}

#[test]
fn ingress_nginx_ssl_passthrough_passes_tls_to_the_root_paths_service_only_with_the_flag() {
    let passthrough = |name: &str, host: &str, path: &str| {
        nginx_ingress(name, "2024-01-01T00:00:00Z", host, "")
            .replace(
                "  creationTimestamp:",
                "  annotations:\n    nginx.ingress.kubernetes.io/ssl-passthrough: \"true\"\n  creationTimestamp:",
            )
            .replace("path: /\n", &format!("path: {path}\n"))
    };
    let yaml = passthrough("pass", "pass.example.com", "/") + &passthrough("sub", "sub.example.com", "/api");
    let (compiled, _) = plan_with(&yaml, &nginx_options());
    assert!(compiled.l4.passthrough.is_empty(), "without the flag");
    let status = status_of(&compiled, "Ingress", "default", "pass");
    assert!(message(status, Reason::AnnotationNotHonored).contains("--ingress-nginx-enable-ssl-passthrough"));

    let mut options = nginx_options();
    options.ingress_nginx.enable_ssl_passthrough = true;
    let (compiled, _) = plan_with(&yaml, &options);
    let routes: Vec<(Option<&str>, &str)> = (compiled.l4.passthrough.iter())
        .map(|r| (r.host.as_deref(), r.cluster.as_str()))
        .collect();
    assert_eq!(routes, [(Some("pass.example.com"), "default/web:80")]);
    let sub = status_of(&compiled, "Ingress", "default", "sub");
    assert!(message(sub, Reason::AnnotationNotHonored).contains("has no / path"));
    assert_eq!(
        answer(&compiled, &http("http://pass.example.com/")),
        "default/web:80",
        "port 80 still routes"
    );
}

// Istio's gateway (§8 through `--istio-gateway`)

fn istio_servers(yaml: &str, reject_unknown_sni: bool) -> (Vec<serde_json::Value>, Vec<(String, String)>) {
    let (compiled, https) = plan(yaml);
    let taken = compiled.l4.passthrough_hosts();
    let options = https::istio::IstioHttpsOptions {
        port: 443,
        reject_unknown_sni,
    };
    let (servers, copies) = https::istio::servers(&https, &taken, options);
    let copies = (copies.into_iter())
        .map(|(name, presented)| (name, format!("{presented:?}")))
        .collect();
    (servers, copies)
}

#[test]
fn istio_serves_each_certificate_from_its_copy_in_the_gateway_namespace() {
    let yaml = format!(
        "{}{}",
        tls_secret("default", "a-tls", &["a.example.com"]),
        ingress("web", "2024-01-01T00:00:00Z", &["a.example.com"], ENTRY_A, "")
    );
    let (servers, copies) = istio_servers(&yaml, true);
    assert_eq!(servers.len(), 1, "{servers:?}");
    assert_eq!(servers[0]["hosts"], serde_json::json!(["a.example.com"]));
    assert_eq!(
        servers[0]["port"],
        serde_json::json!({ "number": 443, "name": "https-0", "protocol": "HTTPS" })
    );
    assert_eq!(
        servers[0]["tls"],
        serde_json::json!({
            "mode": "SIMPLE",
            "credentialName": "switchyard.default.a-tls",
            "minProtocolVersion": "TLSV1_2",
            "maxProtocolVersion": "TLSV1_3",
        })
    );
    assert_eq!(copies.len(), 1);
    assert_eq!(copies[0].0, "switchyard.default.a-tls");
    assert!(copies[0].1.contains("a-tls"), "{copies:?}");
}

#[test]
fn istio_serves_unknown_names_and_hosts_without_a_usable_secret_from_a_default_server() {
    let yaml = format!(
        "{}{}",
        tls_secret("default", "a-tls", &["a.example.com"]),
        ingress(
            "web",
            "2024-01-01T00:00:00Z",
            &["a.example.com", "b.example.com"],
            &format!("{ENTRY_A}    - hosts: [b.example.com]\n      secretName: missing\n"),
            ""
        )
    );
    let (servers, copies) = istio_servers(&yaml, false);
    let hosts: Vec<&serde_json::Value> = servers.iter().map(|s| &s["hosts"]).collect();
    assert_eq!(
        hosts,
        [&serde_json::json!(["a.example.com"]), &serde_json::json!(["*"])],
        "b.example.com has no server of its own"
    );
    assert_eq!(servers[1]["tls"]["credentialName"], https::istio::MADE_CREDENTIAL);
    assert_eq!(servers[1]["port"]["name"], "https-1");
    let names: Vec<&str> = copies.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, [https::istio::MADE_CREDENTIAL, "switchyard.default.a-tls"]);

    let (servers, copies) = istio_servers(&yaml, true);
    assert_eq!(servers.len(), 1, "--reject-unknown-sni: no default server");
    assert_eq!(copies.len(), 1);
}

#[test]
fn istio_gets_no_https_server_while_no_host_has_a_certificate_of_its_own() {
    let (servers, copies) = istio_servers(
        &ingress("web", "2024-01-01T00:00:00Z", &["a.example.com"], "", ""),
        false,
    );
    assert!(servers.is_empty() && copies.is_empty(), "{servers:?}");
}

#[test]
fn istio_has_no_server_for_a_host_whose_handshakes_must_fail() {
    let (servers, copies) = istio_servers(&virtual_server("  tls:\n    secret: v-tls\n"), true);
    assert!(servers.is_empty(), "{servers:?}");
    assert!(copies.is_empty());
}

#[test]
fn istio_servers_carry_each_hosts_tls_range() {
    let yaml = format!(
        "{}{}",
        tls_secret("default", "p-tls", &["p.example.com"]),
        proxy(
            "p",
            "    tls:\n      secretName: p-tls\n      minimumProtocolVersion: \"1.3\"\n",
            ""
        )
    );
    let (servers, _) = istio_servers(&yaml, true);
    assert_eq!(servers[0]["tls"]["minProtocolVersion"], "TLSV1_3");
    assert_eq!(servers[0]["tls"]["maxProtocolVersion"], "TLSV1_3");
}

#[test]
fn istio_copy_names_keep_namespace_and_name_apart_and_fit_a_secret_name() {
    let name = |namespace: &str, name: &str| {
        https::istio::credential_name(&SecretRef {
            namespace: namespace.into(),
            name: name.into(),
        })
    };
    assert_ne!(name("a-b", "c"), name("a", "b-c"));
    let long = "x".repeat(253);
    let hashed = name("shop", &long);
    assert!(hashed.len() <= 253 && hashed.starts_with("switchyard."), "{hashed}");
    assert_ne!(hashed, name("shop", &"y".repeat(253)));
}
