//! The search of a workspace for `.git` entries (its own and nested repositories'), which
//! [`super::protect`] runs before and after every sandboxed call, and what keeps it cheap.
//!
//! The search reads each directory within [`MAX_NESTED_DEPTH`] of the top (at most
//! [`MAX_NESTED_DIRS`] of them). Reading them all twice a call cost more than the rest of the
//! sandbox's bookkeeping together, and its answer almost never changes: so this process keeps
//! the last answer for a workspace with an inotify watch on every directory the search read.
//! The kernel queues an event in the very system call that adds, removes or renames an entry
//! of a watched directory, whichever process or mount namespace makes it; so once a command's
//! processes are gone, every change they made to those directories is in the queue. The next
//! search drains the queue and reads the directories again only if an event could change its
//! answer: an entry named `.git`, a directory appearing, disappearing or moving where the
//! search descends, a watched directory itself removed or moved, or a lost event (the queue
//! overflowed). Where a watch cannot be set (no inotify, the user's limits reached), nothing
//! is kept and every search reads the directories, as without the cache.

use std::ffi::OsStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How deep, and through how many directories, the workspace is searched for nested
/// repositories (a `.git` below the top): `.git`, `a/.git` and `a/b/.git`. The search is
/// kept to what a project's top holds; folders of dependencies and build output are not
/// searched.
pub(super) const MAX_NESTED_DEPTH: usize = 3;
pub(super) const MAX_NESTED_DIRS: usize = 256;
const NOT_SEARCHED: &[&str] = &[
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    ".cache",
    "dist",
    "build",
];

/// What a watch reports: entries added, removed or renamed, and the directory itself going.
const WATCH_MASK: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR;

/// How many workspaces' answers a process keeps (a process works in one, nearly always).
const KEPT: usize = 4;

/// A kept answer: the `.git` entries of `workspace`, and the watches that say it still holds.
struct Kept {
    workspace: PathBuf,
    found: Vec<PathBuf>,
    inotify: OwnedFd,
    /// The depth of the directory of each watch descriptor.
    depths: Vec<(i32, usize)>,
}

static KEPT_ANSWERS: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

/// The `.git` entries of `workspace`, at its top and below (not inside a git directory), as
/// deep and as many as the limits allow, in a stable order: the kept answer while nothing
/// that could change it happened, else a new search.
pub(super) fn git_entries(workspace: &Path) -> Vec<PathBuf> {
    let mut kept = KEPT_ANSWERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = kept.iter().position(|k| k.workspace == workspace) {
        let k = kept.remove(i);
        if !k.changed() {
            let found = k.found.clone();
            kept.push(k);
            return found;
        }
    }
    let (found, watched) = search(workspace);
    if let Some((inotify, depths)) = watched {
        if kept.len() >= KEPT {
            kept.remove(0);
        }
        kept.push(Kept {
            workspace: workspace.to_path_buf(),
            found: found.clone(),
            inotify,
            depths,
        });
    }
    found
}

