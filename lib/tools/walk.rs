//! The directory walk shared by `glob` and `grep`, on directory handles.
//!
//! Every directory is listed through a descriptor that was opened beneath its parent's
//! descriptor with `O_DIRECTORY | O_NOFOLLOW` (the session's directory itself too), never by
//! path: a directory swapped for a symlink while the walk runs is refused when the walk gets
//! to it (counted as changed), and one swapped after it was opened is still listed as the
//! directory it was. So no name from outside the search directory can show up. Symlinks are
//! listed as entries and never followed.
//!
//! The rules are ripgrep's, as the `ignore` crate's walker applied them (`hidden(false)`,
//! `require_git(false)`): `.ignore`, then `.gitignore`, then `.git/info/exclude` (nearest
//! directory first within each), then the global git excludes; a directory that matches is
//! not entered; `.git` itself is never listed. Ignore files inside the session's directory are
//! read through the same handles, without following links and only when they are regular
//! files (a FIFO named `.gitignore` cannot hang the walk); those of the directories above it
//! are the user's own and are read by path, as git reads them.

use std::ffi::{CStr, OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

use super::beneath::{names, open_dir_at, openat, Beneath};

/// What a listed entry is. Directories are entered, not listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Link,
    /// A FIFO, socket or device.
    Other,
}

/// One entry the walk found, relative to the search directory.
#[derive(Debug)]
pub(crate) struct Listed {
    pub(crate) rel: PathBuf,
    pub(crate) kind: Kind,
}

/// What a walk found, in no particular order.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    pub(crate) entries: Vec<Listed>,
    /// Directories (and entries) that could not be read.
    pub(crate) unreadable: usize,
    /// Directories that were replaced by a link (or a file) before the walk got to them.
    pub(crate) changed: usize,
}

/// Walk `base` (inside `root`, both canonical as `confine` returns them). An error means
/// `base` itself could not be opened beneath `root` (a link there now is `ELOOP`/`ENOTDIR`).
pub(crate) fn walk(root: &Path, base: &Path) -> io::Result<Walked> {
    walk_hooked(root, base, &mut |_| {})
}

/// The walk, calling `before_open` with each directory's path (relative to `base`) after its
/// parent was listed and before it is opened: where a test swaps it for a link.
pub(super) fn walk_hooked(
    root: &Path,
    base: &Path,
    before_open: &mut dyn FnMut(&Path),
) -> io::Result<Walked> {
    let rel = base
        .strip_prefix(root)
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut chain = None;
    for dir in root
        .ancestors()
        .skip(1)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        chain = Chain::extend(chain, Rules::by_path(dir));
    }
    let beneath = Beneath::new(root)?;
    let mut fd = beneath.root().try_clone_to_owned()?;
    let mut logical = root.to_path_buf();
    for name in names(rel)? {
        chain = Chain::extend(chain, Rules::beneath(fd.as_fd(), &logical));
        fd = open_dir_at(fd.as_fd(), name)?;
        logical.push(name);
    }
    let mut walker = Walker {
        base,
        global: Gitignore::global().0,
        found: Walked::default(),
        pending: Vec::new(),
    };
    walker.enter(fd, PathBuf::new(), chain);
    while let Some(next) = walker.pending.pop() {
        before_open(&next.rel);
        match open_dir_at(next.parent.as_fd(), &next.name) {
            Ok(fd) => walker.enter(fd, next.rel, next.chain),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
                walker.found.changed += 1
            }
            Err(_) => walker.found.unreadable += 1,
        }
    }
    Ok(walker.found)
}

/// A directory listed but not yet entered.
struct Pending {
    parent: Rc<OwnedFd>,
    name: OsString,
    rel: PathBuf,
    chain: Option<Rc<Chain>>,
}

struct Walker<'a> {
    base: &'a Path,
    global: Gitignore,
    found: Walked,
    pending: Vec<Pending>,
}

