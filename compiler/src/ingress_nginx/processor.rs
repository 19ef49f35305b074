//! The ingress-nginx processor (ROUTING.md §7): the Ingresses the class stage found to be
//! ingress-nginx's ([`super::class`]), read in ingress-nginx's order, their annotations reported
//! (§7.9), gathered into servers ([`super::server`]), each server laid out as rules
//! ([`super::layout`]) with its backends resolved, its access controls judged (§9: a rule they
//! protect answers 403 unless waived, [`crate::access`]), and drafted as one contender in §2's host
//! contest ([`crate::model::Claiming::ContendsAlone`]), its rules in the server's own order
//! ([`crate::model::HostOrder::IngressNginx`]); its `server-alias` and `from-to-www-redirect`
//! hosts only where nothing else contends ([`crate::model::Claiming::IfUnclaimed`]). Once the
//! contest is decided ([`ServersSettle`]): `HostTaken` on every Ingress of a server that lost,
//! `AliasTaken` for an alias something else owns.

use std::sync::Arc;

use k8s_openapi::api::networking::v1::Ingress;
use switchyard_table::{ActionSpec, DirectResponse, PathSpec, Policy, RateLimit, RouteAction, RuleSpec};

use super::access;
use super::annotations::{not_honored_message, IngressNginxAnnotations, Problem};
use super::basic_auth;
use super::canary::{self, CanarySettings};
use super::configmap::ControllerConfig;
use super::external_auth;
use super::layout::{self, Act, Laid};
use super::paths::{ingress_order, IngressAge};
use super::proxying::Setting;
use super::server::{self, Member, Server};
use super::upstream::IngressAffinity;
use crate::access::Guard;
use crate::collisions::{loses_everything, record_all_hosts_taken, record_host_taken, HostWinners};
use crate::https::secrets::Secrets;
use crate::ingress::{backend_cluster, NoCluster};
use crate::l4::{L4Route, L4Routes};
use crate::model::{Claiming, Draft, HostOrder, Options, RuleValidator};
use crate::objects::{key_of, Age, Kind, Objects, ResourceKey};
use crate::processor::{Inputs, Output, Processor, Settle};
use crate::route_config::{headers_digest, RouteSettings};
use crate::services::service_unavailable;
use crate::status::{About, ConditionKind, Reason, Status, StatusBook};
use crate::upstream::variant::{Balance, UpstreamProtocol, Variant};
use switchyard_table::basic_auth::BasicAuth;

/// The ingress-nginx processor in the pipeline's list: the Ingresses of [`Inputs::ingress_nginx`].
pub struct IngressNginxServers;

impl Processor for IngressNginxServers {
    fn run(&self, ours: &Objects, inputs: Inputs<'_>) -> Output {
        if inputs.ingress_nginx.is_empty() {
            return Output::default();
        }
        let ingresses = inputs.ingress_nginx;
        run(ingresses, &Secrets::new(&ours.secrets), inputs)
    }
}

/// The processor's work over `ingresses` (ingress-nginx's, in any order), with the input's
/// `secrets` (basic authentication's users).
fn run(ingresses: &[Arc<Ingress>], secrets: &Secrets<'_>, mut inputs: Inputs<'_>) -> Output {
    let prefix = inputs.options.ingress_nginx.annotations_prefix.clone();
    let (members, canaries) = members(ingresses, (&prefix, inputs.options, secrets), inputs.book);
    let guard = guard(
        &members,
        &prefix,
        &inputs.options.ingress_nginx_config.access,
        inputs.book,
    );
    let servers = server::gather(&members, &canaries, inputs.book);
    let settings: Vec<CanarySettings> = canaries
        .iter()
        .map(|c| canary_settings(c, &prefix, inputs.book))
        .collect();
    let canaries = Canaries {
        members: &canaries,
        settings: &settings,
        prefix: &prefix,
    };
    let mut drafts = Vec::new();
    let mut validator = RuleValidator::default();
    let mut settle = ServersSettle::default();
    for server in &servers {
        report_regex_mode(server, &members, inputs.book);
        let first = &members[server.first()];
        let contender = (first.key.clone(), first.age.clone());
        let config = &inputs.options.ingress_nginx_config;
        let claiming = match server.host {
            Some(_) => Claiming::ContendsAlone,
            None => Claiming::Contends,
        };
        let mut laid = vec![(layout::lay_out(server, &members, config, None), claiming)];
        if let Some((_, aliases)) = &server.aliases {
            for alias in aliases {
                laid.push((
                    layout::lay_out(server, &members, config, Some(alias)),
                    Claiming::IfUnclaimed,
                ));
            }
        }
        laid.extend(layout::www_redirect(server, &members, config).map(|www| (vec![www], Claiming::IfUnclaimed)));
        for (rules, claiming) in laid {
            for (rank, rule) in rules.into_iter().enumerate() {
                let draft = draft(
                    rule,
                    rank,
                    &members,
                    &canaries,
                    &contender,
                    claiming,
                    &mut inputs,
                    &mut validator,
                );
                drafts.extend(draft);
            }
        }
        let passthrough = super::passthrough::route(server, &members, &mut inputs);
        settle.servers.push(SettledServer::of(server, &members, passthrough));
    }
    // ROUTING.md §8.4: every HTTPS response of ingress-nginx's servers, one string for all.
    let hsts = inputs.options.ingress_nginx_config.hsts_header().map(Arc::new);
    for draft in &mut drafts {
        draft.rule.hsts.clone_from(&hsts);
    }
    guard.apply(&mut drafts);
    Output {
        drafts,
        claims: Vec::new(),
        settle: Some(Box::new(settle)),
    }
}

