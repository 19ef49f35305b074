//! Folder mode's source: the manifests under one or more directories, followed with a recursive
//! `notify` watcher ([`Watched`]) and read again after every change, and after `--rescan-secs`
//! without one.
//!
//! Each file is parsed on its own. A file that no longer parses keeps contributing the objects of
//! its last good version, so that a half-written or broken manifest leaves routing as it was; its
//! error is reported (file, line, field) until it is fixed or removed. A new file that never parsed
//! contributes nothing. Deleted files drop out.
//!
//! A scan reads again only the files whose modification time or length changed, and parses again
//! only those whose content changed (by its FNV-1a hash): one edited file of a thousand is one
//! parse. The merged objects of every file are kept between scans and updated file by file (a
//! changed file's old objects out, its new ones in), so the snapshot shares them instead of
//! copying every object at every change.
//!
//! With `--ingress-nginx-configmap NAMESPACE/NAME`, that ConfigMap is read from the manifests as
//! `switchyard compile` reads it (ROUTING.md §7.8; the last file in path order that defines it,
//! its last good version), and an edit to it reaches the table like any other edit. While no
//! manifest defines it, ingress-nginx's defaults apply and `/status` names it
//! ([`super::read_controller_config`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc;

use crate::watch::source::{read_controller_config, Snapshot, Source};
use crate::watch::state::SourceError;
use switchyard_compiler::load::{manifest_files, parse_text, Loaded};
use switchyard_compiler::objects::{EachKind, Object, Objects};
use switchyard_compiler::order::fnv1a;

/// The state of one file, from its last read.
#[derive(Debug, Default)]
struct FileState {
    /// The objects of the last version that parsed.
    good: Option<Objects>,
    /// The `data` of the `v1` ConfigMaps of that version, by namespace and name.
    config_maps: BTreeMap<(String, String), BTreeMap<String, String>>,
    /// The loader's warnings about that version.
    warnings: Vec<String>,
    /// The error of the current version, if it does not parse.
    error: Option<String>,
    /// Modification time and length at the last read: the file is not read again while they stay.
    stamp: Option<(SystemTime, u64)>,
    /// FNV-1a of the content last parsed: the file is not parsed again while it stays.
    content: Option<u64>,
}

/// Watched folders and what each of their manifests last gave.
#[derive(Debug)]
pub struct Folder {
    dirs: Vec<PathBuf>,
    files: BTreeMap<PathBuf, FileState>,
    /// The good objects of every file, merged.
    merged: Arc<Objects>,
    /// `--ingress-nginx-configmap`: the ConfigMap to read (namespace, name).
    config_map: Option<(String, String)>,
}

impl Folder {
    /// Folders not read yet.
    pub fn new(dirs: &[PathBuf]) -> Folder {
        Folder {
            dirs: dirs.to_vec(),
            files: BTreeMap::new(),
            merged: Arc::default(),
            config_map: None,
        }
    }

    /// The same folders, reading ingress-nginx's ConfigMap `name` (namespace, name) from their
    /// manifests (`--ingress-nginx-configmap`; `None`: none).
    pub fn with_config_map(self, name: Option<(String, String)>) -> Folder {
        Folder {
            config_map: name,
            ..self
        }
    }

    /// The folders' names, comma-separated (for logs and errors).
    pub fn names(&self) -> String {
        let names: Vec<String> = self.dirs.iter().map(|d| d.display().to_string()).collect();
        names.join(", ")
    }

