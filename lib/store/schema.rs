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
    // 8: `interrupted`, the status of a session whose owner died mid-turn. SQLite cannot
    // change a CHECK in place, so `allow_interrupted` rebuilds the table after this entry.
    "",
    // 9: the full-text index holds every chunk `recall` searches (thinking, tool calls and
    // results, peer speech, errors), not only text: it is emptied here and rebuilt by the
    // next search, as the index always catches up.
    r#"
    DROP TABLE chunks_fts;
    CREATE VIRTUAL TABLE chunks_fts USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');
    UPDATE fts_state SET last_rowid = 0;
    "#,
    // 10: the directory and model an imported session's source recorded, shown beside the
    // session's own (an import runs where it was imported, on the user's model).
    r#"
    ALTER TABLE imports ADD COLUMN source_cwd TEXT;
    ALTER TABLE imports ADD COLUMN source_model TEXT;
    "#,
    // 11: automatic compactions that failed in a row, and the summarizer model that failed,
    // so a session stops calling a failing summarizer on every turn.
    r#"
    ALTER TABLE sessions ADD COLUMN compact_failures INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN compact_failed_model TEXT;
    "#,
    // 12: a turn's chunks found by index (the end of every `ag-prompt` turn and `cat --turn`
    // read them), and a session's newest room lines and `peer_message` calls (read at every
    // step boundary), not by reading the session's whole log; the last two are partial, so
    // they hold only those chunks.
    r#"
    CREATE INDEX chunks_turn ON chunks(session_id, turn_id, seq);
    CREATE INDEX chunks_peer ON chunks(session_id, seq) WHERE type = 'peer';
    CREATE INDEX chunks_peer_said ON chunks(session_id, seq)
      WHERE type = 'tool_call' AND json_extract(data_json, '$.name') = 'peer_message';
    "#,
    // 13: a job's name for its session (`ag-prompt --name NAME`), one per directory, so a
    // cron line continues the same session every run.
    r#"
    ALTER TABLE sessions ADD COLUMN name TEXT;
    CREATE UNIQUE INDEX sessions_name ON sessions(cwd, name) WHERE name IS NOT NULL;
    "#,
    // 14: what turns cost: a session's total of its `turn_end` records' `cost_usd` (records
    // written before this version have none), and the `turn_end` records by time, so
    // `ag-log usage` reads those and not the whole log.
    r#"
    ALTER TABLE turn_totals ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
    CREATE INDEX chunks_turn_ends ON chunks(created_at)
      WHERE type = 'system' AND json_extract(data_json, '$.kind') = 'turn_end';
    "#,
    // 15: how a provider counts against the estimate (its prompt tokens over the estimated
    // ones), by model and endpoint as windows are learned, so plans on a view no request has
    // measured yet (a new session, a compacted view) use the provider's own scale.
    r#"
    CREATE TABLE model_scales (
      model       TEXT PRIMARY KEY,
      scale       REAL NOT NULL,
      measured_at INTEGER NOT NULL
    );
    "#,
];

/// The version whose migration adds session handles: after it, existing rows get theirs.
const HANDLES_ADDED: i64 = 7;

/// The version whose migration lets `status` be `interrupted` (see [`allow_interrupted`]).
const INTERRUPTED_ADDED: i64 = 8;

pub(crate) const VERSION: i64 = MIGRATIONS.len() as i64;

fn version(c: &Connection) -> rusqlite::Result<i64> {
    c.query_row("PRAGMA user_version", [], |r| r.get(0))
}

pub(crate) fn migrate(conn: &Connection, path: &Path) -> Result<()> {
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
    // Rebuilding `sessions` drops the table its children refer to: SQLite's procedure for
    // that turns foreign keys off around the transaction (the pragma is a no-op inside one).
    // The rebuild copies every row as it is, so no reference changes.
    conn.execute_batch("PRAGMA foreign_keys = OFF")?;
    let migrated = migrate_locked(conn, path);
    conn.execute_batch("PRAGMA foreign_keys = ON")?;
    migrated
}

fn migrate_locked(conn: &Connection, path: &Path) -> Result<()> {
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
        if v == INTERRUPTED_ADDED {
            allow_interrupted(&tx)?;
        }
        tx.pragma_update(None, "user_version", v)?;
    }
    tx.commit()?;
    Ok(())
}