/// The Ingresses in ingress-nginx's order (§7.2), their annotations read (a non-canary's
/// reported here; a canary's by [`canary_settings`]): the non-canaries, and the canaries (§7.6).
fn members<'o>(
    ingresses: &'o [Arc<Ingress>],
    (prefix, options, secrets): (&str, &Options, &Secrets<'_>),
    book: &mut StatusBook,
) -> (Vec<Member<'o>>, Vec<Member<'o>>) {
    // The ConfigMap's body limit and route, one policy for every Ingress that sets none of its own.
    let config = &options.ingress_nginx_config;
    let (default_ranges, _) = access::source_ranges(&Default::default(), prefix, &config.access);
    let default_ranges = Policy {
        allow: default_ranges.allow,
        deny: default_ranges.deny,
        ..Policy::default()
    };
    let default_policy = ingress_policy(config.proxy_body_size, &[], default_ranges, options);
    let reach = (options.upstream_variants, options.external_auth_timeout_ms);
    let global_auth = external_auth::read_global(config, reach).map(|read| read.map(Arc::new));
    let age = |i: &'o Ingress| IngressAge {
        created: Age::of(Kind::Ingress, &i.metadata).created,
        namespace: i.metadata.namespace.as_deref().unwrap_or("default"),
        name: i.metadata.name.as_deref().unwrap_or_default(),
    };
    // Each Ingress's age read once, not at every comparison of the sort.
    let mut ordered: Vec<(IngressAge<'o>, &'o Ingress)> = ingresses.iter().map(|i| (age(i), i.as_ref())).collect();
    ordered.sort_by(|a, b| ingress_order(&a.0, &b.0));
    let (mut members, mut canaries) = (Vec::with_capacity(ordered.len()), Vec::new());
    for (_, ingress) in ordered {
        let key = key_of(Kind::Ingress, &ingress.metadata);
        let empty = Default::default();
        let mut annotations =
            IngressNginxAnnotations::parse(ingress.metadata.annotations.as_ref().unwrap_or(&empty), prefix);
        if !options.upstream_variants {
            without_variants(&mut annotations, prefix);
        }
        if !options.gateway_routes {
            without_gateway_routes(&mut annotations, prefix);
        }
        let empty = Default::default();
        let written = ingress.metadata.annotations.as_ref().unwrap_or(&empty);
        let (ranges, unusable_ranges) = access::source_ranges(written, prefix, &config.access);
        let basic_auth = basic_auth::read(written, prefix, &key.namespace, secrets);
        if let Some(Ok(auth)) = &basic_auth {
            report_unusable_users(&key, auth, prefix, book);
        }
        let own_auth = external_auth::read(written, prefix, reach).map(|read| read.map(Arc::new));
        // ingress-nginx's `shouldApplyGlobalAuth`: the ConfigMap's unless the Ingress has its own
        // or turns it off.
        let global_on = written
            .get(&format!("{prefix}/{}", access::ENABLE_GLOBAL_AUTH))
            .map(|v| v.trim())
            != Some("false");
        let external_auth = own_auth.or_else(|| global_auth.clone().filter(|_| global_on));
        let rate_limit = annotations.rate_limit.clone().map(|limit| RateLimit {
            zone: format!("{}/{}", key.namespace, key.name),
            status: config.limit_req_status_code,
            in_flight_status: config.limit_conn_status_code,
            ..limit
        });
        let own = annotations.proxy_body_size.is_some()
            || !annotations.proxying.is_empty()
            || annotations.cors.is_some()
            || rate_limit.is_some()
            || matches!(basic_auth, Some(Ok(_)))
            || matches!(external_auth, Some(Ok(_)))
            || (default_policy.as_ref()).is_none_or(|p| (&p.allow, &p.deny) != (&ranges.allow, &ranges.deny));
        let policy = match own {
            false => default_policy.clone(),
            true => {
                let asked = Policy {
                    allow: ranges.allow,
                    deny: ranges.deny,
                    cors: annotations.cors.clone().map(Arc::new),
                    rate_limit,
                    basic_auth: basic_auth.clone().and_then(Result::ok),
                    external_auth: external_auth.clone().and_then(Result::ok),
                    ..Policy::default()
                };
                let size = annotations.proxy_body_size.unwrap_or(config.proxy_body_size);
                ingress_policy(size, &annotations.proxying, asked, options)
            }
        };
        let unverifiable = unverifiable(&annotations, &key.namespace, options);
        let member = Member {
            age: Arc::new(Age::of(Kind::Ingress, &ingress.metadata)),
            key,
            ingress,
            annotations,
            unverifiable,
            policy,
            unusable_ranges,
            basic_auth,
            external_auth,
        };
        if member.annotations.is_canary() {
            canaries.push(member);
            continue;
        }
        for problem in &member.annotations.problems {
            let about = annotation(prefix, &problem.name);
            let message = problem.message.clone();
            book.add_about(
                &member.key,
                Status::Accepted,
                (problem.kind(), problem.reason),
                about,
                message,
            );
        }
        // A canary's settings on an Ingress that is not a canary do nothing.
        for name in member.annotations.canary.keys().filter(|n| n.as_str() != "canary") {
            let message = not_honored_message(prefix, name) + " (this Ingress is not a canary)";
            let why = (ConditionKind::Warning, Reason::AnnotationNotHonored);
            book.add_about(&member.key, Status::Accepted, why, annotation(prefix, name), message);
        }
        members.push(member);
    }
    (members, canaries)
}

