//! What rooms need from the store: readers' byte cursors per room, the lines held back from a
//! session's context (its unread inbox), live-session bookkeeping and short summaries of what a
//! session is doing.

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::sessions::Session;
use super::{Result, Store};
use crate::clock;

/// What a session is doing, from its own chunks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Activity {
    /// The first user prompt.
    pub goal: Option<String>,
    pub last_prompt: Option<String>,
    /// The newest tool calls, newest first: (name, arguments JSON).
    pub tools: Vec<(String, String)>,
    /// The newest assistant texts, newest first.
    pub said: Vec<String>,
    pub last_at: Option<i64>,
}

impl Store {
    /// A reader's byte offset in a room, if it has read it before.
    pub fn room_cursor(&self, reader: &str, room: &str) -> Result<Option<u64>> {
        let v: Option<i64> = self
            .conn()
            .query_row(
                "SELECT offset FROM room_cursors WHERE reader = ?1 AND room = ?2",
                params![reader, room],
                |r| r.get(0),
            )
            .optional()?;
        Ok(v.map(|o| o as u64))
    }

    /// Move a reader's cursors and record the lines it holds back, in one transaction.
    pub fn room_advance(
        &self,
        reader: &str,
        cursors: &[(String, u64)],
        held: &[(String, u64, String)],
    ) -> Result<()> {
        let tx = rusqlite::Transaction::new_unchecked(self.conn(), TransactionBehavior::Immediate)
            .map_err(|e| self.classify(e))?;
        let now = clock::now_ms();
        for (room, offset) in cursors {
            tx.execute(
                "INSERT INTO room_cursors (reader, room, offset, updated_at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (reader, room) DO UPDATE SET offset = excluded.offset, updated_at = excluded.updated_at",
                params![reader, room, *offset as i64, now],
            )?;
        }
        for (room, offset, id) in held {
            tx.execute(
                "INSERT OR IGNORE INTO room_held (reader, room, offset, msg_id, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![reader, room, *offset as i64, id, now],
            )?;
        }
        tx.commit().map_err(|e| self.classify(e))?;
        Ok(())
    }

    /// The lines a reader holds back: (room, offset, message id), oldest first.
    pub fn room_held(&self, reader: &str) -> Result<Vec<(String, u64, String)>> {
        let mut stmt = self.conn().prepare(
            "SELECT room, offset, msg_id FROM room_held WHERE reader = ?1 ORDER BY created_at, room, offset",
        )?;
        let rows = stmt
            .query_map([reader], |r| {
                Ok((r.get(0)?, r.get::<_, i64>(1)? as u64, r.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Forget held lines once they were read.
    pub fn room_unhold(&self, reader: &str, lines: &[(String, u64)]) -> Result<()> {
        let tx = rusqlite::Transaction::new_unchecked(self.conn(), TransactionBehavior::Immediate)
            .map_err(|e| self.classify(e))?;
        for (room, offset) in lines {
            tx.execute(
                "DELETE FROM room_held WHERE reader = ?1 AND room = ?2 AND offset = ?3",
                params![reader, room, *offset as i64],
            )?;
        }
        tx.commit().map_err(|e| self.classify(e))?;
        Ok(())
    }

    /// Sessions whose status is `running` (live or not; the caller checks the pid).
    pub fn running_sessions(&self) -> Result<Vec<Session>> {
        let ids: Vec<String> = {
            let mut stmt = self
                .conn()
                .prepare("SELECT id FROM sessions WHERE status = 'running' ORDER BY id")?;
            let rows = stmt
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            rows
        };
        ids.iter().map(|id| self.session(id)).collect()
    }

    /// Sessions whose pid is `pid`.
    pub fn sessions_with_pid(&self, pid: i64) -> Result<Vec<Session>> {
        let ids: Vec<String> = {
            let mut stmt = self
                .conn()
                .prepare("SELECT id FROM sessions WHERE pid = ?1 ORDER BY id")?;
            let rows = stmt
                .query_map([pid], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            rows
        };
        ids.iter().map(|id| self.session(id)).collect()
    }

    /// A running session whose process is gone: mark it failed and clear its pid, unless
    /// another process took it meanwhile.
    pub fn reap(&self, id: &str, pid: Option<i64>, pid_start: Option<i64>) -> Result<()> {
        self.conn()
            .execute(
                "UPDATE sessions SET status = 'failed', pid = NULL, pid_start = NULL, updated_at = ?4 \
                 WHERE id = ?1 AND status = 'running' AND pid IS ?2 AND pid_start IS ?3",
                params![id, pid, pid_start, clock::now_ms()],
            )
            .map_err(|e| self.classify(e))?;
        Ok(())
    }

    /// What a session has been doing: its goal, last prompt, newest tool calls and texts.
    pub fn activity(&self, id: &str, n: usize) -> Result<Activity> {
        let text = "json_extract(data_json, '$.text')";
        let first = |sql: &str| -> Result<Option<String>> {
            Ok(self
                .conn()
                .query_row(sql, [id], |r| r.get(0))
                .optional()?
                .flatten())
        };
        let goal = first(&format!(
            "SELECT {text} FROM chunks WHERE session_id = ?1 AND role = 'user' AND type = 'text' ORDER BY seq LIMIT 1"
        ))?;
        let last_prompt = first(&format!(
            "SELECT {text} FROM chunks WHERE session_id = ?1 AND role = 'user' AND type = 'text' ORDER BY seq DESC LIMIT 1"
        ))?;
        let mut stmt = self.conn().prepare(
            "SELECT json_extract(data_json, '$.name'), json_extract(data_json, '$.arguments') FROM chunks \
             WHERE session_id = ?1 AND type = 'tool_call' ORDER BY seq DESC LIMIT ?2",
        )?;
        let tools = stmt
            .query_map(params![id, n as i64], |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                    r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                ))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let mut stmt = self.conn().prepare(&format!(
            "SELECT {text} FROM chunks WHERE session_id = ?1 AND role = 'assistant' AND type = 'text' \
             ORDER BY seq DESC LIMIT ?2"
        ))?;
        let said = stmt
            .query_map(params![id, n as i64], |r| r.get::<_, Option<String>>(0))?
            .filter_map(|r| r.transpose())
            .collect::<rusqlite::Result<_>>()?;
        let last_at: Option<i64> = self
            .conn()
            .query_row(
                "SELECT MAX(created_at) FROM chunks WHERE session_id = ?1",
                [id],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        Ok(Activity {
            goal,
            last_prompt,
            tools,
            said,
            last_at,
        })
    }
}
