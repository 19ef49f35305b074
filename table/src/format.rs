//! The route table document: plain types, exactly as the JSON reads.
//!
//! These types are what the sidecar writes and what the filter receives as its plugin
//! configuration. They carry no behaviour: [`crate::RouteTable::try_from`] validates them and
//! builds the index the matcher uses. `table/README.md` documents the format with a complete
//! example, and how to add a field.
//!
//! Written with serde's `Serialize` derive (the sidecar); read by `crate::read`, one `FromDoc` impl
//! per type, so that the filter links no serde derive. A field's serde
//! attributes here say how it is written; its reader says whether it is required and its default.

use std::sync::Arc;

use serde::Serialize;

use crate::basic_auth::BasicAuth;
use crate::external_auth::ExternalAuth;

/// The only table format version this crate reads and writes.
pub const VERSION: u32 = 1;

/// The key of the one-key object that carries the sharded form ([`crate::shards`]): part of the
/// format's vocabulary, below both the matcher and the shard store.
pub const SHARDS_KEY: &str = "table_shards";

/// The filter state key (Envoy's, as the access log's `%FILTER_STATE(…:PLAIN)%` names it) of a
/// request's winning rule: its name, `Ingress/shop/api#0`, which names its resource too (before
/// the `#`). The wasm filter sets the property `switchyard.rule`, which Envoy keeps under `wasm.`;
/// the native module sets the same key. One key, not one for the rule and one for its resource:
/// each costs Envoy about 4,000 instructions a request in the wasm filter, 2 % of a request
/// (BENCHMARKS.md, "Envoy's instructions per request").
pub const WINNER_RULE: &str = "wasm.switchyard.rule";
/// The rule of a request no rule took.
pub const NO_RULE: &str = "none";
/// The access log format `envoy.yaml`, `deploy/` and the HTTPS listener write: the request, its
/// answer, its upstream, and the rule that won it ([`WINNER_RULE`]; `none` when no rule took it).
pub const ACCESS_LOG_FORMAT: &str = "[%START_TIME%] \"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" \
%RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% \"%REQ(:AUTHORITY)%\" \
%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT% rule=%FILTER_STATE(wasm.switchyard.rule:PLAIN)% \
upstream=%UPSTREAM_CLUSTER%\n";

/// The header Envoy's `cluster_header` route reads, when the table names none.
pub const DEFAULT_CLUSTER_HEADER: &str = "x-route-cluster";

/// The response header a rule's [`RuleSpec::hsts`] sets on HTTPS.
pub const HSTS_HEADER: &str = "strict-transport-security";

/// The response header that carries the winning rule's name when [`TableSpec::debug_rule_header`] is on.
pub const RULE_NAME_HEADER: &str = "x-switchyard-rule";

/// The request header the filter names a rule's gateway route in ([`Policy::route`]); the route
/// configuration matches it (docs/routing.md, "Timeouts and retries"). A value a client sent is
/// removed.
pub const ROUTE_HEADER: &str = "x-switchyard-route";

/// A whole route table: rules in priority order plus table-wide settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableSpec {
    /// Format version; must be [`VERSION`].
    pub version: u32,
    /// An opaque label for this table (the sidecar writes a content hash); logged by the filter.
    pub generation: String,
    /// The request header set to the winning backend's cluster name.
    pub cluster_header: String,
    /// What happens to a request that no rule matches.
    pub no_route: NoRoute,
    /// When true, responses carry the winning rule's name in [`RULE_NAME_HEADER`].
    #[serde(skip_serializing_if = "is_false")]
    pub debug_rule_header: bool,
    /// The resources whose requests are counted together in the per-resource metrics, beyond the
    /// gateway's limit of series ([`MetricsFold`]); absent when every resource has its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_fold: Option<MetricsFold>,
    /// The rules, highest priority first: the first rule that matches wins.
    pub rules: Vec<RuleSpec>,
}

/// Which resources' requests the per-resource metrics count together, as `folded`
/// (docs/operations.md, "Per-resource request metrics"): those after [`MetricsFold::last_own`] in
/// name order (`Kind/namespace/name`). The first resources in that order, up to the limit, each
/// have series of their own ([`crate::metrics`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetricsFold {
    /// The last resource, in name order, with series of its own.
    pub last_own: String,
    /// How many resources come after it (the `switchyard_resources_folded` gauge).
    pub folded: u32,
}