/// ROUTING.md §9: each Ingress's access-control annotations, and the ConfigMap's keys `configmap`,
/// judged against its waiver. A canary's own are not (ingress-nginx applies its main location's).
fn guard(members: &[Member<'_>], prefix: &str, configmap: &[(String, String)], book: &mut StatusBook) -> Guard {
    let mut guard = Guard::default();
    for member in members {
        let empty = Default::default();
        let annotations = member.ingress.metadata.annotations.as_ref().unwrap_or(&empty);
        let mut fields = access::fields(annotations, prefix, configmap);
        access::enforce_ranges(&mut fields, &member.unusable_ranges);
        if let Some(read) = &member.basic_auth {
            access::enforce_family(&mut fields, basic_auth::ANNOTATIONS, read);
        }
        if let Some(read) = &member.external_auth {
            access::enforce_family(&mut fields, external_auth::ANNOTATIONS, read);
            access::enforce_family(&mut fields, &[external_auth::GLOBAL_URL], read);
        }
        guard.judge(&member.key, &member.ingress.metadata, fields, book, Status::Accepted);
    }
    guard
}

/// A canary Ingress's settings (§7.6), its problems and every other annotation of it reported: a
/// canary's own annotations are not applied (the main location's are).
fn canary_settings(canary: &Member<'_>, prefix: &str, book: &mut StatusBook) -> CanarySettings {
    let (settings, problems) = canary::read(&canary.annotations.canary, prefix);
    for problem in problems {
        let about = annotation(prefix, &problem.name);
        book.add_about(
            &canary.key,
            Status::Accepted,
            (problem.kind(), problem.reason),
            about,
            problem.message,
        );
    }
    let others = canary
        .ingress
        .metadata
        .annotations
        .iter()
        .flatten()
        .filter_map(|(k, _)| {
            let name = k.strip_prefix(prefix)?.strip_prefix('/')?;
            (!name.starts_with("canary")).then_some(name)
        });
    for name in others {
        let message = format!(
            "{prefix}/{name} is not applied: a canary Ingress's own annotations are not (ROUTING.md §7.6); the main \
             location's apply to its requests"
        );
        let why = (ConditionKind::Warning, Reason::AnnotationNotHonored);
        book.add_about(&canary.key, Status::Accepted, why, annotation(prefix, name), message);
    }
    settings
}

/// The canaries, for the drafts of the locations they attach to.
struct Canaries<'c, 'o> {
    members: &'c [Member<'o>],
    settings: &'c [CanarySettings],
    prefix: &'c str,
}

