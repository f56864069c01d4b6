//! `glob {pattern, path?}`: files whose path relative to the search directory matches.
//!
//! `*` does not cross `/` (`literal_separator`), so `*.rs` means the top level and `**/*.rs`
//! means everywhere, as in a shell with globstar. Results are shown relative to the session's
//! cwd, sorted, so they can be handed straight to `read` and diffed between runs. The walk
//! ([`super::walk`]) lists directories through handles and never follows a link, so a
//! directory swapped for a symlink while it runs shows no name from outside.

use std::fs;
use std::path::Path;

use globset::GlobBuilder;

use super::beneath::failure;
use super::confine::{canonical_root, confine_in};
use super::walk::{walk, Kind};
use super::{cap_text, shown, Args, ToolCtx, ToolOutput, GLOB_CAP};

pub(super) fn run(args: &Args<'_>, ctx: &ToolCtx) -> Result<ToolOutput, String> {
    let pattern = args.req_str("pattern")?;
    let path = args.opt_str("path")?.unwrap_or(".");
    let root = canonical_root(&ctx.cwd)?;
    let base = confine_in(&root, path)?;
    let where_ = shown(&root, &base);
    match fs::metadata(&base) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(format!(
                "{where_} is not a directory; glob searches directories"
            ))
        }
        Err(_) => return Err(format!("directory {where_} does not exist")),
    }

    let pat = pattern.strip_prefix("./").unwrap_or(pattern);
    if pat.is_empty() {
        return Err("argument `pattern` is empty".to_string());
    }
    if Path::new(pat).is_absolute() {
        return Err(format!(
            "glob pattern {pattern} is absolute; give it relative to the search directory and pick the directory with `path`"
        ));
    }
    let matcher = GlobBuilder::new(pat)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("invalid glob pattern {pattern}: {e}"))?
        .compile_matcher();

    let walked = walk(&root, &base).map_err(|e| failure("glob", &where_, &e))?;
    let mut found: Vec<String> = walked
        .entries
        .iter()
        // Symlinks are listed (a name is not an escape) but never followed by the walk.
        .filter(|e| matches!(e.kind, Kind::File | Kind::Link) && matcher.is_match(&e.rel))
        .map(|e| shown(&root, &base.join(&e.rel)))
        .collect();
    found.sort();
    let unreadable = walked.unreadable;
    let changed_note = (walked.changed > 0).then(|| {
        format!(
            "({} directories were replaced by a link while listing and were not entered)",
            walked.changed
        )
    });

    if found.is_empty() {
        let mut text = format!("no files match {pattern} under {where_}");
        if unreadable > 0 {
            text.push_str(&format!(" ({unreadable} entries could not be read)"));
        }
        if let Some(note) = changed_note {
            text.push(' ');
            text.push_str(&note);
        }
        return Ok(ToolOutput::ok(text));
    }
    let total = found.len();
    let mut text = String::new();
    for f in found.iter().take(GLOB_CAP) {
        text.push_str(f);
        text.push('\n');
    }
    if total > GLOB_CAP {
        text.push_str(&format!(
            "({} more files not shown: listed the first {GLOB_CAP} of {total}; narrow the pattern or path)\n",
            total - GLOB_CAP
        ));
    }
    if unreadable > 0 {
        text.push_str(&format!("({unreadable} entries could not be read)\n"));
    }
    if let Some(note) = changed_note {
        text.push_str(&note);
        text.push('\n');
    }
    Ok(ToolOutput::ok(cap_text(text, ctx.output_cap)))
}

#[cfg(test)]
mod tests {
    use super::super::run;
    use super::*;
    use serde_json::json;

    fn tree() -> (tempfile::TempDir, ToolCtx) {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        for f in [
            "a.rs",
            "b.txt",
            "src/c.rs",
            "src/deep/d.rs",
            "target/e.rs",
            ".hidden/h.rs",
        ] {
            let p = cwd.join(f);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, "x").unwrap();
        }
        // No .git here: require_git(false) must make .gitignore count anyway.
        fs::write(cwd.join(".gitignore"), "target/\n").unwrap();
        (dir, ToolCtx::new(cwd))
    }

    #[test]
    fn matches_relative_paths_sorted_and_respects_gitignore() {
        let (_d, ctx) = tree();
        let out = run("glob", &json!({"pattern": "**/*.rs"}), &ctx);
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(out.text, ".hidden/h.rs\na.rs\nsrc/c.rs\nsrc/deep/d.rs\n");
        let out = run("glob", &json!({"pattern": "*.rs"}), &ctx);
        assert_eq!(out.text, "a.rs\n");
    }

    #[test]
    fn dot_ignore_is_respected_too() {
        let (_d, ctx) = tree();
        fs::write(ctx.cwd.join("src/.ignore"), "deep/\n").unwrap();
        let out = run("glob", &json!({"pattern": "**/*.rs", "path": "src"}), &ctx);
        assert_eq!(out.text, "src/c.rs\n");
    }

    #[test]
    fn path_narrows_and_pattern_is_relative_to_it() {
        let (_d, ctx) = tree();
        let out = run("glob", &json!({"pattern": "*.rs", "path": "src"}), &ctx);
        assert_eq!(out.text, "src/c.rs\n");
        let out = run("glob", &json!({"pattern": "*.md"}), &ctx);
        assert!(
            !out.is_error && out.text.starts_with("no files match"),
            "{}",
            out.text
        );
    }

    #[test]
    fn errors_name_the_problem() {
        let (_d, ctx) = tree();
        let out = run("glob", &json!({"pattern": "a[", "path": "."}), &ctx);
        assert!(
            out.is_error && out.text.contains("invalid glob pattern a["),
            "{}",
            out.text
        );
        let out = run("glob", &json!({"pattern": "*", "path": ".."}), &ctx);
        assert!(out.is_error && out.text.contains("outside"), "{}", out.text);
        let out = run("glob", &json!({"pattern": "*", "path": "a.rs"}), &ctx);
        assert!(
            out.is_error && out.text.contains("not a directory"),
            "{}",
            out.text
        );
    }

    #[test]
    fn capped_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        for i in 0..(GLOB_CAP + 5) {
            fs::write(cwd.join(format!("f{i:05}.txt")), "").unwrap();
        }
        let out = run("glob", &json!({"pattern": "*.txt"}), &ToolCtx::new(cwd));
        assert_eq!(out.text.lines().count(), GLOB_CAP + 1);
        assert!(
            out.text.contains("5 more files not shown"),
            "{}",
            out.text.lines().last().unwrap()
        );
    }
}
