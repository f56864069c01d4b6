//! What context management reads and keeps: windows learned from providers, where a view's
//! latest compaction is, the fold view from it on, the last request's prompt tokens, the
//! durable state a handoff restates (goal, files written), and queued compactions.

use rusqlite::{params, OptionalExtension};

use super::chunks::{fold_row, from_row, COLUMNS};
use super::{Page, Result, Session, Store, StoreError};
use crate::fold::compaction::{self, Compaction};
use crate::log::Chunk;

impl Store {
    /// The window a provider's error stated for `model`, if one did.
    pub(crate) fn learned_window(&self, model: &str) -> Result<Option<u64>> {
        Ok(self
            .conn()
            .query_row(
                "SELECT context_window FROM model_windows WHERE model = ?1",
                [model],
                |r| r.get::<_, i64>(0),
            )
            .optional()?
            .map(|n| n.max(0) as u64))
    }

    /// Every learned window, by model.
    pub(crate) fn learned_windows(&self) -> Result<Vec<(String, u64)>> {
        let mut stmt = self
            .conn()
            .prepare("SELECT model, context_window FROM model_windows ORDER BY model")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0) as u64)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Automatic compactions of the session that failed in a row with summarizer `model`
    /// (a failure with another model started the count again).
    pub(crate) fn compact_failures(&self, session_id: &str, model: &str) -> Result<u32> {
        let (n, m): (i64, Option<String>) = self.conn().query_row(
            "SELECT compact_failures, compact_failed_model FROM sessions WHERE id = ?1",
            [session_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(if m.as_deref() == Some(model) {
            n.max(0) as u32
        } else {
            0
        })
    }

    /// Count one more failed automatic compaction with summarizer `model`; the count now.
    pub(crate) fn record_compact_failure(&self, session_id: &str, model: &str) -> Result<u32> {
        let n = self.compact_failures(session_id, model)? + 1;
        self.conn()
            .execute(
                "UPDATE sessions SET compact_failures = ?2, compact_failed_model = ?3 WHERE id = ?1",
                params![session_id, n as i64, model],
            )
            .map_err(|e| self.classify(e))?;
        Ok(n)
    }

    /// A compaction succeeded: automatic ones may run again.
    pub(crate) fn reset_compact_failures(&self, session_id: &str) -> Result<()> {
        self.conn()
            .execute(
                "UPDATE sessions SET compact_failures = 0, compact_failed_model = NULL WHERE id = ?1",
                [session_id],
            )
            .map_err(|e| self.classify(e))?;
        Ok(())
    }

    /// Forget what providers taught about `model` (its learned windows and count scales), on
    /// every endpoint (keys `MODEL` and `MODEL@HOST`); how many figures there were.
    pub(crate) fn forget_windows(&self, model: &str) -> Result<usize> {
        let mut n = 0;
        for table in ["model_windows", "model_scales"] {
            n += self
                .conn()
                .execute(
                    &format!(
                        "DELETE FROM {table} WHERE model = ?1 \
                         OR substr(model, 1, length(?1) + 1) = ?1 || '@'"
                    ),
                    [model],
                )
                .map_err(|e| self.classify(e))?;
        }
        Ok(n)
    }

    /// How the provider behind `model` (a learned-window key) counts a prompt against the
    /// estimate: its count over the estimated tokens, when a request measured it.
    pub(crate) fn model_scale(&self, model: &str) -> Result<Option<f64>> {
        Ok(self
            .conn()
            .query_row(
                "SELECT scale FROM model_scales WHERE model = ?1",
                [model],
                |r| r.get::<_, f64>(0),
            )
            .optional()?)
    }

    /// Every measured scale, by model.
    pub(crate) fn model_scales(&self) -> Result<Vec<(String, f64)>> {
        let mut stmt = self
            .conn()
            .prepare("SELECT model, scale FROM model_scales ORDER BY model")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Remember how the provider behind `model` counts against the estimate.
    pub(crate) fn set_model_scale(&self, model: &str, scale: f64) -> Result<()> {
        self.conn()
            .execute(
                "INSERT INTO model_scales (model, scale, measured_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (model) DO UPDATE SET scale = ?2, measured_at = ?3",
                params![model, scale, crate::clock::now_ms()],
            )
            .map_err(|e| self.classify(e))?;
        Ok(())
    }

    /// Remember what a provider said `model`'s window is.
    pub(crate) fn learn_window(&self, model: &str, window: u64) -> Result<()> {
        self.conn()
            .execute(
                "INSERT INTO model_windows (model, context_window, learned_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (model) DO UPDATE SET context_window = ?2, learned_at = ?3",
                params![model, window as i64, crate::clock::now_ms()],
            )
            .map_err(|e| self.classify(e))?;
        Ok(())
    }

    /// The latest compaction record in a session's view (its lineage included), found through
    /// an index: the cost does not grow with the log.
    pub(crate) fn latest_compaction(
        &self,
        session: &Session,
    ) -> Result<Option<(Chunk, Compaction)>> {
        let mut stmt = self.conn().prepare_cached(&format!(
            "SELECT {COLUMNS} FROM chunks WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 \
             AND type = 'system' AND json_extract(data_json, '$.kind') = 'compaction' \
             ORDER BY seq DESC"
        ))?;
        for seg in self.segments(session)?.iter().rev() {
            let mut rows = stmt.query(params![seg.session, seg.lo, seg.hi])?;
            while let Some(r) = rows.next()? {
                let chunk = from_row(r)?;
                // A record without the fields a fold needs is skipped, as the fold skips it.
                if let Some(c) = compaction::of_chunk(&chunk) {
                    return Ok(Some((chunk, c)));
                }
            }
        }
        Ok(None)
    }

    /// How many compaction records a session's view holds.
    pub(crate) fn compaction_count(&self, session: &Session) -> Result<i64> {
        let mut stmt = self.conn().prepare_cached(
            "SELECT COUNT(*) FROM chunks WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 \
             AND type = 'system' AND json_extract(data_json, '$.kind') = 'compaction'",
        )?;
        let mut n = 0;
        for seg in self.segments(session)? {
            n += stmt.query_row(params![seg.session, seg.lo, seg.hi], |r| r.get::<_, i64>(0))?;
        }
        Ok(n)
    }

    /// What a fold of the view reads, from the latest compaction's kept suffix on (the whole
    /// view when there is none): the same request as folding the whole view, without reading
    /// what the compaction summarized.
    pub(crate) fn load_context_view(&self, session: &Session) -> Result<Vec<Chunk>> {
        let after = match self.latest_compaction(session)? {
            Some((chunk, c)) => (c.kept_from_seq - 1).clamp(0, chunk.seq - 1),
            None => 0,
        };
        self.fold_view_after(session, after)
    }

    /// The fold's chunks of a view with `seq > after`.
    pub(crate) fn fold_view_after(&self, session: &Session, after: i64) -> Result<Vec<Chunk>> {
        let mut out = Vec::new();
        let page = Page {
            after: Some(after),
            ..Page::default()
        };
        self.scan(session, &page, fold_row, |c| {
            out.push(c);
            Ok::<(), StoreError>(())
        })?;
        Ok(out)
    }

    /// The prompt tokens of the session's last request, as its latest `turn_end` recorded them
    /// (`context_input`), with that record's seq. Looks only at the newest records.
    pub(crate) fn last_context_input(&self, session: &Session) -> Result<Option<(i64, u64)>> {
        let mut stmt = self.conn().prepare_cached(
            "SELECT seq, json_extract(data_json, '$.context_input') FROM chunks \
             WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 AND type = 'system' \
             AND json_extract(data_json, '$.kind') = 'turn_end' ORDER BY seq DESC LIMIT 1",
        )?;
        for seg in self.segments(session)?.iter().rev() {
            let found: Option<(i64, Option<i64>)> = stmt
                .query_row(params![seg.session, seg.lo, seg.hi], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()?;
            if let Some((seq, n)) = found {
                return Ok(n.map(|n| (seq, n.max(0) as u64)));
            }
        }
        Ok(None)
    }

    /// The first human prompt of a session's view: its goal.
    pub(crate) fn first_prompt(&self, session: &Session) -> Result<Option<String>> {
        let mut stmt = self.conn().prepare_cached(
            "SELECT json_extract(data_json, '$.text') FROM chunks WHERE session_id = ?1 \
             AND seq > ?2 AND seq <= ?3 AND role = 'user' AND type = 'text' ORDER BY seq LIMIT 1",
        )?;
        for seg in self.segments(session)? {
            let t: Option<Option<String>> = stmt
                .query_row(params![seg.session, seg.lo, seg.hi], |r| r.get(0))
                .optional()?;
            if let Some(Some(t)) = t {
                return Ok(Some(t));
            }
        }
        Ok(None)
    }

    /// The paths the session's `write` and `edit` calls named, first use first.
    pub(crate) fn files_written(&self, session: &Session) -> Result<Vec<String>> {
        let mut stmt = self.conn().prepare_cached(
            "SELECT json_extract(data_json, '$.arguments.path') FROM chunks WHERE session_id = ?1 \
             AND seq > ?2 AND seq <= ?3 AND type = 'tool_call' \
             AND json_extract(data_json, '$.name') IN ('write', 'edit') ORDER BY seq",
        )?;
        let mut out: Vec<String> = Vec::new();
        for seg in self.segments(session)? {
            let rows = stmt.query_map(params![seg.session, seg.lo, seg.hi], |r| {
                r.get::<_, Option<String>>(0)
            })?;
            for p in rows {
                if let Some(p) = p? {
                    if !out.contains(&p) {
                        out.push(p);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Queue a compaction for a running session (`summary` given by a person, or `None` for
    /// the model to write); the loop takes it at its next step boundary.
    pub(crate) fn enqueue_compaction(
        &self,
        session_id: &str,
        summary: Option<&str>,
    ) -> Result<i64> {
        self.conn()
            .execute(
                "INSERT INTO queued_input (session_id, text, created_at, kind) \
                 VALUES (?1, ?2, ?3, ?4)",
                params![
                    session_id,
                    summary.unwrap_or(""),
                    crate::clock::now_ms(),
                    if summary.is_some() {
                        "compact_summary"
                    } else {
                        "compact"
                    }
                ],
            )
            .map_err(|e| self.classify(e))?;
        Ok(self.conn().last_insert_rowid())
    }

    /// Take the queued compactions of a session, oldest first: `Some(summary)` for a given
    /// summary, `None` for one the model writes. Taken is removed.
    pub(crate) fn take_queued_compactions(&self, session_id: &str) -> Result<Vec<Option<String>>> {
        // Asked at every step: a plain read first, the write lock only when there is any.
        let items: Vec<(i64, String, String)> = self
            .conn()
            .prepare_cached(
                "SELECT id, kind, text FROM queued_input WHERE session_id = ?1 \
                 AND kind IN ('compact', 'compact_summary') ORDER BY id",
            )?
            .query_map([session_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let Some(&(last, _, _)) = items.last() else {
            return Ok(Vec::new());
        };
        self.write(|tx| {
            tx.execute(
                "DELETE FROM queued_input WHERE session_id = ?1 \
                 AND kind IN ('compact', 'compact_summary') AND id <= ?2",
                params![session_id, last],
            )?;
            Ok(())
        })?;
        Ok(items
            .into_iter()
            .map(|(_, kind, text)| (kind == "compact_summary").then_some(text))
            .collect())
    }
}
