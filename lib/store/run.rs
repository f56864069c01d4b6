//! Who is running a session: claiming it for a turn, queueing behind a live owner, and ending
//! a turn atomically with the last look at the queue, so no queued input is ever stranded.

use rusqlite::params;

use super::chunks::append_in;
use super::{Result, SessionStatus, Store, StoreError};
use crate::log::{Chunk, NewChunk};
use crate::{clock, proc};

/// What `claim_or_queue` did.
#[derive(Debug, Clone, PartialEq)]
enum Claim {
    /// This process now runs the session.
    Claimed,
    /// A live process runs it; the text was queued (queue id, owner pid).
    Queued { id: i64, owner: i64 },
    /// A live process runs it and queueing was not wanted.
    Busy { owner: i64 },
}

/// What [`Store::lease`] got.
#[derive(Debug)]
pub(crate) enum Leased<'s> {
    /// This process now runs the session, until the lease is dropped.
    Held(Lease<'s>),
    /// A live process runs it; the text was queued for it (queue id, owner pid).
    Queued { id: i64, owner: i64 },
    /// A live process runs it and nothing was queued.
    Busy { owner: i64 },
}

/// A session this process runs. The library hands it out ([`Store::lease`]) and it releases
/// the session when dropped, on every path, a panic's unwinding included: with the status its
/// holder chose ([`Lease::end_as`]; `idle` unless told), or not at all when the end of a turn
/// already released it in the same transaction as the turn's last record
/// ([`Lease::end_turn_or_drain`]). Nothing else releases a session.
pub(crate) struct Lease<'s> {
    store: &'s Store,
    session: String,
    end: std::cell::Cell<SessionStatus>,
    released: std::cell::Cell<bool>,
}

impl Lease<'_> {
    /// The status the session is left in when the lease is dropped.
    pub(crate) fn end_as(&self, status: SessionStatus) {
        self.end.set(status);
    }

    /// [`Store::end_turn_or_drain`] on the held session: when the turn ends, the session is
    /// released with `status` in the same transaction, and dropping the lease does nothing.
    pub(crate) fn end_turn_or_drain(
        &self,
        turn: &str,
        step: i64,
        turn_end: NewChunk,
        status: SessionStatus,
    ) -> Result<TurnEnd> {
        let end =
            self.store
                .end_turn_or_drain(&self.session, turn, step, turn_end, status.as_str())?;
        if matches!(end, TurnEnd::Ended(_)) {
            self.released.set(true);
        }
        Ok(end)
    }
}

impl std::fmt::Debug for Lease<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("session", &self.session)
            .field("end", &self.end.get())
            .field("released", &self.released.get())
            .finish()
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if !self.released.get() {
            let _ = self.store.release(&self.session, self.end.get().as_str());
        }
    }
}

/// What `end_turn_or_drain` did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TurnEnd {
    /// The turn ended; the session is released.
    Ended(Box<Chunk>),
    /// Input was waiting: it is now in the log, and the turn goes on.
    Drained(Vec<Chunk>),
}