/// What to do with a request that no rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum NoRoute {
    /// Answer with a local `404`.
    #[default]
    #[serde(rename = "404")]
    NotFound,
    /// Let the request through untouched (no cluster header is set).
    #[serde(rename = "pass")]
    Pass,
}

/// One rule: where it applies (host, path, conditions) and what it does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleSpec {
    /// Unique name, `<kind>/<namespace>/<name>#<n>` (for example `Ingress/prod/shop#0`).
    pub name: String,
    /// `example.net`, a single-label wildcard `*.example.net`, or absent for every host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The path the request must match.
    pub path: PathSpec,
    /// Further conditions; all must hold.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ConditionSpec>,
    /// What the filter does when this rule wins.
    pub action: ActionSpec,
    /// On a request that came over HTTPS (`:scheme` `https`): the `Strict-Transport-Security` value
    /// its response carries, whatever the action (ROUTING.md §8.4, ingress-nginx's `hsts`). Shared:
    /// every rule of a table with the same value holds one string ([`crate::RouteTable`] interns
    /// it), so that it costs a rule a pointer.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "shared_text")]
    pub hsts: Option<Arc<String>>,
    /// What the rule asks of a request before a route action sends it upstream ([`Policy`]).
    /// Shared as `hsts` is: every rule of a table with the same policy holds one.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "shared")]
    pub policy: Option<Arc<Policy>>,
}

/// What a rule asks of a request before its route action sends it upstream (issue "Policies beyond
/// the route"; a redirect or a direct response answers first, as nginx's rewrite phase does):
/// checked per request by the filter ([`crate::policy`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Policy {
    /// The largest request body, in bytes: a larger `content-length` is answered 413 at once, and a
    /// body without one is counted as it streams and answered 413 when it passes the limit
    /// (ingress-nginx's `proxy-body-size`, NGINX's `client-max-body-size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_body_bytes: Option<u64>,
    /// The client addresses that may pass (empty: any); another is answered 403 (ingress-nginx's
    /// `whitelist-source-range`). The address is the client's as Envoy derives it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<IpRange>,
    /// The client addresses answered 403, checked before `allow` (ingress-nginx's
    /// `denylist-source-range`, its ConfigMap's `block-cidrs`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<IpRange>,
    /// The gateway route that carries the rule's timeouts and retries, which Envoy's router applies
    /// per route: its name, which spells them (`timeout=0ms+idle=60000ms+retry=…`; the compiler's
    /// `route_config` module reads it back to write the route). The filter puts it in
    /// [`ROUTE_HEADER`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// Cross-origin requests allowed (ingress-nginx's `enable-cors`): a preflight from an allowed
    /// origin answered at once, the CORS headers on the other responses ([`crate::cors`]).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "shared")]
    pub cors: Option<Arc<Cors>>,
    /// Request rates and requests in flight limited (ingress-nginx's `limit-rps`, `limit-rpm`,
    /// `limit-connections`; HTTPProxy's `rateLimitPolicy.local`): a request over them is answered
    /// at once ([`crate::ratelimit`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// The users allowed in, with their passwords' hashes (ingress-nginx's `auth-type: basic`): a
    /// request without one's credential is answered 401 ([`crate::basic_auth`]). The hashes travel
    /// in the table to the gateway and nowhere else: `/table` and `explain` show the users only
    /// ([`TableSpec::without_credentials`]).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "shared")]
    pub basic_auth: Option<Arc<BasicAuth>>,
    /// The auth service asked before the request goes upstream (ingress-nginx's `auth-url`): its
    /// answer lets the request on or answers it ([`crate::external_auth`]).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "shared")]
    pub external_auth: Option<Arc<ExternalAuth>>,
}

