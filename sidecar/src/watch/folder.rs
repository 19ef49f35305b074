//! Folder mode's source: the manifests under one or more directories, followed with a recursive
//! `notify` watcher ([`Watched`]) and read again after every change, and after `--rescan-secs`
//! without one.
//!
//! Each file is parsed on its own. A file that no longer parses keeps contributing the objects of
//! its last good version, so that a half-written or broken manifest leaves routing as it was; its
//! error is reported (file, line, field) until it is fixed or removed. A new file that never parsed
//! contributes nothing. Deleted files drop out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::watch::source::{Snapshot, Source, SourceError};
use switchyard_compiler::load::{manifest_files, parse_text, Loaded};
use switchyard_compiler::objects::Objects;

/// The state of one file, from its last read.
#[derive(Debug, Default)]
struct FileState {
    /// The objects of the last version that parsed.
    good: Option<Objects>,
    /// The error of the current version, if it does not parse.
    error: Option<String>,
}

/// Watched folders and what each of their manifests last gave.
#[derive(Debug)]
pub struct Folder {
    dirs: Vec<PathBuf>,
    files: BTreeMap<PathBuf, FileState>,
}

impl Folder {
    /// Folders not read yet.
    pub fn new(dirs: &[PathBuf]) -> Folder {
        Folder {
            dirs: dirs.to_vec(),
            files: BTreeMap::new(),
        }
    }

    /// The folders' names, comma-separated (for logs and errors).
    pub fn names(&self) -> String {
        let names: Vec<String> = self.dirs.iter().map(|d| d.display().to_string()).collect();
        names.join(", ")
    }

    /// Reads every manifest again and returns what to compile. When a folder cannot be listed at
    /// all, its previous files are kept (routing stays as it was) and the error is reported.
    pub fn scan(&mut self) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for dir in &self.dirs {
            match manifest_files(dir) {
                Ok(paths) => {
                    let present: BTreeSet<&PathBuf> = paths.iter().collect();
                    self.files
                        .retain(|path, _| !path.starts_with(dir) || present.contains(path));
                    for path in paths {
                        let state = self.files.entry(path.clone()).or_default();
                        read_file(&path, state, &mut snapshot.warnings);
                    }
                }
                Err(e) => snapshot.errors.push(SourceError {
                    source: dir.display().to_string(),
                    message: e.to_string(),
                }),
            }
        }
        for (path, state) in &self.files {
            if let Some(objects) = &state.good {
                merge(&mut snapshot.objects, objects);
            }
            if let Some(message) = &state.error {
                let kept = if state.good.is_some() {
                    "; its last good version is still routed"
                } else {
                    "; it routes nothing"
                };
                snapshot.errors.push(SourceError {
                    source: path.display().to_string(),
                    message: format!("{message}{kept}"),
                });
            }
        }
        snapshot
    }
}

/// The folders as a [`Source`]: the files' state and the `notify` watcher that signals changes.
pub struct Watched {
    folder: Folder,
    rescan: Duration,
    _watcher: notify::RecommendedWatcher,
}

impl Watched {
    /// Starts watching `dirs` (recursively); returns the source and its change channel.
    pub fn start(dirs: &[PathBuf], rescan: Duration) -> Result<(Watched, mpsc::Receiver<()>), String> {
        let (tx, changes) = mpsc::channel(1);
        let watcher = watcher(dirs, tx)?;
        let source = Watched {
            folder: Folder::new(dirs),
            rescan,
            _watcher: watcher,
        };
        Ok((source, changes))
    }

    /// The folders' names, comma-separated.
    pub fn names(&self) -> String {
        self.folder.names()
    }
}

impl Source for Watched {
    fn read(&mut self) -> Option<Snapshot> {
        Some(self.folder.scan())
    }

    fn rescan(&self) -> Option<Duration> {
        Some(self.rescan)
    }

    fn stopped(&self) -> String {
        format!("{}: the file watcher stopped", self.folder.names())
    }
}

