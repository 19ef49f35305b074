//! Validation: a table is refused whole, with an error that names the rule and the field.

mod common;

use common::rule;
use serde_json::{json, Value};
use switchyard_table::{Problem, RouteTable, TableError};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn refuse(rules: Vec<Value>) -> TableError {
    RouteTable::from_json(json!({ "version": 1, "rules": rules }).to_string().as_bytes()).unwrap_err()
}

/// Asserts the error is about `rule`'s `field` with a problem matching `expected`, and that the
/// message a user reads names both.
fn assert_rule_error(error: TableError, rule: &str, field: &str, expected: impl Fn(&Problem) -> bool) {
    let message = error.to_string();
    match error {
        TableError::Rule {
            rule: r,
            field: f,
            problem,
        } => {
            assert_eq!((r.as_str(), f.as_str()), (rule, field), "{message}");
            assert!(expected(&problem), "unexpected problem: {message}");
            assert!(
                message.contains(&format!("{rule:?}")) && message.contains(field),
                "{message}"
            );
        }
        other => panic!("expected a rule error, got {other}"),
    }
}

/// An unknown format version is refused.
#[test]
fn unknown_version_is_refused() {
    let error = RouteTable::from_json(br#"{"version":2,"rules":[]}"#).unwrap_err();
    assert!(matches!(error, TableError::UnsupportedVersion { found: 2 }));
    assert!(error.to_string().contains("version"));
}

/// Malformed JSON and unknown fields are refused, with the position.
#[test]
fn malformed_json_and_unknown_fields_are_refused() {
    assert!(matches!(
        RouteTable::from_json(b"{\"version\":1,"),
        Err(TableError::Json(_))
    ));
    let error = RouteTable::from_json(br#"{"version":1,"rulez":[]}"#).unwrap_err();
    assert!(error.to_string().contains("rulez"), "{error}");
}

/// A bad host is refused.
#[test]
fn bad_host_is_refused() {
    for host in ["a.*.net", "example.net:80", "a..net", "exa mple.net"] {
        let error = refuse(vec![rule("r#0", host, "segment:/", "c")]);
        assert_rule_error(error, "r#0", "host", |p| matches!(p, Problem::BadHost { .. }));
    }
}

/// A path that does not start with `/` is refused (a regex may start with anything: it is tested
/// against the whole path, and NGINX's search-anywhere regexes start with `.*`).
#[test]
fn path_not_starting_with_slash_is_refused() {
    for path in ["exact:foo", "segment:foo", "prefix:"] {
        let error = refuse(vec![rule("r#0", "", path, "c")]);
        assert_rule_error(error, "r#0", "path.value", |p| {
            matches!(p, Problem::PathNotAbsolute { .. })
        });
    }
}

/// A regex that does not compile is refused, in a path or in a condition.
#[test]
fn regex_that_does_not_compile_is_refused() {
    let error = refuse(vec![rule("r#0", "", "regex:/(unclosed", "c")]);
    assert_rule_error(error, "r#0", "path.value", |p| matches!(p, Problem::BadRegex { .. }));
    let error = refuse(vec![common::with(
        rule("r#0", "", "prefix:/", "c"),
        "header",
        "h",
        "regex",
        "[z-a]",
    )]);
    assert_rule_error(error, "r#0", "conditions[0].value", |p| {
        matches!(p, Problem::BadRegex { .. })
    });
}

/// Backend weights summing to zero are refused.
#[test]
fn weights_summing_to_zero_are_refused() {
    let mut r = rule("r#0", "", "prefix:/", "c");
    r["action"]["route"]["backends"] = json!([{ "cluster": "a", "weight": 0 }, { "cluster": "b", "weight": 0 }]);
    assert_rule_error(refuse(vec![r]), "r#0", "action.route.backends", |p| {
        matches!(p, Problem::BadWeights { sum: 0 })
    });
}

/// A route without backends is refused.
#[test]
fn route_without_backends_is_refused() {
    let mut r = rule("r#0", "", "prefix:/", "c");
    r["action"]["route"]["backends"] = json!([]);
    assert_rule_error(refuse(vec![r]), "r#0", "action.route.backends", |p| {
        *p == Problem::NoBackends
    });
}

/// Two rules with one name are refused.
#[test]
fn duplicate_rule_names_are_refused() {
    let error = refuse(vec![
        rule("same", "", "prefix:/a", "c"),
        rule("other", "", "prefix:/", "c"),
        rule("same", "", "prefix:/b", "c"),
    ]);
    assert_rule_error(error, "same", "name", |p| *p == Problem::DuplicateName { first: 0 });
}

/// An empty cluster name is refused.
#[test]
fn empty_cluster_name_is_refused() {
    let error = refuse(vec![rule("r#0", "", "prefix:/", "")]);
    assert_rule_error(error, "r#0", "action.route.backends[0].cluster", |p| {
        *p == Problem::EmptyCluster
    });
}

/// A rule without a name is refused, and named by its position.
#[test]
fn empty_rule_name_is_refused() {
    let error = refuse(vec![rule("ok", "", "prefix:/a", "c"), rule("", "", "prefix:/", "c")]);
    assert_rule_error(error, "#1", "name", |p| *p == Problem::EmptyName);
}

/// Conditions need the name and value their kind asks for; header names must be tokens.
#[test]
fn incomplete_conditions_are_refused() {
    let r = || rule("r#0", "", "prefix:/", "c");
    let error = refuse(vec![common::with(r(), "header", "", "exact", "v")]);
    assert_rule_error(error, "r#0", "conditions[0].name", |p| {
        matches!(p, Problem::ConditionName(_))
    });
    let error = refuse(vec![common::with(r(), "header", "bad name", "exact", "v")]);
    assert_rule_error(error, "r#0", "conditions[0].name", |p| {
        matches!(p, Problem::BadHeaderName(_))
    });
    let mut missing = r();
    missing["conditions"] = json!([{ "on": "cookie", "name": "c", "match": "prefix" }]);
    assert_rule_error(refuse(vec![missing]), "r#0", "conditions[0].value", |p| {
        matches!(p, Problem::MissingValue { op: "prefix" })
    });
    let mut named_method = r();
    named_method["conditions"] = json!([{ "on": "method", "name": "x", "match": "exact", "value": "GET" }]);
    assert_rule_error(refuse(vec![named_method]), "r#0", "conditions[0].name", |p| {
        matches!(p, Problem::ConditionName(_))
    });
}

/// Header actions need valid header names.
#[test]
fn bad_header_action_names_are_refused() {
    let mut r = rule("r#0", "", "prefix:/", "c");
    r["action"]["route"]["remove_headers"] = json!(["x-ok", "bad:name"]);
    assert_rule_error(refuse(vec![r]), "r#0", "action.route.remove_headers", |p| {
        matches!(p, Problem::BadHeaderName(_))
    });
}

/// A direct response needs a real HTTP status.
#[test]
fn bad_direct_response_status_is_refused() {
    let mut r = rule("r#0", "", "prefix:/", "c");
    r["action"] = json!({ "direct_response": { "status": 42 } });
    assert_rule_error(refuse(vec![r]), "r#0", "action.direct_response.status", |p| {
        *p == Problem::BadStatus(42)
    });
}

/// A prefix rewrite needs a prefix (or exact) path.
#[test]
fn rewrite_on_regex_path_is_refused() {
    let mut r = rule("r#0", "", "regex:/a.*", "c");
    r["action"]["route"]["rewrite_prefix"] = json!("/b");
    assert_rule_error(refuse(vec![r]), "r#0", "action.route.rewrite_prefix", |p| {
        *p == Problem::RewriteNeedsPrefix
    });
}

/// The table-wide cluster header must be a header name.
#[test]
fn bad_cluster_header_is_refused() {
    let error = RouteTable::from_json(br#"{"version":1,"cluster_header":"x route"}"#).unwrap_err();
    assert!(matches!(error, TableError::BadClusterHeader(_)), "{error}");
}

/// Every value the filter writes into a header must be an RFC 9110 field value: a cluster name,
/// a `set_headers` value, a `rewrite_prefix` (the new `:path`) and a rule name (the debug header).
/// CR, LF, NUL and other control characters are refused in each place, naming the field.
#[test]
fn control_characters_in_header_values_and_cluster_names_are_refused() {
    let controls = [
        "shop\r\nx-injected: 1",
        "shop\nx",
        "shop\0",
        "shop\u{1b}",
        "shop\u{7f}",
        " shop",
    ];
    type Put = fn(&mut Value, &str);
    let places: [(&str, Put); 4] = [
        ("action.route.backends[0].cluster", |r, v| {
            r["action"]["route"]["backends"][0]["cluster"] = json!(v)
        }),
        ("action.route.set_headers[1].value", |r, v| {
            r["action"]["route"]["set_headers"] =
                json!([{ "name": "x-ok", "value": "fine" }, { "name": "x-team", "value": v }])
        }),
        ("action.route.rewrite_prefix", |r, v| {
            r["action"]["route"]["rewrite_prefix"] = json!(v)
        }),
        ("name", |r, v| r["name"] = json!(v)),
    ];
    for (field, put) in places {
        for value in controls {
            let mut bad = rule("r#0", "", "prefix:/app", "c");
            put(&mut bad, value);
            let name = bad["name"].as_str().unwrap().to_owned();
            let error = refuse(vec![bad]);
            assert_rule_error(error, &name, field, |p| matches!(p, Problem::BadFieldValue { .. }));
        }
    }
    // The message says which character and where.
    let mut bad = rule("r#0", "", "prefix:/", "c");
    bad["action"]["route"]["backends"][0]["cluster"] = json!("p/s:80\r\n");
    let message = refuse(vec![bad]).to_string();
    assert!(message.contains("CR (0x0d) at byte 6"), "{message}");
    // Tabs inside, UTF-8 and the characters Istio's cluster names use are fine.
    let mut good = rule("r#0", "", "prefix:/", "outbound|80||s.ns.svc.cluster.local");
    good["action"]["route"]["set_headers"] = json!([{ "name": "x-team", "value": "shop\tcafé" }]);
    assert!(RouteTable::from_json(json!({ "version": 1, "rules": [good] }).to_string().as_bytes()).is_ok());
}

/// `ignore_case` is refused on `regex` (write `(?i)`) and `present`.
#[test]
fn ignore_case_on_regex_or_present_is_refused() {
    for op in ["regex", "present"] {
        let mut r = common::with(rule("r#0", "", "prefix:/", "c"), "header", "h", op, "x");
        r["conditions"][0]["ignore_case"] = json!(true);
        let error = refuse(vec![r]);
        assert_rule_error(error, "r#0", "conditions[0].ignore_case", |p| {
            matches!(p, Problem::IgnoreCaseNotAllowed { .. })
        });
    }
}

/// A redirect needs a 3xx redirect status and a url naming only the three known variables.
#[test]
fn bad_redirect_is_refused() {
    let redirect = |url: &str, status: u16| {
        let mut r = rule("r#0", "", "prefix:/", "c");
        r["action"] = json!({ "redirect": { "url": url, "status": status } });
        r
    };
    let error = refuse(vec![redirect("http://x/", 200)]);
    assert_rule_error(error, "r#0", "action.redirect.status", |p| {
        matches!(p, Problem::BadRedirectStatus(200))
    });
    for url in ["", "http://${server_name}/", "http://${host/", "http://x/\r\n"] {
        let error = refuse(vec![redirect(url, 302)]);
        assert_rule_error(error, "r#0", "action.redirect.url", |p| {
            matches!(p, Problem::BadRedirectUrl { .. })
        });
    }
}

/// A direct response's headers need token names and field values; its content type a field value.
#[test]
fn bad_direct_response_headers_are_refused() {
    let direct = |extra: Value| {
        let mut r = rule("r#0", "", "prefix:/", "c");
        let mut action = json!({ "status": 200 });
        action
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        r["action"] = json!({ "direct_response": action });
        r
    };
    let error = refuse(vec![direct(
        json!({ "headers": [ { "name": "bad name", "value": "v" } ] }),
    )]);
    assert_rule_error(error, "r#0", "action.direct_response.headers[0].name", |p| {
        matches!(p, Problem::BadHeaderName(_))
    });
    let error = refuse(vec![direct(json!({ "headers": [ { "name": "x", "value": "a\nb" } ] }))]);
    assert_rule_error(error, "r#0", "action.direct_response.headers[0].value", |p| {
        matches!(p, Problem::BadFieldValue { .. })
    });
    let error = refuse(vec![direct(json!({ "content_type": "text/html\r\n" }))]);
    assert_rule_error(error, "r#0", "action.direct_response.content_type", |p| {
        matches!(p, Problem::BadFieldValue { .. })
    });
}

/// A regex path may start with anything (NGINX's search-anywhere `.*(?:re).*`).
#[test]
fn regex_path_need_not_start_with_slash() {
    let t = RouteTable::from_json(
        json!({ "version": 1, "rules": [rule("r#0", "", "regex:.*(?:tea).*", "c")] })
            .to_string()
            .as_bytes(),
    )
    .unwrap();
    assert!(t.route(&common::get("http://h/green/tea/cup"), 0).is_some());
    assert!(t.route(&common::get("http://h/coffee"), 0).is_none());
}
