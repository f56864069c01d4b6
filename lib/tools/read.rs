//! `read {path, offset?, limit?}`: a text file with `cat -n` line numbers.
//!
//! The file is streamed line by line, so reading the head of a huge log costs only the lines
//! shown plus a newline count for the total. Numbers are right-aligned in six columns and
//! followed by a tab, as `cat -n` prints them, because models know that shape.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, ErrorKind, Read};

use super::beneath::Beneath;
use super::confine::{canonical_root, confine_in};
use super::{
    cap_text, clip_chars, shown, Args, ToolCtx, ToolOutput, DEFAULT_READ_LIMIT, MAX_LINE_CHARS,
};

/// Bytes inspected for a NUL byte, the same heuristic git and grep use to call a file binary.
const BINARY_SNIFF: usize = 8192;

pub(super) fn run(args: &Args<'_>, ctx: &ToolCtx) -> Result<ToolOutput, String> {
    let path = args.req_str("path")?;
    // Offset 0 is read as "from the start" rather than refused: it is a common off-by-one.
    let offset = args.opt_u64("offset")?.unwrap_or(1).max(1);
    let limit = args.opt_u64("limit")?.unwrap_or(DEFAULT_READ_LIMIT);
    if limit == 0 {
        return Err("argument `limit` must be at least 1".to_string());
    }
    let root = canonical_root(&ctx.cwd)?;
    let p = confine_in(&root, path)?;
    let name = shown(&root, &p);

    let (mut out, total) = match ctx.editor_read(&p) {
        Some(text) => {
            let text = text.map_err(|e| format!("cannot read {name} in the editor: {e}"))?;
            if text.is_empty() {
                return Ok(ToolOutput::ok(format!("({name} is empty)")));
            }
            numbered_lines(&mut text.as_bytes(), &name, offset, limit)?
        }
        None => {
            let Some(mut reader) = open_text(&root, &p, &name)? else {
                return Ok(ToolOutput::ok(format!("({name} is empty)")));
            };
            numbered_lines(&mut reader, &name, offset, limit)?
        }
    };
    if offset > total {
        return Err(format!(
            "{name} has {total} lines; offset {offset} is past the end"
        ));
    }
    let last_shown = offset.saturating_add(limit - 1).min(total);
    if last_shown < total {
        let _ = write!(
            out,
            "({name}: showed lines {offset}-{last_shown} of {total}; use offset {} to read on)",
            last_shown + 1
        );
    }
    Ok(ToolOutput::ok(cap_text(out, ctx.output_cap)))
}

/// Open a regular text file beneath `root` without following links; `None` when it is
/// empty. The reader gives the whole file (the sniffed head included).
fn open_text(
    root: &std::path::Path,
    p: &std::path::Path,
    name: &str,
) -> Result<Option<impl BufRead>, String> {
    // Opened beneath the cwd without following links; non-blocking, so a FIFO cannot hang
    // the open, and the checks below are on what was opened.
    let rel = p.strip_prefix(root).unwrap_or(p);
    let file = Beneath::new(root)
        .and_then(|d| d.open(rel, libc::O_RDONLY | libc::O_NONBLOCK))
        .map_err(|e| match e.kind() {
            ErrorKind::NotFound => format!("{name} does not exist"),
            _ => super::beneath::failure("read", name, &e),
        })?;
    let md = file
        .metadata()
        .map_err(|e| format!("cannot read {name}: {e}"))?;
    if md.is_dir() {
        return Err(format!(
            "{name} is a directory, not a file; use glob to list its files"
        ));
    }
    if !md.is_file() {
        // A FIFO or device would block or never end.
        return Err(format!("{name} is not a regular file"));
    }
    let mut reader = BufReader::new(file);
    let mut sniff = Vec::with_capacity(BINARY_SNIFF);
    (&mut reader)
        .take(BINARY_SNIFF as u64)
        .read_to_end(&mut sniff)
        .map_err(|e| format!("cannot read {name}: {e}"))?;
    if sniff.contains(&0) {
        return Err(format!(
            "{name} looks like a binary file (it has a NUL byte in its first 8 KiB); read shows text files only"
        ));
    }
    if sniff.is_empty() {
        return Ok(None);
    }
    Ok(Some(BufReader::new(
        std::io::Cursor::new(sniff).chain(reader),
    )))
}

