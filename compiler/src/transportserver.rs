//! The TransportServer processor (ROUTING.md §6): NGINX's L4 resources become [`L4Routes`].
//!
//! Two steps, around the host contest of §2 that the pipeline runs for every kind:
//!
//! 1. [`TransportServerProcessor::run`] takes every TransportServer of ours (the pipeline checked
//!    their class, §1),
//!    checks it (`check`: its upstreams, its `action.pass`, its listener and host) and resolves its
//!    listener (`listener_of`): `tls-passthrough` needs no definition; any other listener must be
//!    defined, with the same name and protocol, by a GlobalConfiguration, else the TransportServer is
//!    `Rejected` (`Listener X doesn't exist`). The passthrough candidates' hosts are claims in the
//!    host contest ([`Candidates::claims`]).
//! 2. [`Candidates::settle`], after the contest: a passthrough candidate routes its host when it won
//!    it; when it lost, the contest itself made it `Rejected` (`HostTaken`, naming the winner; NGINX's
//!    status says `Host is taken by another resource`, [`crate::status::NginxStatus`]). The others compete per
//!    (listener, host): the oldest wins, then the smallest uid (seed 003); the losers are `Rejected`
//!    (`Listener X is taken by another resource`).
//!
//! Decisions where §6 is silent:
//! - Every GlobalConfiguration of the input defines listeners (NGINX reads the one its
//!   `-global-configuration` flag names); a name defined twice keeps the oldest GlobalConfiguration's
//!   definition.
//! - A TCP listener on the TLS passthrough port (`--tls-passthrough-port`, 443 by default) defines
//!   nothing: that port is the passthrough listener's, and Envoy refuses a listener update
//!   that binds it twice. A TransportServer on it says `Listener X doesn't exist`, as NGINX's do
//!   for a listener its validation refused. (NGINX forbids ports 80 and 443 to every GlobalConfiguration
//!   listener, its own HTTP and HTTPS ports; Envoy's HTTP ports are not known to Switchyard, and a UDP
//!   listener does not clash with the TCP passthrough listener, so only TCP on the passthrough port is
//!   reserved here.)
//! - A host on a TCP listener routes by SNI on that port (the client's TLS passes through, as on the
//!   passthrough listener); a UDP datagram has no SNI, so a host on a UDP listener is an error.
//! - Upstream ports are used as written: an L4 connection cannot be answered with a 503, so a
//!   Service without that port is not checked here.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::collisions::{Claim, HostWinners};
use crate::l4::{L4Backend, L4Listener, L4Protocol, L4Route, L4Routes};
use crate::model::{normalize_host, Options};
use crate::objects::transport::{
    GlobalConfiguration, TransportServer, TLS_PASSTHROUGH_LISTENER, TLS_PASSTHROUGH_PROTOCOL,
};
use crate::objects::Objects;
use crate::objects::{key_of, Age, Kind, ResourceKey};
use crate::processor::{Inputs, Output, Processor, Settle};
use crate::status::{Reason, Status, StatusBook};

/// The TransportServer processor in the pipeline's list: [`TransportServerProcessor`] over the
/// TransportServers that are ours and every GlobalConfiguration. Its passthrough candidates claim
/// their hosts without rules; the rest is settled after the host contest ([`Candidates::settle`]).
pub struct TransportServers;

impl Processor for TransportServers {
    fn run(&self, ours: &Objects, inputs: Inputs<'_>) -> Output {
        let candidates =
            TransportServerProcessor::new(inputs).run(&ours.transport_servers, &ours.global_configurations);
        Output {
            drafts: Vec::new(),
            claims: candidates.claims(),
            settle: Some(Box::new(candidates)),
        }
    }
}

impl Settle for Candidates {
    fn settle(self: Box<Self>, winners: &HostWinners, options: &Options, book: &mut StatusBook, l4: &mut L4Routes) {
        let routes = Candidates::settle(*self, winners, options, book);
        l4.passthrough.extend(routes.passthrough);
        l4.listeners.extend(routes.listeners);
    }
}

/// The processor: checks TransportServers and resolves their listeners.
pub struct TransportServerProcessor<'a> {
    inputs: Inputs<'a>,
}

