//! Sessions of other machines, on a shared backend: what a running session of this machine
//! says about itself (its presence entry), and the entries of others as the rows `who`, the
//! roster and target resolution use. On files every session is in this machine's store and
//! none of this is used.

use std::path::Path;

use super::backend::Present;
use super::{presence, Room};
use crate::store::{Session, SessionKind, SessionStatus, Store};
use crate::text::one_line;

/// What a session of this store says about itself.
pub(crate) fn present_of(store: &Store, s: &Session, key: &Path) -> Present {
    let a = store.activity(&s.id, 1).ok();
    let goal = a
        .as_ref()
        .and_then(|a| a.goal.clone())
        .filter(|g| !g.trim().is_empty())
        .unwrap_or_else(|| s.title.clone());
    let at = presence::at_in(s.cwd.as_deref(), key);
    Present {
        session: s.id.clone(),
        handle: s.handle.clone(),
        title: presence::display_name(s),
        goal: crate::text::clip_bytes(&one_line(&goal), 300),
        status: s.status.as_str().to_string(),
        host: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default(),
        at,
        last_tool: a
            .as_ref()
            .and_then(|a| a.tools.first().map(|t| t.0.clone()))
            .unwrap_or_default(),
        last_said: a
            .as_ref()
            .and_then(|a| {
                a.said
                    .first()
                    .map(|t| crate::text::clip_bytes(&one_line(t), 300))
            })
            .unwrap_or_default(),
        last_at_ms: a.and_then(|a| a.last_at).unwrap_or(s.updated_at),
        at_ms: crate::clock::now_ms(),
    }
}

/// A session of another machine as a row: the store's shape, filled from its entry.
pub(crate) fn session_of(p: &Present) -> Session {
    Session {
        id: p.session.clone(),
        handle: p.handle.clone(),
        title: p.title.clone(),
        kind: SessionKind::Chat,
        parent_id: None,
        fork_of: None,
        fork_seq: None,
        agent: None,
        model: None,
        cwd: None,
        settings_json: "{}".into(),
        status: SessionStatus::Running,
        pid: None,
        pid_start: None,
        created_at: p.at_ms,
        updated_at: p.last_at_ms,
    }
}

/// The sessions of other machines in the worktree room `room` (those of this store left
/// out). A server that cannot be read gives none: presence is advisory.
pub(crate) fn others(store: &Store, room: &Room) -> Vec<Present> {
    let b = room.backend.as_ref();
    if !b.shared() {
        return Vec::new();
    }
    let Ok(all) = b.present(room) else {
        return Vec::new();
    };
    all.into_iter()
        .filter(|p| store.session(&p.session).is_err())
        .collect()
}

/// Why the sessions of other machines cannot be listed now, on a shared backend that cannot
/// be reached; `None` when they can (or when rooms are this machine's files).
pub(crate) fn unreachable(room: &Room) -> Option<String> {
    let b = room.backend.as_ref();
    if !b.shared() {
        return None;
    }
    b.present(room).err().map(|e| e.to_string())
}

/// A live session of a worktree (of this machine or, on shared rooms, another) and what it
/// is doing.
#[derive(Debug, Clone)]
pub(crate) struct Here {
    pub(crate) session: Session,
    /// The first prompt, or the title when it has none.
    pub(crate) goal: String,
    pub(crate) last_tool: String,
    pub(crate) last_said: String,
    /// How long ago it last wrote a chunk (or changed), e.g. `3m`.
    pub(crate) age: String,
    /// Its directory relative to the worktree's top (`.` for the top).
    pub(crate) at: String,
}

/// The rows of [`others`].
pub(crate) fn here(store: &Store, room: &Room) -> Vec<Here> {
    let now = crate::clock::now_ms();
    others(store, room)
        .iter()
        .map(|p| Here {
            session: session_of(p),
            goal: p.goal.clone(),
            last_tool: p.last_tool.clone(),
            last_said: p.last_said.clone(),
            age: crate::clock::age(p.last_at_ms, now),
            at: format!("{} on {}", p.at, p.host),
        })
        .collect()
}

