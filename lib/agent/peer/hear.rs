//! Hearing: at a step boundary, the lines a session's rooms hold for it become one `peer` chunk.

use super::super::{Agent, AgentError, Event};
use super::batch::{Batch, Carry, PEER_LINE_BYTES};
use crate::log::{ChunkData, NewChunk, PeerMessage, Role};
use crate::policy::Tool;
use crate::room::inbox::{self, Heard};
use crate::text::clip_bytes as clip;

impl Agent<'_> {
    /// At a step boundary: take what this session hears from its rooms into the log.
    pub(in crate::agent) fn hear(
        &self,
        turn: &str,
        step: i64,
        on: &mut dyn FnMut(Event),
    ) -> Result<(), AgentError> {
        if !self.policy.allows(Tool::PeerInbox.name())
            && !self.policy.allows(Tool::PeerMessage.name())
        {
            return Ok(());
        }
        let me = self.me();
        let rooms = self.rooms();
        let mut batch = Batch::new();
        let mut held: Vec<(String, u64, String)> = Vec::new();
        let hold = |h: Heard| (h.room.name.clone(), h.offset, h.line.id.clone());
        let before: Vec<Option<u64>> = rooms
            .iter()
            .map(|r| self.store.room_cursor(&me.reader, &r.name).ok().flatten())
            .collect();
        let cursors = match inbox::read_new(
            self.store,
            &me,
            &rooms,
            true,
            &mut |w| self.warn(w),
            &mut |h| {
                if let Some(old) = batch.push(h) {
                    held.push(hold(old));
                }
            },
        ) {
            Ok(c) => c,
            Err(e) => {
                self.warn(format!("cannot read the rooms: {e}"));
                return Ok(());
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
        if newest.is_empty() && held.is_empty() {
            if !changed.is_empty() {
                self.store.room_advance(&me.reader, &changed, &[])?;
            }
            return Ok(());
        }
        let room = newest
            .last()
            .map(|h| h.room.label().to_string())
            .unwrap_or_else(|| rooms[0].label().to_string());
        let messages: Vec<PeerMessage> = newest
            .iter()
            .map(|h| PeerMessage {
                id: h.line.id.clone(),
                from: h.line.from.display(),
                to: h.line.to.clone(),
                text: clip(h.line.text.as_deref().unwrap_or(""), PEER_LINE_BYTES),
            })
            .collect();
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
                        },
                    )
                    .in_turn(turn, step)
                })?;
        for c in &stored {
            on(Event::Seal(c.clone()));
        }
        // The delivered receipts go to the room file only after the commit. A crash between
        // the two loses a receipt (the sender is not told), never a message: the lines are in
        // the log already.
        let carried: Vec<&Heard> = newest.iter().collect();
        if let Err(e) = inbox::deliver(&me, &carried) {
            self.warn(format!("cannot write a delivered receipt: {e}"));
        }
        Ok(())
    }
}

impl Carry for Heard {
    fn order(&self) -> (i64, u64) {
        (self.line.ts_ms(), self.offset)
    }

    fn cost(&self) -> usize {
        self.line.from.display().len()
            + clip(self.line.text.as_deref().unwrap_or(""), PEER_LINE_BYTES).len()
    }
}
