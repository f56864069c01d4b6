//! Per-session tallies kept as the log is written: how many chunks of each role and type a
//! session holds, and the token usage of its `turn_end` records. `ag-log show` reads a view's
//! tallies from them (a fork's sources cut short are made up from the shorter side of the
//! cut), so it costs the same on a million chunks as on ten.

use std::borrow::Cow;
use std::collections::BTreeMap;

use rusqlite::{params, Connection};

use super::chunks::{TypeCount, UsageTotals};
use super::{Result, Session, Store};
use crate::log::{Chunk, ChunkData, ChunkType, Role};

/// A (role, type) key: the names of a written chunk's role and type are borrowed, so counting
/// it allocates nothing; those read back from the store are owned.
type Key = (Cow<'static, str>, Cow<'static, str>);

/// Chunk counts by (role, type) and `turn_end` usage, over some chunks.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Tally {
    counts: BTreeMap<Key, i64>,
    usage: UsageTotals,
}

impl Tally {
    /// Count one chunk as it is written.
    pub(super) fn add_chunk(&mut self, c: &Chunk) {
        let key = (
            Cow::Borrowed(c.role.as_str()),
            Cow::Borrowed(c.chunk_type().as_str()),
        );
        *self.counts.entry(key).or_default() += 1;
        if let ChunkData::System(m) = &c.data {
            if m.get("kind").and_then(|k| k.as_str()) == Some(crate::log::TURN_END) {
                let n = |k: &str| {
                    m.get("usage")
                        .and_then(|u| u.get(k))
                        .and_then(|v| v.as_i64())
                };
                self.usage.turns += 1;
                self.usage.input += n("input").unwrap_or(0);
                self.usage.output += n("output").unwrap_or(0);
                self.usage.cache_read += n("cache_read").unwrap_or(0);
                self.usage.cache_write += n("cache_write").unwrap_or(0);
                self.usage.cost_usd += m.get("cost_usd").and_then(|v| v.as_f64()).unwrap_or(0.0);
            }
        }
    }

    fn merge(&mut self, other: &Tally, sign: i64) {
        for (k, v) in &other.counts {
            *self.counts.entry(k.clone()).or_default() += sign * v;
        }
        let (u, o) = (&mut self.usage, &other.usage);
        u.turns += sign * o.turns;
        u.input += sign * o.input;
        u.output += sign * o.output;
        u.cache_read += sign * o.cache_read;
        u.cache_write += sign * o.cache_write;
        u.cost_usd += sign as f64 * o.cost_usd;
    }

    /// Add this batch's tally to the session's stored one (inside the batch's transaction).
    pub(super) fn store(&self, conn: &Connection, session_id: &str) -> Result<()> {
        let mut count = conn.prepare_cached(
            "INSERT INTO chunk_counts (session_id, role, type, count) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (session_id, role, type) DO UPDATE SET count = count + excluded.count",
        )?;
        for ((role, ty), n) in &self.counts {
            count.execute(params![session_id, role, ty, n])?;
        }
        let u = &self.usage;
        if u.turns > 0 {
            conn.prepare_cached(
                "INSERT INTO turn_totals (session_id, turns, input, output, cache_read, cache_write, \
                 cost_usd) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (session_id) DO UPDATE SET \
                 turns = turns + excluded.turns, input = input + excluded.input, \
                 output = output + excluded.output, cache_read = cache_read + excluded.cache_read, \
                 cache_write = cache_write + excluded.cache_write, \
                 cost_usd = cost_usd + excluded.cost_usd",
            )?
            .execute(params![
                session_id,
                u.turns,
                u.input,
                u.output,
                u.cache_read,
                u.cache_write,
                u.cost_usd
            ])?;
        }
        Ok(())
    }
}

impl Store {
    /// How many chunks of each role and type a session's view holds.
    pub(crate) fn type_counts(&self, session: &Session) -> Result<Vec<TypeCount>> {
        let tally = self.view_tally(session)?;
        Ok(tally
            .counts
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .filter_map(|((role, ty), count)| {
                Some(TypeCount {
                    role: Role::parse(&role)?,
                    ty: ChunkType::parse(&ty)?,
                    count,
                })
            })
            .collect())
    }

