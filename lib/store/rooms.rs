//! What rooms need from the store: readers' byte cursors per room, the lines held back from a
//! session's context (its unread inbox), live-session bookkeeping and short summaries of what a
//! session is doing.

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;

use super::chunks::append_in;
use super::sessions::Session;
use super::{Result, Store};
use crate::clock;
use crate::log::{Chunk, NewChunk};

/// What a session is doing, from its own chunks.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Activity {
    /// The first user prompt.
    pub(crate) goal: Option<String>,
    pub(crate) last_prompt: Option<String>,
    /// The newest tool calls, newest first: (name, arguments JSON).
    pub(crate) tools: Vec<(String, String)>,
    /// The newest assistant texts, newest first.
    pub(crate) said: Vec<String>,
    pub(crate) last_at: Option<i64>,
    /// The newest lines it heard (from its peer chunks), newest first.
    pub(crate) heard: Vec<crate::log::PeerMessage>,
    /// The arguments of its newest `peer_message` calls, newest first.
    pub(crate) spoke: Vec<Value>,
}

/// How far back [`Store::activity`] looks for a session's last prompt, tool calls and texts.
const RECENT: i64 = 5_000;

impl Store {
    /// A reader's byte offset in a room, if it has read it before.
    pub(crate) fn room_cursor(&self, reader: &str, room: &str) -> Result<Option<u64>> {
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
    pub(crate) fn room_advance(
        &self,
        reader: &str,
        cursors: &[(String, u64)],
        held: &[(String, u64, String)],
    ) -> Result<()> {
        self.write(|tx| advance_in(tx, reader, cursors, held))
    }

    /// Take what a session heard into its log: move the reader's cursors, record the lines it
    /// holds back and append the peer chunk `chunk(omitted)` builds (`omitted`: how many lines
    /// the reader holds back with these), all in one transaction. Either the lines are in the
    /// log (whole or as held) and the cursors past them, or neither: a crash cannot move a
    /// cursor past lines that never reached the session.
    pub(crate) fn room_hear(
        &self,
        session_id: &str,
        reader: &str,
        cursors: &[(String, u64)],
        held: &[(String, u64, String)],
        chunk: impl FnOnce(u64) -> NewChunk,
    ) -> Result<Vec<Chunk>> {
        self.write(|tx| {
            advance_in(tx, reader, cursors, held)?;
            let omitted: i64 = tx.query_row(
                "SELECT COUNT(*) FROM room_held WHERE reader = ?1",
                [reader],
                |r| r.get(0),
            )?;
            append_in(tx, session_id, vec![chunk(omitted as u64)])
        })
    }

    /// The lines a reader holds back: (room, offset, message id), oldest first.
    pub(crate) fn room_held(&self, reader: &str) -> Result<Vec<(String, u64, String)>> {
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
    pub(crate) fn room_unhold(&self, reader: &str, lines: &[(String, u64)]) -> Result<()> {
        self.write(|tx| {
            for (room, offset) in lines {
                tx.execute(
                    "DELETE FROM room_held WHERE reader = ?1 AND room = ?2 AND offset = ?3",
                    params![reader, room, *offset as i64],
                )?;
            }
            Ok(())
        })
    }

    /// Sessions whose status is `running` (live or not; the caller checks the pid).
    pub(crate) fn running_sessions(&self) -> Result<Vec<Session>> {
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

    /// A running session whose process is gone: mark it `interrupted` and clear its pid, unless
    /// another process took it meanwhile.
    pub(crate) fn reap(&self, id: &str, pid: Option<i64>, pid_start: Option<i64>) -> Result<()> {
        let n = self
            .conn()
            .execute(
                "UPDATE sessions SET status = 'interrupted', pid = NULL, pid_start = NULL, updated_at = ?4 \
                 WHERE id = ?1 AND status = 'running' AND pid IS ?2 AND pid_start IS ?3",
                params![id, pid, pid_start, clock::now_ms()],
            )
            .map_err(|e| self.classify(e))?;
        if n > 0 {
            self.ended_as(id, "interrupted");
        }
        Ok(())
    }

    /// The sessions of the roster a session's model was last shown (in its newest peer chunk
    /// that carries one), sorted; `None` when it was never shown one.
    pub(crate) fn last_roster(&self, session_id: &str) -> Result<Option<Vec<String>>> {
        let json: Option<String> = self
            .conn()
            .query_row(
                "SELECT json_extract(data_json, '$.roster') FROM chunks INDEXED BY chunks_peer \
                 WHERE session_id = ?1 \
                 AND type = 'peer' AND json_extract(data_json, '$.roster') IS NOT NULL \
                 ORDER BY seq DESC LIMIT 1",
                [session_id],
                |r| r.get(0),
            )
            .optional()?;
        Ok(json.map(|j| {
            let v: Vec<crate::log::PeerPresent> = serde_json::from_str(&j).unwrap_or_default();
            let mut ids: Vec<String> = v.into_iter().map(|p| p.session).collect();
            ids.sort();
            ids
        }))
    }

    /// What a session has been doing: its goal, last prompt, newest tool calls and texts. All
    /// but the goal are looked for among its newest [`RECENT`] chunks, so asking costs the same
    /// however long the session is (a session that never called a tool is not read whole to
    /// say so).
    pub(crate) fn activity(&self, id: &str, n: usize) -> Result<Activity> {
        let text = "json_extract(data_json, '$.text')";
        let newest: Option<(i64, i64)> = self
            .conn()
            .query_row(
                // The newest chunk is the last written: found by index, not by a scan.
                "SELECT seq, created_at FROM chunks WHERE session_id = ?1 ORDER BY seq DESC LIMIT 1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let floor = newest.map_or(0, |(seq, _)| seq - RECENT);
        // The first user text after seq `after`, oldest or newest first.
        let prompt = |after: i64, order: &str| -> Result<Option<String>> {
            Ok(self
                .conn()
                .query_row(
                    &format!(
                        "SELECT {text} FROM chunks WHERE session_id = ?1 AND seq > ?2 \
                         AND role = 'user' AND type = 'text' ORDER BY seq {order} LIMIT 1"
                    ),
                    params![id, after],
                    |r| r.get(0),
                )
                .optional()?
                .flatten())
        };
        let goal = prompt(0, "ASC")?;
        let last_prompt = prompt(floor, "DESC")?;
        let mut stmt = self.conn().prepare(
            "SELECT json_extract(data_json, '$.name'), json_extract(data_json, '$.arguments') FROM chunks \
             WHERE session_id = ?1 AND seq > ?3 AND type = 'tool_call' ORDER BY seq DESC LIMIT ?2",
        )?;
        let tools = stmt
            .query_map(params![id, n as i64, floor], |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                    r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                ))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let mut stmt = self.conn().prepare(&format!(
            "SELECT {text} FROM chunks WHERE session_id = ?1 AND seq > ?3 AND role = 'assistant' AND type = 'text' \
             ORDER BY seq DESC LIMIT ?2"
        ))?;
        let said = stmt
            .query_map(params![id, n as i64, floor], |r| {
                r.get::<_, Option<String>>(0)
            })?
            .filter_map(|r| r.transpose())
            .collect::<rusqlite::Result<_>>()?;
        let last_at = newest.map(|(_, at)| at);
        let (heard, spoke) = self.peer_traffic(id, n)?;
        Ok(Activity {
            goal,
            last_prompt,
            tools,
            said,
            last_at,
            heard,
            spoke,
        })
    }

    /// The newest `n` lines a session heard and the arguments of its newest `n`
    /// `peer_message` calls, newest first.
    fn peer_traffic(
        &self,
        id: &str,
        n: usize,
    ) -> Result<(Vec<crate::log::PeerMessage>, Vec<Value>)> {
        if n == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let mut stmt = self.conn().prepare(
            "SELECT json_extract(data_json, '$.messages') FROM chunks INDEXED BY chunks_peer \
             WHERE session_id = ?1 AND type = 'peer' ORDER BY seq DESC LIMIT ?2",
        )?;
        let batches: Vec<Option<String>> = stmt
            .query_map(params![id, n as i64], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let mut heard = Vec::new();
        for b in batches.into_iter().flatten() {
            let ms: Vec<crate::log::PeerMessage> = serde_json::from_str(&b).unwrap_or_default();
            heard.extend(ms.into_iter().rev());
        }
        heard.truncate(n);
        let mut stmt = self.conn().prepare(
            "SELECT json_extract(data_json, '$.arguments') FROM chunks INDEXED BY chunks_peer_said \
             WHERE session_id = ?1 AND type = 'tool_call' \
             AND json_extract(data_json, '$.name') = 'peer_message' \
             ORDER BY seq DESC LIMIT ?2",
        )?;
        let spoke = stmt
            .query_map(params![id, n as i64], |r| r.get::<_, Option<String>>(0))?
            .filter_map(|r| r.transpose())
            .map(|r| r.map(|t| serde_json::from_str(&t).unwrap_or(Value::Null)))
            .collect::<rusqlite::Result<_>>()?;
        Ok((heard, spoke))
    }
}

/// Move a reader's cursors and record the lines it holds back, inside the caller's transaction.
fn advance_in(
    conn: &Connection,
    reader: &str,
    cursors: &[(String, u64)],
    held: &[(String, u64, String)],
) -> Result<()> {
    let now = clock::now_ms();
    for (room, offset) in cursors {
        conn.execute(
            "INSERT INTO room_cursors (reader, room, offset, updated_at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (reader, room) DO UPDATE SET offset = excluded.offset, updated_at = excluded.updated_at",
            params![reader, room, *offset as i64, now],
        )?;
    }
    for (room, offset, id) in held {
        conn.execute(
            "INSERT OR IGNORE INTO room_held (reader, room, offset, msg_id, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![reader, room, *offset as i64, id, now],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{ChunkData, Role};
    use crate::store::{NewSession, StoreError};

    fn peer(omitted: u64) -> NewChunk {
        NewChunk::new(
            Role::Peer,
            ChunkData::Peer {
                messages: Vec::new(),
                omitted,
                room: "r".into(),
                roster: None,
            },
        )
    }

    #[test]
    fn hearing_moves_the_cursor_only_with_the_peer_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_path(&dir.path().join("ag.db")).unwrap();
        let s = store
            .create_session(NewSession {
                title: "t".into(),
                ..Default::default()
            })
            .unwrap();
        let cursors = [("r.jsonl".to_string(), 100)];
        let held = [("r.jsonl".to_string(), 10, "m1".to_string())];
        // The chunk cannot be appended (a seq that is not the next): nothing moves.
        let e = store
            .room_hear(&s.id, "me", &cursors, &held, |o| NewChunk {
                seq: Some(7),
                ..peer(o)
            })
            .unwrap_err();
        assert!(matches!(e, StoreError::BadChunk { .. }), "{e}");
        assert_eq!(store.room_cursor("me", "r.jsonl").unwrap(), None);
        assert!(store.room_held("me").unwrap().is_empty());
        assert_eq!(store.view_len(&store.session(&s.id).unwrap()).unwrap(), 0);
        // It can: cursor, held line and chunk land together, the chunk counting the held line.
        let stored = store.room_hear(&s.id, "me", &cursors, &held, peer).unwrap();
        assert_eq!(stored.len(), 1);
        assert!(
            matches!(&stored[0].data, ChunkData::Peer { omitted: 1, .. }),
            "{:?}",
            stored[0].data
        );
        assert_eq!(store.room_cursor("me", "r.jsonl").unwrap(), Some(100));
        assert_eq!(store.room_held("me").unwrap().len(), 1);
    }
}
