//! The status report: one entry per resource, saying what became of it and why, in words a platform
//! engineer understands. Gathered while the processors run, the way Contour's `internal/dag` does
//! (`add_error(type, reason, message)`), and written by `switchyard compile --status FILE`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::objects::{Kind, ResourceKey};

/// What became of a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// An Ingress that routes (perhaps with some of its rules dropped: see the conditions).
    Accepted,
    /// A resource of another class (ROUTING.md §1), or an IngressClass of another controller.
    Ignored,
    /// An Ingress that routes nothing: all its hosts are taken, or none of its rules is usable.
    Rejected,
    /// An HTTPProxy (or an IngressClass of ours) that is in use.
    Valid,
    /// An HTTPProxy with an error (ROUTING.md §3).
    Invalid,
    /// An HTTPProxy that no valid root includes; a VirtualServerRoute no winning VirtualServer
    /// references.
    Orphaned,
    /// A VirtualServer or VirtualServerRoute that routes, with a part of it refused (NGINX's
    /// `Warning` state).
    Warning,
}

impl Status {
    /// The lowercase word used in the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Accepted => "accepted",
            Status::Ignored => "ignored",
            Status::Rejected => "rejected",
            Status::Valid => "valid",
            Status::Invalid => "invalid",
            Status::Orphaned => "orphaned",
            Status::Warning => "warning",
        }
    }
}

