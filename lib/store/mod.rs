//! The SQLite store: the only module that writes SQL, and the only one that sees the
//! connection. `schema` (migrations), `sessions` (rows, listing, titles), `lineage` (a
//! view across fork sources), `forks` (creating and removing), `chunks` (the log, search,
//! summaries), `queue` (queued input), `recall` (full-text matches in one view), `run` (who runs a session, turn ends), `spawned`
//! (children of `ag-summon`), `rooms` (room cursors and presence), `imports` (what was imported
//! from where), `context` (learned windows, compactions, the context view), `refs` (what a
//! person types to name a session: handles, prefixes, titles, `last`). Every write
//! transaction goes through [`Store::write`].

mod chunks;
mod context;
mod fold;
mod forks;
mod fts;
mod imports;
mod lineage;
mod queue;
mod recall;
mod refs;
mod rooms;
mod run;
mod schema;
mod sessions;
mod spawned;
mod stats;
mod usage;
#[cfg(test)]
pub(crate) mod writes;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, Transaction, TransactionBehavior};

use crate::paths::{self, Home};

pub use chunks::SearchSort;
pub(crate) use chunks::{AppendTarget, Page, SearchHit, TypeCount, UsageTotals};
pub(crate) use imports::{ImportPlan, ImportSource, Imported};
pub(crate) use lineage::RawChunk;
pub(crate) use recall::RecallHit;
pub(crate) use refs::{Candidate, Scope};
pub(crate) use run::{Lease, Leased, TurnEnd};
pub(crate) use sessions::{Listing, NewSession, SessionStatus};
pub use sessions::{Session, SessionKind};
pub(crate) use usage::EndedTurn;

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
    #[error("the disk holding {} is full", path.display())]
    DiskFull { path: PathBuf },
    #[error("the store {} is damaged", path.display())]
    Damaged {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
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
    /// Another run created the session of that name in the same directory just now.
    #[error("a session named {0:?} was created here at the same moment")]
    NameTaken(String),
    #[error("{reference:?} matches {} sessions", candidates.len())]
    Ambiguous {
        reference: String,
        candidates: Vec<Candidate>,
    },
    /// `last` (or `-c`) found no chat session in this directory; `nearest` are the sessions
    /// the person may have meant.
    #[error("no chat session in {cwd} yet")]
    NoLast {
        cwd: String,
        nearest: Vec<Candidate>,
        /// Only the calling shell's sessions counted (no terminal).
        own_only: bool,
    },
    #[error("session {session} has no turn {turn:?}")]
    TurnNotFound { session: String, turn: String },
    #[error("a session with id {0} already exists")]
    SessionExists(String),
    #[error("session {id} has forks ({}); remove them first or pass --cascade", forks.join(", "))]
    HasForks { id: String, forks: Vec<String> },
    #[error("session {id} is running (pid {owner} is running a turn); nothing was removed")]
    Running { id: String, owner: i64 },
    #[error("{0}")]
    Invalid(String),
    #[error("the settings of session {session} are damaged ({message}); nothing was run with other ones")]
    BadSettings { session: String, message: String },
    /// A stored chunk whose row does not decode (edited behind the store's back, or damaged).
    #[error("the stored chunk {id} is damaged: {message}")]
    DamagedChunk { id: String, message: String },
    /// A chunk of an append batch was refused; `index` is its 0-based position in the batch.
    #[error("chunk {}: {message}", index + 1)]
    BadChunk { index: usize, message: String },
    #[error("nothing to append")]
    EmptyBatch,
    #[error("the store is busy (another process holds its write lock)")]
    Busy,
    /// Chunks written since the last search could not be indexed: a search now would miss
    /// them, so it is not made.
    #[error("cannot search: the search index could not be brought up to date")]
    SearchIndex(#[source] Box<StoreError>),
    #[error("database error")]
    Sql(#[source] rusqlite::Error),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        if let rusqlite::Error::FromSqlConversionFailure(_, _, cause) = &e {
            if let Some(d) = cause.downcast_ref::<chunks::Damaged>() {
                return StoreError::DamagedChunk {
                    id: d.id.clone(),
                    message: d.message.clone(),
                };
            }
        }
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy,
            _ => StoreError::Sql(e),
        }
    }
}

pub(crate) type Result<T, E = StoreError> = std::result::Result<T, E>;

/// An open store. Cheap to open; each command opens one.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// What `last` means for this process (its directory, `AG_SESSION`, `--any`, its shell).
    scope: Scope,
    /// Called once a session stops holding what it held (see [`Store::on_ended`]).
    ended: Option<Ended>,
}

/// What runs when a session of this store is removed or ends failed, cancelled or
/// interrupted (a dead process reaped included): the room code ends its claims on rooms that
/// other machines share, which cannot see this store.
pub(crate) type Ended = std::sync::Arc<dyn Fn(&Session) + Send + Sync>;

impl Store {
    /// Open (creating and migrating when needed) the store in `home`.
    pub fn open(home: &Home) -> Result<Store> {
        home.ensure()?;
        Store::open_path(&home.db_path())
    }

