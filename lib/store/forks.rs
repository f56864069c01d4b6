//! Forks and removal: creating a fork (one row plus its synthetic closers, nothing copied),
//! the forks of a session, and removing a session (its forks first only with `cascade`).

use super::chunks::append_in;
use super::{NewSession, Result, Session, Store, StoreError};
use crate::log::{Chunk, NewChunk};

impl Store {
    /// Create a fork (DESIGN §2, "Forks are O(1)"): one sessions row naming its source and the
    /// last inherited seq, plus `closers` (the synthetic results of calls the cut leaves open),
    /// in one transaction. Nothing is copied. The cut must lie inside the source's view.
    pub(crate) fn create_fork(
        &self,
        new: NewSession,
        closers: Vec<NewChunk>,
    ) -> Result<(Session, Vec<Chunk>)> {
        let (Some(src), Some(cut)) = (new.fork_of.clone(), new.fork_seq) else {
            return Err(StoreError::Invalid(
                "a fork needs a source session and a cut".into(),
            ));
        };
        let (session, stored) = self.write(|tx| {
            let source = self.session(&src)?;
            let len = self.view_len(&source)?;
            if cut < 0 || cut > len {
                return Err(StoreError::Invalid(format!(
                    "seq {cut} is outside session {src} (its log has {len} chunks)"
                )));
            }
            let session = self.create_session(new)?;
            let stored = append_in(tx, &session.id, closers)?;
            Ok((session, stored))
        })?;
        Ok((self.session(&session.id)?, stored))
    }

    /// Remove a session, its chunks, queued input and index entries. A session that others
    /// fork from is refused unless `cascade`, which removes the forks (recursively) first.
    /// Returns the ids removed.
    pub(crate) fn remove_session(&self, id: &str, cascade: bool) -> Result<Vec<String>> {
        let mut gone = Vec::new();
        let removed = self.write(|tx| {
        // Collect the fork tree, leaves last, so children go before their sources.
        let mut order = vec![id.to_string()];
        let mut i = 0;
        while i < order.len() {
            let mut stmt = tx.prepare_cached("SELECT id FROM sessions WHERE fork_of = ?1")?;
            let kids: Vec<String> = stmt
                .query_map([&order[i]], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            if i == 0 && !kids.is_empty() && !cascade {
                return Err(StoreError::HasForks {
                    id: id.to_string(),
                    forks: kids,
                });
            }
            order.extend(kids);
            i += 1;
        }
        // A session that a live process is running is not pulled from under it.
        for sid in &order {
            let (status, pid, start): (String, Option<i64>, Option<i64>) = tx.query_row(
                "SELECT status, pid, pid_start FROM sessions WHERE id = ?1",
                [sid],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            if let Some(owner) = pid.filter(|p| status == "running" && crate::proc::alive(*p, start)) {
                return Err(StoreError::Running { id: sid.clone(), owner });
            }
        }
        for sid in order.iter().rev() {
            let sql = format!("SELECT {} FROM sessions WHERE id = ?1", super::sessions::COLUMNS);
            gone.push(tx.query_row(&sql, [sid], super::sessions::from_row)?);
            tx.execute(
                "DELETE FROM chunks_fts WHERE rowid IN (SELECT rowid FROM chunks WHERE session_id = ?1)",
                [sid],
            )?;
            tx.execute("DELETE FROM chunks WHERE session_id = ?1", [sid])?;
            tx.execute("DELETE FROM chunk_counts WHERE session_id = ?1", [sid])?;
            tx.execute("DELETE FROM turn_totals WHERE session_id = ?1", [sid])?;
            tx.execute("DELETE FROM queued_input WHERE session_id = ?1", [sid])?;
            // Subagents outlive their parent as independent sessions.
            tx.execute(
                "UPDATE sessions SET parent_id = NULL WHERE parent_id = ?1",
                [sid],
            )?;
            tx.execute("DELETE FROM sessions WHERE id = ?1", [sid])?;
        }
        // Rowids of removed chunks may be handed out again: make sure the index catches up
        // from below any reused one.
        tx.execute(
            "UPDATE fts_state SET last_rowid = MIN(last_rowid, (SELECT COALESCE(MAX(rowid), 0) FROM chunks)) WHERE id = 1",
            [],
        )?;
        Ok(order)
        })?;
        for s in &gone {
            self.ended(s);
        }
        Ok(removed)
    }
}
