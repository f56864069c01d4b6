//! Target resolution (DESIGN §6): exact id, handle, unique id prefix, pid, unique title fragment,
//! unique goal (first prompt) fragment, case-insensitive. Fragments and pids match live
//! sessions only; ids match any session. `all`, `everyone` and `*` are never targets: they
//! are refused with the sentence that explains room versus direct message.

use super::presence;
use crate::store::{Result, Session, Store, StoreError};

#[derive(Debug)]
pub(crate) enum Resolved {
    One(Box<Session>),
    None,
    Ambiguous(Vec<(String, String)>),
    /// `all`, `everyone` or `*`: see [`EVERYONE`].
    Everyone,
}

/// Why `all` is not a target, in the sentence every front end shows.
pub(crate) const EVERYONE: &str =
    "there is no \"all\" session: to reach everyone, leave the target \
out and the line goes to this worktree's room, which every session here hears; a target names \
one session and makes the line a direct message";

/// Whether a target means "everybody" (which no target does).
pub(crate) fn means_everyone(target: &str) -> bool {
    matches!(
        target.trim().to_ascii_lowercase().as_str(),
        "all" | "everyone" | "everybody" | "*" | "@all" | "@everyone"
    )
}

pub(crate) fn resolve(rooms: &super::Rooms, store: &Store, target: &str) -> Result<Resolved> {
    let t = target.trim();
    if t.is_empty() {
        return Ok(Resolved::None);
    }
    if means_everyone(t) {
        return Ok(Resolved::Everyone);
    }
    if let Ok(s) = store.session(t) {
        return Ok(Resolved::One(Box::new(s)));
    }
    let live = presence::live(store)?;
    if t.bytes().all(|b| b.is_ascii_digit()) && !t.starts_with('0') {
        if let Ok(pid) = t.parse::<i64>() {
            let hits: Vec<&Session> = live.iter().filter(|s| s.pid == Some(pid)).collect();
            if hits.len() == 1 {
                return Ok(Resolved::One(Box::new(hits[0].clone())));
            }
        }
    }
    match store.resolve_id(t) {
        Ok(Some(s)) => return Ok(Resolved::One(Box::new(s))),
        Ok(None) => {}
        Err(StoreError::Ambiguous { candidates, .. }) => {
            return Ok(Resolved::Ambiguous(
                candidates
                    .into_iter()
                    .map(|c| (c.handle, c.title))
                    .collect(),
            ))
        }
        Err(e) => return Err(e),
    }
    let lower = t.to_lowercase();
    let pick = |hits: Vec<&Session>| -> Option<Resolved> {
        match hits.len() {
            0 => None,
            1 => Some(Resolved::One(Box::new(hits[0].clone()))),
            _ => Some(Resolved::Ambiguous(
                hits.iter()
                    .map(|s| (s.handle.clone(), s.title.clone()))
                    .collect(),
            )),
        }
    };
    let by_title: Vec<&Session> = live
        .iter()
        .filter(|s| s.title.to_lowercase().contains(&lower))
        .collect();
    if let Some(r) = pick(by_title) {
        return Ok(r);
    }
    let mut by_goal = Vec::new();
    for s in &live {
        let goal = store.activity(&s.id, 0)?.goal.unwrap_or_default();
        if goal.to_lowercase().contains(&lower) {
            by_goal.push(s);
        }
    }
    if let Some(r) = pick(by_goal) {
        return Ok(r);
    }
    // A session of another machine in this worktree's shared room.
    let Ok(dir) = std::env::current_dir() else {
        return Ok(Resolved::None);
    };
    Ok(
        match super::remote::resolve(store, &rooms.worktree(&dir), t) {
            Ok(Some(s)) => Resolved::One(Box::new(s)),
            Ok(None) => Resolved::None,
            Err(many) => {
                Resolved::Ambiguous(many.into_iter().map(|s| (s.handle, s.title)).collect())
            }
        },
    )
}
