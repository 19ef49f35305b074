//! `--leader-elect`: the Lease protocol of client-go's leader election, on kube's `Api<Lease>`
//! (`coordination.k8s.io/v1`), opening and closing the [`Leader`] gate.
//!
//! - A follower reads the Lease every retry period, and also whenever it changes (it watches it:
//!   a release is taken at once, a renewal is seen as it happens). It may claim it when nobody holds it, or when
//!   the holder's record has not changed for the record's `leaseDurationSeconds`, counted on this
//!   replica's clock from when it first saw that record (never from `renewTime`: clocks of two
//!   nodes may disagree). A claim is an update carrying the `resourceVersion` read, so of two
//!   replicas claiming at once one gets `409 Conflict` and stays a follower.
//! - The leader renews every retry period. Each renewal opens the gate until its start plus the
//!   renew deadline; a leader that cannot renew within the renew deadline (a request that fails or
//!   hangs) steps down then. As the renew deadline is shorter than the lease duration, it has
//!   stopped writing before any other replica may claim the Lease.
//! - On SIGTERM ([`Elector::resign`]) the gate closes first, then the Lease is released (no holder,
//!   `leaseDurationSeconds: 1`, as client-go's `ReleaseOnCancel`): the next follower to read it
//!   takes it at once instead of waiting the lease duration out.
//!
//! Why not a crate: kube-leader-election 0.44 and kubert 0.25 are built on other kube versions
//! (4 and 1.1) than ours (5); kube-lease-manager 0.13 is on kube 5 but has no renew deadline (a
//! leader that cannot reach the API server stays leader, retrying, however long that lasts),
//! renews only a grace period before expiry instead of every retry period, counts in whole seconds
//! and renews with a patch that does not check the holder.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{ObjectMeta, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client};
use tokio::sync::{mpsc, oneshot, Notify};
use tracing::{info, warn};

use crate::watch::lead::leader::Leader;
use crate::watch::state::{LeaseError, LeaseFailure, Shared};

/// The election's settings (`--leader-elect-*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Election {
    /// The Lease's name.
    pub name: String,
    /// The Lease's namespace.
    pub namespace: String,
    /// This replica's identity (the Lease's `holderIdentity`).
    pub identity: String,
    /// How long followers wait, after the holder's last renewal, before claiming the Lease (whole
    /// seconds: the Lease counts in seconds).
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it steps down.
    pub renew_deadline: Duration,
    /// How often the leader renews and followers read the Lease.
    pub retry_period: Duration,
}

impl Election {
    /// `namespace/name`.
    pub fn lease(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    fn seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

/// This replica's default identity: `POD_NAME` (else the host name), the process id and its start
/// time, so that a restarted container is a new holder.
pub fn default_identity() -> String {
    let name = std::env::var("POD_NAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "switchyard".to_owned());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{name}_{}_{nanos:08x}", std::process::id())
}

/// A Lease record as this replica last saw it, and when it first saw it.
#[derive(Debug, Clone)]
struct Observed {
    spec: LeaseSpec,
    at: Instant,
}

/// What a claim came to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Claim {
    /// We hold the Lease (acquired or renewed).
    Held,
    /// Another replica holds it; it may be claimed at this instant if its record does not change.
    Taken { holder: String, expires: Instant },
    /// Someone else updated the Lease between our read and our write.
    Conflict,
}

/// The holder of a Lease record, if any (an empty identity is none: a released Lease).
fn holder(spec: &LeaseSpec) -> Option<&str> {
    spec.holder_identity.as_deref().filter(|h| !h.is_empty())
}

/// Whether `me` may claim the Lease whose record was first seen at `observed.at`: `Err` with the
/// holder and when its claim expires.
fn may_claim(observed: &Observed, me: &str, now: Instant, default: Duration) -> Result<(), (String, Instant)> {
    match holder(&observed.spec) {
        None => Ok(()),
        Some(h) if h == me => Ok(()),
        Some(h) => {
            let seconds = observed.spec.lease_duration_seconds.and_then(|s| u64::try_from(s).ok());
            let expires = observed.at + seconds.map_or(default, Duration::from_secs);
            if now >= expires {
                Ok(())
            } else {
                Err((h.to_owned(), expires))
            }
        }
    }
}

/// The record `me` writes to hold the Lease (acquired now, or renewed).
fn claimed(spec: &LeaseSpec, me: &str, seconds: i32, now: MicroTime) -> LeaseSpec {
    let ours = holder(spec) == Some(me);
    let transitions = spec.lease_transitions.unwrap_or(0);
    LeaseSpec {
        holder_identity: Some(me.to_owned()),
        lease_duration_seconds: Some(seconds),
        acquire_time: if ours {
            spec.acquire_time.clone().or(Some(now.clone()))
        } else {
            Some(now.clone())
        },
        renew_time: Some(now),
        lease_transitions: Some(if ours { transitions } else { transitions + 1 }),
        ..spec.clone()
    }
}

/// The record that releases the Lease: no holder, and a one-second duration.
fn released(spec: &LeaseSpec, now: MicroTime) -> LeaseSpec {
    LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        acquire_time: Some(now.clone()),
        renew_time: Some(now),
        ..spec.clone()
    }
}