/// §7.4: every Ingress of a server in regex mode is told so, with the Ingress that turned it on.
fn report_regex_mode(server: &Server<'_>, members: &[Member<'_>], book: &mut StatusBook) {
    let Some(by) = server.regex_mode else { return };
    let host = server.host.as_deref().unwrap_or("(any host)");
    let on = &members[by.member].key;
    let turned_on_by = format!("{} on Ingress {}/{}", by.annotation, on.namespace, on.name);
    for &member in &server.members {
        let about = About::RegexMode {
            host: server.host.clone(),
            turned_on_by: turned_on_by.clone(),
        };
        let message = format!(
            "host {host} is in regex mode (ROUTING.md §7.4), turned on by {turned_on_by}: every path of the host \
             is a case-insensitive regex anchored at its start, longest path first"
        );
        let why = (ConditionKind::Info, Reason::RegexMode);
        book.add_about(&members[member].key, Status::Accepted, why, about, message);
    }
}

/// A condition about the ingress-nginx annotation `name` (without its prefix).
fn annotation(prefix: &str, name: &str) -> About {
    About::Field(format!("{prefix}/{name}"))
}

/// One laid-out rule as a draft: its backend resolved (a 503 when its port cannot be, ROUTING.md
/// §5), refused with a status when unusable or when the filter would refuse it.
#[allow(clippy::too_many_arguments)]
fn draft(
    laid: Laid<'_>,
    rank: usize,
    members: &[Member<'_>],
    canaries: &Canaries<'_, '_>,
    contender: &(ResourceKey, Arc<Age>),
    claiming: Claiming,
    inputs: &mut Inputs<'_>,
    validator: &mut RuleValidator,
) -> Option<Draft> {
    let owner = &members[laid.member];
    let action = match laid.action {
        Act::Redirect(redirect) => ActionSpec::Redirect(redirect),
        Act::Respond(response) => ActionSpec::DirectResponse(response),
        Act::NotFound => ActionSpec::DirectResponse(DirectResponse {
            status: 404,
            ..DirectResponse::default()
        }),
        Act::Route { .. } if owner.unverifiable.is_some() => {
            let why = owner.unverifiable.as_deref().unwrap_or_default();
            inputs.book.error(
                &owner.key,
                Status::Accepted,
                Reason::AnnotationNotHonored,
                format!(
                    "{}: {why}; requests for this path get 503 rather than reach the backend unchecked",
                    laid.at
                ),
            );
            service_unavailable()
        }
        Act::Route {
            backend,
            rewrite_regex,
            set_headers,
            canary,
        } => match backend_cluster(backend, &owner.key, inputs.services, inputs.options) {
            Ok(cluster) => ActionSpec::Route(RouteAction {
                rewrite_regex,
                set_headers,
                canary: canary.and_then(|(c, backend)| table_canary(c, backend, canaries, inputs).map(Box::new)),
                affinity: (owner.annotations.affinity.as_ref())
                    .filter(|_| inputs.options.upstream_variants)
                    .map(|affinity| Box::new(affinity.at(&laid.path))),
                ..RouteAction::to(variant(owner, inputs.options).cluster(cluster))
            }),
            Err(NoCluster::PortNotFound(why)) => {
                inputs.book.error(
                    &owner.key,
                    Status::Accepted,
                    Reason::ServicePortNotFound,
                    format!("{}: {why}; requests for this path get 503", laid.at),
                );
                service_unavailable()
            }
            Err(NoCluster::Unusable(reason, why)) => {
                let message = format!("{}: {why}; this path is not routed", laid.at);
                inputs.book.error(&owner.key, Status::Accepted, reason, message);
                return None;
            }
        },
    };
    let policy = match &action {
        ActionSpec::Route(_) => {
            without_auth_at(owner.policy.as_ref(), &laid.path, &inputs.options.ingress_nginx_config)
        }
        _ => None,
    };
    let rule = RuleSpec {
        name: laid.name,
        host: laid.host,
        path: laid.path,
        conditions: laid.conditions,
        action,
        hsts: None,
        policy,
    };
    if let Err(why) = validator.rule(&rule) {
        let message = format!("{}: {why}; this path is not routed", laid.at);
        inputs
            .book
            .error(&owner.key, Status::Accepted, Reason::InvalidRule, message);
        return None;
    }
    Some(Draft {
        owner: owner.key.clone(),
        age: owner.age.clone(),
        position: laid.position,
        claimant: contender.0.clone(),
        claimant_age: contender.1.clone(),
        rule,
        order: HostOrder::IngressNginx(rank),
        claiming,
    })
}

/// The table's canary of canary Ingress `c` to `backend` (§7.6), or `None` (reported on the
/// canary) when its backend cannot be used.
fn table_canary(
    c: usize,
    backend: &k8s_openapi::api::networking::v1::IngressBackend,
    canaries: &Canaries<'_, '_>,
    inputs: &mut Inputs<'_>,
) -> Option<switchyard_table::Canary> {
    let key = &canaries.members[c].key;
    if let Some(why) = &canaries.members[c].unverifiable {
        let message = format!("the canary's backend: {why}; the location's requests all go to its main backend");
        inputs
            .book
            .error(key, Status::Accepted, Reason::AnnotationNotHonored, message);
        return None;
    }
    let variant = variant(&canaries.members[c], inputs.options);
    let cluster = match backend_cluster(backend, key, inputs.services, inputs.options) {
        Ok(cluster) => variant.cluster(cluster),
        Err(NoCluster::PortNotFound(why) | NoCluster::Unusable(_, why)) => {
            let message = format!("the canary's backend: {why}; the location's requests all go to its main backend");
            inputs
                .book
                .error(key, Status::Accepted, Reason::ServicePortNotFound, message);
            return None;
        }
    };
    let (table, problem) = canary::table_canary(&canaries.settings[c], cluster, canaries.prefix);
    if let Some(problem) = problem {
        inputs.book.add(
            key,
            Status::Accepted,
            ConditionKind::Warning,
            problem.reason,
            problem.message,
        );
    }
    Some(table)
}

/// What the processor decides once the host contest is over.
#[derive(Default)]
struct ServersSettle {
    servers: Vec<SettledServer>,
}

/// A server as its settling needs it.
struct SettledServer {
    host: Option<String>,
    /// Its Ingresses; the first is the contender.
    members: Vec<ResourceKey>,
    /// Its aliases and the Ingress that set them.
    aliases: Option<(ResourceKey, Vec<String>)>,
    /// Its TLS passthrough (ROUTING.md §8.4), taken when it wins its host.
    passthrough: Option<L4Route>,
}

impl SettledServer {
    fn of(server: &Server<'_>, members: &[Member<'_>], passthrough: Option<L4Route>) -> SettledServer {
        SettledServer {
            host: server.host.clone(),
            members: server.members.iter().map(|&m| members[m].key.clone()).collect(),
            aliases: (server.aliases.as_ref()).map(|(by, aliases)| (members[*by].key.clone(), aliases.clone())),
            passthrough,
        }
    }
}