/// A TransportServer that passed its checks, waiting for the contests.
#[derive(Debug, Clone)]
pub struct Candidate {
    key: ResourceKey,
    age: Age,
    /// Where it listens: `None` for the passthrough listener.
    listener: Option<DefinedListener>,
    /// The host (normalised), `None` when it has none.
    host: Option<String>,
    /// Its `action.pass` upstream.
    backend: L4Backend,
}

/// A listener as a GlobalConfiguration defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DefinedListener {
    name: String,
    port: u16,
    protocol: L4Protocol,
}

/// Step 1's result: the candidates, for the host contest and then [`Candidates::settle`].
#[derive(Debug, Clone, Default)]
pub struct Candidates {
    candidates: Vec<Candidate>,
}

impl<'a> TransportServerProcessor<'a> {
    /// A processor reading and reporting through `inputs`.
    pub fn new(inputs: Inputs<'a>) -> TransportServerProcessor<'a> {
        TransportServerProcessor { inputs }
    }

    /// Step 1: the candidates among `transport_servers`, their listeners defined by
    /// `global_configurations`.
    pub fn run(
        self,
        transport_servers: &[Arc<TransportServer>],
        global_configurations: &[Arc<GlobalConfiguration>],
    ) -> Candidates {
        let listeners = defined_listeners(global_configurations, self.inputs.options.tls_passthrough_port);
        let mut candidates = Vec::new();
        for server in transport_servers {
            let key = key_of(Kind::TransportServer, &server.metadata);
            match check(server).and_then(|checked| self.listener_of(server, &listeners).map(|l| (checked, l))) {
                Ok(((host, backend), listener)) => candidates.push(Candidate {
                    age: Age::of(Kind::TransportServer, &server.metadata),
                    key,
                    listener,
                    host,
                    backend,
                }),
                Err((status, reason, message)) => {
                    self.inputs.book.error(&key, status, reason, message);
                    self.inputs.book.set(&key, status);
                }
            }
        }
        Candidates { candidates }
    }

    /// The listener the TransportServer names: `None` for `tls-passthrough`; `Rejected` when no
    /// GlobalConfiguration defines it with that protocol.
    fn listener_of(
        &self,
        server: &TransportServer,
        listeners: &BTreeMap<String, DefinedListener>,
    ) -> Result<Option<DefinedListener>, Refusal> {
        let wanted = &server.spec.listener;
        if wanted.name == TLS_PASSTHROUGH_LISTENER {
            return Ok(None);
        }
        match listeners.get(&wanted.name) {
            Some(defined) if defined.protocol.to_string() == wanted.protocol => Ok(Some(defined.clone())),
            _ => Err((
                Status::Rejected,
                Reason::ListenerNotFound,
                format!("Listener {} doesn't exist", wanted.name),
            )),
        }
    }
}

/// Why a TransportServer does not route: its status, reason and message.
type Refusal = (Status, Reason, String);

/// The TransportServer's own checks: the listener's protocol, the host, the upstreams and
/// `action.pass`. Returns the host (normalised) and the backend; `Invalid` otherwise.
fn check(server: &TransportServer) -> Result<(Option<String>, L4Backend), Refusal> {
    let spec = &server.spec;
    let invalid = |message: String| (Status::Invalid, Reason::TransportServerInvalid, message);
    let namespace = key_of(Kind::TransportServer, &server.metadata).namespace;
    let host = spec.host.as_deref().map(normalize_host).filter(|h| !h.is_empty());
    let listener = &spec.listener;
    match (listener.name.as_str(), listener.protocol.as_str()) {
        ("", _) => return Err(invalid("spec.listener.name: Required value".to_owned())),
        (TLS_PASSTHROUGH_LISTENER, TLS_PASSTHROUGH_PROTOCOL) if host.is_none() => {
            return Err(invalid("spec.host: Required value: a tls-passthrough TransportServer needs a host".to_owned()))
        }
        (TLS_PASSTHROUGH_LISTENER, TLS_PASSTHROUGH_PROTOCOL) => {}
        (TLS_PASSTHROUGH_LISTENER, other) => {
            return Err(invalid(format!(
                "spec.listener.protocol: Invalid value: {other:?}: the tls-passthrough listener's protocol is TLS_PASSTHROUGH"
            )))
        }
        (_, "UDP") if host.is_some() => {
            return Err(invalid("spec.host: Forbidden: a UDP listener cannot route by host (no SNI)".to_owned()))
        }
        (_, "TCP" | "UDP") => {}
        (_, other) => {
            return Err(invalid(format!(
                "spec.listener.protocol: Unsupported value: {other:?}: supported values: \"TCP\", \"UDP\", \"TLS_PASSTHROUGH\""
            )))
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for (i, upstream) in spec.upstreams.iter().enumerate() {
        if !names.insert(upstream.name.as_str()) {
            return Err(invalid(format!(
                "spec.upstreams[{i}].name: Duplicate value: {:?}",
                upstream.name
            )));
        }
    }
    let pass = spec.action.as_ref().map(|a| a.pass.as_str()).unwrap_or_default();
    let Some((i, upstream)) = spec.upstreams.iter().enumerate().find(|(_, u)| u.name == pass) else {
        return Err(invalid(format!(
            "spec.action.pass: Not found: {pass:?}: no upstream of that name"
        )));
    };
    if upstream.service.is_empty() {
        return Err(invalid(format!("spec.upstreams[{i}].service: Required value")));
    }
    let Some(port) = u16::try_from(upstream.port).ok().filter(|p| *p > 0) else {
        return Err(invalid(format!(
            "spec.upstreams[{i}].port: Invalid value: {}: must be between 1 and 65535",
            upstream.port
        )));
    };
    let backend = L4Backend {
        namespace,
        service: upstream.service.clone(),
        port,
    };
    Ok((host, backend))
}

/// Every listener the GlobalConfigurations define, by name; a name, or a port and protocol, defined
/// twice keeps the oldest GlobalConfiguration's (then the first) definition: Envoy cannot bind one
/// port twice. Listeners with an unknown protocol, a port outside 1–65535, or TCP on
/// `passthrough_port` (the TLS passthrough listener's) define nothing.
fn defined_listeners(
    global_configurations: &[Arc<GlobalConfiguration>],
    passthrough_port: u16,
) -> BTreeMap<String, DefinedListener> {
    let mut by_age: Vec<&GlobalConfiguration> = global_configurations.iter().map(|g| &**g).collect();
    by_age.sort_by_cached_key(|g| Age::of(Kind::GlobalConfiguration, &g.metadata));
    let mut listeners = BTreeMap::new();
    let mut ports = std::collections::BTreeSet::from([(passthrough_port, L4Protocol::Tcp)]);
    for configuration in by_age {
        for listener in &configuration.spec.listeners {
            let protocol = match listener.protocol.as_str() {
                "TCP" => L4Protocol::Tcp,
                "UDP" => L4Protocol::Udp,
                _ => continue,
            };
            let Some(port) = u16::try_from(listener.port).ok().filter(|p| *p > 0) else {
                continue;
            };
            if listeners.contains_key(&listener.name) || !ports.insert((port, protocol)) {
                continue;
            }
            listeners.entry(listener.name.clone()).or_insert(DefinedListener {
                name: listener.name.clone(),
                port,
                protocol,
            });
        }
    }
    listeners
}

impl Candidates {
    /// The hosts the TLS passthrough candidates claim in the host contest of ROUTING.md §2.
    pub fn claims(&self) -> Vec<Claim> {
        self.candidates
            .iter()
            .filter(|c| c.listener.is_none())
            .filter_map(|c| {
                Some(Claim {
                    host: c.host.clone()?,
                    key: c.key.clone(),
                    age: c.age.clone(),
                })
            })
            .collect()
    }

    /// Step 2, after the host contest (`winners`: who won each host): the passthrough routes of the
    /// hosts won, the listener contest, every candidate's status; the L4 routes, sorted.
    pub fn settle(self, winners: &HostWinners, options: &Options, book: &mut StatusBook) -> L4Routes {
        let mut routes = L4Routes::default();
        let mut contests: BTreeMap<(String, Option<String>), Vec<Candidate>> = BTreeMap::new();
        for candidate in self.candidates {
            match &candidate.listener {
                None => {
                    let host = candidate.host.as_deref().unwrap_or_default();
                    if winners.get(host).is_some_and(|w| w.contains(&candidate.key)) {
                        book.set(&candidate.key, Status::Valid);
                        routes.passthrough.push(route(candidate, options));
                    }
                    // A loser's HostTaken and Rejected status come from the contest itself.
                }
                Some(listener) => {
                    let pair = (listener.name.clone(), candidate.host.clone());
                    contests.entry(pair).or_default().push(candidate);
                }
            }
        }
        let mut listeners: BTreeMap<String, L4Listener> = BTreeMap::new();
        for ((name, _), mut contenders) in contests {
            contenders.sort_by(|a, b| a.age.cmp(&b.age));
            let mut contenders = contenders.into_iter();
            let Some(winner) = contenders.next() else { continue };
            for loser in contenders {
                let message = format!("Listener {name} is taken by another resource");
                book.error(&loser.key, Status::Rejected, Reason::ListenerTaken, message);
                book.set(&loser.key, Status::Rejected);
            }
            book.set(&winner.key, Status::Valid);
            let Some(defined) = winner.listener.clone() else {
                continue;
            };
            let listener = listeners.entry(name).or_insert_with(|| L4Listener {
                name: defined.name,
                port: defined.port,
                protocol: defined.protocol,
                routes: Vec::new(),
            });
            listener.routes.push(route(winner, options));
        }
        routes.passthrough.sort();
        routes.listeners = listeners.into_values().collect();
        for listener in &mut routes.listeners {
            listener.routes.sort();
        }
        routes.listeners.sort_by_key(|l| (l.port, l.protocol));
        routes
    }
}

fn route(candidate: Candidate, options: &Options) -> L4Route {
    L4Route::new(candidate.host, candidate.backend, options, candidate.key.display())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::class::Classes;
    use crate::processor::{admit, Ignored};
    use crate::services::ServicePorts;

    /// A TransportServer `name` in `default`, created at second `created` of the day, on `listener`
    /// (protocol), for `host`, passing to Service `name`-svc port 5353.
    fn server(name: &str, created: u32, listener: &str, protocol: &str, host: Option<&str>) -> TransportServer {
        serde_json::from_value(json!({
            "apiVersion": "k8s.nginx.org/v1",
            "kind": "TransportServer",
            "metadata": {
                "name": name,
                "namespace": "default",
                "uid": format!("uid-{name}"),
                "creationTimestamp": format!("2026-01-01T00:00:{created:02}Z"),
            },
            "spec": {
                "listener": { "name": listener, "protocol": protocol },
                "host": host,
                "upstreams": [{ "name": "up", "service": format!("{name}-svc"), "port": 5353 }],
                "action": { "pass": "up" },
            }
        }))
        .unwrap()
    }

    fn global(listeners: serde_json::Value) -> GlobalConfiguration {
        serde_json::from_value(json!({
            "apiVersion": "k8s.nginx.org/v1",
            "kind": "GlobalConfiguration",
            "metadata": { "name": "nginx-configuration", "namespace": "nginx-ingress" },
            "spec": { "listeners": listeners }
        }))
        .unwrap()
    }

    fn dns_tcp() -> GlobalConfiguration {
        global(json!([
            { "name": "dns-tcp", "port": 5353, "protocol": "TCP" },
            { "name": "dns-udp", "port": 5353, "protocol": "UDP" },
        ]))
    }

    fn shared<T: Clone>(objects: &[T]) -> Vec<Arc<T>> {
        objects.iter().cloned().map(Arc::new).collect()
    }

    /// Runs both steps; `host_owner` says who won each passthrough host. Returns the routes and the
    /// (name, status, reasons) of every TransportServer.
    fn settle(
        servers: &[TransportServer],
        globals: &[GlobalConfiguration],
        host_owner: &[(&str, &str)],
    ) -> (L4Routes, Vec<(String, Status, Vec<Reason>)>) {
        settle_with(&Options::default(), servers, globals, host_owner)
    }

    /// [`settle`] under `options`.
    fn settle_with(
        options: &Options,
        servers: &[TransportServer],
        globals: &[GlobalConfiguration],
        host_owner: &[(&str, &str)],
    ) -> (L4Routes, Vec<(String, Status, Vec<Reason>)>) {
        let mut book = StatusBook::default();
        let classes = Classes::new(&[], options, &mut book);
        let services = ServicePorts::new(&[]);
        let mut ignored = Ignored::new();
        let ours = admit(&shared(servers), &classes, &mut book, &mut ignored);
        let candidates = TransportServerProcessor::new(Inputs {
            classes: &classes,
            services: &services,
            options,
            ignored: &ignored,
            book: &mut book,
            ingress_nginx: &[],
        })
        .run(&ours, &shared(globals));
        let winners: HostWinners = host_owner
            .iter()
            .map(|(host, name)| {
                let key = ResourceKey {
                    kind: Kind::TransportServer,
                    namespace: "default".into(),
                    name: (*name).into(),
                };
                ((*host).to_owned(), std::collections::BTreeSet::from([key]))
            })
            .collect();
        let routes = candidates.settle(&winners, options, &mut book);
        let statuses = book
            .finish()
            .into_iter()
            .filter(|s| s.kind == Kind::TransportServer)
            .map(|s| (s.name, s.status, s.conditions.iter().map(|c| c.reason).collect()))
            .collect();
        (routes, statuses)
    }

    fn status_of(statuses: &[(String, Status, Vec<Reason>)], name: &str) -> (Status, Vec<Reason>) {
        let found = statuses.iter().find(|(n, _, _)| n == name).unwrap();
        (found.1, found.2.clone())
    }

    #[test]
    fn the_oldest_transport_server_wins_a_listener_and_the_other_is_rejected_as_taken() {
        for (tcp1, tcp2) in [(1, 2), (2, 1)] {
            let servers = [
                server("tcp-1", tcp1, "dns-tcp", "TCP", None),
                server("tcp-2", tcp2, "dns-tcp", "TCP", None),
            ];
            let (routes, statuses) = settle(&servers, &[dns_tcp()], &[]);
            let (winner, loser) = if tcp1 < tcp2 {
                ("tcp-1", "tcp-2")
            } else {
                ("tcp-2", "tcp-1")
            };
            assert_eq!(routes.listeners.len(), 1);
            assert_eq!(routes.listeners[0].port, 5353);
            assert_eq!(
                routes.listeners[0].routes[0].cluster,
                format!("default/{winner}-svc:5353")
            );
            assert_eq!(status_of(&statuses, winner).0, Status::Valid);
            let (status, reasons) = status_of(&statuses, loser);
            assert_eq!(status, Status::Rejected);
            assert!(reasons.contains(&Reason::ListenerTaken), "{reasons:?}");
        }
    }

    #[test]
    fn on_equal_timestamps_the_smallest_uid_wins_the_listener() {
        let servers = [
            server("tcp-b", 1, "dns-tcp", "TCP", None),
            server("tcp-a", 1, "dns-tcp", "TCP", None),
        ];
        let (routes, _) = settle(&servers, &[dns_tcp()], &[]);
        assert_eq!(routes.listeners[0].routes[0].resource, "TransportServer/default/tcp-a");
    }

    #[test]
    fn a_listener_no_global_configuration_defines_with_that_protocol_is_rejected() {
        let servers = [
            server("unknown", 1, "nope", "TCP", None),
            server("wrong-protocol", 1, "dns-udp", "TCP", None),
        ];
        let (routes, statuses) = settle(&servers, &[dns_tcp()], &[]);
        assert!(routes.is_empty());
        for name in ["unknown", "wrong-protocol"] {
            assert_eq!(
                status_of(&statuses, name),
                (Status::Rejected, vec![Reason::ClassMatches, Reason::ListenerNotFound])
            );
        }
    }

    #[test]
    fn a_passthrough_transport_server_routes_its_host_only_when_it_won_the_host_contest() {
        let servers = [
            server(
                "winner",
                1,
                "tls-passthrough",
                "TLS_PASSTHROUGH",
                Some("App.Example.com"),
            ),
            server(
                "loser",
                2,
                "tls-passthrough",
                "TLS_PASSTHROUGH",
                Some("other.example.com"),
            ),
        ];
        let (routes, statuses) = settle(
            &servers,
            &[],
            &[("app.example.com", "winner"), ("other.example.com", "someone-else")],
        );
        assert_eq!(routes.passthrough.len(), 1);
        assert_eq!(routes.passthrough[0].host.as_deref(), Some("app.example.com"));
        assert_eq!(status_of(&statuses, "winner").0, Status::Valid);
        // The host contest (collisions, run by the pipeline) records the loser's HostTaken and
        // Rejected; settling leaves it alone and routes nothing of it.
        assert_eq!(status_of(&statuses, "loser").1, vec![Reason::ClassMatches]);
        assert!(!routes.passthrough.iter().any(|r| r.resource.ends_with("/loser")));
    }

    #[test]
    fn a_transport_server_that_fails_validation_is_invalid_and_routes_nothing() {
        let mut no_upstream = server("no-upstream", 1, "dns-tcp", "TCP", None);
        no_upstream.spec.action = Some(crate::objects::transport::TransportAction { pass: "missing".into() });
        let cases = [
            no_upstream,
            server("no-host", 1, "tls-passthrough", "TLS_PASSTHROUGH", None),
            server("bad-protocol", 1, "tls-passthrough", "TCP", Some("a.example.com")),
            server("udp-host", 1, "dns-udp", "UDP", Some("a.example.com")),
        ];
        let (routes, statuses) = settle(&cases, &[dns_tcp()], &[]);
        assert!(routes.is_empty());
        for (name, status, reasons) in &statuses {
            assert_eq!(*status, Status::Invalid, "{name}");
            assert!(reasons.contains(&Reason::TransportServerInvalid), "{name}: {reasons:?}");
        }
        assert_eq!(statuses.len(), 4);
    }

    #[test]
    fn tcp_and_udp_listeners_of_one_port_are_two_listeners_sorted_by_port_then_protocol() {
        let servers = [
            server("udp", 1, "dns-udp", "UDP", None),
            server("tcp", 1, "dns-tcp", "TCP", None),
        ];
        let (routes, _) = settle(&servers, &[dns_tcp()], &[]);
        let listeners: Vec<(&str, L4Protocol)> =
            routes.listeners.iter().map(|l| (l.name.as_str(), l.protocol)).collect();
        assert_eq!(listeners, [("dns-tcp", L4Protocol::Tcp), ("dns-udp", L4Protocol::Udp)]);
    }

    #[test]
    fn a_listener_name_or_port_defined_twice_keeps_the_first_definition() {
        let globals = [global(json!([
            { "name": "dns-tcp", "port": 5353, "protocol": "TCP" },
            { "name": "dns-tcp", "port": 6000, "protocol": "TCP" },
            { "name": "other", "port": 5353, "protocol": "TCP" },
        ]))];
        let servers = [
            server("a", 1, "dns-tcp", "TCP", None),
            server("b", 1, "other", "TCP", None),
        ];
        let (routes, statuses) = settle(&servers, &globals, &[]);
        assert_eq!(routes.listeners.len(), 1);
        assert_eq!(routes.listeners[0].port, 5353);
        assert_eq!(status_of(&statuses, "b").0, Status::Rejected);
    }

    #[test]
    fn a_tcp_listener_on_the_tls_passthrough_port_does_not_exist_and_udp_on_it_does() {
        let globals = [global(json!([
            { "name": "tcp-443", "port": 443, "protocol": "TCP" },
            { "name": "udp-443", "port": 443, "protocol": "UDP" },
            { "name": "tcp-8443", "port": 8443, "protocol": "TCP" },
        ]))];
        let servers = [
            server("on-443", 1, "tcp-443", "TCP", None),
            server("quic", 1, "udp-443", "UDP", None),
            server("on-8443", 1, "tcp-8443", "TCP", None),
        ];
        for (passthrough_port, refused, served) in [(443, "on-443", "on-8443"), (8443, "on-8443", "on-443")] {
            let options = Options {
                tls_passthrough_port: passthrough_port,
                ..Options::default()
            };
            let (routes, statuses) = settle_with(&options, &servers, &globals, &[]);
            assert_eq!(
                status_of(&statuses, refused),
                (Status::Rejected, vec![Reason::ClassMatches, Reason::ListenerNotFound]),
                "passthrough port {passthrough_port}"
            );
            assert_eq!(status_of(&statuses, served).0, Status::Valid);
            assert_eq!(status_of(&statuses, "quic").0, Status::Valid);
            let bound: Vec<(u16, L4Protocol)> = routes.listeners.iter().map(|l| (l.port, l.protocol)).collect();
            assert!(!bound.contains(&(passthrough_port, L4Protocol::Tcp)), "{bound:?}");
            assert!(bound.contains(&(443, L4Protocol::Udp)), "{bound:?}");
        }
    }
}
