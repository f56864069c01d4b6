//! What `recall` reads: full-text matches in one session's view (its lineage up to each
//! fork, never another session), newest first.

use rusqlite::params_from_iter;

use super::chunks::{from_row, prefixed_columns};
use super::fts::fts_query;
use super::lineage::segment_filter_in;
use super::{Result, Session, Store};
use crate::log::Chunk;

/// One match: the chunk, and an excerpt of its indexed text with the matched words in `[…]`.
#[derive(Debug, Clone)]
pub struct RecallHit {
    pub(crate) chunk: Chunk,
    pub(crate) excerpt: String,
}

impl Store {
    /// The newest `limit` chunks of `session`'s view whose indexed text holds every word of
    /// `query`, newest first. The index is brought up to date first.
    pub fn recall(&self, session: &Session, query: &str, limit: u64) -> Result<Vec<RecallHit>> {
        let matching = fts_query(query)?;
        self.index_current()?;
        let segs = self.segments(session)?;
        let (filter, more) = segment_filter_in("c.", &segs, 0, i64::MAX);
        // The index starts at the view's newest chunk, not at what others wrote since.
        let (lo, hi) = self.rowid_bounds(&segs)?.unwrap_or((1, 0));
        // The index is the outer loop, walked newest rowid first (a view's chunks are written
        // in seq order), so a query stops after `limit` matches however long the log is.
        let sql = format!(
            "SELECT {cols}, snippet(chunks_fts, 0, '[', ']', '…', 24) FROM chunks_fts \
             CROSS JOIN chunks c ON c.rowid = chunks_fts.rowid \
             WHERE chunks_fts MATCH ? AND {filter} AND chunks_fts.rowid BETWEEN ? AND ? \
             ORDER BY chunks_fts.rowid DESC LIMIT ?",
            cols = prefixed_columns("c.")
        );
        let mut args: Vec<rusqlite::types::Value> = vec![matching.into()];
        args.extend(more);
        args.extend([lo.into(), hi.into()]);
        args.push((limit.min(i64::MAX as u64) as i64).into());
        let mut stmt = self.conn().prepare_cached(&sql)?;
        let mut hits: Vec<RecallHit> = stmt
            .query_map(params_from_iter(args), |r| {
                Ok(RecallHit {
                    chunk: from_row(r)?,
                    excerpt: r.get::<_, Option<String>>(9)?.unwrap_or_default(),
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        hits.sort_by_key(|h| std::cmp::Reverse(h.chunk.seq));
        Ok(hits)
    }
}
