//! The one rebuild loop, fed by either source (kube-rs's shape: one stream per source into one
//! consumer): compile now, then after every settled burst of changes; retry a failed push every
//! [`RETRY_AFTER`]; apply an Istio object again when [`crate::watch::sink::drift`] says it was deleted or
//! changed by someone else; read everything again when the source asks for a rescan; push the
//! table held to the cluster sinks on becoming the leader (`--leader-elect`). A burst of changes
//! being debounced is kept by the loop itself, so handling any of those events meanwhile never
//! loses it.

use std::time::Duration;

use kube::Client;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::watch::engine::Engine;
use crate::watch::source::debounce::{Burst, Debounce};
use crate::watch::source::kubernetes::{Cluster, Settings};
use crate::watch::source::Source;
use crate::watch::state::Shared;

/// How long to wait before pushing again after a failed push.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Runs `source` through `engine` until the source's `changes` channel closes (an error: the
/// watch never ends on its own).
pub async fn run(
    mut source: impl Source,
    mut changes: mpsc::Receiver<()>,
    mut engine: Engine,
    debounce: Debounce,
) -> Result<(), String> {
    let (drift_tx, mut drifted) = mpsc::channel(4);
    for followed in engine.followed() {
        tokio::spawn(crate::watch::sink::drift::follow(
            followed,
            drift_tx.clone(),
            engine.state(),
        ));
    }
    drop(drift_tx);
    let mut role = engine.leader().subscribe();
    rebuild(&mut source, &mut engine).await;
    // The burst of changes being debounced lives here, not in a future a branch below could cancel.
    let mut burst: Option<Burst> = None;
    loop {
        let retry = engine.needs_retry();
        let rescan = source.rescan();
        let settles = burst.map(|b| debounce.settles_at(b));
        tokio::select! {
            change = changes.recv() => {
                if change.is_none() {
                    return Err(source.stopped());
                }
                burst = Some(burst.map_or_else(Burst::start, Burst::again));
                continue;
            }
            () = tokio::time::sleep_until(settles.unwrap_or_else(Instant::now)), if settles.is_some() => {
                burst = None;
            }
            () = tokio::time::sleep(RETRY_AFTER), if retry => {
                engine.retry().await;
                continue;
            }
            Some(sink) = drifted.recv() => {
                engine.repair(&sink).await;
                continue;
            }
            Ok(()) = role.changed() => {
                if *role.borrow_and_update() {
                    engine.take_over().await;
                }
                continue;
            }
            // Pushes nothing unless the table changed.
            () = tokio::time::sleep(rescan.unwrap_or_default()), if rescan.is_some() => {}
        }
        rebuild(&mut source, &mut engine).await;
    }
}

/// Kubernetes mode: watches, waits for every store to sync, then compiles after every settled
/// change (the one loop, [`run`]) and writes status back.
pub async fn follow(
    client: Client,
    settings: Settings,
    engine: Engine,
    state: Shared,
    debounce: Debounce,
) -> Result<(), String> {
    let (cluster, changes) = Cluster::start(client, &settings, state, engine.options().clone());
    run(cluster, changes, engine, debounce).await
}

