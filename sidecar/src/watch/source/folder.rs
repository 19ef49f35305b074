//! Folder mode's source: the manifests under one or more directories, followed with a recursive
//! `notify` watcher ([`Watched`]). After a change only the paths its events named are read again
//! ([`Folder::update`]; [`super::changes`] says which), without listing the folders; every folder
//! is listed and read again ([`Folder::scan`]) at start, after `--rescan-secs` without a change,
//! and when a path may stand for more than one file (a folder created, removed or renamed, as a
//! ConfigMap volume's `..data` swap does; an overflowed event queue).
//!
//! Each file is parsed on its own. A file that no longer parses keeps contributing the objects of
//! its last good version, so that a half-written or broken manifest leaves routing as it was; its
//! error is reported (file, line, field) until it is fixed or removed. A new file that never parsed
//! contributes nothing. Deleted files drop out.
//!
//! A scan (or an update) reads again only the files whose modification time or length changed,
//! and parses again only those whose content changed (by its FNV-1a hash): one edited file of a
//! thousand is one parse. The merged objects of every file are kept between scans and updated file by file (a
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

use crate::watch::source::changes::Changes;
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
    dirs: Vec<Root>,
    files: BTreeMap<PathBuf, FileState>,
    /// The good objects of every file, merged.
    merged: Arc<Objects>,
    /// `--ingress-nginx-configmap`: the ConfigMap to read (namespace, name).
    config_map: Option<(String, String)>,
    /// The folders that could not be listed at the last full scan (kept until the next one).
    unlisted: Vec<SourceError>,
    /// Whether a full scan was made: changes are read path by path only after one.
    scanned: bool,
}

/// One folder given: as given (the files' keys start with it), and absolute (as `notify` names
/// the paths of its events: joined to the current directory, not canonicalised).
#[derive(Debug)]
struct Root {
    given: PathBuf,
    absolute: PathBuf,
}

impl Root {
    fn new(given: &Path) -> Root {
        let absolute = match std::env::current_dir() {
            Ok(cwd) if given.is_relative() => cwd.join(given),
            _ => given.to_path_buf(),
        };
        Root {
            given: given.to_path_buf(),
            absolute,
        }
    }

    /// `path` (as `notify` or a listing names it) as a file's key: under this folder as given.
    /// `None`: not strictly under this folder.
    fn key_of(&self, path: &Path) -> Option<PathBuf> {
        let rest = [&self.absolute, &self.given]
            .into_iter()
            .find_map(|root| path.strip_prefix(root).ok())?;
        (rest.components().next().is_some()).then(|| self.given.join(rest))
    }
}

