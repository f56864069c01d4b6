//! Hearing: which lines a reader takes in, reading them from its cursors, receipts, and the
//! status of a message.

use super::file::Flow;
use super::presence::Me;
use super::{Line, LineKind, Room, RoomError};
use crate::log::{PeerKind, PeerMessage};
use crate::store::Store;

/// A line someone heard, and where it is.
#[derive(Debug, Clone)]
pub(crate) struct Heard {
    pub(crate) room: Room,
    pub(crate) offset: u64,
    pub(crate) line: Line,
}

/// Whether `me` takes `line` of `room` in: speech (`say`) that is not its own, to the room
/// (worktree rooms only) or addressed to it.
pub(crate) fn hears(room: &Room, line: &Line, me: &Me) -> bool {
    line.ty == LineKind::Say
        && !line.from.same(&me.from)
        && match &line.to {
            None => !room.is_device(),
            Some(t) => me.is_addressed(t),
        }
}

/// Whether `line` is a receipt for a line `me` posted: a `delivered` or `ack` addressed to it
/// by someone else.
pub(crate) fn hears_receipt(line: &Line, me: &Me) -> bool {
    matches!(line.ty, LineKind::Delivered | LineKind::Ack)
        && !line.from.same(&me.from)
        && line.to.as_deref().is_some_and(|t| me.is_addressed(t))
}

/// Stream what `me` hears in `rooms` after its cursors, with the receipts for its own lines
/// when `receipts`. A reader with no cursor yet hears the lines posted since `since` (unix ms;
/// a session: since it started running, so nothing said between its start and its first
/// read is lost), or the whole room when `None`. Returns the cursors to store: (room, offset).
pub(crate) fn read_new(
    store: &Store,
    me: &Me,
    rooms: &[Room],
    (since, receipts): (Option<i64>, bool),
    warn: &mut dyn FnMut(String),
    f: &mut dyn FnMut(Heard),
) -> Result<Vec<(String, u64)>, RoomError> {
    let mut cursors = Vec::new();
    for room in rooms {
        let (start, since) = match store.room_cursor(&me.reader, &room.name)? {
            Some(o) => (o.min(room.end()?), None),
            None => (0, since),
        };
        let end = room.scan(start, warn, &mut |offset, line| {
            let new = since.is_none_or(|t| line.ts_ms() >= t);
            if new && (hears(room, &line, me) || (receipts && hears_receipt(&line, me))) {
                f(Heard {
                    room: room.clone(),
                    offset,
                    line,
                });
            }
            Flow::Go
        })?;
        cursors.push((room.name.clone(), end));
    }
    Ok(cursors)
}

/// A running session's inbox, which another reader may not consume.
#[derive(Debug, thiserror::Error)]
#[error(
    "session {handle} is running: reading its inbox would take its messages from it and write \
     receipts in its name"
)]
pub(crate) struct InboxInUse {
    pub(crate) handle: String,
}

/// Whether a reader may consume the inbox of session `s`: reading is consuming (it takes the
/// messages out of the session's next step and writes receipts in its name), so a session
/// that runs now keeps its inbox to itself, unless the reader is that session (`own`, the
/// `AG_SESSION` of the process asking).
pub(crate) fn may_consume(s: &crate::store::Session, own: Option<&str>) -> Result<(), InboxInUse> {
    if own.is_some_and(|id| id.trim() == s.id) || !super::presence::is_live(s) {
        return Ok(());
    }
    Err(InboxInUse {
        handle: s.handle.clone(),
    })
}

/// What a reader took from its inbox, in order.
#[derive(Debug, Default)]
pub(crate) struct Taken {
    pub(crate) heard: Vec<Heard>,
    /// Problems with the rooms' lines (a torn line), for the person.
    pub(crate) warnings: Vec<String>,
}

/// What a reader takes from its inbox.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Take {
    /// The unread lines of the rooms too, not only what a session held back.
    pub(crate) new: bool,
    /// With the new lines, the receipts for the reader's own (an MCP client has no other way
    /// to hear them).
    pub(crate) receipts: bool,
    /// Show without consuming: no cursor moves, no receipt is written.
    pub(crate) peek: bool,
}

/// The read-and-consume step every front end shares: the lines a session held back from its
/// context (`me.session` only), then, with `take.new`, the unread lines of `rooms`. Unless
/// `take.peek`, what was read is consumed: cursors advance, held lines are released, and
/// each line of speech gets its `delivered` receipt.
pub(crate) fn take(store: &Store, me: &Me, rooms: &[Room], take: Take) -> Result<Taken, RoomError> {
    let Take {
        new,
        receipts,
        peek,
    } = take;
    let mut taken = Taken::default();
    let held = if me.session.is_some() {
        store.room_held(&me.reader)?
    } else {
        Vec::new()
    };
    for (room_name, offset, _) in &held {
        if let Some(room) = rooms.iter().find(|r| &r.name == room_name) {
            if let Some(line) = room.read_at(*offset) {
                taken.heard.push(Heard {
                    room: room.clone(),
                    offset: *offset,
                    line,
                });
            }
        }
    }
    let mut cursors = Vec::new();
    if new {
        let Taken { heard, warnings } = &mut taken;
        cursors = read_new(
            store,
            me,
            rooms,
            (None, receipts),
            &mut |w| warnings.push(w),
            &mut |h| heard.push(h),
        )?;
    }
    if !peek {
        store.room_advance(&me.reader, &cursors, &[])?;
        let released: Vec<(String, u64)> = held.iter().map(|(r, o, _)| (r.clone(), *o)).collect();
        store.room_unhold(&me.reader, &released)?;
        let refs: Vec<&Heard> = taken.heard.iter().collect();
        deliver(me, &refs)?;
    }
    Ok(taken)
}

