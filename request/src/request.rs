//! One request's trip through the filter: strip the client's cluster header, match, then either set
//! the cluster header (with the rule's rewrite and header actions) or answer locally.

use std::borrow::Cow;

use std::sync::Arc;
use switchyard_table::affinity::{HASH_HEADER, HASH_WITH_ADDRESS_HEADER};
use switchyard_table::basic_auth;
use switchyard_table::cors::{self, CorsHeaders, CorsVerdict};
use switchyard_table::format::{HSTS_HEADER, ROUTE_HEADER, RULE_NAME_HEADER};
use switchyard_table::metrics::Series;
use switchyard_table::policy::{check_headers, BodyBudget, HeadersVerdict};
use switchyard_table::ratelimit::{self, Admission, Held};

use switchyard_table::compact::Inflater;
use switchyard_table::shards::ShardedTable;
use switchyard_table::{
    normalize_authority, request_path, ActionSpec, Decision, NoRoute, Policy, RequestView, RouteTable, TableError,
};

use crate::auth::{AuthCall, AuthCookies};
use crate::headers::{HeaderBlock, Span};
use crate::host::{Host, HostCallFailed};
use crate::meter::Winner;

/// What the filter did with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The cluster header was set for the rule at `position`; the request continues to Envoy's router.
    Routed {
        /// The winning rule's position in the table.
        position: usize,
    },
    /// The rule at `position` answered with its direct response.
    Direct {
        /// The winning rule's position in the table.
        position: usize,
        /// The status sent.
        status: u16,
    },
    /// The rule at `position` won but the host refused to set the cluster header: the request goes
    /// on without the table's cluster (a header the client sent is removed, as far as the host lets
    /// it), so it is counted as a failure, not as routed.
    ClusterNotSet {
        /// The winning rule's position in the table.
        position: usize,
        /// The host call's failure.
        error: HostCallFailed,
    },
    /// No rule matched and the filter answered 404.
    NotFound,
    /// No rule matched and the table says to let the request through untouched.
    Passed,
}

impl Outcome {
    /// The winning rule's position, when a rule won.
    pub fn position(&self) -> Option<usize> {
        match *self {
            Outcome::Routed { position }
            | Outcome::Direct { position, .. }
            | Outcome::ClusterNotSet { position, .. } => Some(position),
            Outcome::NotFound | Outcome::Passed => None,
        }
    }
}

/// The request as the matcher sees it: the whole header map is read in one host call
/// (`proxy_get_header_map_pairs`), and `:authority`, `:path`, `:method` and every condition's header
/// are taken from it. Measured against two `get_header` calls (`:authority`, `:path`) and the map
/// only on a condition's first use: BENCHMARKS.md, "Filter in Envoy". The cluster header is hidden:
/// whatever the client sent there, no condition sees it.
pub struct HostRequest<'h> {
    hidden: &'h str,
    authority: Option<Span>,
    path: Option<Span>,
    method: Option<Span>,
    headers: HeaderBlock,
}

impl<'h> HostRequest<'h> {
    /// Reads the request's header map; `hidden` (the cluster header, lowercase) is never shown to a
    /// condition.
    pub fn new(host: &impl Host, hidden: &'h str) -> Self {
        let headers = host.request_headers();
        HostRequest {
            hidden,
            authority: headers.first(":authority").or_else(|| headers.first("host")),
            path: headers.first(":path"),
            method: headers.first(":method"),
            headers,
        }
    }

    fn text(&self, span: Option<Span>) -> Option<&str> {
        span.map(|span| self.headers.text(span))
    }
}

impl RequestView for HostRequest<'_> {
    fn authority(&self) -> &str {
        self.text(self.authority).unwrap_or_default()
    }

    fn path(&self) -> &str {
        self.text(self.path).unwrap_or("/")
    }

    fn method(&self) -> &str {
        self.text(self.method).unwrap_or_default()
    }

    fn header_values(&self, name: &str) -> Vec<Cow<'_, str>> {
        self.values(name).map(Cow::Borrowed).collect()
    }

    // The matcher's path: walks the header block without collecting the values.
    fn any_header_value(&self, name: &str, test: &mut dyn FnMut(&str) -> bool) -> bool {
        self.values(name).any(test)
    }
}

impl HostRequest<'_> {
    /// Every header but the hidden cluster header and Switchyard's own (the gateway route's, the
    /// affinity keys'): what the request itself carries.
    pub fn forwardable_headers(&self) -> impl Iterator<Item = (&str, &str)> {
        let own = [self.hidden, ROUTE_HEADER, HASH_HEADER, HASH_WITH_ADDRESS_HEADER];
        (self.headers.iter()).filter(move |(name, _)| !own.iter().any(|o| o.eq_ignore_ascii_case(name)))
    }

    /// Every value of header `name` except the hidden cluster header's.
    fn values<'s, 'n>(&'s self, name: &'n str) -> impl Iterator<Item = &'s str> + use<'s, 'n> {
        let hidden = name.eq_ignore_ascii_case(self.hidden);
        self.headers
            .iter()
            .filter(move |(key, _)| !hidden && key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value)
    }
}

/// Routes one request with `table`, using `random` for a weighted choice. Never panics.
///
/// A client never picks its backend: a cluster header it sent is hidden from the matcher, then
/// replaced by the winner's cluster when the request is routed, or removed when it passes through
/// unrouted (a local reply sends nothing upstream). Replacing instead of removing first saves a host
/// call on every routed request.
pub fn handle_request(host: &mut impl Host, table: &RouteTable, random: u64) -> Outcome {
    handle_whole(host, table, random).0
}

/// [`handle_request`], with what the response of a routed request gets ([`Handled::response`]).
pub fn handle_whole(host: &mut impl Host, table: &RouteTable, random: u64) -> (Outcome, Followup) {
    let request = HostRequest::new(&*host, table.cluster_header());
    let decision = table.route(&request, random);
    answer(host, table, &request, (decision.map(|d| (d.position, d)), random))
}

