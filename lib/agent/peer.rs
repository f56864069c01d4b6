//! Room traffic inside the agent loop: what a session hears at step boundaries, the `peer_*`
//! tools, and the collision gate before `write` and `edit`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{Agent, AgentError, Event};
use crate::fold::ToolSpec;
use crate::log::{ChunkData, NewChunk, PeerMessage, Role};
use crate::room::claims::{self, Outcome};
use crate::room::inbox::{self, Heard};
use crate::room::presence::{self, Me};
use crate::room::target::{self, Resolved};
use crate::room::{clip, file, Line, Room};
use crate::tools::ToolOutput;

/// The newest lines a peer chunk carries.
pub const PEER_LINES: usize = 3;
/// Bytes a peer chunk carries in all (names and texts).
pub const PEER_BYTES: usize = 800;
/// Bytes of one line's text in a peer chunk.
pub const PEER_LINE_BYTES: usize = 200;

const ROOM_VS_DM: &str = "Without `session` the line goes to this worktree's room and every \
session working in this tree hears it; with `session` it is a direct message only that session \
takes in (in another folder too).";

fn warn(w: String) {
    eprintln!("ag: warning: {w}");
}

impl Agent<'_> {
    fn me(&self) -> Me {
        Me::session(&self.session)
    }

    fn cwd(&self) -> PathBuf {
        self.tool_ctx.cwd.clone()
    }

    fn rooms(&self) -> Vec<Room> {
        inbox::rooms_for(self.home, &self.cwd())
    }

    /// At a step boundary: take what this session hears from its rooms into the log.
    pub(super) fn hear(
        &self,
        turn: &str,
        step: i64,
        on: &mut dyn FnMut(Event),
    ) -> Result<(), AgentError> {
        if !self.policy.allows("peer_inbox") && !self.policy.allows("peer_message") {
            return Ok(());
        }
        let me = self.me();
        let rooms = self.rooms();
        // Keep the newest lines whole; older ones only by where they are.
        let mut newest: Vec<(i64, Heard)> = Vec::new();
        let mut held: Vec<(String, u64, String)> = Vec::new();
        let before: Vec<Option<u64>> = rooms
            .iter()
            .map(|r| self.store.room_cursor(&me.reader, &r.name).ok().flatten())
            .collect();
        let cursors = match inbox::read_new(self.store, &me, &rooms, true, &mut warn, &mut |h| {
            newest.push((h.line.ts_ms(), h));
            if newest.len() > PEER_LINES * 2 {
                newest.sort_by_key(|(ts, h)| (*ts, h.offset));
                let (_, old) = newest.remove(0);
                held.push((old.room.name.clone(), old.offset, old.line.id.clone()));
            }
        }) {
            Ok(c) => c,
            Err(e) => {
                warn(format!("cannot read the rooms: {e}"));
                return Ok(());
            }
        };
        newest.sort_by_key(|(ts, h)| (*ts, h.offset));
        while newest.len() > PEER_LINES {
            let (_, old) = newest.remove(0);
            held.push((old.room.name.clone(), old.offset, old.line.id.clone()));
        }
        // The byte budget: drop the oldest carried line until the batch fits.
        let size = |hs: &[(i64, Heard)]| -> usize {
            hs.iter()
                .map(|(_, h)| {
                    h.line.from.display().len()
                        + clip(h.line.text.as_deref().unwrap_or(""), PEER_LINE_BYTES).len()
                })
                .sum()
        };
        while !newest.is_empty() && size(&newest) > PEER_BYTES {
            let (_, old) = newest.remove(0);
            held.push((old.room.name.clone(), old.offset, old.line.id.clone()));
        }
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
            .map(|(_, h)| h.room.label().to_string())
            .unwrap_or_else(|| rooms[0].label().to_string());
        let messages: Vec<PeerMessage> = newest
            .iter()
            .map(|(_, h)| PeerMessage {
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
        let carried: Vec<&Heard> = newest.iter().map(|(_, h)| h).collect();
        if let Err(e) = inbox::deliver(&me, &carried) {
            warn(format!("cannot write a delivered receipt: {e}"));
        }
        Ok(())
    }

    /// A `peer_*` tool call (it needs the store and the session, so it runs here); `None` for
    /// any other tool.
    pub(super) fn peer_tool(&self, name: &str, args: &Value) -> Option<ToolOutput> {
        let out = match name {
            "peer_message" => self.peer_message(args),
            "peer_inbox" => self.peer_inbox(),
            "peer_peek" => self.peer_peek(args),
            "peer_claim" => self.peer_claim(args),
            "peer_release" => self.peer_release(args),
            _ => return None,
        };
        Some(out.unwrap_or_else(|e| ToolOutput::error(format!("{name}: {e}"))))
    }

    fn resolve(&self, target: &str) -> Result<crate::store::Session, String> {
        match target::resolve(self.store, target).map_err(|e| e.to_string())? {
            Resolved::One(s) => Ok(*s),
            Resolved::None => Err(format!(
                "no session matches {target:?}; peer_peek or `ag-room who` lists who is here"
            )),
            Resolved::Ambiguous(c) => Err(format!(
                "{target:?} matches {} sessions; use an id: {}",
                c.len(),
                c.iter()
                    .map(|(id, t)| format!("{id} ({t})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    fn peer_message(&self, args: &Value) -> Result<ToolOutput, String> {
        let text = args["text"].as_str().unwrap_or("").trim();
        if text.is_empty() {
            return Err("text is required".into());
        }
        let me = self.me();
        let mut line = Line::new("say", me.from.clone());
        line.text = Some(text.to_string());
        line.in_reply_to = args["in_reply_to"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let here = Room::worktree(self.home, &self.cwd());
        let (room, to) = match args["session"].as_str().filter(|s| !s.trim().is_empty()) {
            None => (here, None),
            Some(t) => {
                let s = self.resolve(t)?;
                if s.id == self.session.id {
                    return Err("that is this session; message another one".into());
                }
                let same = s.cwd.as_deref().is_some_and(|c| {
                    crate::room::worktree_key(Path::new(c)) == *here.key.as_ref().unwrap()
                });
                let room = if same { here } else { Room::device(self.home) };
                (room, Some(s))
            }
        };
        line.to = to.as_ref().map(|s| s.id.clone());
        file::append(&room.path, &line).map_err(|e| e.to_string())?;
        Ok(ToolOutput::ok(match to {
            None => format!(
                "posted {} to the room {} (everyone in this worktree hears it at their next step)",
                line.id,
                room.label()
            ),
            Some(s) => format!(
                "posted {} as a direct message to {} (resolved id {}); it is delivered when their \
                 next step takes it in. Re-ping with session=\"{}\".",
                line.id,
                presence::display_name(&s),
                s.id,
                s.id
            ),
        }))
    }

    fn peer_inbox(&self) -> Result<ToolOutput, String> {
        let me = self.me();
        let held = self
            .store
            .room_held(&me.reader)
            .map_err(|e| e.to_string())?;
        if held.is_empty() {
            return Ok(ToolOutput::ok("no held-back messages"));
        }
        let rooms = self.rooms();
        let mut lines = Vec::new();
        let mut taken = Vec::new();
        let mut heard = Vec::new();
        for (room_name, offset, _id) in &held {
            taken.push((room_name.clone(), *offset));
            let Some(room) = rooms.iter().find(|r| &r.name == room_name) else {
                continue;
            };
            if let Some(line) = file::read_at(&room.path, *offset) {
                lines.push(format!(
                    "<peer from=\"{}\" msg=\"{}\"{}>{}</peer>",
                    line.from.display(),
                    line.id,
                    if line.to.is_some() {
                        " direct=\"yes\""
                    } else {
                        ""
                    },
                    clip(line.text.as_deref().unwrap_or(""), 4000).replace("</peer", "<\\/peer")
                ));
                heard.push(Heard {
                    room: room.clone(),
                    offset: *offset,
                    line,
                });
            }
        }
        self.store
            .room_unhold(&me.reader, &taken)
            .map_err(|e| e.to_string())?;
        let refs: Vec<&Heard> = heard.iter().collect();
        inbox::deliver(&me, &refs).map_err(|e| e.to_string())?;
        Ok(ToolOutput::ok(lines.join("\n")))
    }

    fn peer_peek(&self, args: &Value) -> Result<ToolOutput, String> {
        let t = args["session"].as_str().unwrap_or("").trim();
        if t.is_empty() {
            return Err("session is required".into());
        }
        let s = self.resolve(t)?;
        Ok(ToolOutput::ok(
            presence::peek_text(self.store, &s, 3).map_err(|e| e.to_string())?,
        ))
    }

    fn claim_paths(&self, v: &Value, key: &Path) -> Result<Vec<String>, String> {
        let list: Vec<String> = match v {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        };
        list.iter()
            .map(|p| claims::normalize(p, &self.cwd(), key))
            .collect()
    }

    fn peer_claim(&self, args: &Value) -> Result<ToolOutput, String> {
        let room = Room::worktree(self.home, &self.cwd());
        let key = room.key.clone().unwrap();
        let paths = self.claim_paths(&args["paths"], &key)?;
        let intent = args["intent"].as_str().unwrap_or("");
        let shared = args["shared"].as_bool().unwrap_or(false);
        let ttl = args["ttl_s"]
            .as_u64()
            .unwrap_or(claims::DEFAULT_TTL_S)
            .max(1);
        match claims::claim(
            self.store,
            &room,
            &self.me(),
            paths,
            intent,
            shared,
            ttl,
            &mut warn,
        )
        .map_err(|e| e.to_string())?
        {
            Outcome::Claimed(c) => Ok(ToolOutput::ok(format!(
                "claimed {} ({}, {} s): {}",
                c.id,
                c.mode,
                c.ttl_s,
                c.paths.join(", ")
            ))),
            Outcome::Refused(cs) => Ok(ToolOutput::error(format!(
                "not claimed: {}. Talk to them first: {}",
                cs.iter()
                    .map(|c| c.describe())
                    .collect::<Vec<_>>()
                    .join("; "),
                cs[0].claim.how_to_reach()
            ))),
        }
    }

    fn peer_release(&self, args: &Value) -> Result<ToolOutput, String> {
        let room = Room::worktree(self.home, &self.cwd());
        let key = room.key.clone().unwrap();
        let paths = match &args["paths"] {
            Value::Null => None,
            v => Some(self.claim_paths(v, &key)?),
        };
        let ended = claims::release(self.store, &room, &self.me(), paths.as_deref(), &mut warn)
            .map_err(|e| e.to_string())?;
        Ok(ToolOutput::ok(if ended.is_empty() {
            "no claim of yours to release".to_string()
        } else {
            format!(
                "released {}",
                ended
                    .iter()
                    .map(|c| format!("{} ({})", c.id, c.paths.join(", ")))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        }))
    }

    /// The schema of a `peer_*` tool; `None` for any other tool.
    pub(super) fn peer_tool_spec(&self, name: &str) -> Option<ToolSpec> {
        let (description, schema) = match name {
            "peer_message" => (
                format!(
                    "Say something to the other sessions working here. {ROOM_VS_DM} Keep it to one \
                     or two sentences. The result says it was posted; the addressee's `delivered` \
                     receipt follows when its next step takes the line in."
                ),
                json!({
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "description": "What to say."},
                        "session": {"type": "string", "description": "Make it a direct message to this session: its id, a unique id prefix, its pid, or a unique fragment of its title or goal."},
                        "in_reply_to": {"type": "string", "description": "The id of the message this answers."}
                    },
                    "required": ["text"],
                    "additionalProperties": false
                }),
            ),
            "peer_inbox" => (
                format!(
                    "Read the peer messages that were held back from your context (the \"N more\" \
                     note); reading them marks them delivered. {ROOM_VS_DM}"
                ),
                json!({"type": "object", "properties": {}, "additionalProperties": false}),
            ),
            "peer_peek" => (
                "See what another session is doing: its goal, last prompt, last tool calls and \
                 last words. Changes nothing."
                    .to_string(),
                json!({
                    "type": "object",
                    "properties": {
                        "session": {"type": "string", "description": "Its id, a unique id prefix, its pid, or a unique fragment of its title or goal."}
                    },
                    "required": ["session"],
                    "additionalProperties": false
                }),
            ),
            "peer_claim" => (
                "Claim files before you change them, so other sessions in this worktree do not \
                 write them meanwhile. Fails naming the holder when someone else holds an \
                 overlapping claim. Claims end when released, after ttl_s, or when you stop."
                    .to_string(),
                json!({
                    "type": "object",
                    "properties": {
                        "paths": {"type": "array", "items": {"type": "string"}, "description": "Files, directories or globs, relative to your directory."},
                        "intent": {"type": "string", "description": "What you are about to do, in a few words."},
                        "shared": {"type": "boolean", "description": "Others may claim the same paths as shared too (default false: exclusive)."},
                        "ttl_s": {"type": "integer", "minimum": 1, "description": "Seconds until the claim expires (default 1800)."}
                    },
                    "required": ["paths", "intent"],
                    "additionalProperties": false
                }),
            ),
            "peer_release" => (
                "Release your claims: those overlapping `paths`, or all of them.".to_string(),
                json!({
                    "type": "object",
                    "properties": {
                        "paths": {"type": "array", "items": {"type": "string"}, "description": "Release the claims overlapping these paths (default: all yours)."}
                    },
                    "additionalProperties": false
                }),
            ),
            _ => return None,
        };
        Some(ToolSpec {
            name: name.to_string(),
            description,
            input_schema: schema,
        })
    }

    /// Before `write` or `edit`: an error result when another live session holds an exclusive
    /// claim on the path; `None` lets the call run.
    pub(super) fn collision(&self, name: &str, args: &Value) -> Option<ToolOutput> {
        if !matches!(name, "write" | "edit") {
            return None;
        }
        let path = args["path"].as_str()?;
        let room = Room::worktree(self.home, &self.cwd());
        let key = room.key.clone()?;
        // A path outside this worktree is in no claim of its room.
        let rel = claims::normalize(path, &self.cwd(), &key).ok()?;
        // Fail closed: a claim that cannot be read may be one that covers this path.
        let active = match claims::active(self.store, &room, &mut warn) {
            Ok(a) => a,
            Err(e) => {
                return Some(ToolOutput::error(format!(
                    "{name} refused: cannot check the claims on {rel}: {e}; nothing was written"
                )))
            }
        };
        let found = claims::conflicts(&active, &self.me().from, std::slice::from_ref(&rel), true);
        let c = found.first()?;
        Some(ToolOutput::error(format!(
            "{name} refused, nothing was written: {rel} is claimed exclusively by {} (claim {}, \
             intent {:?}). Ask them before touching it: {}",
            c.claim.holder.display(),
            c.claim.id,
            c.claim.intent,
            c.claim.how_to_reach()
        )))
    }
}