/// Write a `delivered` receipt for each line of speech: it reached `me`'s context (or screen).
/// A receipt is never receipted.
pub(crate) fn deliver(me: &Me, heard: &[&Heard]) -> Result<(), RoomError> {
    for h in heard.iter().filter(|h| h.line.ty == LineKind::Say) {
        let mut l = Line::new(LineKind::Delivered, me.from.clone());
        l.in_reply_to = Some(h.line.id.clone());
        l.to = Some(
            h.line
                .from
                .session
                .clone()
                .unwrap_or_else(|| h.line.from.name.clone()),
        );
        h.room.append(&l)?;
    }
    Ok(())
}

impl Heard {
    /// The line as a peer chunk carries it: the sender's name and handle (from the line, else
    /// from the store for a line written before handles), its text clipped to `max` bytes.
    pub(crate) fn message(&self, store: &Store, max: usize) -> PeerMessage {
        let l = &self.line;
        let handle = l.from.handle.clone().or_else(|| {
            let id = l.from.session.as_deref()?;
            store
                .session(id)
                .ok()
                .map(|s| s.handle)
                .filter(|h| !h.is_empty())
        });
        PeerMessage {
            id: l.id.clone(),
            from: l.from.shown_name(),
            to: l.to.clone(),
            text: crate::text::clip_bytes(l.text.as_deref().unwrap_or(""), max),
            handle,
            in_reply_to: l.in_reply_to.clone(),
            kind: match l.ty {
                LineKind::Delivered => PeerKind::Delivered,
                LineKind::Ack => PeerKind::Ack,
                _ => PeerKind::Say,
            },
        }
    }
}

/// A message and what happened to it.
#[derive(Debug, Clone)]
pub(crate) struct Status {
    pub(crate) message: Heard,
    pub(crate) delivered: Vec<Line>,
    pub(crate) acked: Vec<Line>,
    pub(crate) replies: Vec<Line>,
}

/// Find a message (full id, or a unique prefix of at least 8 characters) in `rooms` and collect
/// its receipts and replies.
/// The message `msg` names in `room` after position `from`, and the lines answering it.
fn find_from(
    room: &Room,
    from: u64,
    msg: &str,
    warn: &mut dyn FnMut(String),
) -> Result<(Option<Heard>, Vec<Line>), RoomError> {
    let mut found: Option<Heard> = None;
    let mut st_lines: Vec<Line> = Vec::new();
    room.scan(from, warn, &mut |offset, line| {
        match &found {
            None => {
                if (line.id == msg || (msg.len() >= 8 && line.id.starts_with(msg)))
                    && line.ty == LineKind::Say
                {
                    found = Some(Heard {
                        room: room.clone(),
                        offset,
                        line,
                    });
                }
            }
            Some(m) => {
                if line.in_reply_to.as_deref() == Some(m.line.id.as_str()) {
                    st_lines.push(line);
                }
            }
        }
        Flow::Go
    })?;
    Ok((found, st_lines))
}

pub(crate) fn status(
    rooms: &[Room],
    msg: &str,
    warn: &mut dyn FnMut(String),
) -> Result<Option<Status>, RoomError> {
    let msg = msg.trim().to_ascii_lowercase();
    for room in rooms {
        // A message and its receipts are looked for near the end of the room first, then
        // four times further back each time: the cost follows how old the message is, not
        // how long the room is.
        let end = room.end()?;
        let mut back: u64 = 1_000;
        let (found, st_lines) = loop {
            let from = room.rewind(end, back)?;
            // Only the last pass's warnings are said: the passes overlap.
            let mut warns = Vec::new();
            let (found, st_lines) = find_from(room, from, &msg, &mut |w| warns.push(w))?;
            if found.is_some() || from == 0 {
                warns.into_iter().for_each(&mut *warn);
                break (found, st_lines);
            }
            back = back.saturating_mul(4);
        };
        if let Some(m) = found {
            let mut st = Status {
                message: m,
                delivered: vec![],
                acked: vec![],
                replies: vec![],
            };
            for l in st_lines {
                match l.ty {
                    LineKind::Delivered => st.delivered.push(l),
                    LineKind::Ack => st.acked.push(l),
                    LineKind::Say => st.replies.push(l),
                    _ => {}
                }
            }
            return Ok(Some(st));
        }
    }
    Ok(None)
}