    /// An empty store in memory: what a reading command sees where no store was made yet,
    /// without making one.
    pub(crate) fn open_empty(home: &Home) -> Result<Store> {
        let path = home.db_path();
        let conn = Connection::open_in_memory().map_err(|e| classify_open(&path, e))?;
        let store = Store {
            conn,
            path,
            scope: Scope::default(),
            ended: None,
        };
        schema::migrate(&store.conn, &store.path)?;
        Ok(store)
    }

    /// Open the store at `path`; on a full disk, where SQLite cannot create its WAL index,
    /// open it read-only instead, so reading commands still work (a write then says the disk
    /// is full).
    pub fn open_path(path: &Path) -> Result<Store> {
        match Store::open_writable(path) {
            Err(full @ StoreError::DiskFull { .. }) => Store::open_read_only(path).ok_or(full),
            r => r,
        }
    }

    /// The read-only fallback of [`Store::open_path`]: through the existing WAL index when
    /// there is one, else as an immutable file when no WAL content is waiting (the last
    /// writer checkpointed it), and only when the schema needs no migration.
    fn open_read_only(path: &Path) -> Option<Store> {
        let with = |suffix: &str| {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            PathBuf::from(p)
        };
        let wal_len = std::fs::metadata(with("-wal")).map_or(0, |m| m.len());
        let mut uri = String::from("file:");
        for c in path.to_str()?.chars() {
            match c {
                '?' | '#' | '%' => uri.push_str(&format!("%{:02X}", c as u32)),
                c => uri.push(c),
            }
        }
        let mut tries = Vec::new();
        if with("-shm").exists() {
            tries.push("mode=ro");
        }
        if wal_len == 0 {
            tries.push("immutable=1");
        }
        tries.into_iter().find_map(|query| {
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            let conn = Connection::open_with_flags(format!("{uri}?{query}"), flags).ok()?;
            conn.busy_timeout(Duration::from_secs(10)).ok()?;
            let version: i64 = conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .ok()?;
            (version == schema::VERSION).then(|| Store {
                conn,
                path: path.to_path_buf(),
                scope: Scope::default(),
                ended: None,
            })
        })
    }

    fn open_writable(path: &Path) -> Result<Store> {
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
        // Best effort: when it fails, SQLite's own open reports why.
        let _ = paths::precreate_private(path);
        let conn = Connection::open_with_flags(path, flags).map_err(|e| classify_open(path, e))?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
            scope: Scope::default(),
            ended: None,
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

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Run `f` whenever this store sees a session stop holding: removed, or ended failed,
    /// cancelled or interrupted.
    pub(crate) fn on_ended(&mut self, f: Ended) {
        self.ended = Some(f);
    }

    /// Tell the [`Store::on_ended`] hook that `s` stopped holding.
    fn ended(&self, s: &Session) {
        if let Some(f) = &self.ended {
            f(s);
        }
    }

    /// [`Store::ended`] for a session whose new status is `status`, when that status holds
    /// nothing (failed, cancelled, interrupted).
    fn ended_as(&self, id: &str, status: &str) {
        if self.ended.is_none() || !SessionStatus::parse(status).ended() {
            return;
        }
        if let Ok(s) = self.session(id) {
            self.ended(&s);
        }
    }

    fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Run `f` as one write transaction: `BEGIN IMMEDIATE` (seqs, claims and queue moves are
    /// decided under the write lock), commit when `f` returns `Ok`, roll back otherwise. `f`
    /// may call other `Store` methods: they run on the same connection, inside the transaction.
    fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.classify(e))?;
        let out = f(&tx).map_err(|e| match e {
            StoreError::Sql(e) => self.classify_write(e),
            e => e,
        })?;
        tx.commit().map_err(|e| self.classify(e))?;
        Ok(out)
    }

    /// Map a failure to open or begin writing to what the reader can act on.
    fn classify(&self, e: rusqlite::Error) -> StoreError {
        classify_open(&self.path, e)
    }

    /// A write refused inside a transaction (a read-only store whose -wal/-shm exist, a busy
    /// lock) reads like one refused at BEGIN; any other error stays what it is.
    fn classify_write(&self, e: rusqlite::Error) -> StoreError {
        match e.sqlite_error_code() {
            Some(
                ErrorCode::ReadOnly
                | ErrorCode::NotADatabase
                | ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::DiskFull
                | ErrorCode::DatabaseCorrupt
                | ErrorCode::SystemIoFailure
                | ErrorCode::CannotOpen,
            ) => self.classify(e),
            _ => StoreError::Sql(e),
        }
    }
}

fn classify_open(path: &Path, e: rusqlite::Error) -> StoreError {
    let code = e.sqlite_error_code();
    if code == Some(ErrorCode::DatabaseCorrupt) {
        return StoreError::Damaged {
            path: path.to_path_buf(),
            source: e,
        };
    }
    let benign = matches!(
        code,
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    );
    if code == Some(ErrorCode::DiskFull) || (!benign && paths::disk_full(path)) {
        return StoreError::DiskFull {
            path: path.to_path_buf(),
        };
    }
    match code {
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
