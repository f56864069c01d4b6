//! Who is here: live sessions (running, with a pid whose start time matches) and who is
//! speaking (a session inside `ag-prompt`, else a named person or script).

use std::path::Path;

use super::{From, LineKind};
use crate::fold::peer::{peer_line, said_line};
use crate::proc;
use crate::store::{Result, Session, SessionStatus, Store};

/// The speaker of a command or tool call, and the key its cursors are stored under.
#[derive(Debug, Clone)]
pub(crate) struct Me {
    pub(crate) from: From,
    pub(crate) reader: String,
    pub(crate) session: Option<Session>,
}

impl Me {
    pub(crate) fn session(session: &Session) -> Me {
        Me {
            from: session_from(session),
            reader: session.id.clone(),
            session: Some(session.clone()),
        }
    }

    /// A person or a script by name.
    pub(crate) fn named(name: &str, kind: &str) -> Me {
        Me {
            from: From {
                session: None,
                handle: None,
                name: name.to_string(),
                pid: Some(std::process::id() as i64),
                kind: kind.to_string(),
            },
            reader: format!("name:{name}"),
            session: None,
        }
    }

    /// Whether a `to` address means this speaker.
    pub(crate) fn is_addressed(&self, to: &str) -> bool {
        match &self.session {
            Some(s) => s.id == to,
            None => to == self.from.name,
        }
    }
}

/// The line author for a session.
pub(crate) fn session_from(s: &Session) -> From {
    From {
        session: Some(s.id.clone()),
        handle: Some(s.handle.clone()).filter(|h| !h.is_empty()),
        name: display_name(s),
        pid: s.pid.or(Some(std::process::id() as i64)),
        kind: "agent".into(),
    }
}

/// A session's name for people and models: its title (clipped), or `session` when it has none.
pub(crate) fn display_name(s: &Session) -> String {
    let t = s.title.trim();
    if t.is_empty() {
        "session".into()
    } else {
        crate::text::clip_bytes(t, 60)
    }
}

/// Where a session works, relative to the top of the worktree `key` (`.` for the top, and
/// when it is not inside).
pub(crate) fn at_in(cwd: Option<&str>, key: &Path) -> String {
    cwd.and_then(|c| {
        let c = std::fs::canonicalize(c).unwrap_or_else(|_| Path::new(c).to_path_buf());
        let rel = c.strip_prefix(key).ok()?.to_string_lossy().into_owned();
        Some(if rel.is_empty() { ".".into() } else { rel })
    })
    .unwrap_or_else(|| ".".into())
}

/// Whether a session is running in a live process right now.
pub(crate) fn is_live(s: &Session) -> bool {
    s.status == SessionStatus::Running && s.pid.is_some_and(|p| proc::alive(p, s.pid_start))
}

/// Every live session on this device; running ones whose process is gone are reaped.
pub(crate) fn live(store: &Store) -> Result<Vec<Session>> {
    let mut out = Vec::new();
    for s in store.running_sessions()? {
        if is_live(&s) {
            out.push(s);
        } else {
            store.reap(&s.id, s.pid, s.pid_start)?;
        }
    }
    Ok(out)
}

/// The live sessions whose cwd lies in the worktree `key`.
pub(crate) fn live_in(store: &Store, key: &Path) -> Result<Vec<Session>> {
    Ok(live(store)?
        .into_iter()
        .filter(|s| in_worktree(s, key))
        .collect())
}

/// The room a direct message to `to` goes through: the worktree room `here` (key `key`) when
/// `to` works in this worktree or is a session of another machine (found in the shared
/// room, unknown to this store), else the device room. The one rule for `ag-room tell`,
/// `peer_message` and the MCP server.
pub(crate) fn room_for_message(
    store: &crate::store::Store,
    rooms: &super::Rooms,
    here: super::Room,
    key: &Path,
    to: &Session,
) -> super::Room {
    let remote = store.session(&to.id).is_err();
    if remote || in_worktree(to, key) {
        here
    } else {
        rooms.device()
    }
}

pub(crate) fn in_worktree(s: &Session, key: &Path) -> bool {
    s.cwd
        .as_deref()
        .is_some_and(|c| super::worktree_key(Path::new(c)) == key)
}

/// Whether a model speaking as `me` from `dir` may look at `s` (`peer_peek`): a live session
/// of its own worktree, or one that has addressed it directly in one of its rooms. Every
/// other session on the device is a human's to list (`ag-room`, `ag-log`), not a model's.
pub(crate) fn within_reach(rooms: &super::Rooms, dir: &Path, me: &Me, s: &Session) -> bool {
    if is_live(s) && in_worktree(s, &super::worktree_key(dir)) {
        return true;
    }
    let mut found = false;
    for room in rooms.heard_in(dir) {
        let _ = room.scan(0, &mut |_| {}, &mut |_, line| {
            let to_me = line.to.as_deref().is_some_and(|t| me.is_addressed(t));
            if line.ty == LineKind::Say
                && to_me
                && line.from.session.as_deref() == Some(s.id.as_str())
            {
                found = true;
                return super::file::Flow::Stop;
            }
            super::file::Flow::Go
        });
        if found {
            return true;
        }
    }
    false
}

/// What `peek` shows of a session: its goal, last prompt, newest tool calls and texts. Never
/// consumes anything. A session of another machine (in the shared worktree room `room`,
/// unknown to this store) shows what it said there ([`super::remote::peek_text`]).
pub(crate) fn peek_text(
    store: &Store,
    room: &super::Room,
    s: &Session,
    n: usize,
) -> Result<String> {
    if store.session(&s.id).is_err() {
        return Ok(super::remote::peek_text(store, room, s, n));
    }
    let a = store.activity(&s.id, n)?;
    let one = |t: &str, max: usize| crate::text::clip_bytes(&crate::text::one_line(t), max);
    let mut out = format!(
        "{} [{}] {} · {}",
        display_name(s),
        s.id,
        if is_live(s) { "live" } else { "not running" },
        s.status.as_str()
    );
    if let Some(cwd) = &s.cwd {
        out.push_str(&format!("\ncwd: {cwd}"));
    }
    if let Some(g) = &a.goal {
        out.push_str(&format!("\ngoal: {}", one(g, 300)));
    }
    if let Some(p) = &a.last_prompt {
        out.push_str(&format!("\nlast prompt: {}", one(p, 300)));
    }
    for (name, args) in &a.tools {
        out.push_str(&format!("\ntool: {name} {}", one(args, 160)));
    }
    for t in &a.said {
        out.push_str(&format!("\nsaid: {}", one(t, 300)));
    }
    // Room traffic, as peer lines: what it heard, oldest first, then what it said.
    for m in a.heard.iter().rev() {
        out.push_str(&format!("\nheard: {}", one(&peer_line(m), 500)));
    }
    for args in a.spoke.iter().rev() {
        let line = said_line(
            &display_name(s),
            &s.handle,
            args["session"].as_str(),
            args["in_reply_to"].as_str(),
            args["text"].as_str().unwrap_or(""),
        );
        out.push_str(&format!("\npeer said: {}", one(&line, 500)));
    }
    if let Some(at) = a.last_at {
        out.push_str(&format!(
            "\nlast activity: {} ago",
            crate::clock::age(at, crate::clock::now_ms())
        ));
    }
    Ok(out)
}