/// A session of another machine that `target` names: its id, handle or a unique id prefix,
/// else a unique fragment of its title or goal. `Err` lists several candidates.
pub(crate) fn resolve(
    store: &Store,
    room: &Room,
    target: &str,
) -> Result<Option<Session>, Vec<Session>> {
    let all = others(store, room);
    let t = target.trim().to_lowercase();
    let exact: Vec<&Present> = all
        .iter()
        .filter(|p| p.session == target.trim() || p.handle == t)
        .collect();
    if let [one] = exact.as_slice() {
        return Ok(Some(session_of(one)));
    }
    let tests: [&dyn Fn(&Present) -> bool; 3] = [
        &|p| t.len() >= 8 && p.session.starts_with(&t),
        &|p| p.title.to_lowercase().contains(&t),
        &|p| p.goal.to_lowercase().contains(&t),
    ];
    for test in tests {
        let hits: Vec<Session> = all.iter().filter(|p| test(p)).map(session_of).collect();
        match hits.len() {
            0 => continue,
            1 => return Ok(hits.into_iter().next()),
            _ => return Err(hits),
        }
    }
    Ok(None)
}

/// What this machine can know of a session of another machine: its presence entry (while it
/// is present) and the newest lines it said in the worktree's room, as peer lines.
pub(crate) struct Seen {
    pub(crate) present: Option<Present>,
    pub(crate) said: Vec<String>,
}

impl Seen {
    /// The host it runs on, when its entry names one.
    pub(crate) fn host(&self) -> Option<&str> {
        let p = self.present.as_ref()?;
        Some(p.host.trim()).filter(|h| !h.is_empty())
    }
}

/// [`Seen`] of session `s` in the worktree room `room`, with its newest `n` lines.
pub(crate) fn seen(store: &Store, room: &Room, s: &Session, n: usize) -> Seen {
    let said = said_in_room(room, &s.id, n)
        .iter()
        .map(|l| {
            crate::fold::peer::said_line(
                &l.from.name,
                l.from.handle.as_deref().unwrap_or(&s.handle),
                l.to.as_deref(),
                l.in_reply_to.as_deref(),
                l.text.as_deref().unwrap_or(""),
            )
        })
        .collect();
    Seen {
        present: others(store, room).into_iter().find(|p| p.session == s.id),
        said,
    }
}

/// What `peek` shows of a session of another machine: what its presence entry says (goal,
/// last tool, last words, where) and the lines it said in this worktree's room, as peer
/// lines. What it heard is in its own machine's store, and the text says so.
pub(crate) fn peek_text(store: &Store, room: &Room, s: &Session, n: usize) -> String {
    let one = |t: &str, max: usize| crate::text::clip_bytes(&one_line(t), max);
    let seen = seen(store, room, s, n);
    let mut out = format!(
        "{} [{}] {} · {}",
        presence::display_name(s),
        s.id,
        seen.host()
            .map_or("on another machine".into(), |h| format!("on {h}")),
        s.status.as_str()
    );
    if let Some(p) = &seen.present {
        out.push_str(&format!("\nwhere: {}", p.at));
        for (label, v) in [
            ("goal", &p.goal),
            ("tool", &p.last_tool),
            ("said", &p.last_said),
        ] {
            if !v.trim().is_empty() {
                out.push_str(&format!("\n{label}: {}", one(v, 300)));
            }
        }
    }
    for line in &seen.said {
        out.push_str(&format!("\npeer said: {}", one(line, 500)));
    }
    out.push_str(&format!(
        "\nheard: what it heard is kept on its own machine ({}); peek there to see it",
        seen.host().unwrap_or("not known: it is not here now")
    ));
    if let Some(p) = &seen.present {
        let ago = crate::clock::age(p.last_at_ms, crate::clock::now_ms());
        out.push_str(&format!("\nlast activity: {ago} ago"));
    }
    out
}

/// The newest `n` lines session `id` said in `room`, oldest first.
fn said_in_room(room: &Room, id: &str, n: usize) -> Vec<super::Line> {
    let mut said = std::collections::VecDeque::new();
    let _ = room.scan(0, &mut |_| {}, &mut |_, l| {
        if l.ty == super::LineKind::Say && l.from.session.as_deref() == Some(id) {
            if said.len() == n.max(1) {
                said.pop_front();
            }
            said.push_back(l);
        }
        super::file::Flow::Go
    });
    said.into()
}