/// What the filter does later in a routed request's life: the headers it adds to the upstream's
/// response, and the body limit it counts the request's body against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Followup {
    /// The `Strict-Transport-Security` value (ROUTING.md §8.4): the table's shared string.
    pub hsts: Option<Arc<String>>,
    /// A cookie affinity's new key, a `Set-Cookie` added beside the upstream's own
    /// ([`switchyard_table::affinity`]).
    pub set_cookie: Option<String>,
    /// The rule's body limit, when the request's headers did not settle it
    /// ([`switchyard_table::policy`]).
    pub body: Option<BodyBudget>,
    /// The CORS headers of the response ([`switchyard_table::cors`]).
    pub cors: Option<CorsHeaders>,
    /// The request's place among its address's requests in flight, which the caller lets go
    /// (`switchyard_table::ratelimit::leave`) when the stream ends, however it ends.
    pub held: Option<Held>,
    /// The subrequest to the rule's auth service, which the caller sends at once, holding the
    /// request until the answer decides it ([`crate::auth`]).
    pub auth: Option<AuthCall>,
    /// The auth service's cookies for the response, once it let the request through.
    pub auth_cookies: Option<AuthCookies>,
}

impl Followup {
    /// Counts a chunk of the request's body of `bytes`; `false` once the body is over the
    /// rule's limit (the caller answers `switchyard_table::policy::TOO_LARGE` and sends nothing
    /// more upstream).
    pub fn body_chunk(&mut self, bytes: u64) -> bool {
        self.body.as_mut().is_none_or(|budget| budget.take(bytes))
    }
}

/// ROUTING.md §8.4: the `Strict-Transport-Security` value of `rule` for `request`, when it came
/// over HTTPS (`:scheme` is `https`, as Envoy sets it on a TLS connection): the table's shared
/// string, never copied.
fn hsts(rule: &switchyard_table::Rule, request: &HostRequest<'_>) -> Option<Arc<String>> {
    let value = rule.spec().hsts.as_ref()?;
    request
        .any_header_value(":scheme", &mut |s| s.eq_ignore_ascii_case("https"))
        .then(|| Arc::clone(value))
}

/// Where a request's winning rule is: its position in a whole table, or its shard's own table and
/// its position there (the rule's name, for the debug response header and the logs).
pub enum RuleRef {
    /// In a whole table.
    Whole(usize),
    /// In a shard.
    Shard(Arc<RouteTable>, usize),
}

impl RuleRef {
    /// The rule's name, read from its shard or from `table`, the table the request was routed by
    /// (for a sharded table, its head: which holds no rule).
    pub fn name<'t>(&'t self, table: &'t RouteTable) -> Option<&'t str> {
        let (table, position) = match self {
            RuleRef::Whole(position) => (table, *position),
            RuleRef::Shard(shard, position) => (&**shard, *position),
        };
        table.rules().get(position).map(|r| r.name())
    }
}

/// What a request came to, with its winner ([`handle_sharded`], `Loaded::handle`).
pub struct Handled {
    /// What the filter did with the request.
    pub outcome: Outcome,
    /// The winning rule. From a sharded table, kept only when the table asks for the debug
    /// response header or the cluster header could not be set (the log names the rule): workers do
    /// not count references to one shard on every request.
    pub rule: Option<RuleRef>,
    /// A shard that had to be decoded for the request and could not be (the host's `uncompress`
    /// failed): the request was answered 503, [`Outcome::Direct`] at position `usize::MAX`.
    pub error: Option<TableError>,
    /// What the filter adds to the upstream's response of a routed request (`Strict-Transport-Security`,
    /// ROUTING.md §8.4; an affinity's `Set-Cookie`); nothing for a local reply, which carries its
    /// own.
    pub response: Followup,
}

/// [`handle_request`] with a table held in shards, decoded as requests need them (inflated by
/// `inflater`): the same decisions as the whole table's.
pub fn handle_sharded(host: &mut impl Host, table: &ShardedTable, random: u64, inflater: &dyn Inflater) -> Handled {
    let request = HostRequest::new(&*host, table.cluster_header());
    let mut rule = None;
    let mut response = Followup::default();
    let routed = table.route(&request, random, inflater, |winner| {
        let outcome;
        (outcome, response) = answer(
            host,
            table.head(),
            &request,
            (winner.map(|w| (w.position, w.decision)), random),
        );
        if table.debug_rule_header() || matches!(outcome, Outcome::ClusterNotSet { .. }) {
            rule = winner.map(|w| RuleRef::Shard(Arc::clone(w.shard), w.decision.position));
        }
        outcome
    });
    match routed {
        Ok(outcome) => Handled {
            outcome,
            rule,
            error: None,
            response,
        },
        Err(error) => {
            host.note_winner(Winner::NONE);
            host.remove_request_header(table.cluster_header());
            host.send_response(
                503,
                &[("content-type", "text/plain")],
                "503 a shard of the route table could not be decoded\n",
            );
            Handled {
                outcome: Outcome::Direct {
                    position: usize::MAX,
                    status: 503,
                },
                rule: None,
                error: Some(error),
                response: Followup::default(),
            }
        }
    }
}

