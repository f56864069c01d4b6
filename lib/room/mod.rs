//! Rooms (DESIGN §6): JSONL files under `$AG_HOME/rooms/`. The worktree room (keyed by the
//! canonical git top level, or the directory itself outside git) is heard by every session in
//! that tree; a line with `to` set is a direct message only its addressee takes in. The device
//! room (`device.jsonl`) carries only direct messages between folders.
//!
//! Claims are room lines too (`claim` / `release`): the room is the one log, and a claim is
//! checked and written under the room's lock, so two claimers cannot both win.
//!
//! Where the lines are kept is [`backend`]'s: files by default, NATS JetStream ([`nats`]) when
//! the user config names a server.

pub(crate) mod backend;
#[cfg(test)]
mod behaviours;
pub(crate) mod claim_index;
pub(crate) mod claims;
pub mod file;
mod glob;
pub(crate) mod inbox;
mod kind;
pub(crate) mod nats;
pub(crate) mod post;
pub(crate) mod presence;
pub(crate) mod remote;
pub(crate) mod repo;
pub(crate) mod roster;
pub(crate) mod specs;
pub(crate) mod tail;
pub(crate) mod target;
pub(crate) mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::rooms::RoomServer;
use crate::paths::Home;

pub use kind::LineKind;

/// The longest line a room takes, newline included.
pub(crate) const MAX_LINE: usize = 64 * 1024;

/// The device room's file name.
pub(crate) const DEVICE: &str = "device.jsonl";

#[derive(Debug, thiserror::Error)]
pub enum RoomError {
    #[error(
        "the line would be {len} bytes; a room line holds at most {max} (nothing was written)"
    )]
    TooLong { len: usize, max: usize },
    #[error("{0}")]
    Invalid(String),
    /// The room server cannot be reached now: a temporary failure, nothing was written.
    #[error("{0}")]
    Unavailable(String),
    /// The room configuration cannot be used (a bad URL, a credential the server refuses).
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("{}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl RoomError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> RoomError {
        RoomError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Who wrote a line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct From {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The session's short handle (`kqzvxm`); lines written before handles existed lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    /// `agent`, `human` or `tool`.
    pub kind: String,
}

/// Bytes of a sender's name that are shown (to people and in peer chunks). Any writer of a
/// room chooses its name: clipped, one oversized name cannot crowd a peer batch's byte budget
/// and hold back every other line with it.
pub(crate) const NAME_BYTES: usize = 64;

impl From {
    /// The sender's name as it is shown anywhere, clipped to [`NAME_BYTES`].
    pub(crate) fn shown_name(&self) -> String {
        crate::text::clip_bytes(&self.name, NAME_BYTES)
    }

    /// The name shown to models and people, clipped to [`NAME_BYTES`]: a session's name
    /// carries its handle (or, on a line written before handles, its whole id), so a reader
    /// can address it exactly.
    pub(crate) fn display(&self) -> String {
        let name = self.shown_name();
        match (&self.handle, &self.session) {
            (Some(h), _) => format!("{name} [{h}]"),
            (None, Some(s)) => format!("{name} [{s}]"),
            (None, None) => name,
        }
    }

    /// Whether two senders are the same speaker: the same session, or the same named person
    /// or script when neither is a session.
    pub(crate) fn same(&self, other: &From) -> bool {
        match (&self.session, &other.session) {
            (Some(a), Some(b)) => a == b,
            (None, None) => self.name == other.name,
            _ => false,
        }
    }
}

/// One room line. Which fields are set depends on `type`: `say` has `text` (and `to`,
/// `in_reply_to`), `delivered` and `ack` name the message in `in_reply_to`, `claim` has
/// `paths`, `intent`, `mode`, `ttl_s`, `release` lists claim ids in `claims`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub(crate) v: u32,
    pub(crate) id: String,
    pub(crate) ts: String,
    #[serde(rename = "type")]
    pub(crate) ty: LineKind,
    pub(crate) from: From,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) in_reply_to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) paths: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) intent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ttl_s: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) claims: Option<Vec<String>>,
}