/// A new inotify instance (non-blocking, close-on-exec), if the kernel and limits allow.
fn new_inotify() -> Option<OwnedFd> {
    // SAFETY: inotify_init1 takes flags only; a non-negative result is a new descriptor.
    let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
    // SAFETY: `fd` is a new descriptor owned by nobody else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

fn add_watch(inotify: &OwnedFd, dir: &Path) -> Option<i32> {
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: a live descriptor and a NUL-terminated path.
    let wd = unsafe { libc::inotify_add_watch(inotify.as_raw_fd(), path.as_ptr(), WATCH_MASK) };
    (wd >= 0).then_some(wd)
}

/// An inotify instance and the depth of the directory of each of its watch descriptors.
type Watches = (OwnedFd, Vec<(i32, usize)>);

/// Read the directories; with the watches when every directory read is watched (each watch
/// is set before its directory is read, so no change is missed in between).
fn search(workspace: &Path) -> (Vec<PathBuf>, Option<Watches>) {
    let mut inotify = new_inotify();
    let mut depths = Vec::new();
    let mut found = Vec::new();
    let mut queue = std::collections::VecDeque::from([(workspace.to_path_buf(), 0usize)]);
    let mut visited = 0;
    while let Some((dir, depth)) = queue.pop_front() {
        visited += 1;
        if visited > MAX_NESTED_DIRS {
            break;
        }
        if let Some(fd) = &inotify {
            match add_watch(fd, &dir) {
                Some(wd) => depths.push((wd, depth)),
                None => inotify = None,
            }
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Ok(t) = e.file_type() else { continue };
            if name == ".git" {
                found.push(e.path());
            } else if t.is_dir() && descends(depth, &name) {
                queue.push_back((e.path(), depth + 1));
            }
        }
    }
    found.sort();
    (found, inotify.map(|fd| (fd, depths)))
}

/// Whether the search goes into the directory `name` of a directory at `depth`.
fn descends(depth: usize, name: &OsStr) -> bool {
    depth + 1 < MAX_NESTED_DEPTH && !name.to_str().is_some_and(|n| NOT_SEARCHED.contains(&n))
}

impl Kept {
    /// Drain the queued events: whether any could change the answer (or was lost).
    fn changed(&self) -> bool {
        let mut changed = false;
        let mut buf = [0u8; 8192];
        loop {
            // SAFETY: read into a buffer of the length given.
            let n =
                unsafe { libc::read(self.inotify.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    std::io::ErrorKind::WouldBlock => return changed,
                    std::io::ErrorKind::Interrupted => continue,
                    _ => return true,
                }
            }
            if n == 0 {
                return true;
            }
            changed |= self.events_change(&buf[..n as usize]);
        }
    }

    /// Whether any event in `buf` (whole `inotify_event` records) could change the answer.
    fn events_change(&self, mut buf: &[u8]) -> bool {
        let header = std::mem::size_of::<libc::inotify_event>();
        let mut changed = false;
        while buf.len() >= header {
            let field =
                |at: usize| u32::from_ne_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
            let (wd, mask, len) = (field(0) as i32, field(4), field(12) as usize);
            let end = (header + len).min(buf.len());
            let name = &buf[header..end];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            changed |= self.event_changes(wd, mask, OsStr::from_bytes(name));
            buf = &buf[end..];
        }
        changed
    }

    fn event_changes(&self, wd: i32, mask: u32, name: &OsStr) -> bool {
        let lost_or_gone = libc::IN_Q_OVERFLOW
            | libc::IN_IGNORED
            | libc::IN_DELETE_SELF
            | libc::IN_MOVE_SELF
            | libc::IN_UNMOUNT;
        if mask & lost_or_gone != 0 || name == ".git" {
            return true;
        }
        if mask & libc::IN_ISDIR == 0 {
            return false;
        }
        match self.depths.iter().find(|(w, _)| *w == wd) {
            Some((_, depth)) => descends(*depth, name),
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_answer_follows_every_change_that_matters() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::fs::create_dir_all(ws.join("a/b/c")).unwrap();
        assert_eq!(git_entries(ws), [ws.join(".git")]);
        let (found, watched) = search(ws);
        let (inotify, depths) = watched.expect("inotify is available");
        let kept = Kept {
            workspace: ws.to_path_buf(),
            found,
            inotify,
            depths,
        };
        assert!(!kept.changed());
        // Files, and folders where the search does not descend, change nothing.
        std::fs::write(ws.join("a/b/file"), "x").unwrap();
        std::fs::create_dir(ws.join("a/b/c/d")).unwrap();
        std::fs::create_dir(ws.join("target")).unwrap();
        assert!(!kept.changed());
        std::fs::create_dir(ws.join("a/new")).unwrap();
        assert!(kept.changed(), "a folder the search goes into");
        assert!(!kept.changed(), "the queue was drained");
        std::fs::write(ws.join("a/b/.git"), "gitdir: x").unwrap();
        assert!(kept.changed(), "a .git entry");
        std::fs::remove_file(ws.join("a/b/.git")).unwrap();
        drop(kept);
        // A nested repository, a `.git` file, a folder moved in with one inside.
        std::fs::create_dir_all(ws.join("a/b/.git")).unwrap();
        assert_eq!(git_entries(ws), [ws.join(".git"), ws.join("a/b/.git")]);
        std::fs::write(ws.join("a/.git"), "gitdir: ../x").unwrap();
        assert_eq!(git_entries(ws).len(), 3);
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside.path().join("m/.git")).unwrap();
        std::fs::rename(outside.path().join("m"), ws.join("m")).unwrap();
        assert!(git_entries(ws).contains(&ws.join("m/.git")));
        // A watched folder replaced by another holding a repository.
        std::fs::rename(ws.join("a"), ws.join("gone")).unwrap();
        assert!(!git_entries(ws).contains(&ws.join("a/b/.git")));
        assert!(git_entries(ws).contains(&ws.join("gone/b/.git")));
        std::fs::remove_dir_all(ws.join("m")).unwrap();
        assert_eq!(
            git_entries(ws),
            [
                ws.join(".git"),
                ws.join("gone/.git"),
                ws.join("gone/b/.git")
            ]
        );
    }
}
