//! `grep {pattern, path?, glob?, ignore_case?}`: regex search over the ignore-aware walk.
//!
//! Built on ripgrep's own crates, so it behaves like `rg -n`: .gitignore and .ignore are
//! honoured, binary files (a NUL byte) are skipped, and invalid UTF-8 is shown lossily rather
//! than failing the search. The optional `glob` follows ripgrep's `-g`: without a `/` it
//! matches file names anywhere (`*.rs`), with one it matches the path relative to the search
//! directory.

use std::fs;
use std::io;
use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};

use super::beneath::{failure, swapped, Beneath};
use super::confine::{canonical_root, confine_in};
use super::walk::{walk_hooked, Kind};
use super::{cap_text, clip_chars, shown, Args, ToolCtx, ToolOutput, GREP_CAP, MAX_LINE_CHARS};

pub(super) fn run(args: &Args<'_>, ctx: &ToolCtx) -> Result<ToolOutput, String> {
    run_hooked(args, ctx, &mut |_| {})
}

/// [`run`], with the walk calling `before_open` before it opens each directory (where a test
/// swaps one for a link).
fn run_hooked(
    args: &Args<'_>,
    ctx: &ToolCtx,
    before_open: &mut dyn FnMut(&Path),
) -> Result<ToolOutput, String> {
    let pattern = args.req_str("pattern")?;
    let path = args.opt_str("path")?.unwrap_or(".");
    let glob = args.opt_str("glob")?;
    let ignore_case = args.opt_bool("ignore_case")?.unwrap_or(false);

    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        // Lines are searched one at a time; saying so lets the matcher use fast paths.
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| format!("invalid regex {pattern:?}: {e}"))?;
    let filter = glob.map(FileFilter::new).transpose()?;

    let root = canonical_root(&ctx.cwd)?;
    let base = confine_in(&root, path)?;
    let where_ = shown(&root, &base);
    let md = fs::metadata(&base).map_err(|_| format!("{where_} does not exist"))?;

    // A file named outright is searched whatever the filters say: it was asked for.
    let mut walk_left = Found::default();
    let files: Vec<std::path::PathBuf> = if md.is_file() {
        vec![base.clone()]
    } else {
        let walked =
            walk_hooked(&root, &base, before_open).map_err(|e| failure("grep", &where_, &e))?;
        (walk_left.unreadable, walk_left.dirs_changed) = (walked.unreadable, walked.changed);
        // Only regular files: the walk does not follow symlinks, and neither does grep, so a
        // link inside the cwd cannot be used to read a file outside it.
        let mut rels: Vec<&Path> = walked
            .entries
            .iter()
            .filter(|e| e.kind == Kind::File && filter.as_ref().is_none_or(|f| f.is_match(&e.rel)))
            .map(|e| e.rel.as_path())
            .collect();
        // Component by component: each directory's files in name order, depth first, as rg.
        rels.sort();
        rels.into_iter().map(|r| base.join(r)).collect()
    };

    let mut found = search(&root, &files, &matcher)?;
    found.unreadable += walk_left.unreadable;
    found.dirs_changed = walk_left.dirs_changed;
    Ok(ToolOutput::ok(cap_text(
        answer(&found, pattern, &where_),
        ctx.output_cap,
    )))
}

/// The matching lines (or that there were none), then a note for each thing left out.
fn answer(found: &Found, pattern: &str, where_: &str) -> String {
    let mut text = String::new();
    if found.lines.is_empty() {
        text.push_str(&format!("no matches for {pattern:?} in {where_}"));
    }
    for l in &found.lines {
        text.push_str(l);
        text.push('\n');
    }
    let mut note = |s: String| {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&s);
        text.push('\n');
    };
    if found.truncated {
        note(format!(
            "(stopped after {GREP_CAP} matching lines; narrow the pattern, path or glob to see the rest)"
        ));
    }
    if found.unreadable > 0 {
        note(format!("({} files could not be read)", found.unreadable));
    }
    if found.changed > 0 {
        note(format!(
            "({} files were replaced by a link while searching and were not read)",
            found.changed
        ));
    }
    match found.dirs_changed {
        0 => {}
        1 => note("(1 directory was replaced by a link while searching and not searched)".into()),
        n => note(format!(
            "({n} directories were replaced by a link while searching and not searched)"
        )),
    }
    text
}

/// What a search found.
#[derive(Default)]
struct Found {
    lines: Vec<String>,
    truncated: bool,
    unreadable: usize,
    /// Files replaced by a link (or under a directory replaced by one) after the walk.
    changed: usize,
    /// Directories the walk found replaced by a link before it could open them.
    dirs_changed: usize,
}