impl Walker<'_> {
    /// Read the rules of the directory `fd` (at `rel`), list it, keep what they let through.
    fn enter(&mut self, fd: OwnedFd, rel: PathBuf, chain: Option<Rc<Chain>>) {
        let logical = self.base.join(&rel);
        let chain = Chain::extend(chain, Rules::beneath(fd.as_fd(), &logical));
        let listing = match list(fd.as_fd()) {
            Ok(l) => l,
            Err(_) => {
                self.found.unreadable += 1;
                return;
            }
        };
        let fd = Rc::new(fd);
        for (name, kind) in listing {
            if name == ".git" {
                continue;
            }
            let Some(kind) = kind.or_else(|| kind_at(fd.as_fd(), &name)) else {
                self.found.unreadable += 1;
                continue;
            };
            let is_dir = kind == DirKind::Dir;
            if self.ignored(chain.as_deref(), &logical.join(&name), is_dir) {
                continue;
            }
            let child = rel.join(&name);
            match kind {
                DirKind::Dir => self.pending.push(Pending {
                    parent: fd.clone(),
                    name,
                    rel: child,
                    chain: chain.clone(),
                }),
                DirKind::Entry(kind) => self.found.entries.push(Listed { rel: child, kind }),
            }
        }
    }

    /// The `ignore` crate's precedence: `.ignore` rules (nearest directory first) decide if
    /// any matches, then `.gitignore`, then `info/exclude`, then the global excludes; a
    /// whitelist (`!pattern`) match means kept.
    fn ignored(&self, chain: Option<&Chain>, path: &Path, is_dir: bool) -> bool {
        let kinds: [fn(&Rules) -> &Gitignore; 3] =
            [|r| &r.ignore, |r| &r.gitignore, |r| &r.exclude];
        for pick in kinds {
            let mut level = chain;
            while let Some(c) = level {
                match pick(&c.rules).matched(path, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => level = c.up.as_deref(),
                }
            }
        }
        self.global.matched(path, is_dir).is_ignore()
    }
}

/// The ignore rules of one directory.
struct Rules {
    ignore: Gitignore,
    gitignore: Gitignore,
    exclude: Gitignore,
}

impl Rules {
    fn is_empty(&self) -> bool {
        self.ignore.is_empty() && self.gitignore.is_empty() && self.exclude.is_empty()
    }

    /// The rules of `dir` inside the session's directory, read through its handle.
    fn beneath(dir: BorrowedFd<'_>, logical: &Path) -> Rules {
        let read = |name: &str| read_beneath(dir, OsStr::new(name));
        let exclude = match kind_at(dir, OsStr::new(".git")) {
            Some(DirKind::Dir) => open_dir_at(dir, OsStr::new(".git"))
                .and_then(|git| open_dir_at(git.as_fd(), OsStr::new("info")))
                .ok()
                .and_then(|info| read_beneath(info.as_fd(), OsStr::new("exclude"))),
            Some(DirKind::Entry(Kind::File)) => {
                read_beneath(dir, OsStr::new(".git")).and_then(|f| worktree_exclude(&f))
            }
            _ => None,
        };
        Rules {
            ignore: rules(logical, ".ignore", read(".ignore")),
            gitignore: rules(logical, ".gitignore", read(".gitignore")),
            exclude: rules(logical, ".git/info/exclude", exclude),
        }
    }

    /// The rules of `dir`, a directory above the session's, read by path.
    fn by_path(dir: &Path) -> Rules {
        let git = dir.join(".git");
        let exclude = if git.is_dir() {
            read_path(&git.join("info/exclude"))
        } else {
            read_path(&git).and_then(|f| worktree_exclude(&f))
        };
        Rules {
            ignore: rules(dir, ".ignore", read_path(&dir.join(".ignore"))),
            gitignore: rules(dir, ".gitignore", read_path(&dir.join(".gitignore"))),
            exclude: rules(dir, ".git/info/exclude", exclude),
        }
    }
}

/// The rules of a directory and of those above it, nearest first.
struct Chain {
    rules: Rules,
    up: Option<Rc<Chain>>,
}

