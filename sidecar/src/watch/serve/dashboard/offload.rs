//! The dashboard's heavy answers (`POST /explain`, `/rules`, `/table`) run off the event loop.
//!
//! `switchyard watch` runs on one thread: its rebuild loop, its sources and this server share it.
//! An explain on a 100,000-rule table, or `/table`'s 36 MB of JSON, would hold that thread for as
//! long as it takes, and a burst of them would hold back every edit's rebuild. So each runs on
//! tokio's blocking pool, **one at a time** (the second core is the rebuild's), and a request that
//! has not been answered within its time limit (waiting for its turn included) gets 503 with
//! `Retry-After`. The work itself is not cancelled (it is bounded by the table's size); it keeps
//! its turn until it ends, so a burst can never run more than one at a time.

use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

/// How long one `POST /explain` may take, waiting for its turn included.
pub const EXPLAIN_TIME_LIMIT: Duration = Duration::from_secs(2);

/// How long `/rules` and `/table` may take (100,000 rules are tens of megabytes of JSON).
pub const DOCUMENT_TIME_LIMIT: Duration = Duration::from_secs(10);

/// One turn for the whole process: it has one rebuild loop to protect.
static TURN: Semaphore = Semaphore::const_new(1);

/// Why heavy work was not answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotDone {
    /// Not answered within its time limit (busy with others' work, or slow itself).
    TimedOut(Duration),
    /// The worker thread stopped before answering (a panic, logged by tokio).
    Lost,
}

impl NotDone {
    /// The answer to the client.
    pub fn response(self) -> Response {
        let (code, message) = match self {
            NotDone::TimedOut(limit) => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "busy: not answered within {} ms (one such request runs at a time); try again",
                    limit.as_millis()
                ),
            ),
            NotDone::Lost => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error (see the log)".to_owned(),
            ),
        };
        (
            code,
            [(header::CONTENT_TYPE, "application/json"), (header::RETRY_AFTER, "1")],
            serde_json::json!({ "error": message }).to_string(),
        )
            .into_response()
    }
}

/// Runs `work` on the blocking pool when it is its turn, within `limit`.
pub async fn run<T: Send + 'static>(limit: Duration, work: impl FnOnce() -> T + Send + 'static) -> Result<T, NotDone> {
    let attempt = async {
        let turn = TURN.acquire().await.map_err(|_| NotDone::Lost)?;
        // The turn goes with the work: released when it ends, even if its client gave up.
        turn.forget();
        let release = Release;
        tokio::task::spawn_blocking(move || {
            let _release = release;
            work()
        })
        .await
        .map_err(|_| NotDone::Lost)
    };
    tokio::time::timeout(limit, attempt)
        .await
        .unwrap_or(Err(NotDone::TimedOut(limit)))
}

/// Gives the turn back when dropped: the work ended, panicked, or was dropped unrun.
struct Release;

impl Drop for Release {
    fn drop(&mut self) {
        TURN.add_permits(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_runs_at_a_time_and_a_late_one_times_out_while_the_first_finishes() {
        let slow = tokio::spawn(run(Duration::from_secs(5), || {
            std::thread::sleep(Duration::from_millis(300));
            1
        }));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let late = run(Duration::from_millis(100), || 2).await;
        assert_eq!(late, Err(NotDone::TimedOut(Duration::from_millis(100))));
        assert_eq!(slow.await.unwrap(), Ok(1));
        // The turn came back: the next one runs.
        assert_eq!(run(Duration::from_secs(1), || 3).await, Ok(3));
    }

    #[tokio::test]
    async fn a_client_that_gives_up_does_not_lose_the_turn() {
        let gave_up = run(Duration::from_millis(20), || {
            std::thread::sleep(Duration::from_millis(200))
        })
        .await;
        assert_eq!(gave_up, Err(NotDone::TimedOut(Duration::from_millis(20))));
        assert_eq!(run(Duration::from_secs(2), || 4).await, Ok(4));
    }
}