/// Declares a vocabulary of unit variants whose words are the variant names: `Display`, `as_str`
/// and serde all give the name as written, and values order by that word (so any sort of conditions
/// is the one the strings had). Exported for the sidecar's own vocabularies (the caller imports
/// `serde::Serialize`).
///
/// Written `vocabulary! { #[ordered_as_declared] ... }`, values order as their variants are declared
/// instead (the [`crate::objects::Kind`]s, whose order is part of every resource's identity).
#[macro_export]
macro_rules! vocabulary {
    (#[ordered_as_declared] $(#[$meta:meta])* pub enum $name:ident { $($(#[$doc:meta])* $variant:ident,)+ }) => {
        $crate::vocabulary!(@words [PartialOrd, Ord] $(#[$meta])* pub enum $name { $($(#[$doc])* $variant,)+ });
    };
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$doc:meta])* $variant:ident,)+ }) => {
        $crate::vocabulary!(@words [] $(#[$meta])* pub enum $name { $($(#[$doc])* $variant,)+ });

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for $name {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.as_str().cmp(other.as_str())
            }
        }
    };
    (@words [$($order:ident),*] $(#[$meta:meta])* pub enum $name:ident { $($(#[$doc:meta])* $variant:ident,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize $(, $order)*)]
        pub enum $name {
            $($(#[$doc])* $variant,)+
        }

        impl $name {
            /// Every word of the vocabulary, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The word as it appears in the report, on /status and in Kubernetes.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => stringify!($variant),)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

vocabulary! {
    /// The type of a condition (Contour's `DetailedCondition` error/warning split, plus the words for
    /// a resource that is fine).
    pub enum ConditionKind {
        /// A note on a resource that routes.
        Info,
        /// The resource is valid (HTTPProxy, IngressClass of ours).
        Valid,
        /// The resource is not ours.
        Ignored,
        /// No valid root includes the HTTPProxy.
        Orphaned,
        /// Something of the resource is not routed.
        Error,
        /// Routed, but perhaps not as the author meant.
        Warning,
    }
}

vocabulary! {
    /// Why a condition holds: the CamelCase reason of the report, the Kubernetes status and events.
    pub enum Reason {
        /// The class rules (ROUTING.md §1) make the resource ours.
        ClassMatches,
        /// The class rules make the resource another controller's.
        IgnoredByClass,
        /// An IngressClass names our controller.
        ControllerMatches,
        /// An IngressClass names another controller.
        OtherController,
        /// An Ingress with no usable rule.
        NoRules,
        /// The router annotation of an Ingress cannot be read.
        BadRouterAnnotation,
        /// An `ImplementationSpecific` path that looks like a regex, routed as a prefix.
        PathLooksLikeRegex,
        /// An Ingress path type we do not know.
        UnknownPathType,
        /// An Ingress rule the table refuses.
        InvalidRule,
        /// An Ingress backend that names no Service.
        UnsupportedBackend,
        /// An Ingress backend without a port.
        MissingServicePort,
        /// A backend port the Service does not list (ROUTING.md §5): the rule answers 503.
        ServicePortNotFound,
        /// A host owned by an older resource (ROUTING.md §2).
        HostTaken,
        /// An Ingress all of whose hosts are taken.
        Rejected,
        /// A rule identical to an older one, dropped.
        PathTaken,
        /// A root HTTPProxy without `virtualhost.fqdn`.
        VirtualHostFqdnMissing,
        /// A `virtualhost.fqdn` that is not a host.
        VirtualHostFqdnInvalid,
        /// A root HTTPProxy outside the root namespaces.
        RootProxyNotAllowedInNamespace,
        /// An include tree deeper or larger than allowed.
        IncludeTreeTooLarge,
        /// A request headers policy that cannot be applied.
        RequestHeadersPolicyInvalid,
        /// Match conditions that cannot be combined.
        ConditionsNotValid,
        /// A route without services.
        RouteHasNoServices,
        /// A route service that cannot be used.
        ServiceInvalid,
        /// A route the table refuses.
        RouteNotValid,
        /// No valid root includes the HTTPProxy.
        Orphaned,
        /// The HTTPProxy is valid.
        Valid,
        /// An include names a proxy that does not exist.
        IncludeNotFound,
        /// An include that leads back to a proxy on its own path.
        IncludeCreatesCycle,
        /// An include that names a root HTTPProxy.
        RootIncludesRoot,
        /// Prefix/exact/regex path conditions that are malformed or conflict.
        PathMatchConditionsNotValid,
        /// Two exact header conditions on the same header.
        DuplicateMatchConditionHeaders,
        /// Header conditions that contradict each other.
        HeaderMatchConditionsNotValid,
        /// Query parameter conditions that contradict each other.
        QueryParameterMatchConditionsNotValid,
        /// An object the API server sent that does not decode into its schema.
        ObjectDoesNotDecode,
        /// A VirtualServer (or VirtualServerRoute) that routes.
        AddedOrUpdated,
        /// A VirtualServer or VirtualServerRoute that fails validation and routes nothing.
        VirtualServerInvalid,
        /// A VirtualServer route refused alone (a subselector, an unknown variable, a rewrite NGINX
        /// would apply with regex captures): the rest routes.
        RouteRefused,
        /// A VirtualServer route's reference to a VirtualServerRoute that is missing, invalid or
        /// on another host: that route answers 502.
        VirtualServerRouteNotUsable,
        /// A VirtualServerRoute that no winning VirtualServer references.
        NoVirtualServerFound,
        /// A VirtualServerRoute whose host's VirtualServer does not reference it.
        IgnoredByVirtualServer,
        /// A TransportServer whose listener no GlobalConfiguration defines with its protocol.
        ListenerNotFound,
        /// A TransportServer that lost its (listener, host) pair to an older one (seed 003).
        ListenerTaken,
        /// A TransportServer that fails validation and routes nothing.
        TransportServerInvalid,
        /// §7.2: a `server-alias` with a wildcard matches one label here (nginx: any depth).
        AliasWildcardDepth,
        /// §7.2: a `server-alias` host is owned by something else; the alias is dropped.
        AliasTaken,
        /// §7.4: regex-lite cannot compile the path (look-around, back-references): that path alone
        /// is not routed.
        PathRegexUnsupported,
        /// §7.4: the host's ingress-nginx server is in regex mode, and which Ingress turned it on.
        RegexMode,
        /// §7.5, §7.7: an ingress-nginx annotation whose value ingress-nginx would refuse; ignored.
        AnnotationInvalid,
        /// §7.9: an ingress-nginx annotation Switchyard does not honour; the Ingress routes as if it
        /// were absent.
        AnnotationNotHonored,
        /// An HTTPProxy route's `timeoutPolicy` holds a value that is no duration (Contour's
        /// `TimeoutPolicyNotValid`): the route is skipped.
        TimeoutPolicyNotValid,
        /// An HTTPProxy route's `retryPolicy` holds a condition or a count Contour refuses (its
        /// `RetryPolicyNotValid`): the route is skipped.
        RetryPolicyNotValid,
        /// An HTTPProxy's `rateLimitPolicy.local` holds a value Contour refuses: on the virtual
        /// host the proxy routes nothing; on a route the route is skipped.
        RateLimitPolicyNotValid,
        /// An HTTPProxy's `virtualhost.corsPolicy` holds a value Contour refuses (its reason under
        /// its `CORSError` condition): the proxy routes nothing.
        PolicyDidNotParse,
        /// A basic authentication's Secret lists users whose password hash is of no scheme the
        /// gateway checks: they never get in.
        BasicAuthUserUnusable,
        /// A rule's timeouts or retries, which need a gateway route of its own, on a gateway whose
        /// routes are not Switchyard's (docs/routing.md, "Timeouts and retries"): the gateway's
        /// route applies.
        RouteSettingNotHonored,
        /// A backend's upstream setting (a protocol, a connect timeout) that needs a variant cluster,
        /// which only a gateway whose clusters come from the sidecar has (`--clusters-dir`;
        /// docs/routing.md, "The upstream side"): the backend is spoken to with its cluster's own
        /// settings.
        UpstreamSettingNotHonored,
        /// An ingress-nginx annotation Envoy needs no setting for: what it asks of nginx (its
        /// buffers) is what Envoy does anyway (docs/routing.md, "Buffering"); a note saying why.
        AnnotationEquivalent,
        /// §7.9: an annotation ingress-nginx v1.15 itself does not read (removed, or a ConfigMap key
        /// written as an annotation): ignored as it ignored it, a note.
        AnnotationNotRead,
        /// §9: an access-control field (auth, client certificates, source ranges) this gateway does
        /// not enforce: the rules it protects answer 403 naming it.
        AccessControlNotEnforced,
        /// §9: an access-control field its owner waived with `switchyard.io/serve-without-access-control`:
        /// served without it.
        AccessControlWaived,
        /// An NGINX Policy's setting this gateway does not apply (a rate limit keyed other than by
        /// the client's address, a second `rateLimit` of a list): noted, never silently dropped.
        PolicySettingNotHonored,
        /// NGINX ignores a Policy of a list, as here (a second `basicAuth`), with its warning.
        PolicyIgnored,
        /// NGINX overrides a Policy of a list by another, as here (`deny` ranges under `allow`
        /// ranges), with its warning.
        PolicyOverridden,
        /// §7.6: a canary path with no location of the same host, path and pathType.
        CanaryWithoutMain,
        /// §7.6: a location that already has a canary: this one is ignored.
        CanaryTaken,
        /// §7.6: a canary whose backend is its location's own: it does nothing.
        CanaryIsMain,
        /// §8.3, §8.4, §8.6: a TLS entry's Secret is missing or unusable; its hosts are served with
        /// another certificate (the default), or (VirtualServer) their handshakes fail.
        TLSSecretNotValid,
        /// §8.3: a merged host's certificate is set by an older Ingress; this one's is not used.
        TLSSecretIgnored,
        /// §8.3: a `spec.tls` host that no rule of the Ingress names: ignored.
        TLSHostWithoutRule,
        /// §8.3: a Secret in another namespace, with no delegation read: not used.
        TLSDelegationNotPermitted,
        /// §8.2: the served certificate is past its `notAfter`.
        CertificateExpired,
        /// §8.2: the served certificate ends in fewer than 10 days.
        CertificateExpiresSoon,
        /// §8.2: the served certificate does not name the host it is served for.
        CertificateHostMismatch,
        /// §8.5: an HTTPProxy's `tls.secretName` is missing or unusable: the proxy is invalid.
        SecretNotValid,
        /// §8.5: an HTTPProxy's `tls.secretName` in another namespace, with no delegation read.
        DelegationNotPermitted,
        /// §8.5: an HTTPProxy's `tls` asks for both or neither of `secretName` and `passthrough`, or a
        /// minimum version above its maximum.
        TLSConfigNotValid,
        /// §8.5: `enableFallbackCertificate` without `--default-certificate`.
        FallbackNotPresent,
        /// §8.5: `tls.clientValidation` is not built yet: the proxy is invalid, never served
        /// unchecked.
        ClientValidationNotSupported,
    }
}

vocabulary! {
    /// NGINX's `status.state` of a VirtualServer or VirtualServerRoute.
    pub enum NginxState {
        /// Routes as written.
        Valid,
        /// Routes, with something refused or not served (or a VirtualServerRoute orphaned).
        Warning,
        /// Fails validation: routes nothing.
        Invalid,
    }
}

vocabulary! {
    /// NGINX's `status.reason` (and the reason of its events).
    pub enum NginxReason {
        /// Valid.
        AddedOrUpdated,
        /// Routes, with warnings.
        AddedOrUpdatedWithWarning,
        /// Invalid, or lost its host.
        Rejected,
        /// A VirtualServerRoute that no winning VirtualServer references.
        NoVirtualServerFound,
        /// A VirtualServerRoute its host's VirtualServer does not reference.
        Ignored,
    }
}

/// The status NGINX's controller writes on a VirtualServer or VirtualServerRoute, which
/// `switchyard watch` writes back and `compile --status` reports as `nginx`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NginxStatus {
    /// `Valid`, `Warning` or `Invalid`.
    pub state: NginxState,
    /// `AddedOrUpdated`, `AddedOrUpdatedWithWarning`, `Rejected`, `NoVirtualServerFound`, `Ignored`.
    pub reason: NginxReason,
    /// A sentence for a human, as NGINX words it where it can.
    pub message: String,
}

impl NginxStatus {
    /// NGINX's status for one of its resources, from our report (`None` for other kinds, and for
    /// resources of another class: they are not ours to touch).
    pub fn of(
        kind: Kind,
        namespace: &str,
        name: &str,
        status: Status,
        conditions: &[Condition],
    ) -> Option<NginxStatus> {
        if !matches!(
            kind,
            Kind::VirtualServer | Kind::VirtualServerRoute | Kind::TransportServer
        ) {
            return None;
        }
        let first = |wanted: &[ConditionKind]| {
            conditions
                .iter()
                .find(|c| wanted.contains(&c.kind))
                .map(|c| c.message.clone())
                .unwrap_or_default()
        };
        let what = format!("{}/{}", namespace, name);
        let (state, reason, message) = match status {
            Status::Ignored => return None,
            Status::Invalid => (
                NginxState::Invalid,
                NginxReason::Rejected,
                format!(
                    "{} {what} was rejected with error: {}",
                    kind.as_str(),
                    first(&[ConditionKind::Error])
                ),
            ),
            Status::Rejected if kind == Kind::TransportServer => (
                NginxState::Warning,
                NginxReason::Rejected,
                transport_server_message(conditions),
            ),
            Status::Rejected => (
                NginxState::Warning,
                NginxReason::Rejected,
                format!("{} {what} was rejected: {}", kind.as_str(), host_message(conditions)),
            ),
            Status::Orphaned => {
                let ignored = conditions.iter().any(|c| c.reason == Reason::IgnoredByVirtualServer);
                let reason = if ignored {
                    NginxReason::Ignored
                } else {
                    NginxReason::NoVirtualServerFound
                };
                (NginxState::Warning, reason, first(&[ConditionKind::Orphaned]))
            }
            Status::Valid | Status::Warning | Status::Accepted => {
                let warnings: Vec<&str> = conditions
                    .iter()
                    .filter(|c| matches!(c.kind, ConditionKind::Warning | ConditionKind::Error))
                    .map(|c| c.message.as_str())
                    .collect();
                if warnings.is_empty() {
                    (
                        NginxState::Valid,
                        NginxReason::AddedOrUpdated,
                        format!("Configuration for {what} was added or updated"),
                    )
                } else {
                    (
                        NginxState::Warning,
                        NginxReason::AddedOrUpdatedWithWarning,
                        format!(
                            "Configuration for {what} was added or updated ; with warning(s): {}",
                            warnings.join("; ")
                        ),
                    )
                }
            }
        };
        Some(NginxStatus { state, reason, message })
    }
}

/// A rejected TransportServer's message, in seed 003's words: `Host is taken by another resource`,
/// `Listener X is taken by another resource`, `Listener X doesn't exist`.
fn transport_server_message(conditions: &[Condition]) -> String {
    if conditions.iter().any(|c| c.reason == Reason::HostTaken) {
        return "Host is taken by another resource".to_owned();
    }
    conditions
        .iter()
        .find(|c| matches!(c.reason, Reason::ListenerTaken | Reason::ListenerNotFound))
        .or_else(|| conditions.iter().find(|c| c.kind == ConditionKind::Error))
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

/// The message of a lost host (`HostTaken`), else of the first error.
fn host_message(conditions: &[Condition]) -> String {
    conditions
        .iter()
        .find(|c| c.reason == Reason::HostTaken)
        .or_else(|| conditions.iter().find(|c| c.kind == ConditionKind::Error))
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

/// One condition of a resource's status.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Condition {
    /// `Info`, `Valid`, `Ignored`, `Orphaned`, `Error` or `Warning`.
    #[serde(rename = "type")]
    pub kind: ConditionKind,
    /// Why (`HostTaken`, `IncludeNotFound`, ...).
    pub reason: Reason,
    /// A sentence for a human.
    pub message: String,
    /// What the condition is about, for the readers that group or draw it (the migration report,
    /// the dashboard), so that none reads a message back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub about: Option<About>,
}

impl Condition {
    /// A condition of this type and reason, about `about`, in these words.
    pub fn new((kind, reason): (ConditionKind, Reason), about: Option<About>, message: String) -> Condition {
        Condition {
            kind,
            reason,
            message,
            about,
        }
    }
}

/// What a condition is about, beside its words.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum About {
    /// A manifest field: `nginx.ingress.kubernetes.io/auth-url`, `spec.virtualhost.authorization`.
    Field(String),
    /// ROUTING.md §7.4: a host's ingress-nginx server is in regex mode.
    RegexMode {
        /// The host (`None`: the catch-all server).
        host: Option<String>,
        /// What turned it on: `use-regex on Ingress shop/web`.
        turned_on_by: String,
    },
    /// ROUTING.md §7.1: the Ingress is served as ingress-nginx served it.
    IngressNginx,
}

/// The status of one resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceStatus {
    /// The kind (every kind but Service and GlobalConfiguration has a status).
    pub kind: Kind,
    /// Namespace (empty for IngressClass).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The outcome.
    pub status: Status,
    /// Why.
    pub conditions: Vec<Condition>,
    /// For a VirtualServer or VirtualServerRoute of ours: the status NGINX's controller would write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nginx: Option<NginxStatus>,
}

/// Status gathered during one compilation, keyed by resource.
#[derive(Debug, Default)]
pub struct StatusBook {
    entries: BTreeMap<ResourceKey, Entry>,
}

/// What the book holds of one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    status: Status,
    conditions: Vec<Condition>,
}

impl StatusBook {
    /// Records the resource's outcome (replacing an earlier one).
    pub fn set(&mut self, key: &ResourceKey, status: Status) {
        self.entry(key, status).status = status;
    }

    /// The recorded outcome, if any.
    pub fn get(&self, key: &ResourceKey) -> Option<Status> {
        self.entries.get(key).map(|e| e.status)
    }

    /// Records that a resource is not ours (ROUTING.md §1), with the class rule that failed.
    pub fn ignored_by_class(&mut self, key: &ResourceKey, why: impl std::fmt::Display) {
        self.add(
            key,
            Status::Ignored,
            ConditionKind::Ignored,
            Reason::IgnoredByClass,
            format!("not ours: {why}"),
        );
    }

    /// Adds a condition; the resource gets `default` as its status if it has none yet.
    pub fn add(
        &mut self,
        key: &ResourceKey,
        default: Status,
        kind: ConditionKind,
        reason: Reason,
        message: impl Into<String>,
    ) {
        self.add_condition(key, default, Condition::new((kind, reason), None, message.into()));
    }

    /// [`StatusBook::add`] of a condition about `about`.
    pub fn add_about(
        &mut self,
        key: &ResourceKey,
        default: Status,
        why: (ConditionKind, Reason),
        about: About,
        message: impl Into<String>,
    ) {
        self.add_condition(key, default, Condition::new(why, Some(about), message.into()));
    }

    /// Adds `condition` (once); the resource gets `default` as its status if it has none yet.
    pub fn add_condition(&mut self, key: &ResourceKey, default: Status, condition: Condition) {
        let entry = self.entry(key, default);
        if !entry.conditions.contains(&condition) {
            entry.conditions.push(condition);
        }
    }

    /// Adds an `Error` condition.
    pub fn error(&mut self, key: &ResourceKey, default: Status, reason: Reason, message: impl Into<String>) {
        self.add(key, default, ConditionKind::Error, reason, message);
    }

    /// Removes the resource's conditions with this reason.
    pub fn drop_reason(&mut self, key: &ResourceKey, reason: Reason) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.conditions.retain(|c| c.reason != reason);
        }
    }

    /// Whether the resource has a condition with this reason.
    pub fn has_reason(&self, key: &ResourceKey, reason: Reason) -> bool {
        self.entries
            .get(key)
            .is_some_and(|e| e.conditions.iter().any(|c| c.reason == reason))
    }

    fn entry(&mut self, key: &ResourceKey, status: Status) -> &mut Entry {
        self.entries.entry(key.clone()).or_insert_with(|| Entry {
            status,
            conditions: Vec::new(),
        })
    }

    /// What is recorded of `key` (the incremental compiler keeps each Ingress's entry as its
    /// processor left it).
    pub fn recorded(&self, key: &ResourceKey) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// Takes the entry of `key` out of the book.
    pub fn take(&mut self, key: &ResourceKey) -> Option<Entry> {
        self.entries.remove(key)
    }

    /// A book holding one resource's entry, to record more on it.
    pub fn with(key: ResourceKey, entry: Entry) -> StatusBook {
        StatusBook {
            entries: BTreeMap::from([(key, entry)]),
        }
    }

    /// The report, sorted by kind, namespace and name ([`report_order`]).
    pub fn finish(self) -> Vec<ResourceStatus> {
        let mut out: Vec<ResourceStatus> = self
            .entries
            .into_iter()
            .map(|(key, entry)| ResourceStatus {
                nginx: NginxStatus::of(key.kind, &key.namespace, &key.name, entry.status, &entry.conditions),
                kind: key.kind,
                namespace: key.namespace,
                name: key.name,
                status: entry.status,
                conditions: entry.conditions,
            })
            .collect();
        out.sort_by(|a, b| report_order(a).cmp(&report_order(b)));
        out
    }
}

/// Where a resource's status goes in the report: by kind, then namespace and name.
pub fn report_order(status: &ResourceStatus) -> (u8, &str, &str) {
    (status.kind.report_rank(), &status.namespace, &status.name)
}

/// [`report_order`] of the resource `key`.
pub fn key_order(key: &ResourceKey) -> (u8, &str, &str) {
    (key.kind.report_rank(), &key.namespace, &key.name)
}

/// Counts of statuses per kind, for the human summary: `Ingress: 3 accepted, 1 ignored`.
pub fn summarize(statuses: &[ResourceStatus]) -> Vec<String> {
    let mut counts: BTreeMap<(u8, &str), BTreeMap<Status, usize>> = BTreeMap::new();
    for s in statuses {
        *counts
            .entry((s.kind.report_rank(), s.kind.as_str()))
            .or_default()
            .entry(s.status)
            .or_default() += 1;
    }
    counts
        .into_iter()
        .map(|((_, kind), by_status)| {
            let parts: Vec<String> = by_status
                .into_iter()
                .map(|(st, n)| format!("{n} {}", st.as_str()))
                .collect();
            format!("{kind}: {}", parts.join(", "))
        })
        .collect()
}

/// The statuses host ownership (ROUTING.md §2, [`crate::collisions`]) records on a resource of one
/// kind, in its kind's words ([`Kind::host_statuses`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostStatuses {
    /// The status of a resource that lost a host, if it has none yet.
    pub host_taken: Status,
    /// The status of a resource that lost every host.
    pub all_hosts_taken: Status,
    /// The status of a resource that lost a path (`PathTaken`), if it has none yet.
    pub path_taken: Status,
}