    /// Token usage summed from the `turn_end` records of a session's view.
    pub(crate) fn usage(&self, session: &Session) -> Result<UsageTotals> {
        Ok(self.view_tally(session)?.usage)
    }

    /// The tally of a view: each segment's stored total, less what lies past the cut when
    /// a source went on after it (or the cut part counted directly, when that is shorter).
    fn view_tally(&self, session: &Session) -> Result<Tally> {
        let mut total = Tally::default();
        for seg in self.segments(session)? {
            let own_max: i64 = self.conn().query_row(
                "SELECT COALESCE(MAX(seq), 0) FROM chunks WHERE session_id = ?1",
                [&seg.session],
                |r| r.get(0),
            )?;
            if seg.hi >= own_max {
                total.merge(&self.stored_tally(&seg.session)?, 1);
            } else if own_max - seg.hi < seg.hi - seg.lo {
                total.merge(&self.stored_tally(&seg.session)?, 1);
                total.merge(&self.range_tally(&seg.session, seg.hi, own_max)?, -1);
            } else {
                total.merge(&self.range_tally(&seg.session, seg.lo, seg.hi)?, 1);
            }
        }
        Ok(total)
    }

    fn stored_tally(&self, session_id: &str) -> Result<Tally> {
        let mut t = Tally {
            counts: self.counts(
                "SELECT role, type, count FROM chunk_counts WHERE session_id = ?1",
                [session_id],
            )?,
            ..Tally::default()
        };
        t.usage = self
            .conn()
            .prepare_cached(
                "SELECT turns, input, output, cache_read, cache_write, cost_usd FROM turn_totals \
                 WHERE session_id = ?1",
            )?
            .query_row([session_id], usage_row)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(UsageTotals::default()),
                e => Err(e),
            })?;
        Ok(t)
    }

    /// The tally of a session's own chunks with `lo < seq <= hi`, counted from the log.
    fn range_tally(&self, session_id: &str, lo: i64, hi: i64) -> Result<Tally> {
        let mut t = Tally {
            counts: self.counts(
                "SELECT role, type, COUNT(*) FROM chunks WHERE session_id = ?1 AND seq > ?2 \
                 AND seq <= ?3 GROUP BY role, type",
                params![session_id, lo, hi],
            )?,
            ..Tally::default()
        };
        t.usage = self
            .conn()
            .prepare_cached(
                "SELECT COUNT(*), \
                   COALESCE(SUM(json_extract(data_json, '$.usage.input')), 0), \
                   COALESCE(SUM(json_extract(data_json, '$.usage.output')), 0), \
                   COALESCE(SUM(json_extract(data_json, '$.usage.cache_read')), 0), \
                   COALESCE(SUM(json_extract(data_json, '$.usage.cache_write')), 0), \
                   COALESCE(SUM(json_extract(data_json, '$.cost_usd')), 0.0) \
                 FROM chunks WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 \
                   AND type = 'system' AND json_extract(data_json, '$.kind') = 'turn_end'",
            )?
            .query_row(params![session_id, lo, hi], usage_row)?;
        Ok(t)
    }
}

impl Store {
    /// The `(role, type, count)` rows `sql` gives, by role and type.
    fn counts(&self, sql: &str, args: impl rusqlite::Params) -> Result<BTreeMap<Key, i64>> {
        let mut stmt = self.conn().prepare_cached(sql)?;
        let rows = stmt.query_map(args, |r| {
            let key = (Cow::Owned(r.get(0)?), Cow::Owned(r.get(1)?));
            Ok((key, r.get(2)?))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

fn usage_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<UsageTotals> {
    Ok(UsageTotals {
        turns: r.get(0)?,
        input: r.get(1)?,
        output: r.get(2)?,
        cache_read: r.get(3)?,
        cache_write: r.get(4)?,
        cost_usd: r.get(5)?,
    })
}
