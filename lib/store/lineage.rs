//! Lineage: a session's view is its fork sources' chunks up to each cut, then its own
//! (DESIGN §2 "Forks are O(1)"). Here: the chain of sources, the segments it makes, the SQL
//! filter for them, the view's length, and a backward walk over a view.

use rusqlite::params;
use serde_json::Value;

use super::{Result, Session, Store, StoreError};

/// One segment of a session's view: the chunks of `session` with `lo < seq <= hi`.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub session: String,
    pub lo: i64,
    pub hi: i64,
}

/// A chunk as the backward walk sees it: its data as JSON, not decoded into a type.
#[derive(Debug, Clone)]
pub struct RawChunk {
    pub id: String,
    pub seq: i64,
    pub turn: String,
    pub step: i64,
    pub ty: String,
    pub data: Value,
}

impl Store {
    /// The last seq of a session's view (0 when empty). Seqs are gapless, so this is also its
    /// length.
    pub fn view_len(&self, session: &Session) -> Result<i64> {
        let own: Option<i64> = self.conn().query_row(
            "SELECT MAX(seq) FROM chunks WHERE session_id = ?1",
            [&session.id],
            |r| r.get(0),
        )?;
        Ok(own.or(session.fork_seq).unwrap_or(0))
    }

    /// The lineage of a session, oldest ancestor first: `(session, fork_seq)` pairs where
    /// `fork_seq` is the last seq the next one down inherits.
    pub fn lineage(&self, session: &Session) -> Result<Vec<Session>> {
        let mut chain = vec![session.clone()];
        let mut cur = session.clone();
        while let Some(src) = cur.fork_of.clone() {
            if chain.len() > 10_000 || chain.iter().any(|s| s.id == src) {
                return Err(StoreError::Invalid(format!(
                    "session {} has a cyclic fork lineage",
                    session.id
                )));
            }
            let parent = self.session(&src)?;
            chain.push(parent.clone());
            cur = parent;
        }
        chain.reverse();
        Ok(chain)
    }

    /// The segments that make up a session's view, in seq order.
    pub fn segments(&self, session: &Session) -> Result<Vec<Segment>> {
        let chain = self.lineage(session)?;
        let mut segs = Vec::with_capacity(chain.len());
        // Walk from the session up: each ancestor is capped by the fork_seq of its child.
        let mut hi = i64::MAX;
        for s in chain.iter().rev() {
            let lo = s.fork_seq.unwrap_or(0);
            segs.push(Segment {
                session: s.id.clone(),
                lo,
                hi,
            });
            hi = hi.min(lo);
        }
        segs.reverse();
        segs.retain(|s| s.hi > s.lo);
        Ok(segs)
    }

    /// Walk `session`'s view backwards from seq `from` (inclusive), newest first, until `f`
    /// says stop. A walk that stops at a recent chunk costs the same however long the view is.
    pub fn walk_back(
        &self,
        session: &Session,
        from: i64,
        mut f: impl FnMut(&RawChunk) -> bool,
    ) -> Result<()> {
        let segs = self.segments(session)?;
        for seg in segs.iter().rev() {
            let hi = seg.hi.min(from);
            if hi <= seg.lo {
                continue;
            }
            let mut stmt = self.conn().prepare_cached(
                "SELECT id, seq, turn_id, step, type, data_json FROM chunks \
                 WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq DESC",
            )?;
            let mut rows = stmt.query(params![seg.session, seg.lo, hi])?;
            while let Some(r) = rows.next()? {
                let data: String = r.get(5)?;
                let c = RawChunk {
                    id: r.get(0)?,
                    seq: r.get(1)?,
                    turn: r.get(2)?,
                    step: r.get(3)?,
                    ty: r.get(4)?,
                    data: serde_json::from_str(&data).unwrap_or(Value::Null),
                };
                if !f(&c) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

/// SQL for "the chunks of these segments", with `?` parameters in order.
pub(super) fn segment_filter(
    segs: &[Segment],
    lo: i64,
    hi: i64,
) -> (String, Vec<rusqlite::types::Value>) {
    let mut sql = Vec::new();
    let mut args: Vec<rusqlite::types::Value> = Vec::new();
    for s in segs {
        let a = s.lo.max(lo);
        let b = s.hi.min(hi);
        if b <= a {
            continue;
        }
        sql.push("(session_id = ? AND seq > ? AND seq <= ?)".to_string());
        args.push(s.session.clone().into());
        args.push(a.into());
        args.push(b.into());
    }
    if sql.is_empty() {
        return ("0".into(), args);
    }
    (format!("({})", sql.join(" OR ")), args)
}
