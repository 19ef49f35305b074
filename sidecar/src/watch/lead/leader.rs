//! Who writes to the cluster: the [`Leader`] gate every cluster write checks just before it is sent
//! (status, events and load balancers in [`crate::watch::status`], the Istio sinks and their
//! drift repair in [`crate::watch::engine`]). File sinks never check it: every replica writes the
//! ECDS file beside its own Envoy.
//!
//! Without `--leader-elect` the gate is always open (this process is the only writer). With it, the
//! gate is opened by [`crate::watch::lead::lease`] for a bounded time after each renewal of the Lease
//! (until the renew deadline): a replica whose elector cannot renew (a network cut, a hung request)
//! stops writing when that time is up even before the elector notices, so it has stepped down
//! before any other replica may take the Lease (the lease duration, counted from the renewal).
//!
//! A leadership change is announced on a `tokio::sync::watch` channel ([`Leader::subscribe`]);
//! [`Leader::term`] counts the times leadership was gained, so a writer can tell a new term (and
//! forget what it wrote in an earlier one: another replica wrote meanwhile).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::watch;

/// Until when this replica may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
    /// No election: always.
    Always,
    /// A follower.
    Never,
    /// The leader, until this instant (the last renewal's start plus the renew deadline).
    Instant(Instant),
}

#[derive(Debug)]
struct Inner {
    until: Mutex<Until>,
    role: watch::Sender<bool>,
    term: AtomicU64,
}

/// The gate, shared by the elector and every writer.
#[derive(Debug, Clone)]
pub struct Leader(Arc<Inner>);

impl Leader {
    /// No election: this replica writes everything, always.
    pub fn always() -> Leader {
        Leader::with(Until::Always, 1)
    }

    /// An elected writer: closed until [`crate::watch::lead::lease`] acquires the Lease.
    pub fn elected() -> Leader {
        Leader::with(Until::Never, 0)
    }

    fn with(until: Until, term: u64) -> Leader {
        let (role, _) = watch::channel(until != Until::Never);
        Leader(Arc::new(Inner {
            until: Mutex::new(until),
            role,
            term: AtomicU64::new(term),
        }))
    }

    fn until(&self) -> std::sync::MutexGuard<'_, Until> {
        self.0.until.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether this replica may write to the cluster now.
    pub fn is_leader(&self) -> bool {
        match *self.until() {
            Until::Always => true,
            Until::Never => false,
            Until::Instant(until) => Instant::now() < until,
        }
    }

    /// How many times leadership was gained (1 without election).
    pub fn term(&self) -> u64 {
        self.0.term.load(Ordering::SeqCst)
    }

    /// A receiver told of every leadership change (`true`: leading).
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.0.role.subscribe()
    }

    /// Leading until `until` (the Lease was acquired or renewed); a new term if it was not leading.
    pub fn lead_until(&self, until: Instant) {
        let mut held = self.until();
        let gained = !matches!(*held, Until::Instant(_));
        *held = Until::Instant(until);
        drop(held);
        if gained {
            self.0.term.fetch_add(1, Ordering::SeqCst);
            self.0.role.send_replace(true);
        }
    }

    /// Stops writing now (the Lease is lost, about to be released, or could not be renewed).
    pub fn step_down(&self) {
        let mut held = self.until();
        let was = matches!(*held, Until::Instant(_));
        *held = Until::Never;
        drop(held);
        if was {
            self.0.role.send_replace(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn without_election_every_replica_writes() {
        let leader = Leader::always();
        assert!(leader.is_leader());
        assert_eq!(leader.term(), 1);
    }

    #[test]
    fn an_elected_replica_writes_only_between_acquiring_and_stepping_down() {
        let leader = Leader::elected();
        let mut role = leader.subscribe();
        assert!(!leader.is_leader() && !*role.borrow_and_update());
        leader.lead_until(Instant::now() + Duration::from_secs(60));
        assert!(leader.is_leader());
        assert!(role.has_changed().unwrap() && *role.borrow_and_update());
        assert_eq!(leader.term(), 1);
        // A renewal is not a new term.
        leader.lead_until(Instant::now() + Duration::from_secs(60));
        assert_eq!(leader.term(), 1);
        assert!(!role.has_changed().unwrap());
        leader.step_down();
        assert!(!leader.is_leader());
        assert!(!*role.borrow_and_update());
        leader.lead_until(Instant::now() + Duration::from_secs(60));
        assert_eq!(leader.term(), 2);
    }

    #[test]
    fn a_leader_whose_renewal_is_overdue_stops_writing_before_its_elector_notices() {
        let leader = Leader::elected();
        leader.lead_until(Instant::now() + Duration::from_millis(30));
        assert!(leader.is_leader());
        std::thread::sleep(Duration::from_millis(40));
        assert!(!leader.is_leader());
    }
}
