//! Values that become header values or cluster names (RFC 9110 field values): a manifest whose
//! `requestHeadersPolicy.set` value or service name holds CR, LF, NUL or another control character
//! gets a status error naming its field, and the rule never reaches the table (the filter would
//! refuse the whole table). The check is `switchyard_table::field::field_value`, the table's own.

mod common;

use common::{cluster_for, compile_default, get, has_reason, message, simple_ingress, status, status_of};
use switchyard::status::{Reason, Status};

/// YAML double-quoted escapes for CR LF, LF, NUL, ESC and DEL.
const CONTROLS: [&str; 5] = [
    r"shop\r\nx-injected: 1",
    r"shop\n",
    r"shop\0",
    r"shop\e[0m",
    r"shop\x7f",
];

fn proxy(set_value: &str, service: &str) -> String {
    format!(
        r#"apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {{name: shop, namespace: default}}
spec:
  virtualhost: {{fqdn: shop.example.com}}
  routes:
    - conditions: [{{prefix: /ok}}]
      services: [{{name: good, port: 80}}]
    - conditions: [{{prefix: /bad}}]
      services: [{{name: "{service}", port: 80}}]
      requestHeadersPolicy:
        set: [{{name: x-ok, value: fine}}, {{name: x-team, value: "{set_value}"}}]
"#
    )
}

#[test]
fn control_characters_in_a_request_header_value_make_the_httpproxy_invalid_naming_the_field() {
    for value in CONTROLS {
        let compiled = compile_default(&proxy(value, "s"));
        let proxy = status_of(&compiled, "HTTPProxy", "default", "shop");
        assert_eq!(proxy.status, Status::Invalid, "{value}: {proxy:#?}");
        let why = message(proxy, Reason::RequestHeadersPolicyInvalid);
        assert!(
            why.contains("spec.routes[1].requestHeadersPolicy.set[1].value") && why.contains("RFC 9110"),
            "{why}"
        );
        // The bad route is skipped, the good one keeps routing, and the table is one the filter takes.
        assert_eq!(cluster_for(&compiled, &get("http://shop.example.com/bad")), None);
        assert_eq!(
            cluster_for(&compiled, &get("http://shop.example.com/ok")).as_deref(),
            Some("default/good:80")
        );
    }
    // A tab inside a value is a field value; so is UTF-8.
    let compiled = compile_default(&proxy(r"shop\tcafé", "s"));
    assert_eq!(status(&compiled, "HTTPProxy", "default", "shop"), Status::Valid);
}

#[test]
fn control_characters_in_a_service_name_keep_the_route_out_of_the_table_naming_the_cluster() {
    for name in CONTROLS {
        let compiled = compile_default(&proxy("fine", name));
        let proxy = status_of(&compiled, "HTTPProxy", "default", "shop");
        assert_eq!(proxy.status, Status::Invalid, "{name}: {proxy:#?}");
        let why = message(proxy, Reason::RouteNotValid);
        assert!(
            why.contains("spec.routes[1]") && why.contains("action.route.backends[0].cluster"),
            "{why}"
        );
        assert_eq!(cluster_for(&compiled, &get("http://shop.example.com/bad")), None);

        let ingress = simple_ingress("web", "web.example.com", "/", &format!("\"{name}\""), "", None);
        let compiled = compile_default(&ingress);
        let web = status_of(&compiled, "Ingress", "default", "web");
        assert!(has_reason(web, Reason::InvalidRule), "{web:#?}");
        assert!(
            message(web, Reason::InvalidRule).contains("action.route.backends[0].cluster"),
            "{web:#?}"
        );
        assert_eq!(cluster_for(&compiled, &get("http://web.example.com/")), None);
    }
}
