//! A file room's open claims, kept beside it so that a claim, a release or `ag-room claims`
//! reads the lines written since the last claim or release, not the whole room. Every claim and
//! release writes the index under the room's lock: the claim lines still open (neither
//! released nor expired) as of a byte offset of the room. A reader takes them and scans the
//! room from that offset on. An index that is missing, unreadable, or for another file (the
//! room was replaced, or is shorter than the offset) is ignored: the room is read from its
//! start, as without one. Lines other versions of `ag` append without updating it lie after
//! its offset, so they are read too.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::file::{self, Flow};
use super::{Line, LineKind, RoomError};

#[derive(Debug, Serialize, Deserialize)]
struct Index {
    v: u32,
    /// The room file this index is for (device and inode), and the offset it covers up to.
    dev: u64,
    ino: u64,
    offset: u64,
    /// The claim lines open at `offset`, oldest first.
    open: Vec<Line>,
}

/// Where the index of the room at `room` lives: `$AG_HOME/room-claims/NAME.json`, outside the
/// rooms folder so followers watching it are not woken by it.
fn path_of(room: &Path) -> Option<PathBuf> {
    let name = room.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    let home = room.parent()?.parent()?;
    Some(home.join("room-claims").join(format!("{name}.json")))
}

/// The room's `claim` and `release` lines that may still matter, oldest first: the index's
/// open claims, then every claim and release line after its offset.
pub(crate) fn claim_lines(
    room: &Path,
    warn: &mut dyn FnMut(String),
) -> Result<Vec<Line>, RoomError> {
    let (mut out, from) = match read(room) {
        Some(ix) => (ix.open, ix.offset),
        None => (Vec::new(), 0),
    };
    file::scan(room, from, warn, &mut |_, l| {
        if matches!(l.ty, LineKind::Claim | LineKind::Release) {
            out.push(l);
        }
        Flow::Go
    })?;
    Ok(out)
}

/// The index, when it is for this file as it is now.
fn read(room: &Path) -> Option<Index> {
    let meta = std::fs::metadata(room).ok()?;
    let text = std::fs::read(path_of(room)?).ok()?;
    let ix: Index = serde_json::from_slice(&text).ok()?;
    (ix.v == 1 && ix.dev == meta.dev() && ix.ino == meta.ino() && ix.offset <= meta.len())
        .then_some(ix)
}

/// Record the claims open at `offset` (`lines` as [`claim_lines`] gave them, plus what was just
/// appended, folded to what is still open). Called with the room's lock held; a failure only
/// costs the next reader a longer scan, so it is not an error.
pub(crate) fn write(room: &Path, offset: u64, open: Vec<Line>) {
    let (Some(path), Ok(meta)) = (path_of(room), std::fs::metadata(room)) else {
        return;
    };
    let ix = Index {
        v: 1,
        dev: meta.dev(),
        ino: meta.ino(),
        offset,
        open,
    };
    let Ok(bytes) = serde_json::to_vec(&ix) else {
        return;
    };
    let Some(dir) = path.parent() else {
        return;
    };
    if crate::paths::create_private_dir(dir).is_err() {
        return;
    }
    let tmp = dir.join(format!(".{}.{}", crate::ids::new_id(), std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(&bytes))
        .and_then(|()| std::fs::rename(&tmp, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// How long a claim lasts when its line names no `ttl_s`, in seconds.
pub(crate) const DEFAULT_TTL_S: u64 = 1800;

/// The claim lines of `lines` (claim and release lines, oldest first) that no release names
/// and that have not expired: what a room's claim index keeps.
pub(crate) fn open_lines(lines: &[Line]) -> Vec<Line> {
    let now = crate::clock::now_ms();
    let released: std::collections::HashSet<&str> = lines
        .iter()
        .filter(|l| l.ty == LineKind::Release)
        .flat_map(|l| l.claims.iter().flatten().map(String::as_str))
        .collect();
    lines
        .iter()
        .filter(|l| {
            l.ty == LineKind::Claim
                && !released.contains(l.id.as_str())
                && expires(l.ts_ms(), l.ttl_s.unwrap_or(DEFAULT_TTL_S)) > now
        })
        .cloned()
        .collect()
}

/// When a claim made at `ts_ms` for `ttl_s` seconds ends. Any writer of the room chooses the
/// TTL: one too large for the clock lasts as long as the clock can say, never wraps.
pub(crate) fn expires(ts_ms: i64, ttl_s: u64) -> i64 {
    let ms = i64::try_from(ttl_s)
        .unwrap_or(i64::MAX)
        .saturating_mul(1000);
    ts_ms.saturating_add(ms)
}
