//! The gateway's route configuration (issue "Policies beyond the route"; docs/routing.md, "Timeouts
//! and retries"). Envoy's router applies timeouts and retries per route, and the gateway sends every
//! request by one route to the cluster the filter names. A rule whose timeouts or retries are not
//! Envoy's defaults names a route of its own in its policy ([`switchyard_table::Policy::route`]),
//! which the filter puts in [`ROUTE_HEADER`]; the configuration holds one route per name the table
//! uses, matched by that header, before the default route and the 404.
//!
//! The name spells the settings, as a variant cluster's name does ([`crate::upstream::variant`]):
//! `timeout=0ms+idle=60000ms+upstream-idle=60000ms+retry=connect-failure,reset+retries=2+idempotent+other-host`, so the
//! sidecar writes the routes from the table alone ([`RouteSettings::of_name`] reads a name back).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{json, Value};
use switchyard_table::affinity::{HASH_HEADER, HASH_WITH_ADDRESS_HEADER};
use switchyard_table::format::ROUTE_HEADER;
use switchyard_table::TableSpec;

use crate::order::fnv1a;

/// The route configuration's name (the RDS subscription's `route_config_name`).
pub const ROUTE_CONFIG_NAME: &str = "switchyard";
/// The type URL of a route configuration in an RDS response.
const ROUTE_CONFIGURATION_TYPE: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
/// What joins two settings in a name.
const AND: char = '+';
/// The methods nginx does not retry without `non_idempotent` (`ngx_http_upstream_next`): POST,
/// LOCK and PATCH.
const NON_IDEMPOTENT_METHODS: &str = "POST|LOCK|PATCH";

/// What Envoy's router does with a rule's requests, where it is not its route default.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct RouteSettings {
    /// The route's `timeout`: from the end of the request to the end of the response; `Some(0)`:
    /// none (Envoy's default is 15 s).
    pub timeout_ms: Option<u64>,
    /// The route's `idle_timeout`: the longest a request's stream may see no bytes either way,
    /// once its first byte after the route is picked went by (Envoy arms it with the route's value
    /// at the stream's next event: the filter picks the route after the request's headers).
    pub idle_timeout_ms: Option<u64>,
    /// Each try's idle timeout (`retry_policy.per_try_idle_timeout`): the longest the backend may
    /// send and take nothing, from the try's start (the wait for the response's headers included).
    pub upstream_idle_timeout_ms: Option<u64>,
    /// Its retries.
    pub retry: Option<Retry>,
    /// The digest ([`headers_digest`]) of the headers the route adds to every response (a rule's
    /// CORS headers when they are the same for every response: `cors.by_route` in the table), so
    /// that rules adding other headers take other routes. The headers themselves come from the
    /// table's rules ([`GatewayRoutes::of`]).
    pub response_headers: Option<u64>,
}

/// A route's retries (Envoy's `retry_policy`).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Retry {
    /// When a try is retried, in name order (not empty).
    pub on: BTreeSet<RetryOn>,
    /// The statuses retried with [`RetryOn::RetriableStatusCodes`], in order.
    pub status_codes: BTreeSet<u16>,
    /// How many retries after the first try (at least 1).
    pub retries: u32,
    /// Each try's own timeout.
    pub per_try_timeout_ms: Option<u64>,
    /// Only requests of a method nginx retries (not POST, LOCK, PATCH: its `non_idempotent` off).
    pub idempotent_only: bool,
    /// Each retry to another endpoint than the ones tried (nginx's "next upstream").
    pub other_host: bool,
}

/// A condition Envoy's router retries on (`x-envoy-retry-on`'s words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RetryOn {
    /// The connection to the backend could not be made.
    ConnectFailure,
    /// The backend reset the stream or closed the connection (after the request was sent).
    Reset,
    /// A 5xx, a reset or a connect failure.
    FiveXx,
    /// A 502, 503 or 504.
    GatewayError,
    /// A status of [`Retry::status_codes`].
    RetriableStatusCodes,
    /// A 409.
    Retriable4xx,
    /// An HTTP/2 stream refused by the backend.
    RefusedStream,
    /// A gRPC status `CANCELLED`.
    Cancelled,
    /// A gRPC status `DEADLINE_EXCEEDED`.
    DeadlineExceeded,
    /// A gRPC status `INTERNAL`.
    Internal,
    /// A gRPC status `RESOURCE_EXHAUSTED`.
    ResourceExhausted,
    /// A gRPC status `UNAVAILABLE`.
    Unavailable,
}

