//! `ag-prompt --wait`: a prompt queued for a busy session waits for the turn that takes it to
//! end, so a script gets that turn's answer as if it had run the turn itself.

use std::time::Duration;

use serde_json::Value;

use crate::follow::Follower;
use crate::log::ChunkData;
use crate::store::{Page, Session, SessionStatus, Store, StoreError};

/// How a wait ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Waited {
    /// The turn that took the prompt ended: its id and its `turn_end` fields.
    Ended { turn: String, end: Value },
    /// The running process went away before it took the prompt; it stays queued for the
    /// session's next run.
    OwnerGone,
}

/// Type-ahead: `text` joins the turn running in the session at its next step boundary (or, at
/// the turn's end, starts the next turn of that run). `None` when no turn runs: the caller
/// runs one with the text.
pub(crate) fn type_ahead(
    store: &Store,
    session: &str,
    text: &str,
) -> Result<Option<i64>, StoreError> {
    store.queue_if_running(session, text)
}

/// Wait until queued item `item` (text `text`) has been taken, then until the turn that took
/// it has ended.
pub(crate) fn wait_for_queued(
    store: &Store,
    session: &Session,
    item: i64,
    text: &str,
) -> Result<Waited, StoreError> {
    // The store's files change as the owner writes: that wakes us; the poll is the backstop
    // (and notices an owner that died without writing).
    let mut follower = Follower::new(Duration::from_millis(250));
    if let Some(dir) = store.path().parent() {
        follower = follower.watch(dir, false);
    }
    // Taken: the item left the queue, into the log.
    while store.queued(&session.id)?.iter().any(|q| q.id == item) {
        let now = store.reaped(store.resolve(&session.id)?);
        if now.status != SessionStatus::Running {
            return Ok(Waited::OwnerGone);
        }
        follower.wait(None);
    }
    let Some(turn) = taking_turn(store, session, text)? else {
        return Ok(Waited::OwnerGone);
    };
    loop {
        if let Some(end) = turn_end(store, session, &turn)? {
            return Ok(Waited::Ended { turn, end });
        }
        let now = store.reaped(store.resolve(&session.id)?);
        if now.status != SessionStatus::Running {
            // The owner died mid-turn: the next run ends it; there is no answer to give.
            if let Some(end) = turn_end(store, session, &turn)? {
                return Ok(Waited::Ended { turn, end });
            }
            return Ok(Waited::OwnerGone);
        }
        follower.wait(None);
    }
}

/// The turn of the latest user text `text` (the item just taken; an earlier identical prompt
/// comes before it): found walking back from the newest chunk.
fn taking_turn(store: &Store, session: &Session, text: &str) -> Result<Option<String>, StoreError> {
    let mut found = None;
    store.walk_back(session, store.view_len(session)?, |c| {
        if c.role == "user"
            && c.ty == "text"
            && c.data.get("text").and_then(|t| t.as_str()) == Some(text)
        {
            found = Some(c.turn.clone());
            return false;
        }
        true
    })?;
    Ok(found)
}

/// The fields of a turn's `turn_end`, once it has one.
fn turn_end(store: &Store, session: &Session, turn: &str) -> Result<Option<Value>, StoreError> {
    let mut end = None;
    let page = Page {
        turn: Some(turn.to_string()),
        ..Default::default()
    };
    store.for_each_chunk(session, &page, |c| {
        if let ChunkData::System(m) = &c.data {
            if c.data.is_turn_end() {
                end = Some(Value::Object(m.clone()));
            }
        }
        Ok::<(), StoreError>(())
    })?;
    Ok(end)
}
