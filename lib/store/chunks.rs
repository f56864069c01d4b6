//! The chunk log: atomic appends with gapless per-session seqs, paginated streaming reads over
//! a session's lineage, full-text search and per-session summaries.

use rusqlite::{params, params_from_iter, Connection, Row};

use super::lineage::{segment_filter, segment_filter_in};
use super::{Result, Session, Store, StoreError};
use crate::log::{Chunk, ChunkData, ChunkType, NewChunk, Role};
use crate::{clock, ids};

/// Where `append_stream` writes.
pub(crate) enum AppendTarget {
    Session(String),
    New(Box<super::NewSession>),
}

/// Which part of a view to read. `limit` keeps the newest N of what the other bounds allow.
#[derive(Debug, Clone, Default)]
pub(crate) struct Page {
    pub(crate) limit: Option<u64>,
    /// Only chunks with `seq < before`.
    pub(crate) before: Option<i64>,
    /// Only chunks with `seq > after`.
    pub(crate) after: Option<i64>,
    pub(crate) turn: Option<String>,
}

/// The order of [`Store::search`]'s hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchSort {
    /// The newest match first: stops at the limit however many chunks match.
    Newest,
    /// The best match first (bm25): ranks every match before the first is returned.
    Rank,
}

#[derive(Debug, Clone)]
pub(crate) struct SearchHit {
    pub(crate) chunk: Chunk,
    /// An excerpt of the chunk's indexed text, each match between
    /// [`super::fts::MATCH_START`] and [`super::fts::MATCH_END`].
    pub(crate) snippet: String,
}

impl SearchHit {
    /// The excerpt as (text, is a match) pieces, in order.
    pub(crate) fn parts(&self) -> Vec<(&str, bool)> {
        use super::fts::{MATCH_END, MATCH_START};
        let mut out = Vec::new();
        let mut rest = self.snippet.as_str();
        while let Some(start) = rest.find(MATCH_START) {
            out.push((&rest[..start], false));
            let after = &rest[start + MATCH_START.len_utf8()..];
            let end = after.find(MATCH_END).unwrap_or(after.len());
            out.push((&after[..end], true));
            rest = after.get(end + MATCH_END.len_utf8()..).unwrap_or_default();
        }
        out.push((rest, false));
        out.retain(|(t, _)| !t.is_empty());
        out
    }

    /// The excerpt without its match marks.
    pub(crate) fn plain(&self) -> String {
        self.parts().into_iter().map(|(t, _)| t).collect()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TypeCount {
    pub(crate) role: Role,
    pub(crate) ty: ChunkType,
    pub(crate) count: i64,
}

/// What a session used and cost, summed over its `turn_end` records (not one turn's counts:
/// those are [`crate::log::Usage`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct UsageTotals {
    pub(crate) turns: i64,
    pub(crate) input: i64,
    pub(crate) output: i64,
    pub(crate) cache_read: i64,
    pub(crate) cache_write: i64,
    /// US dollars, summed from the records that say what their turn cost (`cost_usd`).
    pub(crate) cost_usd: f64,
}

pub(super) const COLUMNS: &str =
    "id, session_id, seq, turn_id, step, role, type, data_json, created_at";

/// Column `i` as text, borrowed from SQLite's row buffer (no copy).
fn text_ref<'r>(r: &'r Row<'_>, i: usize) -> rusqlite::Result<&'r str> {
    let v = r.get_ref(i)?;
    v.as_str()
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, v.data_type(), Box::new(e)))
}

pub(super) fn from_row(r: &Row<'_>) -> rusqlite::Result<Chunk> {
    let role = text_ref(r, 5)?;
    let ty = text_ref(r, 6)?;
    let (role, ty) = parse_kind(r, role, ty)?;
    let data = ChunkData::from_json(ty, text_ref(r, 7)?).map_err(|e| corrupt(r, e))?;
    finish(r, role, data)
}

/// Why a stored row is not a chunk; it travels through rusqlite's row mapping and becomes
/// [`StoreError::DamagedChunk`].
#[derive(Debug, thiserror::Error)]
#[error("chunk {id}: {message}")]
pub(super) struct Damaged {
    pub(super) id: String,
    pub(super) message: String,
}

/// A stored chunk's data that does not fit its type.
fn corrupt(r: &Row<'_>, what: String) -> rusqlite::Error {
    let id = text_ref(r, 0).unwrap_or("?").to_owned();
    rusqlite::Error::FromSqlConversionFailure(
        7,
        rusqlite::types::Type::Text,
        Box::new(Damaged { id, message: what }),
    )
}

