//! The `peer_*` tools a model calls (message, inbox, peek, claim, release) and the collision
//! gate that refuses `write`/`edit` on a path another live session claims.

use std::path::Path;

use serde_json::Value;

use super::super::Agent;
use crate::fold::peer::peer_line;
use crate::policy::Tool;
use crate::room::claims;
use crate::room::inbox;
use crate::room::post::{Post, Posted};
use crate::room::presence;
use crate::room::roster;
use crate::room::target::{self, Resolved};
use crate::tools::ToolOutput;

impl Agent<'_> {
    /// A `peer_*` tool call (it needs the store and the session, so it runs here; the
    /// registry sends no other tool).
    pub(in crate::agent) fn peer_tool(&self, tool: Tool, args: &Value) -> ToolOutput {
        let out = match tool {
            Tool::PeerMessage => self.peer_message(args),
            Tool::PeerInbox => self.peer_inbox(),
            Tool::PeerWho => {
                let room = self.rooms.worktree(&self.cwd());
                roster::who_text(self.store, &room, Some(&self.session.id))
                    .map(ToolOutput::ok)
                    .map_err(|e| e.to_string())
            }
            Tool::PeerPeek => self.peer_peek(args),
            Tool::PeerClaim => self.peer_claim(args),
            Tool::PeerRelease => self.peer_release(args),
            _ => Err("not a peer tool".to_string()),
        };
        out.unwrap_or_else(|e| ToolOutput::error(format!("{tool}: {e}")))
    }

    /// A model's target (`peer_message`, `peer_peek`): only a session within its reach — a
    /// live session of its worktree, or one that wrote to it directly. Every other session on
    /// the device is a human's to list; it is neither resolved nor named in an error.
    fn resolve(&self, target: &str) -> Result<crate::store::Session, String> {
        let (cwd, me) = (self.cwd(), self.me());
        let reach = |s: &crate::store::Session| presence::within_reach(&self.rooms, &cwd, &me, s);
        let not_here = || {
            format!(
                "{target:?} is not a live session of this worktree and has not written to you; \
                 peer_who lists the sessions here (peer_message without `session` reaches them all)"
            )
        };
        match target::resolve(&self.rooms, self.store, target).map_err(|e| e.to_string())? {
            // A session this store does not know came from this worktree's shared room (a
            // session of another machine): it is here.
            Resolved::One(s) if reach(&s) || self.store.session(&s.id).is_err() => Ok(*s),
            Resolved::One(_) | Resolved::None => Err(not_here()),
            Resolved::Everyone => Err(target::EVERYONE.to_string()),
            Resolved::Ambiguous(c) => {
                let near: Vec<crate::store::Session> = c
                    .iter()
                    .filter_map(|(handle, _)| self.store.resolve(handle).ok())
                    .filter(|s| reach(s))
                    .collect();
                match near.as_slice() {
                    [] => Err(not_here()),
                    [one] => Ok(one.clone()),
                    many => Err(format!(
                        "{target:?} matches {} sessions here; use a handle: {}",
                        many.len(),
                        many.iter()
                            .map(|s| format!("{} ({})", s.handle, s.title))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                }
            }
        }
    }

    fn peer_message(&self, args: &Value) -> Result<ToolOutput, String> {
        let text = args["text"].as_str().unwrap_or("").trim();
        if text.is_empty() {
            return Err("text is required".into());
        }
        let me = self.me();
        let to = match args["session"].as_str().filter(|s| !s.trim().is_empty()) {
            Some(t) => Some(self.resolve(t)?),
            None => None,
        };
        let post = Post {
            text,
            to: to.as_ref(),
            reply_to: args["in_reply_to"].as_str(),
            ..Default::default()
        };
        let Posted { line, room, .. } = self
            .rooms
            .post(Some(self.store), &me, &self.cwd(), post)
            .map_err(|e| e.to_string())?;
        Ok(ToolOutput::ok(match to {
            None => format!(
                "posted {} to the room {} (everyone in this worktree hears it at their next step)",
                line.id,
                room.label()
            ),
            Some(s) => {
                format!(
                "posted {} as a direct message to {} (session {}, id {}); it is delivered when \
                 their next step takes it in. Re-ping with session=\"{}\".",
                line.id,
                presence::display_name(&s),
                s.handle,
                s.id,
                if s.handle.is_empty() { &s.id } else { &s.handle }
            )
            }
        }))
    }

    fn peer_inbox(&self) -> Result<ToolOutput, String> {
        let me = self.me();
        // New lines reach the model at step boundaries; this takes what was held back.
        let taken = inbox::take(self.store, &me, &self.rooms(), inbox::Take::default())
            .map_err(|e| e.to_string())?;
        if taken.heard.is_empty() {
            return Ok(ToolOutput::ok("no held-back messages"));
        }
        let lines: Vec<String> = taken
            .heard
            .iter()
            .map(|h| peer_line(&h.message(self.store, 4000)))
            .collect();
        Ok(ToolOutput::ok(lines.join("\n")))
    }

    fn peer_peek(&self, args: &Value) -> Result<ToolOutput, String> {
        let t = args["session"].as_str().unwrap_or("").trim();
        if t.is_empty() {
            return Err("session is required".into());
        }
        let s = self.resolve(t)?;
        Ok(ToolOutput::ok(
            presence::peek_text(self.store, &self.rooms.worktree(&self.cwd()), &s, 3)
                .map_err(|e| e.to_string())?,
        ))
    }

    fn claim_paths(&self, v: &Value, key: &Path) -> Result<Vec<String>, String> {
        claims::paths_arg(v, &self.cwd(), key)
    }

    fn peer_claim(&self, args: &Value) -> Result<ToolOutput, String> {
        let key = crate::room::worktree_key(&self.cwd());
        let room = self.rooms.of_key(key.clone());
        let paths = self.claim_paths(&args["paths"], &key)?;
        let intent = args["intent"].as_str().unwrap_or("");
        let shared = args["shared"].as_bool().unwrap_or(false);
        let ttl = claims::ttl_arg(&args["ttl_s"])?;
        match claims::claim(
            self.store,
            &room,
            &self.me(),
            paths,
            intent,
            shared,
            ttl,
            &mut |w| self.warn(w),
        )
        .map_err(|e| e.to_string())?
        .for_model()
        {
            Ok(text) => Ok(ToolOutput::ok(text)),
            Err(text) => Ok(ToolOutput::error(text)),
        }
    }

    fn peer_release(&self, args: &Value) -> Result<ToolOutput, String> {
        let key = crate::room::worktree_key(&self.cwd());
        let room = self.rooms.of_key(key.clone());
        let paths = match &args["paths"] {
            Value::Null => None,
            v => Some(self.claim_paths(v, &key)?),
        };
        let ended = claims::release(self.store, &room, &self.me(), paths.as_deref(), &mut |w| {
            self.warn(w)
        })
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

    /// Before `write` or `edit`: an error result when another live session holds an exclusive
    /// claim on the path; `None` lets the call run.
    pub(in crate::agent) fn collision(&self, name: &str, args: &Value) -> Option<ToolOutput> {
        if !matches!(Tool::parse(name), Some(Tool::Write | Tool::Edit)) {
            return None;
        }
        let path = args["path"].as_str()?;
        let key = crate::room::worktree_key(&self.cwd());
        let room = self.rooms.of_key(key.clone());
        // A path outside this worktree is in no claim of its room. The file is named as it is
        // reached: through symlinks and `..` (and `/proc/self/cwd`), the way the tool will
        // open it; a path the tool will refuse anyway is left to it.
        let resolved = crate::tools::confine(&self.cwd(), path).ok()?;
        let rel = claims::normalize(&resolved.to_string_lossy(), &self.cwd(), &key).ok()?;
        // Fail closed: a claim that cannot be read may be one that covers this path.
        let active = match claims::active(self.store, &room, &mut |w| self.warn(w)) {
            Ok(a) => a,
            Err(e) => {
                return Some(ToolOutput::error(format!(
                    "{name} refused: cannot check the claims on {rel}: {e}; nothing was written"
                )))
            }
        };
        // Every name it has: the spelled one, the resolved one, and its hard links under a
        // claimed path.
        let mut names = vec![rel.clone()];
        names.extend(claims::normalize(path, &self.cwd(), &key));
        names.extend(claims::hard_link_names(&key, &resolved, &active));
        let found = claims::conflicts(&active, &self.me().from, &names, true);
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
