//! The one rebuild loop, fed by either source (kube-rs's shape: one stream per source into one
//! consumer): compile now, then after every settled burst of changes; retry a failed push every
//! [`RETRY_AFTER`]; apply an Istio object again when [`crate::watch::drift`] says it was deleted or
//! changed by someone else; read everything again when the source asks for a rescan.

use std::time::Duration;

use tokio::sync::mpsc;

use crate::watch::debounce::Debounce;
use crate::watch::engine::Engine;
use crate::watch::source::Source;

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
    for sink in engine.istio_sinks() {
        tokio::spawn(crate::watch::drift::follow(
            sink.clone(),
            drift_tx.clone(),
            engine.state(),
        ));
    }
    drop(drift_tx);
    rebuild(&mut source, &mut engine).await;
    loop {
        let retry = engine.needs_retry();
        let rescan = source.rescan();
        tokio::select! {
            settled = debounce.settle(&mut changes) => {
                if !settled {
                    return Err(source.stopped());
                }
            }
            () = tokio::time::sleep(RETRY_AFTER), if retry => {
                engine.retry().await;
                continue;
            }
            Some(sink) = drifted.recv() => {
                engine.repair(&sink).await;
                continue;
            }
            // Pushes nothing unless the table changed.
            () = tokio::time::sleep(rescan.unwrap_or_default()), if rescan.is_some() => {}
        }
        rebuild(&mut source, &mut engine).await;
    }
}

/// Reads the source and, when it can be compiled, compiles and pushes it.
async fn rebuild(source: &mut impl Source, engine: &mut Engine) {
    if let Some(snapshot) = source.read() {
        let compiled = engine.rebuild(&snapshot).await;
        source.rebuilt(snapshot, &compiled);
    }
}
