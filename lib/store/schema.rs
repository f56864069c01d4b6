//! The schema and its forward migrations, tracked in `PRAGMA user_version`.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use super::{Result, StoreError};

/// Each entry moves the schema one version forward. Never edit a shipped entry: add one.
const MIGRATIONS: &[&str] = &[
    // 1: sessions, the chunk log, queued input, full-text index over text chunks.
    r#"
    CREATE TABLE sessions (
      id          TEXT PRIMARY KEY,
      title       TEXT NOT NULL DEFAULT '',
      kind        TEXT NOT NULL DEFAULT 'chat'
                  CHECK (kind IN ('chat', 'side', 'subagent', 'user_agent')),
      parent_id   TEXT REFERENCES sessions(id),
      fork_of     TEXT REFERENCES sessions(id),
      fork_seq    INTEGER,
      agent       TEXT,
      model       TEXT,
      cwd         TEXT,
      policy_json TEXT NOT NULL DEFAULT '{}',
      status      TEXT NOT NULL DEFAULT 'idle'
                  CHECK (status IN ('idle', 'running', 'done', 'failed', 'cancelled')),
      pid         INTEGER,
      pid_start   INTEGER,
      created_at  INTEGER NOT NULL,
      updated_at  INTEGER NOT NULL
    );
    CREATE INDEX sessions_updated ON sessions(updated_at);
    CREATE INDEX sessions_fork_of ON sessions(fork_of);
    CREATE INDEX sessions_parent ON sessions(parent_id);

    CREATE TABLE chunks (
      id         TEXT PRIMARY KEY,
      session_id TEXT NOT NULL REFERENCES sessions(id),
      seq        INTEGER NOT NULL,
      turn_id    TEXT NOT NULL,
      step       INTEGER NOT NULL,
      role       TEXT NOT NULL,
      type       TEXT NOT NULL,
      data_json  TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      UNIQUE (session_id, seq)
    );
    -- no turn index: --turn scans one session by seq, rare enough to not tax every append

    CREATE TABLE queued_input (
      id         INTEGER PRIMARY KEY AUTOINCREMENT,
      session_id TEXT NOT NULL REFERENCES sessions(id),
      text       TEXT NOT NULL,
      created_at INTEGER NOT NULL
    );
    CREATE INDEX queued_input_session ON queued_input(session_id, id);

    CREATE VIRTUAL TABLE chunks_fts USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');
    -- The index trails the log: search indexes chunks with rowid > last_rowid first.
    CREATE TABLE fts_state (id INTEGER PRIMARY KEY CHECK (id = 1), last_rowid INTEGER NOT NULL);
    INSERT INTO fts_state (id, last_rowid) VALUES (1, 0);
    "#,
    // 2: rooms: each reader's byte offset per room file (a reader is a session id, or
    // `name:NAME` for a person or script), and the lines a session held back from its context.
    r#"
    CREATE TABLE room_cursors (
      reader     TEXT NOT NULL,
      room       TEXT NOT NULL,
      offset     INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (reader, room)
    );
    CREATE TABLE room_held (
      reader     TEXT NOT NULL,
      room       TEXT NOT NULL,
      offset     INTEGER NOT NULL,
      msg_id     TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (reader, room, offset)
    );
    "#,
    // 3: where imported sessions come from (`ag-log import`): one row per imported session,
    // unique per source session, gone with its session.
    r#"
    CREATE TABLE imports (
      session_id       TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
      source           TEXT NOT NULL,
      source_id        TEXT NOT NULL,
      path             TEXT NOT NULL,
      tool_version     TEXT,
      leaf             TEXT,
      parent_source_id TEXT,
      imported_at      INTEGER NOT NULL,
      UNIQUE (source, source_id)
    );
    CREATE INDEX imports_parent ON imports(source, parent_source_id);
    "#,
    // 4: context management: windows learned from providers' "too long" errors, an index
    // that finds a session's latest compaction without reading its log, and queued requests
    // that are not prompts (a compaction asked for while the session runs).
    r#"
    CREATE TABLE model_windows (
      model          TEXT PRIMARY KEY,
      context_window INTEGER NOT NULL,
      learned_at     INTEGER NOT NULL
    );
    CREATE INDEX chunks_compactions ON chunks(session_id, seq)
      WHERE type = 'system' AND json_extract(data_json, '$.kind') = 'compaction';
    ALTER TABLE queued_input ADD COLUMN kind TEXT NOT NULL DEFAULT 'text';
    "#,
    // 5: the process group of the `bash` command a session is running (and its leader's start
    // time), so the next run can kill what a killed `ag-prompt` left behind.
    r#"
    ALTER TABLE sessions ADD COLUMN tool_pgid INTEGER;
    ALTER TABLE sessions ADD COLUMN tool_pgid_start INTEGER;
    "#,
    // 6: per-session tallies kept as the log is written (`store::stats`), so `ag-log show` does
    // not count a million chunks; filled here from the log for existing sessions.
    r#"
    CREATE TABLE chunk_counts (
      session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
      role       TEXT NOT NULL,
      type       TEXT NOT NULL,
      count      INTEGER NOT NULL,
      PRIMARY KEY (session_id, role, type)
    ) WITHOUT ROWID;
    INSERT INTO chunk_counts SELECT session_id, role, type, COUNT(*) FROM chunks
      GROUP BY session_id, role, type;
    CREATE TABLE turn_totals (
      session_id  TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
      turns       INTEGER NOT NULL,
      input       INTEGER NOT NULL,
      output      INTEGER NOT NULL,
      cache_read  INTEGER NOT NULL,
      cache_write INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO turn_totals SELECT session_id, COUNT(*),
      COALESCE(SUM(json_extract(data_json, '$.usage.input')), 0),
      COALESCE(SUM(json_extract(data_json, '$.usage.output')), 0),
      COALESCE(SUM(json_extract(data_json, '$.usage.cache_read')), 0),
      COALESCE(SUM(json_extract(data_json, '$.usage.cache_write')), 0)
      FROM chunks WHERE type = 'system' AND json_extract(data_json, '$.kind') = 'turn_end'
      GROUP BY session_id;
    "#,
    // 7: references people type: a short random handle per session (filled in for existing
    // rows by `fill_handles`), and the shell that made a session (its pid and start time), so
    // `last` in a script means the session that script made.
    r#"
    ALTER TABLE sessions ADD COLUMN handle TEXT;
    ALTER TABLE sessions ADD COLUMN shell_pid INTEGER;
    ALTER TABLE sessions ADD COLUMN shell_start INTEGER;
    CREATE UNIQUE INDEX sessions_handle ON sessions(handle);
    CREATE INDEX sessions_cwd ON sessions(cwd, updated_at);
    "#,
];

/// The version whose migration adds session handles: after it, existing rows get theirs.
const HANDLES_ADDED: i64 = 7;

pub const VERSION: i64 = MIGRATIONS.len() as i64;

pub fn migrate(conn: &Connection, path: &Path) -> Result<()> {
    let version = |c: &Connection| -> rusqlite::Result<i64> {
        c.query_row("PRAGMA user_version", [], |r| r.get(0))
    };
    let current = version(conn).map_err(|e| super::classify_open(path, e))?;
    if current > VERSION {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found: current,
            known: VERSION,
        });
    }
    if current == VERSION {
        return Ok(());
    }
    // Several processes may open a fresh store at once: take the write lock, then look again.
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
        .map_err(|e| super::classify_open(path, e))?;
    let mut v = version(&tx)?;
    while v < VERSION {
        tx.execute_batch(MIGRATIONS[v as usize])?;
        v += 1;
        if v == HANDLES_ADDED {
            super::refs::fill_handles(&tx)?;
        }
        tx.pragma_update(None, "user_version", v)?;
    }
    tx.commit()?;
    Ok(())
}
