//! The SQLite store: the only module that writes SQL. It owns the schema and its migrations,
//! sessions and their lineage, the chunk log, the queued-input table and the full-text index.

mod chunks;
mod imports;
mod queue;
mod rooms;
mod run;
mod schema;
mod sessions;
mod spawned;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::paths::{self, Home};

pub use chunks::{AppendTarget, Page, SearchHit, TypeCount, Usage};
pub use imports::{ImportPlan, ImportSource, Imported};
pub use queue::Queued;
pub use rooms::Activity;
pub use run::{Claim, TurnEnd};
pub use sessions::{NewSession, Session, SessionKind, SessionStatus};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Home(#[from] paths::HomeError),
    #[error("cannot open the store {}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{} is not an ag store (not an SQLite database)", path.display())]
    NotADatabase { path: PathBuf },
    #[error("the store {} is read-only", path.display())]
    ReadOnly { path: PathBuf },
    #[error(
        "the store {} was written by a newer ag (schema version {found}; this build knows up to {known})",
        path.display()
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("no session matches {0:?}")]
    SessionNotFound(String),
    #[error("{reference:?} matches {} sessions", candidates.len())]
    Ambiguous {
        reference: String,
        candidates: Vec<(String, String)>,
    },
    #[error("session {id} has forks ({}); remove them first or pass --cascade", forks.join(", "))]
    HasForks { id: String, forks: Vec<String> },
    #[error("{0}")]
    Invalid(String),
    /// A chunk of an append batch was refused; `index` is its 0-based position in the batch.
    #[error("chunk {}: {message}", index + 1)]
    BadChunk { index: usize, message: String },
    #[error("nothing to append")]
    EmptyBatch,
    #[error("the store is busy (another process holds its write lock)")]
    Busy,
    #[error("database error")]
    Sql(#[source] rusqlite::Error),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy,
            _ => StoreError::Sql(e),
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// An open store. Cheap to open; each command opens one.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Open (creating and migrating when needed) the store in `home`.
    pub fn open(home: &Home) -> Result<Store> {
        home.ensure()?;
        Store::open_path(&home.db_path())
    }

    pub fn open_path(path: &Path) -> Result<Store> {
        // Create the file ourselves so it is private from its first byte; SQLite gives its
        // -wal and -shm files the database file's mode.
        if !path.exists() {
            if let Err(e) = paths::open_private_append(path) {
                return Err(classify_open(
                    path,
                    rusqlite::Error::SqliteFailure(
                        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                        Some(e.to_string()),
                    ),
                ));
            }
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| classify_open(path, e))?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.configure().map_err(|e| classify_open(path, e))?;
        schema::migrate(&store.conn, path)?;
        for suffix in ["", "-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            let _ = paths::make_private(Path::new(&p));
        }
        Ok(store)
    }

    fn configure(&self) -> rusqlite::Result<()> {
        self.conn.busy_timeout(Duration::from_secs(10))?;
        // Switching to WAL needs a moment of exclusivity: on a brand-new store several
        // processes may race here, so retry instead of failing the first invocation.
        let mut tries = 0;
        loop {
            match self
                .conn
                .query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            {
                Ok(_) => break,
                Err(e)
                    if tries < 50
                        && matches!(
                            e.sqlite_error_code(),
                            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
                        ) =>
                {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e),
            }
        }
        self.conn.execute_batch(
            "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; PRAGMA temp_store = MEMORY; \
             PRAGMA cache_size = -32768;",
        )?;
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Map a write failure to what the reader can act on.
    fn classify(&self, e: rusqlite::Error) -> StoreError {
        classify_open(&self.path, e)
    }
}

fn classify_open(path: &Path, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => StoreError::NotADatabase {
            path: path.to_path_buf(),
        },
        Some(ErrorCode::ReadOnly) => StoreError::ReadOnly {
            path: path.to_path_buf(),
        },
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy,
        _ => StoreError::Open {
            path: path.to_path_buf(),
            source: e,
        },
    }
}
