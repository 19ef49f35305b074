//! What the running watch knows about itself, shared between the rebuild loop, the sources and the
//! HTTP server: the table last pushed, the status report, source health, the push log and the
//! counters behind `/metrics`. One `Mutex`; every holder keeps it for a few field reads or writes only.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use switchyard_table::{RouteTable, TableSpec};

use switchyard_compiler::l4::L4Routes;
use switchyard_compiler::status::ResourceStatus;
use switchyard_compiler::vocabulary;

/// Input that cannot be read now: a manifest that does not parse, a folder that cannot be listed,
/// an object the API serves that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceError {
    /// The file (or source) at fault.
    pub source: String,
    /// What is wrong: file, line, field.
    pub message: String,
}

/// The state, shared.
#[derive(Debug, Clone, Default)]
pub struct Shared(Arc<Mutex<State>>);

impl Shared {
    /// Locks the state (a panicked holder cannot leave it half-written: every update is a few
    /// assignments, so a poisoned lock is still used).
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The table last pushed, indexed, and its push counter; `None` before the first push. Indexed
    /// once per push, on the first call, outside the lock (the engine keeps pushing meanwhile).
    pub fn live_index(&self) -> Option<Result<(Arc<RouteTable>, u64), switchyard_table::TableError>> {
        let (table, pushed) = {
            let state = self.lock();
            if let Some((at, index)) = state.route_table.as_ref().filter(|(at, _)| *at == state.tables_pushed) {
                return Some(Ok((index.clone(), *at)));
            }
            (state.table.clone()?, state.tables_pushed)
        };
        let index = match RouteTable::try_from(TableSpec::clone(&table)) {
            Ok(index) => Arc::new(index),
            Err(e) => return Some(Err(e)),
        };
        let mut state = self.lock();
        if state.tables_pushed == pushed {
            state.route_table = Some((pushed, index.clone()));
        }
        Some(Ok((index, pushed)))
    }

    /// Logs an internal error (never expected: a table or document that does not serialize) and
    /// counts it (`switchyard_internal_errors_total`).
    pub fn internal_error(&self, message: &str) {
        tracing::error!("internal error: {message}");
        self.lock().internal_errors += 1;
    }
}

/// What fails now, by name (sources down, sinks whose pushes fail), with the latest reason: whoever
/// owns an entry logs one line when it starts failing and one when it works again, however many
/// retries fail between (a later reason only replaces the one `/readyz` shows).
pub trait Failures {
    /// Records that `name` fails for `reason`: `true` when it starts failing now (say so once).
    fn fail(&mut self, name: &str, reason: String) -> bool;
    /// Records that `name` works: `true` when it was failing (say it recovered).
    fn recover(&mut self, name: &str) -> bool;
}

impl Failures for BTreeMap<String, String> {
    fn fail(&mut self, name: &str, reason: String) -> bool {
        match self.get_mut(name) {
            Some(old) => {
                if *old != reason {
                    tracing::debug!("{name} still fails: {reason}");
                    *old = reason;
                }
                false
            }
            None => {
                self.insert(name.to_owned(), reason);
                true
            }
        }
    }

    fn recover(&mut self, name: &str) -> bool {
        self.remove(name).is_some()
    }
}

/// Push counters of one sink.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct PushCount {
    /// Pushes that succeeded.
    pub ok: u64,
    /// Pushes that failed (retried).
    pub failed: u64,
    /// Tables refused as too large for the sink (not retried).
    pub refused: u64,
}

/// What one sink did with a table that counts as pushed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SinkOutcome {
    /// The sink took the table.
    Ok,
    /// The sink refused it as too large and keeps its last good table.
    Refused,
}

/// One sink's part of a push.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SinkPush {
    /// The sink's name (as in `/metrics`).
    pub sink: String,
    /// What it did.
    pub outcome: SinkOutcome,
}

/// One entry of the push log: a table that counts as pushed, when, and what changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PushRecord {
    /// The push counter ([`State::tables_pushed`]) this push reached.
    pub generation: u64,
    /// The table's content hash.
    pub table: String,
    /// When the last sink answered, in milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
    /// Rules of the table.
    pub rules: usize,
    /// Hosts of the table.
    pub hosts: usize,
    /// What changed since the previous push: the log line's summary.
    pub change: String,
    /// Each sink's outcome.
    pub sinks: Vec<SinkPush>,
}

