//! Debouncing change notifications: a rebuild starts once the input has been quiet for a short
//! while (`quiet`, about 100 ms), but never later than `max` (about 1 s) after the first change, so
//! that a steady trickle of changes cannot starve routing.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

/// The two delays.
#[derive(Debug, Clone, Copy)]
pub struct Debounce {
    /// Quiet time after the last change.
    pub quiet: Duration,
    /// Longest wait after the first change.
    pub max: Duration,
}

impl Default for Debounce {
    fn default() -> Self {
        Debounce {
            quiet: Duration::from_millis(100),
            max: Duration::from_secs(1),
        }
    }
}

/// A burst of changes being debounced: when it started and when its last change came. The rebuild
/// loop keeps it between its waits, so that another event handled meanwhile (a retry, a drift
/// repair, a leadership change) cannot lose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Burst {
    first: Instant,
    last: Instant,
}

impl Burst {
    /// A burst starting with a change now.
    pub fn start() -> Burst {
        let now = Instant::now();
        Burst { first: now, last: now }
    }

    /// Another change of the burst, now.
    pub fn again(self) -> Burst {
        Burst {
            last: Instant::now(),
            ..self
        }
    }
}

impl Debounce {
    /// When `burst` has settled: `quiet` after its last change, at most `max` after its first.
    pub fn settles_at(&self, burst: Burst) -> Instant {
        (burst.last + self.quiet).min(burst.first + self.max)
    }

    /// Waits for a change, then for the input to settle. Returns `false` when the sender is gone
    /// (nothing will change any more).
    pub async fn settle(&self, changes: &mut mpsc::Receiver<()>) -> bool {
        if changes.recv().await.is_none() {
            return false;
        }
        let mut burst = Burst::start();
        loop {
            match tokio::time::timeout_at(self.settles_at(burst), changes.recv()).await {
                Ok(Some(())) => burst = burst.again(),
                _ => return true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    #[test]
    fn a_burst_settles_once_quiet() {
        runtime().block_on(async {
            let (tx, mut rx) = mpsc::channel(8);
            let debounce = Debounce {
                quiet: Duration::from_millis(50),
                max: Duration::from_secs(60),
            };
            let start = std::time::Instant::now();
            tokio::spawn(async move {
                for _ in 0..5 {
                    let _ = tx.send(()).await;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                tokio::time::sleep(Duration::from_secs(120)).await;
            });
            assert!(debounce.settle(&mut rx).await);
            let waited = start.elapsed();
            // Settled by the quiet spell, not cut at `max`: a bound no busy machine reaches by accident.
            assert!(
                waited >= Duration::from_millis(90) && waited < Duration::from_secs(30),
                "{waited:?}"
            );
        });
    }

    #[test]
    fn a_steady_trickle_is_cut_at_max() {
        runtime().block_on(async {
            let (tx, mut rx) = mpsc::channel(8);
            let debounce = Debounce {
                quiet: Duration::from_millis(100),
                max: Duration::from_millis(300),
            };
            tokio::spawn(async move {
                for _ in 0..3000 {
                    if tx.send(()).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            });
            let start = std::time::Instant::now();
            assert!(debounce.settle(&mut rx).await);
            let waited = start.elapsed();
            // Cut at `max`, not at the trickle's end (a minute away).
            assert!(
                waited >= Duration::from_millis(280) && waited < Duration::from_secs(30),
                "{waited:?}"
            );
        });
    }

    #[test]
    fn a_closed_channel_ends_the_wait() {
        runtime().block_on(async {
            let (tx, mut rx) = mpsc::channel::<()>(1);
            drop(tx);
            assert!(!Debounce::default().settle(&mut rx).await);
        });
    }
}
