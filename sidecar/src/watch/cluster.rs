//! What every part that talks to the API server shares: Switchyard's field manager for
//! server-side apply ([`FIELD_MANAGER`]: the Istio sinks, the status writer, the stores that slim
//! objects), and kube watchers that outlive API server outages ([`outliving`]: the sources and the
//! followers of the objects the sinks write), with their retry delays ([`Retry`]).

use std::time::Duration;

use futures::StreamExt;
use kube::api::{DynamicObject, ListParams};
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Api;

/// Switchyard's field manager for server-side apply.
pub const FIELD_MANAGER: &str = "switchyard";

/// How often a source that is down probes its API with a one-item list.
pub const PROBE_EVERY: Duration = Duration::from_secs(2);

/// Watcher retry delays: 100 ms, doubling, at most 1 s; reset after each success.
#[derive(Debug, Clone, Copy)]
pub struct Retry(Duration);

impl Default for Retry {
    fn default() -> Retry {
        Retry(Duration::from_millis(100))
    }
}

impl Iterator for Retry {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let now = self.0;
        self.0 = (self.0 * 2).min(Duration::from_secs(1));
        Some(now)
    }
}

impl Backoff for Retry {
    fn reset(&mut self) {
        *self = Retry::default();
    }
}

/// A kube watcher of `api` that outlives API server outages, for the sources and the followers of
/// the objects we write ([`crate::watch::sink::drift`]): after an error it retries after [`Retry`]'s
/// delays; while its last answer was an error (a 410 aside), `api` is probed every [`PROBE_EVERY`]
/// with a one-item list (under `config`'s selectors: RBAC's `resourceNames` allow only that), and
/// once one answers a fresh watcher takes over, which lists: a watch resumed on a restarted API
/// server may deliver nothing until a change, and the default backoff waits up to 30 s.
pub fn outliving(
    api: Api<DynamicObject>,
    config: watcher::Config,
) -> impl futures::Stream<Item = Result<Event<DynamicObject>, watcher::Error>> + Send {
    /// One watcher, and whether its last answer was an error.
    struct Pass {
        api: Api<DynamicObject>,
        config: watcher::Config,
        stream: futures::stream::BoxStream<'static, Result<Event<DynamicObject>, watcher::Error>>,
        stalled: bool,
    }
    fn fresh(
        api: &Api<DynamicObject>,
        config: &watcher::Config,
    ) -> futures::stream::BoxStream<'static, Result<Event<DynamicObject>, watcher::Error>> {
        watcher::watcher(api.clone(), config.clone())
            .backoff(Retry::default())
            .boxed()
    }
    let probe = ListParams {
        label_selector: config.label_selector.clone(),
        field_selector: config.field_selector.clone(),
        ..ListParams::default()
    }
    .limit(1);
    let pass = Pass {
        stream: fresh(&api, &config),
        api,
        config,
        stalled: false,
    };
    futures::stream::unfold((pass, probe), |(mut pass, probe)| async move {
        loop {
            let next = tokio::select! {
                next = pass.stream.next() => next,
                () = tokio::time::sleep(PROBE_EVERY), if pass.stalled => {
                    if pass.api.list_metadata(&probe).await.is_ok() {
                        pass.stream = fresh(&pass.api, &pass.config);
                        pass.stalled = false;
                    }
                    continue;
                }
            };
            match &next {
                Some(Ok(Event::InitDone | Event::Apply(_) | Event::Delete(_))) => pass.stalled = false,
                Some(Ok(Event::Init | Event::InitApply(_))) => {}
                Some(Err(watcher::Error::WatchError(status))) if status.code == 410 => {}
                Some(Err(_)) => pass.stalled = true,
                None => {}
            }
            return next.map(|next| (next, (pass, probe)));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchers_retry_after_100_ms_doubling_to_1_s_and_start_over_after_a_success() {
        let mut retry = Retry::default();
        let delays: Vec<u64> = retry.by_ref().take(6).map(|d| d.as_millis() as u64).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1000, 1000]);
        retry.reset();
        assert_eq!(retry.next(), Some(Duration::from_millis(100)));
    }
}
