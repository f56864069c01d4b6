//! The open block of a running turn, where another process can follow it: while `ag-prompt`
//! runs a turn it appends its `chunk-open` and `chunk-delta` events (the `--json` form) to
//! `$AG_HOME/live/SESSION.jsonl` (0600), and removes the file when it ends; `ag-log tail -f`
//! reads the file from where it left off. Sealed chunks are in the store, never only here.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use serde_json::Value;

use crate::paths::{self, Home};

/// The directory of the live files.
pub(crate) fn dir(home: &Home) -> PathBuf {
    home.dir.join("live")
}

fn path(home: &Home, session: &str) -> PathBuf {
    dir(home).join(format!("{session}.jsonl"))
}

/// A running turn's live file; removed when dropped.
pub(crate) struct Feed {
    path: PathBuf,
    file: File,
}

impl Feed {
    /// Start (or restart) the live file of `session`.
    pub(crate) fn start(home: &Home, session: &str) -> std::io::Result<Feed> {
        paths::create_private_dir(&dir(home))?;
        let path = path(home, session);
        // A new run starts a new file (a reader notices by its inode), never appends to a
        // file a killed run left behind.
        let _ = std::fs::remove_file(&path);
        let file = paths::open_private_append(&path)?;
        Ok(Feed { path, file })
    }

    /// Append one event as a line (one write, so a reader never sees half of it for long).
    pub(crate) fn event(&mut self, v: &Value) {
        let _ = self.file.write_all(format!("{v}\n").as_bytes());
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Where a reader is in a live file: the file (by inode) and the byte offset.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cursor {
    ino: u64,
    offset: u64,
}

/// The whole events appended to `session`'s live file since `cursor` (from the start when the
/// file is new), and where to read next. No file: nothing, and the cursor as it was.
pub(crate) fn read(home: &Home, session: &str, cursor: Cursor) -> (Vec<Value>, Cursor) {
    let Ok(mut f) = File::open(path(home, session)) else {
        return (Vec::new(), cursor);
    };
    let Ok(md) = f.metadata() else {
        return (Vec::new(), cursor);
    };
    let start = if md.ino() == cursor.ino && md.len() >= cursor.offset {
        cursor.offset
    } else {
        0
    };
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_err() || f.read_to_end(&mut buf).is_err() {
        return (Vec::new(), cursor);
    }
    // Only whole lines: a line still being written is read next time.
    let whole = buf.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let events = buf[..whole]
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect();
    (
        events,
        Cursor {
            ino: md.ino(),
            offset: start + whole as u64,
        },
    )
}