/// How many pushes the log keeps (the newest).
pub const PUSH_LOG_LEN: usize = 50;

vocabulary! {
    /// Why the Lease could not be read or written (`/status` `leader.error.reason`).
    pub enum LeaseFailure {
        /// 401 or 403: this identity may not read or write the Lease (`deploy/rbac.yaml` grants the
        /// Lease `switchyard` in istio-system; out of cluster the Lease's namespace is the
        /// kubeconfig context's, else `default`: see `--leader-elect-lease-namespace`).
        Forbidden,
        /// 404: the Lease's namespace does not exist.
        NamespaceNotFound,
        /// Another answer of the API server (a 5xx while it starts, say).
        Refused,
        /// The API server could not be reached.
        Unreachable,
        /// The API server did not answer within the renew deadline.
        NoAnswer,
    }
}

/// Why the Lease could not be read or written, until it can.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeaseError {
    /// The kind of failure.
    pub reason: LeaseFailure,
    /// The API's answer or the transport error.
    pub message: String,
}

impl std::fmt::Display for LeaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.reason, self.message)
    }
}

vocabulary! {
    /// Why a replica is not ready (`/status` `not_ready`; `/readyz` says each with its details).
    pub enum NotReady {
        /// No table was pushed yet (the stores have not synced, say).
        NoTableYet,
        /// A source is down: the table may not follow the cluster; the last table keeps serving.
        SourceDown,
        /// The last push failed somewhere; it is retried.
        PushFailed,
        /// A sink refused the newest table as too large for it.
        TableRefused,
        /// `--leader-elect`: a follower that cannot read or write the Lease, so it could not take
        /// over (nothing would ever write to the cluster were it the last replica).
        CannotLead,
    }
}

/// Who writes to the cluster (`/status` `leader`, the metric `switchyard_leader`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Leadership {
    /// Whether this replica writes status, events, load balancers and the Istio objects.
    pub leading: bool,
    /// `--leader-elect`: the Lease (`namespace/name`); `None`: no election, this replica writes.
    pub lease: Option<String>,
    /// `--leader-elect`: this replica's identity in the Lease.
    pub identity: Option<String>,
    /// `--leader-elect`: the holder of the Lease as last seen (this replica's identity when leading).
    pub holder: Option<String>,
    /// `--leader-elect`: why the Lease could not be read or written, until it can (a Role without
    /// the Lease, the API server unreachable).
    pub error: Option<LeaseError>,
}

impl Default for Leadership {
    fn default() -> Leadership {
        Leadership {
            leading: true,
            lease: None,
            identity: None,
            holder: None,
            error: None,
        }
    }
}