/// Search `files` (found under `root` by the walk) for `matcher`, `rg -n` style.
fn search(
    root: &Path,
    files: &[std::path::PathBuf],
    matcher: &RegexMatcher,
) -> Result<Found, String> {
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build();
    let mut found = Found::default();
    // Each file is opened beneath the directory without following any link, as `read` opens
    // one: a file or directory swapped for a symlink after the walk listed it is not read.
    let beneath = Beneath::new(root).map_err(|e| format!("cannot open {}: {e}", root.display()))?;
    for file in files {
        let name = shown(root, file);
        let opened = file
            .strip_prefix(root)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
            .and_then(|rel| beneath.open(rel, libc::O_RDONLY | libc::O_NONBLOCK));
        let opened = match opened {
            Ok(f) if f.metadata().is_ok_and(|m| m.is_file()) => f,
            Ok(_) => continue,
            Err(e) => {
                if swapped(&e) {
                    found.changed += 1;
                } else {
                    found.unreadable += 1;
                }
                continue;
            }
        };
        let result = searcher.search_file(
            matcher,
            &opened,
            Lossy(|lnum, line| {
                if found.lines.len() >= GREP_CAP {
                    found.truncated = true;
                    return Ok(false);
                }
                let line = line.trim_end_matches(['\n', '\r']);
                found.lines.push(format!(
                    "{name}:{lnum}:{}",
                    clip_chars(line, MAX_LINE_CHARS)
                ));
                Ok::<bool, io::Error>(true)
            }),
        );
        if result.is_err() {
            found.unreadable += 1;
        }
        if found.truncated {
            break;
        }
    }
    Ok(found)
}

/// The `glob` argument, matched the way ripgrep's `-g` is.
struct FileFilter {
    glob: GlobMatcher,
    by_name: bool,
}