impl Kind {
    /// The status a resource of this kind the class check lets in gets with its `ClassMatches`
    /// note (`ours: …`), or `None` when that is not noted (HTTPProxy and the VirtualServer kinds
    /// say nothing until their processor decides). Only for the kinds with a class
    /// ([`Kind::has_class`]).
    pub fn ours_status(self) -> Option<Status> {
        match self {
            Kind::Ingress => Some(Status::Accepted),
            Kind::TransportServer => Some(Status::Valid),
            Kind::HTTPProxy
            | Kind::VirtualServer
            | Kind::VirtualServerRoute
            | Kind::IngressClass
            | Kind::GlobalConfiguration
            | Kind::Policy
            | Kind::Service
            | Kind::Secret
            | Kind::EndpointSlice => None,
        }
    }

    /// The statuses host ownership records on this kind: HTTPProxy's words (valid, invalid), or
    /// Ingress's (accepted, rejected), which the NGINX kinds' processors have set before.
    pub fn host_statuses(self) -> HostStatuses {
        match self {
            Kind::HTTPProxy => HostStatuses {
                host_taken: Status::Invalid,
                all_hosts_taken: Status::Invalid,
                path_taken: Status::Valid,
            },
            Kind::Ingress
            | Kind::IngressClass
            | Kind::VirtualServer
            | Kind::VirtualServerRoute
            | Kind::TransportServer
            | Kind::GlobalConfiguration
            | Kind::Policy
            | Kind::Service
            | Kind::Secret
            | Kind::EndpointSlice => HostStatuses {
                host_taken: Status::Accepted,
                all_hosts_taken: Status::Rejected,
                path_taken: Status::Accepted,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_and_kind_is_written_as_its_name_in_json_and_text() {
        let words = Reason::ALL
            .iter()
            .map(|r| (serde_json::to_value(r).unwrap(), r.to_string(), r.as_str()))
            .chain(
                ConditionKind::ALL
                    .iter()
                    .map(|k| (serde_json::to_value(k).unwrap(), k.to_string(), k.as_str())),
            );
        for (json, display, word) in words {
            assert_eq!(json, serde_json::Value::from(word));
            assert_eq!(display, word);
        }
        assert_eq!(Reason::ServicePortNotFound.as_str(), "ServicePortNotFound");
    }

    #[test]
    fn reasons_order_as_their_words_did_as_strings() {
        let mut by_enum = Reason::ALL.to_vec();
        by_enum.sort();
        let mut by_word: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        by_word.sort();
        assert_eq!(by_enum.iter().map(|r| r.as_str()).collect::<Vec<_>>(), by_word);
    }
}
