//! Which Ingress served this request (issue "Which Ingress served this request"), through a real
//! Envoy in both filter forms: the access log of `envoy.yaml` and `deploy/`
//! ([`switchyard_e2e::ACCESS_LOG_FORMAT`]) names the rule and the resource that won each request,
//! from the filter state the filter leaves, and says `none` for a request no rule took.
//!
//! Needs `ENVOY_BIN`, the filter and the module (`make test-envoy` sets them).

use switchyard_cases::rule;
use switchyard_e2e::table::table;
use switchyard_e2e::{get, Envoy, FilterForm};

#[test]
fn the_access_log_names_the_rule_and_resource_that_won_and_none_when_no_rule_did() {
    let rules = vec![
        rule("Ingress/shop/api#0")
            .host("api.example")
            .prefix("/")
            .to("shop/api:80"),
        rule("Ingress/shop/web#1")
            .host("web.example")
            .prefix("/")
            .to("shop/web:80"),
    ];
    let table = table("observability", rules);
    for form in [FilterForm::Wasm, FilterForm::Module] {
        let envoy = Envoy::start_logged(&table, &["shop/api:80", "shop/web:80"], form);
        for (host, path) in [("api.example", "/a"), ("web.example", "/b"), ("nobody.example", "/c")] {
            envoy.send(&get(host, path));
        }
        let lines = envoy.access_log(&[" /a ", " /b ", " /c "]);
        let line = |path: &str| {
            (lines.iter())
                .find(|l| l.contains(&format!(" {path} ")))
                .unwrap_or_else(|| panic!("{form:?}: no line for {path} in {lines:?}"))
                .clone()
        };
        let api = line("/a");
        assert!(
            api.contains("rule=Ingress/shop/api#0 resource=Ingress/shop/api upstream=shop/api:80"),
            "{form:?}: {api}"
        );
        assert!(api.contains(" 200 "), "{form:?}: {api}");
        assert!(
            line("/b").contains("rule=Ingress/shop/web#1 resource=Ingress/shop/web"),
            "{form:?}"
        );
        let nobody = line("/c");
        assert!(
            nobody.contains("rule=none resource=none") && nobody.contains(" 404 "),
            "{form:?}: {nobody}"
        );
    }
}