fn now() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

/// A failed Lease request, classified.
fn lease_error(error: &kube::Error) -> LeaseError {
    let reason = match error {
        kube::Error::Api(status) if status.code == 401 || status.code == 403 => LeaseFailure::Forbidden,
        kube::Error::Api(status) if status.code == 404 => LeaseFailure::NamespaceNotFound,
        kube::Error::Api(_) => LeaseFailure::Refused,
        _ => LeaseFailure::Unreachable,
    };
    let message = match error {
        kube::Error::Api(status) => format!("{} {}: {}", status.code, status.reason, status.message),
        other => other.to_string(),
    };
    LeaseError { reason, message }
}

/// What stops the elector: a channel to say when it released the Lease.
type Stop = oneshot::Sender<()>;

/// The running elector; [`Elector::resign`] stops it.
#[derive(Debug)]
pub struct Elector {
    stop: mpsc::Sender<Stop>,
}

impl Elector {
    /// Starts electing: `leader` opens while this replica holds the Lease; `state` shows the role.
    pub fn start(client: Client, election: Election, leader: Leader, state: Shared) -> Elector {
        let (stop, stopped) = mpsc::channel(1);
        let api = Api::namespaced(client, &election.namespace);
        let task = Task {
            api,
            election,
            leader,
            state,
            observed: None,
            failing: false,
            changed: Arc::new(Notify::new()),
            watching: None,
        };
        tokio::spawn(task.run(stopped));
        Elector { stop }
    }

    /// Stops writing, then releases the Lease if this replica holds it (waiting at most `within`).
    pub async fn resign(self, within: Duration) {
        let (done, released) = oneshot::channel();
        if self.stop.send(done).await.is_ok() && tokio::time::timeout(within, released).await.is_err() {
            warn!("the Lease was not released within {within:?}: the other replicas wait for it to expire");
        }
    }
}

struct Task {
    api: Api<Lease>,
    election: Election,
    leader: Leader,
    state: Shared,
    observed: Option<Observed>,
    /// Whether the last attempt failed (logged once until one succeeds).
    failing: bool,
    /// Told whenever the Lease changes ([`watch_lease`]).
    changed: Arc<Notify>,
    /// The Lease's watcher, while the Lease can be read: not while the attempts fail (kube's watcher
    /// would log each of its retries, a 403 say, with `--verbose`; the elector says it once).
    watching: Option<tokio::task::JoinHandle<()>>,
}

/// Follows the Lease (by name: RBAC's `resourceNames` allow that watch) and says when it changed;
/// run while the elector's attempts work.
async fn watch_lease(api: Api<Lease>, name: String, changed: Arc<Notify>) {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let stream = watcher::watcher(api, config).default_backoff();
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        // Errors are the elector's to report: its own reads fail the same way.
        if matches!(event, Ok(Event::Apply(_) | Event::Delete(_) | Event::InitDone)) {
            changed.notify_one();
        }
    }
}

impl Task {
    async fn run(mut self, mut stopped: mpsc::Receiver<Stop>) {
        info!(
            "leader election: Lease {} as {}",
            self.election.lease(),
            self.election.identity
        );
        loop {
            let Some(started) = self.follow(&mut stopped).await else {
                return;
            };
            if !self.lead(started, &mut stopped).await {
                return;
            }
        }
    }

    /// Follows until the Lease is ours (`Some(when the winning attempt started)`) or until stopped.
    async fn follow(&mut self, stopped: &mut mpsc::Receiver<Stop>) -> Option<Instant> {
        loop {
            let started = Instant::now();
            let claim = tokio::select! {
                done = stopped.recv() => {
                    self.stop(done).await;
                    return None;
                }
                claim = tokio::time::timeout(self.election.renew_deadline, self.claim()) => match claim {
                    Ok(claim) => claim,
                    Err(_) => self.no_answer(),
                },
            };
            let mut next = started + self.election.retry_period;
            match claim {
                Some(Claim::Held) => return Some(started),
                Some(Claim::Taken { holder, expires }) => {
                    self.following(Some(holder));
                    next = next.min(expires);
                }
                Some(Claim::Conflict) | None => {}
            }
            tokio::select! {
                done = stopped.recv() => {
                    self.stop(done).await;
                    return None;
                }
                () = tokio::time::sleep_until(next.into()) => {}
                () = self.changed.notified() => {}
            }
        }
    }

