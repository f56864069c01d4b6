//! The private temporary directory of one `bash` call (`$TMPDIR/ag-bash-ID`, 0700), and the
//! sweep that removes the ones whose owner died.
//!
//! A call removes its directory when it ends, but a `kill -9` of `ag-prompt` ends it with no
//! chance to. So the directory is locked (`flock`) for as long as it is in use: by the
//! `ag-prompt` that made it and by the command's init, which inherits the descriptor. A
//! directory nobody holds the lock on is left over from a process that died, and the next
//! call's sweep removes it. A lock rather than a recorded pid: a pid means nothing in another
//! PID namespace (a nested `ag-prompt` in a sandbox), and a lock cannot be mistaken.
//!
//! The sweep judges only directories made under this protocol, which their name says
//! (`ag-bash-v1-`). The temp dir is shared by every `ag` of the user on the machine, and a build
//! from before the lock (or one installed beside this one) makes `ag-bash-ID` directories it
//! never locks: a sweep that took every unlocked `ag-bash-*` removed those while their calls
//! ran (a sandbox setup failing on its `/dev/shm` bind, a linker losing its `TMPDIR`). Within
//! the protocol no such window exists: a directory is locked (on its own inode, under a
//! staging name the sweep leaves alone while young) before it gets its final name, a lock is
//! per open file so a sweep in the same process sees it too, and a process in another mount
//! namespace (the sandbox) sees the same directory under the same path.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, SystemTime};

/// The name of the directories of this protocol; anything else is another `ag`'s to judge.
const PREFIX: &str = "ag-bash-v1-";

/// A directory still being set up (made, not yet locked) has this suffix; the sweep leaves it
/// alone unless it is older than [`SETUP_GRACE`].
const NEW: &str = ".new";
const SETUP_GRACE: Duration = Duration::from_secs(60);

/// A call's directory and the lock that says it is in use.
pub(crate) struct PrivateTmp {
    pub(crate) path: PathBuf,
    /// Held until the call ends (and by the init, which inherits it).
    pub(crate) lock: File,
}

/// [`sweep`] this process's temp directory, once a process: at the start of a turn, and
/// before the first call makes its own directory.
pub(crate) fn sweep_once() {
    static SWEEP: Once = Once::new();
    SWEEP.call_once(|| sweep(&std::env::temp_dir()));
}

/// Make, lock and name a new directory under `base`.
pub(crate) fn create(base: &Path) -> io::Result<PrivateTmp> {
    let path = base.join(format!("{PREFIX}{}", crate::ids::new_id()));
    let staging = path.with_extension(&NEW[1..]);
    crate::paths::create_private_dir(&staging)?;
    let lock = File::open(&staging).and_then(|f| f.lock().map(|()| f));
    let lock = match lock.and_then(|f| std::fs::rename(&staging, &path).map(|()| f)) {
        Ok(f) => f,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    Ok(PrivateTmp { path, lock })
}

/// Remove every `ag-bash-*` directory under `base` that this user owns and nobody holds the
/// lock on. Best effort: what cannot be read or removed is left.
pub(crate) fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        if stale(&path, name.ends_with(NEW), me) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

fn stale(path: &Path, setting_up: bool, me: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.is_dir() || meta.uid() != me {
        return false;
    }
    if setting_up {
        let age = meta
            .modified()
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok());
        if age.is_none_or(|a| a < SETUP_GRACE) {
            return false;
        }
    }
    // Taking the lock proves nobody holds it; it is let go when `f` drops.
    File::open(path).is_ok_and(|f| f.try_lock().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_in_use_survives_the_sweep_and_a_dead_owners_does_not() {
        let base = tempfile::tempdir().unwrap();
        let live = create(base.path()).unwrap();
        let dead = create(base.path()).unwrap();
        std::fs::write(dead.path.join("junk"), "x").unwrap();
        let dead_path = dead.path.clone();
        drop(dead.lock);
        let unrelated = base.path().join("other");
        std::fs::create_dir(&unrelated).unwrap();
        // What a build without the lock makes, in use or not: not this sweep's to judge.
        let unlocked = base
            .path()
            .join(format!("ag-bash-{}", crate::ids::new_id()));
        std::fs::create_dir(&unlocked).unwrap();
        sweep(base.path());
        assert!(live.path.is_dir(), "a directory in use was removed");
        assert!(!dead_path.exists(), "a dead owner's directory was left");
        assert!(unrelated.is_dir());
        assert!(
            unlocked.is_dir(),
            "another protocol's directory was removed"
        );
        // One being set up (not locked yet) is left alone while it is young.
        let young = base.path().join(format!("{PREFIX}x{NEW}"));
        std::fs::create_dir(&young).unwrap();
        sweep(base.path());
        assert!(young.is_dir());
    }

    /// The race the sweep must never lose: other processes (threads here: a lock is per open
    /// file, so a sweep in this process sees another thread's lock as it sees another
    /// process's) keep making, using and removing directories while sweeps run without
    /// pause. A directory removed while its maker holds it would show as a failed `create`
    /// (its staging directory swept between `mkdir` and the lock) or a missing file.
    #[test]
    fn sweeps_running_alongside_many_creations_never_take_a_directory_in_use() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let base = tempfile::tempdir().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let sweepers: Vec<_> = (0..2)
            .map(|_| {
                let (stop, base) = (stop.clone(), base.path().to_path_buf());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        sweep(&base);
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        let makers: Vec<_> = (0..4)
            .map(|_| {
                let base = base.path().to_path_buf();
                std::thread::spawn(move || {
                    for i in 0..40 {
                        let t = create(&base).expect("create lost its directory to a sweep");
                        let f = t.path.join("shm");
                        crate::paths::create_private_dir(&f).unwrap();
                        std::fs::write(t.path.join("f"), i.to_string()).unwrap();
                        std::thread::yield_now();
                        assert!(f.is_dir(), "a directory in use was swept");
                        assert_eq!(
                            std::fs::read_to_string(t.path.join("f")).unwrap(),
                            i.to_string()
                        );
                        std::fs::remove_dir_all(&t.path).unwrap();
                    }
                })
            })
            .collect();
        for m in makers {
            m.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        let sweeps: u64 = sweepers.into_iter().map(|s| s.join().unwrap()).sum();
        assert!(sweeps > 0);
        assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
    }
}