fn parse_kind(r: &Row<'_>, role: &str, ty: &str) -> rusqlite::Result<(Role, ChunkType)> {
    let role = Role::parse(role).ok_or_else(|| corrupt(r, format!("unknown role {role:?}")))?;
    let ty = ChunkType::parse(ty).ok_or_else(|| corrupt(r, format!("unknown type {ty:?}")))?;
    Ok((role, ty))
}

fn finish(r: &Row<'_>, role: Role, data: ChunkData) -> rusqlite::Result<Chunk> {
    Ok(Chunk {
        id: text_ref(r, 0)?.to_owned(),
        session: text_ref(r, 1)?.to_owned(),
        seq: r.get(2)?,
        turn: text_ref(r, 3)?.to_owned(),
        step: r.get(4)?,
        role,
        data,
        ts: r.get(8)?,
    })
}

/// The head of a `system` record: its kind, and the ids an `attempt_abandoned` names. Other
/// fields are skipped without being decoded.
#[derive(serde::Deserialize)]
struct SystemHead {
    kind: String,
    #[serde(default)]
    chunk_ids: Option<serde_json::Value>,
}

/// [`from_row`] for a fold: `None` for what the fold never reads (error records, and system
/// records other than `attempt_abandoned`, `compaction` and `prune`); an `attempt_abandoned`
/// keeps only `kind` and `chunk_ids`.
pub(super) fn fold_row(r: &Row<'_>) -> rusqlite::Result<Option<Chunk>> {
    let role = text_ref(r, 5)?;
    let ty = text_ref(r, 6)?;
    let (role, ty) = parse_kind(r, role, ty)?;
    let text = text_ref(r, 7)?;
    let data = match ty {
        ChunkType::Error => return Ok(None),
        ChunkType::System => match serde_json::from_str::<SystemHead>(text) {
            // A compaction is where the fold starts, a prune names results it clears: both
            // are read whole.
            Ok(h)
                if h.kind == crate::fold::compaction::KIND
                    || h.kind == crate::fold::prune::KIND =>
            {
                ChunkData::from_json(ty, text).map_err(|e| corrupt(r, e))?
            }
            Ok(h) if h.kind != "attempt_abandoned" => return Ok(None),
            Ok(h) => {
                let mut m = serde_json::Map::new();
                m.insert("kind".into(), h.kind.into());
                if let Some(ids) = h.chunk_ids {
                    m.insert("chunk_ids".into(), ids);
                }
                ChunkData::System(m)
            }
            // Not the expected shape: decode it fully, for the same error as any read.
            Err(_) => ChunkData::from_json(ty, text).map_err(|e| corrupt(r, e))?,
        },
        _ => ChunkData::from_json(ty, text).map_err(|e| corrupt(r, e))?,
    };
    finish(r, role, data).map(Some)
}

impl Store {
    /// Append a batch to a session in one transaction; seqs are allocated under the write
    /// lock, so concurrent writers interleave whole batches and never collide. Chunks with no
    /// `turn` share one new turn. Returns the stored chunks.
    pub fn append(&self, session_id: &str, chunks: Vec<NewChunk>) -> Result<Vec<Chunk>> {
        self.write(|tx| append_in(tx, session_id, chunks))
    }

    /// Append a stream of chunks to an existing session or to a new one, in one transaction.
    /// Each stored chunk goes to `sink` (printed only after this returns, when the batch is
    /// committed). An empty stream is refused and writes nothing.
    pub(crate) fn append_stream(
        &self,
        target: AppendTarget,
        chunks: impl Iterator<Item = Result<NewChunk>>,
        sink: &mut dyn FnMut(Chunk),
    ) -> Result<(Session, usize)> {
        let (session_id, n) = self.write(|tx| {
            let session_id = match target {
                AppendTarget::Session(id) => id,
                AppendTarget::New(new) => self.create_session(*new)?.id,
            };
            let n = append_each(tx, &session_id, chunks, sink)?;
            if n == 0 {
                return Err(StoreError::EmptyBatch);
            }
            Ok((session_id, n))
        })?;
        Ok((self.session(&session_id)?, n))
    }