impl Settle for ServersSettle {
    fn settle(self: Box<Self>, winners: &HostWinners, _options: &Options, book: &mut StatusBook, l4: &mut L4Routes) {
        // Ingress → (hosts won, has a server without a host), for every member of every server: a
        // contender's `HostTaken` the contest recorded, but whether it lost everything depends on
        // the other servers it is a member of too (`collisions::resolve` leaves that to here).
        let mut outcome: std::collections::BTreeMap<&ResourceKey, (usize, bool)> = Default::default();
        for server in &self.servers {
            let Some(contender) = server.members.first() else {
                continue;
            };
            let Some(host) = server.host.as_deref() else {
                for member in &server.members {
                    outcome.entry(member).or_default().1 = true;
                }
                continue;
            };
            let won = winners.get(host).is_some_and(|w| w.contains(contender));
            if let (true, Some(route)) = (won, &server.passthrough) {
                l4.passthrough.push(route.clone());
            }
            for (i, member) in server.members.iter().enumerate() {
                let entry = outcome.entry(member).or_default();
                if won {
                    entry.0 += 1;
                } else if i > 0 {
                    record_host_taken(book, member, host, &owner_of(winners, host));
                }
            }
            if let (true, Some((by, aliases))) = (won, &server.aliases) {
                for alias in aliases {
                    if !winners.get(alias).is_some_and(|w| w.contains(contender)) {
                        book.add(
                            by,
                            Status::Accepted,
                            ConditionKind::Warning,
                            Reason::AliasTaken,
                            format!(
                                "server-alias {alias} is dropped: that host is {}",
                                match winners.get(alias.as_str()) {
                                    Some(_) => format!("owned by {}", owner_of(winners, alias)),
                                    None => "not routed".to_owned(),
                                }
                            ),
                        );
                    }
                }
            }
        }
        for (member, (won, hostless)) in outcome {
            if loses_everything(won, hostless) {
                record_all_hosts_taken(book, member);
            }
        }
    }
}