impl RetryOn {
    /// Every condition.
    pub const ALL: [RetryOn; 12] = [
        RetryOn::ConnectFailure,
        RetryOn::Reset,
        RetryOn::FiveXx,
        RetryOn::GatewayError,
        RetryOn::RetriableStatusCodes,
        RetryOn::Retriable4xx,
        RetryOn::RefusedStream,
        RetryOn::Cancelled,
        RetryOn::DeadlineExceeded,
        RetryOn::Internal,
        RetryOn::ResourceExhausted,
        RetryOn::Unavailable,
    ];

    /// Envoy's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            RetryOn::ConnectFailure => "connect-failure",
            RetryOn::Reset => "reset",
            RetryOn::FiveXx => "5xx",
            RetryOn::GatewayError => "gateway-error",
            RetryOn::RetriableStatusCodes => "retriable-status-codes",
            RetryOn::Retriable4xx => "retriable-4xx",
            RetryOn::RefusedStream => "refused-stream",
            RetryOn::Cancelled => "cancelled",
            RetryOn::DeadlineExceeded => "deadline-exceeded",
            RetryOn::Internal => "internal",
            RetryOn::ResourceExhausted => "resource-exhausted",
            RetryOn::Unavailable => "unavailable",
        }
    }

    /// The condition of Envoy's word `word`.
    pub fn named(word: &str) -> Option<RetryOn> {
        RetryOn::ALL.into_iter().find(|on| on.as_str() == word)
    }
}

impl RouteSettings {
    /// Whether these are the default route's (no route of its own).
    pub fn is_default(&self) -> bool {
        *self == RouteSettings::default()
    }

    /// The route's name; `None` for the defaults.
    pub fn name(&self) -> Option<String> {
        let settings = self.settings();
        (!settings.is_empty()).then(|| settings.join(&AND.to_string()))
    }

    /// The settings as words of a name, in a fixed order.
    fn settings(&self) -> Vec<String> {
        let mut settings = Vec::new();
        settings.extend(self.timeout_ms.map(|ms| format!("timeout={ms}ms")));
        settings.extend(self.idle_timeout_ms.map(|ms| format!("idle={ms}ms")));
        settings.extend(self.upstream_idle_timeout_ms.map(|ms| format!("upstream-idle={ms}ms")));
        if let Some(retry) = &self.retry {
            let on: Vec<&str> = retry.on.iter().map(|on| on.as_str()).collect();
            settings.push(format!("retry={}", on.join(",")));
            if !retry.status_codes.is_empty() {
                let codes: Vec<String> = retry.status_codes.iter().map(u16::to_string).collect();
                settings.push(format!("codes={}", codes.join(",")));
            }
            settings.push(format!("retries={}", retry.retries));
            settings.extend(retry.per_try_timeout_ms.map(|ms| format!("per-try={ms}ms")));
            if retry.idempotent_only {
                settings.push("idempotent".to_owned());
            }
            if retry.other_host {
                settings.push("other-host".to_owned());
            }
        }
        settings.extend(self.response_headers.map(|digest| format!("headers={digest:016x}")));
        settings
    }

    /// The settings a route's name spells; `None` when it is not a name [`RouteSettings::name`]
    /// makes (an unknown word, one twice or out of order, a default written out).
    pub fn of_name(name: &str) -> Option<RouteSettings> {
        let mut settings = RouteSettings::default();
        for word in name.split(AND) {
            settings.read(word)?;
        }
        let retry_whole = settings
            .retry
            .as_ref()
            .is_none_or(|r| !r.on.is_empty() && r.retries > 0);
        (retry_whole && settings.name().as_deref() == Some(name)).then_some(settings)
    }