impl Store {
    /// Become the running owner of a session (a [`Lease`]), or, when another live process
    /// owns it, queue `text` for that process (`None`: queue nothing).
    pub(crate) fn lease(&self, session_id: &str, text: Option<&str>) -> Result<Leased<'_>> {
        Ok(match self.claim_or_queue(session_id, text)? {
            Claim::Claimed => Leased::Held(Lease {
                store: self,
                session: session_id.to_string(),
                end: std::cell::Cell::new(SessionStatus::Idle),
                released: std::cell::Cell::new(false),
            }),
            Claim::Queued { id, owner } => Leased::Queued { id, owner },
            Claim::Busy { owner } => Leased::Busy { owner },
        })
    }

    /// Become the running owner of a session, or (when another live process owns it) queue
    /// `text` for it, all under the write lock. Input a dead owner left queued is moved into
    /// the log as the claim is made, so it comes before whatever the new owner appends.
    fn claim_or_queue(&self, session_id: &str, text: Option<&str>) -> Result<Claim> {
        self.write(|tx| {
            let (status, pid, start): (String, Option<i64>, Option<i64>) = tx
                .query_row(
                    "SELECT status, pid, pid_start FROM sessions WHERE id = ?1",
                    [session_id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .map_err(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => {
                        StoreError::SessionNotFound(session_id.into())
                    }
                    e => e.into(),
                })?;
            let (me, my_start) = proc::me();
            if status == "running" {
                if let Some(owner) = pid.filter(|p| *p != me && proc::alive(*p, start)) {
                    let claim = match text {
                        Some(t) => Claim::Queued {
                            id: super::queue::queue_in(tx, session_id, t)?,
                            owner,
                        },
                        None => Claim::Busy { owner },
                    };
                    return Ok(claim);
                }
            }
            tx.execute(
                "UPDATE sessions SET status = 'running', pid = ?2, pid_start = ?3, updated_at = ?4 WHERE id = ?1",
                params![session_id, me, my_start, clock::now_ms()],
            )?;
            // Input queued for an owner that died before taking it was sent before this
            // claim: it joins the log now, in send order, ahead of this run's own prompt.
            super::queue::drain_in(tx, session_id, &crate::ids::new_id(), 0)?;
            Ok(Claim::Claimed)
        })
    }

    /// Take waiting input into the log (as user chunks of `turn`/`step`) if there is any;
    /// otherwise append `turn_end`, set the final status and release the session. One
    /// transaction, so input queued a moment before the end is never left behind.
    fn end_turn_or_drain(
        &self,
        session_id: &str,
        turn: &str,
        step: i64,
        turn_end: NewChunk,
        status: &str,
    ) -> Result<TurnEnd> {
        let end = self.write(|tx| {
            let drained = super::queue::drain_in(tx, session_id, turn, step)?;
            if !drained.is_empty() {
                return Ok(TurnEnd::Drained(drained));
            }
            let mut stored = append_in(tx, session_id, vec![turn_end])?;
            release_in(tx, session_id, status)?;
            Ok(TurnEnd::Ended(Box::new(stored.remove(0))))
        })?;
        if matches!(end, TurnEnd::Ended(_)) {
            self.ended_as(session_id, status);
        }
        Ok(end)
    }

    /// A session as it really is: `running` whose owner process is gone is `interrupted`,
    /// and is recorded so when the store can be written. Input it had
    /// queued stays queued for the next run, which also kills its left-over tool group.
    pub(crate) fn reaped(&self, mut s: super::Session) -> super::Session {
        use super::SessionStatus;
        let Some(pid) = s.pid.filter(|_| s.status == SessionStatus::Running) else {
            return s;
        };
        if proc::alive(pid, s.pid_start) {
            return s;
        }
        let _ = self.reap(&s.id, s.pid, s.pid_start);
        s.status = SessionStatus::Interrupted;
        s.pid = None;
        s.pid_start = None;
        s
    }

    /// Give up ownership with a final status: only a [`Lease`] does.
    fn release(&self, session_id: &str, status: &str) -> Result<()> {
        release_in(self.conn(), session_id, status)?;
        self.ended_as(session_id, status);
        Ok(())
    }

    /// Record the model a session runs on and its durable settings.
    pub(crate) fn set_model_and_settings(
        &self,
        session_id: &str,
        model: &str,
        settings: &crate::settings::Settings,
    ) -> Result<()> {
        self.conn()
            .execute(
                "UPDATE sessions SET model = ?2, policy_json = ?3 WHERE id = ?1",
                params![session_id, model, settings.to_json()],
            )
            .map_err(|e| self.classify(e))?;
        Ok(())
    }
}

