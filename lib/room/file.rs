//! Room files: one JSON object per line. Writers append the whole line in one `write` under an
//! exclusive lock on a file opened with O_APPEND; readers stream from a byte offset, stop before
//! a torn last line (one without its newline yet) and skip a corrupt line with a warning.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::Path;

use serde_json::Value;

use super::{Line, RoomError, MAX_LINE};
use crate::paths;

/// Open a room for appending (0600; its directory 0700).
fn open_append(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        paths::create_private_dir(dir)?;
    }
    paths::open_private_append(path)
}

/// Encode a line, refusing one over [`MAX_LINE`] bytes (newline included).
pub(crate) fn encode(line: &Line) -> Result<Vec<u8>, RoomError> {
    let mut bytes = serde_json::to_vec(line).map_err(|e| RoomError::Invalid(e.to_string()))?;
    bytes.push(b'\n');
    if bytes.len() > MAX_LINE {
        return Err(RoomError::TooLong {
            len: bytes.len(),
            max: MAX_LINE,
        });
    }
    Ok(bytes)
}

/// Append one line: the whole line in one write, under an exclusive lock. A short write is an
/// error.
pub fn append(path: &Path, line: &Line) -> Result<(), RoomError> {
    let bytes = encode(line)?;
    let file = open_append(path).map_err(|e| RoomError::io(path, e))?;
    file.lock().map_err(|e| RoomError::io(path, e))?;
    let r = write_once(path, &file, &bytes);
    let _ = file.unlock();
    r.map_err(|e| RoomError::io(path, e))
}

/// Hold the room's exclusive lock while `decide` looks at the room; the line it returns (if
/// any) is appended before the lock is let go, and `after` runs, still under the lock, with
/// what `decide` returned and the room's length then. Claims use this so two claimers cannot
/// both see a free path, and to keep the room's claim index.
pub(crate) fn append_locked<T>(
    path: &Path,
    decide: impl FnOnce() -> Result<(Option<Line>, T), RoomError>,
    after: impl FnOnce(&T, u64),
) -> Result<T, RoomError> {
    let file = open_append(path).map_err(|e| RoomError::io(path, e))?;
    file.lock().map_err(|e| RoomError::io(path, e))?;
    let result = (|| {
        let (line, out) = decide()?;
        if let Some(line) = line {
            let bytes = encode(&line)?;
            write_once(path, &file, &bytes).map_err(|e| RoomError::io(path, e))?;
        }
        if let Ok(m) = file.metadata() {
            after(&out, m.len());
        }
        Ok(out)
    })();
    let _ = file.unlock();
    result
}

/// What [`write_once`] needs from the file: its length now, and a way back to it.
trait Truncate {
    fn len_now(&self) -> io::Result<u64>;
    fn truncate_to(&self, len: u64) -> io::Result<()>;
}

impl Truncate for &File {
    fn len_now(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    fn truncate_to(&self, len: u64) -> io::Result<()> {
        self.set_len(len)
    }
}

/// Write the whole line in one `write`, the caller holding the room's exclusive lock. A short
/// write or a write error cuts the file back to its length before the write, so no partial
/// line is left for the next writer to glue its line onto. A fragment left by someone else (a
/// writer killed mid-line by an older version, an editor) is ended first, so the line starts on
/// a line boundary: readers skip the fragment as a corrupt line and read this one.
fn write_once(path: &Path, file: &File, bytes: &[u8]) -> io::Result<()> {
    if ends_mid_line(path, file)? {
        let mut ended = Vec::with_capacity(bytes.len() + 1);
        ended.push(b'\n');
        ended.extend_from_slice(bytes);
        return write_whole(file, &ended);
    }
    write_whole(file, bytes)
}

/// Whether the room's last byte is not a newline (the file opened for appending cannot be
/// read, so the path is opened again for that one byte).
fn ends_mid_line(path: &Path, file: &File) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    let mut last = [0u8];
    File::open(path)?.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] != b'\n')
}