/// The watch's state.
#[derive(Debug, Default)]
pub struct State {
    /// Tables pushed so far (each a different content); 0 before the first push. A counter, shown as
    /// `generation` in `/status`, `/readyz` and the push log line, and as the metric
    /// `switchyard_table_generation`; not the table's own `generation`, which is [`State::table_hash`].
    pub tables_pushed: u64,
    /// The content hash of the table last pushed (the table's `generation` field).
    pub table_hash: String,
    /// The table last pushed (`/table` writes it as indented JSON).
    pub table: Option<Arc<TableSpec>>,
    /// The table last pushed, validated and indexed, with the push counter it belongs to: what the
    /// dashboard shows and explains with, built on its first use ([`Shared::live_index`]): indexing a
    /// 100,000-rule table costs some 70 ms of CPU, which a push does not pay (the compiler validated
    /// every rule with the table's own checks).
    pub route_table: Option<(u64, Arc<RouteTable>)>,
    /// The last [`PUSH_LOG_LEN`] pushes, oldest first.
    pub push_log: VecDeque<PushRecord>,
    /// Rules and hosts of the table last pushed.
    pub rules: usize,
    /// Distinct hosts of the table last pushed.
    pub hosts: usize,
    /// The status report of the last compilation.
    pub statuses: Arc<[ResourceStatus]>,
    /// Input that could not be read (manifests that do not parse, objects the API refused to list).
    pub errors: Vec<SourceError>,
    /// Loader warnings of the last compilation.
    pub warnings: Vec<String>,
    /// Set when every resource that classes select was ignored by class (the table is empty by class).
    pub class_warning: Option<String>,
    /// Why no table can be pushed yet (stores not synced), when that is the case.
    pub waiting: Option<String>,
    /// Sources that are down now, with the reason; the last good table keeps serving meanwhile.
    pub down: BTreeMap<String, String>,
    /// Sources down whose watch delivered again (a relist or an event): up after the next rebuild.
    pub recovered: BTreeSet<String>,
    /// Sources that failed since the last rebuild started (they stay down).
    pub relapsed: BTreeSet<String>,
    /// The last push error, until a push succeeds.
    pub push_error: Option<String>,
    /// Sinks whose pushes fail now, with the last error, until one succeeds ([`Failures`]).
    pub sinks_failing: BTreeMap<String, String>,
    /// The last L4 push error (TransportServers' listeners), until an L4 push succeeds.
    pub l4_push_error: Option<String>,
    /// The L4 routes of the last compilation (`/status` field `l4`, the dashboard's L4 section).
    pub l4: L4Routes,
    /// The L4 sinks' names (`--lds-file`, `--istio-gateway`); none: the L4 routes go nowhere.
    pub l4_sinks: Vec<String>,
    /// Each host's certificate, as last planned (`/status` field `https`, the dashboard's HTTPS
    /// section, `explain`): names and fingerprints, no key.
    pub https: Arc<switchyard_compiler::https::Https>,
    /// Sinks that refused the newest table as too large for them (they keep their last good table),
    /// with the reason, until they take a table again.
    pub refused: BTreeMap<String, String>,
    /// Endpoints updates Envoy refused over ADS (`--ads-listen`), and the last reason it gave.
    pub envoy_refused: (u64, Option<String>),
    /// Pushes by sink name.
    pub pushes: BTreeMap<String, PushCount>,
    /// Compilations run.
    pub compiles: u64,
    /// Compilations by the path they took: `full`, `incremental`, `unchanged`.
    pub compiles_by_path: BTreeMap<&'static str, u64>,
    /// Seconds spent compiling, in total.
    pub compile_seconds_total: f64,
    /// Seconds the last compilation took.
    pub compile_seconds_last: f64,
    /// Status writes to the API server (Kubernetes mode): succeeded and failed.
    pub status_writes: PushCount,
    /// Internal errors: a table that does not validate or serialize, a document that does not
    /// serialize (never expected; each is logged, and nothing empty is pushed or served instead).
    pub internal_errors: u64,
    /// Whether this replica leads (always, without `--leader-elect`).
    pub leadership: Leadership,
    /// The gateway's traffic per resource, read from Envoy (`--envoy-admin`; `/status` `traffic`).
    pub traffic: crate::watch::traffic::Traffic,
}

impl State {
    /// Why this replica is not ready, each reason with its details; none: ready.
    pub fn not_ready(&self) -> Vec<(NotReady, String)> {
        let mut reasons = Vec::new();
        if self.tables_pushed == 0 {
            reasons.push((
                NotReady::NoTableYet,
                match &self.waiting {
                    Some(waiting) => format!("no table pushed yet: {waiting}"),
                    None => "no table pushed yet".to_owned(),
                },
            ));
        }
        for (source, reason) in &self.down {
            reasons.push((NotReady::SourceDown, format!("source {source} is down ({reason})")));
        }
        for error in self.push_error.iter().chain(&self.l4_push_error) {
            reasons.push((
                NotReady::PushFailed,
                format!("the last push failed ({error}); retrying"),
            ));
        }
        for (sink, why) in &self.refused {
            reasons.push((
                NotReady::TableRefused,
                format!("{sink} refused the newest table ({why})"),
            ));
        }
        // A follower is ready when it could take over: it must reach the Lease.
        if let (false, Some(lease), Some(error)) =
            (self.leadership.leading, &self.leadership.lease, &self.leadership.error)
        {
            reasons.push((
                NotReady::CannotLead,
                format!("following, but cannot take over: Lease {lease}: {error}"),
            ));
        }
        reasons
    }

