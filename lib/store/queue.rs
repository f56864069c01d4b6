//! Queued input: text sent to a running session waits here until the agent loop takes it at
//! a step boundary, moving it into the log and off the queue in one transaction.

use rusqlite::params;

use super::chunks::append_in;
use super::{Result, Store};
use crate::log::{Chunk, ChunkData, NewChunk, Role};

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Queued {
    pub(crate) id: i64,
    pub(crate) session: String,
    pub(crate) text: String,
    pub(crate) created_at: i64,
}

impl Store {
    pub(crate) fn queued(&self, session_id: &str) -> Result<Vec<Queued>> {
        let mut stmt = self.conn().prepare(
            "SELECT id, session_id, text, created_at FROM queued_input WHERE session_id = ?1 ORDER BY id",
        )?;
        let rows = stmt
            .query_map([session_id], |r| {
                Ok(Queued {
                    id: r.get(0)?,
                    session: r.get(1)?,
                    text: r.get(2)?,
                    created_at: r.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Queue `text` for a session while a turn runs in it (whoever runs it, this process
    /// included: the chat types ahead into its own turn). `None` when no turn runs: the
    /// caller starts one. Checked and queued under the write lock, so the text either joins
    /// the running turn (its end drains the queue in the same transaction) or is refused.
    pub(crate) fn queue_if_running(&self, session_id: &str, text: &str) -> Result<Option<i64>> {
        self.write(|tx| {
            let status: String = tx.query_row(
                "SELECT status FROM sessions WHERE id = ?1",
                [session_id],
                |r| r.get(0),
            )?;
            if status != "running" {
                return Ok(None);
            }
            Ok(Some(queue_in(tx, session_id, text)?))
        })
    }

    /// Move every queued item of a session into its log as `user/text` chunks of `turn`,
    /// `step`, in queue order, and delete them from the queue: both or neither.
    pub(crate) fn drain_queue(
        &self,
        session_id: &str,
        turn: &str,
        step: i64,
    ) -> Result<Vec<Chunk>> {
        self.write(|tx| drain_in(tx, session_id, turn, step))
    }
}

/// Inside an open write transaction: queue `text` for the session; its queue id.
pub(super) fn queue_in(tx: &rusqlite::Connection, session_id: &str, text: &str) -> Result<i64> {
    tx.execute(
        "INSERT INTO queued_input (session_id, text, created_at) VALUES (?1, ?2, ?3)",
        params![session_id, text, crate::clock::now_ms()],
    )?;
    Ok(tx.last_insert_rowid())
}

/// Inside an open write transaction: move the session's queued input into its log, in queue
/// order, and off the queue. Empty when nothing was waiting.
pub(super) fn drain_in(
    conn: &rusqlite::Connection,
    session_id: &str,
    turn: &str,
    step: i64,
) -> Result<Vec<Chunk>> {
    let items: Vec<(i64, String)> = conn
        .prepare_cached(
            "SELECT id, text FROM queued_input WHERE session_id = ?1 AND kind = 'text' ORDER BY id",
        )?
        .query_map([session_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let Some(last) = items.last().map(|(id, _)| *id) else {
        return Ok(Vec::new());
    };
    let chunks = items
        .into_iter()
        .map(|(_, text)| NewChunk::new(Role::User, ChunkData::text(text)).in_turn(turn, step))
        .collect();
    let stored = append_in(conn, session_id, chunks)?;
    conn.execute(
        "DELETE FROM queued_input WHERE session_id = ?1 AND kind = 'text' AND id <= ?2",
        params![session_id, last],
    )?;
    Ok(stored)
}
