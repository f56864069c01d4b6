//! Lineage: a session's view is its fork sources' chunks up to each cut, then its own
//! (DESIGN §2 "Forks are O(1)"). Here: the chain of sources, the segments it makes, the SQL
//! filter for them, the view's length, and a backward walk over a view.

use rusqlite::{params, OptionalExtension};
use serde_json::Value;

use super::{Result, Session, Store, StoreError};

/// How deep a chain of forks may be before it is taken for a cycle.
const MAX_DEPTH: i64 = 1_000_000;

/// Above this many segments, a filter names them in one JSON parameter instead of one `OR`
/// term each (SQLite refuses an expression tree over 1,000 deep).
const OR_TERMS: usize = 32;

/// One segment of a session's view: the chunks of `session` with `lo < seq <= hi`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Segment {
    pub(crate) session: String,
    pub(crate) lo: i64,
    pub(crate) hi: i64,
}

/// A chunk as the backward walk sees it: its data as JSON, not decoded into a type.
#[derive(Debug, Clone)]
pub(crate) struct RawChunk {
    pub(crate) id: String,
    pub(crate) seq: i64,
    pub(crate) turn: String,
    pub(crate) step: i64,
    pub(crate) role: String,
    pub(crate) ty: String,
    pub(crate) data: Value,
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

