//! File claims: `claim` and `release` lines in the worktree room. A claim is active until it
//! is released, expires (`ttl_s`, default 1800) or — when a session holds it — that session is
//! removed, fails or is cancelled. It outlives the `ag-prompt` process that made it: a chat
//! keeps its claim between turns, and its holder shows as idle meanwhile. Paths are globs
//! relative to the worktree's top; overlap is checked both ways. Checking and writing a claim
//! happen under the room's lock.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use super::presence::Me;
use super::{From, Line, LineKind, Room, RoomError};
use crate::store::{SessionStatus, Store};

use super::claim_index::expires;
pub(crate) use super::claim_index::{open_lines, DEFAULT_TTL_S};

/// A claim's `ttl_s` as a tool passes it (the agent's `peer_claim`, `ag-room mcp`'s `claim`):
/// absent is the default; otherwise whole seconds within what `ag-room claim --ttl` accepts.
pub(crate) fn ttl_arg(v: &serde_json::Value) -> Result<u64, String> {
    let max = crate::clock::MAX_DURATION.as_secs();
    match v {
        serde_json::Value::Null => Ok(DEFAULT_TTL_S),
        v => v.as_u64().filter(|t| (1..=max).contains(t)).ok_or_else(|| {
            format!("ttl_s must be a whole number of seconds from 1 to {max}, not {v}")
        }),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Claim {
    pub(crate) id: String,
    pub(crate) holder: From,
    pub(crate) paths: Vec<String>,
    pub(crate) intent: String,
    pub(crate) mode: String,
    pub(crate) ttl_s: u64,
    pub(crate) ts: String,
    pub(crate) expires_ms: i64,
    /// The holding session's state: `running` (a turn is under way) or `idle` (between
    /// turns, or finished); `None` when a person or script holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) holder_state: Option<&'static str>,
}

/// Whether the session `id` still holds its claims, and in which state: `None` once it was
/// removed, failed (a dead process is reaped as failed) or was cancelled.
fn holding(store: &Store, id: &str, shared: bool) -> Option<&'static str> {
    let Ok(s) = store.session(id) else {
        // On shared rooms a holder may be a session of another machine, which this store
        // does not know: its claim holds until it is released or expires, and its own
        // machine releases it when the session ends or goes ([`release_ended`]).
        return shared.then_some("remote");
    };
    let s = store.reaped(s);
    match s.status {
        SessionStatus::Running => Some("running"),
        SessionStatus::Idle | SessionStatus::Done => Some("idle"),
        SessionStatus::Failed | SessionStatus::Cancelled | SessionStatus::Interrupted => None,
    }
}

impl Claim {
    pub(crate) fn exclusive(&self) -> bool {
        self.mode != "shared"
    }

    /// How a model or a person reaches the holder.
    pub(crate) fn how_to_reach(&self) -> String {
        match &self.holder.session {
            Some(s) => {
                let s = self.holder.handle.as_deref().unwrap_or(s);
                format!("peer_message with session=\"{s}\" (or `ag-room tell --to {s}`)")
            }
            None => format!(
                "{} is a person or script; say it in the room (peer_message without session, or `ag-room tell`)",
                self.holder.name
            ),
        }
    }
}

/// One conflict: a claim of someone else and the pairs (asked, held) that overlap.
#[derive(Debug, Clone)]
pub(crate) struct Conflict {
    pub(crate) claim: Claim,
    pub(crate) overlaps: Vec<(String, String)>,
}

impl Conflict {
    pub(crate) fn describe(&self) -> String {
        let pairs: Vec<String> = self
            .overlaps
            .iter()
            .map(|(a, b)| {
                if a == b {
                    a.clone()
                } else {
                    format!("{a} ~ {b}")
                }
            })
            .collect();
        format!(
            "{} holds {} ({}) with intent {:?}: {}",
            self.claim.holder.display(),
            self.claim.id,
            self.claim.mode,
            self.claim.intent,
            pairs.join(", ")
        )
    }
}

/// The active claims of a room, oldest first.
pub(crate) fn active(
    store: &Store,
    room: &Room,
    warn: &mut dyn FnMut(String),
) -> Result<Vec<Claim>, RoomError> {
    let lines = room.backend.claim_lines(room, warn)?;
    Ok(fold(store, &lines, room.backend.shared()))
}

/// The active claims that `claim` and `release` lines leave, oldest first: neither released
/// nor expired, and held by a session this store does not know ended (or by no session). On
/// `shared` rooms a holder this store does not know is another machine's, and holds.
pub(crate) fn fold(store: &Store, lines: &[Line], shared: bool) -> Vec<Claim> {
    let mut states: HashMap<String, Option<&'static str>> = HashMap::new();
    let mut out = Vec::new();
    for mut c in unreleased(lines) {
        if let Some(s) = &c.holder.session {
            let state = *states
                .entry(s.clone())
                .or_insert_with(|| holding(store, s, shared));
            let Some(state) = state else {
                continue;
            };
            c.holder_state = Some(state);
        }
        out.push(c);
    }
    out
}

/// The claims that `claim` and `release` lines leave, neither released nor expired, whoever
/// holds them, oldest first.
fn unreleased(lines: &[Line]) -> Vec<Claim> {
    open_lines(lines)
        .into_iter()
        .map(|l| {
            let ttl = l.ttl_s.unwrap_or(DEFAULT_TTL_S);
            Claim {
                expires_ms: expires(l.ts_ms(), ttl),
                id: l.id,
                holder: l.from,
                paths: l.paths.unwrap_or_default(),
                intent: l.intent.unwrap_or_default(),
                mode: l.mode.unwrap_or_else(|| "exclusive".into()),
                ttl_s: ttl,
                ts: l.ts,
                holder_state: None,
            }
        })
        .collect()
}

/// The literal start of a glob (up to its first wildcard).
fn literal_prefix(p: &str) -> &str {
    let end = p.find(['*', '?', '[', '{']).unwrap_or(p.len());
    &p[..end]
}

/// The directory a claimed path starts in: the path itself when it is literal, else the
/// directory of its literal start (`src` of `src/*.rs`).
pub(crate) fn literal_dir(p: &str) -> &str {
    if is_glob(p) {
        literal_prefix(p).rsplit_once('/').map_or("", |(d, _)| d)
    } else {
        p
    }
}

pub(crate) fn is_glob(p: &str) -> bool {
    literal_prefix(p).len() != p.len()
}

pub(crate) fn glob_match(pattern: &str, path: &str) -> bool {
    super::glob::matches(pattern, path)
}

/// Whether two claimed paths (globs) can name the same file: equal, one a directory holding
/// the other, one matching the other, or two globs whose literal starts agree.
pub(crate) fn overlaps(a: &str, b: &str) -> bool {
    let under = |dir: &str, p: &str| {
        dir.is_empty() || dir == "." || p.starts_with(&format!("{}/", dir.trim_end_matches('/')))
    };
    if a == b || (!is_glob(a) && under(a, b)) || (!is_glob(b) && under(b, a)) {
        return true;
    }
    match (is_glob(a), is_glob(b)) {
        (true, false) => glob_match(a, b),
        (false, true) => glob_match(b, a),
        (true, true) => {
            let (pa, pb) = (literal_prefix(a), literal_prefix(b));
            pa.starts_with(pb) || pb.starts_with(pa)
        }
        (false, false) => false,
    }
}

/// Claims of others that overlap `paths`; with `want_shared`, only their exclusive claims
/// conflict (shared claims go together).
pub(crate) fn conflicts(
    active: &[Claim],
    me: &From,
    paths: &[String],
    want_shared: bool,
) -> Vec<Conflict> {
    let mut out = Vec::new();
    for c in active {
        if c.holder.same(me) || (want_shared && !c.exclusive()) {
            continue;
        }
        let mut pairs = Vec::new();
        for p in paths {
            for q in &c.paths {
                if overlaps(p, q) {
                    pairs.push((p.clone(), q.clone()));
                }
            }
        }
        if !pairs.is_empty() {
            out.push(Conflict {
                claim: c.clone(),
                overlaps: pairs,
            });
        }
    }
    out
}

/// The paths a tool call names (`paths`: one string, or a list of them), each made relative
/// to the worktree `key` ([`normalize`]); the one reading for the agent's tools and `ag-room
/// mcp`.
pub(crate) fn paths_arg(
    v: &serde_json::Value,
    cwd: &Path,
    key: &Path,
) -> Result<Vec<String>, String> {
    let list: Vec<&str> = match v {
        serde_json::Value::String(s) => vec![s.as_str()],
        serde_json::Value::Array(a) => a.iter().filter_map(|x| x.as_str()).collect(),
        _ => Vec::new(),
    };
    list.iter().map(|p| normalize(p, cwd, key)).collect()
}

/// Make a path (relative to `cwd`, or absolute) relative to the worktree `key`, lexically.
pub(crate) fn normalize(path: &str, cwd: &Path, key: &Path) -> Result<String, String> {
    let joined = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        cwd.join(path)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    match out.strip_prefix(key) {
        Ok(rel) => {
            let s = rel.to_string_lossy().into_owned();
            Ok(if s.is_empty() { ".".into() } else { s })
        }
        Err(_) => Err(format!("{path} is outside the worktree {}", key.display())),
    }
}

/// Files looked at when searching claimed directories for another name of a hard-linked file.
const ALIAS_SEARCH_LIMIT: usize = 20_000;

/// The other names, relative to the worktree `key`, that the claims of `active` give the file
/// at `resolved` (a canonical path): a hard link to it (same device and inode) under a
/// claimed path. A second name must not get around a claim on the first. Only a file with more
/// than one link has other names, so this costs nothing for the usual file.
pub(crate) fn hard_link_names(key: &Path, resolved: &Path, active: &[Claim]) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let Ok(md) = std::fs::metadata(resolved) else {
        return Vec::new();
    };
    if !md.is_file() || md.nlink() < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut budget = ALIAS_SEARCH_LIMIT;
    for held in active.iter().flat_map(|c| &c.paths) {
        walk_files(key.join(literal_dir(held)), &mut budget, &mut |p, m| {
            if m.dev() != md.dev() || m.ino() != md.ino() {
                return;
            }
            if let Ok(rel) = p.strip_prefix(key) {
                let rel = rel.to_string_lossy().into_owned();
                if !out.contains(&rel) {
                    out.push(rel);
                }
            }
        });
    }
    out
}