/// The name of a host's owner, for a message.
fn owner_of(winners: &HostWinners, host: &str) -> String {
    winners
        .get(host)
        .and_then(|w| w.iter().next())
        .map(ResourceKey::display)
        .unwrap_or_else(|| "another resource".to_owned())
}

/// How an Ingress's backends are spoken to (§7, docs/routing.md "The upstream side"): its
/// `backend-protocol`, its backend's certificate checked by its `proxy-ssl-*`, within its
/// `proxy-connect-timeout` or the ConfigMap's, to its `service-upstream`, by its `load-balance`.
fn variant(member: &Member<'_>, options: &Options) -> Variant {
    let annotations = &member.annotations;
    let verify = match annotations.backend_protocol.tls() {
        true => annotations.proxy_ssl.check(&member.key.namespace).and_then(Result::ok),
        false => None,
    };
    Variant {
        protocol: annotations.backend_protocol,
        verify,
        connect_timeout_ms: (annotations.proxy_connect_timeout_ms)
            .unwrap_or(options.ingress_nginx_config.proxy_connect_timeout_ms),
        service_upstream: annotations.service_upstream == Some(true),
        // Affinity hashes on a ring, whatever `load-balance` says (ingress-nginx's sticky and chash
        // balancers replace it).
        balance: match annotations.affinity {
            Some(_) => Balance::RingHash,
            None => annotations.load_balance,
        },
        ..Variant::default()
    }
    .under(options)
}

/// The policy of a body limit of `size` bytes (`None`: no limit), `cors`, the source `ranges`, the
/// `rate_limit` and, on a gateway whose routes are Switchyard's ([`Options::gateway_routes`]), the
/// route of the ConfigMap's timeouts and retries with `proxying` over them, which adds the CORS
/// headers when they are the same for every response; `None` when it asks nothing.
fn ingress_policy(size: Option<u64>, proxying: &[Setting], asked: Policy, options: &Options) -> Option<Arc<Policy>> {
    let Policy { mut cors, .. } = asked;
    let mut route = None;
    if options.gateway_routes {
        let added = cors.as_ref().and_then(|cors| cors.every_response_headers());
        if let (Some(cors), Some(_)) = (cors.as_mut(), &added) {
            Arc::make_mut(cors).by_route = true;
        }
        route = RouteSettings {
            response_headers: added.as_deref().map(headers_digest),
            ..options.ingress_nginx_config.proxying.with(proxying).route()
        }
        .name();
    }
    let policy = Policy {
        max_body_bytes: size,
        route,
        cors,
        ..asked
    };
    (policy != Policy::default()).then(|| Arc::new(policy))
}

/// The policy of a location at `path`: `policy`, without its authentication when the path starts
/// with one of the ConfigMap's `no-auth-locations` (ingress-nginx's `isLocationInLocationList`,
/// which turns off every `auth_request` and `auth_basic` of such a location).
fn without_auth_at(policy: Option<&Arc<Policy>>, path: &PathSpec, config: &ControllerConfig) -> Option<Arc<Policy>> {
    let policy = policy?;
    let (PathSpec::Exact(path) | PathSpec::SegmentPrefix(path) | PathSpec::Prefix(path) | PathSpec::Regex(path)) = path;
    let authenticated = policy.basic_auth.is_some() || policy.external_auth.is_some();
    if !authenticated || !config.no_auth_locations.iter().any(|l| path.starts_with(l.as_str())) {
        return Some(Arc::clone(policy));
    }
    let open = Policy {
        basic_auth: None,
        external_auth: None,
        ..(**policy).clone()
    };
    (open != Policy::default()).then(|| Arc::new(open))
}