/// A rule's request rates per client address (or for every client together), counted per gateway
/// replica and shared by its worker VMs, as each ingress-nginx pod counted on its own (nginx's
/// `limit_req` with `nodelay`; Envoy's local rate limit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RateLimit {
    /// What shares one count per address (ingress-nginx: the Ingress, `shop/api`).
    pub zone: String,
    /// Requests per second, and the burst taken at once above it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_second: Option<Rate>,
    /// Requests per minute, and its burst.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_minute: Option<Rate>,
    /// Requests per hour, and its burst.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_hour: Option<Rate>,
    /// Whether every client address counts on its own (nginx's `limit_req` keyed by address);
    /// `false`: every request of the zone counts together (Envoy's local rate limit, Contour's).
    #[serde(skip_serializing_if = "is_true")]
    pub per_client: bool,
    /// Requests in flight at once (`limit-connections`, nginx's `limit_conn`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<u32>,
    /// Client addresses never limited (`limit-whitelist`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exempt: Vec<IpRange>,
    /// The status a request over a rate is answered with (`limit-req-status-code`).
    pub status: u16,
    /// The status a request over the requests in flight is answered with (`limit-conn-status-code`).
    pub in_flight_status: u16,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit {
            zone: String::new(),
            per_second: None,
            per_minute: None,
            per_hour: None,
            per_client: true,
            in_flight: None,
            exempt: Vec::new(),
            status: 503,
            in_flight_status: 503,
        }
    }
}

/// A rate: so many requests per period, with a burst above it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Rate {
    /// Requests per period.
    pub requests: u32,
    /// Requests taken at once above the rate (nginx's `burst`, with `nodelay`).
    pub burst: u32,
}

/// A rule's CORS: as ingress-nginx's `cors-*` annotations set it, or as Contour sets Envoy's CORS
/// filter from an HTTPProxy's `corsPolicy` ([`CorsSemantics`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Cors {
    /// The origins allowed. ingress-nginx's: `*` (every one), or origins (`https://app.example.com:8443`,
    /// `null`), a `*` standing for one label (`https://*.example.com`), each matching the end of the
    /// request's `Origin`. Envoy's: `*` (every one), or origins the request's `Origin` equals, case
    /// ignored.
    pub allow_origin: Vec<String>,
    /// `Access-Control-Allow-Methods` (Envoy's: none when empty; `*` echoes the preflight's
    /// `Access-Control-Request-Method`).
    pub allow_methods: String,
    /// `Access-Control-Allow-Headers` (Envoy's: none when empty; `*` echoes the preflight's
    /// `Access-Control-Request-Headers`).
    pub allow_headers: String,
    /// `Access-Control-Expose-Headers` (none when empty).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub expose_headers: String,
    /// `Access-Control-Allow-Credentials: true`.
    pub allow_credentials: bool,
    /// `Access-Control-Max-Age`, in seconds (none when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_age: Option<u64>,
    /// Whose semantics the filter answers with (ingress-nginx's unless told).
    #[serde(skip_serializing_if = "CorsSemantics::is_nginx")]
    pub semantics: CorsSemantics,
    /// Envoy's only: regexes the whole `Origin` may match instead (`https://.*\.example\.com`),
    /// compiled when the table loads.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow_origin_regex: Vec<OriginRegex>,
    /// Envoy's only: a preflight asking for the private network
    /// (`Access-Control-Request-Private-Network: true`) is answered
    /// `Access-Control-Allow-Private-Network: true`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_private_network: bool,
    /// The gateway's route adds the headers of every response ([`Cors::same_for_every_response`]
    /// only: ingress-nginx's semantics with every origin allowed), so the filter adds them to its
    /// own answers alone (a preflight's, a refusal's). The compiler sets it for a gateway whose
    /// routes are Switchyard's (docs/routing.md, "CORS").
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub by_route: bool,
}

/// Whose CORS a [`Cors`] answers as ([`crate::cors`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CorsSemantics {
    /// ingress-nginx's template: origins matched at the end of `Origin`, a preflight is any
    /// `OPTIONS` and is answered `204`, every response gets every header.
    #[default]
    Nginx,
    /// Envoy's CORS filter (as Contour programs it): origins matched whole, a preflight is an
    /// `OPTIONS` with `Access-Control-Request-Method` and is answered `200`, the other responses
    /// get `-Allow-Origin`, `-Allow-Credentials` and `-Expose-Headers`.
    Envoy,
}

impl CorsSemantics {
    /// Whether these are ingress-nginx's (the default, left out of the table's JSON).
    pub fn is_nginx(&self) -> bool {
        *self == CorsSemantics::Nginx
    }
}

/// A regex an `Origin` must match whole (Envoy's `safe_regex`), compiled once.
#[derive(Debug, Clone)]
pub struct OriginRegex {
    source: String,
    regex: regex_lite::Regex,
}