    /// Takes one word of a name.
    fn read(&mut self, word: &str) -> Option<()> {
        let millis = |value: &str| value.strip_suffix("ms")?.parse::<u64>().ok();
        match word.split_once('=') {
            None => match word {
                "idempotent" => self.retry.as_mut()?.idempotent_only = true,
                "other-host" => self.retry.as_mut()?.other_host = true,
                _ => return None,
            },
            Some(("timeout", value)) => self.timeout_ms = Some(millis(value)?),
            Some(("idle", value)) => self.idle_timeout_ms = Some(millis(value)?),
            Some(("upstream-idle", value)) => self.upstream_idle_timeout_ms = Some(millis(value)?),
            Some(("retry", value)) => {
                let on = value.split(',').map(RetryOn::named).collect::<Option<BTreeSet<_>>>()?;
                self.retry = Some(Retry { on, ..Retry::default() });
            }
            Some(("codes", value)) => {
                let codes = value.split(',').map(|code| code.parse().ok());
                self.retry.as_mut()?.status_codes = codes.collect::<Option<_>>()?;
            }
            Some(("retries", value)) => self.retry.as_mut()?.retries = value.parse().ok()?,
            Some(("per-try", value)) => self.retry.as_mut()?.per_try_timeout_ms = Some(millis(value)?),
            Some(("headers", value)) => self.response_headers = Some(u64::from_str_radix(value, 16).ok()?),
            Some(_) => return None,
        }
        Some(())
    }

    /// The route's action (Envoy's `RouteAction`) on top of `base`, the default route's.
    fn action(&self, mut base: Value) -> Value {
        if let Some(ms) = self.timeout_ms {
            base["timeout"] = duration(ms).into();
        }
        if let Some(ms) = self.idle_timeout_ms {
            base["idle_timeout"] = duration(ms).into();
        }
        if self.retry.is_some() || self.upstream_idle_timeout_ms.is_some() {
            let mut policy = self
                .retry
                .as_ref()
                .map_or_else(|| json!({ "num_retries": 0 }), Retry::policy);
            if let Some(ms) = self.upstream_idle_timeout_ms {
                policy["per_try_idle_timeout"] = duration(ms).into();
            }
            base["retry_policy"] = policy;
        }
        base
    }
}

impl Retry {
    /// Envoy's `retry_policy`.
    fn policy(&self) -> Value {
        let on: Vec<&str> = self.on.iter().map(|on| on.as_str()).collect();
        let mut policy = json!({ "retry_on": on.join(","), "num_retries": self.retries });
        if !self.status_codes.is_empty() {
            policy["retriable_status_codes"] = json!(self.status_codes);
        }
        if let Some(ms) = self.per_try_timeout_ms {
            policy["per_try_timeout"] = duration(ms).into();
        }
        if self.idempotent_only {
            policy["retriable_request_headers"] = json!([{
                "name": ":method",
                "string_match": { "safe_regex": { "regex": NON_IDEMPOTENT_METHODS } },
                "invert_match": true
            }]);
        }
        if self.other_host {
            policy["retry_host_predicate"] = json!([{
                "name": "envoy.retry_host_predicates.previous_hosts",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"
                }
            }]);
            policy["host_selection_retry_max_attempts"] = json!(5);
        }
        policy
    }
}

/// Milliseconds as a protobuf JSON duration (`60s`, `0.5s`).
fn duration(ms: u64) -> String {
    match ms % 1000 {
        0 => format!("{}s", ms / 1000),
        rest => format!("{}.{rest:03}s", ms / 1000),
    }
}

/// The digest a route's name carries for the `headers` it adds to every response (FNV-1a over
/// `name: value` lines).
pub fn headers_digest(headers: &[(&str, String)]) -> u64 {
    let lines: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\n"))
        .collect();
    fnv1a(lines.as_bytes())
}

/// The gateway's routes for a table: the route names its rules use, to the cluster it names in its
/// cluster header.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GatewayRoutes {
    /// The header the filter names the cluster in.
    pub cluster_header: String,
    /// The route names the rules use, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// The headers a route adds to every response, by route name: the CORS headers of the rules
    /// that name it whose `cors.by_route` is set.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub response_headers: BTreeMap<String, Vec<(String, String)>>,
}