/// Lines `offset..offset+limit` numbered as `cat -n` does, and the file's line count.
fn numbered_lines(
    reader: &mut impl BufRead,
    name: &str,
    offset: u64,
    limit: u64,
) -> Result<(String, u64), String> {
    let last_wanted = offset.saturating_add(limit - 1);
    let mut out = String::new();
    let mut buf = Vec::new();
    let mut lineno: u64 = 0;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("cannot read {name} after line {lineno}: {e}"))?;
        if n == 0 {
            break;
        }
        lineno += 1;
        if lineno < offset || lineno > last_wanted {
            continue;
        }
        let mut line = &buf[..];
        if let Some(l) = line.strip_suffix(b"\n") {
            line = l;
        }
        if let Some(l) = line.strip_suffix(b"\r") {
            line = l;
        }
        let text = String::from_utf8_lossy(line);
        let _ = writeln!(out, "{lineno:>6}\t{}", clip_chars(&text, MAX_LINE_CHARS));
    }
    Ok((out, lineno))
}

#[cfg(test)]
mod tests {
    use super::super::run;
    use super::*;
    use serde_json::json;
    use std::fs;

    fn ctx() -> (tempfile::TempDir, ToolCtx) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(dir.path().canonicalize().unwrap());
        (dir, ctx)
    }

    #[test]
    fn numbers_lines_like_cat_n() {
        let (_d, ctx) = ctx();
        fs::write(ctx.cwd.join("a.txt"), "one\ntwo\r\nthree").unwrap();
        let out = run("read", &json!({"path": "a.txt"}), &ctx);
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(out.text, "     1\tone\n     2\ttwo\n     3\tthree\n");
    }

    #[test]
    fn offset_and_limit_page_through() {
        let (_d, ctx) = ctx();
        let body: String = (1..=10).map(|i| format!("line{i}\n")).collect();
        fs::write(ctx.cwd.join("a.txt"), body).unwrap();
        let out = run(
            "read",
            &json!({"path": "a.txt", "offset": 4, "limit": 3}),
            &ctx,
        );
        assert!(!out.is_error, "{}", out.text);
        let lines: Vec<&str> = out.text.lines().collect();
        assert_eq!(
            &lines[..3],
            ["     4\tline4", "     5\tline5", "     6\tline6"]
        );
        assert!(
            lines[3].contains("showed lines 4-6 of 10; use offset 7"),
            "{}",
            out.text
        );
        // The tail of the file: no "read on" note.
        let out = run("read", &json!({"path": "a.txt", "offset": 9}), &ctx);
        assert_eq!(out.text, "     9\tline9\n    10\tline10\n");
        let out = run("read", &json!({"path": "a.txt", "offset": 11}), &ctx);
        assert!(
            out.is_error && out.text.contains("has 10 lines"),
            "{}",
            out.text
        );
        let out = run("read", &json!({"path": "a.txt", "limit": 0}), &ctx);
        assert!(out.is_error);
    }

    #[test]
    fn long_lines_are_clipped() {
        let (_d, ctx) = ctx();
        fs::write(ctx.cwd.join("long.txt"), "x".repeat(5000)).unwrap();
        let out = run("read", &json!({"path": "long.txt"}), &ctx);
        assert!(!out.is_error);
        assert!(
            out.text.contains("[line clipped: 3000 more chars]"),
            "{}",
            &out.text[..50]
        );
        assert!(out.text.len() < 2100);
    }

    #[test]
    fn directories_binaries_and_missing_files_are_errors() {
        let (_d, ctx) = ctx();
        fs::create_dir(ctx.cwd.join("dir")).unwrap();
        fs::write(ctx.cwd.join("bin"), b"ELF\0\x01\x02").unwrap();
        let out = run("read", &json!({"path": "dir"}), &ctx);
        assert!(
            out.is_error && out.text.contains("dir is a directory"),
            "{}",
            out.text
        );
        let out = run("read", &json!({"path": "bin"}), &ctx);
        assert!(out.is_error && out.text.contains("binary"), "{}", out.text);
        let out = run("read", &json!({"path": "nope.txt"}), &ctx);
        assert!(
            out.is_error && out.text.contains("nope.txt does not exist"),
            "{}",
            out.text
        );
        fs::write(ctx.cwd.join("empty"), "").unwrap();
        let out = run("read", &json!({"path": "empty"}), &ctx);
        assert!(!out.is_error && out.text.contains("empty"));
    }

    #[test]
    fn confined_to_cwd() {
        let top = tempfile::tempdir().unwrap();
        let base = top.path().canonicalize().unwrap();
        let cwd = base.join("cwd");
        fs::create_dir(&cwd).unwrap();
        fs::write(base.join("secret.txt"), "secret").unwrap();
        std::os::unix::fs::symlink(base.join("secret.txt"), cwd.join("link")).unwrap();
        let ctx = ToolCtx::new(cwd.clone());
        for path in [
            "../secret.txt",
            base.join("secret.txt").to_str().unwrap(),
            "link",
        ] {
            let out = run("read", &json!({"path": path}), &ctx);
            assert!(out.is_error, "{path}: {}", out.text);
            assert!(
                out.text.contains("outside the session's directory"),
                "{}",
                out.text
            );
            assert!(!out.text.contains("\tsecret"));
        }
    }
}