/// Call `f` for every file under `start` (or `start` itself when it is one), without
/// following links, while `budget` (entries looked at) lasts.
pub(crate) fn walk_files(
    start: PathBuf,
    budget: &mut usize,
    f: &mut dyn FnMut(&Path, &std::fs::Metadata),
) {
    let mut stack = vec![start];
    while let Some(p) = stack.pop() {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if m.is_dir() {
            if let Ok(rd) = std::fs::read_dir(&p) {
                stack.extend(rd.filter_map(|e| e.ok().map(|e| e.path())));
            }
        } else {
            f(&p, &m);
        }
    }
}

/// What `claim` did.
pub(crate) enum Outcome {
    Claimed(Box<Claim>),
    Refused(Vec<Conflict>),
}

impl Outcome {
    /// What a model is told (the agent's `peer_claim`, `ag-room mcp`): the claim, or who holds
    /// the paths and how to reach them. `Err` when it was refused.
    pub(crate) fn for_model(&self) -> Result<String, String> {
        match self {
            Outcome::Claimed(c) => Ok(format!(
                "claimed {} ({}, {} s): {}",
                c.id,
                c.mode,
                c.ttl_s,
                c.paths.join(", ")
            )),
            Outcome::Refused(cs) => Err(format!(
                "not claimed: {}. Talk to them first: {}",
                cs.iter()
                    .map(|c| c.describe())
                    .collect::<Vec<_>>()
                    .join("; "),
                cs[0].claim.how_to_reach()
            )),
        }
    }
}