impl Folder {
    /// Folders not read yet.
    pub fn new(dirs: &[PathBuf]) -> Folder {
        Folder {
            dirs: dirs.iter().map(|d| Root::new(d)).collect(),
            files: BTreeMap::new(),
            merged: Arc::default(),
            config_map: None,
            unlisted: Vec::new(),
            scanned: false,
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
        let names: Vec<String> = self.dirs.iter().map(|d| d.given.display().to_string()).collect();
        names.join(", ")
    }

    /// Lists every folder and reads every manifest that changed again; returns what to compile.
    /// When a folder cannot be listed at all, its previous files are kept (routing stays as it
    /// was) and the error is reported until a scan lists it.
    pub fn scan(&mut self) -> Snapshot {
        self.unlisted.clear();
        for i in 0..self.dirs.len() {
            let dir = self.dirs[i].given.clone();
            match manifest_files(&dir) {
                Ok(paths) => self.reconcile_under(&dir, paths),
                Err(e) => self.unlisted.push(SourceError {
                    source: dir.display().to_string(),
                    message: e.to_string(),
                }),
            }
        }
        self.scanned = true;
        self.snapshot()
    }

    /// Reads again only `changed`, the paths the watcher named (files edited, created, deleted or
    /// renamed), without listing the folders; returns what to compile. A path that may stand for
    /// more than one file (a folder, a symbolic link to one, a folder that held files, a path
    /// outside the folders or one that cannot be looked at) makes it a full [`Folder::scan`], as
    /// does a folder never scanned.
    pub fn update(&mut self, changed: &[PathBuf]) -> Snapshot {
        let keys: Option<Vec<PathBuf>> = changed.iter().map(|path| self.file_key(path)).collect();
        match keys {
            Some(keys) if self.scanned => {
                for key in keys {
                    self.reconcile_file(&key);
                }
                self.snapshot()
            }
            _ => self.scan(),
        }
    }

    /// The key of the one file (or nothing: a deleted file) that `path` stands for; `None` when it
    /// may stand for more, and only a full scan will do.
    fn file_key(&self, path: &Path) -> Option<PathBuf> {
        let key = self.dirs.iter().find_map(|root| root.key_of(path))?;
        let file = match std::fs::metadata(&key) {
            Ok(meta) => !meta.is_dir(),
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        };
        (file && !self.holds_files_under(&key)).then_some(key)
    }

    /// Whether some file read before lies under `key` as under a folder (it was one).
    fn holds_files_under(&self, key: &Path) -> bool {
        use std::ops::Bound::{Excluded, Unbounded};
        // Paths order by component: a folder's files come right after it.
        let next = self.files.range::<Path, _>((Excluded(key), Unbounded)).next();
        next.is_some_and(|(path, _)| path.starts_with(key))
    }

    /// Makes the files under `dir` those of `present` (a listing of it): the others drop out, and
    /// each of them is read again if it changed.
    fn reconcile_under(&mut self, dir: &Path, present: Vec<PathBuf>) {
        let listed: BTreeSet<&PathBuf> = present.iter().collect();
        let gone: Vec<PathBuf> = self
            .files
            .keys()
            .filter(|path| path.starts_with(dir) && !listed.contains(path))
            .cloned()
            .collect();
        for path in gone {
            self.forget(&path);
        }
        for path in present {
            self.refresh(path);
        }
    }

    /// Reads the file `key` again if it is a manifest, or drops it if it is gone (or is not one).
    fn reconcile_file(&mut self, key: &Path) {
        // `manifest_files` of a file: the file itself when its name is a manifest's.
        match manifest_files(key) {
            Ok(paths) if paths.iter().any(|p| p == key) => self.refresh(key.to_path_buf()),
            _ => self.forget(key),
        }
    }

    /// Drops the file `path` and its objects.
    fn forget(&mut self, path: &Path) {
        if let Some(FileState { good: Some(old), .. }) = self.files.remove(path) {
            Arc::make_mut(&mut self.merged).unmerge(&old);
        }
    }

    /// Reads the file `path` again if it changed, and puts its new objects in place of its old ones.
    fn refresh(&mut self, path: PathBuf) {
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

    /// What to compile now: the merged objects, every file's warnings and errors, and the
    /// ConfigMap.
    fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot {
            objects: self.merged.clone(),
            errors: self.unlisted.clone(),
            ..Snapshot::default()
        };
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

/// The folders as a [`Source`]: the files' state, the `notify` watcher that signals changes, and
/// the paths it named since the last read.
pub struct Watched {
    folder: Folder,
    rescan: Duration,
    changes: Changes,
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
        let (tx, signals) = mpsc::channel(1);
        let changes = Changes::default();
        let watcher = watcher(dirs, changes.clone(), tx)?;
        let source = Watched {
            folder: Folder::new(dirs).with_config_map(config_map),
            rescan,
            changes,
            _watcher: watcher,
        };
        Ok((source, signals))
    }

    /// The folders' names, comma-separated.
    pub fn names(&self) -> String {
        self.folder.names()
    }
}

impl Source for Watched {
    /// The paths the watcher named since the last read, read again one by one; everything when
    /// nothing was named (at start, a rescan) or a path may stand for more than one file.
    fn read(&mut self) -> Option<Snapshot> {
        let snapshot = match self.changes.take() {
            Some(paths) => {
                tracing::debug!(paths = paths.len(), "reading the changed paths again");
                self.folder.update(&paths)
            }
            None => {
                tracing::debug!("reading every folder again");
                self.folder.scan()
            }
        };
        Some(snapshot)
    }

    fn rescan(&self) -> Option<Duration> {
        Some(self.rescan)
    }

    fn stopped(&self) -> String {
        format!("{}: the file watcher stopped", self.folder.names())
    }
}

/// A recursive `notify` watcher on `dirs` that notes every create, modify or remove in `changes`
/// and signals it on `tx` (never reads: the source's own reads must not look like changes).
fn watcher(dirs: &[PathBuf], changes: Changes, tx: mpsc::Sender<()>) -> Result<notify::RecommendedWatcher, String> {
    use notify::{RecursiveMode, Watcher};
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        tracing::debug!("file event: {event:?}");
        if changes.note(&event) {
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

    /// The hosts of a snapshot's Ingresses, sorted.
    fn hosts_of(snapshot: &Snapshot) -> Vec<String> {
        let mut hosts: Vec<String> = snapshot
            .objects
            .ingresses
            .iter()
            .flat_map(|i| i.spec.iter().flat_map(|s| s.rules.iter().flatten()))
            .filter_map(|r| r.host.clone())
            .collect();
        hosts.sort();
        hosts
    }

    /// An Ingress named `name` for `host`.
    fn ingress(name: &str, host: &str) -> String {
        INGRESS
            .replace("name: web", &format!("name: {name}"))
            .replace("shop.example.com", host)
    }

    /// A folder scanned once with `a.yaml`, `b.yaml` and `c.yaml` (hosts a, b and c.example), and
    /// `unreported.yaml` written after the scan: an update that lists the folder would find it.
    fn scanned_abc() -> (tempfile::TempDir, Folder) {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a", "b", "c"] {
            std::fs::write(
                dir.path().join(format!("{name}.yaml")),
                ingress(name, &format!("{name}.example")),
            )
            .unwrap();
        }
        let mut folder = Folder::new(&[dir.path().to_path_buf()]);
        assert_eq!(hosts_of(&folder.scan()), ["a.example", "b.example", "c.example"]);
        std::fs::write(dir.path().join("unreported.yaml"), ingress("u", "u.example")).unwrap();
        (dir, folder)
    }

    #[test]
    fn an_edit_a_delete_and_a_rename_are_read_path_by_path_without_listing_the_folder() {
        let (dir, mut folder) = scanned_abc();
        let at = |name: &str| dir.path().join(name);
        std::fs::write(at("a.yaml"), ingress("a", "a-new.example")).unwrap();
        std::fs::remove_file(at("b.yaml")).unwrap();
        std::fs::rename(at("c.yaml"), at("d.yml")).unwrap();
        std::fs::write(at("notes.txt"), "not a manifest").unwrap();
        let changed = ["a.yaml", "b.yaml", "c.yaml", "d.yml", "notes.txt"].map(at);
        let updated = folder.update(&changed);
        assert_eq!(
            hosts_of(&updated),
            ["a-new.example", "c.example"],
            "the unreported file is not read"
        );
        let keys: Vec<&PathBuf> = folder.files.keys().collect();
        assert_eq!(keys, [&at("a.yaml"), &at("d.yml")]);

        std::fs::write(at("a.yaml"), "kind: Ingress\nspec: [\n").unwrap();
        let broken = folder.update(&[at("a.yaml")]);
        assert_eq!(
            hosts_of(&broken),
            ["a-new.example", "c.example"],
            "the last good version stays"
        );
        assert_eq!(broken.errors.len(), 1, "{:?}", broken.errors);
        assert!(broken.errors[0].message.contains("a.yaml"), "{:?}", broken.errors);

        assert_eq!(hosts_of(&folder.scan()), ["a-new.example", "c.example", "u.example"]);
    }

    #[test]
    fn a_file_created_in_a_new_subfolder_is_read_by_its_path_and_by_the_folders() {
        let (dir, mut folder) = scanned_abc();
        let sub = dir.path().join("new").join("deeper");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("e.yaml"), ingress("e", "e.example")).unwrap();
        let by_path = folder.update(&[sub.join("e.yaml")]);
        assert_eq!(hosts_of(&by_path), ["a.example", "b.example", "c.example", "e.example"]);

        std::fs::write(sub.join("f.yaml"), ingress("f", "f.example")).unwrap();
        // The folder's own event: its files may have come before it was watched, so it is listed.
        let by_folder = folder.update(&[dir.path().join("new")]);
        assert_eq!(
            hosts_of(&by_folder),
            [
                "a.example",
                "b.example",
                "c.example",
                "e.example",
                "f.example",
                "u.example"
            ]
        );
    }

    #[test]
    fn a_folder_renamed_or_removed_moves_or_drops_its_files() {
        let (dir, mut folder) = scanned_abc();
        let (old, new) = (dir.path().join("old"), dir.path().join("new"));
        std::fs::create_dir(&old).unwrap();
        std::fs::write(old.join("e.yaml"), ingress("e", "e.example")).unwrap();
        folder.scan();
        std::fs::rename(&old, &new).unwrap();
        // The old name alone: no longer there, but it held files.
        folder.update(std::slice::from_ref(&old));
        assert!(
            folder.files.contains_key(&new.join("e.yaml")),
            "{:?}",
            folder.files.keys()
        );
        std::fs::remove_dir_all(&new).unwrap();
        let removed = folder.update(&[new.join("e.yaml"), new.clone()]);
        assert_eq!(hosts_of(&removed), ["a.example", "b.example", "c.example", "u.example"]);
    }

    /// A ConfigMap volume: the files are links through `..data`, a link to a timestamped folder
    /// that the kubelet swaps for another; the files' own links never change.
    #[cfg(unix)]
    #[test]
    fn a_config_map_volumes_data_swap_is_read() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        std::fs::create_dir(at("..v1")).unwrap();
        std::fs::write(at("..v1/web.yaml"), ingress("web", "v1.example")).unwrap();
        symlink("..v1", at("..data")).unwrap();
        symlink("..data/web.yaml", at("web.yaml")).unwrap();
        let mut folder = Folder::new(&[dir.path().to_path_buf()]);
        assert!(hosts_of(&folder.scan()).iter().all(|h| h == "v1.example"));

        std::fs::create_dir(at("..v2")).unwrap();
        std::fs::write(at("..v2/web.yaml"), ingress("web", "v2.example")).unwrap();
        symlink("..v2", at("..data_tmp")).unwrap();
        std::fs::rename(at("..data_tmp"), at("..data")).unwrap();
        std::fs::remove_dir_all(at("..v1")).unwrap();
        // What inotify names: the new folder, the link's rename, the old folder.
        let swapped = folder.update(&["..v2", "..data_tmp", "..data", "..v1"].map(at));
        let hosts = hosts_of(&swapped);
        assert!(
            !hosts.is_empty() && hosts.iter().all(|h| h == "v2.example"),
            "{hosts:?}"
        );
        let fresh = Folder::new(&[dir.path().to_path_buf()]).scan();
        assert_eq!(hosts, hosts_of(&fresh), "as a fresh scan reads it");
    }