    /// Stream a page of a session's view, oldest first, without holding it in memory.
    pub(crate) fn for_each_chunk<E>(
        &self,
        session: &Session,
        page: &Page,
        mut f: impl FnMut(Chunk) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E>
    where
        E: From<StoreError>,
    {
        self.scan(session, page, |r| from_row(r).map(Some), &mut f)
    }

    /// The rows of a page of a view, oldest first, each decoded by `decode` (which may skip
    /// it) and handed to `f`.
    pub(super) fn scan<E>(
        &self,
        session: &Session,
        page: &Page,
        decode: impl Fn(&Row<'_>) -> rusqlite::Result<Option<Chunk>>,
        mut f: impl FnMut(Chunk) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E>
    where
        E: From<StoreError>,
    {
        let segs = self.segments(session)?;
        let len = self.view_len(session)?;
        let mut hi = len;
        if let Some(b) = page.before {
            hi = hi.min(b - 1);
        }
        let mut lo = page.after.unwrap_or(0).max(0);
        if let Some(limit) = page.limit {
            match &page.turn {
                None => lo = lo.max(hi - limit as i64),
                Some(turn) => {
                    // The turn's chunks need not be contiguous: find the newest N by seq.
                    let (filter, mut args) = segment_filter(&segs, lo, hi);
                    args.push(turn.clone().into());
                    args.push((limit as i64).into());
                    let sql = format!(
                        "SELECT MIN(seq) FROM (SELECT seq FROM chunks INDEXED BY chunks_turn \
                         WHERE {filter} AND turn_id = ? ORDER BY seq DESC LIMIT ?)"
                    );
                    let min: Option<i64> = self
                        .conn()
                        .query_row(&sql, params_from_iter(args), |r| r.get(0))
                        .map_err(StoreError::from)?;
                    lo = lo.max(min.unwrap_or(hi + 1) - 1);
                }
            }
        }
        if hi <= lo {
            return Ok(());
        }
        for seg in &segs {
            let (filter, mut args) = segment_filter(std::slice::from_ref(seg), lo, hi);
            if filter == "0" {
                continue;
            }
            // A turn's chunks come from the turn index: left to itself, SQLite walks the
            // session's seq range instead, the whole log for a turn in the middle.
            let mut sql = match &page.turn {
                Some(turn) => {
                    args.push(turn.clone().into());
                    format!("SELECT {COLUMNS} FROM chunks INDEXED BY chunks_turn WHERE {filter} AND turn_id = ?")
                }
                None => format!("SELECT {COLUMNS} FROM chunks WHERE {filter}"),
            };
            sql.push_str(" ORDER BY seq");
            let mut stmt = self.conn().prepare_cached(&sql).map_err(StoreError::from)?;
            let mut rows = stmt
                .query(params_from_iter(args))
                .map_err(StoreError::from)?;
            while let Some(row) = rows.next().map_err(StoreError::from)? {
                if let Some(c) = decode(row).map_err(StoreError::from)? {
                    f(c)?;
                }
            }
        }
        Ok(())
    }

    /// The whole view in memory, for folding.
    pub(crate) fn load_view(&self, session: &Session) -> Result<Vec<Chunk>> {
        let mut out = Vec::with_capacity(self.view_len(session)?.max(0) as usize);
        self.for_each_chunk(session, &Page::default(), |c| {
            out.push(c);
            Ok::<(), StoreError>(())
        })?;
        Ok(out)
    }

    /// What [`crate::fold::fold`] reads of the view, and folds exactly as it folds the whole
    /// view: every chunk but error records and the system records other than
    /// `attempt_abandoned` (those keep only `kind` and `chunk_ids`). Cheaper to load than
    /// [`Store::load_view`] when the log holds many `turn_end` records.
    pub fn load_fold_view(&self, session: &Session) -> Result<Vec<Chunk>> {
        let mut out = Vec::with_capacity(self.view_len(session)?.max(0) as usize);
        self.scan(session, &Page::default(), fold_row, |c| {
            out.push(c);
            Ok::<(), StoreError>(())
        })?;
        Ok(out)
    }

    /// Full-text search over what was said and done (the indexed chunks: text, thinking, tool
    /// calls and results, peer speech, errors), newest first or best match first. The query
    /// language is [`super::fts`]'s.
    ///
    /// The index is the outer loop (`CROSS JOIN`): newest first walks it by rowid from the end
    /// and stops at `limit`, whatever the size of the store or the session; by rank, FTS5 ranks
    /// the matches once. Joined the other way, SQLite would probe the index once per chunk of
    /// the session.
    pub(crate) fn search(
        &self,
        query: &str,
        session: Option<&Session>,
        sort: SearchSort,
        limit: u64,
    ) -> Result<Vec<SearchHit>> {
        let matching = super::fts::fts_query(query)?;
        self.index_current()?;
        let mut args: Vec<rusqlite::types::Value> = vec![matching.into()];
        let mut sql = format!(
            "SELECT {cols}, snippet(chunks_fts, 0, '{start}', '{end}', '…', 12) FROM chunks_fts \
             CROSS JOIN chunks c ON c.rowid = chunks_fts.rowid WHERE chunks_fts MATCH ?",
            cols = prefixed_columns("c."),
            start = super::fts::MATCH_START,
            end = super::fts::MATCH_END,
        );
        if let Some(s) = session {
            let segs = self.segments(s)?;
            let (filter, more) = segment_filter_in("c.", &segs, 0, i64::MAX);
            sql.push_str(" AND ");
            sql.push_str(&filter);
            args.extend(more);
            // The index starts at the view's newest chunk, not at what others wrote since.
            let (lo, hi) = self.rowid_bounds(&segs)?.unwrap_or((1, 0));
            sql.push_str(" AND chunks_fts.rowid BETWEEN ? AND ?");
            args.extend([lo.into(), hi.into()]);
        }
        sql.push_str(match sort {
            SearchSort::Newest => " ORDER BY chunks_fts.rowid DESC LIMIT ?",
            SearchSort::Rank => " ORDER BY chunks_fts.rank LIMIT ?",
        });
        args.push((limit.min(i64::MAX as u64) as i64).into());
        let mut stmt = self.conn().prepare(&sql)?;
        let hits = stmt
            .query_map(params_from_iter(args), |r| {
                Ok(SearchHit {
                    chunk: from_row(r)?,
                    snippet: r.get::<_, Option<String>>(9)?.unwrap_or_default(),
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(hits)
    }

    /// Bring the full-text index up to date, or fail when chunks are left out of it: only
    /// what is already indexed could be searched, so a failure is said rather than answered
    /// with "no matches" for chunks that were never looked at.
    pub(super) fn index_current(&self) -> Result<()> {
        if let Err(e) = self.index_pending() {
            if self.unindexed()? {
                return Err(StoreError::SearchIndex(Box::new(e)));
            }
        }
        Ok(())
    }

    /// How many chunks were written since the full-text index was last brought up to date
    /// (what the next search indexes first).
    pub(crate) fn index_backlog(&self) -> Result<i64> {
        Ok(self.conn().query_row(
            "SELECT COUNT(*) FROM chunks WHERE rowid > (SELECT last_rowid FROM fts_state WHERE id = 1)",
            [],
            |r| r.get(0),
        )?)
    }

    /// Whether indexed kinds of chunks were written since the index was last brought up to
    /// date.
    fn unindexed(&self) -> Result<bool> {
        Ok(self.conn().query_row(
            &format!(
                "SELECT EXISTS (SELECT 1 FROM chunks WHERE {INDEXED} \
                   AND rowid > (SELECT last_rowid FROM fts_state WHERE id = 1))"
            ),
            [],
            |r| r.get(0),
        )?)
    }

    /// Bring the full-text index up to date with the log. Appends leave indexing to the
    /// first search after them, so writing a chunk costs one row, not two.
    fn index_pending(&self) -> Result<()> {
        self.write(|tx| {
            let last: i64 =
                tx.query_row("SELECT last_rowid FROM fts_state WHERE id = 1", [], |r| {
                    r.get(0)
                })?;
            tx.execute(
                &format!(
                    "INSERT INTO chunks_fts (rowid, text) SELECT rowid, {INDEXED_TEXT} \
                     FROM chunks WHERE rowid > ?1 AND {INDEXED}"
                ),
                [last],
            )?;
            tx.execute(
                "UPDATE fts_state SET last_rowid = (SELECT COALESCE(MAX(rowid), ?1) FROM chunks) WHERE id = 1",
                [last],
            )?;
            Ok(())
        })
    }
}

/// The chunks the full-text index holds: what was said and done — text, thinking, tool calls
/// and results, peer speech, errors — but not `recall`'s own calls and results (a search would
/// otherwise keep finding its earlier answers) and not system records.
const INDEXED: &str = "type IN ('text', 'thinking', 'tool_call', 'tool_result', 'peer', 'error') \
     AND NOT (type IN ('tool_call', 'tool_result') \
     AND json_extract(data_json, '$.name') = 'recall')";

/// The indexed text of a chunk: a call is its tool's name and its arguments as JSON; peer
/// speech is each message's sender and text.
const INDEXED_TEXT: &str = "CASE type \
     WHEN 'tool_call' THEN json_extract(data_json, '$.name') || ' ' \
       || json_extract(data_json, '$.arguments') \
     WHEN 'tool_result' THEN json_extract(data_json, '$.result') \
     WHEN 'peer' THEN (SELECT group_concat(json_extract(m.value, '$.from') || ': ' \
       || json_extract(m.value, '$.text'), char(10)) FROM json_each(data_json, '$.messages') m) \
     WHEN 'error' THEN json_extract(data_json, '$.message') \
     ELSE json_extract(data_json, '$.text') END";

/// [`COLUMNS`], each qualified with `q`.
pub(super) fn prefixed_columns(q: &str) -> String {
    COLUMNS
        .split(", ")
        .map(|c| format!("{q}{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Append inside an open write transaction (shared with the queue drain).
pub(super) fn append_in(
    conn: &Connection,
    session_id: &str,
    chunks: Vec<NewChunk>,
) -> Result<Vec<Chunk>> {
    let mut out = Vec::with_capacity(chunks.len());
    append_each(conn, session_id, chunks.into_iter().map(Ok), &mut |c| {
        out.push(c)
    })?;
    Ok(out)
}

/// Append chunks as they come, each stored chunk handed to `sink`. The caller's transaction
/// makes the batch atomic, so the input can be decoded while it is written: an error from the
/// iterator rolls everything back like any other.
pub(super) fn append_each(
    conn: &Connection,
    session_id: &str,
    chunks: impl Iterator<Item = Result<NewChunk>>,
    sink: &mut dyn FnMut(Chunk),
) -> Result<usize> {
    let fork_seq: Option<i64> = conn
        .prepare_cached("SELECT fork_seq FROM sessions WHERE id = ?1")?
        .query_row([session_id], |r| r.get(0))
        .map_err(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => StoreError::SessionNotFound(session_id.into()),
            e => e.into(),
        })?;
    let last: Option<i64> = conn
        .prepare_cached("SELECT MAX(seq) FROM chunks WHERE session_id = ?1")?
        .query_row([session_id], |r| r.get(0))?;
    let first = last.or(fork_seq).unwrap_or(0) + 1;
    let now = clock::now_ms();
    let default_turn = ids::new_id();
    let mut insert = conn.prepare_cached(
        "INSERT INTO chunks (id, session_id, seq, turn_id, step, role, type, data_json, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    let mut count = 0usize;
    let mut tally = super::stats::Tally::default();
    for (i, c) in chunks.enumerate() {
        let next = first + i as i64;
        let bad = |message: String| StoreError::BadChunk { index: i, message };
        let chunk = place(c?, session_id, next, &default_turn, now).map_err(bad)?;
        let data_json = chunk.data.to_json();
        insert
            .execute(params![
                chunk.id,
                chunk.session,
                chunk.seq,
                chunk.turn,
                chunk.step,
                chunk.role.as_str(),
                chunk.chunk_type().as_str(),
                data_json,
                chunk.ts
            ])
            .map_err(|e| match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::ConstraintViolation) => bad(format!(
                    "field `id`: a chunk with id {} already exists",
                    chunk.id
                )),
                _ => e.into(),
            })?;
        tally.add_chunk(&chunk);
        sink(chunk);
        count += 1;
    }
    if count > 0 {
        tally.store(conn, session_id)?;
        conn.prepare_cached("UPDATE sessions SET updated_at = ?2 WHERE id = ?1")?
            .execute(params![session_id, now])?;
    }
    Ok(count)
}

/// A new chunk as it is stored at `seq` of `session_id`; refused when a field it brought
/// contradicts where it goes.
fn place(c: NewChunk, session_id: &str, seq: i64, turn: &str, now: i64) -> Result<Chunk, String> {
    if let Some(s) = &c.session {
        if s != session_id {
            return Err(format!(
                "field `session`: {s} is not the target session {session_id}"
            ));
        }
    }
    if let Some(given) = c.seq {
        if given != seq {
            return Err(format!(
                "field `seq`: {given} is not the next seq of the session ({seq})"
            ));
        }
    }
    crate::log::check_role_type(c.role, c.data.chunk_type())?;
    Ok(Chunk {
        id: c.id.unwrap_or_else(ids::new_id),
        session: session_id.to_string(),
        seq,
        turn: c.turn.unwrap_or_else(|| turn.to_string()),
        step: c.step,
        role: c.role,
        ts: c.ts.unwrap_or(now),
        data: c.data,
    })
}