/// Acts on the decision for `request` (its winner's position in the table and the decision, and the
/// request's random number), with `table`'s settings (cluster header, no-route policy, debug
/// header); with what the upstream's response gets ([`Handled::response`]: a routed request's; a
/// local reply carries its own).
fn answer(
    host: &mut impl Host,
    table: &RouteTable,
    request: &HostRequest<'_>,
    (decision, random): (Option<(usize, Decision<'_>)>, u64),
) -> (Outcome, Followup) {
    host.note_winner(match &decision {
        Some((position, decision)) => {
            let (rule, backend) = (decision.rule.name(), decision.backend.map(|b| b.cluster.as_str()));
            Winner {
                rule,
                series: Series::of(rule, backend, table.metrics_fold()),
                place: u32::try_from(*position).ok(),
            }
        }
        None => Winner::NONE,
    });
    let Some((position, decision)) = decision else {
        let outcome = match table.no_route() {
            NoRoute::Pass => {
                host.remove_request_header(table.cluster_header());
                Outcome::Passed
            }
            _ => {
                let body = short_body(404, request);
                host.send_response(404, &[("content-type", "text/plain")], &body);
                Outcome::NotFound
            }
        };
        return (outcome, Followup::default());
    };
    let rule = decision.rule;
    let hsts = hsts(rule, request);
    let reply = LocalReply {
        rule_name: table.debug_rule_header().then(|| rule.name()),
        hsts: hsts.as_deref().map(|value| value.as_str()),
    };
    let (mut set_cookie, mut body, mut cors, mut held, mut auth) = (None, None, None, None, None);
    let outcome = match rule.action() {
        ActionSpec::DirectResponse(direct) => {
            let body = direct
                .body
                .clone()
                .unwrap_or_else(|| short_body(direct.status, request));
            let content_type = direct.content_type.as_deref().unwrap_or("text/plain");
            let mut headers = vec![("content-type", content_type)];
            headers.extend(direct.headers.iter().map(|h| (h.name.as_str(), h.value.as_str())));
            reply.send(host, direct.status, headers, &body);
            Outcome::Direct {
                position,
                status: direct.status,
            }
        }
        ActionSpec::Redirect(_) => {
            // Every variable comes from the header map already read (`:scheme` included).
            let Some((status, location)) = rule.redirect_for(request) else {
                // Unreachable for a validated table (every redirect rule has its template).
                host.send_response(500, &[("content-type", "text/plain")], "redirect without a location\n");
                return (Outcome::Direct { position, status: 500 }, Followup::default());
            };
            reply.send(host, status, vec![("location", location.as_str())], "");
            Outcome::Direct { position, status }
        }
        ActionSpec::Route(route) => {
            let policy = rule.spec().policy.as_deref();
            match policy.map(|policy| admit(host, policy, request)) {
                None => {}
                Some(Admitted::Pass(passed)) => {
                    if passed.authenticated {
                        // ingress-nginx's template: the credential stops at the gateway.
                        host.remove_request_header("authorization");
                    }
                    (body, cors, held, auth) = (passed.body, passed.cors, passed.held, passed.auth);
                }
                Some(Admitted::Preflight(answer)) => {
                    host.remove_request_header(table.cluster_header());
                    let owned = cors_pairs(Some(&answer));
                    let mut headers: Vec<(&str, &str)> = owned.iter().map(|(n, v)| (*n, v.as_str())).collect();
                    headers.extend(answer.content_type().map(|value| ("content-type", value)));
                    let status = answer.status();
                    reply.send(host, status, headers, "");
                    return (Outcome::Direct { position, status }, Followup::default());
                }
                Some(Admitted::Refused(refusal)) => {
                    reply.refuse(host, (table, request), &refusal);
                    let status = refusal.status;
                    return (Outcome::Direct { position, status }, Followup::default());
                }
            }
            // A regex rewrite may set headers with the path's groups (ingress-nginx's
            // `x-forwarded-prefix`); a prefix rewrite sets the path alone.
            let rewritten = rule.rewrite(request.path());
            for name in &route.remove_headers {
                host.remove_request_header(name);
            }
            // The rule's own header actions are best effort: a refused one leaves that header as it
            // was. `:authority` among them is the Host the backend receives (`upstream-vhost`).
            for header in &route.set_headers {
                let _ = host.set_request_header(&header.name, &header.value);
            }
            if let Some(rewritten) = &rewritten {
                for (name, value) in &rewritten.headers {
                    let _ = host.set_request_header(name, value);
                }
                let _ = host.set_request_header(":path", &rewritten.path);
            }
            if let Some(affinity) = &route.affinity {
                set_cookie = key_by(host, request, affinity, random);
            }
            name_route(host, request, policy.and_then(|policy| policy.route.as_deref()));
            match decision.backend {
                // Last, so no header action can overwrite it; it replaces any value the client sent.
                Some(backend) => match host.set_request_header(table.cluster_header(), &backend.cluster) {
                    Ok(()) => Outcome::Routed { position },
                    Err(error) => {
                        // Whatever the client sent must not route the request in the table's place.
                        host.remove_request_header(table.cluster_header());
                        Outcome::ClusterNotSet { position, error }
                    }
                },
                None => {
                    host.remove_request_header(table.cluster_header());
                    Outcome::Routed { position }
                }
            }
        }
    };
    let additions = match outcome {
        Outcome::Routed { .. } => Followup {
            hsts,
            set_cookie,
            body,
            cors,
            held,
            auth,
            auth_cookies: None,
        },
        _ => {
            // Only a routed request's place is let go at its stream's end: any other, now.
            if let (Some(place), Some(counters)) = (&held, host.rate_counters()) {
                ratelimit::leave(counters, place);
            }
            Followup::default()
        }
    };
    (outcome, additions)
}

/// What a rule's policy makes of a request ([`admit`]).
enum Admitted {
    /// It goes upstream, with what comes later in its life.
    Pass(Passed),
    /// A CORS preflight, answered with these headers.
    Preflight(CorsHeaders),
    /// Refused.
    Refused(Refusal),
}

/// How a policy refuses a request.
struct Refusal {
    status: u16,
    /// A basic authentication's `WWW-Authenticate` (a 401).
    challenge: Option<String>,
    /// The CORS headers of a CORS request: every answer to one carries them, as ingress-nginx's
    /// `more_set_headers` adds them whatever the status.
    cors: Option<CorsHeaders>,
}

/// What a request a policy let through takes along.
#[derive(Default)]
struct Passed {
    body: Option<BodyBudget>,
    cors: Option<CorsHeaders>,
    held: Option<Held>,
    /// Whether it passed a basic authentication (its credential is not sent upstream).
    authenticated: bool,
    /// The subrequest its external authentication asks.
    auth: Option<AuthCall>,
}

impl Passed {
    /// Refused with `status`, with the CORS headers found so far.
    fn refused(self, status: u16) -> Admitted {
        Admitted::Refused(Refusal {
            status,
            challenge: None,
            cors: self.cors,
        })
    }
}

/// `policy` on `request`, in nginx's phase order: a CORS preflight answered (its rewrite phase),
/// the request rates (preaccess), the address ranges and a declared body, then the basic
/// authentication (access), then, last, a place among the address's requests in flight, so that
/// only a request that goes upstream holds one. The client's address is asked of the host once,
/// and only by a policy that reads it.
fn admit(host: &impl Host, policy: &Policy, request: &HostRequest<'_>) -> Admitted {
    let mut passed = Passed::default();
    match policy.cors.as_ref().map(|c| cors::check(c, request)) {
        None | Some(CorsVerdict::None) => {}
        Some(CorsVerdict::Response(headers)) => passed.cors = Some(headers),
        Some(CorsVerdict::Preflight(answer)) => return Admitted::Preflight(answer),
    }
    let reads_address = policy.rate_limit.is_some()
        || policy.external_auth.is_some()
        || !(policy.allow.is_empty() && policy.deny.is_empty());
    let client = if reads_address { host.client_address() } else { None };
    let limit = policy.rate_limit.as_ref();
    let counters = limit.and_then(|_| host.rate_counters());
    if let (Some(limit), Some(counters)) = (limit, counters) {
        if let Admission::Refuse(status) = ratelimit::admit(limit, counters, client, host.now_ms()) {
            return passed.refused(status);
        }
    }
    match check_headers(policy, request, || client) {
        HeadersVerdict::Pass(budget) => passed.body = budget,
        HeadersVerdict::Refuse(status) => return passed.refused(status),
    }
    if let Some(auth) = &policy.basic_auth {
        if !basic_auth::admits(auth, request) {
            let challenge = Some(basic_auth::challenge(auth));
            let cors = passed.cors;
            return Admitted::Refused(Refusal {
                status: basic_auth::UNAUTHORIZED,
                challenge,
                cors,
            });
        }
        passed.authenticated = true;
    }
    if let Some(auth) = &policy.external_auth {
        passed.auth = Some(AuthCall::new(auth, request, request.forwardable_headers(), client));
    }
    if let (Some(limit), Some(counters)) = (limit, counters) {
        match ratelimit::enter(limit, counters, client) {
            Ok(place) => passed.held = place,
            Err(status) => return passed.refused(status),
        }
    }
    Admitted::Pass(passed)
}

/// What every local reply to a rule's request ends with: the debug header naming the rule (when
/// the table asks for it) and the rule's `Strict-Transport-Security` (ROUTING.md §8.4).
struct LocalReply<'a> {
    rule_name: Option<&'a str>,
    hsts: Option<&'a str>,
}

impl LocalReply<'_> {
    /// Answers `status` with `headers`, then the closing ones, and `body`.
    fn send<'h>(&'h self, host: &mut impl Host, status: u16, mut headers: Vec<(&'h str, &'h str)>, body: &str) {
        headers.extend(self.rule_name.map(|name| (RULE_NAME_HEADER, name)));
        headers.extend(self.hsts.map(|value| (HSTS_HEADER, value)));
        host.send_response(status, &headers, body);
    }

    /// Refuses a request its rule's policy stops: no cluster named, the refusal's status with its
    /// short body, its challenge and CORS headers.
    fn refuse(&self, host: &mut impl Host, (table, request): (&RouteTable, &HostRequest<'_>), refusal: &Refusal) {
        host.remove_request_header(table.cluster_header());
        let cors = cors_pairs(refusal.cors.as_ref());
        let mut headers = vec![("content-type", "text/plain")];
        headers.extend(refusal.challenge.as_deref().map(|value| ("www-authenticate", value)));
        headers.extend(cors.iter().map(|(name, value)| (*name, value.as_str())));
        let status = refusal.status;
        self.send(host, status, headers, &short_body(status, request));
    }
}

