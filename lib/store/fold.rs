//! A session's view as the streaming fold reads it ([`crate::fold::stream::Source`]): its
//! latest compaction through the index, then three passes in seq order, each reading only
//! the rows it needs (the records; the call ids of calls and results; every chunk the fold
//! reads), so no pass holds the view.

use rusqlite::{params_from_iter, Row, Transaction, TransactionBehavior};

use super::chunks::{fold_row, Page};
use super::lineage::segment_filter;
use super::{Result, Session, Store, StoreError};
use crate::fold::compaction::Compaction;
use crate::fold::stream::{CallMark, Source};
use crate::log::Chunk;

/// The view of `session` in `store`, for [`crate::fold::stream::fold_to_writer`]
/// (through [`Store::with_fold_source`]).
pub(crate) struct FoldSource<'s> {
    store: &'s Store,
    session: &'s Session,
}

impl Store {
    /// Run `f` on the view of `session` as one snapshot (a read transaction): every pass
    /// reads the log as it was when the first began, whatever is appended meanwhile.
    pub(crate) fn with_fold_source<T>(
        &self,
        session: &Session,
        f: impl FnOnce(&mut FoldSource<'_>) -> T,
    ) -> Result<T> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Deferred)
            .map_err(|e| self.classify(e))?;
        let out = f(&mut FoldSource {
            store: self,
            session,
        });
        // Only reads happened: ending the transaction lets the snapshot go.
        tx.commit().map_err(|e| self.classify(e))?;
        Ok(out)
    }

    /// The rows of the view with `seq > after` and `and` true, oldest first, with `columns`.
    fn view_rows(
        &self,
        session: &Session,
        after: i64,
        columns: &str,
        and: &str,
        mut f: impl FnMut(&Row<'_>) -> Result<()>,
    ) -> Result<()> {
        let hi = self.view_len(session)?;
        for seg in self.segments(session)? {
            let (filter, args) = segment_filter(std::slice::from_ref(&seg), after.max(0), hi);
            if filter == "0" {
                continue;
            }
            let sql = format!("SELECT {columns} FROM chunks WHERE {filter} AND {and} ORDER BY seq");
            let mut stmt = self.conn().prepare_cached(&sql)?;
            let mut rows = stmt.query(params_from_iter(args))?;
            while let Some(row) = rows.next()? {
                f(row)?;
            }
        }
        Ok(())
    }
}

/// Why a scan stopped: a store error, or the reader said stop.
enum Stop {
    Store(StoreError),
    Asked,
}

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Stop {
        Stop::Store(e)
    }
}

impl Source for FoldSource<'_> {
    type Error = StoreError;

    fn latest_compaction(&mut self) -> Result<Option<Compaction>> {
        Ok(self.store.latest_compaction(self.session)?.map(|(_, c)| c))
    }

    fn records(&mut self, after: i64, f: &mut dyn FnMut(Chunk)) -> Result<()> {
        self.store.view_rows(
            self.session,
            after,
            super::chunks::COLUMNS,
            "type = 'system'",
            |r| {
                if let Some(c) = fold_row(r)? {
                    f(c);
                }
                Ok(())
            },
        )
    }

    fn calls(&mut self, after: i64, f: &mut dyn FnMut(CallMark)) -> Result<()> {
        // A row whose data is not JSON is left to the last pass, which names the chunk.
        self.store.view_rows(
            self.session,
            after,
            "seq, id, type, CASE WHEN json_valid(data_json) THEN \
             CASE WHEN json_type(data_json, '$.call_id') = 'text' \
             THEN json_extract(data_json, '$.call_id') END END",
            "type IN ('tool_call', 'tool_result')",
            |r| {
                if let Some(call_id) = r.get::<_, Option<String>>(3)? {
                    f(CallMark {
                        seq: r.get(0)?,
                        id: r.get(1)?,
                        call_id,
                        is_call: r.get_ref(2)?.as_str() == Ok("tool_call"),
                    });
                }
                Ok(())
            },
        )
    }

    fn chunks(&mut self, after: i64, f: &mut dyn FnMut(Chunk) -> bool) -> Result<()> {
        let page = Page {
            after: Some(after.max(0)),
            ..Page::default()
        };
        let read = self.store.scan(self.session, &page, fold_row, |c| {
            if f(c) {
                Ok(())
            } else {
                Err(Stop::Asked)
            }
        });
        match read {
            Ok(()) | Err(Stop::Asked) => Ok(()),
            Err(Stop::Store(e)) => Err(e),
        }
    }
}