/// Claim `paths` (already normalized) for `me`, unless someone else holds an overlapping claim
/// that conflicts. Checked and written under the room's lock.
#[allow(clippy::too_many_arguments)]
pub(crate) fn claim(
    store: &Store,
    room: &Room,
    me: &Me,
    paths: Vec<String>,
    intent: &str,
    shared: bool,
    ttl_s: u64,
    warn: &mut dyn FnMut(String),
) -> Result<Outcome, RoomError> {
    if paths.is_empty() {
        return Err(RoomError::Invalid(
            "claim what? name at least one path".into(),
        ));
    }
    if intent.trim().is_empty() {
        return Err(RoomError::Invalid(
            "a claim needs an intent (what you are about to do)".into(),
        ));
    }
    let mut outcome = None;
    room.backend.append_checked(room, warn, &mut |lines| {
        let act = fold(store, lines, room.backend.shared());
        let found = conflicts(&act, &me.from, &paths, shared);
        if !found.is_empty() {
            outcome = Some(Outcome::Refused(found));
            return Ok(None);
        }
        let mut l = Line::new(LineKind::Claim, me.from.clone());
        l.paths = Some(paths.clone());
        l.intent = Some(intent.trim().to_string());
        l.mode = Some(if shared { "shared" } else { "exclusive" }.into());
        l.ttl_s = Some(ttl_s);
        let c = Claim {
            id: l.id.clone(),
            holder: l.from.clone(),
            paths: paths.clone(),
            intent: intent.trim().to_string(),
            mode: l.mode.clone().unwrap(),
            ttl_s,
            expires_ms: expires(l.ts_ms(), ttl_s),
            ts: l.ts.clone(),
            holder_state: me.session.as_ref().map(|_| "running"),
        };
        outcome = Some(Outcome::Claimed(Box::new(c)));
        Ok(Some(l))
    })?;
    outcome.ok_or_else(|| RoomError::Invalid("the claim was not decided".into()))
}