impl GatewayRoutes {
    /// The routes `table` needs.
    pub fn of(table: &TableSpec) -> GatewayRoutes {
        let mut names = BTreeSet::new();
        let mut response_headers = BTreeMap::new();
        for policy in table.rules.iter().filter_map(|rule| rule.policy.as_ref()) {
            let Some(name) = &policy.route else { continue };
            names.insert(name.clone());
            let added = (policy.cors.as_ref())
                .filter(|cors| cors.by_route)
                .and_then(|cors| cors.every_response_headers());
            if let Some(headers) = added {
                let owned = headers.into_iter().map(|(name, value)| (name.to_owned(), value));
                response_headers.entry(name.clone()).or_insert_with(|| owned.collect());
            }
        }
        GatewayRoutes {
            cluster_header: table.cluster_header.clone(),
            names: names.into_iter().collect(),
            response_headers,
        }
    }

    /// The routes of a virtual host serving the table: one per name (a name that spells no
    /// settings is skipped: its requests take the default route), the default route to the cluster
    /// the filter names, and 404 for a request the filter named none for.
    pub fn routes(&self) -> Vec<Value> {
        let routed = json!({ "name": self.cluster_header, "present_match": true });
        let mut routes: Vec<Value> = (self.names.iter())
            .filter_map(|name| Some((name, RouteSettings::of_name(name)?)))
            .map(|(name, settings)| {
                let mut route = json!({
                    "name": name,
                    "match": {
                        "prefix": "/",
                        "headers": [routed, { "name": ROUTE_HEADER, "string_match": { "exact": name } }]
                    },
                    "route": settings.action(default_action(&self.cluster_header)),
                });
                if let Some(headers) = self.response_headers.get(name) {
                    route["response_headers_to_add"] = response_headers_to_add(headers);
                }
                route
            })
            .collect();
        routes.push(json!({
            "match": { "prefix": "/", "headers": [routed] },
            "route": default_action(&self.cluster_header),
        }));
        routes.push(json!({
            "match": { "prefix": "/" },
            "direct_response": { "status": 404, "body": { "inline_string": "no route\n" } }
        }));
        routes
    }

    /// The route configuration [`ROUTE_CONFIG_NAME`]: every host, [`GatewayRoutes::routes`].
    pub fn route_configuration(&self) -> Value {
        json!({
            "@type": ROUTE_CONFIGURATION_TYPE,
            "name": ROUTE_CONFIG_NAME,
            "virtual_hosts": [{ "name": "all", "domains": ["*"], "routes": self.routes() }]
        })
    }

    /// The RDS `DiscoveryResponse` of [`GatewayRoutes::route_configuration`], for Envoy's
    /// `rds.config_source.path_config_source`, its version the content's hash.
    pub fn rds_document(&self) -> String {
        let resource = self.route_configuration();
        // A `Value` of strings and numbers always serializes.
        let compact = serde_json::to_string(&resource).unwrap_or_default();
        let version = format!("{:016x}", fnv1a(compact.as_bytes()));
        let document = json!({ "version_info": version, "resources": [resource] });
        serde_json::to_string_pretty(&document).unwrap_or_default() + "\n"
    }
}

/// Envoy's `response_headers_to_add` of `headers`, each replacing the backend's (as
/// ingress-nginx's `more_set_headers` does). The router adds them to its own answers too (a 503
/// without a healthy endpoint, a 504).
fn response_headers_to_add(headers: &[(String, String)]) -> Value {
    let options: Vec<Value> = (headers.iter())
        .map(|(name, value)| {
            json!({
                "header": { "key": name, "value": value },
                "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"
            })
        })
        .collect();
    options.into()
}

