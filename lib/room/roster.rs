//! Who is here, as one list for every reader: `ag-room who`, the `peer_who` tool of agents and
//! of `ag-room mcp`, the roster line of the peer channel and the compaction handoff.

use serde_json::{json, Value};

use super::presence;
use crate::log::PeerPresent;
use crate::store::{Result, Store};
use crate::text::{clip_bytes, one_line};

/// Bytes of a goal in the roster line a model is shown.
const ROSTER_GOAL_BYTES: usize = 60;
/// Sessions named in the roster line; the rest are counted (`peer_who` lists them all).
pub(crate) const ROSTER_MAX: usize = 6;

pub(crate) use super::remote::Here;

/// The live sessions whose cwd lies in the worktree of the room `room`, oldest first (none
/// for the device room).
pub(crate) fn here(store: &Store, room: &super::Room) -> Result<Vec<Here>> {
    let Some(key) = room.key() else {
        return Ok(Vec::new());
    };
    let now = crate::clock::now_ms();
    let mut out = Vec::new();
    for s in presence::live_in(store, key)? {
        let a = store.activity(&s.id, 1)?;
        let goal = a
            .goal
            .clone()
            .filter(|g| !g.trim().is_empty())
            .unwrap_or_else(|| s.title.clone());
        let at = presence::at_in(s.cwd.as_deref(), key);
        out.push(Here {
            goal: one_line(&goal),
            last_tool: a.tools.first().map(|t| t.0.clone()).unwrap_or_default(),
            last_said: a.said.first().map(|t| one_line(t)).unwrap_or_default(),
            age: crate::clock::age(a.last_at.unwrap_or(s.updated_at), now),
            at,
            session: s,
        });
    }
    // On a shared backend, the sessions of other machines follow.
    out.extend(super::remote::here(store, room));
    Ok(out)
}

impl Here {
    /// The roster entry a model is shown.
    pub(crate) fn present(&self) -> PeerPresent {
        PeerPresent {
            session: self.session.id.clone(),
            handle: self.session.handle.clone(),
            name: presence::display_name(&self.session),
            goal: clip_bytes(&self.goal, ROSTER_GOAL_BYTES),
            at: clip_bytes(&self.at, 80),
        }
    }

    /// What `peer_who` answers for one session: name, short handle, goal, last tool, age.
    pub(crate) fn who_json(&self) -> Value {
        json!({
            "name": presence::display_name(&self.session),
            "session": self.session.handle,
            "goal": clip_bytes(&self.goal, 200),
            "last_tool": self.last_tool,
            "age": self.age,
            "where": self.at,
        })
    }
}

/// The roster a model is shown: the others (not `me`), at most [`ROSTER_MAX`] of them.
pub(crate) fn roster(store: &Store, room: &super::Room, me: &str) -> Result<Vec<PeerPresent>> {
    Ok(here(store, room)?
        .iter()
        .filter(|h| h.session.id != me)
        .take(ROSTER_MAX)
        .map(Here::present)
        .collect())
}

/// `peer_who`'s answer: one JSON object a line, or a sentence when nobody else is here.
pub(crate) fn who_text(store: &Store, room: &super::Room, me: Option<&str>) -> Result<String> {
    let rows: Vec<String> = here(store, room)?
        .iter()
        .filter(|h| Some(h.session.id.as_str()) != me)
        .map(|h| h.who_json().to_string())
        .collect();
    Ok(if rows.is_empty() {
        "no other live session in this worktree".into()
    } else {
        rows.join("\n")
    })
}