    /// Reads every manifest that changed again and returns what to compile. When a folder cannot be
    /// listed at all, its previous files are kept (routing stays as it was) and the error is reported.
    pub fn scan(&mut self) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for dir in &self.dirs {
            match manifest_files(dir) {
                Ok(paths) => {
                    let present: BTreeSet<&PathBuf> = paths.iter().collect();
                    let gone: Vec<PathBuf> = self
                        .files
                        .keys()
                        .filter(|path| path.starts_with(dir) && !present.contains(path))
                        .cloned()
                        .collect();
                    for path in gone {
                        if let Some(FileState { good: Some(old), .. }) = self.files.remove(&path) {
                            Arc::make_mut(&mut self.merged).unmerge(&old);
                        }
                    }
                    for path in paths {
                        let state = self.files.entry(path.clone()).or_default();
                        if let Some(old) = read_file(&path, state) {
                            let merged = Arc::make_mut(&mut self.merged);
                            if let Some(old) = old {
                                merged.unmerge(&old);
                            }
                            if let Some(new) = &state.good {
                                merged.merge(new);
                            }
                        }
                    }
                }
                Err(e) => snapshot.errors.push(SourceError {
                    source: dir.display().to_string(),
                    message: e.to_string(),
                }),
            }
        }
        snapshot.objects = self.merged.clone();
        for (path, state) in &self.files {
            snapshot.warnings.extend(state.warnings.iter().cloned());
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
        if let Some(name) = &self.config_map {
            // As `compile` reads it: the last file (in path order) that defines it.
            let data = self.files.values().rev().find_map(|state| state.config_maps.get(name));
            read_controller_config(name, data, &mut snapshot);
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
    /// Starts watching `dirs` (recursively), reading ingress-nginx's ConfigMap `config_map` from
    /// them (`--ingress-nginx-configmap`); returns the source and its change channel.
    pub fn start(
        dirs: &[PathBuf],
        rescan: Duration,
        config_map: Option<(String, String)>,
    ) -> Result<(Watched, mpsc::Receiver<()>), String> {
        let (tx, changes) = mpsc::channel(1);
        let watcher = watcher(dirs, tx)?;
        let source = Watched {
            folder: Folder::new(dirs).with_config_map(config_map),
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

/// Reads one file again if its stamp changed, and parses it if its content changed. Returns
/// `Some(previous good objects)` when its good objects were replaced, `None` when they stay.
fn read_file(path: &Path, state: &mut FileState) -> Option<Option<Objects>> {
    let name = path.display().to_string();
    let stamp = std::fs::metadata(path)
        .ok()
        .and_then(|m| Some((m.modified().ok()?, m.len())));
    if stamp.is_some() && stamp == state.stamp {
        return None;
    }
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            state.error = Some(format!("{name}: cannot read: {e}"));
            // Read and parse it again once it can be read, even if its content is the same.
            (state.stamp, state.content) = (None, None);
            return None;
        }
    };
    state.stamp = stamp;
    let content = fnv1a(text.as_bytes());
    if state.content == Some(content) {
        return None;
    }
    state.content = Some(content);
    let mut loaded = Loaded::default();
    match parse_text(&text, &name, &mut loaded) {
        Ok(()) => {
            stamp_versions(&mut loaded.objects, content);
            state.error = None;
            state.warnings = loaded.warnings;
            state.config_maps = loaded.config_maps;
            Some(state.good.replace(loaded.objects))
        }
        Err(e) => {
            state.error = Some(e.to_string());
            None
        }
    }
}

/// Gives every object of a file a `resourceVersion` made of the file's content hash and the
/// object's place in the file, replacing any the manifest wrote (in a file it means nothing): the
/// incremental compiler takes the same version for the same object, as it does with the API
/// server's versions, and compares no further.
fn stamp_versions(objects: &mut Objects, content: u64) {
    struct Stamp<'o> {
        objects: &'o mut Objects,
        content: u64,
        n: usize,
    }
    impl EachKind for Stamp<'_> {
        fn kind<T: Object>(&mut self) {
            for object in T::of_mut(self.objects) {
                // Just parsed: no other holder, so no copy.
                Arc::make_mut(object).meta_mut().resource_version =
                    Some(format!("file-{:016x}-{}", self.content, self.n));
                self.n += 1;
            }
        }
    }
    Objects::each_kind(&mut Stamp { objects, content, n: 0 });
}

#[cfg(test)]
mod tests {
    use super::*;

    const INGRESS: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec:\n  rules:\n  - host: shop.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n";

