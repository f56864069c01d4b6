//! Opening a file beneath the session's directory without following any symlink, so that a
//! link swapped in after [`super::confine`] checked the path cannot carry the open outside.
//!
//! `confine` resolves the path once (symlinks inside the directory are allowed and resolved
//! then); what it returns has no link left in it. The open that follows is relative to a
//! descriptor of the directory and refuses every link: on Linux ≥ 5.6 one `openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`; where that call is missing
//! (an older kernel: `ENOSYS`) or filtered (a seccomp profile: `EPERM`), a walk that opens
//! each directory with `openat(O_DIRECTORY | O_NOFOLLOW)` and the file with `O_NOFOLLOW`,
//! which refuses a link at every step just the same. Creating missing directories always
//! walks (`mkdirat` has no `openat2`). The directory walk of `glob` and `grep` ([`super::walk`])
//! descends the same way, one [`open_dir_at`] per directory.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once `openat2` has been refused, so later opens go straight to the walk.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// The session's directory, held open.
pub(crate) struct Beneath {
    root: OwnedFd,
}

fn cstr(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn check(fd: libc::c_int) -> io::Result<OwnedFd> {
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        // SAFETY: a fresh descriptor from open/openat/openat2, owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

/// `openat(2)` of `name` in `dir`, always with `O_CLOEXEC | O_NOFOLLOW`.
pub(crate) fn openat(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    flags: libc::c_int,
    mode: u32,
) -> io::Result<OwnedFd> {
    let name = cstr(name)?;
    // SAFETY: a valid descriptor and NUL-terminated name; the result is checked.
    check(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            mode as libc::c_uint,
        )
    })
}

/// Open the directory `name` inside `dir`, refusing a link (`ELOOP`) and anything that is not
/// a directory (`ENOTDIR`).
pub(crate) fn open_dir_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
    openat(dir, name, libc::O_RDONLY | libc::O_DIRECTORY, 0)
}

/// The plain names of a path relative to the root; anything else (`..`, a root) is refused,
/// since `confine` never returns it.
pub(crate) fn names(rel: &Path) -> io::Result<Vec<&OsStr>> {
    rel.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(io::Error::from(io::ErrorKind::InvalidInput)),
        })
        .collect()
}

impl Beneath {
    /// Hold `root` (canonical, from `confine`) open; a link there now is refused.
    pub(crate) fn new(root: &Path) -> io::Result<Beneath> {
        let path = cstr(root.as_os_str())?;
        // SAFETY: a NUL-terminated path; the result is checked.
        let fd = check(unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            )
        })?;
        Ok(Beneath { root: fd })
    }

    /// The root's descriptor.
    pub(crate) fn root(&self) -> BorrowedFd<'_> {
        self.root.as_fd()
    }

    /// Open `rel` (relative to the root, link-free as `confine` returned it) with `flags`
    /// (`libc::O_*`; new files get `0666` less the umask), refusing any symlink on the way:
    /// a link found there is `ELOOP` (or `ENOTDIR`, `EXDEV`).
    pub(crate) fn open(&self, rel: &Path, flags: libc::c_int) -> io::Result<File> {
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            match self.openat2(rel, flags) {
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ENOSYS | libc::EPERM | libc::E2BIG)
                    ) =>
                {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                }
                r => return r,
            }
        }
        let names = names(rel)?;
        let Some((file, dirs)) = names.split_last() else {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        };
        let parent = self.walk(dirs, false)?;
        openat(parent.as_fd(), file, flags, 0o666).map(File::from)
    }

    #[cfg(target_os = "linux")]
    fn openat2(&self, rel: &Path, flags: libc::c_int) -> io::Result<File> {
        let path = cstr(rel.as_os_str())?;
        // SAFETY: all zeroes is a valid `open_how` (no flags, no mode, no resolve flags).
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (flags | libc::O_CLOEXEC | libc::O_NOFOLLOW) as u64;
        if flags & libc::O_CREAT != 0 {
            how.mode = 0o666;
        }
        how.resolve =
            libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
        // SAFETY: openat2(2) with a valid descriptor, a NUL-terminated path and an `open_how`
        // of the size passed; the result is checked.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.root.as_raw_fd(),
                path.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        check(fd as libc::c_int).map(File::from)
    }

    #[cfg(not(target_os = "linux"))]
    fn openat2(&self, _rel: &Path, _flags: libc::c_int) -> io::Result<File> {
        Err(io::Error::from_raw_os_error(libc::ENOSYS))
    }

    /// Make the directories of `rel` that are missing, each beneath the one before and none
    /// through a link.
    pub(crate) fn create_dirs(&self, rel: &Path) -> io::Result<()> {
        self.walk(&names(rel)?, true).map(drop)
    }

    /// Open the directory `dirs` names under the root, one component at a time without
    /// following links; with `create`, making the missing ones (`0777` less the umask).
    fn walk(&self, dirs: &[&OsStr], create: bool) -> io::Result<OwnedFd> {
        let mut dir = self.root.try_clone()?;
        for name in dirs {
            if create {
                let c = cstr(name)?;
                // SAFETY: a valid descriptor and NUL-terminated name; EEXIST is expected.
                let r = unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o777) };
                if r != 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EEXIST) {
                        return Err(e);
                    }
                }
            }
            dir = open_dir_at(dir.as_fd(), name)?;
        }
        Ok(dir)
    }
}

/// Whether an open failed because a link was found where `confine` saw none: the path was
/// changed under the tool.
pub(crate) fn swapped(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ELOOP | libc::EXDEV))
}

/// The tool error for a failed open of `name`: a link found where `confine` saw none means
/// the path was changed under the tool.
pub(crate) fn failure(tool: &str, name: &str, e: &io::Error) -> String {
    if swapped(e) {
        format!(
            "{name} changed while {tool} was opening it (a symbolic link appeared on the path); \
             nothing was done: file tools do not follow links swapped in after the check"
        )
    } else {
        format!("cannot {tool} {name}: {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_are_refused_at_every_step_both_ways() {
        let top = tempfile::tempdir().unwrap();
        let base = top.path().canonicalize().unwrap();
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        symlink(&outside, root.join("out")).unwrap();
        symlink(outside.join("secret"), root.join("sub/link")).unwrap();
        for fallback in [false, true] {
            NO_OPENAT2.store(fallback, Ordering::Relaxed);
            let b = Beneath::new(&root).unwrap();
            let e = b.open(Path::new("out/secret"), libc::O_RDONLY).unwrap_err();
            assert!(
                matches!(
                    e.raw_os_error(),
                    Some(libc::ELOOP | libc::ENOTDIR | libc::EXDEV)
                ),
                "{e}"
            );
            let e = b.open(Path::new("sub/link"), libc::O_RDONLY).unwrap_err();
            assert!(swapped(&e), "{fallback}: {e}");
            let e = b
                .open(Path::new("out/new"), libc::O_WRONLY | libc::O_CREAT)
                .unwrap_err();
            assert!(e.raw_os_error().is_some(), "{e}");
            assert!(b.create_dirs(Path::new("out/deeper")).is_err());
            b.create_dirs(Path::new("sub/a/b")).unwrap();
            b.open(Path::new("sub/a/b/f"), libc::O_WRONLY | libc::O_CREAT)
                .unwrap();
            assert!(root.join("sub/a/b/f").is_file());
            std::fs::remove_dir_all(root.join("sub/a")).unwrap();
        }
        NO_OPENAT2.store(false, Ordering::Relaxed);
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    }
}