impl OriginRegex {
    /// `pattern` compiled, anchored at both ends; `None` when it does not compile.
    pub fn new(pattern: &str) -> Option<OriginRegex> {
        let regex = crate::path::anchored_regex(pattern).ok()?;
        Some(OriginRegex {
            source: pattern.to_owned(),
            regex,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `text` matches the pattern whole.
    pub fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }
}

impl PartialEq for OriginRegex {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for OriginRegex {}

impl Serialize for OriginRegex {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.source)
    }
}

/// An address range, `10.0.0.0/8` or `2001:db8::/32` (a bare address is the range of itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IpRange {
    /// The range's first address (its host bits zero).
    pub network: std::net::IpAddr,
    /// The prefix length.
    pub prefix: u8,
}

impl IpRange {
    /// Parses `10.0.0.0/8`, `10.1.2.3` or `2001:db8::/32`; host bits set under the prefix are
    /// cleared (`10.1.2.3/8` is `10.0.0.0/8`, as nginx reads it).
    pub fn parse(text: &str) -> Option<IpRange> {
        let text = text.trim();
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix.parse::<u8>().ok()?)),
            None => (text, None),
        };
        let address: std::net::IpAddr = address.parse().ok()?;
        let bits = if address.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(bits);
        if prefix > bits {
            return None;
        }
        let range = IpRange {
            network: address,
            prefix,
        };
        Some(IpRange {
            network: range.masked(address)?,
            prefix,
        })
    }

    /// Whether `address` is in the range (an IPv4-mapped IPv6 address is its IPv4 address).
    pub fn contains(&self, address: std::net::IpAddr) -> bool {
        let address = match address {
            std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, std::net::IpAddr::V4),
            v4 => v4,
        };
        self.masked(address) == Some(self.network)
    }

    /// `address` with the bits past the prefix cleared; `None` for another family.
    fn masked(&self, address: std::net::IpAddr) -> Option<std::net::IpAddr> {
        use std::net::IpAddr::{V4, V6};
        match (self.network, address) {
            (V4(_), V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                Some(V4((u32::from(a) & mask).into()))
            }
            (V6(_), V6(a)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                Some(V6((u128::from(a) & mask).into()))
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for IpRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

impl Serialize for IpRange {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// How a rule matches the request path (the query string is never part of it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum PathSpec {
    /// The path equals the value (case-sensitive).
    Exact(String),
    /// Kubernetes `Prefix`: element-wise, so `/foo` matches `/foo` and `/foo/bar`, not `/foobar`;
    /// a trailing `/` in the value is ignored.
    SegmentPrefix(String),
    /// Plain string prefix, as HTTPProxy's `prefix`: `/foo` matches `/foobar`.
    Prefix(String),
    /// A `regex-lite` pattern that must match the whole path.
    Regex(String),
}

/// A condition on the request beyond host and path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ConditionSpec {
    /// What part of the request is tested.
    pub on: ConditionSource,
    /// Header name (any case), cookie name or query parameter name; absent for `method`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// How the value is tested.
    #[serde(rename = "match")]
    pub op: MatchOp,
    /// The operand; absent for `present`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// When true the condition holds exactly when the test fails for every value.
    #[serde(skip_serializing_if = "is_false")]
    pub invert: bool,
    /// When true `exact`, `prefix` and `contains` compare ASCII letters in any case (NGINX's `map`
    /// compares plain values so); not allowed with `regex` (write `(?i)`) or `present`.
    #[serde(skip_serializing_if = "is_false")]
    pub ignore_case: bool,
}

/// The part of the request a condition reads. The order is the priority order of ROUTING.md §4
/// key 4, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConditionSource {
    /// A cookie from any `Cookie` header; names are case-sensitive.
    Cookie,
    /// A request header; names are case-insensitive.
    Header,
    /// A percent-decoded query-string parameter; names are case-sensitive.
    Query,
    /// The request method.
    Method,
}

/// How a condition compares the request's values with its operand (values are case-sensitive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchOp {
    /// Equal.
    Exact,
    /// Starts with.
    Prefix,
    /// Contains.
    Contains,
    /// A `regex-lite` pattern matching the whole value.
    Regex,
    /// Present at all, whatever its value.
    Present,
}