    #[test]
    fn a_path_outside_the_folders_or_a_folder_never_scanned_is_a_full_scan() {
        let (dir, mut folder) = scanned_abc();
        let outside = dir.path().parent().unwrap().join("elsewhere.yaml");
        let hosts = hosts_of(&folder.update(&[outside]));
        assert_eq!(hosts, ["a.example", "b.example", "c.example", "u.example"]);
        let mut fresh = Folder::new(&[dir.path().to_path_buf()]);
        let first = fresh.update(&[dir.path().join("a.yaml")]);
        assert_eq!(hosts_of(&first), hosts, "the first read lists the folders");
    }

    #[test]
    fn notify_paths_are_keyed_under_the_folder_as_given() {
        let root = Root {
            given: PathBuf::from("manifests"),
            absolute: PathBuf::from("/srv/manifests"),
        };
        let key = |path: &str| root.key_of(Path::new(path));
        assert_eq!(
            key("/srv/manifests/a/b.yaml"),
            Some(PathBuf::from("manifests/a/b.yaml"))
        );
        assert_eq!(key("manifests/b.yaml"), Some(PathBuf::from("manifests/b.yaml")));
        assert_eq!(key("/srv/manifests"), None, "the folder itself");
        assert_eq!(key("/srv/other/b.yaml"), None);
    }

    #[test]
    fn an_empty_folder_is_an_empty_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let snapshot = Folder::new(&[dir.path().to_path_buf()]).scan();
        assert!(snapshot.objects.ingresses.is_empty() && snapshot.errors.is_empty());
    }
}