    /// `Ok(why ready)` or `Err(why not)`: ready once a table was pushed, and while every source is up,
    /// the last push succeeded and (a follower) the Lease can be read.
    pub fn readiness(&self) -> Result<String, String> {
        let mut reasons: Vec<String> = self.not_ready().into_iter().map(|(_, why)| why).collect();
        if reasons.is_empty() {
            let mut ready = format!(
                "ready: generation {} (table {}), {} rules, {} hosts",
                self.tables_pushed, self.table_hash, self.rules, self.hosts
            );
            // A follower is ready when it could take over: synced and compiled.
            if let (false, Some(lease)) = (self.leadership.leading, &self.leadership.lease) {
                let holder = self.leadership.holder.as_deref().unwrap_or("nobody yet");
                ready += &format!("; following (Lease {lease} held by {holder}): the leader writes to the cluster");
            }
            // Still ready (the table is what the cluster says), but loudly so.
            Ok(match &self.class_warning {
                Some(warning) => format!("{ready}; WARNING: {warning}"),
                None => ready,
            })
        } else {
            if self.tables_pushed > 0 {
                reasons.push(format!(
                    "generation {} (table {}) keeps serving",
                    self.tables_pushed, self.table_hash
                ));
            }
            Err(format!("not ready: {}", reasons.join("; ")))
        }
    }

    /// The `/status` document.
    pub fn status_json(&self) -> serde_json::Value {
        let readiness = self.readiness();
        let mut not_ready: Vec<NotReady> = self.not_ready().into_iter().map(|(word, _)| word).collect();
        not_ready.dedup();
        serde_json::json!({
            "ready": readiness.is_ok(),
            "reason": match &readiness { Ok(s) | Err(s) => s },
            // ROUTING.md §9, first in the migration report: what answers 403, and what is served
            // without an access control its owner waived.
            "access": switchyard_compiler::access::AccessReport::of(&self.statuses),
            "not_ready": not_ready,
            "generation": self.tables_pushed,
            "table": self.table_hash,
            "rules": self.rules,
            "hosts": self.hosts,
            "errors": self.errors,
            "warnings": self.class_warning.iter().chain(&self.warnings).collect::<Vec<_>>(),
            // The same warnings by note, most frequent first: what the dashboard shows.
            "warning_groups": warning_groups(self.class_warning.iter().chain(&self.warnings)),
            "sources_down": self.down,
            "sinks_refused": self.refused,
            "envoy_refused": { "count": self.envoy_refused.0, "last": self.envoy_refused.1 },
            "sinks_failing": self.sinks_failing,
            "leader": self.leadership,
            "resources": &*self.statuses,
            "sinks": self.pushes,
            "push_log": self.push_log.iter().rev().collect::<Vec<_>>(),
            // ROUTING.md §8: each host's certificate (names and fingerprints only, never a key).
            "https": &*self.https,
            "l4": {
                "sinks": self.l4_sinks,
                "passthrough": self.l4.passthrough,
                "listeners": self.l4.listeners,
            },
            // Requests per second and the share of 5xx per resource, from Envoy's stats.
            "traffic": self.traffic.report(),
        })
    }

    /// A push to `sink` failed (`what`: the push, or the L4 push) and is retried: logged once, when
    /// its pushes start failing, not on every retry; `/status` `sinks_failing` shows it meanwhile.
    pub fn sink_failed(&mut self, sink: &str, what: &str, error: &str) {
        if self.sinks_failing.fail(sink, error.to_owned()) {
            tracing::error!(sink = %sink, "{what} failed (will retry, said once until it works): {error}");
        }
    }

    /// `sink` answered a push (it took the table, or refused it as too large): logged when its
    /// pushes had been failing.
    pub fn sink_answered(&mut self, sink: &str) {
        if self.sinks_failing.recover(sink) {
            tracing::info!(sink = %sink, "pushes work again");
        }
    }