/// What the filter does with a request this rule wins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionSpec {
    /// Send it upstream to one of the backends.
    Route(RouteAction),
    /// Answer locally (502 for a broken HTTPProxy include).
    DirectResponse(DirectResponse),
    /// Answer with a redirect whose `Location` is built per request (NGINX VirtualServer `redirect`).
    Redirect(Redirect),
}

/// Forward to a backend, with optional rewrites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouteAction {
    /// Candidate backends; one is picked at random in proportion to its weight.
    pub backends: Vec<Backend>,
    /// Replaces the part of the path that the rule's prefix (or exact path) matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewrite_prefix: Option<String>,
    /// Replaces the whole path when a regex is found in it, with its groups (NGINX's `rewritePath`
    /// on a regex location); not with `rewrite_prefix`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewrite_regex: Option<RegexRewrite>,
    /// Request headers to set (replacing any value the request had), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub set_headers: Vec<HeaderValue>,
    /// Request header names to remove.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remove_headers: Vec<String>,
    /// ingress-nginx's canary (ROUTING.md §7.6): some requests go to another cluster, decided per
    /// request by a header, a cookie, then a weight; the rest to `backends`. The rewrites and
    /// headers above apply to both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canary: Option<Box<Canary>>,
    /// The key by which the request is hashed to one endpoint of its backend, whose cluster hashes
    /// (cookie affinity, a request hash: [`crate::affinity`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Box<Affinity>>,
}

/// How a route's requests are keyed to one endpoint of their backend ([`crate::affinity`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Affinity {
    /// By a cookie's value; a request without the cookie gets a new key and its response the
    /// cookie.
    Cookie(AffinityCookie),
    /// By parts of the request, joined in order.
    Hash(Vec<HashPart>),
}

/// The cookie of a cookie affinity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AffinityCookie {
    /// Its name.
    pub name: String,
    /// What follows `name=value` in a new key's `Set-Cookie` (`Path=/; Max-Age=3600; HttpOnly`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub attributes: String,
}

/// One part of a request hash's key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HashPart {
    /// Literal text.
    Text(String),
    /// A request header's first value.
    Header(String),
    /// A cookie's value.
    Cookie(String),
    /// A query parameter's first value.
    Query(String),
    /// The path, without the query (nginx's `$uri`).
    Path,
    /// The path with the query (nginx's `$request_uri`).
    Uri,
    /// The query string (nginx's `$args`).
    Args,
    /// The host (nginx's `$host`).
    Host,
    /// The method.
    Method,
    /// The client's address, which Envoy adds to the key.
    ClientAddress,
    /// When the part before gave a value, the key ends there (Contour's `terminal`).
    Stop,
}

impl RouteAction {
    /// To one backend, `cluster`, with no rewrite, header action or canary.
    pub fn to(cluster: String) -> RouteAction {
        RouteAction {
            backends: vec![Backend { cluster, weight: 1 }],
            rewrite_prefix: None,
            rewrite_regex: None,
            set_headers: Vec::new(),
            remove_headers: Vec::new(),
            canary: None,
            affinity: None,
        }
    }
}

/// ingress-nginx's canary (ROUTING.md §7.6), decided per request in this order: the header (when
/// present), the cookie (when present), the weight; else the main backends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Canary {
    /// The canary's cluster.
    pub cluster: String,
    /// `canary-by-header`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<CanaryHeader>,
    /// `canary-by-cookie`: a cookie name, compared in any case; `always` → canary, `never` → main.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cookie: Option<String>,
    /// `canary-weight`: the canary gets `weight` requests in `weight_total`.
    #[serde(skip_serializing_if = "is_zero")]
    pub weight: u32,
    /// `canary-weight-total` (100 unless above 100); `weight` may not exceed it.
    #[serde(skip_serializing_if = "is_hundred")]
    pub weight_total: u32,
}

/// `canary-by-header`: the header's name and how its (first) value decides. With `value`: that value
/// → canary; with `pattern`: a value the regex finds itself in (case-sensitive) → canary; with
/// `main`: any value → main, and stop (ingress-nginx's answer to a pattern it cannot compile); with
/// none of them: `always` → canary, `never` → main. Any other value: on to the cookie.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CanaryHeader {
    /// The header's name.
    pub name: String,
    /// `canary-by-header-value`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `canary-by-header-pattern` (`regex-lite`, searched).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// The header, when present, sends the request to the main backends.
    #[serde(skip_serializing_if = "is_false")]
    pub main: bool,
}

