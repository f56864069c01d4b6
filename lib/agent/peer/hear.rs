//! Hearing: at a step boundary, what a session's rooms hold for it — speech, the receipts for
//! what it said, and the roster when the set of live sessions in its worktree changed — becomes
//! one `peer` chunk whose text, as the model sees it, stays within [`PEER_BYTES`].

use super::super::{Agent, AgentError, Event};
use super::batch::{Batch, Carry, PEER_BYTES, PEER_LINE_BYTES};
use crate::fold::peer::{omitted_note, peer_line, roster_line};
use crate::log::{ChunkData, NewChunk, PeerMessage, PeerPresent, Role};
use crate::policy::Tool;
use crate::room::inbox::{self, Heard};
use crate::room::roster;

/// A heard line and how the model will see it.
struct Carried {
    heard: Heard,
    msg: PeerMessage,
}

impl Agent<'_> {
    /// At a step boundary: take what this session hears from its rooms into the log.
    pub(in crate::agent) fn hear(
        &self,
        turn: &str,
        step: i64,
        on: &mut dyn FnMut(Event),
    ) -> Result<(), AgentError> {
        self.peer_state().turn = Some(turn.to_string());
        if !self.policy.allows(Tool::PeerInbox.name())
            && !self.policy.allows(Tool::PeerMessage.name())
        {
            return Ok(());
        }
        let me = self.me();
        let rooms = self.rooms();
        let roster = self.roster_change();
        let roster_cost = roster.as_ref().map_or(0, |r| roster_line(r).len() + 1);
        // The held-back note is counted before we know whether one is needed.
        let note_cost = omitted_note(u32::MAX as u64).len() + 1;
        let budget = PEER_BYTES.saturating_sub(roster_cost + note_cost);
        let Some((newest, held, changed)) = self.read_rooms(&me, &rooms, budget) else {
            return Ok(());
        };
        if newest.is_empty() && held.is_empty() && roster.is_none() {
            if !changed.is_empty() {
                self.store.room_advance(&me.reader, &changed, &[])?;
            }
            return Ok(());
        }
        let room = newest
            .last()
            .map(|c| c.heard.room.label().to_string())
            .unwrap_or_else(|| rooms[0].label().to_string());
        let messages: Vec<PeerMessage> = newest.iter().map(|c| c.msg.clone()).collect();
        let told = roster.clone();
        // The cursors move and the peer chunk lands in one transaction: a crash cannot leave
        // the cursor past lines that never reached the log.
        let stored =
            self.store
                .room_hear(&self.session.id, &me.reader, &changed, &held, |omitted| {
                    NewChunk::new(
                        Role::Peer,
                        ChunkData::Peer {
                            messages,
                            omitted,
                            room,
                            roster,
                        },
                    )
                    .in_turn(turn, step)
                })?;
        if let Some(r) = told {
            self.peer_state().roster_told = Some(Some(ids(&r)));
        }
        for c in &stored {
            on(Event::Seal(c.clone()));
        }
        // The delivered receipts go to the room file only after the commit. A crash between
        // the two loses a receipt (the sender is not told), never a message: the lines are in
        // the log already.
        let carried: Vec<&Heard> = newest.iter().map(|c| &c.heard).collect();
        if let Err(e) = inbox::deliver(&me, &carried) {
            self.warn(format!("cannot write a delivered receipt: {e}"));
        }
        Ok(())
    }

    /// Read what this session hears after its cursors: the lines a chunk carries (within
    /// `budget` bytes), the ones held back, and the cursors that moved. `None` when the rooms
    /// cannot be read (a warning says so).
    #[allow(clippy::type_complexity)]
    fn read_rooms(
        &self,
        me: &crate::room::presence::Me,
        rooms: &[crate::room::Room],
        budget: usize,
    ) -> Option<(Vec<Carried>, Vec<(String, u64, String)>, Vec<(String, u64)>)> {
        let mut batch = Batch::new(budget);
        let mut held: Vec<(String, u64, String)> = Vec::new();
        let hold = |c: Carried| (c.heard.room.name.clone(), c.heard.offset, c.heard.line.id);
        let before: Vec<Option<u64>> = rooms
            .iter()
            .map(|r| self.store.room_cursor(&me.reader, &r.name).ok().flatten())
            .collect();
        let cursors = match inbox::read_new(
            self.store,
            me,
            rooms,
            (Some(self.session.updated_at), true),
            &mut |w| self.warn(w),
            &mut |h| {
                let msg = h.message(self.store, PEER_LINE_BYTES);
                if let Some(old) = batch.push(Carried { heard: h, msg }) {
                    held.push(hold(old));
                }
            },
        ) {
            Ok(c) => c,
            Err(e) => {
                self.warn(format!("cannot read the rooms: {e}"));
                return None;
            }
        };
        let (newest, rest) = batch.finish();
        held.extend(rest.into_iter().map(hold));
        let changed: Vec<(String, u64)> = cursors
            .into_iter()
            .zip(before)
            .filter(|((_, end), b)| *b != Some(*end))
            .map(|(c, _)| c)
            .collect();
        Some((newest, held, changed))
    }

    /// The roster to show, when the live sessions of this worktree (other than this one) are
    /// not the ones the model was last shown: first meeting, someone came, someone left.
    fn roster_change(&self) -> Option<Vec<PeerPresent>> {
        let room = self.rooms.worktree(&self.cwd());
        let now = match roster::roster(self.store, &room, &self.session.id) {
            Ok(r) => r,
            Err(e) => {
                self.warn(format!("cannot list the live sessions: {e}"));
                return None;
            }
        };
        let told = {
            let mut st = self.peer_state();
            if st.roster_told.is_none() {
                st.roster_told = Some(self.store.last_roster(&self.session.id).ok().flatten());
            }
            st.roster_told.clone().flatten()
        };
        let changed = match &told {
            None => !now.is_empty(),
            Some(t) => *t != ids(&now),
        };
        changed.then_some(now)
    }
}

/// The sessions of a roster, in a comparable order.
fn ids(r: &[PeerPresent]) -> Vec<String> {
    let mut v: Vec<String> = r.iter().map(|p| p.session.clone()).collect();
    v.sort();
    v
}

impl Carry for Carried {
    fn order(&self) -> (i64, u64) {
        (self.heard.line.ts_ms(), self.heard.offset)
    }

    fn cost(&self) -> usize {
        peer_line(&self.msg).len() + 1
    }
}