impl Line {
    pub fn new(ty: LineKind, from: From) -> Line {
        Line {
            v: 1,
            id: crate::ids::new_id(),
            ts: crate::clock::iso(crate::clock::now_ms()),
            ty,
            from,
            to: None,
            in_reply_to: None,
            text: None,
            paths: None,
            intent: None,
            mode: None,
            ttl_s: None,
            claims: None,
        }
    }

    pub(crate) fn ts_ms(&self) -> i64 {
        crate::clock::parse_iso(&self.ts).unwrap_or(0)
    }
}

/// A room, where its participant's backend keeps it.
#[derive(Clone)]
pub struct Room {
    /// The file name, e.g. `agkit-3f2a9c1e7b4d.jsonl` or `device.jsonl`; readers' cursors are
    /// keyed by it.
    pub(crate) name: String,
    pub path: PathBuf,
    pub(crate) kind: RoomKind,
    /// Where its lines live: the backend of the [`Rooms`] that made it.
    pub(crate) backend: Arc<dyn backend::Backend>,
}

impl std::fmt::Debug for Room {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Room")
            .field("name", &self.name)
            .field("path", &self.path)
            .field("kind", &self.kind)
            .finish()
    }
}

impl PartialEq for Room {
    fn eq(&self, other: &Room) -> bool {
        (&self.name, &self.path, &self.kind) == (&other.name, &other.path, &other.kind)
    }
}

impl Eq for Room {}

/// How this program opens a room server, when it carries the client ([`carry_servers`]).
static SERVERS: std::sync::OnceLock<fn(RoomServer) -> Arc<dyn backend::Backend>> =
    std::sync::OnceLock::new();

/// Let this program's rooms live on a room server (NATS) when the configuration says so. `ag`
/// calls it as it starts. The installed `ag-room` does not: it runs `ag` when rooms are on a
/// server, and the client (an async runtime, TLS, NATS) left out of it is about half of
/// what it would load and relocate at every start (docs/decisions.md, "`ag-room` on files").
pub fn carry_servers() {
    let _ = SERVERS.set(|server| nats::Nats::open(server));
}

/// The backend of a room server, through the client this program carries; without one,
/// rooms that say what to run instead at every use.
fn server_backend(server: RoomServer) -> Arc<dyn backend::Backend> {
    #[cfg(test)]
    carry_servers();
    match SERVERS.get() {
        Some(open) => open(server),
        None => Arc::new(backend::Broken(format!(
            "rooms are on the room server {} ({}), and this program has no client for it; \
             `ag room …` has",
            server.url, server.url_from
        ))),
    }
}

/// A participant in rooms: where rooms live (files under the home, or the NATS server the
/// configuration names, chosen once) and the home. The command builds one and passes it
/// down; every room it reaches is made by it, so all of them share its backend (and, on
/// NATS, its one connection).
#[derive(Clone)]
pub struct Rooms {
    backend: Arc<dyn backend::Backend>,
    home: Home,
}

impl std::fmt::Debug for Rooms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rooms")
            .field("backend", &self.backend.describe())
            .field("home", &self.home.dir)
            .finish()
    }
}

impl Rooms {
    /// The rooms of `home`, where the resolved configuration puts them: `AG_ROOM_URL`, else
    /// `[rooms] url` in the user config, else files. A configuration that cannot be used makes
    /// every room operation fail with what is wrong (never a silent fallback to files, which
    /// would split the room).
    pub(crate) fn open(home: &Home, config: &crate::config::Config) -> Rooms {
        let backend: Arc<dyn backend::Backend> = match crate::config::rooms::server(config) {
            Ok(None) => Arc::new(backend::Files),
            Ok(Some(server)) => server_backend(server),
            Err(e) => Arc::new(backend::Broken(e)),
        };
        Rooms {
            backend,
            home: home.clone(),
        }
    }

    /// Rooms that cannot be used, because the configuration that says where they live could
    /// not be read: every room operation fails with `why`.
    pub(crate) fn unusable(home: &Home, why: String) -> Rooms {
        Rooms {
            backend: Arc::new(backend::Broken(why)),
            home: home.clone(),
        }
    }