impl Chain {
    fn extend(up: Option<Rc<Chain>>, rules: Rules) -> Option<Rc<Chain>> {
        if rules.is_empty() {
            up
        } else {
            Some(Rc::new(Chain { rules, up }))
        }
    }
}

/// A gitignore matcher rooted at `dir` from the text of its file `name` (if any), line by
/// line as git reads it: a leading BOM dropped, lines that are not UTF-8 or not valid globs
/// skipped.
fn rules(dir: &Path, name: &str, text: Option<Vec<u8>>) -> Gitignore {
    let Some(text) = text else {
        return Gitignore::empty();
    };
    let mut b = GitignoreBuilder::new(dir);
    let from = dir.join(name);
    for (i, line) in text.split(|&c| c == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Ok(mut line) = std::str::from_utf8(line) else {
            continue;
        };
        if i == 0 {
            line = line.trim_start_matches('\u{feff}');
        }
        let _ = b.add_line(Some(from.clone()), line);
    }
    b.build().unwrap_or_else(|_| Gitignore::empty())
}

/// The `info/exclude` of the repository a `.git` file (`gitdir: …`, a linked worktree) points
/// to: git's own files, read by path.
fn worktree_exclude(dot_git: &[u8]) -> Option<Vec<u8>> {
    let first = dot_git.split(|&c| c == b'\n').next()?;
    let gitdir = PathBuf::from(OsStr::from_bytes(first.strip_prefix(b"gitdir: ")?));
    let common = read_path(&gitdir.join("commondir"))?;
    let common = OsStr::from_bytes(common.split(|&c| c == b'\n').next()?);
    let common = if common.as_bytes().starts_with(b".") {
        gitdir.join(common)
    } else {
        PathBuf::from(common)
    };
    read_path(&common.join("info/exclude"))
}

/// The contents of the regular file `name` in `dir`, not following a link and without
/// waiting on a FIFO.
fn read_beneath(dir: BorrowedFd<'_>, name: &OsStr) -> Option<Vec<u8>> {
    let fd = openat(dir, name, libc::O_RDONLY | libc::O_NONBLOCK, 0).ok()?;
    read_regular(File::from(fd))
}

/// The contents of the regular file at `path`, without waiting on a FIFO.
fn read_path(path: &Path) -> Option<Vec<u8>> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    read_regular(f)
}

fn read_regular(mut f: File) -> Option<Vec<u8>> {
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = Vec::new();
    f.read_to_end(&mut text).ok()?;
    Some(text)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DirKind {
    Dir,
    Entry(Kind),
}

fn kind_of_mode(mode: libc::mode_t) -> DirKind {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => DirKind::Dir,
        libc::S_IFREG => DirKind::Entry(Kind::File),
        libc::S_IFLNK => DirKind::Entry(Kind::Link),
        _ => DirKind::Entry(Kind::Other),
    }
}

/// What `name` in `dir` is, not following a link; `None` if it is gone.
fn kind_at(dir: BorrowedFd<'_>, name: &OsStr) -> Option<DirKind> {
    let c = std::ffi::CString::new(name.as_bytes()).ok()?;
    // SAFETY: zeroed is a valid `stat`; fstatat fills it or fails, and the result is checked.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a descriptor we borrow, a NUL-terminated name and a `stat` to fill.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    (r == 0).then(|| kind_of_mode(st.st_mode))
}