    /// The ids and fork seqs of a session's lineage, the session first: one query, and only
    /// the two columns every read needs.
    fn chain(&self, session: &Session) -> Result<Vec<(String, Option<i64>)>> {
        if session.fork_of.is_none() {
            return Ok(vec![(session.id.clone(), session.fork_seq)]);
        }
        let mut stmt = self.conn().prepare_cached(&format!(
            "WITH RECURSIVE chain(id, depth) AS ( \
               SELECT ?1, 0 \
               UNION ALL \
               SELECT s.fork_of, chain.depth + 1 FROM sessions s JOIN chain ON s.id = chain.id \
               WHERE s.fork_of IS NOT NULL AND chain.depth < {MAX_DEPTH}) \
             SELECT s.id, s.fork_seq, s.fork_of FROM chain JOIN sessions s ON s.id = chain.id \
             ORDER BY chain.depth"
        ))?;
        let rows: Vec<(String, Option<i64>, Option<String>)> = stmt
            .query_map([&session.id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        match rows.last() {
            Some((_, _, None)) => Ok(rows.into_iter().map(|(id, seq, _)| (id, seq)).collect()),
            Some((_, _, Some(src))) if (rows.len() as i64) <= MAX_DEPTH => {
                Err(StoreError::SessionNotFound(src.clone()))
            }
            Some(_) => Err(StoreError::Invalid(format!(
                "session {} has a cyclic fork lineage",
                session.id
            ))),
            None => Err(StoreError::SessionNotFound(session.id.clone())),
        }
    }

    /// The turn of `session`'s view that `reference` names: a full turn id, a turn handle
    /// (or a unique prefix of one), or a unique id prefix of at least 4 characters.
    pub(crate) fn resolve_turn(&self, session: &Session, reference: &str) -> Result<String> {
        let reference = reference.trim();
        let segs = self.segments(session)?;
        // A whole turn id is found by index; a handle or a prefix needs the view's turn ids.
        let (filter, mut args) = segment_filter(&segs, 0, i64::MAX);
        args.push(reference.to_string().into());
        let exact: bool = self.conn().query_row(
            &format!(
                "SELECT EXISTS (SELECT 1 FROM chunks INDEXED BY chunks_turn \
                 WHERE {filter} AND turn_id = ?)"
            ),
            rusqlite::params_from_iter(args),
            |r| r.get(0),
        )?;
        if exact {
            return Ok(reference.to_string());
        }
        let (filter, args) = segment_filter(&segs, 0, i64::MAX);
        let mut stmt = self.conn().prepare(&format!(
            "SELECT DISTINCT turn_id FROM chunks WHERE {filter}"
        ))?;
        let turns: Vec<String> = stmt
            .query_map(rusqlite::params_from_iter(args), |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if turns.iter().any(|t| t == reference) {
            return Ok(reference.to_string());
        }
        let hits: Vec<&String> = turns
            .iter()
            .filter(|t| {
                (crate::ids::looks_like_handle(reference)
                    && crate::ids::turn_handle(t).starts_with(reference))
                    || (reference.len() >= 4 && t.starts_with(reference))
            })
            .collect();
        match hits.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(StoreError::TurnNotFound {
                session: session.handle.clone(),
                turn: reference.to_string(),
            }),
            many => Err(StoreError::Invalid(format!(
                "turn {reference:?} matches {} turns of session {}: {}",
                many.len(),
                session.handle,
                many.iter()
                    .map(|t| crate::ids::turn_handle(t))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// The lineage of a session, oldest ancestor first: `(session, fork_seq)` pairs where
    /// `fork_seq` is the last seq the next one down inherits. One query however deep the
    /// chain of forks is.
    pub(crate) fn lineage(&self, session: &Session) -> Result<Vec<Session>> {
        if session.fork_of.is_none() {
            return Ok(vec![session.clone()]);
        }
        let cols = super::sessions::COLUMNS
            .split(", ")
            .map(|c| format!("s.{}", c.trim()))
            .collect::<Vec<_>>()
            .join(", ");
        // A cycle (only a damaged store has one) would recurse forever: the depth bound
        // stops it, and the chain then does not end at a session without a source.
        let sql = format!(
            "WITH RECURSIVE chain(id, depth) AS ( \
               SELECT ?1, 0 \
               UNION ALL \
               SELECT s.fork_of, chain.depth + 1 FROM sessions s JOIN chain ON s.id = chain.id \
               WHERE s.fork_of IS NOT NULL AND chain.depth < {MAX_DEPTH}) \
             SELECT {cols} FROM chain JOIN sessions s ON s.id = chain.id ORDER BY chain.depth DESC"
        );
        let mut stmt = self.conn().prepare_cached(&sql)?;
        let mut chain: Vec<Session> = stmt
            .query_map([&session.id], super::sessions::from_row)?
            .collect::<rusqlite::Result<_>>()?;
        let Some(oldest) = chain.first() else {
            return Err(StoreError::SessionNotFound(session.id.clone()));
        };
        if let Some(src) = &oldest.fork_of {
            return Err(if chain.len() as i64 > MAX_DEPTH {
                StoreError::Invalid(format!("session {} has a cyclic fork lineage", session.id))
            } else {
                StoreError::SessionNotFound(src.clone())
            });
        }
        // The session as the caller has it (it may carry fresher fields).
        if let Some(last) = chain.last_mut() {
            *last = session.clone();
        }
        Ok(chain)
    }

    /// The segments that make up a session's view, in seq order.
    pub(crate) fn segments(&self, session: &Session) -> Result<Vec<Segment>> {
        let mut segs = Vec::new();
        // Walk from the session up: each ancestor is capped by the fork_seq of its child.
        let mut hi = i64::MAX;
        for (id, fork_seq) in self.chain(session)? {
            let lo = fork_seq.unwrap_or(0);
            segs.push(Segment {
                session: id,
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
    /// says stop. A walk that stops at a recent chunk costs the same however long the view is,
    /// and however deep its lineage: a source is looked up only when the walk reaches it.
    pub(crate) fn walk_back(
        &self,
        session: &Session,
        from: i64,
        mut f: impl FnMut(&RawChunk) -> bool,
    ) -> Result<()> {
        let mut seg = (
            session.id.clone(),
            session.fork_of.clone(),
            session.fork_seq,
        );
        let mut hi = from;
        let mut depth = 0;
        loop {
            let (id, source, lo) = (&seg.0, &seg.1, seg.2.unwrap_or(0));
            if hi > lo && !self.walk_segment(id, lo, hi, &mut f)? {
                return Ok(());
            }
            let Some(src) = source else {
                return Ok(());
            };
            depth += 1;
            if depth > MAX_DEPTH {
                return Err(StoreError::Invalid(format!(
                    "session {} has a cyclic fork lineage",
                    session.id
                )));
            }
            let parent = self.session(src)?;
            hi = hi.min(lo);
            seg = (parent.id, parent.fork_of, parent.fork_seq);
        }
    }

    /// The rowids a view's chunks lie between, when it has any. A session's chunks are written
    /// in seq order, so each segment's first and last seq bound its rowids: a full-text query
    /// given these bounds skips, by index, what other sessions wrote before and after.
    pub(super) fn rowid_bounds(&self, segs: &[Segment]) -> Result<Option<(i64, i64)>> {
        let mut bounds: Option<(i64, i64)> = None;
        for seg in segs {
            let end = |order: &str| -> Result<Option<i64>> {
                Ok(self
                    .conn()
                    .prepare_cached(&format!(
                        "SELECT rowid FROM chunks WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 \
                         ORDER BY seq {order} LIMIT 1"
                    ))?
                    .query_row(params![seg.session, seg.lo, seg.hi], |r| r.get(0))
                    .optional()?)
            };
            if let (Some(first), Some(last)) = (end("ASC")?, end("DESC")?) {
                let (lo, hi) = (first.min(last), first.max(last));
                bounds = Some(bounds.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
            }
        }
        Ok(bounds)
    }

    /// One segment of [`Store::walk_back`], newest first; false once `f` says stop.
    fn walk_segment(
        &self,
        session: &str,
        lo: i64,
        hi: i64,
        f: &mut impl FnMut(&RawChunk) -> bool,
    ) -> Result<bool> {
        let mut stmt = self.conn().prepare_cached(
            "SELECT id, seq, turn_id, step, type, data_json, role FROM chunks \
             WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq DESC",
        )?;
        let mut rows = stmt.query(params![session, lo, hi])?;
        while let Some(r) = rows.next()? {
            let data: String = r.get(5)?;
            let c = RawChunk {
                id: r.get(0)?,
                seq: r.get(1)?,
                turn: r.get(2)?,
                step: r.get(3)?,
                role: r.get(6)?,
                ty: r.get(4)?,
                data: serde_json::from_str(&data).unwrap_or(Value::Null),
            };
            if !f(&c) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// SQL for "the chunks of these segments", with `?` parameters in order: one `OR` term per
/// segment, or, for a long lineage, the chunks' rowids looked up once from the segments passed
/// as one JSON array. `q` qualifies the outer query's columns (`""` or `"c."`).
pub(super) fn segment_filter(
    segs: &[Segment],
    lo: i64,
    hi: i64,
) -> (String, Vec<rusqlite::types::Value>) {
    segment_filter_in("", segs, lo, hi)
}

pub(super) fn segment_filter_in(
    q: &str,
    segs: &[Segment],
    lo: i64,
    hi: i64,
) -> (String, Vec<rusqlite::types::Value>) {
    let cut: Vec<(&str, i64, i64)> = segs
        .iter()
        .map(|s| (s.session.as_str(), s.lo.max(lo), s.hi.min(hi)))
        .filter(|(_, a, b)| b > a)
        .collect();
    if cut.is_empty() {
        return ("0".into(), Vec::new());
    }
    if cut.len() > OR_TERMS {
        let json = serde_json::to_string(&cut).unwrap_or_default();
        return (
            format!(
                "{q}rowid IN (SELECT v.rowid FROM json_each(?) j JOIN chunks v \
                 ON v.session_id = j.value ->> 0 AND v.seq > j.value ->> 1 \
                 AND v.seq <= j.value ->> 2)"
            ),
            vec![json.into()],
        );
    }
    let mut sql = Vec::new();
    let mut args: Vec<rusqlite::types::Value> = Vec::new();
    for (session, a, b) in cut {
        sql.push(format!(
            "({q}session_id = ? AND {q}seq > ? AND {q}seq <= ?)"
        ));
        args.push(session.to_string().into());
        args.push(a.into());
        args.push(b.into());
    }
    (format!("({})", sql.join(" OR ")), args)
}
