//! What `ag-log usage` reads: every `turn_end` record since a time, with its session's
//! directory, handle and model, found by the `turn_end` index (not by reading the log).

use rusqlite::params;

use super::{Result, Store};

/// One ended turn: when, in which session, on which model, and what it used and cost.
#[derive(Debug, Clone)]
pub(crate) struct EndedTurn {
    pub(crate) session: String,
    pub(crate) handle: String,
    pub(crate) cwd: String,
    /// The model that answered (`turn_end`'s `model`), else the session's.
    pub(crate) model: String,
    /// The session's model reference (`anthropic/…`): tells the dialect and the configured price.
    pub(crate) session_model: String,
    pub(crate) at_ms: i64,
    pub(crate) usage: serde_json::Value,
    /// What the turn cost, when its record says so.
    pub(crate) cost_usd: Option<f64>,
}

impl Store {
    /// The `turn_end` records written at or after `since_ms`, oldest first.
    pub(crate) fn ended_turns(&self, since_ms: i64) -> Result<Vec<EndedTurn>> {
        let mut stmt = self.conn().prepare(
            "SELECT c.session_id, s.handle, COALESCE(s.cwd, ''), \
               COALESCE(json_extract(c.data_json, '$.model'), s.model, ''), COALESCE(s.model, ''), \
               c.created_at, json_extract(c.data_json, '$.usage'), \
               json_extract(c.data_json, '$.cost_usd') \
             FROM chunks c INDEXED BY chunks_turn_ends JOIN sessions s ON s.id = c.session_id \
             WHERE c.type = 'system' AND json_extract(c.data_json, '$.kind') = 'turn_end' \
               AND c.created_at >= ?1 ORDER BY c.created_at",
        )?;
        let rows = stmt
            .query_map(params![since_ms], |r| {
                let usage: Option<String> = r.get(6)?;
                Ok(EndedTurn {
                    session: r.get(0)?,
                    handle: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                    cwd: r.get(2)?,
                    model: r.get(3)?,
                    session_model: r.get(4)?,
                    at_ms: r.get(5)?,
                    usage: usage
                        .and_then(|u| serde_json::from_str(&u).ok())
                        .unwrap_or_default(),
                    cost_usd: r.get(7)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }
}