impl FileFilter {
    fn new(pattern: &str) -> Result<FileFilter, String> {
        let pat = pattern.strip_prefix("./").unwrap_or(pattern);
        let glob = GlobBuilder::new(pat)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("invalid glob {pattern}: {e}"))?
            .compile_matcher();
        Ok(FileFilter {
            glob,
            by_name: !pat.contains('/'),
        })
    }

    fn is_match(&self, rel: &Path) -> bool {
        if self.by_name {
            rel.file_name().is_some_and(|n| self.glob.is_match(n))
        } else {
            self.glob.is_match(rel)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::run;
    use super::*;
    use serde_json::json;

    fn tree() -> (tempfile::TempDir, ToolCtx) {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let files = [
            ("a.rs", "fn main() {}\nlet Needle = 1;\n"),
            ("src/b.rs", "// needle here\nnothing\n"),
            ("src/c.txt", "needle in text\n"),
            ("target/gen.rs", "needle generated\n"),
        ];
        for (f, body) in files {
            let p = cwd.join(f);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, body).unwrap();
        }
        fs::write(cwd.join("blob.bin"), b"needle\0binary").unwrap();
        fs::write(cwd.join(".gitignore"), "target/\n").unwrap();
        (dir, ToolCtx::new(cwd))
    }

    #[test]
    fn finds_matches_as_path_line_text() {
        let (_d, ctx) = tree();
        let out = run("grep", &json!({"pattern": "needle"}), &ctx);
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(
            out.text,
            "src/b.rs:1:// needle here\nsrc/c.txt:1:needle in text\n"
        );
    }

    #[test]
    fn ignore_case_glob_and_path() {
        let (_d, ctx) = tree();
        let out = run(
            "grep",
            &json!({"pattern": "needle", "ignore_case": true, "glob": "*.rs"}),
            &ctx,
        );
        assert_eq!(
            out.text,
            "a.rs:2:let Needle = 1;\nsrc/b.rs:1:// needle here\n"
        );
        let out = run(
            "grep",
            &json!({"pattern": "needle", "path": "src", "glob": "*.txt"}),
            &ctx,
        );
        assert_eq!(out.text, "src/c.txt:1:needle in text\n");
        // An explicitly named file is searched even if ignored.
        let out = run(
            "grep",
            &json!({"pattern": "needle", "path": "target/gen.rs"}),
            &ctx,
        );
        assert_eq!(out.text, "target/gen.rs:1:needle generated\n");
        let out = run("grep", &json!({"pattern": "zzz"}), &ctx);
        assert!(
            !out.is_error && out.text.starts_with("no matches"),
            "{}",
            out.text
        );
    }

    #[test]
    fn invalid_regex_is_named() {
        let (_d, ctx) = tree();
        let out = run("grep", &json!({"pattern": "a(b"}), &ctx);
        assert!(out.is_error);
        assert!(out.text.contains("invalid regex \"a(b\""), "{}", out.text);
    }

    #[test]
    fn capped_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        fs::write(cwd.join("many.txt"), "hit\n".repeat(GREP_CAP + 10)).unwrap();
        let out = run("grep", &json!({"pattern": "hit"}), &ToolCtx::new(cwd));
        assert_eq!(out.text.lines().count(), GREP_CAP + 1);
        assert!(
            out.text.contains("stopped after 500"),
            "{}",
            out.text.lines().last().unwrap()
        );
    }

    /// `BASE/cwd/d/s.txt` and `BASE/outside/s.txt`, both holding "needle".
    fn inside_and_outside() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let top = tempfile::tempdir().unwrap();
        let base = top.path().canonicalize().unwrap();
        let cwd = base.join("cwd");
        fs::create_dir_all(base.join("outside")).unwrap();
        fs::create_dir_all(cwd.join("d")).unwrap();
        fs::write(base.join("outside/s.txt"), "needle secret\n").unwrap();
        fs::write(cwd.join("d/s.txt"), "needle inside\n").unwrap();
        (top, base, cwd)
    }

    /// `cwd/d` becomes a link to `outside`.
    fn swap_d(base: &Path, cwd: &Path) {
        fs::rename(cwd.join("d"), cwd.join("d.real")).unwrap();
        std::os::unix::fs::symlink(base.join("outside"), cwd.join("d")).unwrap();
    }

    /// The walk listed `d/s.txt`; then `d` became a link to a directory outside holding a
    /// file of the same name. The search must not read it.
    #[test]
    fn a_directory_swapped_for_a_link_after_the_walk_is_not_read() {
        let (_top, base, cwd) = inside_and_outside();
        let files = vec![cwd.join("d/s.txt")];
        swap_d(&base, &cwd);
        let matcher = RegexMatcherBuilder::new().build("needle").unwrap();
        let found = search(&cwd, &files, &matcher).unwrap();
        assert!(found.lines.is_empty(), "{:?}", found.lines);
        assert_eq!(found.changed, 1);
    }

    /// The walk listed `d` as a directory; it became a link to a directory outside before
    /// the walk opened it. Nothing outside is searched, and the answer says what was left out.
    #[test]
    fn a_directory_swapped_for_a_link_during_the_walk_is_named_in_a_note() {
        let (_top, base, cwd) = inside_and_outside();
        fs::write(cwd.join("top.txt"), "needle top\n").unwrap();
        let ctx = ToolCtx::new(cwd.clone());
        let args = json!({"pattern": "needle"});
        let args = Args(args.as_object().unwrap());
        let out = run_hooked(&args, &ctx, &mut |rel| {
            if rel == Path::new("d") {
                swap_d(&base, &cwd);
            }
        })
        .unwrap();
        assert!(!out.text.contains("secret"), "{}", out.text);
        assert!(out.text.contains("top.txt:1:needle top"), "{}", out.text);
        assert!(
            out.text
                .contains("(1 directory was replaced by a link while searching and not searched)"),
            "{}",
            out.text
        );
    }

    #[test]
    fn does_not_leave_cwd() {
        let top = tempfile::tempdir().unwrap();
        let base = top.path().canonicalize().unwrap();
        let cwd = base.join("cwd");
        fs::create_dir_all(base.join("outside")).unwrap();
        fs::create_dir(&cwd).unwrap();
        fs::write(base.join("outside/s.txt"), "needle secret\n").unwrap();
        std::os::unix::fs::symlink(base.join("outside"), cwd.join("out")).unwrap();
        std::os::unix::fs::symlink(base.join("outside/s.txt"), cwd.join("s_link")).unwrap();
        let ctx = ToolCtx::new(cwd);
        let out = run("grep", &json!({"pattern": "needle"}), &ctx);
        assert!(!out.text.contains("secret"), "{}", out.text);
        let out = run("grep", &json!({"pattern": "needle", "path": "out"}), &ctx);
        assert!(out.is_error && out.text.contains("outside"), "{}", out.text);
        let out = run(
            "grep",
            &json!({"pattern": "needle", "path": "../outside"}),
            &ctx,
        );
        assert!(out.is_error && out.text.contains("outside"), "{}", out.text);
    }
}