/// The status values before and after [`INTERRUPTED_ADDED`], as migration 1 spelled them.
const STATUS_CHECK: &str = "CHECK (status IN ('idle', 'running', 'done', 'failed', 'cancelled'))";
const STATUS_CHECK_8: &str =
    "CHECK (status IN ('idle', 'running', 'done', 'failed', 'cancelled', 'interrupted'))";

/// Rebuild `sessions` with `interrupted` among its statuses (SQLite's "other kinds of table
/// schema changes": create the new table, copy, drop, rename, recreate the indexes). The new
/// table's definition is the stored one with only the CHECK changed, so every column other
/// migrations added survives, in order.
fn allow_interrupted(tx: &Connection) -> Result<()> {
    let table: String = tx.query_row(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'sessions'",
        [],
        |r| r.get(0),
    )?;
    let indexes: Vec<String> = {
        let mut stmt = tx.prepare(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sessions' \
             AND sql IS NOT NULL",
        )?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let renamed = table.replacen("CREATE TABLE sessions", "CREATE TABLE sessions_v8", 1);
    if !renamed.contains(STATUS_CHECK) || renamed == table {
        // Not the table migration 1 made; leave it as it is rather than guess.
        return Ok(());
    }
    tx.execute_batch(&renamed.replacen(STATUS_CHECK, STATUS_CHECK_8, 1))?;
    tx.execute_batch(
        "INSERT INTO sessions_v8 SELECT * FROM sessions; DROP TABLE sessions; \
         ALTER TABLE sessions_v8 RENAME TO sessions;",
    )?;
    for index in indexes {
        tx.execute_batch(&index)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store written by the build before migration 8: its rows, children and indexes
    /// survive the rebuild, `interrupted` becomes a status, and foreign keys still hold.
    #[test]
    fn a_version_7_store_gains_interrupted_and_keeps_everything() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ag.db");
        let conn = Connection::open(&path).unwrap();
        for m in &MIGRATIONS[..7] {
            conn.execute_batch(m).unwrap();
        }
        conn.pragma_update(None, "user_version", 7).unwrap();
        conn.execute_batch(
            "INSERT INTO sessions (id, title, status, handle, created_at, updated_at, tool_pgid)
               VALUES ('s1', 'kept', 'running', 'kkkkkk', 1, 2, 42);
             INSERT INTO sessions (id, fork_of, fork_seq, handle, created_at, updated_at)
               VALUES ('s2', 's1', 1, 'llllll', 3, 4);
             INSERT INTO chunks VALUES ('c1', 's1', 1, 't', 0, 'user', 'text', '{\"text\":\"hi\"}', 5);
             INSERT INTO imports (session_id, source, source_id, path, imported_at)
               VALUES ('s1', 'codex', 'x', '/f', 6);",
        )
        .unwrap();
        conn.execute_batch("PRAGMA foreign_keys = ON").unwrap();
        migrate(&conn, &path).unwrap();

        assert_eq!(version(&conn).unwrap(), VERSION);
        let row: (String, String, i64, String) = conn
            .query_row(
                "SELECT title, status, tool_pgid, handle FROM sessions WHERE id = 's1'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        assert_eq!(row, ("kept".into(), "running".into(), 42, "kkkkkk".into()));
        conn.execute(
            "UPDATE sessions SET status = 'interrupted' WHERE id = 's1'",
            [],
        )
        .unwrap();
        assert!(conn
            .execute("UPDATE sessions SET status = 'lost' WHERE id = 's1'", [])
            .is_err());
        let fk: bool = conn
            .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
            .unwrap();
        assert!(fk, "foreign keys are on again");
        assert!(conn
            .execute(
                "INSERT INTO chunks VALUES ('c2', 'nobody', 1, 't', 0, 'user', 'text', '{}', 7)",
                []
            )
            .is_err());
        // Deleting a session still cascades to its import row.
        conn.execute_batch("DELETE FROM chunks; DELETE FROM sessions WHERE id = 's2'; DELETE FROM sessions WHERE id = 's1'")
            .unwrap();
        let imports: i64 = conn
            .query_row("SELECT COUNT(*) FROM imports", [], |r| r.get(0))
            .unwrap();
        assert_eq!(imports, 0);
        let indexes: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sessions' \
                 AND name IN ('sessions_updated', 'sessions_fork_of', 'sessions_parent', \
                 'sessions_handle', 'sessions_cwd')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(indexes, 5);
    }
}
