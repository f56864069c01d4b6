//! Where rooms live: the seam between the room model and its storage. Files under
//! `$AG_HOME/rooms/` are the default; with `[rooms] url` in the user config (or `AG_ROOM_URL`)
//! every room lives on NATS JetStream instead ([`super::nats`]). A position in a room is a
//! `u64` either way — a byte offset in a file, a stream sequence on NATS — so readers' cursors,
//! held-back lines and `tail -f` work the same on both.

use std::path::Path;
use std::sync::mpsc::Sender;

use super::file::{self, Flow};
use super::{Line, Room, RoomError};

/// What a claimer decides on the claim lines it sees: the line to append, if any.
pub(crate) type Decide<'a> = dyn FnMut(&[Line]) -> Result<Option<Line>, RoomError> + 'a;

/// A room's storage.
pub(crate) trait Backend: Send + Sync {
    /// The name a worktree room of `key` has here (readers' cursors are keyed by it).
    fn worktree_name(&self, key: &Path) -> String;
    /// The device room's name (on NATS: the team room).
    fn device_name(&self) -> String;
    /// Append one whole line, or nothing.
    fn append(&self, room: &Room, line: &Line) -> Result<(), RoomError>;
    /// The position just past the room's last line (where a new reader starts).
    fn end(&self, room: &Room) -> Result<u64, RoomError>;
    /// Stream the lines from position `from`, oldest first; returns where the next scan starts.
    fn scan(
        &self,
        room: &Room,
        from: u64,
        warn: &mut dyn FnMut(String),
        f: &mut dyn FnMut(u64, Line) -> Flow,
    ) -> Result<u64, RoomError>;
    /// The line at a position a scan reported.
    fn read_at(&self, room: &Room, at: u64) -> Option<Line>;
    /// A position at least `lines` lines before `end` where a scan can start (the start of
    /// the room when it is shorter, or when the backend cannot tell).
    fn rewind(&self, _room: &Room, _end: u64, _lines: u64) -> Result<u64, RoomError> {
        Ok(0)
    }
    /// The room's `claim` and `release` lines that may still matter, oldest first.
    fn claim_lines(
        &self,
        room: &Room,
        warn: &mut dyn FnMut(String),
    ) -> Result<Vec<Line>, RoomError>;
    /// Let `decide` look at the claim lines and append the line it returns, atomically: two
    /// racing callers cannot both decide on the same view. `decide` may run more than once.
    fn append_checked(
        &self,
        room: &Room,
        warn: &mut dyn FnMut(String),
        decide: &mut Decide<'_>,
    ) -> Result<(), RoomError>;
    /// Wake a follower of `room` (send on `tx`) when a line may have arrived, until the
    /// returned guard is dropped; `None` when the follower's own watch of the rooms folder
    /// is what wakes it (files).
    fn wake(&self, _room: &Room, _tx: Sender<()>) -> Option<Waking> {
        None
    }
    /// Which backend this is, for people (`files`, `nats://host:port`).
    fn describe(&self) -> String;
    /// Whether rooms are shared with other machines (whose sessions this store does not know).
    fn shared(&self) -> bool {
        false
    }
    /// Say that a session of this machine is here (a heartbeat); files need not: the store
    /// is where presence is read from.
    fn announce(&self, _room: &Room, _p: &Present) -> Result<(), RoomError> {
        Ok(())
    }
    /// Say that a session left.
    fn leave(&self, _room: &Room, _session: &str) -> Result<(), RoomError> {
        Ok(())
    }
    /// The sessions of every machine that said they are in `room` and are not stale.
    fn present(&self, _room: &Room) -> Result<Vec<Present>, RoomError> {
        Ok(Vec::new())
    }
    /// `ag-room doctor`: one line a check, and how it came out.
    fn doctor(&self) -> Vec<Check> {
        vec![Check::ok(format!("config: {}", self.describe()))]
    }
}

/// One check of `ag-room doctor`: its line, and how it came out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Check {
    pub(crate) state: CheckState,
    pub(crate) text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CheckState {
    Ok,
    Failed,
    /// Failed because the room server cannot be reached now: a temporary failure.
    Unreachable,
}

impl Check {
    pub(crate) fn ok(text: impl Into<String>) -> Check {
        Check {
            state: CheckState::Ok,
            text: text.into(),
        }
    }

    pub(crate) fn failed(text: impl Into<String>) -> Check {
        Check {
            state: CheckState::Failed,
            text: text.into(),
        }
    }

    /// A check that passed or failed (`ok`).
    pub(crate) fn of(ok: bool, text: impl Into<String>) -> Check {
        if ok {
            Check::ok(text)
        } else {
            Check::failed(text)
        }
    }
}