impl Store {
    /// Record a session's durable settings, keeping its model.
    pub(crate) fn set_settings(
        &self,
        session_id: &str,
        settings: &crate::settings::Settings,
    ) -> Result<()> {
        self.conn()
            .execute(
                "UPDATE sessions SET policy_json = ?2 WHERE id = ?1",
                params![session_id, settings.to_json()],
            )
            .map_err(|e| self.classify(e))?;
        Ok(())
    }
}

fn release_in(conn: &rusqlite::Connection, session_id: &str, status: &str) -> Result<()> {
    let (me, _) = proc::me();
    conn.execute(
        "UPDATE sessions SET status = ?2, pid = NULL, pid_start = NULL, updated_at = ?3 \
         WHERE id = ?1 AND (pid IS NULL OR pid = ?4)",
        params![session_id, status, clock::now_ms(), me],
    )?;
    Ok(())
}

impl Store {
    /// Record (or, with `None`, clear) the process group of the tool command a session is
    /// running, with its leader's start time.
    pub(crate) fn set_tool_group(&self, session_id: &str, group: Option<(i64, i64)>) -> Result<()> {
        self.conn()
            .execute(
                "UPDATE sessions SET tool_pgid = ?2, tool_pgid_start = ?3 WHERE id = ?1",
                params![session_id, group.map(|g| g.0), group.map(|g| g.1)],
            )
            .map_err(|e| self.classify(e))?;
        Ok(())
    }

    /// The tool process group a session recorded and never cleared (its runner was killed),
    /// cleared as it is read.
    pub(crate) fn take_tool_group(&self, session_id: &str) -> Result<Option<(i64, i64)>> {
        let group: (Option<i64>, Option<i64>) = self
            .conn()
            .query_row(
                "SELECT tool_pgid, tool_pgid_start FROM sessions WHERE id = ?1",
                [session_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.classify(e))?;
        match group {
            (Some(pgid), start) => {
                self.set_tool_group(session_id, None)?;
                Ok(Some((pgid, start.unwrap_or(0))))
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NewSession;

    fn status(store: &Store, id: &str) -> SessionStatus {
        store.session(id).unwrap().status
    }

    #[test]
    fn a_lease_releases_its_session_on_every_path() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_path(&dir.path().join("ag.db")).unwrap();
        let id = store.create_session(NewSession::default()).unwrap().id;
        // Dropped: idle.
        let Leased::Held(lease) = store.lease(&id, None).unwrap() else {
            panic!("not leased")
        };
        assert_eq!(status(&store, &id), SessionStatus::Running);
        drop(lease);
        assert_eq!(status(&store, &id), SessionStatus::Idle);
        // Told how it ends.
        let Leased::Held(lease) = store.lease(&id, None).unwrap() else {
            panic!("not leased")
        };
        lease.end_as(SessionStatus::Failed);
        drop(lease);
        assert_eq!(status(&store, &id), SessionStatus::Failed);
        // A panic while it is held releases it too.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let Leased::Held(_lease) = store.lease(&id, None).unwrap() else {
                panic!("not leased")
            };
            panic!("a bug mid-turn");
        }));
        assert!(caught.is_err());
        assert_eq!(status(&store, &id), SessionStatus::Idle);
        // The end of a turn releases it with the turn's record; the drop then does nothing.
        let Leased::Held(lease) = store.lease(&id, None).unwrap() else {
            panic!("not leased")
        };
        let end = NewChunk::new(
            crate::log::Role::System,
            crate::log::ChunkData::system(
                "turn_end",
                serde_json::json!({"stop_reason": "end_turn"}),
            ),
        )
        .in_turn("t1", 1);
        let ended = lease
            .end_turn_or_drain("t1", 1, end, SessionStatus::Done)
            .unwrap();
        assert!(matches!(ended, TurnEnd::Ended(_)));
        assert_eq!(status(&store, &id), SessionStatus::Done);
        drop(lease);
        assert_eq!(status(&store, &id), SessionStatus::Done);
    }
}
