//! An HTTPProxy route's `timeoutPolicy.response` and `.idle` and its `retryPolicy`, read as Contour
//! reads them (`internal/timeout`, `internal/dag/policy.go`), into the gateway route of its rule
//! ([`crate::route_config::RouteSettings`]; docs/routing.md, "Timeouts and retries"):
//!
//! - `response` → the route's `timeout` (`infinity`: none; absent: Envoy's 15 s, as under Contour).
//! - `idle` → the route's `idle_timeout` (`infinity`: none).
//! - `retryPolicy` → Envoy's retries: `retryOn` (`5xx` when empty), `count` (`0` or absent: 1;
//!   `-1`: none), `perTryTimeout`, `retriableStatusCodes`. Each retry may go to the endpoint it
//!   left (Contour sets no host predicate).

use std::collections::BTreeSet;

use crate::objects::{ProxyRoute, RetryPolicy};
use crate::route_config::{Retry, RetryOn, RouteSettings};

/// The route settings of `route`, or why its policies are not valid (at `at`).
pub fn route_settings(route: &ProxyRoute, at: &str) -> Result<RouteSettings, String> {
    let timeouts = route.timeout_policy.as_ref();
    let duration = |field: &str, text: Option<&String>| -> Result<Option<u64>, String> {
        text.map(|text| {
            super::go_duration_ms(text)
                .map(u64::from)
                .ok_or_else(|| format!("{at}.timeoutPolicy.{field}: {text:?} is not a duration or infinity"))
        })
        .transpose()
    };
    Ok(RouteSettings {
        timeout_ms: duration("response", timeouts.and_then(|t| t.response.as_ref()))?,
        idle_timeout_ms: duration("idle", timeouts.and_then(|t| t.idle.as_ref()))?,
        upstream_idle_timeout_ms: None,
        retry: match &route.retry_policy {
            None => None,
            Some(policy) => retry(policy).map_err(|why| format!("{at}.retryPolicy.{why}"))?,
        },
        response_headers: None,
    })
}

/// Contour's retries of `policy`; `None` for `count: -1`.
fn retry(policy: &RetryPolicy) -> Result<Option<Retry>, String> {
    let retries = match policy.count {
        Some(-1) => return Ok(None),
        None | Some(0) => 1,
        Some(count) => u32::try_from(count).map_err(|_| format!("count: {count} is not -1 or more"))?,
    };
    let on: BTreeSet<RetryOn> = match policy.retry_on.as_slice() {
        [] => [RetryOn::FiveXx].into(),
        words => (words.iter())
            .map(|word| {
                RetryOn::named(word).ok_or_else(|| format!("retryOn: {word:?} is not a condition Contour retries on"))
            })
            .collect::<Result<_, _>>()?,
    };
    let status_codes = (policy.retriable_status_codes.iter())
        .map(|code| match u16::try_from(*code) {
            Ok(code @ 100..=599) => Ok(code),
            _ => Err(format!("retriableStatusCodes: {code} is not an HTTP status")),
        })
        .collect::<Result<BTreeSet<u16>, String>>()?;
    let per_try_timeout_ms = match &policy.per_try_timeout {
        None => None,
        Some(text) => match super::go_duration_ms(text) {
            Some(0) => None,
            Some(ms) => Some(u64::from(ms)),
            None => return Err(format!("perTryTimeout: {text:?} is not a duration")),
        },
    };
    Ok(Some(Retry {
        on,
        status_codes,
        retries,
        per_try_timeout_ms,
        idempotent_only: false,
        other_host: false,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(yaml: &str) -> ProxyRoute {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn response_and_idle_timeouts_are_the_routes_and_infinity_is_none() {
        let settings = route_settings(&route("timeoutPolicy: {response: 1m30s, idle: infinity}"), "r").unwrap();
        assert_eq!(settings.timeout_ms, Some(90_000));
        assert_eq!(settings.idle_timeout_ms, Some(0));
        assert!(
            route_settings(&route("{}"), "r").unwrap().is_default(),
            "Envoy's 15 s stands"
        );
    }

    #[test]
    fn a_retry_policy_is_five_xx_once_unless_it_says_otherwise() {
        let settings = route_settings(&route("retryPolicy: {}"), "r").unwrap();
        let retry = settings.retry.unwrap();
        assert_eq!((retry.on, retry.retries), ([RetryOn::FiveXx].into(), 1));
        let retry = route_settings(
            &route("retryPolicy: {count: 3, perTryTimeout: 150ms, retryOn: [retriable-status-codes, reset], retriableStatusCodes: [503]}"),
            "r",
        )
        .unwrap()
        .retry
        .unwrap();
        assert_eq!(retry.retries, 3);
        assert_eq!(retry.per_try_timeout_ms, Some(150));
        assert_eq!(retry.status_codes, [503].into());
        assert!(route_settings(&route("retryPolicy: {count: -1}"), "r")
            .unwrap()
            .retry
            .is_none());
    }

    #[test]
    fn an_invalid_timeout_or_retry_names_its_field() {
        let why = route_settings(&route("timeoutPolicy: {response: soon}"), "spec.routes[0]").unwrap_err();
        assert!(
            why.starts_with("spec.routes[0].timeoutPolicy.response: \"soon\""),
            "{why}"
        );
        let why = route_settings(&route("retryPolicy: {retryOn: [sometimes]}"), "spec.routes[0]").unwrap_err();
        assert!(why.starts_with("spec.routes[0].retryPolicy.retryOn"), "{why}");
    }
}