/// The names in the directory `dir` (without `.` and `..`), each with its type when the file
/// system reports one.
fn list(dir: BorrowedFd<'_>) -> io::Result<Vec<(OsString, Option<DirKind>)>> {
    // fdopendir takes the descriptor it is given, and closedir closes it: give it a copy.
    let copy = dir.try_clone_to_owned()?;
    // SAFETY: a valid descriptor we own; on success the stream owns it.
    let stream = unsafe { libc::fdopendir(copy.as_raw_fd()) };
    if stream.is_null() {
        return Err(io::Error::last_os_error());
    }
    std::mem::forget(copy);
    let stream = DirStream(stream);
    // The copy shares the file offset of `dir`: start from the beginning whoever read it last.
    // SAFETY: a valid stream.
    unsafe { libc::rewinddir(stream.0) };
    let mut out = Vec::new();
    loop {
        // SAFETY: a valid stream, read from this thread only; errno tells the end from an
        // error.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: a valid stream, read from this thread only.
        let ent = unsafe { libc::readdir(stream.0) };
        if ent.is_null() {
            let e = io::Error::last_os_error();
            if e.raw_os_error().unwrap_or(0) != 0 {
                return Err(e);
            }
            break;
        }
        // SAFETY: readdir returned a valid entry, valid until the next readdir on the stream.
        let (name, d_type) = unsafe {
            (
                CStr::from_ptr((*ent).d_name.as_ptr()).to_bytes().to_vec(),
                (*ent).d_type,
            )
        };
        if name == b"." || name == b".." {
            continue;
        }
        let kind = match d_type {
            libc::DT_DIR => Some(DirKind::Dir),
            libc::DT_REG => Some(DirKind::Entry(Kind::File)),
            libc::DT_LNK => Some(DirKind::Entry(Kind::Link)),
            libc::DT_UNKNOWN => None,
            _ => Some(DirKind::Entry(Kind::Other)),
        };
        out.push((OsString::from_vec(name), kind));
    }
    Ok(out)
}

/// An open directory stream, closed (with its descriptor) on drop.
struct DirStream(*mut libc::DIR);