/// The default route's action: to the cluster the filter names in `cluster_header`, hashed (for
/// the clusters that hash, `~lb=ring-hash`) by the affinity key the filter sets, else the client's
/// address (docs/routing.md, "Affinity").
pub fn default_action(cluster_header: &str) -> Value {
    json!({
        "cluster_header": cluster_header,
        "hash_policy": [
            { "header": { "header_name": HASH_HEADER }, "terminal": true },
            { "header": { "header_name": HASH_WITH_ADDRESS_HEADER } },
            { "connection_properties": { "source_ip": true } }
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway(names: &[String]) -> GatewayRoutes {
        GatewayRoutes {
            cluster_header: "x-route-cluster".to_owned(),
            names: names.to_vec(),
            ..GatewayRoutes::default()
        }
    }

    fn nginx_default() -> RouteSettings {
        RouteSettings {
            timeout_ms: Some(0),
            idle_timeout_ms: Some(60_000),
            upstream_idle_timeout_ms: Some(60_000),
            retry: Some(Retry {
                on: [RetryOn::ConnectFailure, RetryOn::Reset].into(),
                status_codes: BTreeSet::new(),
                retries: 2,
                per_try_timeout_ms: None,
                idempotent_only: true,
                other_host: true,
            }),
            response_headers: None,
        }
    }

    #[test]
    fn a_route_name_spells_its_settings_and_reads_back() {
        let settings = nginx_default();
        let name = settings.name().unwrap();
        assert_eq!(
            name,
            "timeout=0ms+idle=60000ms+upstream-idle=60000ms+retry=connect-failure,reset+retries=2+idempotent+other-host"
        );
        assert_eq!(RouteSettings::of_name(&name), Some(settings));
        assert_eq!(RouteSettings::default().name(), None);
    }

    #[test]
    fn a_name_not_spelled_as_names_are_is_not_a_route() {
        for bad in [
            "",
            "idle=60000ms+timeout=0ms",
            "idle=60s",
            "retry=sometimes+retries=1",
            "retries=2",
            "retry=reset",
            "retry=reset+retries=0",
            "idle=1ms+idle=1ms",
            "codes=502+retry=reset+retries=1",
        ] {
            assert_eq!(RouteSettings::of_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_routes_settings_become_envoys_route_fields() {
        let settings = RouteSettings {
            retry: Some(Retry {
                on: [RetryOn::RetriableStatusCodes].into(),
                status_codes: [503, 502].into(),
                per_try_timeout_ms: Some(1_500),
                ..nginx_default().retry.unwrap()
            }),
            ..nginx_default()
        };
        let name = settings.name().unwrap();
        let routes = gateway(std::slice::from_ref(&name)).routes();
        let route = &routes[0]["route"];
        assert_eq!(route["timeout"], "0s");
        assert_eq!(route["idle_timeout"], "60s");
        assert_eq!(route["cluster_header"], "x-route-cluster");
        let policy = &route["retry_policy"];
        assert_eq!(policy["retry_on"], "retriable-status-codes");
        assert_eq!(policy["retriable_status_codes"], json!([502, 503]));
        assert_eq!(policy["num_retries"], 2);
        assert_eq!(policy["per_try_timeout"], "1.500s");
        assert_eq!(policy["per_try_idle_timeout"], "60s");
        assert_eq!(policy["retriable_request_headers"][0]["name"], ":method");
        assert_eq!(
            policy["retry_host_predicate"][0]["name"],
            "envoy.retry_host_predicates.previous_hosts"
        );
        assert_eq!(routes[0]["match"]["headers"][1]["string_match"]["exact"], name);
        assert_eq!(routes.len(), 3, "the route, the default route, the 404");
        assert!(
            routes[1]["route"].get("timeout").is_none(),
            "the default route keeps Envoy's"
        );
        assert_eq!(routes[2]["direct_response"]["status"], 404);
    }

    #[test]
    fn an_upstream_idle_timeout_without_retries_is_a_retry_policy_of_no_retries() {
        let settings = RouteSettings {
            upstream_idle_timeout_ms: Some(2_000),
            ..RouteSettings::default()
        };
        let routes = gateway(&[settings.name().unwrap()]).routes();
        assert_eq!(
            routes[0]["route"]["retry_policy"],
            json!({ "num_retries": 0, "per_try_idle_timeout": "2s" })
        );
    }

    #[test]
    fn a_name_that_spells_no_settings_takes_the_default_route() {
        let routes = gateway(&["made-up".to_owned()]).routes();
        assert_eq!(routes.len(), 2);
    }

    #[test]
    fn the_same_names_give_the_same_document() {
        let names = vec![nginx_default().name().unwrap()];
        assert_eq!(gateway(&names).rds_document(), gateway(&names).rds_document());
        assert_ne!(gateway(&names).rds_document(), gateway(&[]).rds_document());
    }
}
