//! The private temporary directory of one `bash` call (`$TMPDIR/ag-bash-ID`, 0700), and the
//! sweep that removes the ones whose owner died.
//!
//! A call removes its directory when it ends, but a `kill -9` of `ag-prompt` ends it with no
//! chance to. So the directory is locked (`flock`) for as long as it is in use: by the
//! `ag-prompt` that made it and by the command's init, which inherits the descriptor. A
//! directory nobody holds the lock on is left over from a process that died, and the next
//! call's sweep removes it. A lock rather than a recorded pid: a pid means nothing in another
//! PID namespace (a nested `ag-prompt` in a sandbox), and a lock cannot be mistaken.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, SystemTime};

const PREFIX: &str = "ag-bash-";

/// A directory still being set up (made, not yet locked) has this suffix; the sweep leaves it
/// alone unless it is older than [`SETUP_GRACE`].
const NEW: &str = ".new";
const SETUP_GRACE: Duration = Duration::from_secs(60);

/// A call's directory and the lock that says it is in use.
pub struct PrivateTmp {
    pub path: PathBuf,
    /// Held until the call ends (and by the init, which inherits it).
    pub lock: File,
}

/// [`sweep`] this process's temp directory, once a process: at the start of a turn, and
/// before the first call makes its own directory.
pub fn sweep_once() {
    static SWEEP: Once = Once::new();
    SWEEP.call_once(|| sweep(&std::env::temp_dir()));
}

/// Make, lock and name a new directory under `base`.
pub fn create(base: &Path) -> io::Result<PrivateTmp> {
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
pub fn sweep(base: &Path) {
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
        sweep(base.path());
        assert!(live.path.is_dir(), "a directory in use was removed");
        assert!(!dead_path.exists(), "a dead owner's directory was left");
        assert!(unrelated.is_dir());
        // One being set up (not locked yet) is left alone while it is young.
        let young = base.path().join(format!("{PREFIX}x{NEW}"));
        std::fs::create_dir(&young).unwrap();
        sweep(base.path());
        assert!(young.is_dir());
    }
}