/// A recursive `notify` watcher on `dirs` that signals on every create, modify or remove (never on
/// reads: the rescans themselves must not look like changes).
fn watcher(dirs: &[PathBuf], tx: mpsc::Sender<()>) -> Result<notify::RecommendedWatcher, String> {
    use notify::{EventKind, RecursiveMode, Watcher};
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let relevant = match &event {
            Ok(event) => matches!(
                event.kind,
                EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) | EventKind::Any
            ),
            // An overflowed queue or similar: rescan to be safe.
            Err(_) => true,
        };
        tracing::debug!("file event: {event:?}");
        if relevant {
            // A full channel already holds a pending change: nothing is lost.
            let _ = tx.try_send(());
        }
    })
    .map_err(|e| format!("cannot watch: {e}"))?;
    for dir in dirs {
        watcher
            .watch(dir, RecursiveMode::Recursive)
            .map_err(|e| format!("{}: cannot watch: {e}", dir.display()))?;
    }
    Ok(watcher)
}

fn read_file(path: &Path, state: &mut FileState, warnings: &mut Vec<String>) {
    let name = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            state.error = Some(format!("{name}: cannot read: {e}"));
            return;
        }
    };
    let mut loaded = Loaded::default();
    match parse_text(&text, &name, &mut loaded) {
        Ok(()) => {
            state.good = Some(loaded.objects);
            state.error = None;
            warnings.extend(loaded.warnings);
        }
        Err(e) => state.error = Some(e.to_string()),
    }
}

/// Adds `from`'s objects to `into`.
pub fn merge(into: &mut Objects, from: &Objects) {
    into.ingresses.extend(from.ingresses.iter().cloned());
    into.ingress_classes.extend(from.ingress_classes.iter().cloned());
    into.services.extend(from.services.iter().cloned());
    into.http_proxies.extend(from.http_proxies.iter().cloned());
    into.transport_servers.extend(from.transport_servers.iter().cloned());
    into.global_configurations
        .extend(from.global_configurations.iter().cloned());
}

#[cfg(test)]
mod tests {
    use super::*;

    const INGRESS: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec:\n  rules:\n  - host: shop.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n";

    #[test]
    fn a_broken_file_keeps_its_last_good_objects_and_reports_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("web.yaml");
        std::fs::write(&file, INGRESS).unwrap();
        let mut folder = Folder::new(&[dir.path().to_path_buf()]);
        let first = folder.scan();
        assert_eq!(first.objects.ingresses.len(), 1);
        assert!(first.errors.is_empty());

        std::fs::write(&file, "kind: Ingress\nspec: [\n").unwrap();
        let broken = folder.scan();
        assert_eq!(broken.objects.ingresses.len(), 1, "the last good version still routes");
        assert_eq!(broken.errors.len(), 1);
        assert!(broken.errors[0].message.contains("web.yaml"), "{:?}", broken.errors);
        assert!(
            broken.errors[0].message.contains("last good version"),
            "{:?}",
            broken.errors
        );

        std::fs::remove_file(&file).unwrap();
        let gone = folder.scan();
        assert!(
            gone.objects.ingresses.is_empty() && gone.errors.is_empty(),
            "a deleted file drops out with its error"
        );
    }

    #[test]
    fn a_new_file_that_never_parsed_routes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("bad.yaml"),
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: x}\nspec: {rules: 7}\n",
        )
        .unwrap();
        let snapshot = Folder::new(&[dir.path().to_path_buf()]).scan();
        assert!(snapshot.objects.ingresses.is_empty());
        assert_eq!(snapshot.errors.len(), 1);
        assert!(
            snapshot.errors[0].message.contains("routes nothing"),
            "{:?}",
            snapshot.errors
        );
    }

    #[test]
    fn an_empty_folder_is_an_empty_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let snapshot = Folder::new(&[dir.path().to_path_buf()]).scan();
        assert!(snapshot.objects.ingresses.is_empty() && snapshot.errors.is_empty());
    }
}