    /// Leads from `started` until the Lease is lost or cannot be renewed (`true`: follow again) or
    /// until stopped (`false`).
    async fn lead(&mut self, mut started: Instant, stopped: &mut mpsc::Receiver<Stop>) -> bool {
        let lease = self.election.lease();
        self.leader.lead_until(started + self.election.renew_deadline);
        self.set_role(true, Some(self.election.identity.clone()));
        info!("leading: acquired Lease {lease}; writing status, events and Istio objects");
        loop {
            let deadline = started + self.election.renew_deadline;
            tokio::select! {
                done = stopped.recv() => {
                    self.stop(done).await;
                    return false;
                }
                () = tokio::time::sleep(self.election.retry_period) => {}
            }
            let attempt = Instant::now();
            let claim = tokio::select! {
                done = stopped.recv() => {
                    self.stop(done).await;
                    return false;
                }
                claim = tokio::time::timeout_at(deadline.into(), self.claim()) => claim,
            };
            let timed_out = claim.is_err();
            let why = match claim {
                Ok(Some(Claim::Held)) => {
                    started = attempt;
                    self.leader.lead_until(started + self.election.renew_deadline);
                    continue;
                }
                Ok(Some(Claim::Taken { holder, .. })) => format!("Lease {lease} is held by {holder}"),
                Ok(Some(Claim::Conflict) | None) if Instant::now() < deadline => continue,
                Ok(Some(Claim::Conflict) | None) | Err(_) => format!(
                    "Lease {lease} not renewed within the renew deadline ({:?})",
                    self.election.renew_deadline
                ),
            };
            if timed_out {
                self.no_answer();
            }
            self.leader.step_down();
            self.set_role(false, None);
            warn!("stepped down, no longer writing to the cluster: {why}");
            return true;
        }
    }

    /// Closes the gate and releases the Lease if we hold it, then says so on `done`.
    async fn stop(&mut self, done: Option<Stop>) {
        self.unwatch();
        let was = self.leader.is_leader();
        self.leader.step_down();
        self.set_role(false, None);
        match self.release().await {
            Ok(true) => info!("released Lease {}", self.election.lease()),
            Ok(false) => {}
            Err(e) if was => warn!("could not release Lease {}: {e}", self.election.lease()),
            Err(_) => {}
        }
        if let Some(done) = done {
            let _ = done.send(());
        }
    }