/// A session as its presence entry shows it to other machines.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Present {
    pub(crate) session: String,
    pub(crate) handle: String,
    pub(crate) title: String,
    pub(crate) goal: String,
    pub(crate) status: String,
    pub(crate) host: String,
    /// Its directory relative to the worktree's top.
    pub(crate) at: String,
    pub(crate) last_tool: String,
    pub(crate) last_said: String,
    /// When its last chunk was written (ms since the epoch).
    pub(crate) last_at_ms: i64,
    /// When this entry was written.
    pub(crate) at_ms: i64,
}

/// Keeps a backend's wake-ups coming; dropping it stops them.
pub(crate) struct Waking(pub(crate) Option<Box<dyn FnOnce() + Send>>);

impl Drop for Waking {
    fn drop(&mut self) {
        if let Some(stop) = self.0.take() {
            stop();
        }
    }
}

/// Rooms as JSONL files (DESIGN §6).
pub(crate) struct Files;

impl Backend for Files {
    fn worktree_name(&self, key: &Path) -> String {
        super::room_name(key)
    }

    fn device_name(&self) -> String {
        super::DEVICE.to_string()
    }

    fn append(&self, room: &Room, line: &Line) -> Result<(), RoomError> {
        file::append(&room.path, line)
    }

    fn end(&self, room: &Room) -> Result<u64, RoomError> {
        Ok(file::size(&room.path))
    }

    fn scan(
        &self,
        room: &Room,
        from: u64,
        warn: &mut dyn FnMut(String),
        f: &mut dyn FnMut(u64, Line) -> Flow,
    ) -> Result<u64, RoomError> {
        file::scan(&room.path, from, warn, f)
    }

    fn read_at(&self, room: &Room, at: u64) -> Option<Line> {
        file::read_at(&room.path, at)
    }

    fn rewind(&self, room: &Room, end: u64, lines: u64) -> Result<u64, RoomError> {
        file::rewind(&room.path, end, lines)
    }

    fn claim_lines(
        &self,
        room: &Room,
        warn: &mut dyn FnMut(String),
    ) -> Result<Vec<Line>, RoomError> {
        super::claim_index::claim_lines(&room.path, warn)
    }

    fn append_checked(
        &self,
        room: &Room,
        warn: &mut dyn FnMut(String),
        decide: &mut Decide<'_>,
    ) -> Result<(), RoomError> {
        file::append_locked(
            &room.path,
            || {
                let mut lines = self.claim_lines(room, warn)?;
                let line = decide(&lines)?;
                lines.extend(line.clone());
                Ok((line, lines))
            },
            |lines, end| {
                super::claim_index::write(&room.path, end, super::claim_index::open_lines(lines));
            },
        )
        .map(|_| ())
    }

    fn describe(&self) -> String {
        "files".into()
    }

    fn doctor(&self) -> Vec<Check> {
        vec![Check::ok(
            "config: rooms are files on this machine (no [rooms] url in the user config, no AG_ROOM_URL)",
        )]
    }
}

/// A room configuration that cannot be used: every operation says why.
pub(crate) struct Broken(pub(crate) String);

impl Broken {
    fn err(&self) -> RoomError {
        RoomError::Config(self.0.clone())
    }
}

impl Backend for Broken {
    fn worktree_name(&self, key: &Path) -> String {
        super::room_name(key)
    }

    fn device_name(&self) -> String {
        super::DEVICE.to_string()
    }

    fn append(&self, _: &Room, _: &Line) -> Result<(), RoomError> {
        Err(self.err())
    }

    fn end(&self, _: &Room) -> Result<u64, RoomError> {
        Err(self.err())
    }

    fn scan(
        &self,
        _: &Room,
        _: u64,
        _: &mut dyn FnMut(String),
        _: &mut dyn FnMut(u64, Line) -> Flow,
    ) -> Result<u64, RoomError> {
        Err(self.err())
    }

    fn read_at(&self, _: &Room, _: u64) -> Option<Line> {
        None
    }

    fn claim_lines(&self, _: &Room, _: &mut dyn FnMut(String)) -> Result<Vec<Line>, RoomError> {
        Err(self.err())
    }

    fn append_checked(
        &self,
        _: &Room,
        _: &mut dyn FnMut(String),
        _: &mut Decide<'_>,
    ) -> Result<(), RoomError> {
        Err(self.err())
    }

    fn describe(&self) -> String {
        format!("unusable room configuration: {}", self.0)
    }

    fn doctor(&self) -> Vec<Check> {
        vec![Check::failed(format!("config: {}", self.0))]
    }
}