/// The CORS headers' names and values, owned for a local reply.
fn cors_pairs(headers: Option<&CorsHeaders>) -> Vec<(&'static str, String)> {
    let mut pairs = Vec::new();
    if let Some(headers) = headers {
        headers.each(|name, value| pairs.push((name, value.to_owned())));
    }
    pairs
}

/// Names the rule's gateway route (its timeouts and retries) in [`ROUTE_HEADER`], or removes the
/// header a client sent: only the table picks a route.
fn name_route(host: &mut impl Host, request: &HostRequest<'_>, route: Option<&str>) {
    let set = route.is_some_and(|route| host.set_request_header(ROUTE_HEADER, route).is_ok());
    if !set && request.any_header_value(ROUTE_HEADER, &mut |_| true) {
        host.remove_request_header(ROUTE_HEADER);
    }
}

/// Sets the affinity's key of `request` in its header (removing any value a client sent for
/// either key header); returns the `Set-Cookie` of a new cookie key.
fn key_by(
    host: &mut impl Host,
    request: &HostRequest<'_>,
    affinity: &switchyard_table::Affinity,
    random: u64,
) -> Option<String> {
    for header in [HASH_HEADER, HASH_WITH_ADDRESS_HEADER] {
        if request.any_header_value(header, &mut |_| true) {
            host.remove_request_header(header);
        }
    }
    let key = switchyard_table::affinity::key(affinity, request, random);
    if let Some(header) = key.header {
        // Best effort, as the rule's own headers: without it the client's address keys the request.
        let _ = host.set_request_header(header, &key.value);
    }
    key.set_cookie
}