    #[test]
    fn virtualservers_and_virtualserverroutes_are_merged_from_every_file() {
        let vs = "apiVersion: k8s.nginx.org/v1\nkind: VirtualServer\nmetadata: {name: cafe, namespace: shop}\nspec: {host: cafe.example.com, routes: [{path: /tea, route: tea}]}\n";
        let vsr = "apiVersion: k8s.nginx.org/v1\nkind: VirtualServerRoute\nmetadata: {name: tea, namespace: shop}\nspec: {host: cafe.example.com}\n";
        let mut all = Objects::default();
        for (text, name) in [(vs, "vs.yaml"), (vsr, "vsr.yaml")] {
            let mut loaded = switchyard_compiler::load::Loaded::default();
            parse_text(text, name, &mut loaded).unwrap();
            all.merge(&loaded.objects);
        }
        assert_eq!((all.virtual_servers.len(), all.virtual_server_routes.len()), (1, 1));
    }

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
    fn a_scan_reads_only_what_changed_and_shares_the_objects_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let ingress = |name: &str, host: &str| {
            INGRESS
                .replace("name: web", &format!("name: {name}"))
                .replace("shop.example.com", host)
        };
        std::fs::write(dir.path().join("a.yaml"), ingress("a", "a.example")).unwrap();
        std::fs::write(
            dir.path().join("b.yaml"),
            ingress("b", "b.example") + "---\n" + &ingress("b2", "b2.example"),
        )
        .unwrap();
        let mut folder = Folder::new(&[dir.path().to_path_buf()]);
        let first = folder.scan();
        let second = folder.scan();
        assert!(
            Arc::ptr_eq(&first.objects, &second.objects),
            "nothing changed: nothing copied"
        );
        let named = |snapshot: &Snapshot, name: &str| {
            let found = snapshot
                .objects
                .ingresses
                .iter()
                .find(|i| i.metadata.name.as_deref() == Some(name));
            found.cloned().unwrap()
        };
        let a_before = named(&first, "a");
        drop((first, second));

        // One document of b.yaml goes, the other changes; a.yaml stays as it was.
        std::fs::write(dir.path().join("b.yaml"), ingress("b", "b-new.example")).unwrap();
        let edited = folder.scan();
        let hosts = |snapshot: &Snapshot| {
            let mut hosts: Vec<String> = snapshot
                .objects
                .ingresses
                .iter()
                .flat_map(|i| i.spec.iter().flat_map(|s| s.rules.iter().flatten()))
                .filter_map(|r| r.host.clone())
                .collect();
            hosts.sort();
            hosts
        };
        assert_eq!(hosts(&edited), ["a.example", "b-new.example"]);
        assert!(
            Arc::ptr_eq(&a_before, &named(&edited, "a")),
            "a.yaml's Ingress is the same object, not a copy"
        );
        // The same content written again (a new modification time): parsed objects stay.
        std::fs::write(dir.path().join("b.yaml"), ingress("b", "b-new.example")).unwrap();
        let rewritten = folder.scan();
        assert!(Arc::ptr_eq(&edited.objects, &rewritten.objects));
        drop((edited, rewritten));

        std::fs::remove_file(dir.path().join("a.yaml")).unwrap();
        assert_eq!(hosts(&folder.scan()), ["b-new.example"]);
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
    fn the_named_config_map_is_read_from_the_manifests_and_its_absence_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let name = ("ingress-nginx".to_owned(), "ingress-nginx-controller".to_owned());
        let mut folder = Folder::new(&[dir.path().to_path_buf()]).with_config_map(Some(name));
        let missing = folder.scan();
        assert_eq!(
            missing.ingress_nginx_config,
            Some(Default::default()),
            "the defaults meanwhile"
        );
        assert!(
            missing.errors[0]
                .message
                .contains("ingress-nginx/ingress-nginx-controller: no such ConfigMap"),
            "{:?}",
            missing.errors
        );
        let config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ingress-nginx-controller, namespace: ingress-nginx}\ndata: {ssl-redirect: \"false\", use-gzip: \"true\"}\n";
        std::fs::write(dir.path().join("cm.yaml"), config_map).unwrap();
        let read = folder.scan();
        assert!(read.errors.is_empty(), "{:?}", read.errors);
        let config = read.ingress_nginx_config.unwrap();
        assert!(!config.ssl_redirect);
        assert!(
            read.warnings.iter().any(|w| w.ends_with("use-gzip")),
            "{:?}",
            read.warnings
        );
        let other = Folder::new(&[dir.path().to_path_buf()]).scan();
        assert_eq!(other.ingress_nginx_config, None, "without the flag nothing is read");
    }

    #[test]
    fn an_empty_folder_is_an_empty_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let snapshot = Folder::new(&[dir.path().to_path_buf()]).scan();
        assert!(snapshot.objects.ingresses.is_empty() && snapshot.errors.is_empty());
    }
}