    /// Releases the Lease if this replica holds it; `Ok(true)` when it did.
    async fn release(&mut self) -> Result<bool, kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.election.name).await? else {
            return Ok(false);
        };
        let spec = lease.spec.clone().unwrap_or_default();
        if holder(&spec) != Some(self.election.identity.as_str()) {
            return Ok(false);
        }
        lease.spec = Some(released(&spec, now()));
        self.api
            .replace(&self.election.name, &PostParams::default(), &lease)
            .await?;
        Ok(true)
    }

    /// One attempt to acquire or renew; `None` when it failed (see [`Task::failed`]).
    async fn claim(&mut self) -> Option<Claim> {
        match self.try_claim().await {
            Ok(claim) => {
                if std::mem::take(&mut self.failing) {
                    info!("Lease {}: read and written again", self.election.lease());
                    self.state.lock().leadership.error = None;
                }
                if self.watching.is_none() {
                    let watching = watch_lease(self.api.clone(), self.election.name.clone(), self.changed.clone());
                    self.watching = Some(tokio::spawn(watching));
                }
                Some(claim)
            }
            Err(e) => self.failed(lease_error(&e)),
        }
    }

    /// An attempt the API server did not answer within the renew deadline (a network cut).
    fn no_answer(&mut self) -> Option<Claim> {
        self.failed(LeaseError {
            reason: LeaseFailure::NoAnswer,
            message: format!(
                "the API server did not answer within the renew deadline ({:?})",
                self.election.renew_deadline
            ),
        })
    }

    /// An attempt that failed: said once, when the attempts start failing (and once when they work
    /// again, [`Task::claim`]); shown in `/status` meanwhile, where a follower is not ready.
    fn failed(&mut self, error: LeaseError) -> Option<Claim> {
        if !std::mem::replace(&mut self.failing, true) {
            let hint = match error.reason {
                LeaseFailure::Forbidden | LeaseFailure::NamespaceNotFound => {
                    " (give its namespace with --leader-elect-lease-namespace, or grant it)"
                }
                _ => "",
            };
            warn!(
                "Lease {}: {error}{hint}; retrying every {:?}, and this replica cannot lead (not ready while following) until it works",
                self.election.lease(),
                self.election.retry_period
            );
        }
        self.state.lock().leadership.error = Some(error);
        self.unwatch();
        None
    }

    /// Stops watching the Lease (until an attempt works again).
    fn unwatch(&mut self) {
        if let Some(watching) = self.watching.take() {
            watching.abort();
        }
    }

    async fn try_claim(&mut self) -> Result<Claim, kube::Error> {
        let me = self.election.identity.clone();
        let seconds = self.election.seconds();
        let written = match self.api.get_opt(&self.election.name).await? {
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.election.name.clone()),
                        namespace: Some(self.election.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(claimed(&LeaseSpec::default(), &me, seconds, now())),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
            Some(mut lease) => {
                let spec = lease.spec.clone().unwrap_or_default();
                let seen = Instant::now();
                let observed = match self.observed.take() {
                    Some(observed) if observed.spec == spec => observed,
                    _ => Observed { spec, at: seen },
                };
                let verdict = may_claim(&observed, &me, seen, self.election.lease_duration);
                let spec = observed.spec.clone();
                self.observed = Some(observed);
                if let Err((holder, expires)) = verdict {
                    return Ok(Claim::Taken { holder, expires });
                }
                lease.spec = Some(claimed(&spec, &me, seconds, now()));
                self.api
                    .replace(&self.election.name, &PostParams::default(), &lease)
                    .await
            }
        };
        match written {
            Ok(lease) => {
                self.observed = Some(Observed {
                    spec: lease.spec.unwrap_or_default(),
                    at: Instant::now(),
                });
                Ok(Claim::Held)
            }
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(Claim::Conflict),
            Err(e) => Err(e),
        }
    }

    /// A follower that sees `holder`: logged when the holder changes.
    fn following(&self, holder: Option<String>) {
        let mut state = self.state.lock();
        if state.leadership.holder != holder {
            if let Some(holder) = &holder {
                info!("following: Lease {} is held by {holder}", self.election.lease());
            }
            state.leadership.holder = holder;
        }
    }

    fn set_role(&self, leading: bool, holder: Option<String>) {
        let mut state = self.state.lock();
        state.leadership.leading = leading;
        state.leadership.holder = holder;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: Option<&str>, seconds: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(str::to_owned),
            lease_duration_seconds: Some(seconds),
            lease_transitions: Some(3),
            ..LeaseSpec::default()
        }
    }

    fn observed(spec: LeaseSpec, at: Instant) -> Observed {
        Observed { spec, at }
    }

    const DEFAULT: Duration = Duration::from_secs(15);

    #[test]
    fn a_lease_held_by_another_may_be_claimed_only_after_its_duration_since_first_seen() {
        let seen = Instant::now();
        let lease = observed(spec(Some("b"), 2), seen);
        let (holder, expires) = may_claim(&lease, "a", seen + Duration::from_millis(1999), DEFAULT).unwrap_err();
        assert_eq!((holder.as_str(), expires), ("b", seen + Duration::from_secs(2)));
        assert!(may_claim(&lease, "a", seen + Duration::from_secs(2), DEFAULT).is_ok());
    }

    #[test]
    fn a_released_or_own_lease_may_be_claimed_at_once() {
        let seen = Instant::now();
        assert!(may_claim(&observed(spec(None, 15), seen), "a", seen, DEFAULT).is_ok());
        assert!(may_claim(&observed(spec(Some(""), 15), seen), "a", seen, DEFAULT).is_ok());
        assert!(may_claim(&observed(spec(Some("a"), 15), seen), "a", seen, DEFAULT).is_ok());
    }

    #[test]
    fn claiming_counts_a_transition_and_renewing_keeps_the_acquire_time() {
        let t1 = MicroTime(k8s_openapi::jiff::Timestamp::from_second(1).unwrap());
        let t2 = MicroTime(k8s_openapi::jiff::Timestamp::from_second(2).unwrap());
        let taken = claimed(&spec(Some("b"), 15), "a", 15, t1.clone());
        assert_eq!(taken.holder_identity.as_deref(), Some("a"));
        assert_eq!(
            (taken.lease_transitions, taken.acquire_time.clone()),
            (Some(4), Some(t1.clone()))
        );
        let renewed = claimed(&taken, "a", 15, t2.clone());
        assert_eq!(
            (renewed.lease_transitions, renewed.acquire_time.clone()),
            (Some(4), Some(t1))
        );
        assert_eq!(renewed.renew_time, Some(t2.clone()));
        let gone = released(&renewed, t2);
        assert_eq!((gone.holder_identity, gone.lease_duration_seconds), (None, Some(1)));
        assert_eq!(gone.lease_transitions, Some(4));
    }
}