/// The body of a local reply: the status's meaning, the host and the path (no query), nothing internal.
fn short_body(status: u16, request: &impl RequestView) -> String {
    let meaning = match status {
        404 => "no route",
        401 => "authorization required",
        403 => "forbidden",
        413 => "request body too large",
        502 => "bad gateway",
        503 => "service unavailable",
        _ => "answered by the proxy",
    };
    let host = normalize_authority(request.authority());
    let path = request_path(request.path());
    format!("{status} {meaning} for host {host:?} path {path:?}\n")
}

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::Cell;

    use super::*;

    /// A local reply: status, headers, body.
    type Reply = (u16, Vec<(String, String)>, String);

    /// A host holding one request; counts header-map fetches to prove laziness. `refuse` names a
    /// header whose setting the host refuses (as Envoy answers a host call with a failed status).
    #[derive(Debug, Default)]
    pub(crate) struct FakeHost {
        headers: Vec<(String, String)>,
        map_fetches: Cell<usize>,
        response: Option<Reply>,
        refuse: Option<&'static str>,
        /// The winner the filter noted: rule, resource and its series' labels.
        winner: Option<(String, String, [String; 4])>,
        /// The client's address, when the host can tell.
        address: Option<std::net::IpAddr>,
    }

    impl FakeHost {
        pub(crate) fn new(authority: &str, path: &str, extra: &[(&str, &str)]) -> Self {
            let mut headers = vec![
                (":authority".to_owned(), authority.to_owned()),
                (":path".to_owned(), path.to_owned()),
                (":method".to_owned(), "GET".to_owned()),
            ];
            headers.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
            FakeHost {
                headers,
                ..FakeHost::default()
            }
        }

        fn get(&self, name: &str) -> Vec<&str> {
            self.headers
                .iter()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
                .collect()
        }
    }

    impl Host for FakeHost {
        fn request_headers(&self) -> HeaderBlock {
            self.map_fetches.set(self.map_fetches.get() + 1);
            HeaderBlock::from_pairs(self.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        }
        fn set_request_header(&mut self, name: &str, value: &str) -> Result<(), HostCallFailed> {
            if self.refuse == Some(name) {
                return Err(HostCallFailed(10));
            }
            self.remove_request_header(name);
            self.headers.push((name.to_owned(), value.to_owned()));
            Ok(())
        }
        fn remove_request_header(&mut self, name: &str) {
            self.headers.retain(|(k, _)| k != name);
        }
        fn client_address(&self) -> Option<std::net::IpAddr> {
            self.address
        }
        fn note_winner(&mut self, winner: Winner<'_>) {
            let labels = winner.series.labels().map(str::to_owned);
            self.winner = Some((winner.rule.to_owned(), winner.resource().to_owned(), labels));
        }
        fn send_response(&mut self, status: u16, headers: &[(&str, &str)], body: &str) {
            let headers = headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            self.response = Some((status, headers, body.to_owned()));
        }
    }

    fn table(no_route: &str) -> RouteTable {
        let json = format!(
            r#"{{"version":1,"no_route":"{no_route}","debug_rule_header":true,"rules":[
            {{"name":"a#0","host":"example.net","path":{{"type":"segment_prefix","value":"/bar"}},
              "conditions":[{{"on":"cookie","name":"cookie-key","match":"exact","value":"value"}}],
              "action":{{"route":{{"backends":[{{"cluster":"production/service2:80"}}]}}}}}},
            {{"name":"a#1","host":"example.net","path":{{"type":"segment_prefix","value":"/bar"}},
              "conditions":[{{"on":"header","name":"header-key","match":"exact","value":"value"}}],
              "action":{{"route":{{"backends":[{{"cluster":"production/service1:80"}}]}}}}}},
            {{"name":"a#2","host":"example.net","path":{{"type":"prefix","value":"/app"}},
              "action":{{"route":{{"backends":[{{"cluster":"p/app:80","weight":1}},{{"cluster":"p/app2:80","weight":3}}],
                "rewrite_prefix":"/","set_headers":[{{"name":"x-team","value":"shop"}}],"remove_headers":["x-debug"]}}}}}},
            {{"name":"a#3","host":"root.example.org","path":{{"type":"prefix","value":"/missing"}},
              "action":{{"direct_response":{{"status":502}}}}}}]}}"#
        );
        match RouteTable::from_json(json.as_bytes()) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn cookie_rule_beats_header_rule_and_sets_the_cluster() {
        let mut host = FakeHost::new(
            "example.net",
            "/bar/foo",
            &[("header-key", "value"), ("cookie", "cookie-key=value")],
        );
        assert_eq!(
            handle_request(&mut host, &table("404"), 0),
            Outcome::Routed { position: 0 }
        );
        assert_eq!(host.get("x-route-cluster"), ["production/service2:80"]);
        assert_eq!(host.map_fetches.get(), 1, "the header map is fetched once");
    }

    #[test]
    fn a_client_cluster_header_is_removed_before_matching() {
        let mut host = FakeHost::new(
            "example.net",
            "/bar",
            &[("x-route-cluster", "evil/admin:80"), ("header-key", "value")],
        );
        assert_eq!(
            handle_request(&mut host, &table("404"), 0),
            Outcome::Routed { position: 1 }
        );
        assert_eq!(host.get("x-route-cluster"), ["production/service1:80"]);

        let mut host = FakeHost::new("nowhere.net", "/", &[("x-route-cluster", "evil/admin:80")]);
        assert_eq!(handle_request(&mut host, &table("pass"), 0), Outcome::Passed);
        assert!(host.get("x-route-cluster").is_empty());
    }

    #[test]
    fn a_refused_cluster_header_is_a_failure_not_a_route_and_the_clients_value_is_removed() {
        let mut host = FakeHost::new(
            "example.net",
            "/bar",
            &[("x-route-cluster", "evil/admin:80"), ("header-key", "value")],
        );
        host.refuse = Some("x-route-cluster");
        assert_eq!(
            handle_request(&mut host, &table("404"), 0),
            Outcome::ClusterNotSet {
                position: 1,
                error: HostCallFailed(10)
            }
        );
        assert!(host.get("x-route-cluster").is_empty(), "{:?}", host.headers);
        assert!(host.response.is_none(), "the request goes on; no local reply");
    }

    #[test]
    fn a_refused_header_action_still_routes() {
        let mut host = FakeHost::new("example.net", "/app/x", &[]);
        host.refuse = Some("x-team");
        assert!(matches!(
            handle_request(&mut host, &table("404"), 0),
            Outcome::Routed { position: 2 }
        ));
        assert!(host.get("x-team").is_empty());
        assert_eq!(host.get(":path"), ["/x"]);
        assert_eq!(host.get("x-route-cluster").len(), 1);
    }

    #[test]
    fn a_condition_never_sees_the_client_cluster_header() {
        let json = r#"{"version":1,"rules":[{"name":"a#0","path":{"type":"prefix","value":"/"},
            "conditions":[{"on":"header","name":"X-Route-Cluster","match":"present"}],
            "action":{"route":{"backends":[{"cluster":"p/a:80"}]}}}]}"#;
        let table = RouteTable::from_json(json.as_bytes()).unwrap();
        let mut host = FakeHost::new("h", "/", &[("x-route-cluster", "evil/admin:80")]);
        assert_eq!(handle_request(&mut host, &table, 0), Outcome::NotFound);
    }

    #[test]
    fn one_header_map_read_serves_the_request_whatever_its_conditions() {
        let mut host = FakeHost::new("example.net", "/app/x?q=1", &[("x-debug", "1")]);
        assert_eq!(
            handle_request(&mut host, &table("404"), 3),
            Outcome::Routed { position: 2 }
        );
        assert_eq!(host.map_fetches.get(), 1);
        assert_eq!(host.get(":path"), ["/x?q=1"]);
        assert_eq!(host.get("x-team"), ["shop"]);
        assert!(host.get("x-debug").is_empty());
        assert_eq!(host.get("x-route-cluster"), ["p/app2:80"]);
        let mut host = FakeHost::new("example.net", "/app", &[]);
        handle_request(&mut host, &table("404"), 0);
        assert_eq!(host.get("x-route-cluster"), ["p/app:80"]);
    }

    /// A table whose two rules carry ingress-nginx's HSTS value (ROUTING.md §8.4).
    fn hsts_table() -> RouteTable {
        let json = r#"{"version":1,"rules":[
            {"name":"n#0","host":"a.example","path":{"type":"prefix","value":"/gone"},"hsts":"max-age=60",
             "action":{"direct_response":{"status":410}}},
            {"name":"n#1","host":"a.example","path":{"type":"prefix","value":"/"},"hsts":"max-age=60",
             "action":{"route":{"backends":[{"cluster":"shop/web:80"}]}}}]}"#;
        match RouteTable::from_json(json.as_bytes()) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn hsts_is_sent_on_https_only_by_the_upstream_response_or_the_local_reply() {
        let table = hsts_table();
        let mut https = FakeHost::new("a.example", "/", &[(":scheme", "https")]);
        assert_eq!(
            handle_whole(&mut https, &table, 0),
            (
                Outcome::Routed { position: 1 },
                Followup {
                    hsts: Some(Arc::new("max-age=60".to_owned())),
                    set_cookie: None,
                    body: None,
                    ..Followup::default()
                }
            )
        );
        let mut plain = FakeHost::new("a.example", "/", &[(":scheme", "http")]);
        assert_eq!(handle_whole(&mut plain, &table, 0).1.hsts, None, "never on plain HTTP");
        let mut gone = FakeHost::new("a.example", "/gone", &[(":scheme", "https")]);
        assert_eq!(
            handle_whole(&mut gone, &table, 0).1.hsts,
            None,
            "a local reply carries it itself"
        );
        let (status, headers, _) = gone.response.clone().unwrap();
        assert_eq!(status, 410);
        assert!(
            headers.contains(&("strict-transport-security".to_owned(), "max-age=60".to_owned())),
            "{headers:?}"
        );
        let mut gone_plain = FakeHost::new("a.example", "/gone", &[(":scheme", "http")]);
        handle_whole(&mut gone_plain, &table, 0);
        let (_, headers, _) = gone_plain.response.clone().unwrap();
        assert!(
            !headers.iter().any(|(k, _)| k == "strict-transport-security"),
            "{headers:?}"
        );
    }

    #[test]
    fn no_route_answers_404_naming_host_and_path_only() {
        let mut host = FakeHost::new("Example.NET:8080", "/nothing?secret=1", &[]);
        assert_eq!(handle_request(&mut host, &table("404"), 0), Outcome::NotFound);
        let (status, _, body) = host.response.clone().unwrap();
        assert_eq!(status, 404);
        assert_eq!(body, "404 no route for host \"example.net\" path \"/nothing\"\n");
    }

    #[test]
    fn direct_responses_keep_their_status_and_name_the_rule_when_asked() {
        let mut host = FakeHost::new("root.example.org", "/missing/x", &[]);
        assert_eq!(
            handle_request(&mut host, &table("404"), 0),
            Outcome::Direct {
                position: 3,
                status: 502
            }
        );
        let (status, headers, body) = host.response.clone().unwrap();
        assert_eq!(status, 502);
        assert!(
            body.starts_with("502 bad gateway for host \"root.example.org\""),
            "{body}"
        );
        assert!(headers.contains(&("x-switchyard-rule".to_owned(), "a#3".to_owned())));
        assert!(host.get("x-route-cluster").is_empty());
    }
    fn nginx_table() -> RouteTable {
        let json = r#"{"version":1,"rules":[
            {"name":"v#0","host":"cafe.example.com","path":{"type":"prefix","value":"/old"},
             "action":{"redirect":{"url":"${scheme}://${host}/new${request_uri}","status":302}}},
            {"name":"v#1","host":"cafe.example.com","path":{"type":"exact","value":"/tea"},
             "action":{"direct_response":{"status":200,"body":"{\"tea\":1}","content_type":"application/json",
               "headers":[{"name":"x-served-by","value":"switchyard"}]}}}]}"#;
        match RouteTable::from_json(json.as_bytes()) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_redirect_fills_scheme_host_and_request_uri_and_sends_nothing_upstream() {
        let mut host = FakeHost::new("Cafe.Example.com:443", "/old/menu?x=1", &[(":scheme", "https")]);
        assert_eq!(
            handle_request(&mut host, &nginx_table(), 0),
            Outcome::Direct {
                position: 0,
                status: 302
            }
        );
        let (status, headers, body) = host.response.clone().unwrap();
        assert_eq!(status, 302);
        assert!(
            headers.contains(&(
                "location".to_owned(),
                "https://cafe.example.com/new/old/menu?x=1".to_owned()
            )),
            "{headers:?}"
        );
        assert_eq!(body, "");
        assert!(host.get("x-route-cluster").is_empty());
    }

    #[test]
    fn a_direct_response_sends_its_content_type_and_headers() {
        let mut host = FakeHost::new("cafe.example.com", "/tea", &[]);
        assert_eq!(
            handle_request(&mut host, &nginx_table(), 0),
            Outcome::Direct {
                position: 1,
                status: 200
            }
        );
        let (_, headers, body) = host.response.clone().unwrap();
        assert_eq!(body, "{\"tea\":1}");
        assert!(headers.contains(&("content-type".to_owned(), "application/json".to_owned())));
        assert!(headers.contains(&("x-served-by".to_owned(), "switchyard".to_owned())));
    }
    /// ingress-nginx's Ingresses (ROUTING.md §7): a regex-mode host with `rewrite-target`,
    /// `x-forwarded-prefix` and `upstream-vhost`, the HTTPS redirect for `http` only, app-root.
    fn ingress_nginx_table() -> RouteTable {
        let json = r#"{"version":1,"rules":[
            {"name":"n#tls","host":"tls.example","path":{"type":"segment_prefix","value":"/"},
             "conditions":[{"on":"header","name":":scheme","match":"exact","value":"http"}],
             "action":{"redirect":{"url":"https://${host}${request_uri%/}","status":308}}},
            {"name":"n#tls-loc","host":"tls.example","path":{"type":"segment_prefix","value":"/"},
             "action":{"route":{"backends":[{"cluster":"ns/tls:80"}]}}},
            {"name":"n#app-root","host":"rx.example","path":{"type":"exact","value":"/"},
             "action":{"redirect":{"url":"${scheme}://${http_host}/app","status":302}}},
            {"name":"n#0","host":"rx.example","path":{"type":"regex","value":"(?i)(?:/something(/|$)(.*)).*"},
             "action":{"route":{"backends":[{"cluster":"ns/svc:80"}],
               "rewrite_regex":{"pattern":"(?i)^/something(/|$)(.*)","path":"/$2",
                 "headers":[{"name":"x-forwarded-prefix","value":"/something"}]},
               "set_headers":[{"name":":authority","value":"backend.internal"}]}}},
            {"name":"n#1","host":"rx.example","path":{"type":"regex","value":"(?i)(?:/).*"},
             "action":{"route":{"backends":[{"cluster":"ns/root:80"}]}}}]}"#;
        match RouteTable::from_json(json.as_bytes()) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_regex_mode_rewrite_sets_path_forwarded_prefix_and_authority() {
        let mut host = FakeHost::new("rx.example", "/SomeThing/new/x?q=1", &[]);
        assert_eq!(
            handle_request(&mut host, &ingress_nginx_table(), 0),
            Outcome::Routed { position: 3 }
        );
        assert_eq!(host.get(":path"), ["/new/x?q=1"]);
        assert_eq!(host.get("x-forwarded-prefix"), ["/something"]);
        assert_eq!(host.get(":authority"), ["backend.internal"]);
        assert_eq!(host.get("x-route-cluster"), ["ns/svc:80"]);
        assert_eq!(host.map_fetches.get(), 1);
        let mut host = FakeHost::new("rx.example", "/other?q=1", &[]);
        handle_request(&mut host, &ingress_nginx_table(), 0);
        assert_eq!(host.get(":path"), ["/other?q=1"]);
        assert!(host.get("x-forwarded-prefix").is_empty());
    }

    #[test]
    fn the_https_redirect_answers_http_only_from_the_header_map() {
        let mut host = FakeHost::new("tls.example:8080", "/a/?x=1", &[(":scheme", "http")]);
        assert_eq!(
            handle_request(&mut host, &ingress_nginx_table(), 0),
            Outcome::Direct {
                position: 0,
                status: 308
            }
        );
        let (_, headers, _) = host.response.clone().unwrap();
        assert!(headers.contains(&("location".to_owned(), "https://tls.example/a/?x=1".to_owned())));
        assert_eq!(host.map_fetches.get(), 1, "the scheme comes from the header map");
        let mut host = FakeHost::new("tls.example", "/a/", &[(":scheme", "https")]);
        assert_eq!(
            handle_request(&mut host, &ingress_nginx_table(), 0),
            Outcome::Routed { position: 1 }
        );
    }

    #[test]
    fn app_root_redirects_to_the_host_as_sent() {
        let mut host = FakeHost::new("RX.example:8080", "/?drop=1", &[(":scheme", "http")]);
        assert_eq!(
            handle_request(&mut host, &ingress_nginx_table(), 0),
            Outcome::Direct {
                position: 2,
                status: 302
            }
        );
        let (_, headers, _) = host.response.clone().unwrap();
        assert!(headers.contains(&("location".to_owned(), "http://RX.example:8080/app".to_owned())));
    }

    /// A table whose rule keys by cookie `sid` and whose other keys by the client's address and
    /// the path.
    fn affinity_table() -> RouteTable {
        let json = r#"{"version":1,"rules":[
            {"name":"n#0","host":"a.example","path":{"type":"prefix","value":"/ip"},
             "action":{"route":{"backends":[{"cluster":"shop/web:80~lb=ring-hash"}],"affinity":{"hash":["client_address","path"]}}}},
            {"name":"n#1","host":"a.example","path":{"type":"prefix","value":"/"},
             "action":{"route":{"backends":[{"cluster":"shop/web:80~lb=ring-hash"}],
                       "affinity":{"cookie":{"name":"sid","attributes":"Path=/; HttpOnly"}}}}}]}"#;
        match RouteTable::from_json(json.as_bytes()) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn an_affinity_cookie_keys_the_request_and_a_request_without_it_gets_a_set_cookie() {
        let table = affinity_table();
        let mut with = FakeHost::new(
            "a.example",
            "/",
            &[("cookie", "sid=k1"), ("x-switchyard-hash", "forged")],
        );
        let (outcome, additions) = handle_whole(&mut with, &table, 3);
        assert_eq!(outcome, Outcome::Routed { position: 1 });
        assert_eq!(
            with.get("x-switchyard-hash"),
            ["k1"],
            "the client's own value is replaced"
        );
        assert_eq!(additions.set_cookie, None);
        let mut without = FakeHost::new("a.example", "/", &[]);
        let additions = handle_whole(&mut without, &table, 3).1;
        let key = without.get("x-switchyard-hash").remove(0);
        assert_eq!(additions.set_cookie, Some(format!("sid={key}; Path=/; HttpOnly")));
    }

    #[test]
    fn a_key_with_the_client_address_goes_in_its_own_header_and_a_forged_one_is_removed() {
        let table = affinity_table();
        let mut host = FakeHost::new("a.example", "/ip/x", &[("x-switchyard-hash", "forged")]);
        handle_whole(&mut host, &table, 0);
        assert_eq!(host.get("x-switchyard-hash-with-address"), ["/ip/x"]);
        assert!(
            host.get("x-switchyard-hash").is_empty(),
            "the client may not pick an endpoint"
        );
    }

    #[test]
    fn basic_auth_challenges_with_the_realm_and_cors_headers_and_strips_a_passing_credential() {
        let json = r#"{"version":1,"rules":[
            {"name":"b#0","host":"a.example","path":{"type":"prefix","value":"/"},
             "policy":{"basic_auth":{"realm":"Staff","users":[{"user":"alice","hash":"{PLAIN}s3cret"}]},
                       "cors":{"allow_origin":["*"],"allow_methods":"GET","allow_headers":"X","max_age":5}},
             "action":{"route":{"backends":[{"cluster":"shop/web:80"}]}}}]}"#;
        let table = RouteTable::from_json(json.as_bytes()).unwrap();
        let mut anonymous = FakeHost::new("a.example", "/", &[("origin", "https://x.example")]);
        let outcome = handle_request(&mut anonymous, &table, 0);
        assert_eq!(
            outcome,
            Outcome::Direct {
                position: 0,
                status: 401
            }
        );
        let (_, headers, body) = anonymous.response.clone().unwrap();
        let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        assert_eq!(header("www-authenticate"), Some("Basic realm=\"Staff\""));
        assert_eq!(
            header("access-control-allow-origin"),
            Some("*"),
            "a CORS request's answer"
        );
        assert!(body.starts_with("401 authorization required"), "{body}");
        // "alice:s3cret" in base64.
        let mut alice = FakeHost::new("a.example", "/", &[("authorization", "Basic YWxpY2U6czNjcmV0")]);
        assert_eq!(handle_request(&mut alice, &table, 0), Outcome::Routed { position: 0 });
        assert!(
            alice.get("authorization").is_empty(),
            "the credential stops at the gateway"
        );
        assert_eq!(alice.get("x-route-cluster"), ["shop/web:80"]);
    }

    #[test]
    fn cors_headers_the_route_adds_are_left_to_it_and_the_filters_own_answers_carry_them() {
        let json = r#"{"version":1,"rules":[
            {"name":"c#0","host":"a.example","path":{"type":"prefix","value":"/"},
             "policy":{"route":"headers=00000000000000aa","deny":["10.0.0.0/8"],
                       "cors":{"allow_origin":["*"],"allow_methods":"GET","allow_headers":"X","by_route":true}},
             "action":{"route":{"backends":[{"cluster":"shop/web:80"}]}}}]}"#;
        let table = RouteTable::from_json(json.as_bytes()).unwrap();
        let from = |address: [u8; 4]| FakeHost {
            address: Some(address.into()),
            ..FakeHost::new("a.example", "/", &[])
        };
        let mut client = from([192, 0, 2, 1]);
        let (outcome, followup) = handle_whole(&mut client, &table, 0);
        assert_eq!(outcome, Outcome::Routed { position: 0 });
        let cors = followup.cors.expect("the CORS headers of the response");
        assert!(
            cors.added_by_route(),
            "the gateway's route adds them: the filter leaves them to it"
        );
        assert_eq!(client.get(ROUTE_HEADER), ["headers=00000000000000aa"]);
        let mut preflight = from([192, 0, 2, 1]);
        preflight.headers[2].1 = "OPTIONS".to_owned();
        handle_request(&mut preflight, &table, 0);
        let (status, headers, _) = preflight.response.clone().unwrap();
        assert_eq!(status, 204);
        assert!(headers.contains(&("access-control-allow-origin".to_owned(), "*".to_owned())));
        let mut denied = from([10, 1, 2, 3]);
        handle_request(&mut denied, &table, 0);
        let (status, headers, _) = denied.response.clone().unwrap();
        assert_eq!(status, 403);
        assert!(headers.contains(&("access-control-allow-methods".to_owned(), "GET".to_owned())));
    }

    #[test]
    fn cors_by_route_is_refused_where_the_headers_differ_or_no_route_adds_them() {
        let with = |policy: &str| {
            let json = format!(
                r#"{{"version":1,"rules":[{{"name":"c#0","host":"a.example","path":{{"type":"prefix","value":"/"}},
                   "policy":{policy},"action":{{"route":{{"backends":[{{"cluster":"shop/web:80"}}]}}}}}}]}}"#
            );
            RouteTable::from_json(json.as_bytes())
                .map(|_| ())
                .map_err(|error| error.to_string())
        };
        let cors = |origin: &str| {
            format!(r#"{{"allow_origin":["{origin}"],"allow_methods":"GET","allow_headers":"X","by_route":true}}"#)
        };
        assert_eq!(with(&format!(r#"{{"route":"r","cors":{}}}"#, cors("*"))), Ok(()));
        let listed = with(&format!(r#"{{"route":"r","cors":{}}}"#, cors("https://app.example")));
        assert!(listed
            .unwrap_err()
            .contains("by_route needs the headers of every response the same"));
        let unrouted = with(&format!(r#"{{"cors":{}}}"#, cors("*")));
        assert!(unrouted.unwrap_err().contains("cors.by_route needs a route"));
    }

    #[test]
    fn the_winner_and_its_resource_are_noted_and_none_when_no_rule_took_the_request() {
        let table = table("404");
        let noted = |host: &str, path: &str| {
            let mut client = FakeHost::new(host, path, &[]);
            handle_request(&mut client, &table, 0);
            client.winner.unwrap()
        };
        let labels = |l: [&str; 4]| l.map(str::to_owned);
        let routed = noted("example.net", "/app/x");
        assert_eq!(
            routed,
            ("a#2".to_owned(), "a".to_owned(), labels(["", "", "a", "p/app:80"]))
        );
        let direct = noted("root.example.org", "/missing");
        assert_eq!(
            direct,
            ("a#3".to_owned(), "a".to_owned(), labels(["", "", "a", "direct"])),
            "a local reply's rule too"
        );
        let nobody = noted("nowhere.example", "/");
        assert_eq!(nobody, ("none".to_owned(), "none".to_owned(), labels(["none"; 4])));
    }

    #[test]
    fn a_resource_beyond_the_metrics_limit_is_counted_as_folded() {
        let json = r#"{"version":1,"metrics_fold":{"last_own":"Ingress/a/x","folded":1},"rules":[
            {"name":"Ingress/a/x#0","host":"a.example","path":{"type":"prefix","value":"/"},
             "action":{"route":{"backends":[{"cluster":"a/x_80"}]}}},
            {"name":"Ingress/b/y#0","host":"b.example","path":{"type":"prefix","value":"/"},
             "action":{"route":{"backends":[{"cluster":"b/y_80"}]}}}]}"#;
        let table = RouteTable::from_json(json.as_bytes()).unwrap();
        let labels_of = |host: &str| {
            let mut client = FakeHost::new(host, "/", &[]);
            handle_request(&mut client, &table, 0);
            client.winner.unwrap().2
        };
        assert_eq!(labels_of("a.example"), ["Ingress", "a", "x", "a/x_80"]);
        assert_eq!(labels_of("b.example"), ["folded"; 4]);
    }

    #[test]
    fn a_rule_with_a_route_names_it_and_a_client_cannot_name_one() {
        let json = r#"{"version":1,"rules":[
            {"name":"n#0","host":"a.example","path":{"type":"prefix","value":"/slow"},
             "policy":{"route":"idle=300000ms+timeout=0ms"},
             "action":{"route":{"backends":[{"cluster":"shop/web:80"}]}}},
            {"name":"n#1","host":"a.example","path":{"type":"prefix","value":"/"},
             "action":{"route":{"backends":[{"cluster":"shop/web:80"}]}}}]}"#;
        let table = RouteTable::from_json(json.as_bytes()).unwrap();
        let forged = [("x-switchyard-route", "idle=99999999ms")];
        let mut slow = FakeHost::new("a.example", "/slow", &forged);
        assert_eq!(handle_request(&mut slow, &table, 0), Outcome::Routed { position: 0 });
        assert_eq!(slow.get("x-switchyard-route"), ["idle=300000ms+timeout=0ms"]);
        let mut plain = FakeHost::new("a.example", "/", &forged);
        assert_eq!(handle_request(&mut plain, &table, 0), Outcome::Routed { position: 1 });
        assert!(plain.get("x-switchyard-route").is_empty(), "{:?}", plain.headers);
    }
}