    /// Rooms as files under `home`, whatever the configuration says.
    pub fn files(home: &Home) -> Rooms {
        Rooms {
            backend: Arc::new(backend::Files),
            home: home.clone(),
        }
    }

    /// Where the rooms live.
    pub(crate) fn backend(&self) -> &dyn backend::Backend {
        self.backend.as_ref()
    }

    /// The device room.
    pub(crate) fn device(&self) -> Room {
        let name = self.backend.device_name();
        Room {
            path: self.home.rooms_dir().join(&name),
            name,
            kind: RoomKind::Device,
            backend: self.backend.clone(),
        }
    }

    /// The worktree room of a directory.
    pub fn worktree(&self, dir: &Path) -> Room {
        self.of_key(worktree_key(dir))
    }

    /// The worktree room of a key ([`worktree_key`]).
    pub(crate) fn of_key(&self, key: PathBuf) -> Room {
        let name = self.backend.worktree_name(&key);
        Room {
            path: self.home.rooms_dir().join(&name),
            name,
            kind: RoomKind::Worktree(key),
            backend: self.backend.clone(),
        }
    }

    /// The rooms a reader in `dir` hears: its worktree room, then the device room.
    pub(crate) fn heard_in(&self, dir: &Path) -> Vec<Room> {
        vec![self.worktree(dir), self.device()]
    }
}

/// Which room: a worktree's (heard by every session in it) or the device's (direct messages
/// between folders only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RoomKind {
    /// The worktree room of this key: the canonical git top level, or a directory outside git.
    Worktree(PathBuf),
    Device,
}

impl Room {
    pub(crate) fn is_device(&self) -> bool {
        self.kind == RoomKind::Device
    }

    /// The worktree's key; `None` for the device room.
    pub(crate) fn key(&self) -> Option<&Path> {
        match &self.kind {
            RoomKind::Worktree(k) => Some(k),
            RoomKind::Device => None,
        }
    }

    /// The name without `.jsonl`, for people.
    pub(crate) fn label(&self) -> &str {
        self.name.strip_suffix(".jsonl").unwrap_or(&self.name)
    }

    /// Append one whole line (or nothing) wherever rooms live.
    pub(crate) fn append(&self, line: &Line) -> Result<(), RoomError> {
        self.backend.append(self, line)
    }

    /// The position just past the last line: where a reader that starts now begins.
    pub(crate) fn end(&self) -> Result<u64, RoomError> {
        self.backend.end(self)
    }

    /// Stream the lines from position `from` ([`file::scan`]'s contract, on any backend).
    pub(crate) fn scan(
        &self,
        from: u64,
        warn: &mut dyn FnMut(String),
        f: &mut dyn FnMut(u64, Line) -> file::Flow,
    ) -> Result<u64, RoomError> {
        self.backend.scan(self, from, warn, f)
    }

    /// The line at a position a scan reported.
    pub(crate) fn read_at(&self, at: u64) -> Option<Line> {
        self.backend.read_at(self, at)
    }

    /// A position at least `lines` lines before `end` ([`backend::Backend::rewind`]).
    pub(crate) fn rewind(&self, end: u64, lines: u64) -> Result<u64, RoomError> {
        self.backend.rewind(self, end, lines)
    }
}

/// The canonical git top level above `dir` (a `.git` directory or file), else `dir` itself.
pub(crate) fn worktree_key(dir: &Path) -> PathBuf {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut cur: Option<&Path> = Some(&dir);
    while let Some(d) = cur {
        if d.join(".git").exists() {
            return d.to_path_buf();
        }
        cur = d.parent();
    }
    dir
}