/// A path rewrite with a regex's groups: when `pattern` is found in the path (searched, leftmost
/// first, the query string left out), the path becomes `path` with `$1`…`$9` (`$0`: the whole
/// match) replaced by the groups; the query string is kept. Not found: the path stays as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegexRewrite {
    /// The regex (`regex-lite`), searched, not anchored.
    pub pattern: String,
    /// The new path: starts with `/`; `$0`…`$9` are the groups (an unmatched group is empty).
    pub path: String,
    /// Request headers set only when the regex is found, `$0`…`$9` in their values replaced as in
    /// `path`; a header whose value comes out empty is not set (ingress-nginx's `x-forwarded-prefix`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HeaderValue>,
}

/// One upstream choice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Backend {
    /// The Envoy cluster name written into the cluster header.
    pub cluster: String,
    /// Relative weight; zero means never chosen.
    pub weight: u32,
}

/// A header to set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeaderValue {
    /// Header name.
    pub name: String,
    /// Header value.
    pub value: String,
}

/// A local reply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DirectResponse {
    /// HTTP status, 200 to 599.
    pub status: u16,
    /// Body text; when absent the filter writes a short line naming the host and path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The `content-type` of the reply; `text/plain` when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Further response headers, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HeaderValue>,
}

/// A redirect answered by the filter. `url` may hold the variables of [`crate::redirect::Variable`]
/// (`${scheme}`, `${host}`, `${request_uri}`, `${http_host}`, `${args}`, `${1}`…), replaced per
/// request; table/README.md lists them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redirect {
    /// The `Location` template.
    pub url: String,
    /// 301, 302, 303, 307 or 308.
    pub status: u16,
}

/// An optional shared string, written as the string.
fn shared_text<S: serde::Serializer>(value: &Option<Arc<String>>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(text) => serializer.serialize_str(text),
        None => serializer.serialize_none(),
    }
}

/// Whether a flag is `true` (left out of the JSON then: its default).
fn is_true(value: &bool) -> bool {
    *value
}

/// A shared value serialized as the value itself.
fn shared<S: serde::Serializer, T: Serialize>(value: &Option<Arc<T>>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => value.serialize(serializer),
        None => serializer.serialize_none(),
    }
}

fn default_cluster_header() -> String {
    DEFAULT_CLUSTER_HEADER.to_owned()
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_hundred(n: &u32) -> bool {
    *n == 100
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl TableSpec {
    /// The table as people may read it (`/table`, the dashboard, a saved explanation): every basic
    /// auth's hashes replaced by [`crate::basic_auth::HIDDEN`]. Borrowed when no rule has one.
    pub fn without_credentials(&self) -> std::borrow::Cow<'_, TableSpec> {
        let has_credentials = |rule: &RuleSpec| rule.policy.as_ref().is_some_and(|p| p.basic_auth.is_some());
        if !self.rules.iter().any(has_credentials) {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut table = self.clone();
        for policy in table.rules.iter_mut().filter_map(|rule| rule.policy.as_mut()) {
            if let Some(auth) = &policy.basic_auth {
                let hidden = Arc::new(auth.without_hashes());
                Arc::make_mut(policy).basic_auth = Some(hidden);
            }
        }
        std::borrow::Cow::Owned(table)
    }

    /// The number of distinct hosts (exact and wildcard) the rules name, as
    /// [`crate::RouteTable::host_count`] counts them once the table is indexed (host names are
    /// case-insensitive), without indexing it.
    pub fn host_count(&self) -> usize {
        use std::borrow::Cow;
        let hosts: rustc_hash::FxHashSet<Cow<'_, str>> = self
            .rules
            .iter()
            .filter_map(|rule| rule.host.as_deref())
            .map(|host| match host.bytes().any(|b| b.is_ascii_uppercase()) {
                true => Cow::Owned(host.to_ascii_lowercase()),
                false => Cow::Borrowed(host),
            })
            .collect();
        hosts.len()
    }
}

impl Default for TableSpec {
    fn default() -> Self {
        TableSpec {
            version: VERSION,
            generation: String::new(),
            cluster_header: default_cluster_header(),
            no_route: NoRoute::NotFound,
            debug_rule_header: false,
            metrics_fold: None,
            rules: Vec::new(),
        }
    }
}