impl Drop for DirStream {
    fn drop(&mut self) {
        // SAFETY: a stream from fdopendir, closed once.
        unsafe { libc::closedir(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    fn names_of(w: &Walked) -> Vec<String> {
        let mut v: Vec<String> = w
            .entries
            .iter()
            .map(|e| e.rel.display().to_string())
            .collect();
        v.sort();
        v
    }

    /// `d` is listed as a directory, then swapped for a link to a directory outside just
    /// before the walk opens it: what the `ignore` crate's walk by path showed as `d/…`.
    #[test]
    fn a_directory_swapped_for_a_link_before_it_is_opened_shows_nothing_from_outside() {
        let top = tempfile::tempdir().unwrap();
        let base = top.path().canonicalize().unwrap();
        let (cwd, outside) = (base.join("cwd"), base.join("outside"));
        fs::create_dir_all(cwd.join("d")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret-name.txt"), "").unwrap();
        fs::write(cwd.join("d/inside.txt"), "").unwrap();
        fs::write(cwd.join("top.txt"), "").unwrap();
        let mut swapped = 0;
        let w = walk_hooked(&cwd, &cwd, &mut |rel| {
            if rel == Path::new("d") {
                fs::rename(cwd.join("d"), cwd.join("d.real")).unwrap();
                symlink(&outside, cwd.join("d")).unwrap();
                swapped += 1;
            }
        })
        .unwrap();
        assert_eq!(swapped, 1, "the hook ran where the swap matters");
        assert_eq!(names_of(&w), ["top.txt"]);
        assert_eq!(w.changed, 1);
        // Swapped back, the walk sees the directory again.
        fs::remove_file(cwd.join("d")).unwrap();
        fs::rename(cwd.join("d.real"), cwd.join("d")).unwrap();
        let w = walk(&cwd, &cwd).unwrap();
        assert_eq!(names_of(&w), ["d/inside.txt", "top.txt"]);
    }

    /// Once opened, a directory is listed through its handle: swapping its name for a link
    /// while its own subdirectory waits to be opened changes nothing.
    #[test]
    fn a_directory_opened_before_the_swap_is_listed_as_it_was() {
        let top = tempfile::tempdir().unwrap();
        let base = top.path().canonicalize().unwrap();
        let (cwd, outside) = (base.join("cwd"), base.join("outside"));
        fs::create_dir_all(cwd.join("d/e")).unwrap();
        fs::create_dir_all(outside.join("e")).unwrap();
        fs::write(outside.join("e/secret-name.txt"), "").unwrap();
        fs::write(cwd.join("d/e/inside.txt"), "").unwrap();
        let w = walk_hooked(&cwd, &cwd, &mut |rel| {
            if rel == Path::new("d/e") {
                fs::rename(cwd.join("d"), cwd.join("d.real")).unwrap();
                symlink(&outside, cwd.join("d")).unwrap();
            }
        })
        .unwrap();
        assert_eq!(names_of(&w), ["d/e/inside.txt"]);
    }

    #[test]
    fn the_search_directory_itself_must_not_be_a_link() {
        let top = tempfile::tempdir().unwrap();
        let base = top.path().canonicalize().unwrap();
        let (cwd, outside) = (base.join("cwd"), base.join("outside"));
        fs::create_dir_all(&cwd).unwrap();
        fs::create_dir_all(&outside).unwrap();
        symlink(&outside, cwd.join("d")).unwrap();
        let e = walk(&cwd, &cwd.join("d")).unwrap_err();
        assert!(
            matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)),
            "{e}"
        );
    }

    #[test]
    fn ignore_rules_keep_the_ignore_crates_precedence() {
        let top = tempfile::tempdir().unwrap();
        let cwd = top.path().canonicalize().unwrap();
        for f in [
            "keep.rs",
            "gen.rs",
            "sub/gen.rs",
            "sub/kept.log",
            "sub/drop.log",
            "ex.tmp",
            "ign/x.rs",
            "a/b/c.rs",
            ".hidden",
            ".git/config",
        ] {
            let p = cwd.join(f);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, "").unwrap();
        }
        fs::create_dir_all(cwd.join(".git/info")).unwrap();
        fs::write(cwd.join(".git/info/exclude"), "*.tmp\n").unwrap();
        fs::write(cwd.join(".gitignore"), "gen.rs\n*.log\nign/\n").unwrap();
        // A nearer whitelist wins over the parent's rule; .ignore wins over .gitignore.
        fs::write(cwd.join("sub/.gitignore"), "!kept.log\n").unwrap();
        fs::write(cwd.join(".ignore"), "!gen.rs\n").unwrap();
        let w = walk(&cwd, &cwd).unwrap();
        assert_eq!(
            names_of(&w),
            [
                ".gitignore",
                ".hidden",
                ".ignore",
                "a/b/c.rs",
                "gen.rs",
                "keep.rs",
                "sub/.gitignore",
                "sub/gen.rs",
                "sub/kept.log"
            ]
        );
        // Walking a subdirectory still applies the rules of the directories above it.
        let w = walk(&cwd, &cwd.join("sub")).unwrap();
        assert_eq!(names_of(&w), [".gitignore", "gen.rs", "kept.log"]);
    }

    #[test]
    fn a_fifo_or_link_as_an_ignore_file_is_not_read() {
        let top = tempfile::tempdir().unwrap();
        let base = top.path().canonicalize().unwrap();
        let cwd = base.join("cwd");
        fs::create_dir_all(cwd.join("sub")).unwrap();
        fs::write(cwd.join("sub/a.rs"), "").unwrap();
        fs::write(base.join("rules"), "a.rs\n").unwrap();
        let fifo = std::ffi::CString::new(cwd.join(".gitignore").as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        symlink(base.join("rules"), cwd.join("sub/.ignore")).unwrap();
        let w = walk(&cwd, &cwd).unwrap();
        assert_eq!(names_of(&w), [".gitignore", "sub/.ignore", "sub/a.rs"]);
        let kinds: Vec<Kind> = {
            let mut e: Vec<&Listed> = w.entries.iter().collect();
            e.sort_by(|a, b| a.rel.cmp(&b.rel));
            e.iter().map(|l| l.kind).collect()
        };
        assert_eq!(kinds, [Kind::Other, Kind::Link, Kind::File]);
    }
}
