//! The readers of NGINX's Policy fields, against NGINX's validation.

use super::*;

#[test]
fn a_rate_is_requests_per_second_or_minute_as_nginx_validates_it() {
    assert_eq!(parse_rate("10r/s"), Some((10, Period::Second)));
    assert_eq!(parse_rate("300r/M"), Some((300, Period::Minute)));
    for refused in ["0r/s", "010r/s", "10r/h", "r/s", "10 r/s", "-1r/s", "10r/"] {
        assert_eq!(parse_rate(refused), None, "{refused}");
    }
}

#[test]
fn a_zone_size_is_at_least_32k() {
    for valid in ["32k", "10M", "1m", "1g", "64K", "32"] {
        assert!(zone_size_valid(valid), "{valid}");
    }
    for invalid in ["", "31k", "0m", "10x", "k"] {
        assert!(!zone_size_valid(invalid), "{invalid}");
    }
}

#[test]
fn a_realm_has_its_quotes_escaped_and_no_dollar() {
    assert!(realm_valid("My Product API"));
    assert!(realm_valid(r#"say \"hi\""#));
    assert!(!realm_valid(r#"say "hi""#));
    assert!(!realm_valid("costs $5"));
    assert!(!realm_valid("ends \\"));
    assert_eq!(realm(r#"say \"hi\""#), "say hi");
}

#[test]
fn access_control_takes_exactly_one_of_allow_and_deny() {
    let allow = AccessControl {
        allow: Some(vec!["10.0.0.0/8".into(), "::1".into()]),
        deny: None,
    };
    assert_eq!(access_ranges(&allow).unwrap().allow.len(), 2);
    let both = AccessControl {
        allow: Some(Vec::new()),
        deny: Some(Vec::new()),
    };
    assert!(access_ranges(&both).is_err());
    assert!(access_ranges(&AccessControl::default()).is_err());
    let bad = AccessControl {
        allow: None,
        deny: Some(vec!["10.0.0.0/33".into()]),
    };
    assert!(access_ranges(&bad).unwrap_err().contains("deny[0]"));
}

#[test]
fn only_the_client_address_key_is_counted_here() {
    let limit = |key: &str| RateLimitPolicy {
        key: key.to_owned(),
        ..RateLimitPolicy::default()
    };
    assert!(honoured(&limit("${binary_remote_addr}")).is_ok());
    assert!(honoured(&limit("${binary_remote_addr}${uri}")).is_err());
    let conditional = RateLimitPolicy {
        condition: Some(serde_json::json!({"variables": []})),
        ..limit("${binary_remote_addr}")
    };
    assert!(honoured(&conditional).is_err());
}

#[test]
fn a_dry_run_limits_nothing_but_replaces_the_servers_rate_limit() {
    let mut resolved = Resolved::default();
    let limit = RateLimitPolicy {
        rate: "1r/s".into(),
        key: "${binary_remote_addr}".into(),
        zone_size: "10M".into(),
        dry_run: Some(true),
        ..RateLimitPolicy::default()
    };
    resolved.add_rate_limit("Policy default/dry", &limit, "z".into());
    assert_eq!(resolved.asked.rate_limit, Some(None));
    let server = Asked {
        rate_limit: Some(rate_limit(&RateLimitPolicy { dry_run: None, ..limit }, "s".into())),
        ..Asked::default()
    };
    assert_eq!(resolved.asked.over(&server).rate_limit, Some(None));
}