fn write_whole<W: Write + Truncate>(mut file: W, bytes: &[u8]) -> io::Result<()> {
    let len = file.len_now()?;
    let err = match file.write(bytes) {
        Ok(n) if n == bytes.len() => return Ok(()),
        Ok(n) => io::Error::new(
            io::ErrorKind::WriteZero,
            format!("short write: {n} of {} bytes", bytes.len()),
        ),
        Err(e) => e,
    };
    if let Err(t) = file.truncate_to(len) {
        return Err(io::Error::new(
            err.kind(),
            format!("{err}; and cannot cut the partial line off again: {t}"),
        ));
    }
    Err(err)
}

/// The size of a room file (0 when it does not exist yet).
pub(crate) fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// What a scan callback says.
pub(crate) enum Flow {
    Go,
    Stop,
}

/// Stream the complete lines of a room from byte `offset`, oldest first: `f(offset, line)`
/// where `offset` is where the line starts. Corrupt lines go to `warn` (with file and byte
/// offset) and are skipped. Returns the offset just past the last complete line read, which is
/// where the next scan should start: a torn last line is left for then.
pub(crate) fn scan(
    path: &Path,
    offset: u64,
    warn: &mut dyn FnMut(String),
    f: &mut dyn FnMut(u64, Line) -> Flow,
) -> Result<u64, RoomError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(offset),
        Err(e) => return Err(RoomError::io(path, e)),
    };
    let mut r = BufReader::with_capacity(64 * 1024, file);
    r.seek(SeekFrom::Start(offset))
        .map_err(|e| RoomError::io(path, e))?;
    let mut at = offset;
    let mut buf = Vec::with_capacity(1024);
    loop {
        buf.clear();
        let n = r
            .read_until(b'\n', &mut buf)
            .map_err(|e| RoomError::io(path, e))?;
        if n == 0 || buf.last() != Some(&b'\n') {
            // End of file, or a torn last line: it is read once it is complete.
            return Ok(at);
        }
        let start = at;
        at += n as u64;
        match parse(&buf) {
            Some(line) => {
                if let Flow::Stop = f(start, line) {
                    return Ok(at);
                }
            }
            None => {
                if buf.iter().any(|b| !b.is_ascii_whitespace()) {
                    warn(format!(
                        "{}: byte {start}: skipped a line that is not a room line",
                        path.display()
                    ));
                }
            }
        }
    }
}

/// Where the line `lines` lines before `end` starts (0 when the file has no more): read
/// backwards from `end` in blocks, so the cost follows the lines asked for, not the room.
pub(crate) fn rewind(path: &Path, end: u64, lines: u64) -> Result<u64, RoomError> {
    use std::os::unix::fs::FileExt;
    const BLOCK: u64 = 64 * 1024;
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(RoomError::io(path, e)),
    };
    // The newline that ends the last line counts too: the wanted line starts after the
    // (lines + 1)th newline from the end.
    let mut seen = 0u64;
    let mut pos = end;
    let mut buf = vec![0u8; BLOCK as usize];
    while pos > 0 {
        let start = pos.saturating_sub(BLOCK);
        let block = &mut buf[..(pos - start) as usize];
        file.read_exact_at(block, start)
            .map_err(|e| RoomError::io(path, e))?;
        for (i, b) in block.iter().enumerate().rev() {
            if *b == b'\n' {
                seen += 1;
                if seen > lines {
                    return Ok(start + i as u64 + 1);
                }
            }
        }
        pos = start;
    }
    Ok(0)
}

/// The one line starting at `offset`, if it is complete and well-formed.
pub(crate) fn read_at(path: &Path, offset: u64) -> Option<Line> {
    let file = File::open(path).ok()?;
    let mut r = BufReader::new(file);
    r.seek(SeekFrom::Start(offset)).ok()?;
    let mut buf = Vec::new();
    r.read_until(b'\n', &mut buf).ok()?;
    if buf.last() != Some(&b'\n') {
        return None;
    }
    parse(&buf)
}