/// Reads the source and, when it can be compiled, compiles and pushes it.
async fn rebuild(source: &mut impl Source, engine: &mut Engine) {
    if let Some(snapshot) = source.read() {
        let statuses = engine.rebuild(&snapshot).await;
        source.rebuilt(snapshot, &statuses);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::sink::Sink;
    use crate::watch::source::Snapshot;
    use crate::watch::state::Shared;
    use switchyard_compiler::load::{parse_text, Loaded};
    use switchyard_compiler::model::Options;
    use switchyard_compiler::status::ResourceStatus;

    const INGRESS: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec:\n  rules:\n  - host: HOST\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n";

    /// A source whose input is a host name set by the test; not ready until `ready`.
    struct Hosts {
        host: std::sync::Arc<std::sync::Mutex<Option<String>>>,
        reads: usize,
        rebuilt: usize,
        rescan: Option<Duration>,
    }

    /// A source of `host` (shared with the test, which may change it) that never asks for rescans.
    fn hosts(host: Option<&str>) -> (Hosts, std::sync::Arc<std::sync::Mutex<Option<String>>>) {
        let shared = std::sync::Arc::new(std::sync::Mutex::new(host.map(str::to_owned)));
        let source = Hosts {
            host: shared.clone(),
            reads: 0,
            rebuilt: 0,
            rescan: None,
        };
        (source, shared)
    }

    impl Source for Hosts {
        fn read(&mut self) -> Option<Snapshot> {
            self.reads += 1;
            let host = self.host.lock().unwrap().clone()?;
            let mut loaded = Loaded::default();
            parse_text(&INGRESS.replace("HOST", &host), "web.yaml", &mut loaded).unwrap();
            Some(Snapshot {
                objects: std::sync::Arc::new(loaded.objects),
                ..Snapshot::default()
            })
        }

        fn rebuilt(&mut self, _snapshot: Snapshot, _statuses: &[ResourceStatus]) {
            self.rebuilt += 1;
        }

        fn rescan(&self) -> Option<Duration> {
            self.rescan
        }

        fn stopped(&self) -> String {
            format!("stopped after {} reads, {} rebuilds", self.reads, self.rebuilt)
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// An engine writing a table file in `dir`, and its state.
    fn engine(dir: &std::path::Path) -> (Engine, Shared) {
        let state = Shared::default();
        let sinks = vec![Sink::TableFile(dir.join("t.json"))];
        (Engine::new(Options::default(), sinks, state.clone()), state)
    }

    fn debounce() -> Debounce {
        Debounce {
            quiet: Duration::from_millis(10),
            max: Duration::from_millis(50),
        }
    }

    #[test]
    fn a_source_not_ready_is_read_again_after_each_change_and_compiled_once_ready() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, state) = engine(dir.path());
        let (source, host) = hosts(None);
        let (tx, changes) = mpsc::channel(1);
        let outcome = runtime().block_on(async {
            let watch = tokio::spawn(run(source, changes, engine, debounce()));
            tx.send(()).await.unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(
                state.lock().compiles,
                0,
                "nothing is compiled while the source is not ready"
            );
            *host.lock().unwrap() = Some("a.example".into());
            tx.send(()).await.unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
            drop(tx);
            watch.await.unwrap()
        });
        // Read at start, after the first change and after the second: compiled once.
        assert_eq!(outcome, Err("stopped after 3 reads, 1 rebuilds".to_owned()));
        let state = state.lock();
        assert_eq!((state.compiles, state.tables_pushed), (1, 1));
    }

    #[test]
    fn a_change_settling_while_another_event_is_handled_is_not_lost() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, _state) = engine(dir.path());
        let leader = crate::watch::lead::leader::Leader::elected();
        let engine = engine.led_by(leader.clone());
        let (source, host) = hosts(Some("a.example"));
        let (tx, changes) = mpsc::channel(1);
        let slow = Debounce {
            quiet: Duration::from_millis(200),
            max: Duration::from_secs(1),
        };
        runtime().block_on(async {
            let watch = tokio::spawn(run(source, changes, engine, slow));
            tokio::time::sleep(Duration::from_millis(50)).await;
            *host.lock().unwrap() = Some("b.example".into());
            tx.send(()).await.unwrap();
            // Becoming the leader while the change settles.
            tokio::time::sleep(Duration::from_millis(50)).await;
            leader.lead_until(std::time::Instant::now() + Duration::from_secs(60));
            tokio::time::sleep(Duration::from_millis(500)).await;
            watch.abort();
        });
        let table = std::fs::read_to_string(dir.path().join("t.json")).unwrap();
        assert!(table.contains("b.example"), "{table}");
    }

    #[test]
    fn a_source_asking_for_rescans_is_read_again_without_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, state) = engine(dir.path());
        let (mut source, _) = hosts(Some("a.example"));
        source.rescan = Some(Duration::from_millis(30));
        let (_tx, changes) = mpsc::channel(1);
        runtime().block_on(async {
            let watch = tokio::spawn(run(source, changes, engine, debounce()));
            tokio::time::sleep(Duration::from_millis(200)).await;
            watch.abort();
        });
        let state = state.lock();
        assert!(state.compiles >= 3, "compiled {} times", state.compiles);
        assert_eq!(state.tables_pushed, 1, "the same table is pushed once");
    }
}