/// End `me`'s active claims: all of them, or those overlapping `paths`. Returns what ended.
pub(crate) fn release(
    store: &Store,
    room: &Room,
    me: &Me,
    paths: Option<&[String]>,
    warn: &mut dyn FnMut(String),
) -> Result<Vec<Claim>, RoomError> {
    let mut ended = Vec::new();
    room.backend.append_checked(room, warn, &mut |lines| {
        let mine: Vec<Claim> = fold(store, lines, room.backend.shared())
            .into_iter()
            .filter(|c| c.holder.same(&me.from))
            .filter(|c| match paths {
                None => true,
                Some(ps) => ps.iter().any(|p| c.paths.iter().any(|q| overlaps(p, q))),
            })
            .collect();
        let mut l = Line::new(LineKind::Release, me.from.clone());
        l.claims = Some(mine.iter().map(|c| c.id.clone()).collect());
        let line = (!mine.is_empty()).then_some(l);
        ended = mine;
        Ok(line)
    })?;
    Ok(ended)
}

/// The [`Store::on_ended`] hook: on a shared backend, end the claims of a session of this
/// store that was removed or ended failed, cancelled or interrupted, with a `release` line on
/// its behalf. Other machines cannot see this store, so the machine where the session lived
/// is the one that says so; a machine that vanishes entirely is covered only by the TTL. On
/// files every reader asks this store, and nothing is written. Best effort: a server that
/// cannot be reached leaves the claims to their TTL.
pub(crate) fn release_ended(rooms: &super::Rooms, s: &crate::store::Session) {
    let b = rooms.backend();
    let Some(cwd) = s.cwd.as_deref().filter(|_| b.shared()) else {
        return;
    };
    let room = rooms.worktree(Path::new(cwd));
    let from = super::presence::session_from(s);
    let _ = b.append_checked(&room, &mut |_| {}, &mut |lines| {
        let held = held_by(lines, &s.id);
        if held.is_empty() {
            return Ok(None);
        }
        let mut l = Line::new(LineKind::Release, from.clone());
        l.claims = Some(held);
        Ok(Some(l))
    });
}

/// The ids of the claims that session `id` made and that are neither released nor expired.
fn held_by(lines: &[Line], id: &str) -> Vec<String> {
    unreleased(lines)
        .into_iter()
        .filter(|c| c.holder.session.as_deref() == Some(id))
        .map(|c| c.id)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_both_ways() {
        assert!(overlaps("src/a.rs", "src/a.rs"));
        assert!(overlaps("src", "src/a.rs"));
        assert!(overlaps("src/a.rs", "src"));
        assert!(overlaps("src/*.rs", "src/a.rs"));
        assert!(overlaps("src/a.rs", "src/**"));
        assert!(overlaps("src/**", "src/x/*.rs"));
        assert!(!overlaps("src/a.rs", "src/b.rs"));
        assert!(!overlaps("src/*.rs", "lib/a.rs"));
        assert!(!overlaps("srcx/a.rs", "src"));
    }

    #[test]
    fn normalize_is_relative_to_the_top() {
        let key = Path::new("/w");
        assert_eq!(
            normalize("a/../b.rs", Path::new("/w/x"), key).unwrap(),
            "x/b.rs"
        );
        assert_eq!(normalize("/w/c", Path::new("/tmp"), key).unwrap(), "c");
        assert!(normalize("../../etc", Path::new("/w/x"), key).is_err());
    }
}