fn parse(bytes: &[u8]) -> Option<Line> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    if !v.is_object() || v.get("id").and_then(Value::as_str).is_none() {
        return None;
    }
    serde_json::from_value(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that takes only the first `keep` bytes of a write, then fails or reports a short
    /// write.
    struct Flaky<'a> {
        file: &'a File,
        keep: usize,
        fail: bool,
    }

    impl Write for Flaky<'_> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let mut f = self.file;
            let n = f.write(&buf[..self.keep.min(buf.len())])?;
            if self.fail {
                return Err(io::Error::other("disk on fire"));
            }
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Truncate for Flaky<'_> {
        fn len_now(&self) -> io::Result<u64> {
            self.file.len_now()
        }

        fn truncate_to(&self, len: u64) -> io::Result<()> {
            self.file.truncate_to(len)
        }
    }

    fn temp_room() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("ag-room-file-{}", crate::ids::new_id()));
        std::fs::create_dir_all(&d).unwrap();
        d.join("r.jsonl")
    }

    #[test]
    fn a_short_or_failed_write_leaves_no_partial_line() {
        for fail in [false, true] {
            let p = temp_room();
            let file = open_append(&p).unwrap();
            write_once(&p, &file, b"{\"id\":\"a\"}\n").unwrap();
            let before = std::fs::read(&p).unwrap();
            let flaky = Flaky {
                file: &file,
                keep: 5,
                fail,
            };
            let e = write_whole(flaky, b"{\"id\":\"b\",\"text\":\"cut\"}\n").unwrap_err();
            if !fail {
                assert_eq!(e.kind(), io::ErrorKind::WriteZero, "{e}");
            }
            assert_eq!(std::fs::read(&p).unwrap(), before, "fail = {fail}");
            // The next line starts on a line of its own.
            write_once(&p, &file, b"{\"id\":\"c\"}\n").unwrap();
            assert_eq!(
                std::fs::read_to_string(&p).unwrap(),
                "{\"id\":\"a\"}\n{\"id\":\"c\"}\n"
            );
            let _ = std::fs::remove_dir_all(p.parent().unwrap());
        }
    }

    #[test]
    fn a_line_after_a_fragment_starts_on_a_line_boundary() {
        let p = temp_room();
        std::fs::write(&p, "{\"id\":\"a\"}\n{\"id\":\"killed mid-li").unwrap();
        let file = open_append(&p).unwrap();
        write_once(&p, &file, b"{\"id\":\"b\"}\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "{\"id\":\"a\"}\n{\"id\":\"killed mid-li\n{\"id\":\"b\"}\n"
        );
        // A file that ends on a newline gets no extra one.
        write_once(&p, &file, b"{\"id\":\"c\"}\n").unwrap();
        assert!(std::fs::read_to_string(&p)
            .unwrap()
            .ends_with("\"b\"}\n{\"id\":\"c\"}\n"));
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }

    #[test]
    fn rewind_finds_the_start_of_the_nth_line_from_the_end_across_blocks() {
        let p = temp_room();
        // Lines of 1,000 bytes: 300 of them span several 64 KiB blocks.
        let line = |i: usize| format!("{{\"id\":\"{i:04}\",\"pad\":\"{}\"}}\n", "x".repeat(977));
        let text: String = (0..300).map(line).collect();
        assert_eq!(line(0).len(), 1000);
        std::fs::write(&p, &text).unwrap();
        let end = text.len() as u64;
        assert_eq!(rewind(&p, end, 0).unwrap(), end);
        assert_eq!(rewind(&p, end, 1).unwrap(), end - 1000);
        assert_eq!(rewind(&p, end, 250).unwrap(), end - 250_000);
        assert_eq!(rewind(&p, end, 299).unwrap(), 1000);
        assert_eq!(rewind(&p, end, 300).unwrap(), 0);
        assert_eq!(rewind(&p, end, 10_000).unwrap(), 0);
        // A torn last line is part of what is skipped back over, never a start.
        std::fs::write(&p, format!("{text}{{\"id\":\"torn")).unwrap();
        assert_eq!(rewind(&p, end + 11, 1).unwrap(), end - 1000);
        assert_eq!(rewind(&p.with_extension("none"), 0, 5).unwrap(), 0);
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }
}
