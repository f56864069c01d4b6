//! Where things live: the home directory (`--home` > `AG_HOME` > `$XDG_DATA_HOME/ag` >
//! `~/.local/share/ag`), created private (0700), and private file creation (0600).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    #[error("no home directory: set AG_HOME or HOME")]
    NoHome,
    #[error("cannot create the home directory {}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The resolved home: `ag.db` and `rooms/` live here.
#[derive(Debug, Clone)]
pub struct Home {
    pub dir: PathBuf,
}

impl Home {
    /// Resolve the home without touching the disk.
    pub fn resolve(flag: Option<&Path>) -> Result<Home, HomeError> {
        let env = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let dir = if let Some(d) = flag {
            d.to_path_buf()
        } else if let Some(d) = env("AG_HOME") {
            d
        } else if let Some(d) = env("XDG_DATA_HOME") {
            d.join("ag")
        } else if let Some(h) = env("HOME") {
            h.join(".local/share/ag")
        } else {
            return Err(HomeError::NoHome);
        };
        Ok(Home { dir })
    }

    /// Create the home (0700) if it is missing; an existing one is left as it is.
    pub(crate) fn ensure(&self) -> Result<(), HomeError> {
        create_private_dir(&self.dir).map_err(|source| HomeError::Create {
            path: self.dir.clone(),
            source,
        })
    }

    pub(crate) fn db_path(&self) -> PathBuf {
        self.dir.join("ag.db")
    }

    pub(crate) fn rooms_dir(&self) -> PathBuf {
        self.dir.join("rooms")
    }
}

/// `mkdir -p` with mode 0700 on every directory it creates.
pub(crate) fn create_private_dir(path: &Path) -> io::Result<()> {
    if path.is_dir() {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)?;
    // DirBuilder's mode is filtered by the umask; make the leaf exact.
    fs::set_permissions(path, fs::Permissions::from_mode(0o700))
}

/// Open (creating with 0600 when missing) a file for appending. The mode is set exactly,
/// since a tight umask (0277) would otherwise leave a file its owner cannot write again.
pub(crate) fn open_private_append(path: &Path) -> io::Result<File> {
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    if f.metadata()?.permissions().mode() & 0o777 != 0o600 {
        f.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    Ok(f)
}

/// Create `path` empty with mode 0600 exactly if it does not exist, so that a file another
/// library fills (SQLite's database, whose `-wal` and `-shm` take its mode) is born private
/// and writable by its owner whatever the umask.
pub(crate) fn precreate_private(path: &Path) -> io::Result<()> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(f) => f.set_permissions(fs::Permissions::from_mode(0o600)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether the file system holding `path` (a file, or the directory it would go in) has no
/// room left for another page of data: what a failed write is blamed on when it says less.
pub(crate) fn disk_full(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let dir = match path.parent() {
        Some(d) if !path.is_dir() && !d.as_os_str().is_empty() => d,
        _ => path,
    };
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statvfs writes into the zeroed struct we own; the path is NUL-terminated.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return false;
        }
        (st.f_bavail as u64).saturating_mul(st.f_frsize as u64) < 64 * 1024
    }
}

/// Make an existing file private (used for SQLite's own files, which it creates itself).
pub(crate) fn make_private(path: &Path) -> io::Result<()> {
    match fs::metadata(path) {
        Ok(m) if m.permissions().mode() & 0o077 != 0 => {
            fs::set_permissions(path, fs::Permissions::from_mode(0o600))
        }
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}