    /// Adds a push to the log, dropping the oldest beyond [`PUSH_LOG_LEN`].
    pub fn log_push(&mut self, record: PushRecord) {
        if self.push_log.len() == PUSH_LOG_LEN {
            self.push_log.pop_front();
        }
        self.push_log.push_back(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_ready_before_the_first_push_and_says_what_it_waits_for() {
        let state = State {
            waiting: Some("store Ingress has not synced".into()),
            ..State::default()
        };
        let reason = state.readiness().unwrap_err();
        assert!(
            reason.contains("no table pushed yet: store Ingress has not synced"),
            "{reason}"
        );
    }

    #[test]
    fn a_source_down_makes_it_unready_while_the_last_table_serves() {
        let mut state = State {
            tables_pushed: 3,
            table_hash: "abc".into(),
            ..State::default()
        };
        assert!(state.readiness().is_ok());
        state
            .down
            .insert("kubernetes Ingress".into(), "connection refused".into());
        let reason = state.readiness().unwrap_err();
        assert!(
            reason.contains("source kubernetes Ingress is down (connection refused)"),
            "{reason}"
        );
        assert!(reason.contains("generation 3 (table abc) keeps serving"), "{reason}");
    }

    #[test]
    fn the_push_log_keeps_the_newest_pushes() {
        let mut state = State::default();
        for generation in 1..=(PUSH_LOG_LEN as u64 + 5) {
            state.log_push(PushRecord {
                generation,
                table: String::new(),
                at_unix_ms: 0,
                rules: 0,
                hosts: 0,
                change: String::new(),
                sinks: Vec::new(),
            });
        }
        assert_eq!(state.push_log.len(), PUSH_LOG_LEN);
        assert_eq!(state.push_log.front().map(|p| p.generation), Some(6));
        assert_eq!(
            state.push_log.back().map(|p| p.generation),
            Some(PUSH_LOG_LEN as u64 + 5)
        );
    }

    #[test]
    fn a_follower_is_ready_once_it_compiled_and_says_who_leads() {
        let state = State {
            tables_pushed: 1,
            leadership: Leadership {
                leading: false,
                lease: Some("istio-system/switchyard".into()),
                identity: Some("b".into()),
                holder: Some("a".into()),
                error: None,
            },
            ..State::default()
        };
        let reason = state.readiness().unwrap();
        assert!(
            reason.contains("following (Lease istio-system/switchyard held by a)"),
            "{reason}"
        );
        assert_eq!(state.status_json()["leader"]["holder"], "a");
    }

    #[test]
    fn a_follower_that_cannot_read_the_lease_is_not_ready_and_says_why_in_words() {
        let mut state = State {
            tables_pushed: 1,
            leadership: Leadership {
                leading: false,
                lease: Some("default/switchyard".into()),
                identity: Some("b".into()),
                holder: None,
                error: Some(LeaseError {
                    reason: LeaseFailure::Forbidden,
                    message: "leases.coordination.k8s.io is forbidden".into(),
                }),
            },
            ..State::default()
        };
        let reason = state.readiness().unwrap_err();
        assert!(
            reason.contains("cannot take over: Lease default/switchyard: Forbidden: leases"),
            "{reason}"
        );
        let status = state.status_json();
        assert_eq!(status["not_ready"], serde_json::json!(["CannotLead"]));
        assert_eq!(status["leader"]["error"]["reason"], "Forbidden");
        // The leader itself (until it steps down) stays ready.
        state.leadership.leading = true;
        assert!(state.readiness().is_ok(), "{:?}", state.readiness());
    }

    #[test]
    fn a_failure_is_new_once_until_it_recovers() {
        let mut failing = BTreeMap::new();
        assert!(failing.fail("sink", "refused".into()));
        assert!(!failing.fail("sink", "timed out".into()));
        assert_eq!(failing["sink"], "timed out");
        assert!(failing.recover("sink"));
        assert!(!failing.recover("sink"));
        assert!(failing.fail("sink", "refused".into()));
    }
}

/// Warnings of one note (`switchyard_compiler::load::warning_parts`), with what each is about.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WarningGroup {
    /// The note.
    pub note: String,
    /// How many warnings say it.
    pub count: usize,
    /// What each is about (`m/a.yaml:12: Ingress shop/a`; empty for a warning without a subject).
    pub about: Vec<String>,
}

/// `warnings` grouped by note, the most frequent note first (then by note), each group's subjects
/// in the warnings' order.
pub fn warning_groups<'w>(warnings: impl Iterator<Item = &'w String>) -> Vec<WarningGroup> {
    let mut by_note: std::collections::BTreeMap<&str, Vec<&str>> = std::collections::BTreeMap::new();
    for warning in warnings {
        let (about, note) = switchyard_compiler::load::warning_parts(warning);
        by_note.entry(note).or_default().push(about);
    }
    let mut groups: Vec<WarningGroup> = (by_note.into_iter())
        .map(|(note, about)| WarningGroup {
            note: note.to_owned(),
            count: about.len(),
            about: about.into_iter().filter(|a| !a.is_empty()).map(str::to_owned).collect(),
        })
        .collect();
    groups.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.note.cmp(&b.note)));
    groups
}