/// Warns of the users of an Ingress's basic authentication whose hash no scheme checks: they
/// never get in (nginx's `crypt` fails on them too).
fn report_unusable_users(key: &ResourceKey, auth: &BasicAuth, prefix: &str, book: &mut StatusBook) {
    let unusable = auth.unusable_users();
    if unusable.is_empty() {
        return;
    }
    let message = format!(
        "{} (auth-secret) lists users whose password hash is of no scheme nginx checks (bcrypt, $apr1$, $1$, \
         $5$, $6$, {{SHA}}, {{SSHA}}, {{PLAIN}}): {} never get in",
        auth.source,
        unusable.join(", ")
    );
    let why = (ConditionKind::Warning, Reason::BasicAuthUserUnusable);
    book.add_about(key, Status::Accepted, why, annotation(prefix, "auth-secret"), message);
}

/// Without the gateway's routes ([`Options::gateway_routes`]), the timeouts and retries an Ingress
/// sets are reported as not honoured (the gateway's own route applies).
fn without_gateway_routes(annotations: &mut IngressNginxAnnotations, prefix: &str) {
    for setting in std::mem::take(&mut annotations.proxying) {
        let name = setting.name();
        annotations.problems.push(Problem {
            name: name.to_owned(),
            reason: Reason::AnnotationNotHonored,
            message: format!(
                "{prefix}/{name} needs a route of its own, which only a gateway whose routes come from switchyard \
                 watch --clusters-dir has; the gateway's route applies"
            ),
        });
    }
    annotations.problems.sort_by(|a, b| a.name.cmp(&b.name));
}

/// Why the backends of an Ingress in `namespace` with `annotations` cannot be reached as its
/// `proxy-ssl-verify: on` asks (fail closed: its locations answer 503): the check cannot be made
/// (no `proxy-ssl-secret`, or one of another namespace), or this gateway has no variant clusters
/// to make it with. `None` when the annotation is off, or the backend is not spoken to over TLS
/// (nginx checks nothing then).
fn unverifiable(annotations: &IngressNginxAnnotations, namespace: &str, options: &Options) -> Option<String> {
    let check = annotations.proxy_ssl.check(namespace)?;
    if !options.upstream_variants {
        return Some(
            "proxy-ssl-verify \"on\" asks for the backend's certificate to be checked, which needs a cluster of its \
             own, which only a gateway whose clusters come from switchyard watch --clusters-dir or --istio-clusters has"
                .to_owned(),
        );
    }
    match (annotations.backend_protocol.tls(), check) {
        (true, Err(why)) => Some(why),
        _ => None,
    }
}

/// Without variant clusters ([`Options::upstream_variants`]), the annotations that need one are
/// reported as not honoured (the template's cluster serves the backend with its own settings).
fn without_variants(annotations: &mut IngressNginxAnnotations, prefix: &str) {
    let backend_protocol = annotations.backend_protocol != UpstreamProtocol::Http;
    let connect_timeout = annotations.proxy_connect_timeout_ms.is_some();
    let service_upstream = annotations.service_upstream == Some(true);
    let load_balance = annotations.load_balance != Balance::RoundRobin;
    let affinity = |cookie: bool| match &annotations.affinity {
        Some(IngressAffinity::Cookie(..)) => cookie,
        Some(IngressAffinity::Hash(_)) => !cookie,
        None => false,
    };
    let needing = [
        ("backend-protocol", backend_protocol),
        ("proxy-connect-timeout", connect_timeout),
        ("service-upstream", service_upstream),
        ("load-balance", load_balance),
        ("affinity", affinity(true)),
        ("upstream-hash-by", affinity(false)),
    ];
    for (name, set) in needing {
        if set {
            annotations.problems.push(Problem {
                name: name.to_owned(),
                reason: Reason::AnnotationNotHonored,
                message: format!(
                    "{prefix}/{name} needs a cluster of its own, which only a gateway whose clusters come from \
                     switchyard watch --clusters-dir or --istio-clusters has; the backend is spoken to with its cluster's own settings"
                ),
            });
        }
    }
    annotations.backend_protocol = UpstreamProtocol::Http;
    annotations.proxy_connect_timeout_ms = None;
    annotations.service_upstream = None;
    annotations.load_balance = Balance::RoundRobin;
    annotations.affinity = None;
}
