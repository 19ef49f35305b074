//! What the folder's `notify` watcher saw since the folder source last read it: the paths its events
//! named, or that only reading every folder again will do.
//!
//! The watcher's callback notes each event ([`Changes::note`]) and the source takes what was noted
//! when it reads ([`Changes::take`]), so that one edited file of ten thousand is one file read
//! again, not a listing of the folder ([`super::folder::Folder::update`]). A full rescan is due
//! for what names no file: an event without paths, the watcher's error or overflow (`Rescan`
//! flag), a folder created or removed, too many paths at once ([`MAX_PATHS`]), and a read with
//! nothing noted (at start, and `--rescan-secs`' safety net).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use notify::event::{CreateKind, RemoveKind};
use notify::EventKind;

/// Beyond this many changed paths before a read, listing the folders costs no more than looking
/// at each path: the read is a full rescan.
pub const MAX_PATHS: usize = 1024;

/// What was noted since the last [`Changes::take`].
#[derive(Debug, Default)]
struct Pending {
    paths: BTreeSet<PathBuf>,
    rescan: bool,
}

/// The changes noted by the watcher and not yet read, shared by its callback and the source.
#[derive(Debug, Clone, Default)]
pub struct Changes(Arc<Mutex<Pending>>);

impl Changes {
    /// Notes `event`; returns whether it is a change to read (creates, modifications and removals,
    /// and anything asking for a rescan; never reads, so that the source's own reads do not look
    /// like changes).
    pub fn note(&self, event: &notify::Result<notify::Event>) -> bool {
        let event = match event {
            Ok(event) => event,
            // An error of the watcher: what changed is unknown.
            Err(_) => {
                self.lock().rescan = true;
                return true;
            }
        };
        if !is_change(event) {
            return false;
        }
        let mut pending = self.lock();
        if needs_rescan(event) {
            pending.rescan = true;
        } else {
            pending.paths.extend(event.paths.iter().cloned());
        }
        if pending.paths.len() > MAX_PATHS {
            pending.rescan = true;
        }
        if pending.rescan {
            pending.paths.clear();
        }
        true
    }

    /// The paths changed since the last take, in order; `None` when every folder is to be read
    /// again (asked for, or nothing noted: a rescan without a change).
    pub fn take(&self) -> Option<Vec<PathBuf>> {
        let Pending { paths, rescan } = std::mem::take(&mut *self.lock());
        (!rescan && !paths.is_empty()).then(|| paths.into_iter().collect())
    }

    /// The pending changes; a callback that panicked while holding them left them usable.
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `event` may change what the folders hold: creates, modifications and removals, and
/// whatever asks for a rescan (an overflowed queue is `Other` with that flag).
fn is_change(event: &notify::Event) -> bool {
    let kind = matches!(
        event.kind,
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) | EventKind::Any
    );
    kind || event.need_rescan()
}

/// Whether `event` names no file to read again: no paths, a rescan asked for, or a folder created
/// or removed (its files came or went with no event of their own).
fn needs_rescan(event: &notify::Event) -> bool {
    let folder = matches!(
        event.kind,
        EventKind::Create(CreateKind::Folder) | EventKind::Remove(RemoveKind::Folder)
    );
    folder || event.need_rescan() || event.paths.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{AccessKind, DataChange, Flag, ModifyKind, RenameMode};
    use notify::Event;

    fn event(kind: EventKind, paths: &[&str]) -> notify::Result<Event> {
        let mut event = Event::new(kind);
        for path in paths {
            event = event.add_path(PathBuf::from(path));
        }
        Ok(event)
    }

    #[test]
    fn the_paths_of_edits_deletes_and_renames_are_taken_once_in_order() {
        let changes = Changes::default();
        assert!(changes.note(&event(
            EventKind::Modify(ModifyKind::Data(DataChange::Any)),
            &["/m/b.yaml"]
        )));
        assert!(changes.note(&event(EventKind::Remove(RemoveKind::File), &["/m/c.yaml"])));
        let rename = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        assert!(changes.note(&event(rename, &["/m/d.yaml", "/m/a.yaml"])));
        assert!(changes.note(&event(EventKind::Create(CreateKind::File), &["/m/b.yaml"])));
        let taken = changes.take().unwrap();
        assert_eq!(
            taken,
            ["/m/a.yaml", "/m/b.yaml", "/m/c.yaml", "/m/d.yaml"].map(PathBuf::from)
        );
        assert_eq!(changes.take(), None, "nothing noted since: a full rescan");
    }

    #[test]
    fn reads_are_not_changes() {
        let changes = Changes::default();
        let read = EventKind::Access(AccessKind::Read);
        assert!(!changes.note(&event(read, &["/m/a.yaml"])));
        assert_eq!(changes.take(), None);
    }

    #[test]
    fn folders_overflows_errors_and_pathless_events_ask_for_a_full_rescan() {
        let overflow = Ok(Event::new(EventKind::Other).set_flag(Flag::Rescan));
        let cases = [
            event(EventKind::Create(CreateKind::Folder), &["/m/new"]),
            event(EventKind::Remove(RemoveKind::Folder), &["/m/old"]),
            event(EventKind::Modify(ModifyKind::Any), &[]),
            overflow,
            Err(notify::Error::generic("queue overflow")),
        ];
        for case in cases {
            let changes = Changes::default();
            assert!(changes.note(&event(EventKind::Create(CreateKind::File), &["/m/a.yaml"])));
            assert!(changes.note(&case), "{case:?}");
            assert!(changes.note(&event(EventKind::Create(CreateKind::File), &["/m/b.yaml"])));
            assert_eq!(changes.take(), None, "{case:?}");
        }
    }

    #[test]
    fn too_many_paths_are_a_full_rescan() {
        let changes = Changes::default();
        for i in 0..=MAX_PATHS {
            changes.note(&event(EventKind::Create(CreateKind::File), &[&format!("/m/{i}.yaml")]));
        }
        assert_eq!(changes.take(), None);
    }
}