/// `SLUG-HASH.jsonl`: a readable slug of the last component and a short hash of the whole key.
pub(crate) fn room_name(key: &Path) -> String {
    let s = key.to_string_lossy();
    // FNV-1a, 64 bits: stable across builds and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let last = key
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into());
    let mut slug: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(32)
        .collect();
    slug = slug.trim_matches(['-', '.']).to_string();
    if slug.is_empty() {
        slug = "root".into();
    }
    format!("{slug}-{:012x}.jsonl", h & 0xffff_ffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable_and_readable() {
        let n = room_name(Path::new("/home/me/My Project"));
        assert!(n.starts_with("my-project-") && n.ends_with(".jsonl"), "{n}");
        assert_eq!(n, room_name(Path::new("/home/me/My Project")));
        assert_ne!(n, room_name(Path::new("/home/you/My Project")));
    }

    #[test]
    fn torn_and_corrupt_lines() {
        let dir = tempfile_dir();
        let p = dir.join("r.jsonl");
        let mk = |t: &str| {
            let mut l = Line::new(
                LineKind::Say,
                From {
                    session: None,
                    handle: None,
                    name: "a".into(),
                    pid: None,
                    kind: "human".into(),
                },
            );
            l.text = Some(t.into());
            l
        };
        file::append(&p, &mk("one")).unwrap();
        {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
            f.write_all(b"garbage\n{\"v\":1,\"id\":\"x").unwrap();
        }
        let mut seen = Vec::new();
        let mut warns = Vec::new();
        let end = file::scan(&p, 0, &mut |w| warns.push(w), &mut |_, l| {
            seen.push(l.text.unwrap());
            file::Flow::Go
        })
        .unwrap();
        assert_eq!(seen, ["one"]);
        assert_eq!(warns.len(), 1);
        assert!(end < file::size(&p));
        let _ = std::fs::remove_dir_all(dir);
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("ag-room-test-{}", crate::ids::new_id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}

/// The modules of `room/` form no cycle: each may use the shared types of this file and the
/// modules below it, never one that uses it back. Read from the sources' `use` lines and
/// `super::`/`crate::room::` paths, so it stays so.
#[cfg(test)]
mod layering {
    use std::collections::{BTreeMap, BTreeSet};

    /// Each module (`nats` for the folder) and the sibling modules it names.
    fn graph() -> BTreeMap<String, BTreeSet<String>> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("lib/room");
        let mut files: Vec<(String, String)> = Vec::new();
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                for f in std::fs::read_dir(&p).unwrap().flatten() {
                    files.push((name.clone(), std::fs::read_to_string(f.path()).unwrap()));
                }
            } else if name != "mod" {
                files.push((name, std::fs::read_to_string(&p).unwrap()));
            }
        }
        let modules: BTreeSet<String> = files.iter().map(|(m, _)| m.clone()).collect();
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (m, text) in &files {
            // Tests may reach anywhere; comments name what they like.
            let code: String = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or(text)
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n");
            let edges = g.entry(m.clone()).or_default();
            for prefix in ["super::", "crate::room::"] {
                for (at, _) in code.match_indices(prefix) {
                    let rest = &code[at + prefix.len()..];
                    let word: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    // `super::` inside `nats/` is the folder's own root.
                    let inner = m == "nats" && prefix == "super::" && !text.contains("mod conn;");
                    if modules.contains(&word) && &word != m && !inner {
                        edges.insert(word);
                    }
                }
            }
        }
        g
    }

    #[test]
    fn the_room_modules_form_no_cycle() {
        let g = graph();
        assert!(g.len() > 10, "{g:?}");
        // Depth-first search with colours: a grey module reached again closes a cycle.
        fn visit(
            m: &str,
            g: &BTreeMap<String, BTreeSet<String>>,
            state: &mut BTreeMap<String, u8>,
            path: &mut Vec<String>,
        ) -> Option<Vec<String>> {
            match state.get(m) {
                Some(1) => {
                    let from = path.iter().position(|p| p == m).unwrap_or(0);
                    let mut cycle = path[from..].to_vec();
                    cycle.push(m.to_string());
                    return Some(cycle);
                }
                Some(2) => return None,
                _ => {}
            }
            state.insert(m.to_string(), 1);
            path.push(m.to_string());
            for next in g.get(m).into_iter().flatten() {
                if let Some(c) = visit(next, g, state, path) {
                    return Some(c);
                }
            }
            path.pop();
            state.insert(m.to_string(), 2);
            None
        }
        let mut state = BTreeMap::new();
        for m in g.keys() {
            if let Some(cycle) = visit(m, &g, &mut state, &mut Vec::new()) {
                panic!("room modules in a cycle: {}", cycle.join(" → "));
            }
        }
    }
}
